"""Every documented call exists and accepts what the pages pass it; no model is run.

The Python code of the pages (``.. code-block:: python`` in ``docs/**/*.rst``, fenced
```` ```python ```` blocks in ``README.md``) and the ``>>>`` examples in the docstrings of
``pm_evidence`` (which the API page shows) are parsed with :mod:`ast`, not run:

* every block parses;
* every ``pme.<name>`` / ``pm_evidence.<name>`` (and names imported from ``pm_evidence``) exists;
* every call of a ``pm_evidence`` function or class binds to its signature (the number of
  positional arguments and the keyword names); where the keywords go on to option objects
  (``marginal_likelihood``'s ``**kwargs``, the model-level functions' ``**options``) each
  must be an option that the code accepts: ``pm_evidence.marginal.check_options`` for the
  methods asked for (both pairs that ``method="auto"`` may run), the keywords of the function's
  row of ``pm_evidence.registry`` (deprecated names are refused);
* every ``method="..."`` on a page, in code or in prose (``method="warp3"`` in a table), is one
  of :data:`pm_evidence.METHODS`.

It takes about a second (the suite is kept to a few CPU-minutes).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import textwrap
import typing
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

import pm_evidence as pme
from pm_evidence import marginal, registry
from pm_evidence.core.exceptions import EvidenceInputError

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.rst"))]
PAGES = [p for p in PAGES if "_build" not in p.parts]
PACKAGE = ROOT / "pm_evidence"


# --- extracting the code -------------------------------------------------------------------


def rst_python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line, code)`` of every ``.. code-block:: python`` of an rst text."""
    lines, blocks = text.splitlines(), []
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)\.\. code-block:: python\s*$", line)
        if not match:
            continue
        indent, body, j = len(match.group(1)), [], i + 1
        while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
        ):
            body.append(lines[j])
            j += 1
        code = textwrap.dedent("\n".join(body)).strip("\n")
        code = re.sub(r"\A(:[\w-]+:.*\n)+", "", code)  # directive options (":caption: ...")
        blocks.append((i + 1, code))
    return blocks


