"""The message search index in PostgreSQL (:class:`~memci.store.MessageSearch`).

``memory_docs`` (migration series ``memory``) holds one row per indexed message; the
derived keyword table ``memory_fts_<analyzer>`` (:class:`KeywordTable`, ref = doc id,
shard = session id) holds its keyword text: ``body`` (the analyzer's document of its
text, weight A) and ``context`` (of the tail of the messages before it, weight B), ranked
by FTS5's BM25 so both backends order results alike. User text reaches SQL only as
parameters. A doc number comes from an identity column, so it is unique across servers;
``(session_id, seq)`` is unique, so a message indexed by two servers at once has one entry.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from memci.messages import Message
from memci.store._rows import message_from_row, stored_parts
from memci.store._search import Candidate, IndexedMessage, SearchDoc, SearchFilter
from memci.store.postgres._db import Connection, Database
from memci.store.postgres._keyword import KeywordTable

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["PostgresMessageSearch", "session_names"]


def session_names(db: Connection, ids: Collection[int]) -> dict[int, str]:
    """Names of the sessions ``ids`` (a session gone: its id as text)."""
    wanted = sorted(set(ids))
    found = {int(r[0]): str(r[1]) for r in db.execute(
        "SELECT id, name FROM sessions WHERE id = ANY(%s)", (wanted,))}
    return {i: found.get(i, str(i)) for i in wanted}


def _filters(where: SearchFilter) -> tuple[str, list[Any]]:
    sql, args = "", list[Any]()
    if where.sessions is not None:
        sql += " AND d.session_id = ANY(%s)"
        args.append([int(s) for s in where.sessions])
    if where.start is not None:
        sql += " AND d.created >= %s"
        args.append(where.start)
    if where.end is not None:
        sql += " AND d.created < %s"
        args.append(where.end)
    if where.roles is not None:
        sql += " AND d.role = ANY(%s)"
        args.append(list(where.roles))
    if where.below is not None:
        sql += " AND d.id < %s"
        args.append(where.below)
    return sql, args


def _candidates(rows: Sequence[Sequence[Any]]) -> list[Candidate]:
    return [Candidate(int(r[0]), int(r[1]), int(r[2])) for r in rows]


class PostgresMessageSearch:
    """The message index of one analyzer in one PostgreSQL store."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        self._store = store
        self.analyzer = analyzer
        # FTS5 counts the scope column's one term in every row: so does BM25 here.
        self.table = KeywordTable(store, f"memory_fts_{analyzer.name}", analyzer.tokenize,
                                  extra_tokens=1)
        store.derive(self.table.name, self.table.statements())
        self._names: dict[int, str] = {}

    # -- writing -------------------------------------------------------------------------

    def add(self, doc: SearchDoc) -> int:
        """Add an entry (and its keyword text); 1, or 0 when the message has one already."""
        with self._store.write() as db:
            row = db.execute(
                "INSERT INTO memory_docs (session_id, seq, role, page, created)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (session_id, seq) DO NOTHING"
                " RETURNING id", (doc.session_id, doc.seq, doc.role, doc.page, doc.created),
            ).fetchone()
            if row is None:
                return 0
            if doc.role != "system":
                self._add_keyword(db, int(row[0]), doc.session_id, doc.text, doc.context)
        return 1

    def add_keyword(self, doc: int, session_id: int, text: str, context: str) -> None:
        """Give the entry ``doc`` its keyword text."""
        with self._store.write() as db:
            self._add_keyword(db, doc, session_id, text, context)

    def _add_keyword(self, db: Connection, doc: int, session_id: int, text: str,
                     context: str) -> None:
        a = self.analyzer
        self.table.put(db, doc, session_id, (a.document(text), a.document(context)))

    # -- what indexing reads -------------------------------------------------------------

    def page_before(self, session_id: int, seq: int) -> int:
        """The page number of the message before ``seq`` (user messages up to it)."""
        with self._store.read() as db:
            row = db.execute(
                "SELECT seq, page FROM memory_docs WHERE session_id = %s AND seq < %s"
                " ORDER BY seq DESC LIMIT 1", (session_id, seq)).fetchone()
            if row is not None and int(row[0]) == seq - 1:
                return int(row[1])
            counted = db.execute(
                "SELECT COUNT(*) FROM messages WHERE session_id = %s AND role = 'user'"
                " AND seq < %s", (session_id, seq)).fetchone()
        return int(counted[0]) if counted else 0

    def recent(self, session_id: int, seq: int, limit: int) -> list[Message]:
        """Up to ``limit`` non-system messages before ``seq``, newest first (role, parts)."""
        with self._store.read() as db:
            rows = db.execute(
                "SELECT role, parts FROM messages WHERE session_id = %s AND seq < %s"
                " AND role <> 'system' ORDER BY seq DESC LIMIT %s",
                (session_id, seq, limit)).fetchall()
        return [Message(role, stored_parts(parts)) for role, parts in rows]

    def keyword_backlog(self) -> list[IndexedMessage]:
        """Entries of non-system messages without keyword text, by session and seq."""
        t = self.table.name
        with self._store.read() as db:
            rows = db.execute(
                "SELECT d.id, d.session_id, d.seq, d.role, m.parts FROM memory_docs d"
                " JOIN messages m ON m.session_id = d.session_id AND m.seq = d.seq"
                f" WHERE d.role <> 'system' AND NOT EXISTS (SELECT 1 FROM {t} k"
                " WHERE k.ref = d.id) ORDER BY d.session_id, d.seq").fetchall()
        return [IndexedMessage(int(doc), int(sid), Message(role, stored_parts(parts),
                                                           seq=int(seq)))
                for doc, sid, seq, role, parts in rows]

    def behind(self, sessions: Collection[int] | None) -> list[tuple[int, int]]:
        """``(session id, last indexed seq)`` of the sessions whose log is ahead."""
        source, args = "SELECT id AS sid FROM sessions", list[Any]()
        if sessions is not None:
            source, args = "SELECT unnest(%s::bigint[]) AS sid", [list(sessions)]
        with self._store.read() as db:
            tops = db.execute(
                "SELECT s.sid, (SELECT MAX(seq) FROM messages WHERE session_id = s.sid),"
                " (SELECT MAX(seq) FROM memory_docs WHERE session_id = s.sid)"
                f" FROM ({source}) s", args).fetchall()
        return [(int(sid), int(done or 0)) for sid, top, done in tops
                if top is not None and int(done or 0) < int(top)]

    def unindexed(self, session_id: int, after: int) -> list[Message]:
        """The session's stored messages with seq > ``after``, in order."""
        name = self.session_name(session_id)
        with self._store.read() as db:
            rows = db.execute(
                "SELECT seq, role, parts, name, metadata, created_at, tokens FROM messages"
                " WHERE session_id = %s AND seq > %s ORDER BY seq", (session_id, after),
            ).fetchall()
        return [message_from_row(name, r) for r in rows]

    def embed_backlog(self, after: int, limit: int) -> list[IndexedMessage]:
        """Up to ``limit`` entries of non-system messages with doc > ``after``, in order."""
        with self._store.read() as db:
            rows = db.execute(
                "SELECT d.id, d.session_id, m.role, m.parts, m.seq FROM memory_docs d JOIN"
                " messages m ON m.session_id = d.session_id AND m.seq = d.seq"
                " WHERE d.id > %s AND d.role <> 'system' ORDER BY d.id LIMIT %s",
                (after, limit)).fetchall()
        return [IndexedMessage(int(r[0]), int(r[1]), Message(r[2], stored_parts(r[3]),
                                                             seq=int(r[4])))
                for r in rows]

    # -- searching -----------------------------------------------------------------------

    def keyword(
        self, plan: MatchQuery, *, k: int, where: SearchFilter, context_weight: float
    ) -> list[Candidate]:
        """The ``k`` best entries for ``plan`` within ``where`` by BM25, best first.

        Terms too short for the trigram index are matched by scanning (``strpos``); a
        match adds the term's IDF (``ln(1 + N/df)``), as in the SQLite store.
        """
        if plan.empty or k <= 0:
            return []
        if where.sessions is not None and not where.sessions:
            return []
        sql, args = _filters(where)
        join = " JOIN memory_docs d ON d.id = k.ref"
        scores: dict[int, float] = {}
        with self._store.snapshot() as db:
            if plan.match is not None:
                depth = k * 2 if plan.short_terms else k
                for score, ref in self.table.rank(
                        db, plan.match, (1.0, context_weight), join=join, where=sql,
                        args=args, limit=depth):
                    scores[ref] = score
            if plan.short_terms:
                # N of a short term's IDF is counted where its matches are: in the filter.
                counted = db.execute("SELECT COUNT(*) FROM memory_docs d WHERE"
                                     f" d.role <> 'system'{sql}", args).fetchone()
                total = max(1, int(counted[0]) if counted else 0)
                for term in plan.short_terms:
                    refs = self.table.containing(db, term, join=join, where=sql, args=args)
                    if refs:
                        idf = math.log(1 + total / len(refs))
                        for ref in refs:
                            scores[ref] = scores.get(ref, 0.0) + idf
            best = sorted(scores.items(), key=lambda t: (-t[1], t[0]))[:k]
            if not best:
                return []
            rows = db.execute("SELECT id, session_id, seq FROM memory_docs WHERE id = ANY(%s)",
                              ([ref for ref, _ in best],)).fetchall()
        found = {int(r[0]): Candidate(int(r[0]), int(r[1]), int(r[2])) for r in rows}
        return [found[ref] for ref, _ in best if ref in found]

    def first_doc(self, session_id: int, seq: int) -> int | None:
        """The doc number of the session's first entry from ``seq`` on (None: none yet)."""
        with self._store.read() as db:
            row = db.execute("SELECT MIN(id) FROM memory_docs WHERE session_id = %s"
                             " AND seq >= %s", (session_id, seq)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def among(self, docs: Collection[int], where: SearchFilter) -> list[Candidate]:
        """The entries ``docs`` that pass ``where``."""
        sql, args = _filters(where)
        with self._store.read() as db:
            rows = db.execute(
                f"SELECT d.id, d.session_id, d.seq FROM memory_docs d WHERE d.id = ANY(%s){sql}",
                ([int(d) for d in docs], *args)).fetchall()
        return _candidates(rows)

    def matching(self, where: SearchFilter) -> list[Candidate]:
        """Every entry of a non-system message that passes ``where``."""
        sql, args = _filters(where)
        with self._store.read() as db:
            rows = db.execute("SELECT d.id, d.session_id, d.seq FROM memory_docs d"
                              f" WHERE d.role <> 'system'{sql}", args).fetchall()
        return _candidates(rows)

    def in_range(self, where: SearchFilter, k: int) -> list[Candidate]:
        """Up to ``k`` entries of non-system messages passing ``where``, oldest first."""
        sql, args = _filters(where)
        with self._store.read() as db:
            rows = db.execute(
                "SELECT d.id, d.session_id, d.seq FROM memory_docs d WHERE d.role <> 'system'"
                f"{sql} ORDER BY d.created, d.id LIMIT %s", (*args, k)).fetchall()
        return _candidates(rows)

    # -- loading -------------------------------------------------------------------------

    def load(self, candidates: Sequence[Candidate]) -> dict[int, tuple[Message, int]]:
        """``{doc: (message, page)}`` of the candidates still stored (named sessions)."""
        out: dict[int, tuple[Message, int]] = {}
        if not candidates:
            return out
        with self._store.read() as db:
            rows = db.execute(
                "SELECT d.id, m.session_id, m.seq, m.role, m.parts, m.name, m.metadata,"
                " m.created_at, m.tokens, d.page FROM memory_docs d JOIN messages m"
                " ON m.session_id = d.session_id AND m.seq = d.seq WHERE d.id = ANY(%s)",
                ([c.doc for c in candidates],)).fetchall()
        by_doc = {int(r[0]): r for r in rows}
        for cand in candidates:
            row = by_doc.get(cand.doc)
            if row is None:
                continue
            name = self.session_name(int(row[1]))
            out[cand.doc] = (message_from_row(name, row[2:9]), int(row[9]))
        return out

    def session_name(self, session_id: int) -> str:
        """The name of a session (its id as text when it is gone); names never change."""
        name = self._names.get(session_id)
        if name is None:
            with self._store.read() as db:
                name = session_names(db, [session_id])[session_id]
            self._names[session_id] = name
        return name

    def sessions_of(self, tenant: str, user: str | None = None) -> list[int]:
        """Ids of the sessions of ``tenant`` (of ``user`` when given), oldest first."""
        with self._store.read() as db:
            if user is not None:
                rows = db.execute("SELECT id FROM sessions WHERE tenant = %s AND user_id = %s"
                                  " ORDER BY id", (tenant, user)).fetchall()
            else:
                rows = db.execute("SELECT id FROM sessions WHERE tenant = %s ORDER BY id",
                                  (tenant,)).fetchall()
        return [int(r[0]) for r in rows]

    def count(self) -> int:
        """How many entries of non-system messages there are."""
        with self._store.read() as db:
            row = db.execute("SELECT COUNT(*) FROM memory_docs WHERE role <> 'system'"
                             ).fetchone()
        return int(row[0]) if row else 0

    def version(self) -> int:
        """The newest doc number (0 when empty)."""
        with self._store.read() as db:
            row = db.execute("SELECT COALESCE(MAX(id), 0) FROM memory_docs").fetchone()
        return int(row[0]) if row else 0
