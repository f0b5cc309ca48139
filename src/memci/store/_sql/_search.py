"""The message search index's row statements (:class:`~memci.store.MessageSearch`), both backends.

``memory_docs`` (migration series ``memory``) holds one row per indexed message, its
*doc* (session, seq, role, page, time); ``(session_id, seq)`` is unique, so a message
indexed by two writers at once has one entry. What indexing reads (the log around a
message, the sessions behind the index), the filters of a search (:func:`search_filter`)
and loading what a search found are the same statements on both backends.

Keyword text and ranking are each backend's own (:meth:`SqlMessageSearch._index`,
:meth:`SqlMessageSearch.keyword`, :meth:`SqlMessageSearch.keyword_backlog`): FTS5 and its
BM25 in SQLite, a postings table ranked by FTS5's BM25 in PostgreSQL.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, ClassVar

from memci.messages import Message
from memci.store._rows import message_from_row, stored_instant, stored_parts
from memci.store._search import (
    Before,
    Candidate,
    IndexedMessage,
    MemoryVersion,
    SearchDoc,
    SearchFilter,
)
from memci.store._sql._conn import Sql, Transactions
from memci.store._sql._dialect import Dialect

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["LOAD_COLUMNS", "SqlMessageSearch", "as_candidates", "search_filter", "session_names"]

#: Entries per multi-row ``INSERT`` (5 parameters each: far below SQLite's 32,766).
_ROWS_PER_INSERT = 500
_DOC_COLUMNS = ("session_id", "seq", "role", "page", "created")

#: What :meth:`SqlMessageSearch.load` reads of a found entry (``memory_docs d`` joined with
#: its message ``m``): doc, session id, the message row, page.
LOAD_COLUMNS = ("d.id, d.session_id, m.seq, m.role, m.parts, m.name, m.metadata,"
                " m.created_at, m.tokens, d.page FROM memory_docs d JOIN messages m"
                " ON m.session_id = d.session_id AND m.seq = d.seq")


# The page of the entry before a message and the messages before it, newest first (one
# row with no message when none is before: the page still comes back).
_BEFORE = (
    "SELECT (SELECT page FROM memory_docs WHERE session_id = ? AND seq = ?),"
    " (SELECT epoch FROM sessions WHERE id = ?), m.role,"
    " m.parts, m.created_at FROM (SELECT 1 AS one) o LEFT JOIN (SELECT seq, role, parts,"
    " created_at FROM messages WHERE session_id = ? AND seq < ? AND role <> 'system'"
    " ORDER BY seq DESC LIMIT ?) m ON o.one = 1 ORDER BY m.seq DESC")


def session_names(sql: Sql, ids: Collection[int]) -> dict[int, str]:
    """Names of the sessions ``ids`` (a session gone: its id as text)."""
    wanted = sorted(set(ids))
    d = sql.dialect
    found = {int(r[0]): str(r[1]) for r in sql.all(
        f"SELECT id, name FROM sessions WHERE {d.in_array('id')}", (d.array(wanted),))}
    return {i: found.get(i, str(i)) for i in wanted}


def search_filter(d: Dialect, where: SearchFilter) -> tuple[str, list[Any]]:
    """Conditions on ``memory_docs d`` (each starting with `` AND``) for ``where``, and args.

    Sessions are one array parameter (any number of them); roles, few, are listed.
    """
    sql, args = "", list[Any]()
    if where.sessions is not None:
        sql += f" AND {d.in_array('d.session_id')}"
        args.append(d.array(int(s) for s in where.sessions))
    if where.start is not None:
        sql += " AND d.created >= ?"
        args.append(where.start)
    if where.end is not None:
        sql += " AND d.created < ?"
        args.append(where.end)
    if where.roles is not None:
        roles, more = d.in_values("d.role", where.roles)
        sql += f" AND {roles}"
        args.extend(more)
    if where.below is not None:
        sql += " AND d.id < ?"
        args.append(where.below)
    return sql, args


def as_candidates(rows: Sequence[Sequence[Any]]) -> list[Candidate]:
    """Rows of ``(doc, session id, seq)`` as candidates."""
    return [Candidate(int(r[0]), int(r[1]), int(r[2])) for r in rows]


class SqlMessageSearch(ABC):
    """The message index of one analyzer in one store: what both backends share.

    ``EPOCH``: the backend's erasure epoch as a scalar subquery (its eraser's);
    ``IN_FLIGHT``: one naming the write transactions in progress where writers may commit
    out of the order of their numbers (see :meth:`MessageSearch.memory_version`).
    """

    EPOCH: ClassVar[str]
    IN_FLIGHT: ClassVar[str] = "0"

    def __init__(self, db: Transactions, analyzer: Analyzer) -> None:
        db.ready("memory")
        self._db = db
        self.analyzer = analyzer
        self._names: dict[int, str] = {}

    # -- what each backend does its own way ----------------------------------------------

    @abstractmethod
    def _index(self, sql: Sql, doc: int, session_id: int, text: str, context: str) -> None:
        """Give the entry ``doc`` its keyword text (inside the write of ``sql``)."""

    @abstractmethod
    def keyword_backlog(self) -> list[IndexedMessage]:
        """Entries of non-system messages without keyword text, by session and seq."""

    @abstractmethod
    def keyword(
        self, plan: MatchQuery, *, k: int, where: SearchFilter, context_weight: float
    ) -> list[Candidate]:
        """The ``k`` best entries for ``plan`` within ``where`` by BM25, best first."""

    @abstractmethod
    def _index_many(self, sql: Sql, docs: Sequence[tuple[int, SearchDoc]]) -> None:
        """Give each entry ``(doc, its message)`` its keyword text (inside ``sql``'s write).

        In a few statements whatever the number of entries (a batch's rows at once).
        """

    # -- writing -------------------------------------------------------------------------

    def add(self, doc: SearchDoc) -> int:
        """Add an entry (and its keyword text); 1, or 0 when the message has one already."""
        return self.add_many([doc])

    def add_many(self, docs: Sequence[SearchDoc]) -> int:
        """Add entries (and their keyword text) in one write; how many were new.

        The entries go in as multi-row ``INSERT``s (one statement per
        :data:`_ROWS_PER_INSERT`); a message that has an entry already keeps it.
        """
        made: list[tuple[int, SearchDoc]] = []
        with self._db.write() as sql:
            for start in range(0, len(docs), _ROWS_PER_INSERT):
                chunk = docs[start:start + _ROWS_PER_INSERT]
                batch, args = sql.dialect.rows("memory_docs", _DOC_COLUMNS, [
                    (d.session_id, d.seq, d.role, d.page, d.created) for d in chunk])
                rows = sql.all(
                    f"INSERT INTO memory_docs ({', '.join(_DOC_COLUMNS)}) {batch}"
                    " ON CONFLICT (session_id, seq) DO NOTHING RETURNING id, session_id, seq",
                    args)
                ids = {(int(r[1]), int(r[2])): int(r[0]) for r in rows}
                made += [(ids[(d.session_id, d.seq)], d) for d in chunk
                         if (d.session_id, d.seq) in ids]
            self._index_many(sql, [(m, d) for m, d in made if d.role != "system"])
        return len(made)

    def add_keyword(self, doc: int, session_id: int, text: str, context: str) -> None:
        """Give the entry ``doc`` its keyword text."""
        with self._db.write() as sql:
            self._index(sql, doc, session_id, text, context)

    # -- what indexing reads -------------------------------------------------------------

    def recent(self, session_id: int, seq: int, limit: int) -> list[Message]:
        """Up to ``limit`` non-system messages before ``seq``, newest first (role, parts, time)."""
        with self._db.read() as sql:
            rows = sql.all("SELECT role, parts, created_at FROM messages WHERE session_id = ?"
                           " AND seq < ? AND role <> 'system' ORDER BY seq DESC LIMIT ?",
                           (session_id, seq, limit))
        return [Message(role, stored_parts(parts), created_at=stored_instant(at))
                for role, parts, at in rows]

    def before(self, session_id: int, seq: int, limit: int) -> Before:
        """The page of the message before ``seq``, the log's epoch and :meth:`recent`, at once.

        What indexing a batch reads of the log before it: on PostgreSQL each read is a
        round trip of the batch's write. The page is read from the entry of ``seq - 1``
        (every row carries it; a row with no message when none is before, or ``limit``
        0); counted over the log (user messages before ``seq``) when that message has
        no entry.
        """
        with self._db.read() as sql:
            rows = sql.all(_BEFORE, (session_id, seq - 1, session_id, session_id, seq, limit))
            page = rows[0][0] if rows else None
            if page is None:
                page = sql.value("SELECT COUNT(*) FROM messages WHERE session_id = ?"
                                 " AND role = 'user' AND seq < ?", (session_id, seq)) or 0
        return Before(int(page), int(rows[0][1] or 0) if rows else 0,
                      [Message(role, stored_parts(parts), created_at=stored_instant(at))
                       for _, _, role, parts, at in rows if role is not None])

    def behind(self, sessions: Collection[int] | None) -> list[tuple[int, int]]:
        """``(session id, last indexed seq)`` of the sessions whose log is ahead.

        Cheap when nothing is missing: one statement, two indexed lookups per session.
        """
        d = self._db.dialect
        source, args = "SELECT id AS sid FROM sessions", list[Any]()
        if sessions is not None:
            source, args = d.array_rows("sid"), [d.array(int(s) for s in sessions)]
        return _ahead(self._tops(f"({source}) s", args))

    def sessions_behind(
        self, tenant: str, user: str | None = None
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """:meth:`sessions_of` and :meth:`behind` of those sessions, in one statement."""
        tops = self._tops(*_of_user(tenant, user))
        return [int(sid) for sid, _, _ in tops], _ahead(tops)

    def version_and_sessions(
        self, tenant: str, user: str | None = None
    ) -> tuple[MemoryVersion, list[int], list[tuple[int, int]]]:
        """:meth:`memory_version` and :meth:`sessions_behind`, in one statement.

        The version's columns go with every session's row (each computed once: they
        depend on no row); a user without sessions reads the version alone.
        """
        rows = self._tops(*_of_user(tenant, user), more=f", {self._version_columns()}")
        if not rows:
            return self.memory_version(), [], []
        tops = [tuple(r[:3]) for r in rows]
        version = (int(rows[0][3]), int(rows[0][4]), int(rows[0][5]), int(rows[0][6]))
        return version, [int(sid) for sid, _, _ in tops], _ahead(tops)

    def _tops(self, source: str, args: Sequence[Any], *,
              more: str = "") -> list[tuple[Any, ...]]:
        """``(session id, newest seq, newest indexed seq)`` of each session of ``source``.

        ``more``: columns after those (``", …"``).
        """
        with self._db.read() as sql:
            return [tuple(r) for r in sql.all(
                "SELECT s.sid, (SELECT MAX(seq) FROM messages WHERE session_id = s.sid),"
                f" (SELECT MAX(seq) FROM memory_docs WHERE session_id = s.sid){more}"
                f" FROM {source}", args)]

    def unindexed(self, session_id: int, after: int) -> list[Message]:
        """The session's stored messages with seq > ``after``, in order."""
        name = self.session_name(session_id)
        with self._db.read() as sql:
            rows = sql.all("SELECT seq, role, parts, name, metadata, created_at, tokens"
                           " FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
                           (session_id, after))
        return [message_from_row(name, r) for r in rows]

    def embed_backlog(self, after: int, limit: int) -> list[IndexedMessage]:
        """Up to ``limit`` entries of non-system messages with doc > ``after``, in order."""
        with self._db.read() as sql:
            rows = sql.all(
                "SELECT d.id, d.session_id, m.role, m.parts, m.seq FROM memory_docs d JOIN"
                " messages m ON m.session_id = d.session_id AND m.seq = d.seq"
                " WHERE d.id > ? AND d.role <> 'system' ORDER BY d.id LIMIT ?", (after, limit))
        return [IndexedMessage(int(r[0]), int(r[1]), Message(r[2], stored_parts(r[3]),
                                                             seq=int(r[4])))
                for r in rows]

    # -- searching -----------------------------------------------------------------------

    def first_doc(self, session_id: int, seq: int) -> int | None:
        """The doc number of the session's first entry from ``seq`` on (None: none yet)."""
        with self._db.read() as sql:
            found = sql.value("SELECT MIN(id) FROM memory_docs WHERE session_id = ?"
                              " AND seq >= ?", (session_id, seq))
        return None if found is None else int(found)

    def docs_from(self, session_id: int, seq: int, limit: int) -> list[tuple[int, int]]:
        """``(seq, doc number)`` of the session's first ``limit`` entries from ``seq`` on."""
        with self._db.read() as sql:
            rows = sql.all("SELECT seq, id FROM memory_docs WHERE session_id = ? AND seq >= ?"
                           " ORDER BY seq LIMIT ?", (session_id, seq, limit))
        return [(int(s), int(doc)) for s, doc in rows]

    def among(self, docs: Collection[int], where: SearchFilter) -> list[Candidate]:
        """The entries ``docs`` that pass ``where``."""
        d = self._db.dialect
        sql_where, args = search_filter(d, where)
        with self._db.read() as sql:
            rows = sql.all("SELECT d.id, d.session_id, d.seq FROM memory_docs d"
                           f" WHERE {d.in_array('d.id')}{sql_where}",
                           (d.array(int(doc) for doc in docs), *args))
        return as_candidates(rows)

    def matching(self, where: SearchFilter) -> list[Candidate]:
        """Every entry of a non-system message that passes ``where``."""
        sql_where, args = search_filter(self._db.dialect, where)
        with self._db.read() as sql:
            rows = sql.all("SELECT d.id, d.session_id, d.seq FROM memory_docs d"
                           f" WHERE d.role <> 'system'{sql_where}", args)
        return as_candidates(rows)

    def in_range(self, where: SearchFilter, k: int) -> list[Candidate]:
        """Up to ``k`` entries of non-system messages passing ``where``, oldest first."""
        sql_where, args = search_filter(self._db.dialect, where)
        with self._db.read() as sql:
            rows = sql.all("SELECT d.id, d.session_id, d.seq FROM memory_docs d"
                           f" WHERE d.role <> 'system'{sql_where} ORDER BY d.created, d.id"
                           " LIMIT ?", (*args, k))
        return as_candidates(rows)

    # -- loading -------------------------------------------------------------------------

    def load(self, candidates: Sequence[Candidate]) -> dict[int, tuple[Message, int]]:
        """``{doc: (message, page)}`` of the candidates still stored (named sessions)."""
        if not candidates:
            return {}
        d = self._db.dialect
        with self._db.read() as sql:
            rows = sql.all(f"SELECT {LOAD_COLUMNS} WHERE {d.in_array('d.id')}",
                           (d.array(c.doc for c in candidates),))
        by_doc = {int(r[0]): r for r in rows}
        out: dict[int, tuple[Message, int]] = {}
        for cand in candidates:
            row = by_doc.get(cand.doc)
            if row is not None:
                name = self.session_name(int(row[1]))
                out[cand.doc] = (message_from_row(name, row[2:9]), int(row[9]))
        return out

    def session_name(self, session_id: int) -> str:
        """The name of a session (its id as text when it is gone); names never change."""
        name = self._names.get(session_id)
        if name is None:
            with self._db.read() as sql:
                name = session_names(sql, [session_id])[session_id]
            self._names[session_id] = name
        return name

    def sessions_of(self, tenant: str, user: str | None = None) -> list[int]:
        """Ids of the sessions of ``tenant`` (of ``user`` when given), oldest first."""
        text, args = "SELECT id FROM sessions WHERE tenant = ?", [tenant]
        if user is not None:
            text, args = text + " AND user_id = ?", [tenant, user]
        with self._db.read() as sql:
            return [int(r[0]) for r in sql.all(text + " ORDER BY id", args)]

    def count(self) -> int:
        """How many entries of non-system messages there are."""
        with self._db.read() as sql:
            return int(sql.value("SELECT COUNT(*) FROM memory_docs WHERE role <> 'system'")
                       or 0)

    def version(self) -> int:
        """The newest doc number (0 when empty)."""
        with self._db.read() as sql:
            return int(sql.value("SELECT COALESCE(MAX(id), 0) FROM memory_docs") or 0)

    def reading(self) -> AbstractContextManager[None]:
        """A block whose searches see the index as of one read (a backend may keep none)."""
        return nullcontext()

    def _version_columns(self) -> str:
        """:meth:`memory_version`'s columns: newest doc, item revision, erasure, in flight."""
        return ("(SELECT COALESCE(MAX(id), 0) FROM memory_docs),"
                f" (SELECT COALESCE(MAX(rev), 0) FROM memory_items), {self.EPOCH},"
                f" {self.IN_FLIGHT}")

    def memory_version(self) -> MemoryVersion:
        """The newest doc number, item revision, erasure and writers in flight (one read)."""
        with self._db.read() as sql:
            row = sql.one(f"SELECT {self._version_columns()}")
        assert row is not None
        return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def _of_user(tenant: str, user: str | None) -> tuple[str, list[Any]]:
    """The sessions of ``tenant`` (of ``user`` when given) as a source ``s`` of ``sid``."""
    text, args = "sessions WHERE tenant = ?", [tenant]
    if user is not None:
        text, args = text + " AND user_id = ?", [tenant, user]
    return f"(SELECT id AS sid FROM {text}) s ORDER BY s.sid", args


def _ahead(tops: Sequence[Sequence[Any]]) -> list[tuple[int, int]]:
    """``(session id, last indexed seq)`` of the sessions of ``tops`` whose log is ahead.

    ``tops``: rows of :meth:`SqlMessageSearch._tops`.
    """
    return [(int(sid), int(done or 0)) for sid, top, done in tops
            if top is not None and int(done or 0) < int(top)]
