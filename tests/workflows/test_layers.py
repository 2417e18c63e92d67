"""The package's layers and the direction of its imports.

Every module of ``pm_evidence`` sits on a floor of :data:`FLOORS`; a module may import modules
on its own floor or below, never above, and no modules may import one another in a loop.
Function-level imports of package modules count like the others (they hide cycles). Today's
exceptions are listed in :data:`KNOWN_UPWARD` and :data:`KNOWN_FUNCTION_LEVEL`: the test fails
when a new one appears, and when a listed one is gone (so the lists only shrink, to none).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import pm_evidence

PACKAGE = Path(pm_evidence.__file__).parent

# Lowest first. A module that is not listed is an error (place it on a floor).
FLOORS: dict[int, tuple[str, ...]] = {
    0: ("core",),  # errors, streams, log-space helpers, progress, the result type
    1: ("estimators", "references"),  # array cores and reference distributions
    2: ("model",),  # the PyMC model as a batched log-density, posterior draws, symmetry
    3: ("tempering",),  # kernels, paths and samplers
    4: ("posterior", "path", "search"),  # the two families of methods; the mode search
    5: ("registry", "compare"),  # the method table; comparing results
    6: ("run_methods", "interop"),  # running named methods; other libraries' models and results
    7: ("auto",),  # method="auto" as named stages
    8: ("marginal", "plots"),  # the entry point; figures
    9: ("parallel", "robustness"),  # many models at once; the prior-robustness check
    10: ("__init__",),
    11: ("zoo",),  # models with gold log Z: nothing in the library imports them
}

# (importer, imported) pairs that point up today; each one to remove.
KNOWN_UPWARD: set[tuple[str, str]] = set()
# Loops of imports today: each the set of units that reach one another through imports.
KNOWN_CYCLES: set[frozenset[str]] = set()

# (module, function, imported module) of the imports inside functions today.
KNOWN_FUNCTION_LEVEL: set[tuple[str, str, str]] = set()


def _unit(module: str) -> str:
    """The unit a floor lists for a dotted module name: its first part below the package
    (``pm_evidence.tempering.kernels`` -> ``tempering``), ``__init__`` for the package."""
    parts = module.split(".")[1:]
    return parts[0] if parts else "__init__"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def _imports(name: str, path: Path):
    """``(imported module, function or None)`` of every import of a package module."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]

    def targets(node):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            if base == "pm_evidence":  # from pm_evidence import registry: the submodules
                return [f"pm_evidence.{a.name}" for a in node.names
                        if (PACKAGE / f"{a.name}.py").exists() or (PACKAGE / a.name).is_dir()] or [base]  # fmt: skip
            return [base]
        return [a.name for a in node.names]

    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    inside = {}
    for function in functions:
        for node in ast.walk(function):
            inside.setdefault(id(node), function.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in targets(node):
                if target.startswith("pm_evidence"):
                    yield target, inside.get(id(node))


def _floor_of(unit: str) -> int:
    for floor, units in FLOORS.items():
        if unit in units:
            return floor
    pytest.fail(
        f"pm_evidence module {unit!r} sits on no floor of tests/workflows/test_layers.FLOORS"
    )


@functools.cache
def _edges() -> list[tuple[str, str, str | None]]:
    return [
        (_unit(name), _unit(target), function)
        for name, path in _modules()
        for target, function in _imports(name, path)
        if _unit(name) != _unit(target) or function is not None
    ]


def test_imports_point_down_except_the_known_ones():
    upward = {(a, b) for a, b, _ in _edges() if a != b and _floor_of(b) > _floor_of(a)}
    assert upward - KNOWN_UPWARD == set(), "new imports against the layers"
    assert KNOWN_UPWARD - upward == set(), "gone: remove them from KNOWN_UPWARD"


def test_function_level_imports_are_only_the_known_ones():
    found = {(a, f, b) for a, b, f in _edges() if f is not None}
    assert found - KNOWN_FUNCTION_LEVEL == set(), "new imports inside functions"
    assert KNOWN_FUNCTION_LEVEL - found == set(), "gone: remove them from KNOWN_FUNCTION_LEVEL"


# The one module that imports JAX (and PyTensor's JAX backend): the backend lives in one place.
JAX_MODULES = {"pm_evidence.model.backend"}


def test_only_the_backend_module_imports_jax():
    importers = set()
    for name, path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [node.module or ""]
            else:
                continue
            if any(t == "jax" or t.startswith(("jax.", "pytensor.link.jax")) for t in targets):
                importers.add(name)
    assert importers == JAX_MODULES


def test_the_library_does_not_import_its_test_fixtures():
    fixtures = set(FLOORS[11])
    assert not {(a, b) for a, b, _ in _edges() if b in fixtures and a not in fixtures}


def _loops(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one node of a directed graph: the sets
    of nodes that reach one another."""

    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                seen.add(nxt)
                todo.append(nxt)
        return seen

    reachable = {node: reach(node) for node in graph}
    return {
        frozenset({a} | {b for b in reachable[a] if a in reachable[b]})
        for a in graph if a in reachable[a]
    }  # fmt: skip


def _cycles() -> set[frozenset[str]]:
    """The loops of the import graph of the units."""
    graph: dict[str, set[str]] = {}
    for a, b, _ in _edges():
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    return _loops(graph)


def test_no_new_import_cycles():
    cycles = _cycles()
    assert cycles - KNOWN_CYCLES == set(), "new import cycles"
    assert KNOWN_CYCLES - cycles == set(), "gone: remove them from KNOWN_CYCLES"


def _module_cycles() -> list[set[str]]:
    """Loops among the package's modules themselves (not their units), counting every import:
    inside functions and under ``if TYPE_CHECKING:`` too, since a loop hidden from the
    interpreter is still a knot for the reader."""
    modules = dict(_modules())
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for target, _ in _imports(name, path):
            while target not in modules and "." in target:  # an imported name, not a module
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                graph[name].add(target)
    return sorted((set(loop) for loop in _loops(graph)), key=sorted)


def test_no_module_imports_itself_through_others():
    assert _module_cycles() == []


def test_no_module_passes_a_thousand_lines():
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for _, path in _modules()
        if (n := len(path.read_text().splitlines())) > 1000
    }
    assert long == {}, "split these modules by job"


def test_at_most_a_dozen_modules_sit_at_the_root():
    root = sorted(p.stem for p in PACKAGE.glob("*.py"))
    assert len(root) <= 12, root
    assert set(FLOORS) and all(_floor_of(_unit(f"pm_evidence.{m}")) >= 0 for m in root)


@pytest.mark.parametrize("old", sorted(pm_evidence.OLD_MODULE_PATHS))
def test_old_module_paths_are_the_moved_modules(old):
    import importlib

    moved = importlib.import_module(f"pm_evidence.{pm_evidence.OLD_MODULE_PATHS[old]}")
    assert importlib.import_module(f"pm_evidence.{old}") is moved
    assert getattr(pm_evidence, old) is moved


@pytest.mark.parametrize("name", pm_evidence.__all__)
def test_every_public_name_imports(name):
    assert getattr(pm_evidence, name) is not None


def test_every_module_has_its_line_in_the_docs():
    """docs/concepts.rst lists every module with its one job."""
    text = (PACKAGE.parent / "docs" / "concepts.rst").read_text()
    missing = [
        name.removeprefix("pm_evidence.")
        for name, path in _modules()
        if path.name != "__init__.py" and f"``{name.removeprefix('pm_evidence.')}``" not in text
    ]
    assert missing == [], f"add these modules to docs/concepts.rst: {missing}"


# (test file, private name) that tests still use; each a name to make public or a use to drop
# (the tests use public names only). Empty: keep it so.
KNOWN_PRIVATE_IN_TESTS: set[tuple[str, str]] = set()

TESTS = PACKAGE.parent / "tests"
OURS = ("pm_evidence", "tests")  # the package and the tests' shared helpers (tests/zoo_support)
PATCHERS = {"setattr", "delattr", "getattr", "hasattr"}  # by name: monkeypatch.setattr and builtins


def _is_private(name: str) -> bool:
    """``_x`` and ``__x`` but not the dunders ``__x__`` (Python's own names)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_uses(source: str):
    """``(line, name)`` of every private name a test file uses:

    - imported: ``from pm_evidence.x import _y``, ``import pm_evidence._x`` (and from ``tests.``);
    - read as an attribute: ``anything._y`` except ``self._y`` / ``cls._y`` (the tests' own
      classes), which covers ``pm_evidence.x._y``, ``module._y`` and a fixture's ``target._y``;
    - named in a string: ``monkeypatch.setattr(module, "_y", ...)``, ``getattr(obj, "_y")``, and
      dotted targets such as ``monkeypatch.setattr("pm_evidence.x._y", ...)``.
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OURS:
                    yield from ((node.lineno, p) for p in alias.name.split(".") if _is_private(p))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in OURS:
            parts = [*node.module.split("."), *(alias.name for alias in node.names)]
            yield from ((node.lineno, p) for p in parts if _is_private(p))
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                yield node.lineno, node.attr
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            strings = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None
                       for a in node.args[:2]]  # fmt: skip
            if name not in PATCHERS:
                continue
            if strings[0] is not None and strings[0].split(".")[0] in OURS:  # "pm_evidence.x._y"
                yield from ((node.lineno, p) for p in strings[0].split(".") if _is_private(p))
            elif len(strings) > 1 and strings[1] is not None and _is_private(strings[1]):
                yield node.lineno, strings[1]


def test_the_private_name_check_sees_each_form():
    source = """
import pm_evidence._a
from pm_evidence.b import _b, public
from tests.zoo_support import _c
x = pm_evidence.model._d + module._e + fixture._f.public + self._ok + cls._ok + obj.__ok__
monkeypatch.setattr(module, "_g", None)
monkeypatch.setattr("pm_evidence.model._h", None)
getattr(obj, "_i")
monkeypatch.setattr(module, "public", None)
"""
    names = sorted(name for _, name in _private_uses(source))
    assert names == ["_a", "_b", "_c", "_d", "_e", "_f", "_g", "_h", "_i"]


def test_tests_use_public_names_only():
    found = {
        (str(path.relative_to(TESTS.parent)), name, line)
        for path in sorted(TESTS.rglob("*.py"))
        for line, name in _private_uses(path.read_text())
    }
    used = {(path, name) for path, name, _ in found}
    new = sorted(f"{path}:{line}: {name}" for path, name, line in found
                 if (path, name) not in KNOWN_PRIVATE_IN_TESTS)  # fmt: skip
    assert new == [], "tests use private names: make them public or use the public API"
    assert KNOWN_PRIVATE_IN_TESTS - used == set(), "gone: remove them from KNOWN_PRIVATE_IN_TESTS"


def test_every_old_name_resolves_to_its_new_one():
    """Each module's map of renamed names (core.utils.renamed_module_names) points at a name the
    module has: the old name gives the new object, with a FutureWarning."""
    import importlib
    import warnings

    for module_name in (
        "pm_evidence.tempering.samplers", "pm_evidence.model.modes",
        "pm_evidence.search.exploration", "pm_evidence.path.path_estimators",
    ):  # fmt: skip
        module = importlib.import_module(module_name)
        for old, new in module.__getattr__.renamed.items():
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                assert getattr(module, old) is getattr(module, new), (module_name, old)
            assert any(issubclass(w.category, FutureWarning) for w in caught)
