"""A PyMC model as the estimators see it: the compiled, batched log-density (``target``), the
posterior draws and their checks (``draws``), and the relabelling symmetries of a posterior
(``modes``). The units of the adapter itself are in :mod:`pm_evidence.adapter`."""
