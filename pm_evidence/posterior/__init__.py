"""The methods on posterior draws: their public functions (``api``: IS, reverse IS,
discriminance and bridge sampling, the IS/RIS combinations) and the references they choose
(``bridge_reference``, ``reverse_reference``)."""
