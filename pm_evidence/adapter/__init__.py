"""The units of the model adapter (see :mod:`pm_evidence.model.target` for how they fit together).

Dependencies point one way: these modules import PyMC, PyTensor and :mod:`pm_evidence.core.utils`
only; the samplers and estimators never reach into them except through ``LogDensity``.
"""
