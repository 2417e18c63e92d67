"""The annealed and tempered path methods: the plan (reference, kernel, pilot), the runs, the
estimators as follow-ups on a run (``path_estimators``), and ``LogZTracker``. Their public
model-level functions are in :mod:`pm_evidence.path.api`."""
