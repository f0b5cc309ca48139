"""Long-term memory items in SQLite: their FTS5 keyword text, revisions and ranking.

The item rows' statements are :class:`~memci.store._sql.SqlItemStore`'s. Here: the
derived FTS5 table ``memory_items_fts_<analyzer>`` (rowid = item id) keeps ``body`` (text
and summary) and ``subject`` with their copies, so an item's row there can be replaced;
a revision is ``MAX(rev) + 1``, read in the write transaction (SQLite's writers take
turns, so no two changes read the same).

A keyword search splits its terms as the message search does (the limits of
:mod:`memci.store._search`): FTS5's BM25 scores every row that matches, so a word most
archived pages hold (6,000 episodic items at 100k messages, 2,200 of 2,400 in another
store) made every search rank all of them. A term is common when more items of the store
hold it than :func:`common_above` allows: more than :data:`~memci.store._search.RARE`,
or more than :data:`SMALL` and than half the newest item's id, so at least half the
items (FTS5 then floors its weight to 1e-6: it changes no score by more than a few
millionths). The others are ranked by BM25, and the scope's items holding a common term
only follow, newest first, read until the depth is filled. Invariants:

- a store of at most :data:`SMALL` items has no common term: its searches rank as BM25
  over every term does (the same ids, in the same order), and count nothing once a
  search read its stamp (a process's first search counts its terms with the stamp: it
  cannot know the store's size before);
- a term's count is capped at ``RARE + 1``, so a search costs no more in a larger store;
- counts are kept between searches with the store's stamp (its newest item and last
  erasure, read by the ranking's own statement): a common term stays common while the
  items it held still pass the bound, a rare one rare while every item added since could
  hold it and it would still be; only the others are counted again. Nothing read inside
  a write is kept (it may roll back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memci.store._items import ItemFilter
from memci.store._search import COMMON_MAX, RARE
from memci.store._sql import Sql, SqlItemStore, item_filter
from memci.store.sqlite._db import EPOCH, Database
from memci.store.sqlite._fts import ensure_fts, fts_name

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["SQLiteItemStore"]

_ROWS_PER_INSERT = 300  # keyword rows one INSERT writes at most (3 parameters each)
_COUNTS_PER_STATEMENT = 64  # terms counted by one statement at most
_KEPT_COUNTS = 4_096  # term counts kept between searches at most
_BEST_OF = 2  # a search ranks this many times its depth inside FTS5 before the filter
# A store of at most SMALL items ranks every match (cheap at this size): no term is common.
SMALL = 256
# The store's stamp: its newest item and its last erasure (each read at an index's edge).
_STAMP = f"SELECT (SELECT COALESCE(MAX(id), 0) FROM memory_items), {EPOCH}"

Stamp = tuple[int, int]
#: No stamp read yet (a process's first search): the store may be of any size, so its
#: terms are counted with the stamp before they are split (taken for a small store, the
#: first search of a large one ranked every item holding a common term, then again).
_UNREAD: Stamp = (-1, -1)
Counts = dict[str, tuple[int, int]]  # term -> (the newest item then, items holding it)


class SQLiteItemStore(SqlItemStore):
    """The memory items of one SQLite store, with the keyword text of one analyzer."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        super().__init__(store.sql, analyzer)
        self.table = fts_name("memory_items_fts", analyzer)
        # (the stamp the last search read, the terms counted since the last erasure, each
        # capped at RARE + 1); nothing read yet: the first search counts its terms
        self._kept: tuple[Stamp, Counts] = (_UNREAD, {})
        with self._db.write() as sql:
            if ensure_fts(sql.conn, "memory_items_fts", analyzer):
                for row in sql.all("SELECT id, text, summary, subject FROM memory_items"):
                    self._index(sql, int(row[0]), row[1], row[2], row[3])

    def _index(self, sql: Sql, item_id: int, text: str, summary: str | None,
               subject: str | None, *, replace: bool = False) -> None:
        if replace:
            sql.run(f"DELETE FROM {self.table} WHERE rowid = ?", (item_id,))
        body = text if not summary else f"{text}\n{summary}"
        sql.run(f"INSERT INTO {self.table} (rowid, body, subject) VALUES (?, ?, ?)",
                (item_id, self.analyzer.document(body), self.analyzer.document(subject or "")))

    def _index_many(self, sql: Sql,
                    items: Sequence[tuple[int, str, str | None, str | None]]) -> None:
        """:meth:`_index` of each new item, in one statement a batch."""
        for at in range(0, len(items), _ROWS_PER_INSERT):
            batch = items[at:at + _ROWS_PER_INSERT]
            args: list[Any] = []
            for item_id, text, summary, subject in batch:
                body = text if not summary else f"{text}\n{summary}"
                args += [item_id, self.analyzer.document(body),
                         self.analyzer.document(subject or "")]
            sql.run(f"INSERT INTO {self.table} (rowid, body, subject) VALUES "
                    + ", ".join(["(?, ?, ?)"] * len(batch)), args)

    def _revision(self, sql: Sql) -> tuple[str, tuple[Any, ...]]:
        # Inside the statement that writes it (SQLite runs a subquery that names no outer
        # column once per statement): no read of its own. The write transaction holds the
        # only writer, so no other change takes the same number.
        return "(SELECT COALESCE(MAX(rev), 0) + 1 FROM memory_items)", ()

    def keyword(self, plan: MatchQuery, where: ItemFilter, depth: int) -> list[int]:
        """Up to ``depth`` ids passing ``where`` that match ``plan`` (BM25), best first.

        Terms held by more items of the store than :func:`common_above` allows only add
        the scope's newest items holding them, after every match of the others (see the
        module). A plan with only terms too short for the index matches them by scanning
        (``instr``), newest first.
        """
        sql_where, args = item_filter(self._db.dialect, where)
        t = self.table
        with self._db.read() as sql:
            if plan.match is not None:
                return self._matched(sql, plan.match.split(" OR "), sql_where, args, depth)
            if not plan.short_terms:
                return []
            likes = " OR ".join(f"instr(lower({t}.body), ?) > 0" for _ in plan.short_terms)
            rows = sql.all(
                f"SELECT i.id FROM {t} JOIN memory_items i ON i.id = {t}.rowid"
                f" WHERE ({likes}) AND {sql_where} ORDER BY i.valid_from DESC LIMIT ?",
                (*[s.lower() for s in plan.short_terms], *args, depth))
        return [int(r[0]) for r in rows]

    def _matched(self, sql: Sql, parts: Sequence[str], sql_where: str, args: Sequence[Any],
                 depth: int) -> list[int]:
        """The rare terms of ``parts`` by BM25, then the scope's newest holding a common one.

        The split is made with the stamp the last search read; when the stamp this
        ranking reads splits otherwise (an erasure, a store grown past a count's bound),
        the terms are counted and ranked again.
        """
        stamp, counts = self._kept
        for again in (False, True):
            split = _split(parts, stamp, counts)
            if split is None:
                stamp, counts = self._count(sql, _undecided(parts, stamp, counts), stamp,
                                            counts)
                split = _split(parts, stamp, counts)
            rare = list(parts) if split is None else split  # None: an erasure meanwhile
            now, found = self._ranked(sql, rare, sql_where, args, depth)
            if now[1] != stamp[1]:
                counts = {}  # an erasure since: what was counted may hold fewer now
            if again or _split(parts, now, counts) == rare:
                break
            stamp = now
        self._keep(sql, now, counts)
        common = [p for p in parts if p not in rare][:COMMON_MAX]
        if common and len(found) < depth:
            seen = set(found)
            found += [i for i in self._newest(sql, common, sql_where, args, depth)
                      if i not in seen][:depth - len(found)]
        return found

    def _count(self, sql: Sql, parts: Sequence[str], stamp: Stamp, counts: Counts
               ) -> tuple[Stamp, Counts]:
        """``counts`` with ``parts`` counted, and the stamp read with them.

        Each term's items are counted up to ``RARE + 1`` (a common term costs no more in a
        larger store), 64 terms a statement; after an erasure what was kept is dropped.
        """
        t = self.table
        counted = dict(counts)
        left = list(parts)
        while left:
            batch, left = left[:_COUNTS_PER_STATEMENT], left[_COUNTS_PER_STATEMENT:]
            columns = ", ".join([f"(SELECT COUNT(*) FROM (SELECT 1 FROM {t} WHERE {t} MATCH ?"
                                 " LIMIT ?))"] * len(batch))
            params: list[Any] = []
            for part in batch:
                params += [f"{{body subject}} : {part}", RARE + 1]
            row = sql.one(f"SELECT s.*, {columns} FROM ({_STAMP}) s", params)
            assert row is not None
            now: Stamp = (int(row[0]), int(row[1]))
            if now[1] != stamp[1]:
                counted = {}
            stamp = now
            counted.update((part, (now[0], int(n))) for part, n in zip(batch, row[2:],
                                                                        strict=True))
        return stamp, counted

    def _ranked(self, sql: Sql, parts: Sequence[str], sql_where: str, args: Sequence[Any],
                depth: int) -> tuple[Stamp, list[int]]:
        """The store's stamp and up to ``depth`` ids matching ``parts`` by BM25, best first.

        The ``_BEST_OF * depth`` best matches are ranked inside FTS5 and only they joined
        to the filter: the same ``depth`` best when as many of them pass it; otherwise
        every match is joined (:meth:`_ranked_all`).
        """
        t = self.table
        if not parts:
            row = sql.one(_STAMP)
            assert row is not None
            return (int(row[0]), int(row[1])), []
        expr = f"{{body subject}} : ({' OR '.join(parts)})"
        rows = sql.all(
            f"SELECT s.*, b.id, i.id FROM ({_STAMP}) s LEFT JOIN (SELECT rowid AS id,"
            f" bm25({t}, 1.0, 0.5) AS score FROM {t} WHERE {t} MATCH ? ORDER BY score,"
            f" rowid LIMIT ?) b ON 1 LEFT JOIN memory_items i ON i.id = b.id AND {sql_where}"
            " ORDER BY b.score, b.id", (expr, _BEST_OF * depth, *args))
        stamp: Stamp = (int(rows[0][0]), int(rows[0][1]))
        found = [int(r[3]) for r in rows if r[3] is not None]
        if len(found) < depth and sum(r[2] is not None for r in rows) == _BEST_OF * depth:
            found = self._ranked_all(sql, expr, sql_where, args, depth)
        return stamp, found[:depth]

    def _ranked_all(self, sql: Sql, expr: str, sql_where: str, args: Sequence[Any],
                    depth: int) -> list[int]:
        """Up to ``depth`` ids passing the filter matching ``expr`` by BM25: every match joined.

        The matches drive the join (``CROSS JOIN``): joined plainly, SQLite walks every
        item of the owner (its index) and looks each up among the matches, 13 ms for 246
        matches among 28,000 items.
        """
        t = self.table
        rows = sql.all(
            f"WITH hits AS MATERIALIZED (SELECT rowid AS id, bm25({t}, 1.0, 0.5)"
            f" AS score FROM {t} WHERE {t} MATCH ?) SELECT i.id FROM hits CROSS JOIN"
            f" memory_items i ON i.id = hits.id WHERE {sql_where}"
            " ORDER BY hits.score, i.id LIMIT ?", (expr, *args, depth))
        return [int(r[0]) for r in rows]

    def _newest(self, sql: Sql, parts: Sequence[str], sql_where: str, args: Sequence[Any],
                depth: int) -> list[int]:
        """Up to ``depth`` ids passing the filter holding any of ``parts``, newest first.

        The full-text table drives the join (``CROSS JOIN``) from its newest row down, so
        the statement stops once ``depth`` items of the scope are read.
        """
        t = self.table
        rows = sql.all(
            f"SELECT i.id FROM {t} CROSS JOIN memory_items i ON i.id = {t}.rowid"
            f" WHERE {t} MATCH ? AND {sql_where} ORDER BY {t}.rowid DESC LIMIT ?",
            (f"{{body subject}} : ({' OR '.join(parts)})", *args, depth))
        return [int(r[0]) for r in rows]

    def _keep(self, sql: Sql, stamp: Stamp, counts: Counts) -> None:
        """Keep the stamp and the counts for the next search (not read inside a write)."""
        if not sql.conn.in_transaction:
            self._kept = (stamp, counts if len(counts) <= _KEPT_COUNTS else {})


