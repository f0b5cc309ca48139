"""The message search index in SQLite (:class:`~memci.store.MessageSearch`): FTS5 and BM25.

The entries' row statements are :class:`~memci.store._sql.SqlMessageSearch`'s (one row
per indexed message in ``memory_docs``). Here: the derived FTS5 table
``memory_fts_<analyzer>`` (rowid = doc id) holds an entry's keyword text:
``body`` (the analyzer's document of its text), ``context`` (of the tail of the messages
before it) and ``scope`` (``s<session id>x``, so a search of a few sessions filters inside
FTS5). User text reaches ``MATCH`` only as the analyzer's quoted terms.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from memci._dataclasses import replace
from memci.messages import Message
from memci.store._rows import message_from_row, stored_instant, stored_parts
from memci.store._search import (
    COMMON_MAX,
    POSTINGS_MAX,
    RARE,
    RECENT,
    TERMS_MAX,
    WINDOW_MAX,
    Candidate,
    IndexedMessage,
    SearchDoc,
    SearchFilter,
    rarest,
)
from memci.store._sql import LOAD_COLUMNS, Sql, SqlMessageSearch, search_filter
from memci.store.sqlite._common import CommonTerms, SearchScope
from memci.store.sqlite._db import EPOCH, Database
from memci.store.sqlite._dialect import SQLITE
from memci.store.sqlite._fts import ensure_fts, fts_name

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["SQLiteMessageSearch"]

_SCOPE_TERMS_MAX = 20  # up to this many sessions are always filtered inside FTS5
# The split of a query's terms, shared with PostgreSQL (see memci.store._search).
_LOADED_MAX = 4_096  # loaded messages kept between searches at most
_KEYWORD_ROWS = 500  # keyword rows one INSERT writes at most (4 parameters each)
_KEYWORD_COLUMNS = ("rowid", "body", "context", "scope")


def _bound(where: SearchFilter) -> tuple[str, tuple[int, ...]]:
    """``where.below`` as a rowid bound inside a full-text query (FTS5 skips the rest)."""
    return ("", ()) if where.below is None else (" AND rowid < ?", (where.below,))


def _within(window: tuple[int, int, int] | None) -> tuple[str, tuple[int, ...]]:
    """A :meth:`~SQLiteMessageSearch._window` as a rowid range of a full-text query."""
    return ("", ()) if window is None else (" AND rowid BETWEEN ? AND ?", window[1:])


def _filters(where: SearchFilter) -> tuple[str, list[object]]:
    """:func:`~memci.store._sql.search_filter` in SQLite's spelling."""
    return search_filter(SQLITE, where)


