"""What the store keeps to search messages: one entry per message, keyword text, vectors.

The message search index is derived from the log: one entry (a *doc*, numbered in the
order entries are added) per stored message, with its session, seq, role, page number
and time (Unix seconds), and the keyword text of its analyzer (see
:mod:`memci.text._analyzer`): its own text and the tail of the messages before it. A vector
store keeps one vector per message, item or document chunk and embedder.

Invariants every backend keeps:

- a message has at most one entry: :meth:`MessageSearch.add` of one already indexed adds
  nothing; doc numbers grow, so the newest doc has the largest number;
- system messages have an entry (so catching up knows where it stands) but are never
  found: no keyword text, and :meth:`MessageSearch.matching` and
  :meth:`MessageSearch.in_range` leave them out;
- keyword search ranks by relevance (BM25 or a backend's equivalent, best first, ties by
  doc number); a filter (sessions, time, roles) is applied before ranking, so the ``k``
  best within it come back;
- every write is one transaction of its own or joins the store's open ``atomic()``
  block (a message and its entry are committed together).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

from memci._dataclasses import dataclass
from memci._records import NamedTuple
from memci.messages import Message

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = [
    "COMMON_MAX",
    "POSTINGS_MAX",
    "RARE",
    "RECENT",
    "TERMS_MAX",
    "WINDOW_MAX",
    "Before",
    "Candidate",
    "IndexedMessage",
    "MemoryVersion",
    "MessageSearch",
    "SearchDoc",
    "SearchFilter",
    "VectorStore",
    "best_by_terms",
    "rarest",
]

# How a keyword search splits its terms, the same on every backend (so both find the same
# entries): a term held by more than RARE entries of the search's scope is common; the
# rarest terms, at most TERMS_MAX of them and POSTINGS_MAX postings in all, are ranked by
# BM25 in the whole scope; up to COMMON_MAX of the rest only among the scope's RECENT
# newest entries (see memci.store.sqlite._search and memci.store.postgres._scoped).
RARE = 3_000
POSTINGS_MAX = 12_000
RECENT = 2_000
TERMS_MAX = 12
COMMON_MAX = 4
# A time window holding at most WINDOW_MAX entries of the search's sessions bounds the
# search by their doc numbers (its first and last); one holding none finds nothing.
WINDOW_MAX = 2_000


MemoryVersion = tuple[int, int, int, int]
"""What long-term memory's caches are keyed by (:meth:`MessageSearch.memory_version`)."""


class Candidate(NamedTuple):
    """A ranked message before it is loaded: its doc number, session id and seq."""

    doc: int
    session_id: int
    seq: int


class SearchDoc(NamedTuple):
    """One message as the index takes it: where it is, when, and its keyword text.

    ``created`` is Unix seconds; ``text`` is the message's searchable text and
    ``context`` the tail of the messages before it (both as written, not analyzed).
    """

    session_id: int
    seq: int
    role: str
    page: int
    created: float
    text: str
    context: str


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Which entries a search may return: of these sessions, in ``[start, end)``, roles.

    None means no restriction; ``start`` and ``end`` are Unix seconds. ``below``: only
    entries with a smaller doc number (what a session's context window holds is left out
    so: see :meth:`MessageSearch.first_doc`).
    """

    sessions: Collection[int] | None = None
    start: float | None = None
    end: float | None = None
    roles: Collection[str] | None = None
    below: int | None = None


class IndexedMessage(NamedTuple):
    """A stored message with its entry's doc number and its session id."""

    doc: int
    session_id: int
    message: Message


class Before(NamedTuple):
    """What indexing reads of a session's log before a message, in one statement.

    ``page``: the page of the message before it (the user messages up to it); ``epoch``:
    the log's epoch (it grows whenever messages are deleted, see
    :meth:`~memci.store.MessageLog.log_head`); ``recent``: the newest non-system messages
    before it, newest first (role, parts, time).
    """

    page: int
    epoch: int
    recent: list[Message]


