"""SQLite's spelling of memci's shared statements.

The shared statements (:mod:`memci.store._sql`) use ``RETURNING`` (SQLite 3.35.0), and
``ON CONFLICT`` upserts, ``TRUE`` and aggregate ``FILTER`` (older still); the SQLite
parts use ``MATERIALIZED`` common table expressions (3.35.0) and the JSON functions.

Lists travel as one JSON text parameter read with ``json_each`` (no limit on how many
values, one statement text whatever their number), or, when they are few and the
planner should see them, inline (``IN (?, ?)``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from memci.store._sql import Dialect

__all__ = ["SQLITE", "SQLiteDialect"]


class SQLiteDialect(Dialect):
    """The shared statements as SQLite runs them (the text is SQLite's already)."""

    name = "sqlite"
    is_same = "IS"
    lock_row = ""  # a write transaction is BEGIN IMMEDIATE: writers take turns
    skip_locked = ""

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