def common_above(top: int) -> int:
    """The items a term may be held by and be rare, in a store whose newest item is ``top``.

    ``top`` bounds the store's items from above (ids only grow), so a term held by more
    than half of ``top`` is held by at least half the items: FTS5's BM25 gives it the floor
    weight (its IDF, log((N - n + 0.5) / (n + 0.5)), is at most 0 and taken as 1e-6).
    """
    return min(RARE, max(SMALL, top // 2))


def _decided(kept: tuple[int, int] | None, top: int) -> bool:
    """Whether a term's count ``kept`` (the newest item then, its count) still decides it.

    Counts only grow (items are only added, until an erasure drops the counts) and the
    bound only rises with ``top``: common stays common while the count kept passes the
    bound now; rare stays rare while every item added since could hold it and it would
    still be. A newest item older than the count's means items were deleted: counted again.
    """
    if kept is None or top < kept[0]:
        return False
    at, n = kept
    bound = common_above(top)
    return n > bound or n + max(0, top - at) <= bound


def _undecided(parts: Sequence[str], stamp: Stamp, counts: Counts) -> list[str]:
    """The terms of ``parts`` whose count ``counts`` no longer decides at ``stamp``."""
    return [p for p in dict.fromkeys(parts) if not _decided(counts.get(p), stamp[0])]


def _split(parts: Sequence[str], stamp: Stamp, counts: Counts) -> list[str] | None:
    """The terms of ``parts`` ranked by BM25 at ``stamp`` (None: some must be counted)."""
    if 0 <= stamp[0] <= SMALL:  # a store of at most SMALL items has no common term
        return list(parts)
    if _undecided(parts, stamp, counts):
        return None
    bound = common_above(stamp[0])
    return [p for p in parts if counts[p][1] <= bound]