class MessageSearch(Protocol):
    """The message index of one analyzer: add entries, search, and load what was found."""

    analyzer: Analyzer

    def add(self, doc: SearchDoc) -> int:
        """Add an entry (and its keyword text); 1, or 0 when the message has one already."""
        ...

    def add_many(self, docs: Sequence[SearchDoc]) -> int:
        """Add entries (and their keyword text) in one write; how many were new."""
        ...

    def recent(self, session_id: int, seq: int, limit: int) -> list[Message]:
        """Up to ``limit`` non-system messages before ``seq``, newest first (role, parts)."""
        ...

    def before(self, session_id: int, seq: int, limit: int) -> Before:
        """The page before ``seq``, the log's epoch and :meth:`recent` of ``seq``, at once."""
        ...

    def keyword_backlog(self) -> list[IndexedMessage]:
        """Entries of non-system messages that have no keyword text, by session and seq."""
        ...

    def add_keyword(self, doc: int, session_id: int, text: str, context: str) -> None:
        """Give the entry ``doc`` its keyword text."""
        ...

    def behind(self, sessions: Collection[int] | None) -> list[tuple[int, int]]:
        """``(session id, last indexed seq)`` of the sessions whose log is ahead of the index."""
        ...

    def unindexed(self, session_id: int, after: int) -> list[Message]:
        """The session's stored messages with seq > ``after``, in order."""
        ...

    def embed_backlog(self, after: int, limit: int) -> list[IndexedMessage]:
        """Up to ``limit`` entries of non-system messages with doc > ``after``, in order."""
        ...

    def keyword(
        self, plan: MatchQuery, *, k: int, where: SearchFilter, context_weight: float
    ) -> list[Candidate]:
        """The ``k`` best entries for ``plan`` within ``where``, best first.

        ``context_weight`` weighs the preceding messages' text against the message's own.
        """
        ...

    def among(self, docs: Collection[int], where: SearchFilter) -> list[Candidate]:
        """The entries ``docs`` that pass ``where``."""
        ...

    def first_doc(self, session_id: int, seq: int) -> int | None:
        """The doc number of the session's first entry from ``seq`` on (None: none yet).

        A session's entries are numbered in the order of their seqs, and after every
        entry made before them.
        """
        ...

    def docs_from(self, session_id: int, seq: int, limit: int) -> list[tuple[int, int]]:
        """``(seq, doc number)`` of the session's first ``limit`` entries from ``seq`` on.

        By seq: :meth:`first_doc` of ``seq`` and of every later seq up to the last one
        returned (of every later seq when fewer than ``limit`` came back), from one read.
        """
        ...

    def matching(self, where: SearchFilter) -> list[Candidate]:
        """Every entry of a non-system message that passes ``where``."""
        ...

    def in_range(self, where: SearchFilter, k: int) -> list[Candidate]:
        """Up to ``k`` entries of non-system messages passing ``where``, oldest first."""
        ...

    def load(self, candidates: Sequence[Candidate]) -> dict[int, tuple[Message, int]]:
        """``{doc: (message, page)}`` of the candidates still stored (named sessions)."""
        ...

    def session_name(self, session_id: int) -> str:
        """The name of a session (its id as text when it is gone)."""
        ...

    def sessions_of(self, tenant: str, user: str | None = None) -> list[int]:
        """Ids of the sessions of ``tenant`` (of ``user`` when given), oldest first."""
        ...

    def sessions_behind(
        self, tenant: str, user: str | None = None
    ) -> tuple[list[int], list[tuple[int, int]]]:
        """:meth:`sessions_of` and :meth:`behind` of those sessions, in one read."""
        ...

    def count(self) -> int:
        """How many entries of non-system messages there are."""
        ...

    def version(self) -> int:
        """The newest doc number (0 when empty): grows whenever a message is indexed."""
        ...

    def reading(self) -> AbstractContextManager[None]:
        """A block (on this thread) whose searches and loads see the index as of one read.

        What a search keeps between searches is checked against the index's size and
        change count once in the block, not at each ranked list and load.
        """
        ...

    def memory_version(self) -> MemoryVersion:
        """The newest doc number, item revision, erasure (0: none), writers in flight.

        One read. What a cache of long-term memory is keyed by: it changes whenever a
        message is indexed, an item changes or anything is deleted. Where writers commit
        out of the order of their numbers (PostgreSQL: a doc numbered before the newest
        may commit after it is read), the fourth part names the transactions in
        progress, so a version read while a write was in flight differs from every one
        read after it ended (SQLite: 0, its writers commit one at a time).
        """
        ...

    def version_and_sessions(
        self, tenant: str, user: str | None = None
    ) -> tuple[MemoryVersion, list[int], list[tuple[int, int]]]:
        """:meth:`memory_version` and :meth:`sessions_behind`, in one read."""
        ...