def markdown_python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line, code)`` of every fenced ```` ```python ```` block of a Markdown text."""
    return [
        (text[: m.start()].count("\n") + 1, m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    ]


def docstring_examples(path: Path) -> list[tuple[int, str]]:
    """``(line, code)`` of the ``>>>`` examples of every docstring of a module."""
    tree, examples = ast.parse(path.read_text()), []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        doc = ast.get_docstring(node, clean=True)
        if not doc or ">>>" not in doc:
            continue
        statements = []
        for line in doc.splitlines():
            stripped = line.strip()
            if stripped.startswith(">>> "):
                statements.append(stripped[4:])
            elif stripped.startswith("... ") and statements:
                statements[-1] += "\n" + stripped[4:]
        line = node.body[0].lineno if node.body else 1
        examples.append((line, "\n".join(statements)))
    return examples


def page_blocks(path: Path) -> list[tuple[int, str]]:
    text = path.read_text()
    return markdown_python_blocks(text) if path.suffix == ".md" else rst_python_blocks(text)


# --- checking it ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Instance:
    """A name bound to an instance of a pm_evidence class (from a call that returns one)."""

    cls: type


def _accepted_by_auto(keywords: list[str]) -> bool:
    """Whether some model could take these options with ``method="auto"``."""
    for has_discrete in (False, True):
        pair = list(marginal.auto_pair(SimpleNamespace(has_discrete=has_discrete)))
        try:
            marginal.check_options(pair, dict.fromkeys(keywords))
        except EvidenceInputError:
            continue
        return True
    return False


def _literal_methods(node: ast.expr) -> list[str] | None:
    """The method names of a ``method=`` argument, when it is written out literally."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _check_marginal_likelihood(call: ast.Call, extra: list[str]) -> list[str]:
    """Methods and options of a ``marginal_likelihood`` call, as the function checks them."""
    method = next((k.value for k in call.keywords if k.arg == "method"), None)
    methods = ["auto"] if method is None else _literal_methods(method)
    if methods is None:  # a variable: nothing to check statically
        return []
    unknown = [m for m in methods if m not in pme.METHODS]
    if unknown:
        return [f"method {unknown} is not one of pme.METHODS {list(pme.METHODS)}"]
    if methods == ["auto"]:
        if not _accepted_by_auto(extra):
            return [f"options {extra} are not accepted by method='auto'"]
        return []
    if "auto" in methods:
        return ["method='auto' cannot be part of a list"]
    try:
        marginal.check_options(methods, dict.fromkeys(extra))
    except EvidenceInputError as error:
        return [str(error)]
    return []


# the model-level estimators (importance_sampling ... mbar) by name, each with a row of its own
_MODEL_LEVEL = {row.function: row for row in registry.REGISTRY.values()}


def _check_model_level_options(function, extra: list[str]) -> list[str]:
    """Options of the model-level estimators: the keywords of their row of the registry (what
    their ``**options`` take, deprecated names aside)."""
    accepted = _MODEL_LEVEL[function.__name__].keywords
    unknown = sorted(set(extra) - accepted)
    return [f"options {unknown} are not accepted; accepted: {sorted(accepted)}"] if unknown else []


class _Checker:
    def __init__(self):
        self.names: dict[str, object] = {"pme": pme, "pm_evidence": pme}
        self.problems: list[str] = []

    # names ----------------------------------------------------------------------------------
    def bind_imports(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "pm_evidence":
                        module = self.import_module(alias.name)
                        if module is not None and alias.asname:
                            self.names[alias.asname] = module
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pm_evidence"):
                module = self.import_module(node.module)
                for alias in node.names if module is not None else ():
                    value = self.attribute(module, alias.name, node.module)
                    if value is not None:
                        self.names[alias.asname or alias.name] = value

    def bind_results(self, tree: ast.AST) -> None:
        """``x = pme.Class(...)`` or ``x = f(...)`` with ``f`` returning one class: x is one."""
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
            ):
                made = self.returns(self.resolve(node.value.func, report=False))
                if made is not None:
                    self.names[node.targets[0].id] = _Instance(made)

    @staticmethod
    def returns(obj) -> type | None:
        if inspect.isclass(obj) and obj.__module__.startswith("pm_evidence"):
            return obj
        if inspect.isfunction(obj) or inspect.ismethod(obj):
            try:
                made = typing.get_type_hints(obj).get("return")
            except Exception:  # an annotation that does not resolve: unknown
                return None
            if inspect.isclass(made) and made.__module__.startswith("pm_evidence"):
                return made
        return None

    def import_module(self, name: str) -> ModuleType | None:
        try:
            return importlib.import_module(name)
        except ImportError:
            self.problems.append(f"`import {name}` fails")
            return None

    def attribute(self, base, name: str, shown: str):
        """``base.name`` of a module or class (a submodule is imported), else a problem."""
        if hasattr(base, name):
            return getattr(base, name)
        if isinstance(base, ModuleType):
            try:
                return importlib.import_module(f"{base.__name__}.{name}")
            except ImportError:
                pass
        self.problems.append(f"`{shown}.{name}` does not exist")
        return None

    def resolve(self, node: ast.expr, report: bool = True):
        """The pm_evidence object an expression names, or None when it names something else."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if not isinstance(node, ast.Attribute):
            return None
        base = self.resolve(node.value, report)
        shown = ast.unparse(node.value)
        if isinstance(base, _Instance):  # only what the class itself has (not fields)
            if hasattr(base.cls, node.attr):
                return (base.cls, node.attr)
            return None
        if isinstance(base, ModuleType) or inspect.isclass(base):
            if not report:
                return getattr(base, node.attr, None)
            return self.attribute(base, node.attr, shown)
        return None

    # calls ----------------------------------------------------------------------------------
    def check_call(self, call: ast.Call) -> None:
        target = self.resolve(call.func, report=False)
        shown = ast.unparse(call.func)
        bound_method = isinstance(target, tuple)
        if bound_method:  # instance.method(...)
            cls, name = target
            static = inspect.getattr_static(cls, name)
            target = getattr(cls, name)
            bound_method = not isinstance(static, staticmethod | classmethod)
        if not callable(target) or not (getattr(target, "__module__", "") or "").startswith(
            "pm_evidence"
        ):
            return
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):
            return
        n_positional = len(call.args) + bound_method
        starred = any(isinstance(a, ast.Starred) for a in call.args)
        keywords = [k.arg for k in call.keywords if k.arg is not None]
        placeholders = [None] * (0 if starred else n_positional)
        try:
            signature.bind_partial(*placeholders, **dict.fromkeys(keywords))
        except TypeError as error:
            self.problems.append(f"`{ast.unparse(call)}`: {error}")
            return
        named = {
            p.name
            for p in signature.parameters.values()
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        }
        extra = [k for k in keywords if k not in named]
        if target is pme.marginal_likelihood:
            found = _check_marginal_likelihood(call, extra)
        elif extra and getattr(pme, getattr(target, "__name__", ""), None) is target and (
            target.__name__ in _MODEL_LEVEL
        ):
            found = _check_model_level_options(target, extra)
        else:
            found = []
        self.problems.extend(f"`{shown}(...)`: {p}" for p in found)

    def check(self, code: str) -> list[str]:
        """The problems of one block; names bound by earlier blocks of the page are known."""
        self.problems = []
        try:
            tree = ast.parse(code)
        except SyntaxError as error:
            return [f"does not parse as Python: {error}"]
        self.bind_imports(tree)
        self.bind_results(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                self.resolve(node)
            elif isinstance(node, ast.Call):
                self.check_call(node)
        return list(dict.fromkeys(self.problems))


def check_code(code: str) -> list[str]:
    """What in a block of documented Python would raise (a missing name, a wrong keyword)."""
    return _Checker().check(code)


def check_blocks(blocks: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """``(line, problem)`` of the blocks of one page, read in order as one session."""
    checker = _Checker()
    return [(line, problem) for line, code in blocks for problem in checker.check(code)]


_METHOD_VALUE = re.compile(
    r"(?<![\w.])method\s*=\s*((?:\"[^\"]*\"|'[^']*'|\[[^\]]*\])(?:\s*\|\s*(?:\"[^\"]*\"|'[^']*'))*)"
)


def check_method_strings(text: str) -> list[str]:
    """Every ``method="..."`` (or a list, or ``"a" | "b"``) in a page's text names a method."""
    problems = []
    for match in _METHOD_VALUE.finditer(text):
        line = text[: match.start()].count("\n") + 1
        for name in re.findall(r"\"([^\"]*)\"|'([^']*)'", match.group(1)):
            name = name[0] or name[1]
            if name not in pme.METHODS:
                problems.append(
                    f"line {line}: method={name!r} is not one of pme.METHODS {list(pme.METHODS)}"
                )
    return problems


# --- the checker catches what it is for ----------------------------------------------------


def test_checker_catches_a_method_that_raises():
    # docs/concepts.rst suggested this; marginal_likelihood raises EvidenceInputError on it
    assert check_method_strings('| Skewed posterior | ``bridge`` with ``method="warp3"`` |')
    assert any("warp3" in p for p in check_code('pme.marginal_likelihood(m, method="warp3")'))
    assert any("warp3" in p for p in check_code('pme.marginal_likelihood(m, method=["warp3"])'))
    with pytest.raises(EvidenceInputError):  # and it does raise, before any model is touched
        pme.marginal_likelihood(None, method="warp3")


def test_checker_accepts_what_runs():
    assert check_code('pme.marginal_likelihood(m, method="bridge", reference="warp3")') == []
    assert check_code('pme.marginal_likelihood(m, method=["bridge", "is"], reference="normal")') == []
    assert check_code('pme.bridge_sampling(m, reference="warp3", repetitions=3, draws=500)') == []
    assert check_code("pme.mbar(m, tempering=pme.TemperingOptions(), n_chains=100)") == []
    assert check_code("pme.marginal_likelihood(m, target_se=0.002, n_chains=200)") == []
    assert check_code('pme.marginal_likelihood(m, method=["ais", "rts"], n_sweeps=10)') == []
    assert (
        check_code('pme.marginal_likelihood(m, kernel="gibbs")') == []
    )  # auto on a discrete model
    assert check_method_strings('``method="is_ris_average" | "is_ris_weighted"``') == []
    code = """
import pm_evidence as pme
plan = pme.make_plan(model, random_seed=1)
tempered = pme.run_tempering(plan, rng=rng)
ev = pme.path_estimators.ti(tempered, variant="rb", corrected=True)
"""
    assert check_code(code) == []


@pytest.mark.parametrize(
    "code",
    [
        "pme.no_such_function(model)",
        "pme.path_estimators.no_such_estimator(run)",
        "from pm_evidence import no_such_name",
        'pme.marginal_likelihood(m, method="bridge", propsal="warp3")',
        'pme.marginal_likelihood(m, method="ais", proposal="warp3")',  # a bridge option
        'pme.marginal_likelihood(m, method="bridge", proposal="warp3")',  # deprecated: reference=
        'pme.marginal_likelihood(m, method=["auto", "ais"])',
        "pme.marginal_likelihood(m, no_such_option=1)",
        "pme.bayes_factor(ev1, ev0, check=False)",
        "pme.bayes_factor(ev1, ev0, ev2)",
        "pme.annealed_importance_sampling(m, n_sweeps=10)",  # a tempering option
        'pme.bridge_sampling(m, proposal="warp3")',  # deprecated: reference=
        "pme.importance_sampling(m, repetitions=3)",  # a bridge option
        "tracker = pme.LogZTracker(m)\ntracker.update(sweeps=10)",
        "plan = pme.make_plan(m)\nrun = pme.run_tempering(plan, options, rng, True)",
        "for each update:\n    pass",
    ],
)
def test_checker_catches_a_call_that_raises(code):
    assert check_code(code)


# --- the pages ------------------------------------------------------------------------------


def test_the_pages_have_python_blocks():
    blocks = {p.name: len(page_blocks(p)) for p in PAGES}
    assert blocks["README.md"] >= 1 and blocks["index.rst"] >= 1
    assert sum(blocks.values()) >= 10


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_code_would_not_raise(page):
    problems = [
        f"{page.relative_to(ROOT)}:{line}: {problem}"
        for line, problem in check_blocks(page_blocks(page))
    ]
    problems += [f"{page.relative_to(ROOT)}: {p}" for p in check_method_strings(page.read_text())]
    assert problems == []


def test_docstring_examples_would_not_raise():
    problems = [
        f"{path.relative_to(ROOT)}:{line}: {problem}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, code in docstring_examples(path)
        for problem in check_code(code)
    ]
    assert problems == []
