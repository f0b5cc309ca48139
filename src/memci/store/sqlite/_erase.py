"""Deleting in SQLite (:class:`~memci.store.Eraser`): every table that holds a session's data.

A deletion runs in one write transaction. The store's connection overwrites what any
write frees with zeros (``PRAGMA secure_delete``, see :mod:`memci.store.sqlite._store`),
and the FTS5 tables delete securely where SQLite can (3.42 and later: a deleted row's
terms leave the index at once, see :mod:`memci.store.sqlite._fts`). A deletion reaches
the search entries of every analyzer's FTS5 tables and the vectors of every embedder's
space (found in the schema, not only the ones this process opened), and an artifact blob
once no link and no message row names it. A session's entries may go first, in short
transactions of their own (:meth:`SQLiteEraser.unindex_some`): a secure delete costs
milliseconds an entry, and thousands in one transaction would hold every other writer.

A deleted session's row stays as a *tombstone*: tenant ``''`` (a tenant no one can use)
and its id as name, no user, no settings. No lookup by name finds it and no listing shows
it, and SQLite never gives its id to another session, so a process that still holds the
old id finds nothing instead of someone else's session.

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

import hashlib
import json
import re
import sqlite3
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from memci.errors import StoreError
from memci.messages import ToolResultPart, loads_parts
from memci.store._erase import Erasure, Removed
from memci.store._records import SessionRecord
from memci.store._rows import ERASURE_COLUMNS, erasure_from_row, session_from_row
from memci.store.sqlite._db import Database
from memci.store.sqlite._driver import errors
from memci.store.sqlite._failures import store_error
from memci.store.sqlite._fts import fts_secure, fts_tables, secure_delete_supported
from memci.store.sqlite._migrations_jobs import JOBS_MIGRATIONS
from memci.store.sqlite._migrations_memory import MEMORY_MIGRATIONS
from memci.store.sqlite._migrations_workspace import WORKSPACE_MIGRATIONS
from memci.store.sqlite._vectors import forget_vectors

__all__ = ["ZEROED", "SQLiteEraser", "mark_zeroed"]

GONE = ""  # the tenant of a deleted session's row: no tenant can be empty

#: The file header's ``user_version`` when every byte a write freed was zeroed since the
#: file was made or last rewritten, so a deleted row leaves nothing behind in it.
ZEROED = 1
# How long the checkpoint that empties the write-ahead log waits for readers (ms).
_CHECKPOINT_WAIT_MS = 250


def mark_zeroed(db: sqlite3.Connection) -> None:
    """Record in the file's header that it holds no freed byte that was not zeroed."""
    db.execute(f"PRAGMA user_version = {ZEROED}")


def _ids(values: Iterable[Any]) -> str:
    """``values`` as one JSON parameter, read with ``json_each`` (no limit on how many)."""
    return json.dumps(sorted(set(values)))


def user_digest(user: str) -> str:
    """How the audit log names a user: the SHA-256 of the id, never the id itself."""
    return hashlib.sha256(user.encode("utf-8")).hexdigest()


