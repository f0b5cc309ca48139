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
Time ranges and roles join ``memory_docs``. Nothing is kept between searches: every
figure is read in the search's own snapshot, in one statement per step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memci.store._search import COMMON_MAX, POSTINGS_MAX, RARE, RECENT, TERMS_MAX
from memci.store.postgres._db import Connection
from memci.store.postgres._keyword import KeywordTable, Phrase, phrases
from memci.store.sqlite._common import best_by_terms

__all__ = ["Scope", "newest", "split"]

_LAST_CHAR = "\U0010ffff"


@dataclass(frozen=True, slots=True)
class Scope:
    """The entries a search may find, as conditions on a keyword row or posting ``x``.

    ``shards``: the sessions (None: any), read in ``x.shard``; ``where`` and ``args``: the
    rest, as conditions on ``memory_docs d`` (each starting with `` AND``; joined only
    when there are some). A search's bound on doc numbers is not part of it.
    """

    shards: tuple[int, ...] | None = None
    where: str = ""
    args: tuple[Any, ...] = ()

    def conditions(self) -> tuple[str, str, list[Any]]:
        """``(join, where, args)`` that keep the rows ``x`` of the scope."""
        join = " JOIN memory_docs d ON d.id = x.ref" if self.where else ""
        where, args = self.where, list(self.args)
        if self.shards is not None:
            where, args = " AND x.shard = ANY(%s)" + where, [list(self.shards), *args]
        return join, where, args


def _holding(
    table: KeywordTable, phrase: Phrase, scope: Scope, bounds: str = "",
    bound_args: Sequence[Any] = (),
) -> tuple[str, list[Any]]:
    """``SELECT x.ref`` of the scope's rows holding ``phrase``, and its arguments.

    ``bounds``: more conditions on ``x.ref`` (with ``bound_args``). A term (or a
    prefix's terms) is read in the postings' key, a phrase of several terms in the rows'
    ``tsvector`` (its GIN index).
    """
    join, where, args = scope.conditions()
    rest = [*bound_args, *args]
    if len(phrase.terms) > 1:
        return (f"SELECT x.ref FROM {table.name} x{join} WHERE x.terms @@ %s::tsquery"
                f"{bounds}{where}", [phrase.tsquery(), *rest])
    term = phrase.terms[0]
    if phrase.prefix:
        return (f"SELECT DISTINCT x.ref FROM {table.postings} x{join} WHERE x.term BETWEEN"
                f" %s AND %s{bounds}{where}", [term, term + _LAST_CHAR, *rest])
    return (f"SELECT x.ref FROM {table.postings} x{join} WHERE x.term = %s{bounds}{where}",
            [term, *rest])


def _phrase(table: KeywordTable, part: str) -> Phrase | None:
    """The phrase of one ``MATCH`` part (None: it has no term, and matches nothing)."""
    found = phrases(part, table.spec)
    return found[0] if found else None


def split(
    db: Connection, table: KeywordTable, parts: Sequence[str], scope: Scope,
) -> tuple[int, list[str], list[str]]:
    """``(size, rare, common)``: the index's newest row, and ``parts`` split as SQLite does.

    One statement: each part's entries in the scope, counted up to ``RARE + 1``. A part
    is rare when at most ``RARE`` entries hold it; the rarest are taken while they are at
    most ``TERMS_MAX`` and their postings at most ``POSTINGS_MAX`` (all of them, in their
    text's order, when they fit); common ones after the rare ones left out, in their
    text's order.
    """
    columns = [f"(SELECT COALESCE(max(ref), 0) FROM {table.name})"]
    args: list[Any] = []
    counted: list[str] = []
    for part in parts:
        phrase = _phrase(table, part)
        if phrase is None:
            continue
        rows, more = _holding(table, phrase, scope)
        columns.append(f"(SELECT count(*) FROM ({rows} LIMIT %s) s)")
        args += [*more, RARE + 1]
        counted.append(part)
    row = db.execute(f"SELECT {', '.join(columns)}", args).fetchone()
    assert row is not None
    counts = dict(zip(counted, (int(n) for n in row[1:]), strict=True))
    counts.update((part, 0) for part in parts if part not in counts)
    eligible = sorted(part for part in parts if counts[part] <= RARE)
    left: list[str] = []
    rare = eligible
    if len(eligible) > TERMS_MAX or sum(counts[p] for p in eligible) > POSTINGS_MAX:
        rare, postings = [], 0
        ordered = sorted((counts[part], part) for part in eligible)
        for df, part in ordered:
            if len(rare) >= TERMS_MAX or (rare and postings + df > POSTINGS_MAX):
                break
            rare.append(part)
            postings += df
        left = [part for _, part in ordered[len(rare):]]
    return int(row[0]), rare, left + sorted(part for part in parts if part not in eligible)


def newest(
    db: Connection, table: KeywordTable, parts: Sequence[str], scope: Scope, k: int, top: int,
) -> list[tuple[float, int]]:
    """Up to ``COMMON_MAX`` common ``parts`` among the scope's newest entries up to ``top``.

    Ranked as SQLite ranks them (:func:`~memci.store.sqlite._common.best_by_terms`): the
    newest ``RECENT`` entries of the scope are the window; an entry scores the sum of its
    terms' weights there (``ln(1 + n / entries holding it)``, ``n`` the window's
    entries); newer first at a tie. One statement.
    """
    join, where, args = scope.conditions()
    window = (f"WITH w AS MATERIALIZED (SELECT x.ref FROM {table.name} x{join}"
              f" WHERE x.ref <= %s{where} ORDER BY x.ref DESC LIMIT %s)")
    params: list[Any] = [top, *args, RECENT]
    columns = ["(SELECT count(*) FROM w)"]
    for part in parts[:COMMON_MAX]:
        phrase = _phrase(table, part)
        if phrase is None:
            continue
        rows, more = _holding(table, phrase, scope,
                              " AND x.ref >= (SELECT min(ref) FROM w) AND x.ref <= %s", (top,))
        columns.append(f"ARRAY({rows})")
        params += more
    row = db.execute(f"{window} SELECT {', '.join(columns)}", params).fetchone()
    assert row is not None
    n = int(row[0])
    terms = [(math.log(1 + n / len(docs)), {int(d) for d in docs}) for docs in row[1:] if docs]
    return best_by_terms(terms, k)
