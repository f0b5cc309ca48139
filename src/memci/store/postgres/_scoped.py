"""A PostgreSQL message search's terms split as SQLite splits them: rare, and common.

A term held by many entries adds little to BM25 and costs a search every posting it has.
So, as in the SQLite store (:meth:`~memci.store.sqlite._search.SQLiteMessageSearch._match`,
with the same limits: :data:`~memci.store._search.RARE` and the rest), a search counts
how many entries **of its scope** (sessions, time range, roles) hold each term, capped
just past ``RARE`` (:func:`split`); the rare terms are ranked by FTS5's BM25 in the whole
scope, and when they find fewer entries than asked, up to ``COMMON_MAX`` common terms are
ranked among the scope's ``RECENT`` newest entries (:func:`newest`), below every match
of a rare term. Both backends find the same entries, and a search reads a bounded number
of postings whatever its words and however large the store.

A scope's sessions are read in the postings themselves (their ``shard``, in the
postings' key): counting a term in one session is one range of an index, with no join.
Time ranges and roles join ``memory_docs``; a short time window of given sessions
(:func:`window`, at most ``WINDOW_MAX`` entries, as in the SQLite store) bounds the
postings read by its first and last entry, so the rows outside it are never joined (a
search of "yesterday" joined each of its 6,400 rows found in the session to keep none),
and a window holding no entry is not searched. What is kept between searches
(:class:`Commons`): which terms were found common in a scope, since a scope's entries only
grow until something is deleted (the store's erasures, counted in the same statement);
counting a common term read 3,001 of its postings, every search.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from memci._dataclasses import dataclass
from memci._records import NamedTuple
from memci.store._search import (
    COMMON_MAX,
    POSTINGS_MAX,
    RARE,
    RECENT,
    TERMS_MAX,
    WINDOW_MAX,
    best_by_terms,
    rarest,
)
from memci.store.postgres._db import Connection
from memci.store.postgres._keyword import (
    Counted,
    KeywordTable,
    Phrase,
    phrases,
    posting_bounds,
)

__all__ = ["Commons", "PostingScope", "Split", "Window", "newest", "split", "window"]

_LAST_CHAR = "\U0010ffff"


class Window(NamedTuple):
    """A short time window of a search's sessions: its entries, first and last, and ids."""

    entries: int
    first: int
    last: int
    ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PostingScope:
    """The entries a search may find, as conditions on a keyword row or posting ``x``.

    ``shards``: the sessions (None: any), read in ``x.shard``; ``where`` and ``args``: the
    rest, as conditions on ``memory_docs d`` (each starting with `` AND``; joined only
    when there are some); ``window``: the scope's entries, when they are a short time
    window (:func:`window`): read in ``x`` by their range and ids, with no join. A
    search's bound on doc numbers is not part of it.
    """

    shards: tuple[int, ...] | None = None
    where: str = ""
    args: tuple[Any, ...] = ()
    window: Window | None = None

    @property
    def key(self) -> tuple[object, ...]:
        """What identifies the scope in what is kept between searches."""
        return (self.shards, self.where,
                tuple(tuple(a) if isinstance(a, list) else a for a in self.args))

    def kept(self, alias: str) -> tuple[str, str, list[Any]]:
        """``(join, where, args)`` that keep the rows ``alias`` passing ``where``.

        Joined to ``memory_docs``; in a short window, its ids as a hashed set made once
        per condition (joined, the planner read the whole window again for each row, by
        its index of sessions and times).
        """
        if not self.where:
            return "", "", []
        if self.window is None:
            return f" JOIN memory_docs d ON d.id = {alias}.ref", self.where, list(self.args)
        return ("", f" AND CASE WHEN {alias}.ref IN (SELECT unnest(%s::bigint[]))"
                " THEN TRUE END", [list(self.window.ids)])

    def conditions(self) -> tuple[str, str, list[Any]]:
        """``(join, where, args)`` that keep the rows ``x`` of the scope."""
        join, where, args = self.kept("x")
        short = self.window
        bounds, bound_args = posting_bounds(
            "x", self.shards, None if short is None else (short.first, short.last))
        return join, bounds + where, [*bound_args, *args]


