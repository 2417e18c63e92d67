"""Models with gold log Z for tests and benchmarks (``testing.ZOO``, ``highdim``, ``multimodal``)
and the energy models of seed 004 (``energy``). Nothing in the library imports them."""
