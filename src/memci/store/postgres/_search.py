"""The message search index in PostgreSQL (:class:`~memci.store.MessageSearch`): keyword text.

The entries' row statements are :class:`~memci.store._sql.SqlMessageSearch`'s (one row
per indexed message in ``memory_docs``; a doc number comes from an identity column, so
it is unique across servers). Here: the derived keyword table ``memory_fts_<analyzer>``
(:class:`KeywordTable`, ref = doc id, shard = session id) holds an entry's keyword text:
``body`` (the analyzer's document of its text, weight A) and ``context`` (of the tail of
the messages before it, weight B), ranked by FTS5's BM25 so both backends order results
alike. User text reaches SQL only as parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memci.messages import Message
from memci.store._rows import stored_instant, stored_parts
from memci.store._search import Candidate, IndexedMessage, SearchDoc, SearchFilter
from memci.store._sql import Sql, SqlMessageSearch, search_filter
from memci.store.postgres._db import Database
from memci.store.postgres._dialect import POSTGRES
from memci.store.postgres._keyword import KeywordTable

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["PostgresMessageSearch"]


class PostgresMessageSearch(SqlMessageSearch):
    """The message index of one analyzer in one PostgreSQL store."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        super().__init__(store.sql, analyzer)
        self._store = store
        # FTS5 counts the scope column's one term in every row: so does BM25 here.
        self.table = KeywordTable(store, f"memory_fts_{analyzer.name}", analyzer.tokenize,
                                  extra_tokens=1)
        self.table.make()

    def _index(self, sql: Sql, doc: int, session_id: int, text: str, context: str) -> None:
        a = self.analyzer
        self.table.put(sql.conn, doc, session_id, (a.document(text), a.document(context)))

    def _index_many(self, sql: Sql, docs: Sequence[tuple[int, SearchDoc]]) -> None:
        a = self.analyzer
        self.table.put_many(sql.conn, [(made, doc.session_id,
                                        (a.document(doc.text), a.document(doc.context)))
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

        Terms too short for the trigram index are matched by scanning (``strpos``); a
        match adds the term's IDF (``ln(1 + N/df)``), as in the SQLite store.
        """
        if plan.empty or k <= 0:
            return []
        if where.sessions is not None and not where.sessions:
            return []
        sql, args = search_filter(POSTGRES, where)
        sql = POSTGRES.statement(sql)  # a fragment of statements written for psycopg
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