_KEPT_SCOPES = 1_024  # scopes whose common terms are kept at most
# Sessions up to which a term is counted per doclist (a place search in its sessions'
# array each); a wider scope counts its postings (see _counted).
_SHARDS_COUNTED = 4


class Commons:
    """Terms found common in each scope, kept while the store's erasures stay as they were.

    A scope's entries are only added until something is deleted (every deletion is an
    erasure), so a term held by more than ``RARE`` of them stays so. Nothing read inside
    a write transaction is kept (it may roll back).
    """

    def __init__(self) -> None:
        self._kept: dict[tuple[object, ...], tuple[int, frozenset[str]]] = {}
        self._lock = threading.Lock()

    def known(self, scope: PostingScope) -> tuple[int, frozenset[str]]:
        """``(erasures then, parts)``: the parts known common in ``scope`` (-1: none)."""
        return self._kept.get(scope.key, (-1, frozenset()))

    def keep(
        self, db: Connection, scope: PostingScope, erasures: int, parts: Iterable[str],
    ) -> None:
        """Remember ``parts`` as common in ``scope`` while the erasures are ``erasures``."""
        if db.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            return
        with self._lock:
            if len(self._kept) >= _KEPT_SCOPES:
                self._kept.clear()
            self._kept[scope.key] = (erasures, frozenset(parts))


def _holding(
    table: KeywordTable, phrase: Phrase, scope: PostingScope, bounds: str = "",
    bound_args: Sequence[Any] = (),
) -> tuple[str, list[Any]]:
    """``SELECT x.ref`` of the scope's rows holding ``phrase``, and its arguments.

    ``bounds``: more conditions on ``x.ref`` (with ``bound_args``). A term (or a
    prefix's terms) is read in the postings' key, a phrase of several terms from its
    first term's postings and the rows' terms in order (:meth:`KeywordTable.holding`).
    """
    join, where, args = scope.conditions()
    rest = [*bound_args, *args]
    postings = table.postings_of("shard")  # a scope reads each posting's session only
    if len(phrase.terms) > 1:
        holds, more = table.holding(phrase, "x")
        return (f"SELECT x.ref FROM {postings} x{join} WHERE {holds}{bounds}{where}",
                [*more, *rest])
    term = phrase.terms[0]
    if phrase.prefix:
        return (f"SELECT DISTINCT x.ref FROM {postings} x{join} WHERE x.term BETWEEN"
                f" %s AND %s{bounds}{where}", [*_range(phrase), *rest])
    return (f"SELECT x.ref FROM {postings} x{join} WHERE x.term = %s{bounds}{where}",
            [term, *rest])


def _phrase(table: KeywordTable, part: str) -> Phrase | None:
    """The phrase of one ``MATCH`` part (None: it has no term, and matches nothing)."""
    found = phrases(part, table.spec)
    return found[0] if found else None


def window(
    db: Connection, sessions: Sequence[int], where: str, args: Sequence[Any],
) -> Window | None:
    """The entries of a time window of ``sessions``, when it is short.

    ``where`` and ``args``: its conditions on ``memory_docs d`` (each starting with
    `` AND``). None when it holds more than ``WINDOW_MAX`` entries (reading stops
    there, on the index of sessions and times); no entries when it holds none.
    """
    row = db.execute("SELECT count(*), min(w.id), max(w.id), array_agg(w.id) FROM"
                     f" (SELECT d.id FROM memory_docs d WHERE d.session_id = ANY(%s){where}"
                     " LIMIT %s) w", [list(sessions), *args, WINDOW_MAX + 1]).fetchone()
    assert row is not None
    entries = int(row[0])
    if entries > WINDOW_MAX:
        return None
    if entries == 0:
        return Window(0, 0, 0, ())
    return Window(entries, int(row[1]), int(row[2]), tuple(int(i) for i in row[3]))


