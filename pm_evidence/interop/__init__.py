"""Models, draws and results of other tools read as pm_evidence's own: Bambi formulas as the
PyMC models they build (:mod:`pm_evidence.interop.bambi`), the model argument of the public
functions resolved in one place (:mod:`pm_evidence.interop.resolve`), and PyMC's SMC result
as an Evidence (:mod:`pm_evidence.interop.pymc_smc`). Third-party packages are imported only
when one of their objects is passed (``import pm_evidence`` imports neither Bambi nor nutpie)."""
