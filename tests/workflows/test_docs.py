"""The API page documents every public name, with a complete numpydoc docstring.

The nitpicky Sphinx build itself (``sphinx-build -n -W``) runs in ``.ci/run`` (about 15 s).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import pm_evidence as pme

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _section(doc: str, title: str) -> str | None:
    match = re.search(
        rf"^{title}\n-+\n(.*?)(?=^\w[\w ]*\n-+\n|\Z)", doc, flags=re.MULTILINE | re.DOTALL
    )
    return None if match is None else match.group(1)


def _documented_names(section: str) -> set[str]:
    names = set()
    for line in section.splitlines():
        if line and not line.startswith(" "):
            for name in line.split(" : ")[0].split(","):
                names.add(name.strip())
    return names


def _problems(obj) -> list[str]:
    """What a complete numpydoc entry of ``obj`` lacks."""
    doc = inspect.getdoc(obj) or ""
    if not doc.strip():
        return ["no docstring"]
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return []
    if inspect.ismodule(obj):  # a namespace (path_estimators): its functions are checked below
        functions = [f for f in map(obj.__dict__.get, obj.__all__) if inspect.isfunction(f)]
        return [f"{f.__name__}: {p}" for f in functions for p in _problems(f)]
    if inspect.isclass(obj):
        if "__init__" not in vars(obj) and not hasattr(obj, "__dataclass_fields__"):
            return []  # inherited constructor (e.g. dict): nothing of its own to document
        function, section = obj.__init__, _section(doc, "Parameters") or _section(doc, "Attributes")
    else:
        function, section = obj, _section(doc, "Parameters")
    parameters = [
        ("**" if p.kind is p.VAR_KEYWORD else "*" if p.kind is p.VAR_POSITIONAL else "") + p.name
        for p in inspect.signature(function).parameters.values()
        if p.name != "self" and not p.name.startswith("_")
    ]
    problems = []
    if parameters and section is None:
        problems.append("no Parameters section")
    elif parameters:
        documented = _documented_names(section)
        missing = [p for p in parameters if p not in documented and p.lstrip("*") not in documented]
        if missing:
            problems.append(f"parameters not documented: {missing}")
    if inspect.isfunction(obj) and _section(doc, "Returns") is None:
        problems.append("no Returns section")
    return problems


def test_every_public_name_is_on_the_api_page():
    page = (DOCS / "api.rst").read_text()
    paths = re.findall(r"^\.\. auto\w+:: (?:pm_evidence\.)?([\w.]+)$", page, re.MULTILINE)
    documented = {path.rsplit(".", 1)[-1] for path in paths}
    assert set(pme.__all__) - documented == set()


@pytest.mark.parametrize("name", sorted(set(pme.__all__) - {"METHODS", "PATH_METHODS"}))
def test_public_docstring_is_complete(name):
    assert _problems(getattr(pme, name)) == []


def test_methods_constant_is_documented():
    assert "METHODS" in (DOCS / "api.rst").read_text()
    assert isinstance(pme.METHODS, tuple) and "bridge" in pme.METHODS
