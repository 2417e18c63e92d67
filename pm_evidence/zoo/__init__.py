"""Models with gold log Z for tests and benchmarks. ``testing.ZOO`` indexes the exact zoo, whose
models live by family (``conjugate``, ``glm``, ``truncation``, ``mixtures``, ``discrete``,
``constrained``, ``hierarchical``) on the gold rules of ``gold`` and the entry record of
``entries``; ``highdim``, ``multimodal`` (with ``periodic``) and ``support`` are zoos of their own,
and ``energy`` holds the energy models of seed 004. Nothing in the library imports them."""
