"""How the shared statements reach a backend: its transactions, and one connection in them.

A backend keeps its own connections and transactions (SQLite: one connection under a
lock, ``BEGIN IMMEDIATE``, WAL; PostgreSQL: a pool, a connection bound to the thread
for a write) and offers them as :class:`Connections`, each yielding its driver's
connection. :class:`Transactions` hands the same transactions to the shared statements,
each yielding a :class:`Sql`: the connection with the backend's
:class:`~memci.store._sql.Dialect`.

Invariants:

- a :class:`Sql` is the connection of the transaction (or read) it came from: every
  statement through it joins that transaction, and a write inside another write on the
  same thread joins the outer one (the backends' rule), so several parts' writes inside
  ``store.atomic()`` commit together;
- every statement passes :meth:`Sql._execute` and every batch :meth:`Sql.many` (or
  :meth:`Sql.inserted`, when the rows' ids are wanted), so
  counting statements, or sending a batch as one (multi-row ``VALUES``, ``COPY``), is a
  change in one place;
- a driver's exception raised by a statement leaves the ``with`` block of the backend's
  transaction, which maps it to a :class:`~memci.errors.StoreError` and rolls back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol, TypeVar

from memci._lazy import compile_pattern
from memci.store._sql._dialect import Dialect

__all__ = ["Connections", "Row", "Sql", "Transactions", "ran_here"]

T = TypeVar("T")


def ran_here(reads: Callable[[], T]) -> Callable[[], T]:
    """``reads`` run now; the returned call gives their result, or raises their error.

    ``Store.beside`` where the reads cannot run on another connection.
    """
    try:
        result = reads()
    except Exception as exc:  # raised to the caller when it asks for the result
        error = exc

        def raises() -> T:
            raise error

        return raises
    return lambda: result

#: A row as the drivers return it.
Row = tuple[Any, ...]

#: ``INSERT INTO t (a, b) VALUES (?, ?)`` and what follows (an ``ON CONFLICT`` clause).
_INSERT = compile_pattern(r"INSERT INTO (\w+) \(([\w, ]+)\) VALUES (\([?, ]+\))(.*)", re.S)
_CONFLICT = compile_pattern(r"\s*ON CONFLICT \(([\w, ]+)\) DO UPDATE\b")
#: Parameters in one statement: under both backends' limits (SQLite 32,766; PostgreSQL 65,535).
_PARAMS = 30_000


class Sql:
    """One connection inside a read or a write, running statements written with ``?``."""

    __slots__ = ("conn", "dialect")

    def __init__(self, conn: Any, dialect: Dialect) -> None:
        #: The driver's connection, for what only its backend does (FTS5, pgvector …).
        self.conn = conn
        self.dialect = dialect

    def _execute(self, text: str, args: Sequence[Any]) -> Any:
        return self.conn.execute(self.dialect.statement(text), args)

    def one(self, text: str, args: Sequence[Any] = ()) -> Row | None:
        """The first row of the statement's result, or None."""
        row: Row | None = self._execute(text, args).fetchone()
        return row

    def all(self, text: str, args: Sequence[Any] = ()) -> list[Row]:
        """Every row of the statement's result."""
        rows: list[Row] = self._execute(text, args).fetchall()
        return rows

    def value(self, text: str, args: Sequence[Any] = ()) -> Any:
        """The first column of the first row (None when there is no row)."""
        row = self.one(text, args)
        return None if row is None else row[0]

    def run(self, text: str, args: Sequence[Any] = ()) -> int:
        """Run a statement that changes rows; how many it changed."""
        return int(self._execute(text, args).rowcount)

    def many(self, text: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run the statement once per row of ``rows`` (nothing when there is none).

        An ``INSERT … VALUES`` goes as one multi-row statement per batch (one statement
        and round trip, not one per row, its rows as the dialect spells a batch), unless
        an upsert's batch names a key twice (PostgreSQL refuses to update a row twice in
        one statement).
        """
        if not rows:
            return
        shape = _INSERT.fullmatch(text)
        if shape is None or len(rows) == 1 or not _distinct_keys(shape, rows):
            self.dialect.executemany(self.conn, self.dialect.statement(text), rows)
            return
        table, columns, _, tail = shape.groups()
        per = max(1, _PARAMS // len(rows[0]))
        for at in range(0, len(rows), per):
            self._insert(table, columns, rows[at:at + per], tail)

    def inserted(self, text: str, rows: Sequence[Sequence[Any]]) -> list[int]:
        """Insert ``rows`` with a plain ``INSERT … VALUES``; the ``id`` each got, in order.

        One multi-row statement per batch, ``RETURNING id``. The ids a statement returns
        come in no promised order, but the rows take them in the order they are written
        (an ``AUTOINCREMENT`` key under the writer's lock, an identity column's sequence),
        so sorted they are the rows' ids in order.
        """
        shape = _INSERT.fullmatch(text)
        assert shape is not None and not shape.group(4), text  # the callers' statements
        table, columns, _, _ = shape.groups()
        per = max(1, _PARAMS // max(1, len(rows[0]))) if rows else 1
        ids: list[int] = []
        for at in range(0, len(rows), per):
            made = self._insert(table, columns, rows[at:at + per], " RETURNING id").fetchall()
            ids += sorted(int(row[0]) for row in made)
        return ids

    def _insert(self, table: str, columns: str, rows: Sequence[Sequence[Any]],
                tail: str) -> Any:
        """One ``INSERT`` of ``rows`` into ``table`` (``columns`` as written), ``tail`` after.

        The rows as the dialect spells a batch (:meth:`Dialect.rows`).
        """
        batch, args = self.dialect.rows(table, [c.strip() for c in columns.split(",")], rows)
        return self._execute(f"INSERT INTO {table} ({columns}) {batch}{tail}", args)


def _distinct_keys(shape: re.Match[str], rows: Sequence[Sequence[Any]]) -> bool:
    """Whether no two rows of an upsert name the same key (a plain insert: always)."""
    conflict = _CONFLICT.match(shape.group(4))
    if conflict is None:
        return True
    columns = [c.strip() for c in shape.group(2).split(",")]
    at = [columns.index(c.strip()) for c in conflict.group(1).split(",")]
    keys = {tuple(row[i] for i in at) for row in rows}
    return len(keys) == len(rows)


class Connections(Protocol):
    """A backend's own transactions, each yielding its driver's connection."""

    location: str

    def read(self) -> AbstractContextManager[Any]:
        """A connection for reads (the open write's, on the thread that holds one)."""
        ...

    def snapshot(self) -> AbstractContextManager[Any]:
        """A connection whose statements read one consistent state, where there is one."""
        ...

    def write(self, *, durable: bool = True) -> AbstractContextManager[Any]:
        """A write transaction, joined by writes inside it on the same thread."""
        ...

    def ready(self, *components: str) -> None:
        """Make the tables of ``components`` (migration series) if not made yet."""
        ...


class Transactions:
    """A backend's transactions as the shared statements use them: each yields a :class:`Sql`."""

    __slots__ = ("_backend", "dialect")

    def __init__(self, backend: Connections, dialect: Dialect) -> None:
        self._backend = backend
        self.dialect = dialect

    @property
    def location(self) -> str:
        """Where the data lives (a file, a database URL without its password)."""
        return self._backend.location

    def ready(self, *components: str) -> None:
        """Make the tables of ``components`` if not made yet (see :class:`Connections`)."""
        self._backend.ready(*components)

    @contextmanager
    def read(self) -> Iterator[Sql]:
        """A connection for reads."""
        with self._backend.read() as conn:
            yield Sql(conn, self.dialect)

    @contextmanager
    def snapshot(self) -> Iterator[Sql]:
        """A connection whose statements read one consistent state (PostgreSQL)."""
        with self._backend.snapshot() as conn:
            yield Sql(conn, self.dialect)

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[Sql]:
        """A write transaction (``durable=False``: a cache any process derives again)."""
        with self._backend.write(durable=durable) as conn:
            yield Sql(conn, self.dialect)
