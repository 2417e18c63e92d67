"""The README, the docs, the package's docstrings and comments and the benchmark scripts are written for users: they say
what a call does and costs now, not how it came to be. History (issue numbers, the steps of a
piece of work, commit hashes) stays in git; measurements live in ``docs/benchmarks.rst``, each
table with its command, date and machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A mention of history: "issue 35", "issues 23 and 36", "#36", "step 14", "round 3", a commit
# hash (seven or more hexadecimal characters with a digit and a letter among them), "Re-run at".
HISTORY = re.compile(
    r"\b[Ii]ssues? #?\d+"
    r"|(?<![\w`])#\d{2,}\b"
    r"|\b[Ss]teps? \d+\b"
    r"|\b[Rr]ound \d+\b"
    r"|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
    r"|\b[Rr]e-?run at\b"
    r"|\bpredates\b"
)


def _pages() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.rst")) if "_build" not in p.parts]
    package = sorted((ROOT / "pm_evidence").rglob("*.py"))
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))  # the docs' commands
    return [ROOT / "README.md", *docs, *package, *scripts]


@pytest.mark.parametrize("path", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_history_in_what_users_read(path):
    found = [
        f"{path.relative_to(ROOT)}:{number}: {match.group(0)!r} in {line.strip()[:100]!r}"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        for match in HISTORY.finditer(line)
    ]
    assert found == [], "history belongs in git:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "text",
    ["(issue 35, step 14)", "measured at 0be6611", "see #36", "round 3 of it", "Re-run at commit"],
)
def test_the_rule_sees_history(text):
    assert HISTORY.search(text)


@pytest.mark.parametrize(
    "text",
    ["seed 000 §3", "float64 and 1e-13", "2,000 particles", "the first step of AIS", "0xdeadbeef"],
)
def test_the_rule_leaves_the_rest(text):
    assert not HISTORY.search(text)
