"""docs/troubleshooting.rst documents every warning the package can put on a result or issue,
and its error examples raise what the page says.

**The warnings.** The message templates are read from the package's source with :mod:`ast`
(nothing is run). A string literal (an f-string's fixed parts) is a warning's text when it
reaches one of these *sinks*:

* the argument that holds the text in a call of ``warn_user``, ``warnings.warn``, ``flag``,
  ``with_warning``, ``attempt`` / ``_interruptible`` (the stage names of the failures that
  ``method="auto"`` and lists of methods report) or ``ModelFailure`` (the failures that
  ``compare_models`` reports in its warning) (:data:`SINK_CALLS`), and the arguments after the
  first of any function whose name ends in ``messages`` (``weight_messages(diagnostics, "The
  AIS weights", consequence)``);
* the ``warnings=`` or ``messages=`` keyword of any call (``dataclasses.replace(ev,
  warnings=...)``, ``SymmetryDecision(..., messages=...)``);
* an argument of ``messages.append`` / ``.extend`` (any name ending in ``message(s)``, or
  ``warnings``, ``failures``), or a value assigned to such a name or to an item of it
  (``failures[stage] = ...``);
* a ``return`` of a function whose name ends in ``messages``.

From a sink, the text is followed back within a function: a local name used in it as a value
brings in every value assigned to that name (``message = f"..."`` then ``warn_user(message)``;
``bias`` and ``reason`` inside the symmetry warning), a module-level constant brings in its
value, and a call of a function of the same module brings in that function's ``return`` values
(``failure_text``, ``WorkerStartup.explain``), not its arguments. A name used as an object
(``ev.warnings``, ``diagnostics["n"]``) is not followed.

Each template gives one *fragment*: its first fixed part of at least three words and 20
characters (else its longest fixed part with a space), cut to about 60 characters at a word
boundary. Every fragment must appear on the page, whitespace normalized. A warning added to
the package without an entry on the page fails :func:`test_every_warning_is_on_the_page`;
:func:`test_a_missing_entry_is_caught` removes entries from the page and checks that it would.

**The errors.** A ``.. code-block:: python`` on the page followed directly by a ``..
code-block:: text`` whose first line is ``SomeError: message…`` is an error example. Those
that sample no posterior (no ``pm.sample``; each fails before any estimate, in well under a
second once the model is compiled) are run, in page order and in one namespace that starts
with the page's first block (the imports), and must raise that exception class with a message
that starts as shown (up to the first ``…``).
"""

from __future__ import annotations

import ast
import builtins
import itertools
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import pm_evidence as pme

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "troubleshooting.rst"
PACKAGE = Path(pme.__file__).resolve().parent

# the functions that take a warning's text, and the positions of their arguments that hold it
SINK_CALLS = {
    "warn_user": (0,),
    "warn": (0,),
    "flag": (0,),
    "with_warning": (1,),
    "attempt": (0,),
    "_interruptible": (0, 3),
    "ModelFailure": (2,),
}
SINK_KEYWORDS = frozenset({"warnings", "messages"})
SINK_NAMES = re.compile(r"messages?$|^warnings$|^failures$")
FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)


# --- collecting the templates ----------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    """One warning text of the source: where it is, and the fragment the page must hold."""

    where: str
    fragment: str


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _is_sink_name(node: ast.expr) -> bool:
    """``messages`` or ``failures[...]`` as an assignment target or a receiver."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and bool(SINK_NAMES.search(node.id))


def _own_nodes(scope: ast.AST):
    """The nodes of a module or function, without those of the functions defined in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, FUNCTION):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _assigned(node: ast.AST) -> tuple[list[ast.expr], ast.expr | None]:
    """``(targets, value)`` of an assignment (``=``, ``+=``, annotated, ``:=``), else empty."""
    if isinstance(node, ast.Assign):
        return node.targets, node.value
    if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr) and node.value is not None:
        return [node.target], node.value
    return [], None


def _with_parents(expr: ast.AST):
    """``(node, parent)`` for every node of ``expr`` (``expr`` itself with ``None``), parents
    before their children."""
    queue = [(expr, None)]
    while queue:
        node, parent = queue.pop(0)
        yield node, parent
        queue.extend((child, node) for child in ast.iter_child_nodes(node))


def _strings(expr: ast.AST) -> list[ast.Constant | ast.JoinedStr]:
    """The string literals in ``expr`` (not format specs, not the bodies of lambdas)."""
    if isinstance(expr, ast.Lambda):
        return []
    if isinstance(expr, ast.JoinedStr):
        found = [expr]
        for value in expr.values:
            if isinstance(value, ast.FormattedValue):
                found += _strings(value.value)
        return found
    if isinstance(expr, ast.Constant):
        return [expr] if isinstance(expr.value, str) else []
    return [s for child in ast.iter_child_nodes(expr) for s in _strings(child)]


