"""Deleting in PostgreSQL (:class:`~memci.store.Eraser`): keyword rows, vectors, contents, VACUUM.

The deletions themselves are :class:`~memci.store._sql.SqlEraser`'s, the same statements
as SQLite's (a deletion that touches a session's log locks its row, ``FOR UPDATE``, as an
append does). Here, what only this backend has: a large tool output's parts in
``artifact_contents`` go with its blob's row, in the same transaction, and the keyword
tables' statistics (``keyword_stats``) count deleted rows out. Keyword tables of every
analyzer and vector tables of every embedder are found in the catalog, not only the ones
this process opened.

:meth:`PostgresEraser.epoch` counts the audit log's rows rather than taking the largest
id: ids are handed out when a row is inserted, so two deletions may commit in the other
order, and the largest id would then not grow with the second commit.

:meth:`PostgresEraser.scrub` vacuums every table of memci's (:func:`memci_tables`: the
ones its migrations make, found in their text, and the keyword and vector tables made on
first use, found in the catalog), so a new table cannot be left out; ``full=True``
rewrites each one (``VACUUM FULL``). What PostgreSQL can and cannot promise about the
bytes of deleted rows is in docs/deleting.md ("PostgreSQL").
"""

from __future__ import annotations

import re
import time

import psycopg

from memci._lazy import compile_pattern
from memci.errors import StoreError
from memci.store._sql import Sql, SqlEraser
from memci.store.postgres._db import Connection, Database
from memci.store.postgres._failures import store_error
from memci.store.postgres._keyword import forget_keywords, keyword_tables
from memci.store.postgres._migrations import SERIES
from memci.store.postgres._vectors import forget_vectors

__all__ = ["DERIVED_PREFIXES", "EPOCH", "PostgresEraser", "memci_tables"]

#: The tables memci makes on first use, by name prefix: each analyzer's keyword tables
#: (``memory_fts_bigram`` …) and each embedder's vector tables.
DERIVED_PREFIXES: tuple[str, ...] = (
    "memory_fts_", "memory_items_fts_", "doc_chunks_fts_", "memory_vec_",
)
# The erasure epoch (see PostgresEraser.epoch) as a scalar subquery: the rows counted
# (a sequence's ids may commit out of order, so the largest may not grow).
EPOCH = "(SELECT COUNT(*) FROM memci_erasures)"
#: How long a scrub waits for older transactions to end (a server's request, a worker's
#: job) before it says a later scrub must finish the job (seconds).
PATIENCE = 1.0
# A table a migration makes, in the migration's text.
_CREATED = compile_pattern(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)


def _migration_tables() -> set[str]:
    """Every table memci's migrations make (and the table that records them)."""
    return {"memci_migrations"} | {name for _, series in SERIES for migration in series
                                   for name in _CREATED.findall(migration.sql)}


def memci_tables(db: Connection) -> list[str]:
    """Every table of memci's in the store's schema, in name order.

    The ones its migrations make and the derived ones (:data:`DERIVED_PREFIXES`), as the
    catalog has them now: a table a later migration adds is found without a list to keep.
    """
    made = _migration_tables()
    return [name for name in (str(r[0]) for r in db.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        " ORDER BY tablename").fetchall())
            if name in made or name.startswith(DERIVED_PREFIXES)]


