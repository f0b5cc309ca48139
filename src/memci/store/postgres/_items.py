"""Long-term memory items in PostgreSQL: their keyword text, its BM25, and revisions.

The item rows' statements are :class:`~memci.store._sql.SqlItemStore`'s. Here: a
revision comes from the sequence ``memory_item_revisions``, so revisions grow whichever
server writes; the derived keyword table ``memory_items_fts_<analyzer>`` (ref = item id;
:class:`KeywordTable`) keeps ``body`` (text and summary, weight A) and ``subject``
(weight B); a changed item's row there is replaced in the same transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memci.store._items import ItemFilter, NewItem
from memci.store._sql import Sql, SqlItemStore, item_filter
from memci.store.postgres._db import Connection, Database
from memci.store.postgres._keyword import KeywordTable

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["PostgresItemStore"]

# Item rows' statistics are spread over shards so writers seldom wait on one counter. A
# transaction counts all its rows under one shard (its connection's): counting each row
# under its own shard, two transactions that add many items took the shards' row locks in
# different orders and deadlocked (three servers archiving at once did).
_SHARDS = 16

# Each item seen again (:meth:`PostgresItemStore.merge_many`) as :meth:`SqlItemStore.merge`
# counts it, from arrays (one statement text whatever their length); a revision each.
_MERGE_MANY = (
    "UPDATE memory_items i SET seen = i.seen + 1, updated = %s,"
    " rev = nextval('memory_item_revisions'), summary = COALESCE(m.summary, i.summary),"
    " source = COALESCE(m.source, i.source), subject = COALESCE(i.subject, m.subject)"
    " FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[])"
    " AS m(id, summary, source, subject) WHERE i.id = m.id"
    " RETURNING i.id, i.text, i.summary, i.subject, m.summary IS NOT NULL")


class PostgresItemStore(SqlItemStore):
    """The memory items of one PostgreSQL store, with the keyword text of one analyzer."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        super().__init__(store.sql, analyzer)
        self.table = KeywordTable(store, f"memory_items_fts_{analyzer.name}", analyzer,
                                  indexes="memory_items")

        def fill(db: Connection) -> None:
            rows = db.execute("SELECT id, text, summary, subject FROM memory_items").fetchall()
            self.table.put_many(db, [(int(r[0]), (id(db) >> 4) % _SHARDS,
                                      self._columns(r[1], r[2], r[3])) for r in rows])

        self.table.make(fill)

    def _columns(self, text: str, summary: str | None, subject: str | None) -> tuple[str, str]:
        """The item's keyword columns' texts: text and summary (weight A), subject (B)."""
        return (text if not summary else f"{text}\n{summary}"), subject or ""

    def _put(self, db: Connection, item_id: int, text: str, summary: str | None,
             subject: str | None, *, replace: bool = False) -> None:
        self.table.put(db, item_id, (id(db) >> 4) % _SHARDS,
                       self._columns(text, summary, subject), replace=replace)

    def _index(self, sql: Sql, item_id: int, text: str, summary: str | None,
               subject: str | None, *, replace: bool = False) -> None:
        self._put(sql.conn, item_id, text, summary, subject, replace=replace)

    def _index_many(self, sql: Sql,
                    items: Sequence[tuple[int, str, str | None, str | None]], *,
                    replace: bool = False) -> None:
        """The items' keyword text in one batch (an archive event keeps hundreds).

        ``replace``: in place of the text they have (see :meth:`KeywordTable.put_many`).
        """
        shard = (id(sql.conn) >> 4) % _SHARDS
        self.table.put_many(sql.conn, [(item_id, shard, self._columns(text, summary, subject))
                                       for item_id, text, summary, subject in items],
                            replace=replace)

    def merge_many(self, seen: Mapping[int, NewItem], *, now: float) -> None:
        """:meth:`merge` of each item ``id`` seen again as ``item``, in one statement.

        An archive event meets again the pages it kept before (hundreds in an import):
        one ``UPDATE`` each was a round trip each. The items given a summary get their
        keyword rows replaced as one batch.
        """
        if not seen:
            return
        ids = sorted(seen)  # every writer sends its rows in one order: their locks too
        with self._db.write() as sql:
            rows = sql.conn.execute(_MERGE_MANY, (
                now, ids, *([getattr(seen[i], name) for i in ids]
                            for name in ("summary", "source", "subject")))).fetchall()
            changed = sorted((int(r[0]), str(r[1]), r[2], r[3]) for r in rows if r[4])
            if changed:
                self._index_many(sql, changed, replace=True)

    def _revision(self, sql: Sql) -> tuple[str, tuple[Any, ...]]:
        return "nextval('memory_item_revisions')", ()

    def keyword(self, plan: MatchQuery, where: ItemFilter, depth: int) -> list[int]:
        """Up to ``depth`` ids passing ``where`` that match ``plan`` (BM25), best first.

        A plan with only terms too short for the index matches them by scanning
        (``strpos``), newest first.
        """
        sql_where, args = item_filter(self._db.dialect, where)
        join = " JOIN memory_items i ON i.id = k.ref"
        # One statement either way (no snapshot to open and close: two round trips).
        with self._db.read() as sql:
            if plan.match is not None:
                # Most items are the scope's and current: the filter keeps most rows.
                return [ref for _, ref in self.table.rank(
                    sql.conn, plan.match, (1.0, 0.5), join=join,
                    where=" AND " + sql.dialect.statement(sql_where), args=args,
                    limit=depth, keeps_most=True)]
            if not plan.short_terms:
                return []
            likes = " OR ".join(sql.dialect.contains("k.body") for _ in plan.short_terms)
            rows = sql.all(
                f"SELECT i.id FROM {self.table.name} k{join} WHERE ({likes}) AND {sql_where}"
                " ORDER BY i.valid_from DESC LIMIT ?",
                (*[s.lower() for s in plan.short_terms], *args, depth))
        return [int(r[0]) for r in rows]

