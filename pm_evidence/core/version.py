"""The package version (a leaf: the result types read it without importing the package root)."""

__version__ = "0.1.0"
