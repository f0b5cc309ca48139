"""PostgreSQL's spelling of memci's shared statements (psycopg 3's placeholders, arrays).

A statement's ``?`` becomes psycopg's ``%s`` and every ``%`` its ``%%`` (psycopg reads
``%`` in every statement it is given parameters for; the shared statements always give
some, an empty tuple included). Lists travel as one array parameter (``= ANY(%s)``),
batches through a cursor's ``executemany`` (psycopg pipelines them: one round trip for
many rows), and a batch in one ``INSERT`` as one JSON parameter (:meth:`PostgresDialect.rows`).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from memci.store._sql import Dialect

__all__ = ["POSTGRES", "PostgresDialect"]


def _plain(rows: Sequence[Sequence[Any]]) -> bool:
    """Whether JSON holds every value as it is.

    Text without NUL, an integer (not a bool), a finite float or None.
    """
    for row in rows:
        for value in row:
            kind = type(value)
            if kind is str:
                if "\x00" in value:
                    return False
            elif kind is float:
                if not math.isfinite(value):
                    return False
            elif kind is not int and value is not None:
                return False
    return True


@functools.lru_cache(maxsize=4096)
def _translated(text: str) -> str:
    return text.replace("%", "%%").replace("?", "%s")


class PostgresDialect(Dialect):
    """The shared statements as psycopg sends them to PostgreSQL."""

    name = "postgresql"
    is_same = "IS NOT DISTINCT FROM"
    lock_row = " FOR UPDATE"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    lock_name = "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))"

    def statement(self, text: str) -> str:
        """``?`` as ``%s``, ``%`` as ``%%``."""
        return _translated(text)

    def in_values(
        self, column: str, values: Collection[Any], *, negate: bool = False,
    ) -> tuple[str, list[Any]]:
        """``column = ANY(array)`` (``NOT (…)`` when negated)."""
        sql = f"{column} = ANY(?)"
        return (f"NOT ({sql})" if negate else sql), [list(values)]

    def in_array(self, column: str) -> str:
        """``column = ANY(array)``."""
        return f"{column} = ANY(?)"

    def array(self, values: Iterable[Any]) -> list[Any]:
        """``values`` as a list (psycopg sends it as an array)."""
        return list(values)

    def array_rows(self, alias: str) -> str:
        """The array parameter's integers as rows."""
        return f"SELECT unnest(?::bigint[]) AS {alias}"

    def greatest(self, first: str, second: str) -> str:
        """``GREATEST``."""
        return f"GREATEST({first}, {second})"

    def byte_length(self, expr: str) -> str:
        """``octet_length``."""
        return f"octet_length({expr})"

    def contains(self, expr: str) -> str:
        """``strpos``."""
        return f"strpos({expr}, ?) > 0"

    def json_has_key(self, column: str) -> str:
        """``jsonb_exists_any`` (the function of the ``?|`` operator)."""
        return f"jsonb_exists_any({column}::jsonb, ?::text[])"

    def utf8_in(self, text: str | None) -> bytes | None:
        """UTF-8 bytes for a ``bytea`` column: PostgreSQL's text cannot hold U+0000."""
        return None if text is None else text.encode("utf-8")

    def utf8_out(self, value: Any) -> str | None:
        """The text of a ``bytea`` value."""
        return None if value is None else bytes(value).decode("utf-8")

    def rows(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
        computed: tuple[str, Sequence[Any]] | None = None,
    ) -> tuple[str, list[Any]]:
        """A batch as one JSON parameter read into the table's row type, when it can be.

        One statement text whatever the batch's size: psycopg converts it once and
        prepares it on the server after a few runs, where a multi-row ``VALUES`` of 100
        messages (900 parameters) was parsed anew by both, each batch (psycopg's
        splitting of it cost more than the rows' insert). Each value is read as its
        column's type, as a parameter is. A batch holding anything else than text,
        integers, finite floats and NULLs (bytes, arrays), or a NUL character (which
        PostgreSQL's text refuses, with a clearer error as a parameter), goes as
        ``VALUES``. ``computed`` is computed for each row read (a revision's ``nextval``).
        """
        if len(rows) < 2 or not _plain(rows):
            return super().rows(table, columns, rows, computed)
        expr, expr_args = computed or ("", ())
        names = ", ".join(columns) + (f", {expr}" if computed else "")
        return (f"SELECT {names} FROM json_populate_recordset(NULL::{table}, ?::json)",
                [*expr_args, json.dumps([dict(zip(columns, row, strict=True)) for row in rows],
                                        ensure_ascii=False)])

    def executemany(self, conn: Any, text: str, rows: Sequence[Sequence[Any]]) -> None:
        """A cursor's ``executemany`` (pipelined by psycopg); one row, one plain statement.

        A pipeline costs round trips of its own (entering it, its sync): worth it from
        two rows on.
        """
        if len(rows) == 1:
            conn.execute(text, rows[0])
            return
        with conn.cursor() as cursor:
            cursor.executemany(text, rows)


#: The dialect of every PostgreSQL store.
POSTGRES = PostgresDialect()
