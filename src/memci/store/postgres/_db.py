"""What every PostgreSQL part needs of the store it belongs to: a protocol.

Parts never import the store; :class:`~memci.store.postgres.PostgresStore` provides it.
A part's shared statements go through :attr:`Database.sql`; what only PostgreSQL does
(keyword tables, pgvector, ``VACUUM``) through psycopg's connection of
:meth:`Database.read` and :meth:`Database.write`, which are the same transactions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeAlias

import psycopg

from memci.store._sql import Transactions

__all__ = ["Connection", "Database"]

Connection: TypeAlias = psycopg.Connection[tuple[Any, ...]]


class Database(Protocol):
    """The store's server, its transactions and its derived tables."""

    #: The libpq URL (with its password): for a connection of a part's own.
    url: str
    location: str
    sql: Transactions

    def read(self) -> AbstractContextManager[Connection]:
        """A connection for reads: the open transaction's on this thread, else a pooled one."""
        ...

    def snapshot(self) -> AbstractContextManager[Connection]:
        """A connection whose statements all read one consistent snapshot."""
        ...

    def write(self, *, durable: bool = True) -> AbstractContextManager[Connection]:
        """A write transaction (joined by writes inside it, on this thread)."""
        ...

    def after_commit(self, work: Callable[[Connection], object]) -> None:
        """Run ``work`` on the connection of this thread's open write once it commits.

        Outside any transaction then; dropped if it rolls back or none is open.
        """
        ...

    def locked(self, doing: str, work: Callable[[Connection], object]) -> None:
        """Run ``work`` in a transaction of its own under the migration lock."""
        ...

    def derive(
        self, name: str, statements: Sequence[str],
        fill: Callable[[Connection], None] | None = None,
    ) -> bool:
        """Make the derived table ``name`` once, committed on its own; True when just made."""
        ...