def _sink_expressions(scope: ast.AST) -> list[ast.expr]:
    """The expressions of ``scope`` that reach a sink directly."""
    found = []
    if isinstance(scope, FUNCTION) and scope.name.endswith("messages"):
        found += [n.value for n in _own_nodes(scope) if isinstance(n, ast.Return) and n.value]
    for node in _own_nodes(scope):
        if isinstance(node, ast.Call):
            name = _callee(node)
            if name in SINK_CALLS:
                found += [a for i, a in enumerate(node.args) if i in SINK_CALLS[name]]
            elif name.endswith("messages"):  # (diagnostics or draws, what, consequence, ...)
                found += node.args[1:]
            found += [k.value for k in node.keywords if k.arg in SINK_KEYWORDS]
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("append", "extend")
                and _is_sink_name(func.value)
            ):
                found += node.args
        targets, value = _assigned(node)
        if value is not None and any(_is_sink_name(t) for t in targets):
            found.append(value)
    return found


def templates_of(source: str, where: str) -> list[Template]:
    """The warning templates of one module's source (the rule of the module docstring)."""
    tree = ast.parse(source)
    functions: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, FUNCTION):
            functions.setdefault(node.name, []).append(node)
    constants: dict[str, list[ast.expr]] = {}
    for node in tree.body:
        targets, value = _assigned(node)
        for target in targets:
            if isinstance(target, ast.Name):
                constants.setdefault(target.id, []).append(value)
    strings: list[ast.Constant | ast.JoinedStr] = []
    called: set[str] = set()

    def follow(scope: ast.AST, expressions: list[ast.expr]) -> None:
        assignments = [_assigned(n) for n in _own_nodes(scope)]
        seen_names: set[str] = set()
        todo = list(expressions)
        while todo:
            expr = todo.pop()
            strings.extend(_strings(expr))
            inputs = set()  # the arguments of this module's functions: their returns count
            for node, parent in _with_parents(expr):
                if isinstance(node, ast.Call) and _callee(node) in functions:
                    called.add(_callee(node))
                    inputs.update(map(id, ast.walk(node)))
                    inputs.difference_update(map(id, ast.walk(node.func)))
                if not isinstance(node, ast.Name) or node.id in seen_names or id(node) in inputs:
                    continue
                if isinstance(parent, ast.Attribute | ast.Subscript) and parent.value is node:
                    continue  # an object (ev.warnings, diagnostics["x"]), not text
                if isinstance(parent, ast.Call) and parent.func is node:
                    continue
                seen_names.add(node.id)
                for targets, value in assignments:
                    if any(isinstance(t, ast.Name) and t.id == node.id for t in targets):
                        todo.append(value)
                for value in constants.get(node.id, []):
                    strings.extend(_strings(value))

    scopes = [tree, *(f for fs in functions.values() for f in fs)]
    for scope in scopes:
        follow(scope, _sink_expressions(scope))
    done: set[str] = set()
    while called - done:
        name = sorted(called - done)[0]
        done.add(name)
        for function in functions[name]:
            returns = [n.value for n in _own_nodes(function) if isinstance(n, ast.Return)]
            follow(function, [r for r in returns if r is not None])
    templates = []
    for node in strings:
        fragment = fragment_of(node)
        if fragment:
            templates.append(Template(f"{where}:{node.lineno}", fragment))
    return templates


def _normalized(text: str) -> str:
    return " ".join(text.split())


def fragment_of(node: ast.Constant | ast.JoinedStr, width: int = 60) -> str:
    """The part of a template the page must hold: its first fixed part of at least three words
    and 20 characters (else its longest fixed part with a space), cut to about ``width``
    characters at a word boundary; empty for a literal with no space (a key, a name)."""
    if isinstance(node, ast.Constant):
        parts = [node.value]
    else:
        parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
    parts = [p for p in map(_normalized, parts) if " " in p]
    if not parts:
        return ""
    chosen = next((p for p in parts if len(p.split()) >= 3 and len(p) >= 20), None)
    chosen = chosen or max(parts, key=len)
    fragment = ""
    for word in chosen.split():
        if fragment and len(fragment) + 1 + len(word) > width:
            break
        fragment = f"{fragment} {word}" if fragment else word
    return fragment


def package_templates() -> list[Template]:
    """Every warning template of the package, one per distinct fragment."""
    by_fragment: dict[str, Template] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE.parent))
        for template in templates_of(path.read_text(), where):
            by_fragment.setdefault(template.fragment, template)
    return list(by_fragment.values())


def missing_from(page: str, templates: list[Template]) -> list[Template]:
    text = _normalized(page)
    return [t for t in templates if t.fragment not in text]


@pytest.fixture(scope="module")
def templates() -> list[Template]:
    return package_templates()


# --- the warnings ------------------------------------------------------------------------------


def test_every_warning_is_on_the_page(templates):
    missing = missing_from(PAGE.read_text(), templates)
    assert missing == [], (
        "warnings of the package that docs/troubleshooting.rst does not document (add an "
        "entry that quotes the message: what it means, what to do, an example):\n"
        + "\n".join(f"  {t.where}: {t.fragment!r}" for t in missing)
    )


