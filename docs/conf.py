"""Sphinx configuration for pm_evidence.

Build (as CI does): ``sphinx-build -n -W -q docs docs/_build`` after ``pip install -e ".[docs]"``.
``-n`` (nitpicky) makes every cross-reference that does not resolve a warning, ``-W`` an error.
"""

project = "pm_evidence"
author = "pm_evidence developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.mathjax"]
exclude_patterns = ["_build"]
html_theme = "alabaster"

# numpydoc-style docstrings; "int, optional" and value sets {"a", "b"} are read as types
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_preprocess_types = True
napoleon_use_rtype = False
# the docstrings carry the types (numpydoc); signatures show names and defaults only
autodoc_typehints = "none"
autodoc_member_order = "bysource"

# Short names used in docstrings, resolved to the public objects they mean.
_PUBLIC = (
    "Evidence",
    "EvidenceSet",
    "LogDensity",
    "Reference",
    "EvidenceInputError",
    "ConvergenceError",
    "NonFiniteLogDensityError",
    "OverlapError",
)
napoleon_type_aliases = {name: f"~pm_evidence.{name}" for name in _PUBLIC}
napoleon_type_aliases.update(
    {
        "PriorReference": "~pm_evidence.PriorReference",
        "Layout": "~pm_evidence.model.layout.Layout",
        "DataTree": "~xarray.DataTree",
        "TensorVariable": "~pytensor.tensor.TensorVariable",
        "GeometricPath": "~pm_evidence.tempering.path.GeometricPath",
        "PathState": "~pm_evidence.tempering.path.PathState",
        "Kernel": "~pm_evidence.tempering.kernels.Kernel",
        "Pilot": "~pm_evidence.tempering.pilot.Pilot",
        "AnnealingTrace": "~pm_evidence.tempering.samplers.AnnealingTrace",
        "TemperingTrace": "~pm_evidence.tempering.samplers.TemperingTrace",
        "Ladder": "~pm_evidence.path.plan.Ladder",
        "MixtureReference": "~pm_evidence.references.MixtureReference",
    }
)

# No network at build time, so no intersphinx: references to other libraries' objects cannot
# resolve and are not checked. Every reference to pm_evidence's own objects is.
_EXTERNAL = (
    r"(numpy|np|scipy|xarray|xr|pandas|pd|pymc|pm|pytensor|matplotlib|arviz\w*|rich|pymbar)"
    r"(\..+)?"
)
nitpick_ignore_regex = [
    (r"py:.*", _EXTERNAL),
    # generic type words of numpydoc that are not classes of any library
    (
        r"py:class",
        r"(callable|array_like|array-like|array|ndarray|sequence|mapping|iterable|scalar)",
    ),
    (r"py:class", r"(Generator|SeedSequence|Number|Mapping|Sequence|Iterator|Callable|Any)"),
    (r"py:class", r"(collections\.abc|typing|types|contextlib)\..+"),
    # napoleon splits type text such as "ndarray (chain, draw)" or a property's "Boolean mask
    # over ...: ..." into pieces; a piece with a space, bracket, bar or comma is prose, no name
    (r"py:class", r".*[\s()\[\]|,].*"),
    (r"py:class", r"values"),
]
nitpick_ignore = [
    # a bare name in pm_evidence.estimators.discriminance, rendered under pm_evidence.estimators
    ("py:func", "discriminance_variance"),
]


def _resolve_public_name(app, env, node, contnode):
    """Resolve a bare public name (``OverlapError``, ``PriorReference``) written in any module's
    docstring to the object exported by ``pm_evidence``, where the API page documents it."""
    if node.get("refdomain") != "py":
        return None
    try:
        import pm_evidence
    except ImportError:  # autodoc reports the import error itself
        return None
    target = node["reftarget"]
    name = target.rsplit(".", 1)[-1]
    if name not in pm_evidence.__all__ or not (target == name or target.startswith("pm_evidence.")):
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], f"pm_evidence.{name}", node, contnode
    )


def setup(app):
    app.connect("missing-reference", _resolve_public_name)
