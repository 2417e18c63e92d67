"""Searching a posterior for its modes without NUTS: tempered SMC from the prior with jumps
between modes and the mixture it fits (``exploration``), and the check of every result against
the modes of the model's log-sum-exp terms (``term_check``)."""
