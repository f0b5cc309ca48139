"""All SQL lives under ``src/memci/store/``: no other module executes SQL or imports sqlite3.

Everything stored goes through the storage protocols of :mod:`memci.store`, so a second
backend is a new package under ``store/``, not a rewrite.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "memci"
STORE = SRC / "store"

_EXECUTE = re.compile(r"execute(?:many|script)?\(")
_DRIVERS = {"sqlite3", "pysqlite3"}


def _drivers_imported(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in _DRIVERS]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _DRIVERS:
            found.append(str(node.module))
    return found


def offenders() -> dict[str, list[str]]:
    """``{module: [what it does]}`` for every module outside the store that speaks SQL."""
    out: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.is_relative_to(STORE):
            continue
        text = path.read_text(encoding="utf-8")
        found = [f"imports {name}" for name in _drivers_imported(ast.parse(text))]
        found += [f"line {n}: {line.strip()}" for n, line in
                  enumerate(text.splitlines(), start=1) if _EXECUTE.search(line)]
        if found:
            out[path.relative_to(SRC).as_posix()] = found
    return out


def test_no_module_outside_the_store_executes_sql_or_imports_sqlite3() -> None:
    assert offenders() == {}


def test_the_check_sees_sql_where_it_is() -> None:
    store_modules = [p for p in STORE.rglob("*.py") if _EXECUTE.search(p.read_text())]
    assert len(store_modules) >= 8  # the store's own modules are what the check would flag
    tree = ast.parse("import sqlite3\nfrom pysqlite3 import dbapi2\nimport json\n")
    assert _drivers_imported(tree) == ["sqlite3", "pysqlite3"]
    assert _EXECUTE.search("db.executemany(sql, rows)")
    assert not _EXECUTE.search("self._run_job(store, job)")
