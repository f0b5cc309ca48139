"""Common terms of a SQLite keyword search: counted, and ranked among the scope's newest.

A term held by many entries adds little to BM25 and costs a search every posting it has,
so a search (see :meth:`~memci.store.sqlite._search.SQLiteMessageSearch.keyword`) counts
how many entries hold each of its terms and ranks the common ones among the newest
entries only (:class:`CommonTerms`). Both are taken **within the search's scope**
(:class:`SearchScope`: its sessions, its time range and roles), never in the whole index:

- a term is common when more than ``rare`` entries *of the scope* hold it;
- the newest entries are the newest ``recent`` entries *of the scope* (below the search's
  bound), and a term's weight among them counts only them.

So writes outside a scope (another tenant's, another user's, another session's) never
change which entries the scope's search looks at, nor how it ranks common terms: before,
2,000 messages of another tenant made a tenant's 4,000 "deploy … harbor" entries fall
out of "the newest entries of the index", and the search found none of them. (Rare terms
are ranked by FTS5's BM25, whose weights FTS5 counts over the whole index.)

What is kept between searches stays exact while no entry is deleted or changed (the
``changes`` count of ``memory_docs_changes``): entries are then only added, each with a
larger id than every entry before it, so a count or a list of entries up to some id is
brought up to date by reading only the entries added above that id. Nothing read inside
a write transaction is kept (it may roll back, and its ids be given again).
"""

from __future__ import annotations

import bisect
import json
import math
import sqlite3
from collections.abc import Sequence
from typing import Any

from memci._dataclasses import dataclass
from memci.store._search import Candidate, best_by_terms

__all__ = ["CommonTerms", "SearchScope"]

_KEPT_TERMS = 64  # (term, scope) pairs whose newest entries are kept between searches
_KEPT_COUNTS = 16_384  # (term, scope) counts kept between searches
_KEPT_RANKINGS = 256  # rankings of common terms kept between searches
_KEPT_WINDOWS = 256  # scopes whose newest entries' bound is kept
_COUNTS_PER_STATEMENT = 64  # terms counted by one statement at most
_KEPT_ENTRIES = 16_384  # entries whose session and seq are kept between searches


@dataclass(frozen=True, slots=True)
class SearchScope:
    """The entries one search may return, as FTS5 scope terms and SQL on ``memory_docs``.

    ``terms``: the sessions as FTS5 scope terms (``"s1x" OR "s2x"``), "" when they are
    not filtered there; ``sql`` and ``args``: the rest, as conditions on ``memory_docs d``
    (each starting with `` AND``): sessions not given as terms, time range, roles. A
    search's bound on doc numbers (``below``) is not part of it.
    """

    terms: str = ""
    sql: str = ""
    args: tuple[Any, ...] = ()

    @property
    def key(self) -> tuple[str, str, tuple[Any, ...]]:
        """What identifies the scope in what is kept between searches."""
        return (self.terms, self.sql, self.args)

    def match(self, part: str | None) -> str | None:
        """The ``MATCH`` expression of the term ``part`` (None: every entry) in the scope."""
        if part is None:
            return f"scope : ({self.terms})" if self.terms else None
        expr = f"{{body context}} : {part}"
        return f"({expr}) AND (scope : ({self.terms}))" if self.terms else expr

    def rows(self, table: str, part: str | None, columns: str) -> tuple[str, str]:
        """``SELECT columns FROM`` the entries of the scope (holding ``part``), and a WHERE.

        The second is the WHERE clause's conditions (each starting with `` AND``), to
        follow the rowid bounds, with :meth:`params` after theirs. The full-text table
        drives the join (``CROSS JOIN``), so a query stops at its LIMIT rather than
        walking ``memory_docs``.
        """
        expr = self.match(part)
        head = f"SELECT {columns} FROM {table}"
        if self.sql:
            head += f" CROSS JOIN memory_docs d ON d.id = {table}.rowid"
        where = f" AND {table} MATCH ?" if expr is not None else ""
        return head, where + self.sql

    def params(self, part: str | None) -> tuple[Any, ...]:
        """The parameters of :meth:`rows`' WHERE conditions (before the rowid bounds)."""
        expr = self.match(part)
        return ((expr,) if expr is not None else ()) + self.args


