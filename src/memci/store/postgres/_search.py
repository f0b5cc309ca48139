"""The message search index in PostgreSQL (:class:`~memci.store.MessageSearch`): keyword text.

The entries' row statements are :class:`~memci.store._sql.SqlMessageSearch`'s (one row
per indexed message in ``memory_docs``; a doc number comes from an identity column, so
it is unique across servers). Here: the derived keyword table ``memory_fts_<analyzer>``
(:class:`KeywordTable`, ref = doc id, shard = session id) holds an entry's keyword text:
``body`` (the analyzer's document of its text, weight A) and ``context`` (of the tail of
the messages before it, weight B), ranked by FTS5's BM25, a query's terms split into rare
and common ones as SQLite splits them (:mod:`memci.store.postgres._scoped`), so both
backends find the same entries. User text reaches SQL only as parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memci._dataclasses import replace
from memci.messages import Message
from memci.store._rows import stored_instant, stored_parts
from memci.store._search import Candidate, IndexedMessage, SearchDoc, SearchFilter
from memci.store._sql import Sql, SqlMessageSearch, search_filter
from memci.store.postgres._db import Connection, Database
from memci.store.postgres._dialect import POSTGRES
from memci.store.postgres._erase import EPOCH
from memci.store.postgres._keyword import Carry, KeywordTable
from memci.store.postgres._scoped import Commons, PostingScope, newest, split, window

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["PostgresMessageSearch"]


class PostgresMessageSearch(SqlMessageSearch):
    """The message index of one analyzer in one PostgreSQL store."""

    EPOCH = EPOCH
    # Docs and item revisions are numbered when written and may commit out of that order:
    # a hash of the transactions in progress (none: 0) tells a version read while a
    # write was in flight from one read after it committed.
    IN_FLIGHT = ("(SELECT COALESCE(hashtextextended(string_agg(x::text, ',' ORDER BY x), 0),"
                 " 0) FROM pg_snapshot_xip(pg_current_snapshot()) x)")

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        super().__init__(store.sql, analyzer)
        self._store = store
        # FTS5 counts the scope column's one term in every row: so does BM25 here.
        self.table = KeywordTable(store, f"memory_fts_{analyzer.name}", analyzer,
                                  indexes="memory_docs", extra_tokens=1)
        self.table.make()
        self._commons = Commons()  # terms found common, per scope (see _scoped)

    def _index(self, sql: Sql, doc: int, session_id: int, text: str, context: str) -> None:
        self.table.put(sql.conn, doc, session_id, (text, context))

    def _index_many(self, sql: Sql, docs: Sequence[tuple[int, SearchDoc]]) -> None:
        # The table documents the texts: a context's lines, met in the entries before,
        # are documented and cut once.
        self.table.put_many(sql.conn, [(made, doc.session_id, (doc.text, doc.context))
                                       for made, doc in docs])

    def keyword_backlog(self) -> list[IndexedMessage]:
        """Entries of non-system messages without keyword text, by session and seq."""
        t = self.table.name
        with self._store.read() as db:
            rows = db.execute(
                "SELECT d.id, d.session_id, d.seq, d.role, m.parts, m.created_at"
                " FROM memory_docs d"
                " JOIN messages m ON m.session_id = d.session_id AND m.seq = d.seq"
                f" WHERE d.role <> 'system' AND NOT EXISTS (SELECT 1 FROM {t} k"
                " WHERE k.ref = d.id) ORDER BY d.session_id, d.seq").fetchall()
        return [IndexedMessage(int(doc), int(sid), Message(
                    role, stored_parts(parts), seq=int(seq), created_at=stored_instant(at)))
                for doc, sid, seq, role, parts, at in rows]

    # -- searching -----------------------------------------------------------------------

    def keyword(
        self, plan: MatchQuery, *, k: int, where: SearchFilter, context_weight: float
    ) -> list[Candidate]:
        """The ``k`` best entries for ``plan`` within ``where`` by BM25, best first.

        The terms are split as the SQLite store splits them (:mod:`._scoped`): rare ones
        ranked by BM25 in the whole scope, common ones among its newest entries. Terms
        too short for the trigram index are matched by scanning (``strpos``); a match adds
        the term's IDF (``ln(1 + N/df)``), as in the SQLite store.
        """
        if plan.empty or k <= 0:
            return []
        if where.sessions is not None and not where.sessions:
            return []
        scores: dict[int, float] = {}
        # The ranking reads the entries it finds (their session and seq) in its own
        # statement; only entries found otherwise are looked up after.
        carry = Carry(("session_id", "seq"))
        # Not one snapshot (its BEGIN and COMMIT are two round trips): a writer between
        # the counts and the ranking changes a count by what it added, and an entry
        # deleted before its row is read is left out, as when it is loaded.
        with self._store.read() as db:
            if plan.match is not None:
                depth = k * 2 if plan.short_terms else k
                for score, ref in self._match(db, plan.match, depth, where, context_weight,
                                              carry):
                    scores[ref] = score
            if plan.short_terms:
                self._short(db, plan, where, scores)
            best = sorted(scores.items(), key=lambda t: (-t[1], t[0]))[:k]
            missing = [ref for ref, _ in best if ref not in carry.rows]
            if missing:
                carry.rows.update((int(r[0]), (r[1], r[2])) for r in db.execute(
                    "SELECT id, session_id, seq FROM memory_docs WHERE id = ANY(%s)",
                    (missing,)).fetchall())
        found = carry.rows
        return [Candidate(ref, int(found[ref][0]), int(found[ref][1]))
                for ref, _ in best if ref in found]

    def _match(
        self, db: Connection, match: str, k: int, where: SearchFilter, context_weight: float,
        carry: Carry,
    ) -> list[tuple[float, int]]:
        """``(score, doc)`` of the ``k`` best entries for ``match``, as SQLite ranks them.

        Rare terms by FTS5's BM25 within ``where`` (``carry`` filled with what it found);
        when they find fewer than ``k``, the common terms among the scope's newest
        entries, ranked below every rare match. A short time window of given sessions
        bounds every statement by its first and last entry; an empty one, nothing to find.
        """
        sessions = None if where.sessions is None else tuple(int(s) for s in where.sessions)
        rest, rest_args = search_filter(POSTGRES, replace(where, sessions=None, below=None))
        rest = POSTGRES.statement(rest)
        dated = sessions is not None and (where.start is not None or where.end is not None)
        short = window(db, sessions or (), rest, rest_args) if dated else None
        if short is not None and short.entries == 0:
            return []  # no entry of these sessions in the window
        scope = PostingScope(sessions, rest, tuple(rest_args), short)
        parts = match.split(" OR ")
        size, rare, common, counted = split(db, self.table, parts, scope, self._commons)
        found: list[tuple[float, int]] = []
        if rare:
            join, filters, args = scope.kept("k")
            if where.below is not None:
                filters, args = " AND k.ref < %s" + filters, [where.below, *args]
            found = self.table.rank(db, " OR ".join(rare), (1.0, context_weight), join=join,
                                    where=filters, args=args, limit=k, shards=sessions,
                                    carry=carry, counted=counted,
                                    refs=None if short is None else (short.first, short.last))
        if len(rare) < len(parts) and len(found) < k:
            # The rest only among the scope's newest entries: bounded, and ranked below.
            seen = {ref for _, ref in found}
            top = min((score for score, _ in found), default=0.0)
            below = size if where.below is None else min(size, where.below - 1)
            extra = newest(db, self.table, common, scope, k + len(seen), below)
            found += [(min(score, top) - 1e-9 * (i + 1), ref)
                      for i, (score, ref) in enumerate(extra) if ref not in seen]
        return found[:k]

    def _short(
        self, db: Connection, plan: MatchQuery, where: SearchFilter, scores: dict[int, float],
    ) -> None:
        """Add to ``scores`` the entries within ``where`` holding a term too short to index.

        A term adds its IDF among the entries within ``where`` (``ln(1 + N/df)``, both
        counted there), so other scopes' entries never weigh it.
        """
        sql, args = search_filter(POSTGRES, where)
        sql = POSTGRES.statement(sql)  # a fragment of statements written for psycopg
        join = " JOIN memory_docs d ON d.id = k.ref"
        counted = db.execute("SELECT COUNT(*) FROM memory_docs d WHERE"
                             f" d.role <> 'system'{sql}", args).fetchone()
        total = max(1, int(counted[0]) if counted else 0)
        for term in plan.short_terms:
            refs = self.table.containing(db, term, join=join, where=sql, args=args)
            if refs:
                idf = math.log(1 + total / len(refs))
                for ref in refs:
                    scores[ref] = scores.get(ref, 0.0) + idf