class Split(NamedTuple):
    """A search's terms split (:func:`split`), and what BM25 needs of the counts read.

    ``size``: the index's newest row; ``counted``: the table's rows and terms and the
    rows holding each one-term part (None: not read).
    """

    size: int
    rare: list[str]
    common: list[str]
    counted: Counted | None = None


def split(
    db: Connection, table: KeywordTable, parts: Sequence[str], scope: PostingScope,
    commons: Commons,
) -> Split:
    """``parts`` split as SQLite splits them, with the index's newest row.

    One statement (two after a deletion made what was kept wrong): each part's entries
    in the scope, counted up to ``RARE + 1``, but for the parts ``commons`` knows to be
    common; with them, what the ranking's BM25 needs (:class:`Split`), read in the same
    doclists. A part is rare when at most ``RARE`` entries hold it; the rarest are taken
    while they are at most ``TERMS_MAX`` and their postings at most ``POSTINGS_MAX`` (all
    of them, in their text's order, when they fit); common ones after the rare ones left
    out, in their text's order. In a short window (``scope.window``) no part is in more
    than its entries, so when they are at most ``RARE`` and the limits cannot leave a
    part out, nothing is counted (``size`` is then the window's last entry: none of the
    scope is newer).
    """
    short = scope.window
    if (short is not None and short.entries <= RARE and len(parts) <= TERMS_MAX
            and short.entries * len(parts) <= POSTINGS_MAX):
        return Split(short.last, sorted(parts), [])
    then, known = commons.known(scope)
    size, erasures, counts, counted = _counts(db, table, parts, scope, known)
    if erasures != then and known & set(parts):
        size, erasures, counts, counted = _counts(db, table, parts, scope, frozenset())
    commons.keep(db, scope, erasures, [p for p, n in counts.items() if n > RARE]
                 + ([] if erasures != then else [p for p in known if p not in counts]))
    eligible = sorted(part for part in parts if counts[part] <= RARE)
    left: list[str] = []
    rare = eligible
    if len(eligible) > TERMS_MAX or sum(counts[p] for p in eligible) > POSTINGS_MAX:
        rare, left = rarest(sorted((counts[part], part) for part in eligible))
    return Split(size, rare, left + sorted(part for part in parts if part not in eligible),
                 counted)


def _counts(
    db: Connection, table: KeywordTable, parts: Sequence[str], scope: PostingScope,
    known: frozenset[str],
) -> tuple[int, int, dict[str, int], Counted]:
    """``(size, erasures, counts, counted)`` in one statement.

    The index's newest row, the store's erasures, and each part's entries in the scope
    counted up to ``RARE + 1`` (``known`` ones are not counted: that); the table's rows
    and terms, and the rows holding each counted part of one term (:class:`Counted`).
    """
    columns = [f"(SELECT COALESCE(max(ref), 0) FROM {table.name})",
               "(SELECT count(*) FROM memci_erasures)",
               "(SELECT ARRAY[COALESCE(SUM(docs), 0), COALESCE(SUM(tokens), 0)]"
               " FROM keyword_stats WHERE tab = %s)"]
    args: list[Any] = [table.name]
    counted: list[tuple[str, Phrase]] = []
    for part in parts:
        phrase = _phrase(table, part)
        if phrase is None or part in known:
            continue
        column, more = _counted(table, phrase, scope)
        columns.append(column)
        args += more
        counted.append((part, phrase))
    row = db.execute(f"SELECT {', '.join(columns)}", args).fetchone()
    assert row is not None
    read = list(zip(counted, row[3:], strict=True))
    counts = {part: int(n[0]) for (part, _), n in read}
    counts.update((part, 0 if part not in known else RARE + 1)
                  for part in parts if part not in counts)
    holding = {_range(phrase): int(n[1]) for (_, phrase), n in read
               if n[1] is not None and len(phrase.terms) == 1}
    # A phrase's rows come after its two counts when it is rare in the scope.
    found = {phrase: (int(n[1]), tuple(int(r) for r in n[2:])) for (_, phrase), n in read
             if len(phrase.terms) > 1 and n[1] is not None and n[0] <= RARE}
    return int(row[0]), int(row[1]), counts, Counted(int(row[2][0]), int(row[2][1]), holding,
                                                     found)