class VectorStore(Protocol):
    """The vectors of one embedder: per ``kind`` (``message``, ``item``, ``chunk``) and ref.

    Search is exact and scores by cosine similarity; a zero vector is stored but never
    found, and a zero query finds nothing.
    """

    backend: str

    def add(
        self, kind: str, rows: Sequence[tuple[int, int | None]],
        vectors: Sequence[Sequence[float]],
    ) -> None:
        """Store ``vectors`` for ``rows`` of ``(ref, session id)``; a ref's old one goes."""
        ...

    def delete(self, kind: str, refs: Collection[int]) -> None:
        """Forget the vectors of ``refs``."""
        ...

    def missing(self, kind: str, limit: int) -> list[int]:
        """Up to ``limit`` refs of ``kind`` (items, chunks) without a vector, oldest first."""
        ...

    def newest_ref(self, kind: str) -> int:
        """The largest ref of ``kind`` that has a vector (0 when none has)."""
        ...

    def count(self, kind: str) -> int:
        """How many refs of ``kind`` have a vector."""
        ...

    def search(
        self, kind: str, vector: Sequence[float], k: int, *,
        sessions: Collection[int] | None = None, refs: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest ``(ref, cosine)`` within ``sessions`` and ``refs``, best first."""
        ...


def best_by_terms(terms: Sequence[tuple[float, set[int]]], n: int) -> list[tuple[float, int]]:
    """The ``n`` entries with the most weight of the terms they hold; the newest at a tie.

    ``terms``: each term's weight and the entries holding it. An entry's score is the
    sum of its terms' weights, so the entries holding the same terms score alike: they are
    taken a group at a time (one per set of terms, 2**n - 1 at most), by set operations in
    C, best group first, rather than scored one by one (~0.25 against ~1 ms for four
    terms).
    """
    groups: dict[float, list[tuple[list[set[int]], list[set[int]]]]] = {}
    for mask in range(1, 1 << len(terms)):
        score = 0.0
        inside: list[set[int]] = []
        outside: list[set[int]] = []
        for i, (weight, docs) in enumerate(terms):
            if mask >> i & 1:
                score += weight  # added in the terms' order, as one by one would
                inside.append(docs)
            else:
                outside.append(docs)
        groups.setdefault(score, []).append((inside, outside))
    best: list[tuple[float, int]] = []
    for score in sorted(groups, reverse=True):
        found: set[int] = set()
        for inside, outside in groups[score]:
            docs = set.intersection(*inside)
            if outside and docs:
                docs.difference_update(*outside)
            found |= docs
        best.extend((score, d) for d in sorted(found, reverse=True)[:n - len(best)])
        if len(best) >= n:
            break
    return best


def rarest(counted: Sequence[tuple[int, str]]) -> tuple[list[str], list[str]]:
    """``(rare, left)``: the terms a search ranks by BM25, and the rest, from ``counted``.

    ``counted``: each term with how many entries hold it, rarest first. The rarest are
    taken while they are at most :data:`TERMS_MAX` and their postings at most
    :data:`POSTINGS_MAX` (the rarest always); ``left`` keeps ``counted``'s order.
    """
    rare: list[str] = []
    postings = 0
    for df, part in counted:
        if len(rare) >= TERMS_MAX or (rare and postings + df > POSTINGS_MAX):
            break
        rare.append(part)
        postings += df
    return rare, [part for _, part in counted[len(rare):]]
