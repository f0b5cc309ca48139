"""The shape of memci's code: no long functions, and complexity exceptions that only shrink.

A function of more than :data:`MAX_LINES` lines (from its ``def`` to its last line, nested
functions included in their parent) is two things or more: split it (a table of small
functions, sections, per-part checks). ruff's complexity rule (``C901``, at 15 in
pyproject.toml) names the functions with too many branches; the ones that still have
them today carry ``# noqa: C901`` with the reason, and :data:`COMPLEX` lists them, so a
new one fails here and the list can only shrink.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import memci

SRC = Path(memci.__file__).resolve().parent
MAX_LINES = 150

#: The functions allowed an exception to C901 today, by module and name.
COMPLEX = {
    ("memci/messages/_write.py", "to_anthropic"),
    ("memci/traces/_transcript.py", "_openai"),
    ("memci/text/_terms.py", "_porter"),
}

_NOQA = re.compile(r"#\s*noqa:[^#]*\bC901\b(?P<reason>.*)$")


def functions(source: str) -> Iterator[tuple[str, int, int]]:
    """``(name, first line, lines)`` of every function and method in ``source``, at any depth."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno or node.lineno
            yield node.name, node.lineno, end - node.lineno + 1


def too_long(sources: dict[str, str]) -> list[str]:
    """``module:line name (n lines)`` of every function over :data:`MAX_LINES`."""
    return [f"{module}:{line} {name} ({lines} lines)"
            for module, source in sources.items()
            for name, line, lines in functions(source) if lines > MAX_LINES]


def complexity_exceptions(sources: dict[str, str]) -> dict[tuple[str, str], str]:
    """``(module, function) -> reason`` of every ``# noqa: C901`` on a function's line."""
    found = {}
    for module, source in sources.items():
        lines = source.splitlines()
        for name, line, _ in functions(source):
            match = _NOQA.search(lines[line - 1])
            if match:
                found[(module, name)] = match.group("reason").strip(" -—:")
    return found


def _sources() -> dict[str, str]:
    return {path.relative_to(SRC.parent).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(SRC.rglob("*.py"))}


def test_no_function_is_over_150_lines() -> None:
    assert too_long(_sources()) == []


def test_a_long_function_is_reported() -> None:
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_LINES))
    source = f"def short():\n    pass\n\n\nclass C:\n    def long(self):\n{body}"
    assert too_long({"m.py": source}) == [f"m.py:6 long ({MAX_LINES + 1} lines)"]


def test_complexity_exceptions_only_shrink_and_say_why() -> None:
    found = complexity_exceptions(_sources())
    assert set(found) <= COMPLEX, "a new '# noqa: C901': split the function instead"
    assert all(found.values()), f"say why after '# noqa: C901': {found}"
    assert set(found) == COMPLEX, "an exception is gone: take it out of COMPLEX"


def test_a_complexity_exception_is_read_with_its_reason() -> None:
    source = ("def plain():\n    pass\n\n\n"
              "def branchy(x):  # noqa: C901 - one branch per kind\n    return x\n")
    assert complexity_exceptions({"m.py": source}) == {("m.py", "branchy"): "one branch per kind"}
