"""Deleting in PostgreSQL (:class:`~memci.store.Eraser`): every table that holds a session's data.

The same deletions as the SQLite store's (:mod:`memci.store.sqlite._erase`), table for
table, plus what only this backend has: a large tool output's parts in
``artifact_contents`` go with its blob's row, in the same transaction, and the keyword
tables' statistics (``keyword_stats``) count deleted rows out. Keyword tables of every
analyzer and vector tables of every embedder are found in the catalog, not only the ones
this process opened.

Invariants (besides the protocol's):

- a deletion that touches a session first locks the session's row (``FOR UPDATE``), as
  :meth:`~memci.store.postgres.PostgresStore.append` does: a deletion and an append of
  one session wait for each other instead of deadlocking, and no append can slip a seq
  below the ``top_seq`` the deletion records;
- a deleted session's row stays as a *tombstone*: tenant ``''`` (a tenant no one can
  use), its id as name, no user, no settings; no lookup finds it, and its id (an identity
  column) is never given to another session;
- :meth:`PostgresEraser.epoch` counts the audit log's rows rather than taking the largest
  id: ids are handed out when a row is inserted, so two deletions may commit in the
  other order, and the largest id would then not grow with the second commit.

:meth:`PostgresEraser.scrub` vacuums every table of memci's (:func:`memci_tables`: the
ones its migrations make, found in their text, and the keyword and vector tables made on
first use, found in the catalog), so a new table cannot be left out; ``full=True``
rewrites each one (``VACUUM FULL``). What PostgreSQL can and cannot promise about the
bytes of deleted rows is in docs/deleting.md ("PostgreSQL").
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import psycopg

from memci.errors import StoreError
from memci.messages import ToolResultPart, loads_parts
from memci.store._erase import Erasure, Removed
from memci.store._records import SessionRecord
from memci.store._rows import ERASURE_COLUMNS, erasure_from_row, session_from_row
from memci.store.postgres._db import Connection, Database
from memci.store.postgres._failures import store_error
from memci.store.postgres._keyword import forget_keywords, keyword_tables
from memci.store.postgres._migrations import SERIES
from memci.store.postgres._vectors import forget_vectors

__all__ = ["DERIVED_PREFIXES", "PostgresEraser", "memci_tables"]

GONE = ""  # the tenant of a deleted session's row: no tenant can be empty

#: The tables memci makes on first use, by name prefix: each analyzer's keyword tables
#: (``memory_fts_bigram`` …) and each embedder's vector tables.
DERIVED_PREFIXES: tuple[str, ...] = (
    "memory_fts_", "memory_items_fts_", "doc_chunks_fts_", "memory_vec_",
)
# A table a migration makes, in the migration's text.
_CREATED = re.compile(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)


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


def _ids(values: Iterable[Any]) -> list[Any]:
    """``values`` as one array parameter (``= ANY(%s)``), sorted, without duplicates."""
    return sorted(set(values))


def user_digest(user: str) -> str:
    """How the audit log names a user: the SHA-256 of the id, never the id itself."""
    return hashlib.sha256(user.encode("utf-8")).hexdigest()


class PostgresEraser:
    """Deletions and their audit log in one PostgreSQL store."""

    def __init__(self, store: Database) -> None:
        self._store = store

    @staticmethod
    def _lock(db: Connection, session_id: int) -> None:
        """Lock the session's row for the transaction (appends of it wait)."""
        db.execute("SELECT 1 FROM sessions WHERE id = %s FOR UPDATE", (session_id,))

    # -- messages ------------------------------------------------------------------------

    def retract(self, session: SessionRecord, seqs: Collection[int]) -> Removed:
        """Delete the messages ``seqs`` of the session and what is derived from each."""
        wanted = _ids(int(s) for s in seqs)
        with self._store.write() as db:
            self._lock(db, session.id)
            rows = db.execute(
                "SELECT seq, role, parts FROM messages WHERE session_id = %s AND seq = ANY(%s)"
                " ORDER BY seq", (session.id, wanted)).fetchall()
            if not rows:
                return Removed()
            gone = [int(r[0]) for r in rows]
            users = [int(r[0]) for r in rows if r[1] == "user"]
            results = {part.call_id for r in rows if r[1] == "tool"
                       for part in loads_parts(r[2]) if isinstance(part, ToolResultPart)}
            blobs = self._views_blobs(db, session.id, gone)
            db.execute("DELETE FROM tool_calls WHERE session_id = %s AND call_seq = ANY(%s)",
                       (session.id, gone))
            db.execute("UPDATE tool_calls SET result_seq = NULL WHERE session_id = %s AND"
                       " result_seq = ANY(%s)", (session.id, gone))
            views = db.execute("DELETE FROM message_views WHERE session_id = %s AND"
                               " seq = ANY(%s)", (session.id, gone)).rowcount
            counts: dict[str, int] = {"messages": len(gone), "state": views}
            counts.update(self._forget_docs(db, session.id, gone))
            for user_seq in sorted(users, reverse=True):
                # Page numbers of the entries after a deleted user message count one less.
                db.execute("UPDATE memory_docs SET page = page - 1 WHERE session_id = %s"
                           " AND seq > %s", (session.id, user_seq))
            # An output still answered in the session (a call id reused) keeps its link.
            answered = {str(r[0]) for r in db.execute(
                "SELECT call_id FROM tool_calls WHERE session_id = %s AND result_seq IS NOT"
                " NULL AND call_id = ANY(%s)", (session.id, _ids(results))).fetchall()}
            links = db.execute(
                "SELECT seq, artifact_id FROM workspace_artifacts WHERE session_id = %s AND"
                " call_id = ANY(%s)", (session.id, _ids(results - answered))).fetchall()
            db.execute("DELETE FROM workspace_artifacts WHERE seq = ANY(%s)",
                       (_ids(int(r[0]) for r in links),))
            db.execute("DELETE FROM messages WHERE session_id = %s AND seq = ANY(%s)",
                       (session.id, gone))
            removed = self._orphans(db, blobs | {str(r[1]) for r in links})
            self._bump(db, session.id, top=max(gone))
        counts["artifacts"] = len(links)
        return Removed(counts) + removed

    @staticmethod
    def _views_blobs(db: Connection, session_id: int, seqs: list[int]) -> set[str]:
        """Blobs the messages ``seqs`` name (their views, their outputs kept outside)."""
        found = {str(r[0]) for r in db.execute(
            "SELECT artifact FROM message_views WHERE session_id = %s AND seq = ANY(%s)",
            (session_id, seqs)).fetchall()}
        found |= {str(r[0]) for r in db.execute(
            "SELECT b.id FROM messages m JOIN workspace_blobs b ON b.sha256 = m.output_sha256"
            " WHERE m.session_id = %s AND m.seq = ANY(%s)", (session_id, seqs)).fetchall()}
        return found

    def _forget_docs(
        self, db: Connection, session_id: int, seqs: list[int] | None
    ) -> dict[str, int]:
        """Delete the search entries of messages (all of the session's when ``seqs`` is None)."""
        if seqs is None:
            docs = [int(r[0]) for r in db.execute(
                "SELECT id FROM memory_docs WHERE session_id = %s", (session_id,)).fetchall()]
        else:
            docs = [int(r[0]) for r in db.execute(
                "SELECT id FROM memory_docs WHERE session_id = %s AND seq = ANY(%s)",
                (session_id, seqs)).fetchall()]
        return self._forget_doc_ids(db, docs)

    def _forget_doc_ids(self, db: Connection, docs: list[int]) -> dict[str, int]:
        """Delete the search entries ``docs`` with their keyword text and vectors."""
        if not docs:
            return {"index": 0, "vectors": 0}
        vectors = self._vector_count(db, "message", docs)
        forget_vectors(db, "message", docs)
        for table in keyword_tables(db, "memory_fts"):
            forget_keywords(db, table, docs)
        db.execute("DELETE FROM memory_docs WHERE id = ANY(%s)", (docs,))
        return {"index": len(docs), "vectors": vectors}

    def unindex_some(self, session: SessionRecord, limit: int) -> Removed:
        """Delete up to ``limit`` of the session's search entries, oldest first, and commit."""
        with self._store.write() as db:
            self._lock(db, session.id)
            docs = [int(r[0]) for r in db.execute(
                "SELECT id FROM memory_docs WHERE session_id = %s ORDER BY id LIMIT %s",
                (session.id, limit)).fetchall()]
            counts = self._forget_doc_ids(db, docs)
        return Removed({k: n for k, n in counts.items() if n})

    def unindex(self, session: SessionRecord, seqs: Collection[int]) -> int:
        """Delete the search entries (keyword text, vectors) of messages that stay."""
        with self._store.write() as db:
            return self._forget_docs(db, session.id, [int(s) for s in seqs])["index"]

    @staticmethod
    def _vector_count(db: Connection, kind: str, refs: Collection[int]) -> int:
        row = db.execute("SELECT COUNT(*) FROM memory_vector_refs WHERE kind = %s AND"
                         " ref = ANY(%s)", (kind, _ids(refs))).fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _orphans(db: Connection, blobs: Collection[str]) -> Removed:
        """Delete the blobs among ``blobs`` that no link and no message row names any more.

        A large output's parts go with its row, in this transaction; its id is still
        reported in ``files`` (for :meth:`OutputContents.remove`, which then finds none).
        """
        if not blobs:
            return Removed()
        rows = db.execute(
            "SELECT b.id, b.content IS NULL FROM workspace_blobs b WHERE b.id = ANY(%s)"
            " AND NOT EXISTS (SELECT 1 FROM workspace_artifacts a WHERE a.artifact_id = b.id)"
            " AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.output_sha256 = b.sha256)"
            " AND NOT EXISTS (SELECT 1 FROM message_views v WHERE v.artifact = b.id)",
            (_ids(blobs),)).fetchall()
        if not rows:
            return Removed()
        ids = _ids(str(r[0]) for r in rows)
        db.execute("DELETE FROM artifact_contents WHERE artifact_id = ANY(%s)", (ids,))
        db.execute("DELETE FROM workspace_blobs WHERE id = ANY(%s)", (ids,))
        return Removed({"blobs": len(rows)}, tuple(str(r[0]) for r in rows if r[1]))

    @staticmethod
    def _bump(db: Connection, session_id: int, *, top: int) -> None:
        """Grow the epoch and the version; keep the highest seq ever given."""
        db.execute("UPDATE sessions SET epoch = epoch + 1, version = version + 1,"
                   " top_seq = GREATEST(top_seq, %s) WHERE id = %s", (top, session_id))

    # -- sessions ------------------------------------------------------------------------

    def clear(self, session: SessionRecord) -> Removed:
        """Delete every message of the session and everything derived from them."""
        with self._store.write() as db:
            self._lock(db, session.id)
            return self._clear(db, session.id)

    def _clear(self, db: Connection, sid: int) -> Removed:
        row = db.execute("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = %s",
                         (sid,)).fetchone()
        top = int(row[0]) if row else 0
        counts: dict[str, int] = {}
        counts.update(self._forget_docs(db, sid, None))
        blobs = {str(r[0]) for r in db.execute(
            "SELECT artifact_id FROM workspace_artifacts WHERE session_id = %s",
            (sid,)).fetchall()}
        blobs |= self._views_blobs(db, sid, [int(r[0]) for r in db.execute(
            "SELECT seq FROM messages WHERE session_id = %s", (sid,)).fetchall()])
        counts["artifacts"] = db.execute("DELETE FROM workspace_artifacts WHERE session_id = %s",
                                         (sid,)).rowcount
        counts["messages"] = db.execute("DELETE FROM messages WHERE session_id = %s",
                                        (sid,)).rowcount
        state = 0
        for table in ("tool_calls", "message_views", "pages", "context_events",
                      "session_state"):
            state += db.execute(f"DELETE FROM {table} WHERE session_id = %s", (sid,)).rowcount
        counts["state"] = state
        work = 0
        for table in ("workspace_items", "workspace_events"):
            work += db.execute(f"DELETE FROM {table} WHERE session_id = %s", (sid,)).rowcount
        # The round counts pages, which start again; limits and id counters stay (an id
        # is never given twice).
        work += db.execute("DELETE FROM workspace_meta WHERE session_id = %s AND"
                           " name = 'round'", (sid,)).rowcount
        counts["work"] = work
        items = [int(r[0]) for r in db.execute(
            "SELECT id FROM memory_items WHERE session_id = %s", (sid,)).fetchall()]
        counts["vectors"] = counts.get("vectors", 0) + self._vector_count(db, "item", items)
        counts["items"] = self._erase_items(db, items)
        removed = self._orphans(db, blobs)
        self._bump(db, sid, top=top)
        return Removed(counts) + removed

    def delete_session(self, session: SessionRecord) -> Removed:
        """Clear the session, then leave only a tombstone of its row (see the module)."""
        with self._store.write() as db:
            self._lock(db, session.id)
            removed = self._clear(db, session.id)
            meta = db.execute("DELETE FROM workspace_meta WHERE session_id = %s",
                              (session.id,)).rowcount
            gone = db.execute(
                "UPDATE sessions SET tenant = %s, name = id::text, user_id = NULL,"
                " settings = '{}' WHERE id = %s AND tenant <> %s",
                (GONE, session.id, GONE)).rowcount
        return removed + Removed({"sessions": gone, "work": meta})

    def user_sessions(self, tenant: str, user: str) -> list[SessionRecord]:
        """The sessions of ``user`` in ``tenant``, oldest first."""
        with self._store.read() as db:
            rows = db.execute(
                "SELECT id, tenant, name, user_id, settings, created_at FROM sessions"
                " WHERE tenant = %s AND user_id = %s AND tenant <> %s ORDER BY id",
                (tenant, user, GONE)).fetchall()
        return [session_from_row(r) for r in rows]

    # -- memory items, jobs, working state -----------------------------------------------

    def erase_user_items(self, tenant: str, user: str) -> Removed:
        """Delete every memory item of ``user`` in ``tenant`` (every scope), with history."""
        with self._store.write() as db:
            items = [int(r[0]) for r in db.execute(
                "SELECT id FROM memory_items WHERE tenant = %s AND user_id = %s",
                (tenant, user)).fetchall()]
            vectors = self._vector_count(db, "item", items)
            return Removed({"items": self._erase_items(db, items), "vectors": vectors})

    def erase_items(self, item_ids: Collection[int]) -> int:
        """Delete memory items with their keyword text, vectors and history links."""
        with self._store.write() as db:
            return self._erase_items(db, [int(i) for i in item_ids])

    @staticmethod
    def _erase_items(db: Connection, items: list[int]) -> int:
        if not items:
            return 0
        wanted = _ids(items)
        # An item that stays no longer points at one that goes (a foreign key).
        db.execute("UPDATE memory_items SET superseded_by = NULL WHERE superseded_by ="
                   " ANY(%s)", (wanted,))
        forget_vectors(db, "item", wanted)
        for table in keyword_tables(db, "memory_items_fts"):
            forget_keywords(db, table, wanted)
        return int(db.execute("DELETE FROM memory_items WHERE id = ANY(%s)",
                              (wanted,)).rowcount)

    def derived_items(self, session: SessionRecord, first_page: int) -> list[int]:
        """Ids of the items derived from the session's pages ``first_page`` and later.

        Its episodes of those pages, and its user's facts whose source names one of them
        (``<session name>#p<page>``, as the builder writes it).
        """
        prefix = f"{session.name}#p"
        named = re.compile(re.escape(prefix) + r"(\d+)(?: ·|$)")
        with self._store.read() as db:
            rows = db.execute(
                "SELECT id, session_id, source FROM memory_items WHERE tenant = %s AND"
                " ((session_id = %s AND page >= %s) OR (session_id IS NULL AND user_id IS NOT"
                " DISTINCT FROM %s AND left(source, %s) = %s)) ORDER BY id",
                (session.tenant, session.id, first_page, session.user, len(prefix), prefix),
            ).fetchall()
        out: list[int] = []
        for item, owner, source in rows:
            if owner is not None:
                out.append(int(item))
            elif (found := named.match(str(source))) and int(found.group(1)) >= first_page:
                out.append(int(item))
        return out

    def forget_pages(self, session: SessionRecord, first_page: int) -> int:
        """Delete the saved rows of pages ``first_page`` and later; grow the version."""
        with self._store.write() as db:
            self._lock(db, session.id)
            gone = db.execute("DELETE FROM pages WHERE session_id = %s AND page >= %s",
                              (session.id, first_page)).rowcount
            db.execute("UPDATE sessions SET version = version + 1 WHERE id = %s",
                       (session.id,))
        return int(gone)

    def erase_jobs(self, key_prefixes: Collection[str]) -> int:
        """Delete the jobs whose key starts with one of ``key_prefixes`` (any state)."""
        gone = 0
        with self._store.write() as db:
            for prefix in sorted(set(key_prefixes)):
                if not prefix:
                    raise StoreError("erase_jobs takes non-empty key prefixes")
                gone += db.execute("DELETE FROM memci_jobs WHERE left(key, %s) = %s",
                                   (len(prefix), prefix)).rowcount
        return gone

    def forget_work(self, session_id: int, keys: Collection[str]) -> int:
        """Delete working-state items and every audit event that touched one of them."""
        wanted = sorted(set(keys))
        if not wanted:
            return 0
        gone = 0
        with self._store.write() as db:
            for key in wanted:
                kind, _, item = key.partition(":")
                if item.isdigit():
                    gone += db.execute(
                        "DELETE FROM workspace_items WHERE session_id = %s AND kind = %s"
                        " AND item_id = %s", (session_id, kind, int(item))).rowcount
            # An event touched an item when the item's key is a key of its before or after.
            events = [int(r[0]) for r in db.execute(
                "SELECT id FROM workspace_events WHERE session_id = %s AND"
                " (before::jsonb ?| %s::text[] OR after::jsonb ?| %s::text[]) ORDER BY id",
                (session_id, wanted, wanted)).fetchall()]
            if events:
                db.execute("UPDATE workspace_events SET reverts = NULL WHERE reverts ="
                           " ANY(%s)", (events,))
                gone += db.execute("DELETE FROM workspace_events WHERE id = ANY(%s)",
                                   (events,)).rowcount
            if gone:
                # An event of its own (ids and no content): the state's version grows, so
                # a cached rendering of it is made again.
                db.execute(
                    "INSERT INTO workspace_events (session_id, at, actor, action, target,"
                    " before, after) VALUES (%s, %s, 'memci', 'forget', %s, '{}', '{}')",
                    (session_id, datetime.now(UTC).isoformat(), ",".join(wanted)[:500]))
        return gone

    def forget_values(self, session_ids: Collection[int], keys: Collection[str]) -> int:
        """Delete keyed context values of these sessions; grow each one's version."""
        sessions, names = _ids(int(s) for s in session_ids), _ids(str(k) for k in keys)
        if not sessions:
            return 0
        with self._store.write() as db:
            gone = db.execute("DELETE FROM session_state WHERE session_id = ANY(%s) AND"
                              " key = ANY(%s)", (sessions, names)).rowcount
            for sid in sessions:  # one by one, in id order: locks taken in one order
                db.execute("UPDATE sessions SET version = version + 1 WHERE id = %s", (sid,))
        return int(gone)

    # -- the audit log -------------------------------------------------------------------

    def record(
        self, action: str, *, actor: str, tenant: str, user: str | None,
        sessions: Collection[int], counts: Mapping[str, int], at: datetime,
    ) -> Erasure:
        """Add a deletion to the audit log (the user as the SHA-256 of their id)."""
        digest = user_digest(user) if user is not None else None
        ids = tuple(sorted({int(s) for s in sessions}))
        tally = {str(k): int(v) for k, v in counts.items() if v}
        scrubbed = None if tally else at  # nothing removed: nothing to scrub
        with self._store.write() as db:
            row = db.execute(
                "INSERT INTO memci_erasures (at, actor, action, tenant, user_sha256, sessions,"
                " counts, scrubbed_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (at.isoformat(), actor, action, tenant, digest, json.dumps(list(ids)),
                 json.dumps(tally, sort_keys=True),
                 scrubbed.isoformat() if scrubbed else None)).fetchone()
        assert row is not None
        return Erasure(int(row[0]), at, actor, action, tenant, digest, ids,
                       MappingProxyType(tally), scrubbed)

    def erasures(self, tenant: str | None = None, *, limit: int = 100) -> list[Erasure]:
        """The newest deletions (of one tenant, if given), oldest first."""
        sql = f"SELECT {ERASURE_COLUMNS} FROM memci_erasures"
        args: list[Any] = []
        if tenant is not None:
            sql += " WHERE tenant = %s"
            args.append(tenant)
        with self._store.read() as db:
            rows = db.execute(sql + " ORDER BY id DESC LIMIT %s", (*args, limit)).fetchall()
        return [erasure_from_row(r) for r in reversed(rows)]

    def pending_scrub(self) -> list[int]:
        """Ids of the committed erasures whose scrub is pending, oldest first."""
        with self._store.read() as db:
            return [int(r[0]) for r in db.execute(
                "SELECT id FROM memci_erasures WHERE scrubbed_at IS NULL ORDER BY id"
            ).fetchall()]

    def mark_scrubbed(self, erasure_ids: Collection[int], at: datetime) -> None:
        """Record that a scrub covering these erasures completed at ``at``."""
        if not erasure_ids:
            return
        with self._store.write() as db:
            db.execute("UPDATE memci_erasures SET scrubbed_at = %s WHERE scrubbed_at IS NULL"
                       " AND id = ANY(%s)", (at.isoformat(), _ids(int(i) for i in erasure_ids)))

    def epoch(self) -> int:
        """Grows with every deletion in the store (0 before the first): the rows counted."""
        with self._store.read() as db:
            row = db.execute("SELECT COUNT(*) FROM memci_erasures").fetchone()
        return int(row[0]) if row else 0

    # -- leaving no trace ----------------------------------------------------------------

    def scrub(self, *, full: bool = False) -> bool:
        """Vacuum every table of memci's; False if an older snapshot kept deleted rows.

        ``VACUUM (INDEX_CLEANUP ON)`` removes the dead row versions (and their TOAST data
        and index entries) that no open transaction can still see, without locking out
        readers or writers. A transaction, prepared transaction or replication slot older
        than this call may still see some: they stay until a later vacuum, and this
        returns False (call it again once it ended). ``full`` rewrites each table and its
        indexes instead (``VACUUM (FULL, ANALYZE)``: no byte of a removed row stays in
        their files; each table is locked while it is rewritten), then asks for a
        ``CHECKPOINT`` (where the user may) so the write-ahead log is recycled sooner.
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
                for table in memci_tables(db):
                    db.execute(f"VACUUM {how} {table}")
                if full:
                    _checkpoint(db)
                held = db.execute(
                    "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname ="
                    " current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT"
                    " NULL AND xact_start < %s) OR EXISTS (SELECT 1 FROM pg_prepared_xacts"
                    " WHERE database = current_database() AND prepared < %s) OR EXISTS"
                    " (SELECT 1 FROM pg_replication_slots WHERE xmin IS NOT NULL AND"
                    " (database IS NULL OR database = current_database()))",
                    (started, started)).fetchone()
            except psycopg.Error as exc:
                raise store_error(exc, self._store.location, "scrub") from exc
            finally:
                db.remove_notice_handler(warned)
        if skipped:
            raise StoreError(
                f"the deletion is committed, but scrubbing {self._store.location} skipped "
                f"tables: {skipped[0]}; run engine.scrub() as the owner of memci's tables "
                "(the user that created them), or VACUUM them as that user")
        return not (held and held[0])


def _checkpoint(db: Connection) -> None:
    """Ask for a checkpoint, so old write-ahead log segments are recycled sooner.

    Only a superuser or a member of ``pg_checkpoint`` (PostgreSQL 15+) may: for anyone
    else the server's own next checkpoint does it.
    """
    try:
        db.execute("CHECKPOINT")
    except psycopg.errors.InsufficientPrivilege:
        return
