"""SQLite's spelling of memci's shared statements, and the oldest SQLite they run on.

The shared statements (:mod:`memci.store._sql`) use ``RETURNING`` (SQLite 3.35.0), and
``ON CONFLICT`` upserts, ``TRUE`` and aggregate ``FILTER`` (older still); the SQLite
parts use ``MATERIALIZED`` common table expressions (3.35.0) and the JSON functions. So
:data:`MIN_SQLITE` is 3.35.0, checked when a store opens (:func:`require_sqlite`): an
older SQLite is a :class:`~memci.errors.StoreError` naming the version it needs, not a
syntax error at the first write. FTS5's ``secure-delete`` (3.42) is used where the
SQLite has it (see :mod:`memci.store.sqlite._fts`), never required.

Lists travel as one JSON text parameter read with ``json_each`` (no limit on how many
values, one statement text whatever their number), or, when they are few and the
planner should see them, inline (``IN (?, ?)``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from memci.errors import StoreError
from memci.store._sql import Dialect

__all__ = ["MIN_SQLITE", "SQLITE", "SQLiteDialect", "require_sqlite"]

#: The oldest SQLite memci runs on (``RETURNING``, ``MATERIALIZED``: 3.35.0).
MIN_SQLITE = (3, 35, 0)


def require_sqlite(version: str, where: str) -> None:
    """Refuse a SQLite older than :data:`MIN_SQLITE` (``version`` as ``sqlite_version()``)."""
    found = tuple(int(p) for p in version.split(".")[:3] if p.isdigit())
    if found < MIN_SQLITE:
        need = ".".join(map(str, MIN_SQLITE))
        raise StoreError(
            f"cannot open the store at {where}: memci needs SQLite {need} or later, and "
            f"this process runs SQLite {version}; use a Python whose sqlite3 is {need} or "
            "later, or install pysqlite3-binary (pip install 'memci[vectors]') and set "
            "MEMCI_SQLITE_DRIVER=pysqlite3")


class SQLiteDialect(Dialect):
    """The shared statements as SQLite runs them (the text is SQLite's already)."""

    name = "sqlite"
    is_same = "IS"
    lock_row = ""  # a write transaction is BEGIN IMMEDIATE: writers take turns
    skip_locked = ""
    lock_name = ""

    def statement(self, text: str) -> str:
        """``text`` itself: SQLite's placeholders are ``?``."""
        return text

    def in_values(
        self, column: str, values: Collection[Any], *, negate: bool = False,
    ) -> tuple[str, list[Any]]:
        """``column IN (?, ?, …)``: the planner sees each value."""
        marks = ", ".join("?" * len(values))
        return f"{column} {'NOT IN' if negate else 'IN'} ({marks})", list(values)

    def in_array(self, column: str) -> str:
        """``column`` among the values of one JSON array parameter."""
        return f"{column} IN (SELECT value FROM json_each(?))"

    def array(self, values: Iterable[Any]) -> str:
        """``values`` as a JSON array."""
        return json.dumps(list(values))

    def array_rows(self, alias: str) -> str:
        """The JSON array parameter's values as rows."""
        return f"SELECT value AS {alias} FROM json_each(?)"

    def greatest(self, first: str, second: str) -> str:
        """SQLite's ``MAX`` of two values."""
        return f"MAX({first}, {second})"

    def byte_length(self, expr: str) -> str:
        """``length()`` of a BLOB counts bytes (of TEXT, characters)."""
        return f"length(CAST({expr} AS BLOB))"

    def contains(self, expr: str) -> str:
        """``instr``."""
        return f"instr({expr}, ?) > 0"

    def json_has_key(self, column: str) -> str:
        """A key of the JSON object among the array's, through ``json_each``."""
        return (f"EXISTS (SELECT 1 FROM json_each({column}) j WHERE j.key IN"
                " (SELECT value FROM json_each(?)))")

    def utf8_in(self, text: str | None) -> str | None:
        """TEXT holds U+0000 in SQLite: the text itself."""
        return text

    def utf8_out(self, value: Any) -> str | None:
        """The text itself."""
        return None if value is None else str(value)

    def executemany(self, conn: Any, text: str, rows: Sequence[Sequence[Any]]) -> None:
        """The connection's own ``executemany`` (one prepared statement, run per row)."""
        conn.executemany(text, rows)


#: The dialect of every SQLite store.
SQLITE = SQLiteDialect()
