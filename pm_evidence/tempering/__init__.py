"""Samplers along the geometric path: ladders, the path itself, Markov kernels, annealing and
simulated tempering. Estimators on their output live in :mod:`pm_evidence.estimators`."""