def _counted(
    table: KeywordTable, phrase: Phrase, scope: PostingScope,
) -> tuple[str, list[Any]]:
    """A column of two counts of the rows holding ``phrase``, and its args.

    The scope's, up to ``RARE + 1``; the whole table's, for BM25's IDF (NULL for a
    phrase of several terms). One term in sessions alone is counted per doclist (its
    sessions' places in the doclist's ``shards``, found in C) rather than per posting
    (each unnested, then counted): the counts of a search's terms took a tenth of it. A
    prefix in sessions alone is counted once per row holding it, in the scope or not.
    Both counts read the term's (or the prefix's) doclists once. A phrase of several
    terms in sessions alone is found once (:func:`_phrase_counted`).
    """
    shards = sorted(set(scope.shards or ()))  # each session's postings counted once
    whole = "cardinality(x.refs)"
    if phrase.prefix and len(phrase.terms) == 1 and not scope.where:
        return _prefix_counted(table, phrase, scope)
    if len(phrase.terms) > 1 and not scope.where:
        return _phrase_counted(table, phrase, scope)
    if len(phrase.terms) > 1 or phrase.prefix or scope.where or len(shards) > _SHARDS_COUNTED:
        rows, more = _holding(table, phrase, scope)
        table_wide, extra = "NULL::bigint", []
        if len(phrase.terms) == 1 and not phrase.prefix:
            table_wide = (f"(SELECT COALESCE(sum({whole}), 0) FROM {table.doclists} x"
                          " WHERE x.term = %s)")
            extra = [phrase.terms[0]]
        return (f"ARRAY[(SELECT count(*) FROM ({rows} LIMIT %s) s), {table_wide}]",
                [*more, RARE + 1, *extra])
    held = (" + ".join("cardinality(array_positions(x.shards, %s::bigint))" for _ in shards)
            or "0" if scope.shards is not None else whole)
    return (f"(SELECT ARRAY[least(%s, COALESCE(sum({held}), 0)), COALESCE(sum({whole}), 0)]"
            f" FROM {table.doclists} x WHERE x.term = %s)", [RARE + 1, *shards, phrase.terms[0]])


def _prefix_counted(
    table: KeywordTable, phrase: Phrase, scope: PostingScope,
) -> tuple[str, list[Any]]:
    """:func:`_counted` of a prefix: the rows holding a term it starts, grouped once.

    Both counts from one pass over the prefix's postings: counted apart, each sorted
    them all (a distinct count stops at no limit), and the ranking a third time.
    """
    lo, hi = _range(phrase)
    held, args = ("TRUE", []) if scope.shards is None else (
        "bool_or(x.shard = ANY(%s))", [list(scope.shards)])
    return (f"(SELECT ARRAY[least(%s, count(*) FILTER (WHERE s.held)), count(*)] FROM"
            f" (SELECT x.ref, {held} AS held FROM {table.postings_of('shard')} x"
            " WHERE x.term BETWEEN %s AND %s GROUP BY x.ref) s)", [RARE + 1, *args, lo, hi])


