"""A PyMC model as the estimators see it: the compiled, batched log-density
(``log_density.LogDensity``, the estimators' ``target``) over its units (``graphs``, ``batched``,
``layout``, ``maps``, ``prior``, ``fingerprint``, ``model_checks``), the posterior draws and their
checks (``draws``), and the relabelling symmetries of a posterior (``modes``)."""
