"""What every SQLite part needs of the store it belongs to: a protocol.

Parts never import the store; :class:`~memci.store.sqlite._store.SQLiteStore` provides it.
A part's shared statements go through :attr:`Database.sql`; what only SQLite does (FTS5,
sqlite-vec, pragmas) through the driver's connection of :meth:`Database.read` and
:meth:`Database.write`, which are the same transactions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from memci._lazy import pathlib
from memci.store._sql import Migration, Transactions

__all__ = ["EPOCH", "Database"]

# The erasure epoch (see SQLiteEraser.epoch) as a scalar subquery: ids only grow here.
# Here, not with the eraser: searches stamp what they keep with it, and a process that
# searches but never deletes does not load the deletions.
EPOCH = "(SELECT COALESCE(MAX(id), 0) FROM memci_erasures)"


class Database(Protocol):
    """The store's file, its transactions and its migrations."""

    path: pathlib.Path
    sqlite_vec: bool
    sql: Transactions

    def read(self) -> AbstractContextManager[sqlite3.Connection]:
        """The connection, for reads, under the store's lock."""
        ...

    def write(self, *, durable: bool = True) -> AbstractContextManager[sqlite3.Connection]:
        """A write transaction (joined by writes inside it); see SQLiteStore.write."""
        ...

    def migrate(self, component: str, migrations: Sequence[Migration]) -> None:
        """Apply the migrations of ``component`` not applied yet."""
        ...
