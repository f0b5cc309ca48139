"""The two store backends share their statements instead of repeating them.

What both backends run is written once in ``store/_sql/`` against a dialect; a backend's
package keeps what only it does. Two modules of the same name under ``store/sqlite/`` and
``store/postgres/`` that grow the same code again, line for line, are the drift this
checks for: it counts the PostgreSQL module's code lines (not blank, not comments, not
docstrings) that match the SQLite module's in sequence (runs of two lines or more, as
:class:`difflib.SequenceMatcher` finds them) and fails above :data:`MAX_TWIN_LINES`.
"""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path

STORE = Path(__file__).resolve().parents[1] / "src" / "memci" / "store"

#: Twin code lines allowed over all same-named modules (963 before store/_sql existed).
MAX_TWIN_LINES = 400
_STATEMENT = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|WHERE|VALUES)\b")


def _docstring_lines(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                found.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return found


def code_lines(text: str) -> list[str]:
    """The lines of a module that are code: stripped, without blanks, comments, docstrings."""
    skip = _docstring_lines(ast.parse(text))
    return [line.strip() for number, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.strip().startswith("#") and number not in skip]


def twin_lines(sqlite_text: str, postgres_text: str) -> int:
    """How many of the PostgreSQL module's code lines match the SQLite one's in sequence."""
    matcher = difflib.SequenceMatcher(None, code_lines(sqlite_text),
                                      code_lines(postgres_text), autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks() if block.size >= 2)


def twins() -> dict[str, int]:
    """``{module name: twin lines}`` of every pair of same-named backend modules."""
    out = {}
    for postgres in sorted((STORE / "postgres").glob("*.py")):
        sqlite = STORE / "sqlite" / postgres.name
        if sqlite.exists():
            out[postgres.name] = twin_lines(sqlite.read_text(encoding="utf-8"),
                                            postgres.read_text(encoding="utf-8"))
    return out


def _sql_texts(tree: ast.Module) -> list[str]:
    """The string constants of a module that are SQL (hold a keyword of a statement)."""
    docs = _docstring_lines(tree)
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.lineno not in docs and _STATEMENT.search(node.value)]


def test_the_backends_do_not_repeat_each_other() -> None:
    found = twins()
    assert sum(found.values()) <= MAX_TWIN_LINES, (
        f"{sum(found.values())} twin lines (at most {MAX_TWIN_LINES}): {found}; write what "
        "both backends run once, in store/_sql/, with what differs in the dialect")


def test_the_count_sees_twins_and_only_code() -> None:
    sqlite = '"""A module."""\n\n# a comment\ndef f(db):\n    """Doc."""\n' \
             '    x = db.one("SELECT 1 FROM t WHERE a = ?")\n    return x\n\ny = 1\n'
    postgres = sqlite.replace("?", "%s") + "\nz = 2\n"
    # "def f(db):" alone, then "return x" / "" / "y = 1": only the run of two counts.
    assert code_lines(sqlite) == ["def f(db):", 'x = db.one("SELECT 1 FROM t WHERE a = ?")',
                                  "return x", "y = 1"]
    assert twin_lines(sqlite, postgres) == 2
    assert twin_lines(sqlite, sqlite) == 4
    assert twins()  # the backends do have same-named modules to compare
    assert _sql_texts(ast.parse('a = "SELECT x FROM t WHERE y = %s"\nb = "job %s"\n')) == [
        "SELECT x FROM t WHERE y = %s"]


def test_the_shared_statements_speak_no_driver() -> None:
    """``store/_sql`` reaches a database only through a dialect: no driver, no ``%s``."""
    for path in sorted((STORE / "_sql").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(text))
                    if isinstance(node, ast.Import) for alias in node.names}
        imported |= {(node.module or "").split(".")[0] for node in ast.walk(ast.parse(text))
                     if isinstance(node, ast.ImportFrom)}
        assert not imported & {"sqlite3", "pysqlite3", "psycopg", "psycopg_pool"}, path.name
        assert not [c for c in _sql_texts(ast.parse(text)) if "%s" in c], (
            f"{path.name} writes psycopg's placeholder")