class CommonTerms:
    """Counts of terms and the newest entries, per scope, kept between searches.

    ``table``: the FTS5 table; ``rare``: a term in more entries of a scope than this is
    common there; ``recent``: how many of a scope's newest entries its common terms are
    ranked among.
    """

    def __init__(self, table: str, *, rare: int, recent: int) -> None:
        self.table = table
        self.rare = rare
        self.recent = recent
        # (term, scope) -> (changes then, index size then, at least and at most how many
        # entries of the scope held it then; the same when counted there, capped)
        self._counts: dict[tuple[str, tuple[Any, ...]], tuple[int, int, int, int]] = {}
        # scope -> (changes then, top then, bound below its newest entries, how many)
        self._windows: dict[tuple[Any, ...], tuple[int, int, int, int]] = {}
        # (term, scope) -> (changes then, low, high, its entries in (low, high])
        self._recent: dict[tuple[str, tuple[Any, ...]], tuple[int, int, int, list[int]]] = {}
        # what newest() ranked, by its terms, scope, entries, changes and depth
        self._rankings: dict[tuple[object, ...], tuple[tuple[float, Candidate], ...]] = {}
        # (changes then, entry -> its session and seq): what newest() read of its entries
        self._entries: tuple[int, dict[int, Candidate]] = (-1, {})

    # -- how many entries of a scope hold a term -----------------------------------------

    def count(self, db: sqlite3.Connection, parts: Sequence[str], scope: SearchScope,
              size: int, changes: int) -> dict[str, int]:
        """Entries of ``scope`` holding each quoted term of ``parts``, counted up to rare + 1.

        ``size``: the index's newest entry. Kept per term and scope; later, only the
        entries added since are counted (exact: entries are only added, above ``size``,
        while the changes stay). What is still to count is counted in one statement.
        """
        found: dict[str, int] = {}
        ranges: list[tuple[str, int]] = []
        for part in dict.fromkeys(parts):
            kept = self._kept_count(part, scope, size, changes)
            exact = kept is not None and kept[1] == kept[2]
            since, found[part] = (kept[0], kept[1]) if kept is not None and exact else (0, 0)
            if found[part] <= self.rare and since < size:
                ranges.append((part, since))
        counted = self._count_ranges(db, [(part, since, self.rare + 1 - found[part])
                                          for part, since in ranges], scope, size)
        for (part, _), n in zip(ranges, counted, strict=True):
            found[part] += n
        for part, n in found.items():
            self._keep_count(db, part, scope, (changes, size, n, n))
        return found

    def bounds(self, part: str, scope: SearchScope, size: int, changes: int) -> tuple[int, int]:
        """``(low, high)``: how many entries of ``scope`` may hold ``part``, from what is kept.

        No I/O. ``low`` entries held it when it was last counted (or none), and at most
        ``high`` did then (a count in the whole index bounds it), plus every entry added
        since; a count past ``rare`` stays there (entries are only added). ``(0, size)``
        when nothing is kept.
        """
        kept = self._kept_count(part, scope, size, changes)
        if kept is None:
            return 0, size
        since, low, high = kept
        return (low, low) if low > self.rare else (low, high + size - since)

    def narrow(self, db: sqlite3.Connection, parts: Sequence[str], scope: SearchScope,
               size: int, changes: int) -> dict[str, tuple[int, int]]:
        """:meth:`bounds` of each of ``parts``, tight enough to tell whether it is rare.

        A term rare in the whole index is rare in every scope: counting it there is
        cheaper (FTS5 merges no scope terms), so that is tried first (for every term in
        one statement); the others get the scope's exact count (in one more).
        """
        known: dict[str, tuple[int, int]] = {}
        left = list(dict.fromkeys(parts))
        if left and scope.key != SearchScope().key:
            everywhere = self._count_ranges(
                db, [(part, 0, self.rare + 1) for part in left], SearchScope(), size)
            for part, n in zip(left, everywhere, strict=True):
                if n <= self.rare:
                    self._keep_count(db, part, scope, (changes, size, 0, n))
                    known[part] = (0, n)
            left = [part for part in left if part not in known]
        for part, n in self.count(db, left, scope, size, changes).items():
            known[part] = (n, n)
        return known

    def _kept_count(self, part: str, scope: SearchScope, size: int,
                    changes: int) -> tuple[int, int, int] | None:
        """``(since, low, high)`` kept for ``part`` in ``scope``, if still right."""
        kept = self._counts.get((part, scope.key))
        if kept is None or kept[0] != changes or kept[1] > size:
            return None
        return kept[1], kept[2], kept[3]

    def _keep_count(self, db: sqlite3.Connection, part: str, scope: SearchScope,
                    value: tuple[int, int, int, int]) -> None:
        if not db.in_transaction:
            if len(self._counts) >= _KEPT_COUNTS:
                self._counts.clear()
            self._counts[(part, scope.key)] = value

    def _count_range(self, db: sqlite3.Connection, part: str | None, scope: SearchScope, low: int,
                     top: int, cap: int) -> int:
        """Entries of ``scope`` in ``(low, top]`` (holding ``part``), counted up to ``cap``."""
        sql, params = self._count_sql(part, scope, low, top, cap)
        return int(db.execute(f"SELECT {sql}", params).fetchone()[0])

    def _count_ranges(self, db: sqlite3.Connection, ranges: Sequence[tuple[str, int, int]],
                      scope: SearchScope, top: int) -> list[int]:
        """:meth:`_count_range` of each ``(part, low, cap)`` up to ``top``.

        In one statement (of :data:`_COUNTS_PER_STATEMENT` terms at most).
        """
        counts: list[int] = []
        for at in range(0, len(ranges), _COUNTS_PER_STATEMENT):
            columns: list[str] = []
            params: list[Any] = []
            for part, low, cap in ranges[at:at + _COUNTS_PER_STATEMENT]:
                sql, args = self._count_sql(part, scope, low, top, cap)
                columns.append(sql)
                params.extend(args)
            row = db.execute(f"SELECT {', '.join(columns)}", params).fetchone()
            counts.extend(int(n) for n in row)
        return counts

    def _count_sql(self, part: str | None, scope: SearchScope, low: int, top: int,
                   cap: int) -> tuple[str, tuple[Any, ...]]:
        """The scalar subquery of :meth:`_count_range`, and its parameters."""
        t = self.table
        head, where = scope.rows(t, part, "1")
        return (f"(SELECT COUNT(*) FROM ({head} WHERE {t}.rowid > ? AND {t}.rowid <= ?{where}"
                " LIMIT ?))", (low, top, *scope.params(part), cap))

    # -- the newest entries of a scope ---------------------------------------------------

    def window(self, db: sqlite3.Connection, scope: SearchScope, top: int,
               changes: int, *, added: int | None = None) -> tuple[int, int]:
        """``(low, n)``: the scope's newest ``recent`` entries up to ``top`` are (low, top].

        ``n`` is how many they are (fewer than ``recent`` when the scope holds fewer).
        Kept per scope: as entries are added, the bound moves up past as many of the
        scope's oldest ones as were added (both read in the index, a few rows each).
        ``added``: the entries added since the kept window, counted by the caller.
        """
        kept = self._windows.get(scope.key)
        if kept is not None and kept[0] == changes and kept[1] == top:
            return kept[2], kept[3]
        if added is None:
            added = self.recent + 1
            if kept is not None and kept[0] == changes and kept[1] < top:
                added = self._count_range(db, None, scope, kept[1], top, self.recent + 1)
        if kept is not None and added <= self.recent:
            low, n = kept[2], kept[3] + added
            if n > self.recent:
                low = self._after(db, scope, low, n - self.recent)
                n = self.recent
        else:  # nothing kept, or a whole window added since: read from the newest down
            low, n = self._newest_bound(db, scope, top)
        if not db.in_transaction:
            if len(self._windows) >= _KEPT_WINDOWS:
                self._windows.clear()
            self._windows[scope.key] = (changes, top, low, n)
        return low, n

    def _newest_bound(
        self, db: sqlite3.Connection, scope: SearchScope, top: int
    ) -> tuple[int, int]:
        """``(low, n)`` of :meth:`window`, read from the newest entry down."""
        t = self.table
        head, where = scope.rows(t, None, f"{t}.rowid AS r")
        rows: list[int] = json.loads(db.execute(
            f"SELECT json_group_array(r) FROM ({head} WHERE {t}.rowid <= ?{where}"
            f" ORDER BY {t}.rowid DESC LIMIT ?)",
            (top, *scope.params(None), self.recent)).fetchone()[0])
        return (min(rows) - 1 if len(rows) >= self.recent else 0), len(rows)

    def _after(self, db: sqlite3.Connection, scope: SearchScope, low: int, skip: int) -> int:
        """The ``skip``-th entry of ``scope`` above ``low`` (the new bound below a window)."""
        t = self.table
        head, where = scope.rows(t, None, f"{t}.rowid")
        return int(db.execute(
            f"{head} WHERE {t}.rowid > ?{where} ORDER BY {t}.rowid LIMIT 1 OFFSET ?",
            (low, *scope.params(None), skip - 1)).fetchone()[0])

    def newest(
        self, db: sqlite3.Connection, parts: Sequence[str], scope: SearchScope, k: int, top: int,
        changes: int,
    ) -> list[tuple[float, Candidate]]:
        """Common terms among the scope's newest entries up to ``top``, ranked without BM25.

        BM25 in FTS5 counts each term's rows over the whole index: for a common term that
        is most of it. Here each term's entries are read among the scope's newest ones
        only, and an entry scores the sum of its terms' weights there (``ln(1 + n /
        entries holding it)``, ``n`` the newest entries); newer first at a tie.
        """
        low, n, read = self._window_reading(db, parts, scope, top, changes)
        # The same terms over the same entries rank the same (entries are only added, and
        # above ``top``, while the changes stay): a tool loop's, or a window's, next page.
        key = (tuple(parts), scope.key, low, top, changes, k)
        kept = self._rankings.get(key)
        if kept is not None:
            return list(kept)
        terms: list[tuple[float, set[int]]] = []
        for docs in self._recent_docs(db, parts, scope, low, top, changes, read):
            if docs:
                terms.append((math.log(1 + n / len(docs)), set(docs)))
        best = best_by_terms(terms, k)
        found = self._candidates(db, [d for _, d in best], changes)
        ranked = [(score, found[d]) for score, d in best if d in found]
        # Inside a write (``atomic``) what is read may be rolled back, its ids given again:
        # it is used, not kept.
        if not db.in_transaction:
            if len(self._rankings) >= _KEPT_RANKINGS:
                self._rankings.clear()
            self._rankings[key] = tuple(ranked)
        return ranked

    def _candidates(self, db: sqlite3.Connection, docs: Sequence[int],
                    changes: int) -> dict[int, Candidate]:
        """``docs`` with their sessions and seqs (those still stored): read once each.

        Kept while the changes stay (an entry's session and seq never change; a deletion
        counts as a change), and never from inside a write (it may roll back).
        """
        at, known = self._entries
        if at != changes or len(known) > _KEPT_ENTRIES:
            known = {}
        missing = [d for d in docs if d not in known]
        found = {d: known[d] for d in docs if d in known}
        if missing:
            rows = db.execute(
                "SELECT id, session_id, seq FROM memory_docs WHERE id IN"
                " (SELECT value FROM json_each(?))", (json.dumps(missing),)).fetchall()
            found.update((int(r[0]), Candidate(int(r[0]), int(r[1]), int(r[2]))) for r in rows)
        if not db.in_transaction:
            self._entries = (changes, {**known, **found})
        return found

    def _window_reading(
        self, db: sqlite3.Connection, parts: Sequence[str], scope: SearchScope, top: int,
        changes: int,
    ) -> tuple[int, int, dict[str, list[int]] | None]:
        """:meth:`window`, and what :meth:`_recent_docs` reads, in one statement if it can.

        When the kept window only needs the entries added since counted, the terms'
        entries are read in the same statement, from where that window starts: they are
        the reads :meth:`_recent_docs` makes unless the count moves the window (a scope
        past ``recent`` entries), which then reads them itself (None).
        """
        kept = self._windows.get(scope.key)
        if kept is None or kept[0] != changes or kept[1] >= top:
            low, n = self.window(db, scope, top, changes)
            return low, n, None
        reads = self._plan_reads(parts, scope, kept[2], top, changes)[1]
        count, count_args = self._count_sql(None, scope, kept[1], top, self.recent + 1)
        columns, params = self._read_columns(reads, scope, top)
        row = db.execute(f"SELECT {', '.join([count, *columns])}",
                         (*count_args, *params)).fetchone()
        low, n = self.window(db, scope, top, changes, added=int(row[0]))
        if low != kept[2]:
            return low, n, None
        return low, n, {part: sorted(json.loads(docs))
                        for (part, _), docs in zip(reads, row[1:], strict=True)}

    def _plan_reads(
        self, parts: Sequence[str], scope: SearchScope, low: int, top: int, changes: int,
    ) -> tuple[list[tuple[int, int, list[int]] | None], list[tuple[str, int]]]:
        """What is kept of each of ``parts``' entries in ``(low, top]``, and what to read."""
        kept: list[tuple[int, int, list[int]] | None] = []
        reads: list[tuple[str, int]] = []
        for part in parts:
            held = self._recent.get((part, scope.key))
            if held is not None and held[0] == changes and held[1] <= low <= held[2]:
                kept.append((held[1], held[2], held[3]))
                if top > held[2]:
                    reads.append((part, held[2]))
            else:
                kept.append(None)
                if top > low:
                    reads.append((part, low))
        return kept, reads

    def _recent_docs(
        self, db: sqlite3.Connection, parts: Sequence[str], scope: SearchScope, low: int,
        top: int, changes: int, read: dict[str, list[int]] | None = None,
    ) -> list[list[int]]:
        """The entries of ``scope`` in ``(low, top]`` holding each of ``parts``, ascending.

        Kept between searches: a common term is asked again and again, and the newest
        entries move by a few a build, so only the entries added since are read (for
        every term in one statement; ``read``: read already, see :meth:`_window_reading`).
        """
        kept, reads = self._plan_reads(parts, scope, low, top, changes)
        if read is None:
            read = dict(zip((part for part, _ in reads),
                            self._read(db, reads, scope, top), strict=True))
        found: list[list[int]] = []
        for part, was in zip(parts, kept, strict=True):
            if was is None:
                docs, since, high = read.get(part, []), low, top
            else:
                since, high, docs = was
                if part in read:
                    docs, high = docs + read[part], top
                if high - low <= 4 * self.recent:  # what is kept stays about one window long
                    docs, since = docs[bisect.bisect_right(docs, low):], low
            self._keep_recent(db, part, scope, (changes, since, high, docs))
            found.append(docs[bisect.bisect_right(docs, low):bisect.bisect_right(docs, top)])
        return found

    def _keep_recent(self, db: sqlite3.Connection, part: str, scope: SearchScope,
                     value: tuple[int, int, int, list[int]]) -> None:
        if not db.in_transaction:
            key = (part, scope.key)
            if key not in self._recent and len(self._recent) >= _KEPT_TERMS:
                self._recent.clear()
            self._recent[key] = value

    def _read(self, db: sqlite3.Connection, reads: Sequence[tuple[str, int]],
              scope: SearchScope, top: int) -> list[list[int]]:
        """The entries of ``scope`` in ``(low, top]`` of each ``(part, low)``, ascending.

        In one statement: a JSON array a term, the rowids read without a row each.
        """
        if not reads:
            return []
        columns, params = self._read_columns(reads, scope, top)
        row = db.execute(f"SELECT {', '.join(columns)}", params).fetchone()
        return [sorted(json.loads(docs)) for docs in row]

    def _read_columns(self, reads: Sequence[tuple[str, int]], scope: SearchScope,
                      top: int) -> tuple[list[str], list[Any]]:
        """The scalar subqueries of :meth:`_read` (a JSON array a read), and their params."""
        t = self.table
        columns: list[str] = []
        params: list[Any] = []
        for part, low in reads:
            head, where = scope.rows(t, part, f"{t}.rowid AS r")
            columns.append(f"(SELECT json_group_array(r) FROM ({head} WHERE {t}.rowid > ?"
                           f" AND {t}.rowid <= ?{where}))")
            params.extend((low, top, *scope.params(part)))
        return columns, params
