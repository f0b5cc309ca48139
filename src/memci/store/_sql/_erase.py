"""Deleting (:class:`~memci.store.Eraser`): every table that holds a session's data, both backends.

A deletion runs in one write transaction. It reaches the search entries of every
analyzer's keyword table and the vectors of every embedder's space (each backend finds
those tables in its catalog, not only the ones this process opened), and an artifact
blob once no link, no message row and no view names it. What only a backend has stays
in its ``_erase.py``: how it finds and deletes keyword rows and vectors, what else goes
with a blob (PostgreSQL: its parts in ``artifact_contents``), the erasure epoch, and
:meth:`~memci.store.Eraser.scrub` (SQLite's zeroed pages and checkpoint; PostgreSQL's
``VACUUM``).

Invariants (besides the protocol's, see :mod:`memci.store._erase`):

- a deletion that touches a session's log first locks the session's row where the
  backend locks rows (PostgreSQL ``FOR UPDATE``), as an append does: a deletion and an
  append of one session take turns instead of deadlocking, and no append slips a seq
  below the ``top_seq`` the deletion records (SQLite's writers take turns anyway);
- a deleted session's row stays as a *tombstone*: tenant ``''`` (a tenant no one can
  use), its id as name, no user, no settings; no lookup by name finds it and no listing
  shows it, and its id is never given to another session, so a process that still holds
  the old id finds nothing instead of someone else's session;
- the audit log names a user by the SHA-256 of their id (:func:`user_digest`), never the
  id; it holds ids and counts, never content.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
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
from memci.store._sql._conn import Sql, Transactions
from memci.store._sql._log import SESSION_COLUMNS

__all__ = ["GONE", "SqlEraser", "user_digest"]

GONE = ""  # the tenant of a deleted session's row: no tenant can be empty

# Every table a session's rows are in, by what a deletion counts them as.
_STATE_TABLES = ("tool_calls", "message_views", "pages", "context_events", "session_state")
_WORK_TABLES = ("workspace_items", "workspace_events")


def user_digest(user: str) -> str:
    """How the audit log names a user: the SHA-256 of the id, never the id itself."""
    import hashlib  # with OpenSSL's: loaded by the first erasure, not by an import

    return hashlib.sha256(user.encode("utf-8")).hexdigest()


class SqlEraser(ABC):
    """Deletions and their audit log in one store: what both backends share."""

    def __init__(self, db: Transactions) -> None:
        # Made cheaply: reading the erasure epoch (for caches) writes nothing.
        self._db = db

    # -- what each backend does its own way ----------------------------------------------

    @abstractmethod
    def _forget_keywords(self, sql: Sql, base: str, refs: list[int]) -> None:
        """Delete the rows ``refs`` of every keyword table of ``base`` (every analyzer's)."""

    @abstractmethod
    def _forget_vectors(self, sql: Sql, kind: str, refs: list[int]) -> None:
        """Delete the vectors of ``refs`` (of ``kind``) in every embedder's space."""

    @abstractmethod
    def _drop_contents(self, sql: Sql, blob_ids: list[str]) -> None:
        """Delete what the store keeps of the blobs ``blob_ids`` besides their rows."""

    @abstractmethod
    def epoch(self) -> int:
        """Grows with every deletion in the store (0 before the first): for caches."""

    @abstractmethod
    def scrub(self, *, full: bool = False) -> bool:
        """Take deleted content out of the store's files; False if readers kept some."""

    # -- transactions --------------------------------------------------------------------

    @contextmanager
    def _write(self, session_id: int | None = None) -> Iterator[Sql]:
        """A write transaction that may delete from every table (the session's row locked)."""
        self._db.ready("workspace", "memory", "jobs")
        with self._db.write() as sql:
            lock = sql.dialect.lock_row
            if session_id is not None and lock:
                sql.one("SELECT 1 FROM sessions WHERE id = ?" + lock, (session_id,))
            yield sql

    def _ids(self, values: Iterable[Any]) -> Any:
        """``values``, sorted and once each, as one list parameter."""
        return self._db.dialect.array(sorted(set(values)))

    # -- messages ------------------------------------------------------------------------

    def retract(self, session: SessionRecord, seqs: Collection[int]) -> Removed:
        """Delete the messages ``seqs`` of the session and what is derived from each."""
        wanted = self._ids(int(s) for s in seqs)
        with self._write(session.id) as sql:
            sid, inside = session.id, sql.dialect.in_array
            rows = sql.all(f"SELECT seq, role, parts FROM messages WHERE session_id = ? AND"
                           f" {inside('seq')} ORDER BY seq", (sid, wanted))
            if not rows:
                return Removed()
            gone = [int(r[0]) for r in rows]
            users = [int(r[0]) for r in rows if r[1] == "user"]
            results = {part.call_id for r in rows if r[1] == "tool"
                       for part in loads_parts(r[2]) if isinstance(part, ToolResultPart)}
            blobs = self._views_blobs(sql, sid, gone)
            sql.run(f"DELETE FROM tool_calls WHERE session_id = ? AND {inside('call_seq')}",
                    (sid, self._ids(gone)))
            sql.run("UPDATE tool_calls SET result_seq = NULL WHERE session_id = ? AND"
                    f" {inside('result_seq')}", (sid, self._ids(gone)))
            views = sql.run(f"DELETE FROM message_views WHERE session_id = ? AND"
                            f" {inside('seq')}", (sid, self._ids(gone)))
            counts: dict[str, int] = {"messages": len(gone), "state": views}
            counts.update(self._forget_docs(sql, sid, gone))
            for user_seq in sorted(users, reverse=True):
                # Page numbers of the entries after a deleted user message count one less.
                sql.run("UPDATE memory_docs SET page = page - 1 WHERE session_id = ?"
                        " AND seq > ?", (sid, user_seq))
            links = self._result_links(sql, sid, results)
            sql.run(f"DELETE FROM workspace_artifacts WHERE {inside('seq')}",
                    (self._ids(int(r[0]) for r in links),))
            sql.run(f"DELETE FROM messages WHERE session_id = ? AND {inside('seq')}",
                    (sid, self._ids(gone)))
            removed = self._orphans(sql, blobs | {str(r[1]) for r in links})
            self._bump(sql, sid, top=max(gone))
        counts["artifacts"] = len(links)
        return Removed(counts) + removed

    def _result_links(self, sql: Sql, session_id: int, results: set[str]) -> list[Any]:
        """``(seq, blob)`` of the artifact links of deleted tool results.

        An output still answered in the session (a call id reused) keeps its link.
        """
        inside = sql.dialect.in_array
        answered = {str(r[0]) for r in sql.all(
            "SELECT call_id FROM tool_calls WHERE session_id = ? AND result_seq IS NOT NULL"
            f" AND {inside('call_id')}", (session_id, self._ids(results)))}
        return sql.all(f"SELECT seq, artifact_id FROM workspace_artifacts WHERE session_id = ?"
                       f" AND {inside('call_id')}", (session_id, self._ids(results - answered)))

    def _views_blobs(self, sql: Sql, session_id: int, seqs: list[int]) -> set[str]:
        """Blobs the messages ``seqs`` name (their views, their outputs kept outside)."""
        inside = sql.dialect.in_array
        found = {str(r[0]) for r in sql.all(
            f"SELECT artifact FROM message_views WHERE session_id = ? AND {inside('seq')}",
            (session_id, self._ids(seqs)))}
        found |= {str(r[0]) for r in sql.all(
            "SELECT b.id FROM messages m JOIN workspace_blobs b ON b.sha256 = m.output_sha256"
            f" WHERE m.session_id = ? AND {inside('m.seq')}", (session_id, self._ids(seqs)))}
        return found

    def _forget_docs(self, sql: Sql, session_id: int, seqs: list[int] | None,
                     ) -> dict[str, int]:
        """Delete the search entries of messages (all of the session's when ``seqs`` is None)."""
        if seqs is None:
            rows = sql.all("SELECT id FROM memory_docs WHERE session_id = ?", (session_id,))
        else:
            rows = sql.all("SELECT id FROM memory_docs WHERE session_id = ? AND"
                           f" {sql.dialect.in_array('seq')}", (session_id, self._ids(seqs)))
        return self._forget_doc_ids(sql, [int(r[0]) for r in rows])

    def _forget_doc_ids(self, sql: Sql, docs: list[int]) -> dict[str, int]:
        """Delete the search entries ``docs`` with their keyword text and vectors."""
        if not docs:
            return {"index": 0, "vectors": 0}
        vectors = self._vector_count(sql, "message", docs)
        self._forget_vectors(sql, "message", docs)
        self._forget_keywords(sql, "memory_fts", docs)
        sql.run(f"DELETE FROM memory_docs WHERE {sql.dialect.in_array('id')}",
                (self._ids(docs),))
        return {"index": len(docs), "vectors": vectors}

    def unindex_some(self, session: SessionRecord, limit: int) -> Removed:
        """Delete up to ``limit`` of the session's search entries, oldest first, and commit."""
        with self._write(session.id) as sql:
            docs = [int(r[0]) for r in sql.all(
                "SELECT id FROM memory_docs WHERE session_id = ? ORDER BY id LIMIT ?",
                (session.id, limit))]
            counts = self._forget_doc_ids(sql, docs)
        return Removed({k: n for k, n in counts.items() if n})

    def unindex(self, session: SessionRecord, seqs: Collection[int]) -> int:
        """Delete the search entries (keyword text, vectors) of messages that stay."""
        with self._write() as sql:
            return self._forget_docs(sql, session.id, [int(s) for s in seqs])["index"]

    def _vector_count(self, sql: Sql, kind: str, refs: Collection[int]) -> int:
        return int(sql.value("SELECT COUNT(*) FROM memory_vector_refs WHERE kind = ? AND"
                             f" {sql.dialect.in_array('ref')}", (kind, self._ids(refs))) or 0)

    def _orphans(self, sql: Sql, blobs: Collection[str]) -> Removed:
        """Delete the blobs among ``blobs`` that no link and no message row names any more.

        What a backend keeps of one besides its row goes with it (:meth:`_drop_contents`);
        the ids of those kept outside their rows are reported in ``files`` (the caller
        removes such files once this commits).
        """
        if not blobs:
            return Removed()
        inside = sql.dialect.in_array
        rows = sql.all(
            f"SELECT b.id, b.content IS NULL FROM workspace_blobs b WHERE {inside('b.id')}"
            " AND NOT EXISTS (SELECT 1 FROM workspace_artifacts a WHERE a.artifact_id = b.id)"
            " AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.output_sha256 = b.sha256)"
            " AND NOT EXISTS (SELECT 1 FROM message_views v WHERE v.artifact = b.id)",
            (self._ids(blobs),))
        if not rows:
            return Removed()
        ids = sorted({str(r[0]) for r in rows})
        self._drop_contents(sql, ids)
        sql.run(f"DELETE FROM workspace_blobs WHERE {inside('id')}", (self._ids(ids),))
        return Removed({"blobs": len(rows)}, tuple(str(r[0]) for r in rows if r[1]))

    @staticmethod
    def _bump(sql: Sql, session_id: int, *, top: int) -> None:
        """Grow the epoch and the version; keep the highest seq ever given."""
        sql.run("UPDATE sessions SET epoch = epoch + 1, version = version + 1,"
                f" top_seq = {sql.dialect.greatest('top_seq', '?')} WHERE id = ?",
                (top, session_id))

    # -- sessions ------------------------------------------------------------------------

    def clear(self, session: SessionRecord) -> Removed:
        """Delete every message of the session and everything derived from them."""
        with self._write(session.id) as sql:
            return self._clear(sql, session.id)

    def _clear(self, sql: Sql, sid: int) -> Removed:
        top = int(sql.value("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?",
                            (sid,)) or 0)
        counts: dict[str, int] = {}
        counts.update(self._forget_docs(sql, sid, None))
        blobs = {str(r[0]) for r in sql.all(
            "SELECT artifact_id FROM workspace_artifacts WHERE session_id = ?", (sid,))}
        blobs |= self._views_blobs(sql, sid, [int(r[0]) for r in sql.all(
            "SELECT seq FROM messages WHERE session_id = ?", (sid,))])
        counts["artifacts"] = sql.run("DELETE FROM workspace_artifacts WHERE session_id = ?",
                                      (sid,))
        counts["messages"] = sql.run("DELETE FROM messages WHERE session_id = ?", (sid,))
        counts["state"] = sum(sql.run(f"DELETE FROM {table} WHERE session_id = ?", (sid,))
                              for table in _STATE_TABLES)
        work = sum(sql.run(f"DELETE FROM {table} WHERE session_id = ?", (sid,))
                   for table in _WORK_TABLES)
        # The round counts pages, which start again; limits and id counters stay (an id
        # is never given twice).
        work += sql.run("DELETE FROM workspace_meta WHERE session_id = ? AND name = 'round'",
                        (sid,))
        counts["work"] = work
        items = [int(r[0]) for r in sql.all("SELECT id FROM memory_items WHERE session_id = ?",
                                            (sid,))]
        counts["vectors"] = counts.get("vectors", 0) + self._vector_count(sql, "item", items)
        counts["items"] = self._erase_items(sql, items)
        removed = self._orphans(sql, blobs)
        self._bump(sql, sid, top=top)
        return Removed(counts) + removed

    def delete_session(self, session: SessionRecord) -> Removed:
        """Clear the session, then leave only a tombstone of its row (see the module)."""
        with self._write(session.id) as sql:
            removed = self._clear(sql, session.id)
            meta = sql.run("DELETE FROM workspace_meta WHERE session_id = ?", (session.id,))
            gone = sql.run("UPDATE sessions SET tenant = ?, name = CAST(id AS TEXT),"
                           " user_id = NULL, settings = '{}' WHERE id = ? AND tenant <> ?",
                           (GONE, session.id, GONE))
        return removed + Removed({"sessions": gone, "work": meta})

    def user_sessions(self, tenant: str, user: str) -> list[SessionRecord]:
        """The sessions of ``user`` in ``tenant``, oldest first."""
        with self._db.read() as sql:
            rows = sql.all(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE tenant = ?"
                           " AND user_id = ? AND tenant <> ? ORDER BY id", (tenant, user, GONE))
        return [session_from_row(r) for r in rows]

    # -- memory items, jobs, working state -----------------------------------------------

    def erase_user_items(self, tenant: str, user: str) -> Removed:
        """Delete every memory item of ``user`` in ``tenant`` (every scope), with history."""
        with self._write() as sql:
            items = [int(r[0]) for r in sql.all(
                "SELECT id FROM memory_items WHERE tenant = ? AND user_id = ?", (tenant, user))]
            vectors = self._vector_count(sql, "item", items)
            return Removed({"items": self._erase_items(sql, items), "vectors": vectors})

    def erase_items(self, item_ids: Collection[int]) -> int:
        """Delete memory items with their keyword text, vectors and history links."""
        with self._write() as sql:
            return self._erase_items(sql, [int(i) for i in item_ids])

    def _erase_items(self, sql: Sql, items: list[int]) -> int:
        if not items:
            return 0
        wanted, inside = sorted(set(items)), sql.dialect.in_array
        # An item that stays no longer points at one that goes (a foreign key).
        sql.run(f"UPDATE memory_items SET superseded_by = NULL WHERE {inside('superseded_by')}",
                (self._ids(wanted),))
        self._forget_vectors(sql, "item", wanted)
        self._forget_keywords(sql, "memory_items_fts", wanted)
        return sql.run(f"DELETE FROM memory_items WHERE {inside('id')}", (self._ids(wanted),))

    def derived_items(self, session: SessionRecord, first_page: int) -> list[int]:
        """Ids of the items derived from the session's pages ``first_page`` and later.

        Its episodes of those pages, and its user's facts whose source names one of them
        (``<session name>#p<page>``, as the builder writes it).
        """
        prefix = f"{session.name}#p"
        named = re.compile(re.escape(prefix) + r"(\d+)(?: ·|$)")
        self._db.ready("memory")
        with self._db.read() as sql:
            rows = sql.all(
                "SELECT id, session_id, source FROM memory_items WHERE tenant = ? AND"
                " ((session_id = ? AND page >= ?) OR (session_id IS NULL AND user_id"
                f" {sql.dialect.is_same} ? AND substr(source, 1, ?) = ?)) ORDER BY id",
                (session.tenant, session.id, first_page, session.user, len(prefix), prefix))
        out: list[int] = []
        for item, owner, source in rows:
            if owner is not None:
                out.append(int(item))
            elif (found := named.match(str(source))) and int(found.group(1)) >= first_page:
                out.append(int(item))
        return out

    def forget_pages(self, session: SessionRecord, first_page: int) -> int:
        """Delete the saved rows of pages ``first_page`` and later; grow the version."""
        with self._write(session.id) as sql:
            gone = sql.run("DELETE FROM pages WHERE session_id = ? AND page >= ?",
                           (session.id, first_page))
            sql.run("UPDATE sessions SET version = version + 1 WHERE id = ?", (session.id,))
        return gone

    def erase_jobs(self, key_prefixes: Collection[str]) -> int:
        """Delete the jobs whose key starts with one of ``key_prefixes`` (any state)."""
        gone = 0
        with self._write() as sql:
            for prefix in sorted(set(key_prefixes)):
                if not prefix:
                    raise StoreError("erase_jobs takes non-empty key prefixes")
                gone += sql.run("DELETE FROM memci_jobs WHERE substr(key, 1, ?) = ?",
                                (len(prefix), prefix))
        return gone

    def forget_work(self, session_id: int, keys: Collection[str]) -> int:
        """Delete working-state items and every audit event that touched one of them."""
        wanted = sorted(set(keys))
        if not wanted:
            return 0
        with self._write() as sql:
            gone = 0
            for key in wanted:
                kind, _, item = key.partition(":")
                if item.isdigit():
                    gone += sql.run("DELETE FROM workspace_items WHERE session_id = ?"
                                    " AND kind = ? AND item_id = ?", (session_id, kind, int(item)))
            gone += self._forget_events(sql, session_id, wanted)
            if gone:
                # An event of its own (ids and no content): the state's version grows, so
                # a cached rendering of it is made again.
                sql.run("INSERT INTO workspace_events (session_id, at, actor, action, target,"
                        " before, after) VALUES (?, ?, 'memci', 'forget', ?, '{}', '{}')",
                        (session_id, datetime.now(UTC).isoformat(), ",".join(wanted)[:500]))
        return gone

    def _forget_events(self, sql: Sql, session_id: int, keys: list[str]) -> int:
        """Delete the session's audit events whose before or after has one of ``keys``."""
        d = sql.dialect
        events = [int(r[0]) for r in sql.all(
            f"SELECT id FROM workspace_events WHERE session_id = ? AND ({d.json_has_key('before')}"
            f" OR {d.json_has_key('after')}) ORDER BY id",
            (session_id, d.array(keys), d.array(keys)))]
        if not events:
            return 0
        sql.run(f"UPDATE workspace_events SET reverts = NULL WHERE {d.in_array('reverts')}",
                (d.array(events),))
        return sql.run(f"DELETE FROM workspace_events WHERE {d.in_array('id')}",
                       (d.array(events),))

    def forget_values(self, session_ids: Collection[int], keys: Collection[str]) -> int:
        """Delete keyed context values of these sessions; grow each one's version."""
        sessions = sorted({int(s) for s in session_ids})
        if not sessions:
            return 0
        with self._write() as sql:
            inside = sql.dialect.in_array
            gone = sql.run(f"DELETE FROM session_state WHERE {inside('session_id')} AND"
                           f" {inside('key')}", (self._ids(sessions), self._ids(map(str, keys))))
            for sid in sessions:  # one by one, in id order: row locks taken in one order
                sql.run("UPDATE sessions SET version = version + 1 WHERE id = ?", (sid,))
        return gone

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
        with self._db.write() as sql:
            made = sql.value(
                "INSERT INTO memci_erasures (at, actor, action, tenant, user_sha256, sessions,"
                " counts, scrubbed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (at.isoformat(), actor, action, tenant, digest, json.dumps(list(ids)),
                 json.dumps(tally, sort_keys=True), scrubbed.isoformat() if scrubbed else None))
        return Erasure(int(made), at, actor, action, tenant, digest, ids,
                       MappingProxyType(tally), scrubbed)

    def erasures(self, tenant: str | None = None, *, limit: int = 100) -> list[Erasure]:
        """The newest deletions (of one tenant, if given), oldest first."""
        text, args = f"SELECT {ERASURE_COLUMNS} FROM memci_erasures", list[Any]()
        if tenant is not None:
            text += " WHERE tenant = ?"
            args.append(tenant)
        with self._db.read() as sql:
            rows = sql.all(text + " ORDER BY id DESC LIMIT ?", (*args, limit))
        return [erasure_from_row(r) for r in reversed(rows)]

    def pending_scrub(self) -> list[int]:
        """Ids of the committed erasures whose scrub is pending, oldest first."""
        with self._db.read() as sql:
            return [int(r[0]) for r in sql.all(
                "SELECT id FROM memci_erasures WHERE scrubbed_at IS NULL ORDER BY id")]

    def mark_scrubbed(self, erasure_ids: Collection[int], at: datetime) -> None:
        """Record that a scrub covering these erasures completed at ``at``."""
        if not erasure_ids:
            return
        with self._db.write() as sql:
            sql.run("UPDATE memci_erasures SET scrubbed_at = ? WHERE scrubbed_at IS NULL"
                    f" AND {sql.dialect.in_array('id')}",
                    (at.isoformat(), self._ids(int(i) for i in erasure_ids)))
