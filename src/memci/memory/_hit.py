"""What retrieval returns (:class:`Hit`), and how ranked lists are fused (:func:`rrf`).

Reciprocal rank fusion: an entry ranked ``r`` (1-based) by a retriever earns
``weight / (k + r)`` from it, and entries are ordered by the sum (``k = 60``, as in
Cormack et al. 2009). Ties keep the order of the first list that ranked them, so fusion
is deterministic. Only ranks matter: keyword (BM25) and dense (cosine) scores never need
to be comparable.

Plain RRF favours agreement: a message both retrievers rank tenth beats one a single
retriever ranks first. When the retrievers see different things (a paraphrase only the
embedder matches, a rare name only keywords match), the best hit of each is then pushed
down by messages that merely share the topic. :func:`fuse` therefore keeps each list's
first entry at the top (``keep_first`` of :func:`rrf`); when the question names a time,
only the best hit inside that time is kept there, since the time is the stronger cue.
Lists it is told only add (``after``: the message search's dense lists) come after
everything the others found: fused in, a dense list pushed down the keyword matches that
held the evidence on real conversations.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeVar

from memci._dataclasses import dataclass
from memci.messages import Message

if TYPE_CHECKING:
    from memci.store._items import MemoryItem

__all__ = ["RRF_K", "Hit", "fuse", "rrf"]

RRF_K = 60

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result.

    ``message`` is the stored message (with ``metadata``, ``seq``, ``created_at``); for a
    memory item it is a synthetic assistant message holding the item's text, and ``item``
    is set. ``page`` is the page number of the message in its session (the count of user
    messages with seq ≤ the hit's), or the page an episodic item remembers. ``score`` is
    higher for better hits; ``retrievers`` names the retrievers that found it
    (``"keyword"``, ``"dense"``, ``"time"``); ``session`` is the session's name.
    """

    message: Message
    page: int | None
    score: float
    retrievers: tuple[str, ...]
    session: str | None
    item: MemoryItem | None = None

    @property
    def kind(self) -> Literal["message", "item"]:
        """``"message"`` for a stored message, ``"item"`` for a memory item."""
        return "item" if self.item is not None else "message"

    @property
    def text(self) -> str:
        """The hit's text: the message's content, or the item's text."""
        return self.message.content

    @property
    def created_at(self) -> datetime | None:
        """When the message was stored (or the item became valid)."""
        return self.message.created_at

    @property
    def source(self) -> str:
        """Where it came from, for a reader: ``session#page/seq`` or ``memory:<id>``."""
        if self.item is not None:
            return f"memory:{self.item.id}"
        return f"{self.session}#p{self.page}/{self.message.seq}"


def rrf(
    lists: Mapping[str, Sequence[K]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
    keep_first: Collection[str] = (),
) -> list[tuple[K, float, tuple[str, ...]]]:
    """Fuse ranked lists: ``(key, score, names of the lists that hold it)``, best first.

    The first entry of each list named in ``keep_first`` goes to the top (in the order of
    their own fused scores): its score is raised by the best score of the fusion, so
    order and score agree.
    """
    scores: dict[K, float] = {}
    found: dict[K, tuple[str, ...]] = {}
    for name, ranked in lists.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        alone = (name,)
        for rank, key in _first_ranks(ranked, k + 1):
            names = found.get(key)
            if names is None:
                scores[key] = weight / rank
                found[key] = alone
            else:
                scores[key] += weight / rank
                found[key] = names + alone
    if scores:
        lift = max(scores.values())
        for key in {lists[name][0] for name in keep_first if lists.get(name)}:
            scores[key] += lift
    # Best first; a tie keeps the order keys were first listed in (a stable sort keeps it
    # when reversed too).
    ranked_keys = sorted(scores, key=scores.__getitem__, reverse=True)
    return [(key, scores[key], found[key]) for key in ranked_keys]


def _first_ranks(ranked: Sequence[K], start: int) -> Iterable[tuple[int, K]]:
    """``(rank, key)`` of ``ranked``, ranks from ``start``; a repeated key at its first only.

    The keys after a repeat keep their places' ranks.
    """
    unique = dict.fromkeys(ranked)
    if len(unique) == len(ranked):
        return enumerate(unique, start=start)
    first: dict[K, int] = {}
    for rank, key in enumerate(ranked, start=start):
        first.setdefault(key, rank)
    return ((rank, key) for key, rank in first.items())


def fuse(
    lists: Mapping[str, Sequence[K]],
    *,
    weights: Mapping[str, float] | None = None,
    after: Collection[str] = (),
) -> list[tuple[K, float, tuple[str, ...]]]:
    """:func:`rrf` that keeps each retriever's best hit at the top.

    Lists named ``time`` or ending in ``:time`` hold what matched inside a time the
    question names; when there are any, only their first entries are kept at the top.
    The lists named in ``after`` only add: what they alone found comes after everything
    the others found (fused among themselves), and an entry the others found too keeps
    their rank (their names list it). With no other list holding anything, they rank as
    any list would.
    """
    extra = {name: lists[name] for name in after if lists.get(name)}
    main = {name: found for name, found in lists.items() if name not in after}
    if not extra or not any(main.values()):
        timed = [name for name in lists
                 if (name == "time" or name.endswith(":time")) and lists[name]]
        return rrf(lists, weights=weights, keep_first=timed or list(lists))
    ranked = fuse(main, weights=weights)
    added = fuse(extra, weights=weights)
    also = {key: names for key, _, names in added}
    floor, best = ranked[-1][1], added[0][1]
    out = [(key, score, names + also.get(key, ())) for key, score, names in ranked]
    seen = {key for key, _, _ in ranked}
    # Below the last of the others, in their own order.
    out += [(key, floor * 0.999 * score / best, names)
            for key, score, names in added if key not in seen]
    return out