def _phrase_counted(
    table: KeywordTable, phrase: Phrase, scope: PostingScope,
) -> tuple[str, list[Any]]:
    """:func:`_counted` of a phrase of several terms, and its rows in the scope when rare.

    ``[scope's rows up to RARE + 1, table's rows, the scope's rows…]``: the table's
    count and the rows only when it is rare in the scope (NULL and none otherwise), the
    table's count read in the scope's rows when the scope holds every row of the table
    (its sessions' rows in ``keyword_stats`` are all of them, one snapshot). The ranking
    takes them (:class:`Counted`): counted in the scope, counted in the table and found
    again to be scored, a phone number's ``"010-8"`` was three passes over its first
    term's 4,000 postings, each row's terms checked, the slowest search.
    """
    rows, more = _holding(table, phrase, scope)
    everywhere, everywhere_args = _holding(table, phrase, PostingScope())
    whole: tuple[str, list[Any]] = ("TRUE", []) if scope.shards is None else (
        "(SELECT sum(docs) FROM keyword_stats WHERE tab = %s AND shard = ANY(%s))"
        " IS NOT DISTINCT FROM (SELECT sum(docs) FROM keyword_stats WHERE tab = %s)",
        [table.name, list(scope.shards), table.name])
    return (f"(SELECT ARRAY[count(*), CASE WHEN count(*) > %s THEN NULL WHEN {whole[0]}"
            f" THEN count(*) ELSE (SELECT count(*) FROM ({everywhere}) w) END] ||"
            " CASE WHEN count(*) <= %s THEN COALESCE(array_agg(s.ref), '{}') ELSE '{}' END"
            f" FROM ({rows} LIMIT %s) s)",
            [RARE, *whole[1], *everywhere_args, RARE, *more, RARE + 1])


def _range(phrase: Phrase) -> tuple[str, str]:
    """The stored terms a one-term phrase matches, as a range: itself, or its prefix's."""
    term = phrase.terms[0]
    return (term, term + _LAST_CHAR) if phrase.prefix else (term, term)


# A common term's postings among the window's entries: its doclists of the window's
# batches only (an entry's postings are in its own batch's doclists), keys of the
# doclists' index, then the entries' range (both read of the window once, in ``b``).
# Reading every doclist of the term and keeping the window's postings unnested 7,000
# postings a term for 1,400 in a Chinese session of 10,000 messages.
_IN_WINDOW = (" AND x.batch = ANY((SELECT keys FROM b)::bigint[])"
              " AND x.ref >= (SELECT low FROM b) AND x.ref <= %s")


def newest(
    db: Connection, table: KeywordTable, parts: Sequence[str], scope: PostingScope, k: int,
    top: int,
) -> list[tuple[float, int]]:
    """Up to ``COMMON_MAX`` common ``parts`` among the scope's newest entries up to ``top``.

    Ranked as SQLite ranks them (:func:`~memci.store._search.best_by_terms`): the
    newest ``RECENT`` entries of the scope are the window; an entry scores the sum of its
    terms' weights there (``ln(1 + n / entries holding it)``, ``n`` the window's
    entries); newer first at a tie. One statement, which reads of each term the doclists
    of the window's batches only (:data:`_IN_WINDOW`).
    """
    join, where, args = scope.conditions()
    window = (f"WITH w AS MATERIALIZED (SELECT x.ref, x.batch FROM {table.name} x{join}"
              f" WHERE x.ref <= %s{where} ORDER BY x.ref DESC LIMIT %s),"
              " b AS MATERIALIZED (SELECT array_agg(DISTINCT batch) AS keys, min(ref) AS low"
              " FROM w)")
    params: list[Any] = [top, *args, RECENT]
    columns = ["(SELECT count(*) FROM w)"]
    for part in parts[:COMMON_MAX]:
        phrase = _phrase(table, part)
        if phrase is None:
            continue
        rows, more = _holding(table, phrase, scope, _IN_WINDOW, (top,))
        columns.append(f"ARRAY({rows})")
        params += more
    row = db.execute(f"{window} SELECT {', '.join(columns)}", params).fetchone()
    assert row is not None
    n = int(row[0])
    terms = [(math.log(1 + n / len(docs)), {int(d) for d in docs}) for docs in row[1:] if docs]
    return best_by_terms(terms, k)
