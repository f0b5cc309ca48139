"""Keyword tables of the PostgreSQL store: memci's analyzer terms, FTS5's BM25, in SQL.

SQLite keeps keyword text in FTS5 tables and ranks with FTS5's ``bm25()``; this module is
the same thing with no extension, so it runs on managed PostgreSQL. One derived table per
searched base table and analyzer (``<base>_<analyzer>``, made on first use like SQLite's
FTS5 tables, see :meth:`~memci.store.postgres.PostgresStore.derive`):

- ``ref`` (the row it indexes), ``shard`` (what its statistics are counted under),
  ``tokens`` (how many terms the row has, as FTS5 counts them), ``batch`` (the key of
  its doclists), ``seq`` (its terms in order, a NULL between two columns: a term's
  place is its position, so a phrase never spans two columns; phrases are found there,
  and a deletion reads which doclists to rewrite from it) and, for the trigram
  analyzer, ``body`` (the first column's text, which terms too short for trigrams are
  matched in, as SQLite does with ``instr``);
- its doclists, ``<table>_postings``: one row per term and batch (the rows one
  :meth:`KeywordTable.put_many` indexes, up to ``_DOCLIST_ROWS``; ``batch`` is the
  first one's ref), the rows holding the term as arrays (``refs``, their ``shards`` and
  ``tokens``, the hits in each column ``a`` … ``d``), keyed by ``(term, batch)``, like
  FTS5's segment doclists: a batch writes a row per term, not one per term and row.
  Read as postings (:meth:`KeywordTable.postings_of`: the arrays unnested), a term's (or a
  prefix's) are one range of the key;
- ``keyword_stats`` keeps rows and terms per table and shard (a shard per session for
  messages), so writers of different sessions never wait on one counter, and the
  average length BM25 needs is one small sum.

A row's columns come as text: the table documents them with its analyzer
(:meth:`~memci.text.Analyzer.document`) and cuts the terms by
:mod:`memci.store.postgres._terms` exactly as SQLite's FTS5 tokenizer cuts them, counted
per row (``collections.Counter``) into the batch's doclists, written as one ``COPY``.
With the ``bigram`` and ``jieba`` analyzers a text's terms are its lines' terms in
order (:class:`_Terms`), so a batch documents and cuts each distinct line once: a
message's context is the tail of the messages before it, and was cut again in the
context of each message after it.

:meth:`KeywordTable.rank` computes FTS5's BM25 (k1 = 1.2, b = 0.75, IDF
``ln((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, column weights applied to the hits)
in the database from the postings, in one statement (how many rows hold each phrase,
their IDF, the scores); or, pruned (documents), first the counts, then the most common
terms looked up only for the rows the rarer ones found, unless that could miss a better
row. A phrase of several terms (``"get_weather"``) is counted where its terms stand next
to each other in one column: the rows holding it are found in SQL
(:meth:`KeywordTable.holding`: its first term's postings, then the next terms at the
following places of the row's ``seq``), its hits counted from ``seq``, in Python. Both
backends rank alike. A term of more than 2,000 bytes is kept as its hash (a key of the
doclists' index has a size limit). Scores are rounded to 12 decimals, so rows that tie
rank by ref whatever order PostgreSQL summed their terms in.

A store made before the doclists (a posting per term and row, with its positions) gets
them in the ``postgres`` migration 4: each posting a doclist of its own row, each row's
``seq`` from its postings' positions; a store made before the positions gets those in
migration 3 first.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import nullcontext
from itertools import chain, count, repeat
from typing import Any

import psycopg

from memci._dataclasses import dataclass, field
from memci._lazy import compile_pattern
from memci.store.postgres._db import Connection, Database
from memci.text import Analyzer, BigramAnalyzer, JiebaAnalyzer
from memci.text._terms import PORTER, TRIGRAM, tokenizer

__all__ = [
    "Carry",
    "Counted",
    "KeywordTable",
    "Phrase",
    "forget_keywords",
    "keyword_tables",
    "phrases",
    "posting_bounds",
]

_K1 = 1.2
_B = 0.75
_MAX_LEXEME_BYTES = 2000
_WEIGHTS = "ABCD"
_MAX_COLUMNS = len(_WEIGHTS)  # columns a keyword row may have (a hit count each)
_COPY_FROM = 200  # rows from which a batch goes by COPY (two round trips, far less work)
# A keyword table is settled (vacuumed and analyzed) as it doubles from _ANALYZE_FROM
# rows until it has had _ANALYZE_UNTIL: past that, what a batch adds is a small share that
# autovacuum soon covers, and a vacuum in the writer's request would take seconds.
_ANALYZE_FROM = 1_000
_ANALYZE_UNTIL = 32_000
# Rows a batch's doclists cover at most (a larger batch writes several): a deletion
# rewrites the doclists of its row's batch, so they stay small.
_DOCLIST_ROWS = 256
# Characters of COPY lines sent at a time (see _write_doclists).
_COPY_PART = 16_384
# The longest keyword row kept uncompressed in its page (the most PostgreSQL allows).
_WHOLE_ROW_BYTES = 8160
_ROW_COLUMNS = (("ref", "bigint"), ("shard", "bigint"), ("tokens", "bigint"),
                ("batch", "bigint"), ("seq", "text[]"), ("body", "text"))
_POSTING_COLUMNS = (("term", "text"), ("batch", "bigint"), ("refs", "bigint[]"),
                    ("shards", "bigint[]"), ("tokens", "bigint[]"),
                    *((w.lower(), "integer[]") for w in _WEIGHTS))
# A doclist's postings, one row per row holding its term (a column's array is empty when
# no row of the doclist has the term there: its hits are 0). Read as a table of
# postings: a condition on ``term`` (and ``batch``) is one range of the doclists' key.
# The arrays are unnested side by side in the select list (a ProjectSet; a LATERAL
# unnest filled a tuplestore per doclist: a search's hits took 60 % longer), only the
# ones a statement reads (an unused one is unnested all the same: counting a term's
# rows of a session unnested nine arrays for two).
_ARRAYS = {"ref": "refs", "shard": "shards", "tokens": "tokens",
           **{w.lower(): w.lower() for w in _WEIGHTS}}


def _expanded(doclists: str, columns: Sequence[str]) -> str:
    """The doclists as postings (``term``, ``batch``, ``ref`` and ``columns``), for a FROM."""
    wanted = ["ref", *(c for c in columns if c != "ref")]
    inner = ", ".join(f"unnest(p.{_ARRAYS[c]}) AS {c}" for c in wanted)
    outer = ", ".join(f"u.{c}" if c in ("ref", "shard", "tokens") else f"COALESCE(u.{c}, 0) AS {c}"
                      for c in wanted)
    return (f"(SELECT u.term, u.batch, {outer} FROM (SELECT p.term, p.batch, {inner}"
            f" FROM {doclists} p) u)")
_QUOTED = compile_pattern(r'"((?:[^"]|"")*)"(\*?)')


def _lexeme(term: str) -> str:
    # A character is at most 4 bytes: most terms need no encoding to know they fit.
    if len(term) * 4 > _MAX_LEXEME_BYTES and len(term.encode("utf-8")) > _MAX_LEXEME_BYTES:
        return "#" + hashlib.sha256(term.encode("utf-8")).hexdigest()
    return term


@dataclass(frozen=True, slots=True)
class Phrase:
    """One quoted term of a query: its terms in order, the last one a prefix or not."""

    terms: tuple[str, ...]
    prefix: bool = False


def phrases(match: str, spec: str) -> list[Phrase]:
    """The phrases of an analyzer's ``MATCH`` text (``"a" OR "b"*``), cut as ``spec`` cuts.

    A phrase with no term (only separators) matches nothing and is left out, as in FTS5.
    """
    cut = tokenizer(spec)
    out: list[Phrase] = []
    for found in _QUOTED.finditer(match):
        terms = tuple(_lexeme(t) for t in cut(found.group(1).replace('""', '"')))
        if terms:
            out.append(Phrase(terms, bool(found.group(2))))
    return out


#: A term of a query as ranked: its phrase's index, its range of stored terms (one term,
#: or all that start with a prefix) and its IDF.
_Term = tuple[int, str, str, float]

# A term held by more than this share of the rows is common: its postings are read only
# for the rows the rarer terms found (see KeywordTable.rank).
_COMMON_SHARE = 0.05
_LAST_CHAR = "\U0010ffff"

# The table's rows and terms (keyword_stats) and how many rows hold each phrase (a range
# of the postings' primary key: one term, or every term with a prefix).
_PHRASE_ROWS = (
    "SELECT s.docs, s.tokens, ARRAY(SELECT CASE WHEN q.lo = q.hi"
    " THEN (SELECT COALESCE(sum(cardinality(p.refs)), 0) FROM {doclists} p WHERE p.term = q.lo)"
    " ELSE (SELECT count(DISTINCT p.ref) FROM {refs} p WHERE p.term BETWEEN q.lo AND q.hi)"
    " END FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS q(lo, hi, i) ORDER BY q.i)"
    " FROM (SELECT COALESCE(SUM(docs), 0) AS docs, COALESCE(SUM(tokens), 0) AS tokens"
    " FROM keyword_stats WHERE tab = %s) s")

# FTS5's BM25 of the rows holding an essential term (e), within the caller's shards
# ({shards}) and filter ({join}, {where}; the found rows are named k), plus what the
# common terms (c) add to those rows ({common}: _COMMON, when there are some); the best
# first, ties to the smaller row. Each term carries the constants (t: its IDF, the
# weights, BM25's k1 and b, the average row), so a posting is scored where it is read
# ({hits}), joined to nothing: a join per posting with the one row of v cost a search
# as much as reading the postings. A found row keeps its batch and length ({kept}) only
# for the common terms' lookup.
_SCORE = (
    "WITH {terms},"
    " t AS MATERIALIZED (SELECT e.i, e.lo, e.hi, e.idf, v.* FROM e CROSS JOIN v),"
    " c AS (SELECT * FROM unnest(%s::int[], %s::text[], %s::float8[]) AS c(i, term, idf)),"
    " hits AS ({hits}),"
    " found AS (SELECT h.ref,{kept} sum(h.score) AS score FROM hits h GROUP BY h.ref),"
    " {best}")
# The best rows found, narrowed by the caller's filter ({join}, {where}) first…
# Rounded: the order PostgreSQL sums a row's terms in may change with its plan, and the
# last bits of a sum with it; scores equal to 12 digits are ties (smaller row). (In
# floating point: a numeric per row cost more than the rest of the ranking.)
_FILTERED_FIRST = (
    "scored AS (SELECT k.ref, k.score{common} AS score"
    " FROM found k{join}{v} WHERE TRUE{where})"
    " SELECT round(score * 1e12) / 1e12 AS score, ref FROM scored"
    " ORDER BY round(score * 1e12) DESC, ref LIMIT %s")
# … or, with a filter that keeps most rows and no common terms, best first through the
# filter until ``limit`` rows pass (a nested loop keeps its outer rows' order: the
# filter's table is read for the rows above the last one kept, not for every row found:
# an items search read 1,500 items to keep 50 of them, half its time). A filter that
# keeps few (a time range) is applied first: best first would sort every row found and
# read them all.
_BEST_FIRST = (
    "ordered AS (SELECT f.ref, round(f.score * 1e12) AS key FROM found f"
    " ORDER BY 2 DESC, 1 OFFSET 0)"
    " SELECT k.key / 1e12 AS score, k.ref FROM ordered k{join} WHERE TRUE{where}"
    " ORDER BY k.key DESC, k.ref LIMIT %s")
# The same best rows with columns of the rows they index (x), in the same order.
_CARRIED = ("SELECT r.score, r.ref, {columns} FROM ({ranked}) r JOIN {indexes} x ON x.id = r.ref"
            " ORDER BY round(r.score * 1e12) DESC, r.ref")

# What the common terms (c) add to a found row k: each term's doclist of the row's batch
# (one lookup in the key: LATERAL, OFFSET 0, or the planner read every doclist of the
# batch for each row, 7 ms a row), the row's place in it.
_KEPT = " max(h.batch) AS batch, max(h.tokens) AS tokens,"
_COMMON = (
    " + COALESCE((SELECT sum(CASE WHEN x.w > 0 THEN"
    " x.idf * x.w * (v.k1 + 1) / (x.w + v.k1 * (1 - v.b + v.b * k.tokens / v.avg))"
    " ELSE 0 END) FROM (SELECT c.idf, COALESCE(p.a[p.at], 0) * v.wa"
    " + COALESCE(p.b[p.at], 0) * v.wb + COALESCE(p.c[p.at], 0) * v.wc"
    " + COALESCE(p.d[p.at], 0) * v.wd AS w FROM c CROSS JOIN LATERAL (SELECT p.a, p.b, p.c,"
    " p.d, array_position(p.refs, k.ref) AS at FROM {doclists} p WHERE p.term = c.term"
    " AND p.batch = k.batch OFFSET 0) p WHERE p.at IS NOT NULL) x), 0)")

# FTS5's BM25 of one term's weighed hits ``w`` in a row of ``tokens`` terms (a match
# only in columns weighed 0 scores 0), with the term's constants (t).
_BM25 = ("CASE WHEN {w} > 0 THEN"
         " t.idf * {w} * (t.k1 + 1) / ({w} + t.k1 * (1 - t.b + t.b * {tokens} / t.avg))"
         " ELSE 0 END")

# The score of each term in each row holding it (one posting; a prefix's, from the sum
# of its terms' hits in the row), read per term from the postings' key (LATERAL, and
# OFFSET 0 so the planner keeps it a lookup per term: flattened into a join, a prefix's
# range was planned as a scan of every posting, 1 s at 10,000 messages); only the kinds
# the query has. The postings are read with only the arrays the ranking uses
# ({postings}: each array read is unnested per posting; the hits of a column weighed 0
# are not read), {w} is their weighed hits.
_EXACT_HITS = (
    "SELECT p.ref, p.batch, p.tokens, " + _BM25.format(w="p.w", tokens="p.tokens")
    + " AS score FROM t CROSS JOIN LATERAL (SELECT p.ref, p.batch, p.tokens, {w} AS w"
    " FROM {postings} p WHERE p.term = t.lo{shards} OFFSET 0) p WHERE t.lo = t.hi")
_PREFIX_HITS = (
    "SELECT g.ref, g.batch, g.tokens, " + _BM25.format(w="g.w", tokens="g.tokens")
    + " AS score FROM (SELECT t.i, p.ref, max(p.batch) AS batch, max(p.tokens) AS tokens,"
    " sum({w}) AS w FROM t CROSS JOIN LATERAL"
    " (SELECT * FROM {postings} p WHERE p.term BETWEEN t.lo AND t.hi{shards} OFFSET 0) p"
    " WHERE t.lo < t.hi GROUP BY t.i, p.ref) g JOIN t ON t.i = g.i")

# The weights, BM25's constants and the average row (v), and each term's range and IDF
# (e), as the caller counted them (see KeywordTable.rank)…
_GIVEN_TERMS = (
    "v AS (SELECT %s::float8 AS wa, %s::float8 AS wb, %s::float8 AS wc,"
    " %s::float8 AS wd, %s::float8 AS k1, %s::float8 AS b, %s::float8 AS avg),"
    " e AS (SELECT * FROM unnest(%s::int[], %s::text[], %s::text[], %s::float8[])"
    " AS e(i, lo, hi, idf))")
# … or counted in the same statement: the table's rows and terms (keyword_stats), the
# rows holding each term (or prefix), FTS5's IDF of them (as _idf computes it).
_COUNTED_TERMS = (
    "s AS (SELECT COALESCE(SUM(docs), 0)::float8 AS n, COALESCE(SUM(tokens), 0)::float8"
    " AS t FROM keyword_stats WHERE tab = %s),"
    " v AS (SELECT %s::float8 AS wa, %s::float8 AS wb, %s::float8 AS wc, %s::float8 AS wd,"
    " %s::float8 AS k1, %s::float8 AS b, CASE WHEN s.n > 0 THEN s.t / s.n ELSE 1 END AS avg"
    " FROM s),"
    " q AS (SELECT * FROM unnest(%s::int[], %s::text[], %s::text[]) AS q(i, lo, hi)),"
    " h AS MATERIALIZED (SELECT q.*, least(s.n, CASE WHEN q.lo = q.hi"
    " THEN (SELECT COALESCE(sum(cardinality(p.refs)), 0) FROM {doclists} p WHERE p.term = q.lo)"
    " ELSE (SELECT count(DISTINCT p.ref) FROM {refs} p WHERE p.term BETWEEN q.lo AND q.hi)"
    " END) AS having, s.n FROM q CROSS JOIN s),"
    " f AS (SELECT h.i, h.lo, h.hi, CASE WHEN h.n > 0"
    " THEN ln((h.n - h.having + 0.5) / (h.having + 0.5)) ELSE 0 END AS idf FROM h),"
    # Materialized: inlined, each posting computed its term's IDF again (twice).
    " e AS MATERIALIZED (SELECT f.i, f.lo, f.hi,"
    " CASE WHEN f.idf > 0 THEN f.idf ELSE 1e-6 END AS idf"
    " FROM f)")


def _bounds(phrase: Phrase) -> tuple[str, str]:
    """The range of stored terms a one-term phrase matches: itself, or its prefix's."""
    term = phrase.terms[0]
    return (term, term + _LAST_CHAR) if phrase.prefix else (term, term)