class SQLiteMessageSearch(SqlMessageSearch):
    """The message index of one analyzer in one SQLite store."""

    EPOCH = EPOCH

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        super().__init__(store.sql, analyzer)
        self._store = store
        self.table = fts_name("memory_fts", analyzer)
        with store.write() as db:
            ensure_fts(db, "memory_fts", analyzer)
        # sessions -> (the share of the index they hold, index size then)
        self._shares: dict[str, tuple[float, int]] = {}
        self._common = CommonTerms(self.table, rare=RARE, recent=RECENT)
        # (changes then, doc -> (session id, seq, message, page))
        self._loaded: tuple[int, dict[int, tuple[int, int, Message, int]]] = (-1, {})
        # this thread's reading() block: the stamp its first search read (None: not yet)
        self._reading = threading.local()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Within the block, on this thread, the index's size and change count are read once.

        The searches and loads of the block see the index as of that read (one search:
        its ranked lists and the load of its hits; a build: its gathers), read again once
        this connection wrote (an index caught up meanwhile). Not inside a write
        transaction: what it reads may be rolled back.
        """
        if getattr(self._reading, "on", False):
            yield
            return
        self._reading.on, self._reading.stamp, self._reading.kept = True, None, {}
        try:
            yield
        finally:
            self._reading.on, self._reading.stamp, self._reading.kept = False, None, {}

    # -- keyword text ---------------------------------------------------------------------

    def _index(self, sql: Sql, doc: int, session_id: int, text: str, context: str) -> None:
        self._index_rows(sql, [(doc, session_id, text, context)])

    def _index_many(self, sql: Sql, docs: Sequence[tuple[int, SearchDoc]]) -> None:
        """Give each entry ``(doc, its message)`` its keyword text: one statement a batch."""
        self._index_rows(sql, [(made, d.session_id, d.text, d.context) for made, d in docs])

    def _index_rows(self, sql: Sql, rows: Sequence[tuple[int, int, str, str]]) -> None:
        """Keyword rows ``(doc, session id, text, context)``, :data:`_KEYWORD_ROWS` a statement.

        ``OR REPLACE``: a row left under an id (an entry deleted outside memci, its id
        given again) holds another message's text, and FTS5 deletes it first.
        """
        a = self.analyzer
        for at in range(0, len(rows), _KEYWORD_ROWS):
            values, args = sql.dialect.rows(self.table, _KEYWORD_COLUMNS, [
                (doc, a.document(text), a.document(context), f"s{session_id}x")
                for doc, session_id, text, context in rows[at:at + _KEYWORD_ROWS]])
            sql.run(f"INSERT OR REPLACE INTO {self.table} ({', '.join(_KEYWORD_COLUMNS)}) "
                    + values, args)

    def keyword_backlog(self) -> list[IndexedMessage]:
        """Entries of non-system messages without keyword text, by session and seq."""
        with self._store.read() as db:
            after = int(db.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {self.table}")
                        .fetchone()[0])
            top = db.execute("SELECT MAX(id) FROM memory_docs WHERE role != 'system'"
                             ).fetchone()[0]
            if top is None or int(top) <= after:
                return []
            rows = db.execute(
                "SELECT d.id, d.session_id, d.seq, d.role, m.parts, m.created_at"
                " FROM memory_docs d"
                " JOIN messages m ON m.session_id = d.session_id AND m.seq = d.seq"
                " WHERE d.id > ? AND d.role != 'system' ORDER BY d.session_id, d.seq",
                (after,),
            ).fetchall()
        return [IndexedMessage(int(doc), int(sid), Message(
                    role, stored_parts(parts), seq=int(seq), created_at=stored_instant(at)))
                for doc, sid, seq, role, parts, at in rows]

    # -- searching -----------------------------------------------------------------------

    def keyword(
        self, plan: MatchQuery, *, k: int, where: SearchFilter, context_weight: float
    ) -> list[Candidate]:
        """The ``k`` best entries for ``plan`` within ``where`` by BM25, best first.

        Terms too short for the trigram index are matched by scanning (``instr``); a match
        adds the term's IDF (``ln(1 + N/df)``) to the score, so a message matching more and
        rarer short terms ranks higher.
        """
        if plan.empty or k <= 0:
            return []
        ranked: dict[int, tuple[float, Candidate]] = {}
        with self._store.read() as db:
            if plan.match is not None:
                depth = k * 2 if plan.short_terms else k
                for score, cand in self._match(db, plan.match, depth, where, context_weight):
                    ranked[cand.doc] = (score, cand)
            if plan.short_terms:
                self._short(db, plan, where, ranked)
        best = sorted(ranked.values(), key=lambda t: (-t[0], t[1].doc))
        return [cand for _, cand in best[:k]]

    def _match(
        self, db: sqlite3.Connection, match: str, k: int, where: SearchFilter,
        context_weight: float,
    ) -> list[tuple[float, Candidate]]:
        """BM25 over the terms of ``match``, scoring a bounded number of postings.

        FTS5 scores every row that matches, so an OR of common words scores most of the
        index. The terms are split by how many entries *of the search's scope* hold them
        (counted once, capped, kept; see :mod:`memci.store.sqlite._common`): rare ones are
        searched in the whole scope, at most :data:`POSTINGS_MAX` postings of them; common
        ones (in more than :data:`RARE` entries of the scope, so they add little to
        BM25) only among the scope's newest :data:`RECENT` entries, ranked after every
        match of a rare term. So a search costs about the same at 1k or 100k entries,
        whatever the words, and which entries it looks at depends on its scope's entries
        only (FTS5's BM25 still weighs rare terms with statistics of the whole index).
        """
        sessions = where.sessions
        if sessions is not None and not sessions:
            return []
        size, changes = self._stamp(db)  # read once: every count below is kept against them
        window = self._window(db, where)
        if window is not None and window[0] == 0:
            return []  # no entry of these sessions in the window
        if window is not None and where.below is not None and where.below > window[2]:
            # Every entry of the window is below the bound: it bounds nothing, so a
            # build's gathers (the window starting later after archiving) rank alike.
            where = replace(where, below=None)
        terms = ""
        # In a short window the ids bound the match: a scope term would walk the session.
        if sessions is not None and window is None and self._scope_in_fts(db, sessions):
            terms = " OR ".join(f'"s{int(s)}x"' for s in sessions)
            where = replace(where, sessions=None)
        sql, args = _filters(replace(where, below=None))
        scope = SearchScope(terms, sql, tuple(args))
        parts = match.split(" OR ")
        rare, common = self._split(db, parts, scope, size, changes,
                                   None if window is None else window[0])
        found: list[tuple[float, Candidate]] = []
        if rare:
            near = None
            share = self._share(db, sessions, size) if terms and sessions is not None else 0.0
            if share >= 0.5:
                assert sessions is not None
                near = self._ranked_within(db, rare, sessions, where, context_weight, k,
                                           depth=math.ceil(k / share * 1.25))
            found = near if near is not None else self._ranked(
                db, rare, terms, where, context_weight, k, window)
        if len(rare) < len(parts) and len(found) < k:
            # The rest only among the scope's newest entries: bounded, and ranked below.
            seen = {c.doc for _, c in found}
            top = min((score for score, _ in found), default=0.0)
            newest = size if where.below is None else min(size, where.below - 1)
            if window is not None:  # no entry of the scope is newer than the window's last
                newest = min(newest, window[2])
            extra = self._common.newest(db, common[:COMMON_MAX], scope, k + len(seen), newest,
                                        changes)
            found += [(min(score, top) - 1e-9 * (i + 1), cand)
                      for i, (score, cand) in enumerate(extra) if cand.doc not in seen]
        return found[:k]

    def _split(
        self, db: sqlite3.Connection, parts: Sequence[str], scope: SearchScope, size: int,
        changes: int, entries: int | None = None,
    ) -> tuple[list[str], list[str]]:
        """``(rare, common)``: the terms searched by BM25, and the rest (the rarest first).

        A term is rare when at most :data:`RARE` entries of the scope hold it; the rarest
        are taken while they are at most :data:`TERMS_MAX` and their postings at most
        :data:`POSTINGS_MAX` (all of them, in their text's order, when they fit). Counting
        a term costs a full-text query, so what is kept is used when it decides: a term
        counted a few entries ago is still rare if every entry added since could hold it
        and it would be (see :meth:`CommonTerms.bounds`), and a term rare in the whole
        index is rare in the scope; only an undecided term, or a choice the limits make,
        is counted in the scope. ``entries``: how many entries the scope holds, when known
        (a short time window): no term is in more. The split is the one exact counts give.
        """
        terms = self._common
        known = {part: terms.bounds(part, scope, size, changes) for part in parts}
        if entries is not None:
            known = {part: (min(low, entries), min(high, entries))
                     for part, (low, high) in known.items()}
        known.update(terms.narrow(db, [part for part, (low, high) in known.items()
                                       if low <= RARE < high], scope, size, changes))
        eligible = sorted(part for part, (low, _) in known.items() if low <= RARE)
        rare, left = eligible, list[str]()
        if len(eligible) > TERMS_MAX or sum(known[p][1] for p in eligible) > POSTINGS_MAX:
            rare, left = rarest(sorted(
                (n, part) for part, n in terms.count(db, eligible, scope, size, changes).items()))
        # Common terms count alike (counts stop at RARE + 1): their text orders them.
        return rare, left + sorted(part for part in parts if part not in eligible)

    def _window(self, db: sqlite3.Connection, where: SearchFilter
                ) -> tuple[int, int, int] | None:
        """How many entries ``where`` keeps, the first and the last, for a short time window.

        None when there is no window of given sessions or it holds more than
        :data:`WINDOW_MAX` entries; ``(0, 0, 0)`` when it holds none. Without ``below``
        (the split counts the scope without it; the full-text query keeps its own bound).
        Counted on the index of sessions and times, so the count costs at most what it
        saves: every match of the scope (a session's whole history) walked to keep a day.
        Inside :meth:`reading`, counted once per window.
        """
        if where.sessions is None or (where.start is None and where.end is None):
            return None
        sql, args = _filters(replace(where, below=None))
        # Inside reading(), as of its stamp: a build's gathers ask for the same window.
        kept = self._kept(db)
        key = ("window", sql, tuple(args))
        if kept is not None and key in kept:
            found: tuple[int, int, int] | None = kept[key]
            return found
        n, first, last = db.execute(
            "SELECT COUNT(*), MIN(id), MAX(id) FROM (SELECT d.id FROM memory_docs d"
            f" WHERE 1{sql} LIMIT ?)", (*args, WINDOW_MAX + 1)).fetchone()
        found = None if n > WINDOW_MAX else (0, 0, 0) if n == 0 else (
            int(n), int(first), int(last))
        if kept is not None:
            kept[key] = found
        return found

    def _kept(self, db: sqlite3.Connection) -> dict[tuple[Any, ...], Any] | None:
        """What this thread's reading() block read as of its stamp, by statement.

        Time windows and their rankings; None outside the block, or once this connection
        wrote.
        """
        kept: dict[tuple[Any, ...], Any] | None = (
            self._reading.kept if self._pinned(db) is not None else None)
        return kept

    def _ranked(
        self, db: sqlite3.Connection, parts: Sequence[str], scope: str, where: SearchFilter,
        context_weight: float, k: int, window: tuple[int, int, int] | None = None,
    ) -> list[tuple[float, Candidate]]:
        """FTS5's BM25 over ``parts`` (rare terms: few postings to score) in ``window``."""
        expr = f"{{body context}} : ({' OR '.join(parts)})"
        if scope:
            expr = f"({expr}) AND (scope : ({scope}))"
        sql, args = _filters(replace(where, below=None))
        bound, below = _bound(where)
        span, within = _within(window)
        t = self.table
        if sql:
            # The match first, then the filters: a plain join may walk the filtered rows
            # and run the full-text query once per row.
            text = (f"WITH r AS MATERIALIZED (SELECT rowid AS id, bm25({t}, 1.0, ?, 0.0) AS s"
                    f" FROM {t} WHERE {t} MATCH ?{bound}{span}) SELECT d.id, d.session_id,"
                    f" d.seq, r.s FROM r JOIN memory_docs d ON d.id = r.id WHERE 1{sql}"
                    " ORDER BY r.s, d.id LIMIT ?")
            params = (context_weight, expr, *below, *within, *args, k)
            # Inside reading(), a time window's ranking is read once for a build's gathers.
            kept = self._kept(db) if window is not None else None
            rows = None if kept is None else kept.get(("ranked", text, params))
            if rows is None:
                rows = db.execute(text, params).fetchall()
                if kept is not None:
                    kept["ranked", text, params] = rows
        else:
            # Rank inside FTS5 first and join only the k best: the join no longer runs
            # for every matching row, which is what made a search grow with the history.
            rows = db.execute(
                f"SELECT d.id, d.session_id, d.seq, r.s FROM (SELECT rowid AS id,"
                f" bm25({t}, 1.0, ?, 0.0) AS s FROM {t} WHERE {t} MATCH ?{bound}"
                " ORDER BY s, rowid LIMIT ?) r JOIN memory_docs d ON d.id = r.id"
                " ORDER BY r.s, d.id", (context_weight, expr, *below, k),
            ).fetchall()
        return [(-float(r[3]), Candidate(int(r[0]), int(r[1]), int(r[2]))) for r in rows]

    def _ranked_within(
        self, db: sqlite3.Connection, parts: Sequence[str], sessions: Collection[int],
        where: SearchFilter, context_weight: float, k: int, *, depth: int,
    ) -> list[tuple[float, Candidate]] | None:
        """:meth:`_ranked` for sessions that hold most of the index, without scope terms.

        A scope term's posting list is as long as its session: merging it costs more than
        ranking the rare terms' postings. So the best matches in the whole index are
        ranked (BM25 counts over the whole index either way), and those of ``sessions``
        kept: the same ``k`` best, or None when too few of them were among the ``depth``
        ranked. One statement: the ranked entries, each with its session and seq when it
        is one of ``sessions``'.
        """
        if _filters(replace(where, below=None))[0]:
            return None
        t = self.table
        expr = f"{{body context}} : ({' OR '.join(parts)})"
        bound, below = _bound(where)
        ranked = db.execute(
            f"SELECT r.id, r.s, d.session_id, d.seq FROM (SELECT rowid AS id,"
            f" bm25({t}, 1.0, ?, 0.0) AS s FROM {t} WHERE {t} MATCH ?{bound}"
            " ORDER BY s, rowid LIMIT ?) r LEFT JOIN memory_docs d ON d.id = r.id"
            " AND d.session_id IN (SELECT value FROM json_each(?)) ORDER BY r.s, r.id",
            (context_weight, expr, *below, depth, json.dumps(list(sessions)))).fetchall()
        found = [(-float(s), Candidate(int(doc), int(sid), int(seq)))
                 for doc, s, sid, seq in ranked if sid is not None]
        if len(found) < k and len(ranked) == depth:
            return None  # more matches of these sessions may rank below the ones read
        return found[:k]

    def _share(self, db: sqlite3.Connection, sessions: Collection[int], size: int) -> float:
        """The share of the index ``sessions`` hold (counted again as the index grows)."""
        key = ",".join(str(s) for s in sorted(sessions))
        cached = self._shares.get(key)
        if cached is None or size > cached[1] * 1.1 + 16:
            inside = int(db.execute(
                "SELECT COUNT(*) FROM memory_docs WHERE session_id IN"
                " (SELECT value FROM json_each(?))", (json.dumps(list(sessions)),)
            ).fetchone()[0])
            if len(self._shares) >= 1_024:
                self._shares.clear()
            cached = self._shares[key] = (min(1.0, inside / max(size, 1)), size)
        return cached[0]

    def _stamp(self, db: sqlite3.Connection) -> tuple[int, int]:
        """The index's newest entry, and how many entries were ever deleted or changed.

        (The second is counted by triggers.) What a search keeps between searches stays
        right while the changes stay: entries are then only added, each with a higher id.
        """
        pinned = self._pinned(db)
        if pinned is not None:
            return pinned
        size, changes = db.execute(
            f"SELECT (SELECT COALESCE(MAX(rowid), 0) FROM {self.table}),"
            " (SELECT n FROM memory_docs_changes)").fetchone()
        stamp = int(size), int(changes)
        if getattr(self._reading, "on", False) and not db.in_transaction:
            self._reading.stamp, self._reading.kept = (stamp, db.total_changes), {}
        return stamp

    def _pinned(self, db: sqlite3.Connection) -> tuple[int, int] | None:
        """The stamp this thread's reading() block read already (None: none, or in a write)."""
        if db.in_transaction or not getattr(self._reading, "on", False):
            return None
        pinned: tuple[tuple[int, int], int] | None = self._reading.stamp
        if pinned is None or pinned[1] != db.total_changes:  # this connection wrote since
            return None
        return pinned[0]

    def _scope_in_fts(self, db: sqlite3.Connection, sessions: Collection[int]) -> bool:
        """Whether to filter by ``sessions`` inside FTS5 (scope terms) rather than by a join.

        FTS5 merges one posting list per session, so scope terms cost more with every
        session; the join ranks every match in the store, then drops the ones outside. Terms
        win for a few sessions, or for sessions that hold a small part of the store (one
        user of many); the join wins when they hold most of it (one user's own store).
        """
        if len(sessions) <= _SCOPE_TERMS_MAX:
            return True
        total = int(db.execute("SELECT COALESCE(MAX(id), 0) FROM memory_docs").fetchone()[0])
        inside = int(db.execute(
            "SELECT COUNT(*) FROM memory_docs WHERE session_id IN"
            " (SELECT value FROM json_each(?))", (json.dumps(list(sessions)),)).fetchone()[0])
        return inside * 4 < total

    def scope_in_fts(self, sessions: Collection[int]) -> bool:
        """Whether a search of ``sessions`` filters them inside FTS5 (see :meth:`keyword`)."""
        with self._store.read() as db:
            return self._scope_in_fts(db, sessions)

    def _short(
        self, db: sqlite3.Connection, plan: MatchQuery, where: SearchFilter,
        ranked: dict[int, tuple[float, Candidate]],
    ) -> None:
        """Add to ``ranked`` the entries within ``where`` holding a term too short to index.

        A term adds its IDF among the entries within ``where`` (``ln(1 + N/df)``, both
        counted there), so other scopes' entries never weigh it.
        """
        sql, args = _filters(where)
        t = self.table
        total = max(1, int(db.execute(
            f"SELECT COUNT(*) FROM memory_docs d WHERE d.role != 'system'{sql}", args
        ).fetchone()[0]))
        for term in plan.short_terms:
            rows = db.execute(
                f"SELECT d.id, d.session_id, d.seq FROM {t} JOIN memory_docs d ON"
                f" d.id = {t}.rowid WHERE instr(lower({t}.body), ?) > 0{sql}"
                " ORDER BY d.id DESC", (term.lower(), *args),
            ).fetchall()
            if not rows:
                continue
            idf = math.log(1 + total / len(rows))
            for doc, sid, seq in rows:
                score, cand = ranked.get(int(doc), (0.0, Candidate(int(doc), int(sid), int(seq))))
                ranked[int(doc)] = (score + idf, cand)

    # -- loading -------------------------------------------------------------------------

    def _changes_and_rows(self, db: sqlite3.Connection, docs: Sequence[int]
                          ) -> tuple[int, list[Any]]:
        """The count of changed entries, and the load rows of ``docs``, in one statement."""
        if not docs:
            return int(db.execute("SELECT n FROM memory_docs_changes").fetchone()[0]), []
        rows = db.execute(
            "SELECT c.n, l.* FROM (SELECT n FROM memory_docs_changes) c LEFT JOIN"
            f" (SELECT {LOAD_COLUMNS} WHERE d.id IN (SELECT value FROM json_each(?))) l"
            " ON 1", (json.dumps(list(docs)),)).fetchall()
        return int(rows[0][0]), [row[1:] for row in rows if row[1] is not None]

    def _rows(self, db: sqlite3.Connection, docs: Sequence[int]) -> list[Any]:
        """The load rows of ``docs`` (no statement when there is none)."""
        if not docs:
            return []
        return db.execute(f"SELECT {LOAD_COLUMNS} WHERE d.id IN (SELECT value FROM"
                          " json_each(?))", (json.dumps(list(docs)),)).fetchall()

    def load(self, candidates: Sequence[Candidate]) -> dict[int, tuple[Message, int]]:
        """``{doc: (message, page)}`` of the candidates still stored (named sessions).

        One statement for all of them, with the count of changes that says whether what
        was kept still holds; in the candidates' order. What was loaded is kept until an
        entry is deleted or changed (counted in ``memory_docs_changes``; a stored message
        never changes): successive questions of a conversation find many of the same
        messages.
        """
        if not candidates:
            return {}
        with self._store.read() as db:
            at, loaded = self._loaded  # one read: the messages go with their count
            missing = [c.doc for c in candidates if c.doc not in loaded]
            pinned = self._pinned(db)
            if pinned is not None:  # the block's count: nothing to read when all is kept
                changes, rows = pinned[1], self._rows(db, missing)
            else:
                changes, rows = self._changes_and_rows(db, missing)
            if at != changes or len(loaded) > _LOADED_MAX:
                # What was kept is stale: the rest is read again (after a deletion only).
                loaded = {}
                self._loaded = (changes, loaded)
                rest = [c.doc for c in candidates if c.doc not in set(missing)]
                rows += self._rows(db, rest)
            if db.in_transaction:  # inside a write: what is read may be rolled back
                loaded = dict(loaded)
        for row in rows:
            session_id = int(row[1])
            loaded[int(row[0])] = (session_id, int(row[2]), message_from_row(
                self.session_name(session_id), row[2:9]), int(row[9]))
        out: dict[int, tuple[Message, int]] = {}
        for cand in candidates:
            kept = loaded.get(cand.doc)
            if kept is not None and kept[0] == cand.session_id and kept[1] == cand.seq:
                out[cand.doc] = (kept[2], kept[3])
        return out
