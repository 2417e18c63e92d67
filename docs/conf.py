"""Sphinx configuration for pm_evidence (build: sphinx-build docs docs/_build)."""

project = "pm_evidence"
author = "pm_evidence developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
napoleon_numpy_docstring = True
autodoc_typehints = "description"
exclude_patterns = ["_build"]
html_theme = "alabaster"
