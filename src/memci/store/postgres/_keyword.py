"""Keyword tables of the PostgreSQL store: memci's analyzer terms in a ``tsvector``, FTS5's BM25.

SQLite keeps keyword text in FTS5 tables and ranks with FTS5's ``bm25()``; this module is
the same thing with no extension, so it runs on managed PostgreSQL. One derived table per
searched base table and analyzer (``<base>_<analyzer>``, made on first use like SQLite's
FTS5 tables, see :meth:`~memci.store.postgres.PostgresStore.derive`):

- ``ref`` (the row it indexes), ``shard`` (what its statistics are counted under),
  ``terms`` (a ``tsvector``: every term of every column with its positions, the column
  as the position's weight, A, B, C…), ``tokens`` (how many terms the row has, as FTS5
  counts them) and, for the trigram analyzer, ``body`` (the first column's text, which
  terms too short for trigrams are matched in, as SQLite does with ``instr``);
- a GIN index on ``terms`` finds the rows that hold a query's terms;
- ``keyword_stats`` keeps rows and terms per table and shard (a shard per session for
  messages), so writers of different sessions never wait on one counter, and the
  average length BM25 needs is one small sum.

Terms are cut by :mod:`memci.store.postgres._terms` exactly as SQLite's FTS5 tokenizer
cuts them, and :meth:`KeywordTable.rank` computes FTS5's BM25 (k1 = 1.2, b = 0.75, IDF
``ln((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, column weights applied to the hits,
phrases counted where their terms stand next to each other in one column), so both
backends rank alike. What PostgreSQL bounds: a term of more than 2,000 bytes is kept as
its hash; a term's positions are cut at 256, and positions past 16,383 fold into one
(hits of such rows may count a little lower; BM25 saturates long before).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memci.store.postgres._db import Connection, Database
from memci.store.postgres._terms import TRIGRAM, tokenizer

__all__ = ["KeywordTable", "Phrase", "phrases"]

_K1 = 1.2
_B = 0.75
_MAX_LEXEME_BYTES = 2000
_MAX_POSITIONS = 256
_MAX_POSITION = 16383
_MAX_VECTOR_BYTES = 900_000  # PostgreSQL's bound is 1 MiB
_WEIGHTS = "ABCD"
_QUOTED = re.compile(r'"((?:[^"]|"")*)"(\*?)')


def _lexeme(term: str) -> str:
    if len(term.encode("utf-8")) > _MAX_LEXEME_BYTES:
        return "#" + hashlib.sha256(term.encode("utf-8")).hexdigest()
    return term


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class Phrase:
    """One quoted term of a query: its terms in order, the last one a prefix or not."""

    terms: tuple[str, ...]
    prefix: bool = False

    def tsquery(self) -> str:
        """The phrase as a ``tsquery`` (terms next to each other)."""
        parts = [_quote(t) for t in self.terms]
        if self.prefix:
            parts[-1] += ":*"
        return " <-> ".join(parts)


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


def tsvector_text(columns: Sequence[Sequence[str]]) -> tuple[str, int]:
    """The ``tsvector`` literal of the columns' terms (weights A, B, …) and how many terms."""
    positions: dict[str, list[str]] = defaultdict(list)
    position = 0
    total = 0
    for weight, terms in zip(_WEIGHTS, columns, strict=False):
        total += len(terms)
        for term in terms:
            position += 1
            kept = positions[_lexeme(term)]
            if len(kept) < _MAX_POSITIONS:
                kept.append(f"{min(position, _MAX_POSITION)}{weight}")
        position += 1  # a gap: a phrase never spans two columns
    cap = _MAX_POSITIONS
    while True:
        size = sum(len(k.encode("utf-8")) + 8 + 3 * min(len(v), cap)
                   for k, v in positions.items())
        if size <= _MAX_VECTOR_BYTES or cap == 1:
            break
        cap = max(1, cap // 4)
    items = [f"{_quote(k)}:{','.join(v[:cap])}" for k, v in positions.items()]
    text = " ".join(items)
    while len(text.encode("utf-8")) > _MAX_VECTOR_BYTES and items:
        items = items[: len(items) * 3 // 4]
        text = " ".join(items)
    return text, total


class KeywordTable:
    """One derived keyword table: write rows, rank them for a query by FTS5's BM25."""

    def __init__(
        self, store: Database, name: str, spec: str, *, extra_tokens: int = 0,
    ) -> None:
        self._store = store
        self.name = name
        self.spec = spec
        self._cut = tokenizer(spec)
        #: Terms FTS5 counts in every row beyond the ones stored (a scope column).
        self.extra_tokens = extra_tokens
        self.keeps_body = spec == TRIGRAM

    def statements(self) -> list[str]:
        """What makes the table and its index."""
        return [
            f"CREATE TABLE {self.name} (ref bigint PRIMARY KEY, shard bigint NOT NULL,"
            f" terms tsvector NOT NULL, tokens bigint NOT NULL, body text)",
            f"CREATE INDEX {self.name}_terms ON {self.name} USING gin (terms)",
        ]

    # -- writing -------------------------------------------------------------------------

    def put(
        self, db: Connection, ref: int, shard: int, columns: Sequence[str], *,
        replace: bool = False,
    ) -> None:
        """Index the row ``ref``: ``columns`` are its texts as the analyzer documents them."""
        if replace:
            self.delete(db, [ref])
        text, count = tsvector_text([self._cut(c) for c in columns])
        tokens = count + self.extra_tokens
        # Text cannot hold U+0000; FTS5's trigram tokenizer stops there too.
        body = columns[0].split("\x00", 1)[0].lower() if self.keeps_body and columns else None
        db.execute(f"INSERT INTO {self.name} (ref, shard, terms, tokens, body)"
                   " VALUES (%s, %s, %s::tsvector, %s, %s)", (ref, shard, text, tokens, body))
        self._count(db, shard, 1, tokens)

    def delete(self, db: Connection, refs: Sequence[int]) -> None:
        """Forget the rows ``refs``."""
        if not refs:
            return
        rows = db.execute(f"DELETE FROM {self.name} WHERE ref = ANY(%s) RETURNING shard, tokens",
                          (list(refs),)).fetchall()
        for shard, tokens in rows:
            self._count(db, int(shard), -1, -int(tokens))

    def _count(self, db: Connection, shard: int, docs: int, tokens: int) -> None:
        db.execute("INSERT INTO keyword_stats (tab, shard, docs, tokens) VALUES (%s, %s, %s, %s)"
                   " ON CONFLICT (tab, shard) DO UPDATE SET docs = keyword_stats.docs"
                   " + EXCLUDED.docs, tokens = keyword_stats.tokens + EXCLUDED.tokens",
                   (self.name, shard, docs, tokens))

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
    ) -> list[tuple[float, int]]:
        """The ``limit`` best ``(score, ref)`` for the ``MATCH`` text, best first.

        ``join`` and ``where`` (SQL, the keyword table named ``k``; ``where`` starts with
        `` AND``) narrow the rows before ranking; ``weights`` weigh the columns' hits.
        Ties go to the smaller ref, as FTS5 ties go to the smaller rowid.
        """
        found = phrases(match, self.spec)
        if not found or limit <= 0:
            return []
        total, avg = self.stats(db)
        query = " | ".join(f"({p.tsquery()})" for p in found)
        # Rows holding each phrase, in one pass over the rows holding any (the GIN index).
        counting = ", ".join("count(*) FILTER (WHERE terms @@ %s::tsquery)" for _ in found)
        row = db.execute(f"SELECT {counting} FROM {self.name} WHERE terms @@ %s::tsquery",
                         (*[p.tsquery() for p in found], query)).fetchone()
        idfs: list[float] = []
        for at in range(len(found)):
            # Counted apart from the statistics: writers between the two reads may make it
            # larger than the rows counted there (each search reads one snapshot, but a
            # search inside a write transaction reads as it goes).
            having = min(int(row[at]) if row else 0, total)
            idf = math.log((total - having + 0.5) / (having + 0.5)) if total else 0.0
            idfs.append(idf if idf > 0 else 1e-6)
        exact = sorted({t for p in found for t in (p.terms[:-1] if p.prefix else p.terms)})
        prefixes = sorted({p.terms[-1] for p in found if p.prefix})
        rows = db.execute(
            f"SELECT k.ref, k.tokens, u.lexeme, u.positions, u.weights FROM {self.name} k"
            f"{join} CROSS JOIN LATERAL unnest(k.terms) u WHERE k.terms @@ %s::tsquery{where}"
            " AND (u.lexeme = ANY(%s) OR u.lexeme LIKE ANY(%s))",
            (query, *args, exact, [_like_prefix(p) for p in prefixes])).fetchall()
        docs: dict[int, tuple[int, dict[str, list[tuple[int, str]]]]] = {}
        for ref, tokens, lexeme, spots, marks in rows:
            entry = docs.setdefault(int(ref), (int(tokens), {}))
            entry[1][str(lexeme)] = list(zip(spots, marks, strict=True))
        scored: list[tuple[float, int]] = []
        for ref, (tokens, terms) in docs.items():
            norm = _K1 * (1 - _B + _B * tokens / avg)
            score, matched = 0.0, False
            for phrase, idf in zip(found, idfs, strict=True):
                hits, count = _hits(phrase, terms, weights)
                matched = matched or count > 0
                if hits:
                    score += idf * hits * (_K1 + 1) / (hits + norm)
            if matched:  # a match in a column weighed 0 is found, with no score, as in FTS5
                scored.append((score, ref))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return scored[:limit]

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


def _like_prefix(text: str) -> str:
    """A ``LIKE`` pattern for what starts with ``text``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


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