def test_the_collector_finds_the_warnings(templates):
    """The rule finds the package's warnings, one of each kind of sink below (reword one of
    these messages and change its line here too)."""
    assert len(templates) >= 60
    found = {t.fragment for t in templates}
    for fragment in (
        "The posterior draws have R-hat",  # returned by a *_messages function
        "have an effective sample size of only",  # appended to messages
        "The AIS weights",  # an argument of weight_messages
        "(different draws and reference) disagree by",  # warn_user(message), message = ...
        "No independent confirmation:",  # with_warning
        "failed and was left out (",  # failures[stage] = failure_text(...)
        "the exploration from the prior (tempered SMC with jumps",  # attempt's stage name
        "The posterior is invariant under",  # SymmetryDecision(messages=...)
        "The posterior draws missed a mode: a search of the terms of",  # replace(warnings=...)
        "the pool's worker processes died while starting, before any",  # ModelFailure <- explain
        "Ladder.tuning is deprecated and will be removed: read",  # a FutureWarning
    ):
        assert fragment in found, fragment


def test_errors_and_other_text_are_not_collected(templates):
    """Error messages (a raise) and progress text are not warnings."""
    found = {t.fragment for t in templates}
    assert not any(f.startswith("The model has no free variables") for f in found)
    assert not any(f.startswith("Unexpected options") for f in found)
    assert not any("compiling the model's log-density" in f for f in found)


def test_the_collector_follows_a_new_warning():
    source = textwrap.dedent(
        """
        NOTE = "a module-level note that a warning quotes in full"

        def weird_messages(d):
            return [f"Something brand new happened {d['x']} times; do this instead."]

        def helper():
            return "a helper's sentence about what went wrong"

        def run(ev, n):
            messages = []
            if n:
                messages.append(f"{n} chains wandered off into the weeds; use more rungs.")
            why = helper()
            message = f"Another new warning ({why}) and {NOTE}."
            warn_user(message)
            return dataclasses.replace(ev, warnings=(*ev.warnings, *messages))
        """
    )
    found = {t.fragment for t in templates_of(source, "new.py")}
    assert found == {
        "Something brand new happened",
        "chains wandered off into the weeds; use more rungs.",
        "Another new warning (",
        "a helper's sentence about what went wrong",
        "a module-level note that a warning quotes in full",
    }


def test_a_missing_entry_is_caught(templates):
    """Removing a warning's text from the page fails the check, for any warning."""
    page = PAGE.read_text()
    text = _normalized(page)
    for template in templates[:: max(len(templates) // 12, 1)]:
        without = text.replace(template.fragment, "")
        assert template in missing_from(without, templates), template


# --- the error examples -------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    line: int
    language: str
    code: str
    end: int


def page_blocks(text: str) -> list[Block]:
    """Every ``.. code-block::`` of an rst text: its line, language, code and last line."""
    lines, blocks = text.splitlines(), []
    for i, line in enumerate(lines):
        match = re.match(r"^(\s*)\.\. code-block:: (\w+)\s*$", line)
        if not match:
            continue
        indent, body, j = len(match.group(1)), [], i + 1
        while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
        ):
            body.append(lines[j])
            j += 1
        while body and not body[-1].strip():
            body.pop()
            j -= 1
        code = textwrap.dedent("\n".join(body)).strip("\n")
        blocks.append(Block(i + 1, match.group(2), code, j))
    return blocks


@dataclass(frozen=True)
class ErrorExample:
    line: int
    code: str
    error: str
    message: str


def error_examples(text: str) -> list[ErrorExample]:
    """A python block followed directly by a text block ``SomeError: message…``."""
    blocks, lines = page_blocks(text), text.splitlines()
    examples = []
    for code, shown in itertools.pairwise(blocks):
        between = lines[code.end : shown.line - 1]
        match = re.match(r"^(\w+(?:Error|Exception)): (.*)$", shown.code.splitlines()[0])
        if code.language != "python" or shown.language != "text" or not match:
            continue
        if any(line.strip() for line in between):
            continue
        message = _normalized(match.group(2).split("…")[0])
        examples.append(ErrorExample(code.line, code.code, match.group(1), message))
    return examples


def _exception_class(name: str) -> type[BaseException]:
    found = getattr(pme, name, None) or getattr(builtins, name, None)
    assert isinstance(found, type) and issubclass(found, BaseException), name
    return found


def test_the_page_has_error_examples():
    examples = error_examples(PAGE.read_text())
    assert len(examples) >= 5
    assert {e.error for e in examples} >= {"EvidenceInputError", "TypeError"}


def test_the_error_examples_raise_what_the_page_says():
    text = PAGE.read_text()
    setup = next(b for b in page_blocks(text) if b.language == "python")
    namespace: dict = {}
    exec(compile(setup.code, f"{PAGE.name}:{setup.line}", "exec"), namespace)
    run = [e for e in error_examples(text) if "pm.sample(" not in e.code]
    assert run, "no error example to run"
    for example in run:
        expected = _exception_class(example.error)
        with pytest.raises(expected) as caught:
            exec(compile(example.code, f"{PAGE.name}:{example.line}", "exec"), namespace)
        assert type(caught.value).__name__ == example.error, (example.line, caught.value)
        assert _normalized(str(caught.value)).startswith(example.message), (
            example.line,
            str(caught.value),
        )
