"""Deleting in SQLite (:class:`~memci.store.Eraser`): FTS5 rows, sqlite-vec rows, the scrub.

The deletions themselves are :class:`~memci.store._sql.SqlEraser`'s, the same statements
as PostgreSQL's. Here: the store's connection overwrites what any write frees with zeros
(``PRAGMA secure_delete``, see :mod:`memci.store.sqlite._store`), and the FTS5 tables
delete securely where SQLite can (3.42 and later: a deleted row's terms leave the index
at once, see :mod:`memci.store.sqlite._fts`). A deletion reaches the keyword rows of
every analyzer's FTS5 tables and the vectors of every embedder's space (found in the
schema, not only the ones this process opened). A session's entries may go first, in
short transactions of their own (:meth:`~memci.store._sql.SqlEraser.unindex_some`): a
secure delete costs milliseconds an entry, and thousands in one transaction would hold
every other writer. The erasure epoch is the audit log's largest id (``AUTOINCREMENT``:
never given twice, and SQLite commits one writer at a time, so it grows with each).

:meth:`SQLiteEraser.scrub` then has little left to do: a ``TRUNCATE`` checkpoint moves
the zeroed pages into the file and empties the write-ahead log, which held the pages as
they were before. It waits at most a moment for readers (they keep the log: it is tried
again at the next scrub), and holds no other writer up for longer. Two things still take
a rewrite, once: a file written before its writes zeroed what they freed (by an older
memci: the header's ``user_version`` is not :data:`ZEROED`), and an FTS5 table that does
not delete securely (an older SQLite): their deleted bytes leave only when the file is
rewritten (``VACUUM``) and the table merged (``optimize``), each holding every writer up
while it runs. ``scrub(full=True)`` does both whatever the state.
"""

from __future__ import annotations

import sqlite3

from memci.errors import StoreError
from memci.store._sql import Sql, SqlEraser
from memci.store.sqlite._db import EPOCH, Database
from memci.store.sqlite._driver import errors
from memci.store.sqlite._failures import store_error
from memci.store.sqlite._fts import fts_secure, fts_tables, secure_delete_supported
from memci.store.sqlite._vectors import forget_vectors

__all__ = ["EPOCH", "ZEROED", "SQLiteEraser", "mark_zeroed"]

#: The file header's ``user_version`` when every byte a write freed was zeroed since the
#: file was made or last rewritten, so a deleted row leaves nothing behind in it.
ZEROED = 1
# How long the checkpoint that empties the write-ahead log waits for readers (ms).
_CHECKPOINT_WAIT_MS = 250


def mark_zeroed(db: sqlite3.Connection) -> None:
    """Record in the file's header that it holds no freed byte that was not zeroed."""
    db.execute(f"PRAGMA user_version = {ZEROED}")


class SQLiteEraser(SqlEraser):
    """Deletions and their audit log in one SQLite store."""

    def __init__(self, store: Database) -> None:
        super().__init__(store.sql)
        self._store = store

    def _forget_keywords(self, sql: Sql, base: str, refs: list[int]) -> None:
        wanted = sql.dialect.array(refs)
        for table in fts_tables(sql.conn)[base]:
            sql.run(f"DELETE FROM {table} WHERE {sql.dialect.in_array('rowid')}", (wanted,))

    def _forget_vectors(self, sql: Sql, kind: str, refs: list[int]) -> None:
        forget_vectors(self._store, sql, kind, refs)

    def _drop_contents(self, sql: Sql, blob_ids: list[str]) -> None:
        """Nothing in the file: a large output's file goes once the deletion commits.

        (Its id is in :attr:`~memci.store.Removed.files`; the artifact store removes it.)
        """

    def epoch(self) -> int:
        """Grows with every deletion in the store (0 before the first)."""
        with self._db.read() as sql:
            return int(sql.value(f"SELECT {EPOCH}") or 0)

    # -- leaving no trace ----------------------------------------------------------------

    def scrub(self, *, full: bool = False) -> bool:
        """Empty the write-ahead log (and rewrite what needs it); False if readers kept it."""
        with self._store.read() as db:
            if db.in_transaction:
                raise StoreError("scrub() runs outside any transaction: call it after the "
                                 "atomic() block that deleted")
            zeroed = int(db.execute("PRAGMA user_version").fetchone()[0]) == ZEROED
            secure = secure_delete_supported(db)
            tables = [t for names in fts_tables(db).values() for t in names
                      if full or not (secure and fts_secure(db, t))]
        for table in tables:
            self._merge(table, secure)
        if full or not zeroed:
            self._rewrite()
        return self._checkpoint()

    def _merge(self, table: str, secure: bool) -> None:
        """Merge the FTS5 table's index into one segment, so deleted entries leave it.

        Then, where SQLite can, it deletes securely from now on: no merge is needed again.
        """
        with self._store.write() as db:
            db.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
            if secure:
                db.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('secure-delete', 1)")

    def _rewrite(self) -> None:
        """Rewrite the file without its free pages and mark it zeroed (VACUUM)."""
        with self._store.read() as db:
            try:
                db.execute("VACUUM")
                mark_zeroed(db)
            except errors() as exc:
                raise store_error(exc, self._store.path, "scrub") from exc

    def _checkpoint(self) -> bool:
        """Copy the write-ahead log into the file and empty it; False if readers kept it.

        Waits for readers a moment only: the checkpoint holds other writers up while it
        waits. A log a reader keeps is emptied by a later scrub.
        """
        with self._store.read() as db:
            wait = int(db.execute("PRAGMA busy_timeout").fetchone()[0])
            db.execute(f"PRAGMA busy_timeout = {_CHECKPOINT_WAIT_MS}")
            try:
                busy = int(db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0])
            except errors() as exc:
                raise store_error(exc, self._store.path, "scrub") from exc
            finally:
                db.execute(f"PRAGMA busy_timeout = {wait}")
        return busy == 0