class PostgresEraser(SqlEraser):
    """Deletions and their audit log in one PostgreSQL store."""

    def __init__(self, store: Database) -> None:
        super().__init__(store.sql)
        self._store = store

    def _forget_keywords(self, sql: Sql, base: str, refs: list[int]) -> None:
        for table in keyword_tables(sql.conn, base):
            forget_keywords(sql.conn, table, refs)

    def _forget_vectors(self, sql: Sql, kind: str, refs: list[int]) -> None:
        forget_vectors(sql, kind, refs)

    def _drop_contents(self, sql: Sql, blob_ids: list[str]) -> None:
        sql.run("DELETE FROM artifact_contents WHERE artifact_id = ANY(?)", (blob_ids,))

    def epoch(self) -> int:
        """Grows with every deletion in the store (0 before the first): the rows counted."""
        with self._db.read() as sql:
            return int(sql.value(f"SELECT {EPOCH}") or 0)

    # -- leaving no trace ----------------------------------------------------------------

    def scrub(self, *, full: bool = False) -> bool:
        """Vacuum every table of memci's; False if an older snapshot kept deleted rows.

        ``VACUUM (INDEX_CLEANUP ON)`` removes the dead row versions (and their TOAST data
        and index entries) that no open transaction can still see, without locking out
        readers or writers. A transaction older than this call may still see some: the
        scrub waits up to :data:`PATIENCE` for it to end and vacuums again; one that lasts
        longer, a prepared transaction or a replication slot leaves them for a later
        vacuum, and this returns False (call it again once it ended). ``full`` rewrites
        each table and its indexes instead (``VACUUM (FULL, ANALYZE)``: no byte of a
        removed row stays in their files; each table is locked while it is rewritten),
        then asks for a ``CHECKPOINT`` (where the user may) so the write-ahead log is
        recycled sooner.
        Deleted bytes may stay in the write-ahead log, a WAL archive and backups: see
        docs/deleting.md ("PostgreSQL"). Raises :class:`StoreError` when PostgreSQL
        skipped a table (it warns rather than fails when the user may not vacuum it):
        what was deleted stays deleted.
        """
        skipped: list[str] = []

        def warned(notice: psycopg.errors.Diagnostic) -> None:
            if notice.severity_nonlocalized == "WARNING":
                skipped.append(str(notice.message_primary))

        how = "(FULL, ANALYZE)" if full else "(INDEX_CLEANUP ON)"
        with self._store.read() as db:
            if db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                raise StoreError("scrub() runs outside any transaction: call it after the "
                                 "atomic() block that deleted")
            db.add_notice_handler(warned)
            try:
                row = db.execute("SELECT clock_timestamp()").fetchone()
                assert row is not None
                started = row[0]
                deadline = time.monotonic() + PATIENCE
                while True:
                    for table in memci_tables(db):
                        db.execute(f"VACUUM {how} {table}")
                    if full:
                        _checkpoint(db)
                    held = _holders(db, started)
                    if not held or not _outwait(db, held, deadline):
                        break
            except psycopg.Error as exc:
                raise store_error(exc, self._store.location, "scrub") from exc
            finally:
                db.remove_notice_handler(warned)
        if skipped:
            raise StoreError(
                f"the deletion is committed, but scrubbing {self._store.location} skipped "
                f"tables: {skipped[0]}; run engine.scrub() as the owner of memci's tables "
                "(the user that created them), or VACUUM them as that user")
        return not held


def _holders(db: Connection, started: object) -> set[tuple[int, object]]:
    """What may still see rows deleted before ``started``: (pid, transaction start) pairs.

    A transaction older than ``started`` that holds a snapshot, a prepared transaction or
    a replication slot from before it (pid 0). A plain ``VACUUM`` in progress (autovacuum's
    included) is left out: PostgreSQL does not let one vacuum's snapshot hold another's
    dead rows.
    """
    rows = db.execute(
        "SELECT pid, xact_start FROM pg_stat_activity WHERE datname = current_database()"
        " AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL AND xact_start < %s"
        " AND pid NOT IN (SELECT pid FROM pg_stat_progress_vacuum)"
        " UNION ALL SELECT 0, prepared FROM pg_prepared_xacts"
        " WHERE database = current_database() AND prepared < %s"
        " UNION ALL SELECT 0, NULL FROM pg_replication_slots WHERE xmin IS NOT NULL"
        " AND (database IS NULL OR database = current_database())",
        (started, started)).fetchall()
    return {(int(r[0]), r[1]) for r in rows}


def _outwait(db: Connection, held: set[tuple[int, object]], deadline: float) -> bool:
    """Wait until every transaction of ``held`` has ended; False if one outlasts ``deadline``.

    A prepared transaction or a replication slot (pid 0) is not waited for: it may last
    for days.
    """
    if any(pid == 0 for pid, _ in held):
        return False
    pids = sorted(pid for pid, _ in held)
    while time.monotonic() < deadline:
        now = {(int(r[0]), r[1]) for r in db.execute(
            "SELECT pid, xact_start FROM pg_stat_activity WHERE pid = ANY(%s)",
            (pids,)).fetchall()}
        if not held & now:
            return True
        time.sleep(0.02)
    return False


def _checkpoint(db: Connection) -> None:
    """Ask for a checkpoint, so old write-ahead log segments are recycled sooner.

    Only a superuser or a member of ``pg_checkpoint`` (PostgreSQL 15+) may: for anyone
    else the server's own next checkpoint does it.
    """
    try:
        db.execute("CHECKPOINT")
    except psycopg.errors.InsufficientPrivilege:
        return