class SQLiteEraser:
    """Deletions and their audit log in one SQLite store."""

    def __init__(self, store: Database) -> None:
        # Made cheaply: reading the erasure epoch (for caches) writes nothing.
        self._store = store

    def _ready(self) -> None:
        """Make every table a session's data may be in (at once when made already).

        So a deletion never has to ask which parts were made.
        """
        self._store.migrate("workspace", WORKSPACE_MIGRATIONS)
        self._store.migrate("memory", MEMORY_MIGRATIONS)
        self._store.migrate("jobs", JOBS_MIGRATIONS)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (what it frees is zeroed: see the module)."""
        self._ready()
        with self._store.write() as db:
            yield db

    # -- messages ------------------------------------------------------------------------

    def retract(self, session: SessionRecord, seqs: Collection[int]) -> Removed:
        """Delete the messages ``seqs`` of the session and what is derived from each."""
        wanted = _ids(int(s) for s in seqs)
        with self._write() as db:
            rows = db.execute(
                "SELECT seq, role, parts FROM messages WHERE session_id = ? AND seq IN"
                " (SELECT value FROM json_each(?)) ORDER BY seq", (session.id, wanted),
            ).fetchall()
            if not rows:
                return Removed()
            gone = [int(r[0]) for r in rows]
            users = [int(r[0]) for r in rows if r[1] == "user"]
            results = {part.call_id for r in rows if r[1] == "tool"
                       for part in loads_parts(r[2]) if isinstance(part, ToolResultPart)}
            blobs = self._views_blobs(db, session.id, gone)
            db.execute("DELETE FROM tool_calls WHERE session_id = ? AND call_seq IN"
                       " (SELECT value FROM json_each(?))", (session.id, _ids(gone)))
            db.execute("UPDATE tool_calls SET result_seq = NULL WHERE session_id = ? AND"
                       " result_seq IN (SELECT value FROM json_each(?))",
                       (session.id, _ids(gone)))
            views = db.execute("DELETE FROM message_views WHERE session_id = ? AND seq IN"
                               " (SELECT value FROM json_each(?))",
                               (session.id, _ids(gone))).rowcount
            counts: dict[str, int] = {"messages": len(gone), "state": views}
            counts.update(self._forget_docs(db, session.id, gone))
            for user_seq in sorted(users, reverse=True):
                # Page numbers of the entries after a deleted user message count one less.
                db.execute("UPDATE memory_docs SET page = page - 1 WHERE session_id = ?"
                           " AND seq > ?", (session.id, user_seq))
            # An output still answered in the session (a call id reused) keeps its link.
            answered = {str(r[0]) for r in db.execute(
                "SELECT call_id FROM tool_calls WHERE session_id = ? AND result_seq IS NOT"
                " NULL AND call_id IN (SELECT value FROM json_each(?))",
                (session.id, _ids(results)))}
            links = db.execute(
                "SELECT seq, artifact_id FROM workspace_artifacts WHERE session_id = ? AND"
                " call_id IN (SELECT value FROM json_each(?))",
                (session.id, _ids(results - answered))).fetchall()
            db.execute("DELETE FROM workspace_artifacts WHERE seq IN (SELECT value FROM"
                       " json_each(?))", (_ids(int(r[0]) for r in links),))
            db.execute("DELETE FROM messages WHERE session_id = ? AND seq IN (SELECT value"
                       " FROM json_each(?))", (session.id, _ids(gone)))
            removed = self._orphans(db, blobs | {str(r[1]) for r in links})
            self._bump(db, session.id, top=max(gone))
        counts["artifacts"] = len(links)
        return Removed(counts) + removed

    @staticmethod
    def _views_blobs(db: sqlite3.Connection, session_id: int, seqs: list[int]) -> set[str]:
        """Blobs the messages ``seqs`` name (their views, their outputs kept in files)."""
        found = {str(r[0]) for r in db.execute(
            "SELECT artifact FROM message_views WHERE session_id = ? AND seq IN (SELECT"
            " value FROM json_each(?))", (session_id, _ids(seqs)))}
        found |= {str(r[0]) for r in db.execute(
            "SELECT b.id FROM messages m JOIN workspace_blobs b ON b.sha256 = m.output_sha256"
            " WHERE m.session_id = ? AND m.seq IN (SELECT value FROM json_each(?))",
            (session_id, _ids(seqs)))}
        return found

    def _forget_docs(
        self, db: sqlite3.Connection, session_id: int, seqs: list[int] | None
    ) -> dict[str, int]:
        """Delete the search entries of messages (all of the session's when ``seqs`` is None)."""
        if seqs is None:
            docs = [int(r[0]) for r in db.execute(
                "SELECT id FROM memory_docs WHERE session_id = ?", (session_id,))]
        else:
            docs = [int(r[0]) for r in db.execute(
                "SELECT id FROM memory_docs WHERE session_id = ? AND seq IN (SELECT value"
                " FROM json_each(?))", (session_id, _ids(seqs)))]
        return self._forget_doc_ids(db, docs)

    def _forget_doc_ids(self, db: sqlite3.Connection, docs: list[int]) -> dict[str, int]:
        """Delete the search entries ``docs`` with their keyword text and vectors."""
        if not docs:
            return {"index": 0, "vectors": 0}
        vectors = self._vector_count(db, "message", docs)
        forget_vectors(self._store, db, "message", docs)
        for table in fts_tables(db)["memory_fts"]:
            db.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))",
                       (_ids(docs),))
        db.execute("DELETE FROM memory_docs WHERE id IN (SELECT value FROM json_each(?))",
                   (_ids(docs),))
        return {"index": len(docs), "vectors": vectors}

    def unindex_some(self, session: SessionRecord, limit: int) -> Removed:
        """Delete up to ``limit`` of the session's search entries, oldest first, and commit."""
        with self._write() as db:
            docs = [int(r[0]) for r in db.execute(
                "SELECT id FROM memory_docs WHERE session_id = ? ORDER BY id LIMIT ?",
                (session.id, limit))]
            counts = self._forget_doc_ids(db, docs)
        return Removed({k: n for k, n in counts.items() if n})

    def unindex(self, session: SessionRecord, seqs: Collection[int]) -> int:
        """Delete the search entries (keyword text, vectors) of messages that stay."""
        with self._write() as db:
            return self._forget_docs(db, session.id, [int(s) for s in seqs])["index"]

    @staticmethod
    def _vector_count(db: sqlite3.Connection, kind: str, refs: Collection[int]) -> int:
        return int(db.execute(
            "SELECT COUNT(*) FROM memory_vector_refs WHERE kind = ? AND ref IN (SELECT value"
            " FROM json_each(?))", (kind, _ids(refs))).fetchone()[0])

    def _orphans(self, db: sqlite3.Connection, blobs: Collection[str]) -> Removed:
        """Delete the blobs among ``blobs`` that no link and no message row names any more."""
        if not blobs:
            return Removed()
        rows = db.execute(
            "SELECT b.id, b.content IS NULL FROM workspace_blobs b WHERE b.id IN (SELECT"
            " value FROM json_each(?)) AND NOT EXISTS (SELECT 1 FROM workspace_artifacts a"
            " WHERE a.artifact_id = b.id) AND NOT EXISTS (SELECT 1 FROM messages m WHERE"
            " m.output_sha256 = b.sha256) AND NOT EXISTS (SELECT 1 FROM message_views v"
            " WHERE v.artifact = b.id)", (_ids(blobs),)).fetchall()
        if not rows:
            return Removed()
        db.execute("DELETE FROM workspace_blobs WHERE id IN (SELECT value FROM json_each(?))",
                   (_ids(str(r[0]) for r in rows),))
        return Removed({"blobs": len(rows)}, tuple(str(r[0]) for r in rows if r[1]))

    @staticmethod
    def _bump(db: sqlite3.Connection, session_id: int, *, top: int) -> None:
        """Grow the epoch and the version; keep the highest seq ever given."""
        db.execute("UPDATE sessions SET epoch = epoch + 1, version = version + 1,"
                   " top_seq = MAX(top_seq, ?) WHERE id = ?", (top, session_id))

    # -- sessions ------------------------------------------------------------------------

    def clear(self, session: SessionRecord) -> Removed:
        """Delete every message of the session and everything derived from them."""
        with self._write() as db:
            return self._clear(db, session.id)

    def _clear(self, db: sqlite3.Connection, sid: int) -> Removed:
        top = int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?",
                             (sid,)).fetchone()[0])
        counts: dict[str, int] = {}
        counts.update(self._forget_docs(db, sid, None))
        blobs = {str(r[0]) for r in db.execute(
            "SELECT artifact_id FROM workspace_artifacts WHERE session_id = ?", (sid,))}
        blobs |= self._views_blobs(db, sid, [int(r[0]) for r in db.execute(
            "SELECT seq FROM messages WHERE session_id = ?", (sid,))])
        counts["artifacts"] = db.execute("DELETE FROM workspace_artifacts WHERE session_id = ?",
                                         (sid,)).rowcount
        counts["messages"] = db.execute("DELETE FROM messages WHERE session_id = ?",
                                        (sid,)).rowcount
        state = 0
        for table in ("tool_calls", "message_views", "pages", "context_events",
                      "session_state"):
            state += db.execute(f"DELETE FROM {table} WHERE session_id = ?", (sid,)).rowcount
        counts["state"] = state
        work = 0
        for table in ("workspace_items", "workspace_events"):
            work += db.execute(f"DELETE FROM {table} WHERE session_id = ?", (sid,)).rowcount
        # The round counts pages, which start again; limits and id counters stay (an id
        # is never given twice).
        work += db.execute("DELETE FROM workspace_meta WHERE session_id = ? AND name = 'round'",
                           (sid,)).rowcount
        counts["work"] = work
        items = [int(r[0]) for r in db.execute(
            "SELECT id FROM memory_items WHERE session_id = ?", (sid,))]
        counts["vectors"] = counts.get("vectors", 0) + self._vector_count(db, "item", items)
        counts["items"] = self._erase_items(db, items)
        removed = self._orphans(db, blobs)
        self._bump(db, sid, top=top)
        return Removed(counts) + removed

    def delete_session(self, session: SessionRecord) -> Removed:
        """Clear the session, then leave only a tombstone of its row (see the module)."""
        with self._write() as db:
            removed = self._clear(db, session.id)
            meta = db.execute("DELETE FROM workspace_meta WHERE session_id = ?",
                              (session.id,)).rowcount
            gone = db.execute(
                "UPDATE sessions SET tenant = ?, name = CAST(id AS TEXT), user_id = NULL,"
                " settings = '{}' WHERE id = ? AND tenant != ?",
                (GONE, session.id, GONE)).rowcount
        return removed + Removed({"sessions": gone, "work": meta})

    def user_sessions(self, tenant: str, user: str) -> list[SessionRecord]:
        """The sessions of ``user`` in ``tenant``, oldest first."""
        with self._store.read() as db:
            rows = db.execute(
                "SELECT id, tenant, name, user_id, settings, created_at FROM sessions"
                " WHERE tenant = ? AND user_id = ? AND tenant != ? ORDER BY id",
                (tenant, user, GONE)).fetchall()
        return [session_from_row(r) for r in rows]

    # -- memory items, jobs, working state -----------------------------------------------

    def erase_user_items(self, tenant: str, user: str) -> Removed:
        """Delete every memory item of ``user`` in ``tenant`` (every scope), with history."""
        with self._write() as db:
            items = [int(r[0]) for r in db.execute(
                "SELECT id FROM memory_items WHERE tenant = ? AND user_id = ?", (tenant, user))]
            vectors = self._vector_count(db, "item", items)
            return Removed({"items": self._erase_items(db, items), "vectors": vectors})

    def erase_items(self, item_ids: Collection[int]) -> int:
        """Delete memory items with their keyword text, vectors and history links."""
        with self._write() as db:
            return self._erase_items(db, [int(i) for i in item_ids])

    def _erase_items(self, db: sqlite3.Connection, items: list[int]) -> int:
        if not items:
            return 0
        wanted = _ids(items)
        # An item that stays no longer points at one that goes (a foreign key).
        db.execute("UPDATE memory_items SET superseded_by = NULL WHERE superseded_by IN"
                   " (SELECT value FROM json_each(?))", (wanted,))
        forget_vectors(self._store, db, "item", items)
        for table in fts_tables(db)["memory_items_fts"]:
            db.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))",
                       (wanted,))
        return int(db.execute("DELETE FROM memory_items WHERE id IN (SELECT value FROM"
                              " json_each(?))", (wanted,)).rowcount)

    def derived_items(self, session: SessionRecord, first_page: int) -> list[int]:
        """Ids of the items derived from the session's pages ``first_page`` and later.

        Its episodes of those pages, and its user's facts whose source names one of them
        (``<session name>#p<page>``, as the builder writes it).
        """
        prefix = f"{session.name}#p"
        named = re.compile(re.escape(prefix) + r"(\d+)(?: ·|$)")
        self._ready()
        with self._store.read() as db:
            rows = db.execute(
                "SELECT id, session_id, source FROM memory_items WHERE tenant = ? AND"
                " ((session_id = ? AND page >= ?) OR (session_id IS NULL AND user_id IS ?"
                " AND substr(source, 1, ?) = ?))",
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
        with self._write() as db:
            gone = db.execute("DELETE FROM pages WHERE session_id = ? AND page >= ?",
                              (session.id, first_page)).rowcount
            db.execute("UPDATE sessions SET version = version + 1 WHERE id = ?", (session.id,))
        return int(gone)

    def erase_jobs(self, key_prefixes: Collection[str]) -> int:
        """Delete the jobs whose key starts with one of ``key_prefixes`` (any state)."""
        gone = 0
        with self._write() as db:
            for prefix in set(key_prefixes):
                if not prefix:
                    raise StoreError("erase_jobs takes non-empty key prefixes")
                gone += db.execute("DELETE FROM memci_jobs WHERE substr(key, 1, ?) = ?",
                                   (len(prefix), prefix)).rowcount
        return gone

    def forget_work(self, session_id: int, keys: Collection[str]) -> int:
        """Delete working-state items and every audit event that touched one of them."""
        wanted = sorted(set(keys))
        if not wanted:
            return 0
        gone = 0
        with self._write() as db:
            for key in wanted:
                kind, _, item = key.partition(":")
                if item.isdigit():
                    gone += db.execute(
                        "DELETE FROM workspace_items WHERE session_id = ? AND kind = ?"
                        " AND item_id = ?", (session_id, kind, int(item))).rowcount
            events = [int(r[0]) for r in db.execute(
                "SELECT DISTINCT e.id FROM workspace_events e, json_each(e.before) b"
                " WHERE e.session_id = ? AND b.key IN (SELECT value FROM json_each(?))"
                " UNION SELECT DISTINCT e.id FROM workspace_events e, json_each(e.after) a"
                " WHERE e.session_id = ? AND a.key IN (SELECT value FROM json_each(?))",
                (session_id, _ids(wanted), session_id, _ids(wanted)))]
            if events:
                db.execute("UPDATE workspace_events SET reverts = NULL WHERE reverts IN"
                           " (SELECT value FROM json_each(?))", (_ids(events),))
                gone += db.execute("DELETE FROM workspace_events WHERE id IN (SELECT value"
                                   " FROM json_each(?))", (_ids(events),)).rowcount
            if gone:
                # An event of its own (ids and no content): the state's version grows, so
                # a cached rendering of it is made again.
                db.execute(
                    "INSERT INTO workspace_events (session_id, at, actor, action, target,"
                    " before, after) VALUES (?, ?, 'memci', 'forget', ?, '{}', '{}')",
                    (session_id, datetime.now(UTC).isoformat(), ",".join(wanted)[:500]))
        return gone

    def forget_values(self, session_ids: Collection[int], keys: Collection[str]) -> int:
        """Delete keyed context values of these sessions; grow each one's version."""
        sessions, names = _ids(int(s) for s in session_ids), _ids(keys)
        with self._write() as db:
            gone = db.execute(
                "DELETE FROM session_state WHERE session_id IN (SELECT value FROM json_each(?))"
                " AND key IN (SELECT value FROM json_each(?))", (sessions, names)).rowcount
            db.execute("UPDATE sessions SET version = version + 1 WHERE id IN (SELECT value"
                       " FROM json_each(?))", (sessions,))
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
            cursor = db.execute(
                "INSERT INTO memci_erasures (at, actor, action, tenant, user_sha256, sessions,"
                " counts, scrubbed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (at.isoformat(), actor, action, tenant, digest, json.dumps(list(ids)),
                 json.dumps(tally, sort_keys=True),
                 scrubbed.isoformat() if scrubbed else None))
        return Erasure(int(cursor.lastrowid or 0), at, actor, action, tenant, digest, ids,
                       MappingProxyType(tally), scrubbed)

    def erasures(self, tenant: str | None = None, *, limit: int = 100) -> list[Erasure]:
        """The newest deletions (of one tenant, if given), oldest first."""
        sql = f"SELECT {ERASURE_COLUMNS} FROM memci_erasures"
        args: list[Any] = []
        if tenant is not None:
            sql += " WHERE tenant = ?"
            args.append(tenant)
        with self._store.read() as db:
            rows = db.execute(sql + " ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
        return [erasure_from_row(r) for r in reversed(rows)]

    def pending_scrub(self) -> list[int]:
        """Ids of the committed erasures whose scrub is pending, oldest first."""
        with self._store.read() as db:
            return [int(r[0]) for r in db.execute(
                "SELECT id FROM memci_erasures WHERE scrubbed_at IS NULL ORDER BY id")]

    def mark_scrubbed(self, erasure_ids: Collection[int], at: datetime) -> None:
        """Record that a scrub covering these erasures completed at ``at``."""
        if not erasure_ids:
            return
        with self._store.write() as db:
            db.execute("UPDATE memci_erasures SET scrubbed_at = ? WHERE scrubbed_at IS NULL"
                       " AND id IN (SELECT value FROM json_each(?))",
                       (at.isoformat(), _ids(int(i) for i in erasure_ids)))

    def epoch(self) -> int:
        """Grows with every deletion in the store (0 before the first)."""
        with self._store.read() as db:
            return int(db.execute("SELECT COALESCE(MAX(id), 0) FROM memci_erasures"
                                  ).fetchone()[0])

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
        with self._write() as db:
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

