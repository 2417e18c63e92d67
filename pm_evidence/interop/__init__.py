"""Models and draws from other tools read as PyMC models and PyMC draws: Bambi formulas
(:mod:`pm_evidence.interop.bambi`), and the model argument of the public functions resolved
in one place (:mod:`pm_evidence.interop.resolve`). Third-party packages are imported only when
one of their objects is passed (``import pm_evidence`` imports neither Bambi nor nutpie)."""