def _idf(total: int, having: int) -> float:
    """FTS5's IDF of a phrase ``having`` of ``total`` rows hold (floored at 1e-6)."""
    idf = math.log((total - having + 0.5) / (having + 0.5)) if total else 0.0
    return idf if idf > 0 else 1e-6


def _split(
    terms: Sequence[_Term], having: Sequence[int], total: int,
) -> tuple[list[_Term], list[_Term]]:
    """The essential terms and the common ones (exact terms in many rows; never all)."""
    common = [t for t, n in zip(terms, having, strict=True)
              if t[1] == t[2] and n > _COMMON_SHARE * total]
    if len(common) == len(terms):
        return list(terms), []
    return [t for t in terms if t not in common], common


@dataclass(frozen=True, slots=True)
class Counted:
    """The table's rows and terms, and how many rows hold each term, as a caller read them.

    ``holding``: by range of stored terms (a term: itself twice; a prefix: its first and
    last term). A ranking given them does not count them again (each term's doclists
    read once more, in the ranking's statement). ``phrases``: of a phrase of several
    terms, the table's rows holding it and those of the caller's scope (a superset of
    the rows the ranking keeps): the ranking neither counts nor finds it again (each
    a pass over its first term's postings, checking every row's terms in order).
    """

    rows: int
    tokens: int
    holding: Mapping[tuple[str, str], int]
    phrases: Mapping[Phrase, tuple[int, tuple[int, ...]]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Carry:
    """Columns of the indexed table a ranking reads with its best rows (``rows``: by ref).

    Read in the ranking's statement: a search needs no statement of its own to look up
    what it found. Rows ranked in Python (phrases of several terms) are not in ``rows``.
    """

    columns: tuple[str, ...]
    rows: dict[int, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Filters:
    """What narrows a ranking (a join and conditions on the found rows ``k``, shards).

    ``refs``: a range of rows holding every row the filter keeps (None: no bound), read
    in the postings as they are unnested, before they are summed. And what it carries
    (:class:`Carry`).
    """

    join: str
    where: str
    args: Sequence[Any]
    shards: Sequence[int] | None
    carry: Carry | None = None
    keeps_most: bool = False
    refs: tuple[int, int] | None = None

    def postings(self, alias: str) -> tuple[str, list[Any]]:
        """:func:`posting_bounds` of its sessions and range of rows."""
        return posting_bounds(alias, self.shards, self.refs)


def posting_bounds(alias: str, shards: Sequence[int] | None,
                   refs: tuple[int, int] | None) -> tuple[str, list[Any]]:
    """Conditions (each starting with `` AND``) on the postings ``alias``, and args.

    Its sessions, and its range of rows ``(first, last)``: a doclist's ``batch`` is its
    first row, so none after the range's last is read.
    """
    sql, args = "", list[Any]()
    if shards is not None:
        sql, args = f" AND {alias}.shard = ANY(%s)", [list(shards)]
    if refs is not None:
        sql += f" AND {alias}.batch <= %s AND {alias}.ref BETWEEN %s AND %s"
        args += [refs[1], *refs]
    return sql, args


def _weights(weights: Sequence[float]) -> list[float]:
    """A weight per column (a column not given weighs 0)."""
    return [*weights, 0.0, 0.0, 0.0, 0.0][:len(_WEIGHTS)]


def _given(terms: Sequence[_Term], weights: Sequence[float], avg: float) -> list[Any]:
    """The arguments of :data:`_GIVEN_TERMS`."""
    return [*_weights(weights), _K1, _B, avg, [t[0] for t in terms], [t[1] for t in terms],
            [t[2] for t in terms], [t[3] for t in terms]]


def _stored(terms: list[str]) -> list[str]:
    """``terms`` as stored (:func:`_lexeme`): most rows have none too long to keep."""
    if max(map(len, terms), default=0) * 4 <= _MAX_LEXEME_BYTES:
        return terms
    return [_lexeme(t) for t in terms]


# The analyzers whose document of a text is its lines' documents joined by newlines (each
# rewrites runs of CJK characters only, and a newline is none): with unicode61, which
# cuts at a newline, a text's terms are its lines' terms in order. Their exact types: a
# subclass may document otherwise.
_BY_LINE = (BigramAnalyzer, JiebaAnalyzer)


class _Terms:
    """Texts to their stored terms, as an analyzer documents them and FTS5 cuts them.

    For one batch (a table's ``put_many``). ``by_line``: each distinct line is
    documented and cut once and a text's terms are its lines' (see :data:`_BY_LINE`);
    the lists returned are shared between texts and never changed.
    """

    __slots__ = ("_by_line", "_cut", "_document", "_lines")

    def __init__(self, document: Callable[[str], str], cut: Callable[[str], list[str]],
                 by_line: bool) -> None:
        self._document, self._cut, self._by_line = document, cut, by_line
        self._lines: dict[str, list[str]] = {}

    def __call__(self, text: str) -> list[str]:
        """The stored terms of ``text`` (:func:`_stored`), in order."""
        if not self._by_line:
            return _stored(self._cut(self._document(text)))
        if "\n" not in text:
            return self._line(text)
        return list(chain.from_iterable(map(self._line, text.split("\n"))))

    def _line(self, line: str) -> list[str]:
        terms = self._lines.get(line)
        if terms is None:
            terms = self._lines[line] = _stored(self._cut(self._document(line)))
        return terms


# What an array's text escapes in a quoted element.
_ARRAY_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"'})


def _sequence(columns: Sequence[list[str]], plain: bool) -> str:
    """The ``text[]`` text of a row's terms in order, a NULL between two columns.

    A term's place in it (from 1) is its position: a phrase never spans two columns.
    ``plain``: no term has a character to escape.
    """
    parts: list[str] = []
    for column, terms in enumerate(columns):
        if column:
            parts.append("NULL")
        if terms:
            quoted = terms if plain else [t.translate(_ARRAY_ESCAPES) for t in terms]
            parts.append('"' + '","'.join(quoted) + '"')
    return "{" + ",".join(parts) + "}"


# What COPY's text format escapes in a value.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


class _Numerals(dict[int, str]):
    """Each number's decimal text, made once.

    Hit counts are a few small numbers met thousands of times a batch: ``str`` of each
    cost more than a dictionary lookup.
    """

    def __missing__(self, number: int) -> str:
        text = self[number] = str(number)
        return text


_NUMERALS = _Numerals()


@dataclass(frozen=True, slots=True)
class _Postings:
    """A batch's postings, one per term and row holding it, as columns.

    ``terms[i]`` is posting i's term, ``rows[i]`` its row (index in the batch), and
    ``hits[c][i]`` its hits in the row's column c; rows in order.
    """

    terms: list[str]
    rows: list[int]
    hits: list[list[int]]


def _postings(batch: Sequence[Sequence[list[str]]], width: int) -> _Postings:
    """A batch's postings from its rows' terms (``width`` columns at most).

    One Python step per row: a row's distinct terms and their hits in each column are
    taken in C (``Counter``, ``dict.update``, ``map``); a step per term and row was most
    of an import's time in Python.
    """
    terms: list[str] = []
    rows: list[int] = []
    hits: list[list[int]] = [[] for _ in range(width)]
    for row, columns in enumerate(batch):
        counters = [Counter(column) for column in columns]
        held: dict[str, int] = {}
        for counter in counters:
            held.update(counter)
        terms += held
        rows += repeat(row, len(held))
        for column, into in enumerate(hits):
            # A row with fewer columns than the batch's widest has no hits in the others.
            into += (map(counters[column].get, held, repeat(0)) if column < len(counters)
                     else repeat(0, len(held)))
    return _Postings(terms, rows, hits)


def _doclist_lines(
    postings: _Postings, batch: int, rows: Sequence[tuple[int, int, int]], plain: bool,
) -> Iterator[str]:
    """The ``COPY`` text lines of a batch's doclists (``rows``: ref, shard, tokens), by term.

    The postings are ordered by term (a number per term in the terms' order, in C), rows
    in order within a term, and every column's values turned to text at once; then a
    line per term is joined from slices, as they are asked for (see
    :func:`_write_doclists`). A column past the batch's widest row is empty (its hits
    are 0).
    """
    numbers = dict(zip(sorted(set(postings.terms)), count()))
    keys = list(map(numbers.__getitem__, postings.terms))
    order = sorted(range(len(keys)), key=keys.__getitem__)  # stable: rows stay in order
    owners = list(map(postings.rows.__getitem__, order))
    refs, shards, tokens = (list(map([str(row[at]) for row in rows].__getitem__, owners))
                            for at in range(3))
    columns = [list(map(_NUMERALS.__getitem__, map(hits.__getitem__, order)))
               for hits in postings.hits]
    empty = "\t{}" * (_MAX_COLUMNS - len(columns))
    held = Counter(keys)
    start = 0
    for term, number in numbers.items():
        end = start + held[number]
        hits = "\t".join(["{" + ",".join(column[start:end]) + "}" for column in columns])
        yield (f"{term if plain else term.translate(_COPY_ESCAPES)}\t{batch}"
               f"\t{{{','.join(refs[start:end])}}}\t{{{','.join(shards[start:end])}}}"
               f"\t{{{','.join(tokens[start:end])}}}\t{hits}{empty}\n")
        start = end


def _fresh_batches(db: Connection, n: int) -> Iterator[int]:
    """``n`` batch keys no batch has, each below every ref (from ``keyword_batches``)."""
    return iter([-int(r[0]) for r in db.execute(
        "SELECT nextval('keyword_batches') FROM generate_series(1, %s)", (n,)).fetchall()])


def _write_doclists(db: Connection, table: str, first: str | None, lines: Iterator[str],
                    ) -> None:
    """Insert doclists (``COPY`` lines by term, ``first`` then ``lines``) in one round trip.

    ``COPY`` as text formatted here: psycopg's ``write_row`` spent more on a row than
    cutting its terms did. By term (a tab sorts before any character of a term): a
    term's doclists share the key's pages. Lines are made as they are sent, a part at a
    time: the server inserts one part while the next is made (a Chinese batch of 100
    messages: about 17,000 postings, 13 ms of the server's and 12-15 of Python's).
    """
    if first is None:
        return
    part: list[str] = []
    size = 0
    names = ", ".join(name for name, _ in _POSTING_COLUMNS)
    with db.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for line in chain((first,), lines):
            part.append(line)
            size += len(line)
            if size >= _COPY_PART:
                copy.write("".join(part))
                part.clear()
                size = 0
        if part:
            copy.write("".join(part))


class KeywordTable:
    """One derived keyword table: write rows, rank them for a query by FTS5's BM25."""

    def __init__(
        self, store: Database, name: str, analyzer: Analyzer, *, indexes: str,
        extra_tokens: int = 0,
    ) -> None:
        self._store = store
        self.name = name
        #: The table whose rows it indexes (``ref`` is their id): rankings join it.
        self.indexes = indexes
        self.spec = spec = analyzer.tokenize
        self._cut = tokenizer(spec)
        self._document = analyzer.document
        self._by_line = spec == PORTER and type(analyzer) in _BY_LINE
        #: Terms FTS5 counts in every row beyond the ones stored (a scope column).
        self.extra_tokens = extra_tokens
        self.keeps_body = spec == TRIGRAM
        # unicode61's terms are letters and digits: nothing in them to escape as text.
        self._plain = spec == PORTER
        # Rows the table has (None: not read yet) and had when last analyzed, as this
        # process knows them (see _analyze_if_grown).
        self._rows: int | None = None
        self._analyzed = 0

    @property
    def doclists(self) -> str:
        """The table of the keyword table's doclists: one row per term and batch."""
        return f"{self.name}_postings"

    def postings_of(self, *columns: str) -> str:
        """The doclists as a table of postings, for a ``FROM``: one row per term and row.

        ``term, batch, ref`` and ``columns`` (of ``shard``, ``tokens``, ``a`` … ``d``):
        only the arrays a statement reads are unnested.
        """
        return _expanded(self.doclists, columns)

    def statements(self) -> list[str]:
        """What makes the table and its index."""
        return [
            f"CREATE TABLE {self.name} (ref bigint PRIMARY KEY, shard bigint NOT NULL,"
            f" tokens bigint NOT NULL, batch bigint NOT NULL, seq text[] NOT NULL, body text)",
            # A scope's newest rows (see memci.store.postgres._scoped).
            f"CREATE INDEX {self.name}_shard ON {self.name} (shard, ref)",
            # No plan reads them: ANALYZE need not sample them (arrays cost it most).
            f"ALTER TABLE {self.name} ALTER COLUMN seq SET STATISTICS 0,"
            " ALTER COLUMN body SET STATISTICS 0",
            # A row up to a page is kept whole: a Chinese message's terms with its
            # context's (about 2.5 kB) were compressed as they went in (pglz: half of the
            # batch's insert) and again read through a decompression.
            f"ALTER TABLE {self.name} SET (toast_tuple_target = {_WHOLE_ROW_BYTES})",
        ]

    def posting_statements(self) -> list[str]:
        """What makes the doclists table: a term's doclists are one range of its key.

        A doclist is a term's postings in one batch of rows, as arrays (``refs``, their
        ``shards`` and ``tokens``, the hits in each column ``a`` … ``d``), ``batch``
        its first row's ref: a batch writes a row per term, not one per term and row.
        """
        hits = ", ".join(f"{w.lower()} integer[] NOT NULL" for w in _WEIGHTS)
        unsampled = ", ".join(f"ALTER COLUMN {name} SET STATISTICS 0"
                              for name, kind in _POSTING_COLUMNS if kind.endswith("[]"))
        return [
            f'CREATE TABLE {self.doclists} (term text COLLATE "C" NOT NULL,'
            f" batch bigint NOT NULL, refs bigint[] NOT NULL, shards bigint[] NOT NULL,"
            f" tokens bigint[] NOT NULL, {hits}, PRIMARY KEY (term, batch))",
            # Plans read the doclists by term and batch only: ANALYZE samples those.
            # An array column's statistics (its elements' frequencies) cost an import's
            # settling 10x more (8,000 Chinese messages: 520 ms an ANALYZE, 50 without).
            f"ALTER TABLE {self.doclists} {unsampled}",
        ]

    def make(self, fill: Callable[[Connection], None] | None = None) -> None:
        """Make the tables once (``fill``: index what the store holds already).

        The doclists go first: a keyword table never exists without them.
        """
        self._store.derive(self.doclists, self.posting_statements())
        self._store.derive(self.name, self.statements(), fill)

    # -- writing -------------------------------------------------------------------------

    def put(
        self, db: Connection, ref: int, shard: int, columns: Sequence[str], *,
        replace: bool = False,
    ) -> None:
        """Index the row ``ref``: ``columns`` are its texts (the analyzer documents them)."""
        self.put_many(db, [(ref, shard, columns)], replace=replace)

    def put_many(self, db: Connection, rows: Sequence[tuple[int, int, Sequence[str]]], *,
                 replace: bool = False) -> None:
        """Index each ``(ref, shard, columns)``: the rows with their count, the doclists.

        ``columns`` are texts. Each row's terms are cut once (each distinct line once a
        call, see :class:`_Terms`), kept in order in its row (``seq``, for phrases) and
        counted into the batch's doclists (up to ``_DOCLIST_ROWS`` rows a batch).
        ``replace``: in place of the rows' keyword text (their rows are deleted first).
        A batch is keyed by its first row's ref, and the batch a deleted row began keeps
        its other rows under that key: the new batches are keyed from
        ``keyword_batches``, below every ref, instead.
        """
        keys: Iterator[int] | None = None
        if replace and rows:
            self.delete(db, [ref for ref, _, _ in rows])
            keys = _fresh_batches(db, -(-len(rows) // _DOCLIST_ROWS))
        cut_terms = _Terms(self._document, self._cut, self._by_line)
        values: list[tuple[int, int, int, int, str, str | None]] = []
        lines: list[Iterator[str]] = []  # each batch's doclists, made as they are sent
        counted: dict[int, tuple[int, int]] = {}
        for start in range(0, len(rows), _DOCLIST_ROWS):
            chunk = rows[start:start + _DOCLIST_ROWS]
            batch = next(keys) if keys is not None else min(ref for ref, _, _ in chunk)
            terms: list[list[list[str]]] = []
            for ref, shard, columns in chunk:
                cut = list(map(cut_terms, columns[:_MAX_COLUMNS]))
                tokens = sum(map(len, cut)) + self.extra_tokens
                # Text cannot hold U+0000; FTS5's trigram tokenizer stops there too.
                body = (self._document(columns[0]).split("\x00", 1)[0].lower()
                        if self.keeps_body and columns else None)
                values.append((ref, shard, tokens, batch, _sequence(cut, self._plain), body))
                terms.append(cut)
                docs, total = counted.get(shard, (0, 0))
                counted[shard] = (docs + 1, total + tokens)
            lines.append(_doclist_lines(_postings(terms, max(map(len, terms))), batch,
                                        [v[:3] for v in values[start:]], self._plain))
        if not values:
            return
        merged = heapq.merge(*lines)
        # The server inserts the rows while the doclists' first line is made (their
        # terms put in order: most of the lines' work); COPY has no pipeline mode.
        with db.pipeline() if len(values) < _COPY_FROM else nullcontext():
            _insert_counted(db, self.name, _ROW_COLUMNS, values, counted)
            first = next(merged, None)
        _write_doclists(db, self.doclists, first, merged)
        self._analyze_if_grown(db, len(values))

    def _analyze_if_grown(self, db: Connection, added: int) -> None:
        """Settle the table, its postings and the table it indexes as they double.

        Once the writing transaction has committed (:meth:`Database.after_commit`):
        ``VACUUM (ANALYZE)``, what autovacuum does a minute or so after an import. A table
        just filled has no statistics: the planner guessed, and a search right after an
        import read every posting of its terms (0.8 s at 10,000 English messages, 30 ms
        once analyzed); with the postings analyzed and not the items they index, an
        item search joined them in a loop (7 s at 3,000 items). The vacuum marks the new
        pages all-visible, so a term's postings are read from their index alone, and
        sets their rows' hint bits once (the first searches after an import did, writing
        the pages again). Doubling bounds the cost: an import settles a table about log2
        of its size over ``_ANALYZE_FROM`` times (none past ``_ANALYZE_UNTIL`` rows), a
        steady writer never.
        """
        if self._rows is None:
            row = db.execute(
                "SELECT c.reltuples, (SELECT COALESCE(SUM(docs), 0) FROM keyword_stats"
                " WHERE tab = %s) FROM pg_class c WHERE c.oid = %s::regclass",
                (self.name, self.name)).fetchone()
            self._analyzed = max(0, int(row[0])) if row else 0
            self._rows = int(row[1]) if row else added
        else:
            self._rows += added
        if (_ANALYZE_FROM <= self._rows and self._rows >= 2 * self._analyzed
                and self._analyzed < _ANALYZE_UNTIL):
            self._analyzed = self._rows
            self._store.after_commit(self._settle)

    def _settle(self, db: Connection) -> None:
        """``VACUUM (ANALYZE)`` the tables (``db``: a connection outside a transaction).

        ``SKIP_LOCKED``: never wait on another vacuum or analysis of them. A table this
        user may not vacuum is skipped with a warning. What was written has committed:
        a failure here loses nothing, and autovacuum does it later.
        """
        try:
            db.execute(f"VACUUM (ANALYZE, SKIP_LOCKED) {self.name}, {self.doclists},"
                       f" {self.indexes}")
        except psycopg.Error:
            return

    def delete(self, db: Connection, refs: Sequence[int]) -> None:
        """Forget the rows ``refs``."""
        forget_keywords(db, self.name, refs)

    # -- reading -------------------------------------------------------------------------

    def stats(self, db: Connection) -> tuple[int, float]:
        """Rows and average terms per row (what BM25 normalizes with)."""
        row = db.execute("SELECT COALESCE(SUM(docs), 0), COALESCE(SUM(tokens), 0)"
                         " FROM keyword_stats WHERE tab = %s", (self.name,)).fetchone()
        docs, tokens = (int(row[0]), int(row[1])) if row else (0, 0)
        return docs, (tokens / docs if docs else 1.0)

    def rank(
        self, db: Connection, match: str, weights: Sequence[float], *,
        join: str = "", where: str = "", args: Sequence[Any] = (), limit: int,
        shards: Sequence[int] | None = None, prune: bool = False, carry: Carry | None = None,
        keeps_most: bool = False, refs: tuple[int, int] | None = None,
        counted: Counted | None = None,
    ) -> list[tuple[float, int]]:
        """The ``limit`` best ``(score, ref)`` for the ``MATCH`` text, best first.

        ``join`` and ``where`` (SQL, the keyword table named ``k``; ``where`` starts with
        `` AND``) narrow the rows before ranking, and so do ``shards`` (read in the
        postings: no join), and ``refs`` (a range of rows, read in the postings: it holds
        every row the filter keeps); ``keeps_most``: the filter keeps most rows, so it is
        applied to the best rows first until ``limit`` pass; ``weights`` weigh the columns'
        hits;
        ``carry`` is filled with its columns of the rows found (a row deleted meanwhile
        is left out); ``counted``: the counts BM25 needs, when the caller read them (every
        term's, or they are counted here).
        Ties go to the smaller ref, as FTS5 ties go to the smaller rowid.

        Computed in the database from the postings, in one statement (the terms' counts,
        their IDF and the scores). With ``prune``, first each phrase's rows, then the
        scores: the most common terms (an IDF too small to lift a row past the others)
        are looked up only for the rows the rarer ones found; when the rows found that way
        cannot be the best (the ``limit``-th score is below what the common terms alone
        could give), all terms are ranked in full (a second statement). A caller that
        bounds the postings a search reads (the message search, see :mod:`._scoped`)
        does not prune: the second statement was needed more often than not. A phrase
        of several terms needs their positions: then :meth:`rank_positions`.
        """
        found = phrases(match, self.spec)
        if not found or limit <= 0:
            return []
        filters = _Filters(join, where, args, shards, carry, keeps_most and bool(join), refs)
        if any(len(p.terms) > 1 for p in found):
            return self.rank_positions(db, found, weights, filters, limit, counted)
        bounds = [_bounds(p) for p in found]
        if not prune and counted is not None and all(b in counted.holding for b in bounds):
            avg = counted.tokens / counted.rows if counted.rows else 1.0
            given = [(i, lo, hi, _idf(counted.rows, min(counted.holding[lo, hi], counted.rows)))
                     for i, (lo, hi) in enumerate(bounds)]
            return self._score(db, _GIVEN_TERMS, _given(given, weights, avg), weights, bounds,
                               [], filters, limit)
        if not prune:
            return self._score(db, _COUNTED_TERMS, [
                self.name, *_weights(weights), _K1, _B, list(range(len(bounds))),
                [b[0] for b in bounds], [b[1] for b in bounds]], weights, bounds, [], filters,
                limit)
        row = db.execute(_PHRASE_ROWS.format(refs=self.postings_of(), doclists=self.doclists),
                         ([b[0] for b in bounds], [b[1] for b in bounds], self.name)
                         ).fetchone()
        assert row is not None
        total, tokens, having = int(row[0]), int(row[1]), [int(n) for n in row[2]]
        avg = tokens / total if total else 1.0
        idfs = [_idf(total, min(n, total)) for n in having]
        terms = [(i, lo, hi, idf) for i, ((lo, hi), idf) in enumerate(zip(bounds, idfs,
                                                                            strict=True))]
        essential, common = _split(terms, having, total)
        if common:
            ranked = self._score(db, _GIVEN_TERMS, _given(essential, weights, avg), weights,
                                 [t[1:3] for t in essential], common, filters, limit)
            ceiling = sum(idf for *_, idf in common) * (_K1 + 1)
            if len(ranked) == limit and ranked[-1][0] > ceiling:
                return ranked
        return self._score(db, _GIVEN_TERMS, _given(terms, weights, avg), weights, bounds, [],
                           filters, limit)

    def _score(
        self, db: Connection, terms: str, terms_args: Sequence[Any], weights: Sequence[float],
        bounds: Sequence[tuple[str, str]], common: Sequence[_Term], filters: _Filters,
        limit: int,
    ) -> list[tuple[float, int]]:
        """The best rows holding a term of ``terms``, scored with ``common`` ones too.

        ``terms``: :data:`_GIVEN_TERMS` or :data:`_COUNTED_TERMS`, with ``terms_args``
        (``weights`` among them); ``bounds``: their ranges of stored terms.
        """
        kinds = [hits for hits, wanted in ((_EXACT_HITS, any(lo == hi for lo, hi in bounds)),
                                           (_PREFIX_HITS, any(lo != hi for lo, hi in bounds)))
                 if wanted]
        scoped, scoped_args = filters.postings("p")
        weighed = [w.lower() for w, weight in zip(_WEIGHTS, _weights(weights), strict=True)
                   if weight]
        read = [*weighed, "tokens", *(["shard"] if filters.shards is not None else [])]
        hits = " UNION ALL ".join(kinds).format(
            postings=self.postings_of(*read), shards=scoped,
            w=" + ".join(f"p.{c} * t.w{c}" for c in weighed) or "0")
        shards = scoped_args * len(kinds)
        best = _BEST_FIRST if filters.keeps_most and not common else _FILTERED_FIRST
        ranked = _SCORE.format(
            terms=terms.format(refs=self.postings_of(), doclists=self.doclists), hits=hits,
            kept=_KEPT if common else "",
            best=best.format(common=_COMMON.format(doclists=self.doclists) if common else "",
                             join=filters.join, where=filters.where,
                             v=" CROSS JOIN v" if common else ""))
        carry = filters.carry
        if carry is not None:
            ranked = _CARRIED.format(columns=", ".join(f"x.{c}" for c in carry.columns),
                                     ranked=ranked, indexes=self.indexes)
        rows = db.execute(ranked, (*terms_args, [t[0] for t in common], [t[1] for t in common],
                                   [t[3] for t in common], *shards, *filters.args, limit)
                          ).fetchall()
        if carry is not None:
            carry.rows.update((int(row[1]), tuple(row[2:])) for row in rows)
        return [(float(row[0]), int(row[1])) for row in rows]

    def rank_positions(
        self, db: Connection, found: Sequence[Phrase], weights: Sequence[float],
        filters: _Filters, limit: int, counted: Counted | None = None,
    ) -> list[tuple[float, int]]:
        """:meth:`rank` of ``found`` when a phrase has several terms (their positions).

        The rows holding such a phrase (:meth:`holding`) are scored in Python from
        their postings' positions, every phrase counted; the other rows from the
        postings of the one-term phrases, in the database (:meth:`_score`), deep enough
        that the rows scored in Python cannot keep a better one out. Three statements:
        the counts and the rows holding each phrase, the positions, the scores; none for
        the counts when ``counted`` holds every phrase's count and rows (a caller's
        scope), none for the positions when no row holds a phrase.
        """
        total, tokens, having, given = self._phrase_rows(db, found, counted, filters)
        avg = tokens / total if total else 1.0
        idfs = [_idf(total, min(n, total)) for n in having]
        scored = self._scored_positions(db, found, idfs, weights, avg, filters, given)
        single = [(i, *_bounds(p), idf) for i, (p, idf) in enumerate(zip(found, idfs,
                                                                          strict=True))
                  if len(p.terms) == 1]
        if single:
            inside = {ref for _, ref in scored}
            scored += [(score, ref) for score, ref in self._score(
                db, _GIVEN_TERMS, _given(single, weights, avg), weights,
                [t[1:3] for t in single], [], filters, limit + len(inside)) if ref not in inside]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return scored[:limit]

    def _phrase_rows(
        self, db: Connection, found: Sequence[Phrase], counted: Counted | None,
        filters: _Filters,
    ) -> tuple[int, int, list[int], dict[Phrase, tuple[int, tuple[int, ...]]]]:
        """The table's rows and terms, how many rows hold each phrase, and its rows kept.

        One statement; none when ``counted`` holds them all. A term (or prefix) counted
        in the postings' key; a phrase of several terms found once (:meth:`holding`):
        its rows counted, and those ``filters`` keep given by ref (it was found again
        to be scored: each a pass over its first term's postings, checking each row's
        terms in order).
        """
        if counted is not None and all(
                p in counted.phrases if len(p.terms) > 1 else _bounds(p) in counted.holding
                for p in found):
            return counted.rows, counted.tokens, [
                counted.phrases[p][0] if len(p.terms) > 1 else counted.holding[_bounds(p)]
                for p in found], dict(counted.phrases)
        bounds, bound_args = filters.postings("k")
        kept = (f"EXISTS (SELECT 1 FROM {self.name} k{filters.join} WHERE k.ref = x.ref"
                f"{bounds}{filters.where})")
        counts: list[str] = []
        args: list[Any] = []
        for phrase in found:
            if len(phrase.terms) > 1:
                holds, more = self.holding(phrase, "x")
                counts.append(f"(SELECT ARRAY[count(*)] || COALESCE(array_agg(h.ref) FILTER"
                              f" (WHERE h.kept), '{{}}') FROM (SELECT x.ref, {kept} AS kept"
                              f" FROM {self.postings_of()} x WHERE {holds}) h)")
                args += [*bound_args, *filters.args, *more]
            elif phrase.prefix:
                counts.append(f"ARRAY[(SELECT count(DISTINCT ref) FROM {self.postings_of()}"
                              " WHERE term BETWEEN %s AND %s)]")
                args += list(_bounds(phrase))
            else:
                counts.append(f"ARRAY[(SELECT COALESCE(sum(cardinality(refs)), 0)"
                              f" FROM {self.doclists} WHERE term = %s)]")
                args.append(phrase.terms[0])
        row = db.execute(
            f"SELECT COALESCE(SUM(docs), 0), COALESCE(SUM(tokens), 0), {', '.join(counts)}"
            " FROM keyword_stats WHERE tab = %s", (*args, self.name)).fetchone()
        assert row is not None
        read = list(zip(found, row[2:], strict=True))
        return int(row[0]), int(row[1]), [int(n[0]) for _, n in read], {
            p: (int(n[0]), tuple(int(r) for r in n[1:])) for p, n in read if len(p.terms) > 1}

    def _scored_positions(
        self, db: Connection, found: Sequence[Phrase], idfs: Sequence[float],
        weights: Sequence[float], avg: float, filters: _Filters,
        given: Mapping[Phrase, tuple[int, tuple[int, ...]]],
    ) -> list[tuple[float, int]]:
        """``(score, ref)`` of the rows holding a phrase of several terms.

        Every phrase is counted, from the rows' terms in order (their ``seq``). Each
        phrase's rows are ``given`` (found with its count), a superset of those
        ``filters`` keep: filtered again here, as keyword rows (they have the postings'
        ``shard``, ``batch`` and ``ref``).
        """
        bounds, args = filters.postings("k")
        refs = sorted({ref for phrase in found if len(phrase.terms) > 1
                       for ref in given[phrase][1]})
        if not refs:
            return []
        rows = db.execute(
            f"SELECT k.ref, k.tokens, k.seq FROM {self.name} k{filters.join}"
            f" WHERE k.ref = ANY(%s){bounds}{filters.where}",
            [refs, *args, *filters.args]).fetchall()
        scored: list[tuple[float, int]] = []
        for ref, tokens, seq in rows:
            terms = _places(seq)
            norm = _K1 * (1 - _B + _B * tokens / avg)
            score, matched = 0.0, False
            for phrase, idf in zip(found, idfs, strict=True):
                hits, count = _hits(phrase, terms, weights)
                matched = matched or count > 0
                if hits:
                    score += idf * hits * (_K1 + 1) / (hits + norm)
            if matched:  # a match in a column weighed 0 is found, with no score, as in FTS5
                scored.append((score, int(ref)))
        return scored

    def holding(self, phrase: Phrase, alias: str) -> tuple[str, list[Any]]:
        """A condition on the posting ``alias``: of a row holding ``phrase``, and its args.

        ``phrase`` has several terms: ``alias`` is a posting of its first one, the row
        holds each of its other whole terms, and at one of its places in the row's terms
        (``seq``) the next terms follow (the last one, any term with its prefix). The
        places are read only for the postings whose row holds every whole term:
        checking them at every posting of a common first term (``010`` of a phone
        number, 4,000 Chinese rows) took 40 ms a statement.
        """
        last = len(phrase.terms) - 1
        others = sorted({t for i, t in enumerate(phrase.terms) if i and not (
            i == last and phrase.prefix)} - {phrase.terms[0]})
        follows = [f"starts_with(r.seq[s.at + {i}], %s)" if i == last and phrase.prefix
                   else f"r.seq[s.at + {i}] = %s" for i in range(1, last + 1)]
        # In a CASE, each set of rows stays a hashed set, a filter on the postings read
        # (a semi-join made of it was at times planned after the places' check).
        within = "".join(f" AND CASE WHEN {alias}.ref IN (SELECT unnest(o.refs) FROM"
                         f" {self.doclists} o WHERE o.term = %s) THEN TRUE END"
                         for _ in others)
        return (f"{alias}.term = %s{within} AND EXISTS (SELECT 1 FROM {self.name} r"
                " CROSS JOIN LATERAL unnest(array_positions(r.seq, %s::text)) AS s(at)"
                f" WHERE r.ref = {alias}.ref AND {' AND '.join(follows)})",
                [phrase.terms[0], *others, *phrase.terms])

    def containing(
        self, db: Connection, term: str, *, join: str = "", where: str = "",
        args: Sequence[Any] = (),
    ) -> list[int]:
        """Refs whose first column holds ``term`` (trigram tables), newest ref first."""
        rows = db.execute(
            f"SELECT k.ref FROM {self.name} k{join} WHERE strpos(k.body, %s) > 0{where}"
            " ORDER BY k.ref DESC", (term.lower(), *args)).fetchall()
        return [int(r[0]) for r in rows]

    def count(self, db: Connection) -> int:
        """How many rows the table has."""
        return self.stats(db)[0]


# The rows and tokens a batch adds to each shard of a keyword table, in shard order (two
# writers of the same shards lock their counters in one order).
_COUNT_MANY = (
    "INSERT INTO keyword_stats (tab, shard, docs, tokens) SELECT %s, s.shard, s.docs,"
    " s.tokens FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS s(shard, docs, tokens)"
    " ORDER BY s.shard ON CONFLICT (tab, shard) DO UPDATE SET docs = keyword_stats.docs"
    " + EXCLUDED.docs, tokens = keyword_stats.tokens + EXCLUDED.tokens")


def _insert_counted(db: Connection, table: str, columns: Sequence[tuple[str, str]],
                    rows: Sequence[Sequence[Any]], counted: dict[int, tuple[int, int]]) -> None:
    """Insert ``rows`` and add ``counted`` (shard: rows, tokens) to the table's statistics.

    A few rows go as arrays in the statement that counts them (one round trip), many by
    ``COPY`` first (two, far less work). ``columns`` are ``(name, type)``; an array
    travels as its text (``{1,2}``): an array of arrays would be unnested to its elements.
    """
    names = ", ".join(name for name, _ in columns)
    shards = sorted(counted)
    count_args = [table, shards, [counted[s][0] for s in shards],
                  [counted[s][1] for s in shards]]
    if len(rows) < _COPY_FROM:
        # Binary (%b): as text, each array's text would be escaped again inside the
        # outer array's (a quote per term of a row's terms: a million a batch).
        arrays = ", ".join(f"%b::{'text' if kind.endswith('[]') else kind}[]"
                           for _, kind in columns)
        values = ", ".join(f"u.{name}::{kind}" for name, kind in columns)
        db.execute(f"WITH r AS (INSERT INTO {table} ({names}) SELECT {values}"
                   f" FROM unnest({arrays}) AS u({names})) {_COUNT_MANY}",
                   [*(list(column) for column in zip(*rows, strict=True)), *count_args])
        return
    with db.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    db.execute(_COUNT_MANY, count_args)


# A deletion's rows ({table}) and their postings, in one statement: the doclists of
# each row's terms (its ``seq``) in its batch are written again without the rows gone
# (hit: those doclists; kept: what stays of them), or deleted when none stays.
_FORGET = (
    "WITH gone AS (DELETE FROM {table} WHERE ref = ANY(%s) RETURNING shard, tokens, batch,"
    " seq),"
    " hit AS (SELECT DISTINCT s.term, g.batch FROM gone g CROSS JOIN LATERAL unnest(g.seq)"
    " AS s(term) WHERE s.term IS NOT NULL),"
    " kept AS (SELECT p.term, p.batch, array_agg(u.ref ORDER BY u.o) AS refs,"
    " array_agg(u.shard ORDER BY u.o) AS shards, array_agg(u.tokens ORDER BY u.o) AS tokens,"
    " array_agg(COALESCE(u.a, 0) ORDER BY u.o) AS a, array_agg(COALESCE(u.b, 0) ORDER BY u.o)"
    " AS b, array_agg(COALESCE(u.c, 0) ORDER BY u.o) AS c,"
    " array_agg(COALESCE(u.d, 0) ORDER BY u.o) AS d"
    " FROM {doclists} p JOIN hit h ON p.term = h.term AND p.batch = h.batch"
    " CROSS JOIN LATERAL unnest(p.refs, p.shards, p.tokens, p.a, p.b, p.c, p.d)"
    " WITH ORDINALITY AS u(ref, shard, tokens, a, b, c, d, o)"
    " WHERE u.ref <> ALL(%s) GROUP BY p.term, p.batch),"
    " changed AS (UPDATE {doclists} p SET refs = k.refs, shards = k.shards,"
    " tokens = k.tokens, a = k.a, b = k.b, c = k.c, d = k.d FROM kept k"
    " WHERE p.term = k.term AND p.batch = k.batch),"
    " emptied AS (DELETE FROM {doclists} p USING hit h WHERE p.term = h.term"
    " AND p.batch = h.batch AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.term = h.term"
    " AND k.batch = h.batch))"
    " SELECT shard, tokens FROM gone")


def forget_keywords(db: Connection, table: str, refs: Collection[int]) -> int:
    """Delete the rows ``refs`` of the keyword table ``table`` (inside a write); how many.

    Its statistics count them out, so BM25 goes on weighing the rows that stay: every
    shard's in one statement (a statement per shard was a round trip each: the memory
    items an archive event replaced, of many sessions).
    """
    if not refs:
        return 0
    wanted = sorted({int(r) for r in refs})
    rows = db.execute(_FORGET.format(table=table, doclists=f"{table}_postings"),
                      (wanted, wanted)).fetchall()
    shards: dict[int, tuple[int, int]] = {}
    for shard, tokens in rows:
        docs, total = shards.get(int(shard), (0, 0))
        shards[int(shard)] = (docs - 1, total - int(tokens))
    if shards:
        order = sorted(shards)
        db.execute(_COUNT_MANY, [table, order, [shards[s][0] for s in order],
                                 [shards[s][1] for s in order]])
    return len(rows)


def keyword_tables(db: Connection, base: str) -> list[str]:
    """Every keyword table of ``base`` (``memory_fts``…), whatever analyzer made it.

    Found in the catalog, not only the ones this process opened.
    """
    pattern = base.replace("_", "\\_") + "\\_%"
    return [str(r[0]) for r in db.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        " AND tablename LIKE %s AND tablename NOT LIKE '%%\\_postings'"
        " ORDER BY tablename", (pattern,)).fetchall()]


def _places(seq: Sequence[str | None]) -> dict[str, list[tuple[int, str]]]:
    """A row's terms (its ``seq``), each with its places and their columns' letters."""
    places: dict[str, list[tuple[int, str]]] = {}
    column = 0
    for place, term in enumerate(seq, start=1):
        if term is None:
            column += 1
        else:
            places.setdefault(term, []).append((place, _WEIGHTS[column]))
    return places


def _hits(
    phrase: Phrase, terms: dict[str, list[tuple[int, str]]], weights: Sequence[float],
) -> tuple[float, int]:
    """The phrase's hits in one row, each weighted by its column's weight, and their number."""
    def spots(index: int) -> list[tuple[int, str]]:
        term = phrase.terms[index]
        if phrase.prefix and index == len(phrase.terms) - 1:
            return [s for lexeme, found in terms.items() if lexeme.startswith(term)
                    for s in found]
        return terms.get(term, [])

    first = spots(0)
    if len(phrase.terms) > 1:
        later = [set(spots(i)) for i in range(1, len(phrase.terms))]
        first = [(p, w) for p, w in first
                 if all((p + i, w) in s for i, s in enumerate(later, start=1))]
    total = 0.0
    for _, weight in first:
        column = _WEIGHTS.index(weight)
        total += weights[column] if column < len(weights) else 0.0
    return total, len(first)
