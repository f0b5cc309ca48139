"""The long-term extractor of seed 002: episodes and preferences for one query, cached.

:meth:`Gatherer.gather` fetches the best episodic hits for the query (past messages and
episodic items of the scope, at most ``max_episodes``, default 3) and the user's current
preferences, and returns them as texts with sources for the Retrieval segment
(:class:`RetrievalResult`).

The two are fetched one after the other, in the caller's thread. Seed 002 fetches them in
parallel; measured, a two-thread pool made a gather slower (6.4 against 5.7 ms at 100k
messages): the preferences take ~0.1 ms, and the threads' handing over of the GIL costs
more than that.

Results are cached for ``ttl`` seconds (default 5 minutes). The cache key holds the query,
the scope, the session and the memory's version (which grows with every indexed message
and every item change), so anything new invalidates it at once; the TTL only bounds how
long an unchanged answer is reused.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal

from memci._dataclasses import dataclass
from memci.memory._hit import Hit
from memci.memory._items import Level, MemoryItem, Scope
from memci.memory._memory import Memory
from memci.store import MemoryVersion, SessionRecord

__all__ = [
    "DEFAULT_CACHE_TTL",
    "DEFAULT_MAX_EPISODES",
    "Gatherer",
    "RetrievalResult",
    "Retrieved",
]

DEFAULT_MAX_EPISODES = 3
DEFAULT_CACHE_TTL = 300.0


@dataclass(frozen=True, slots=True)
class Retrieved:
    """One text for the Retrieval segment, with where it came from."""

    text: str
    source: str
    kind: Literal["episode", "preference", "document"]
    score: float
    session: str | None = None  # an episode that is a stored message: its session ...
    seq: int | None = None  # ... and seq (so a context leaves out what it shows anyway)
    created_at: datetime | None = None  # when it was said (or the item became valid)
    page: int | None = None  # the page of its session it belongs to (message or episode)


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """What :meth:`Gatherer.gather` found for a query (seed 002's LongTermContext)."""

    query: str
    episodes: tuple[Hit, ...]
    preferences: tuple[MemoryItem, ...]
    elapsed_ms: float
    cached: bool = False

    @property
    def texts(self) -> tuple[Retrieved, ...]:
        """Episodes (best first), then preferences (newest first), as texts with sources."""
        out = [Retrieved(h.text, h.source, "episode", h.score, h.session,
                         h.message.seq if h.item is None else None, h.created_at, h.page)
               for h in self.episodes]
        out.extend(Retrieved(p.text, f"preference:{p.id}", "preference", 0.0)
                   for p in self.preferences)
        return tuple(out)


_Key = tuple[str, str, int, int, int | None, int, MemoryVersion, datetime | None]


class Gatherer:
    """Episodes and preferences for a query, cached with a TTL."""

    def __init__(
        self,
        memory: Memory,
        *,
        max_episodes: int = DEFAULT_MAX_EPISODES,
        max_preferences: int = 20,
        ttl: float = DEFAULT_CACHE_TTL,
        max_entries: int = 256,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.memory = memory
        self.max_episodes = max_episodes
        self.max_preferences = max_preferences
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._cache: OrderedDict[_Key, tuple[float, RetrievalResult]] = OrderedDict()
        self._lock = threading.Lock()
        self._term_cache: dict[str, frozenset[str]] = {}
        self._kept_preferences: dict[
            tuple[Scope, int, tuple[int, ...]], tuple[MemoryItem, ...]] = {}
        self.hits = 0
        self.misses = 0

    def gather(
        self,
        query: str,
        *,
        session: SessionRecord,
        scope: Level = "user",
        max_episodes: int | None = None,
        exclude_from_seq: int | None = None,
        now: datetime | None = None,
    ) -> RetrievalResult:
        """Episodes and preferences for ``query``, as seen from ``session`` in ``scope``.

        ``exclude_from_seq``: the session's messages from that seq on are already in the
        context window and are not returned as episodes. ``now``: what a time in the query
        ("yesterday") counts from (the current time by default).
        """
        started = time.perf_counter()
        count = self.max_episodes if max_episodes is None else max_episodes
        key: _Key = (query.strip(), scope, session.id, count, exclude_from_seq,
                     self.max_preferences, self.memory.version(session, scope), now)
        moment = self._clock()
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and moment - entry[0] < self.ttl:
                self._cache.move_to_end(key)
                self.hits += 1
                cached = entry[1]
                return RetrievalResult(cached.query, cached.episodes, cached.preferences,
                                       (time.perf_counter() - started) * 1000, cached=True)
            self.misses += 1
        episodes = self._episodes(query, session, scope, count, exclude_from_seq, now)
        preferences = self._preferences(Scope.of(session, scope), key[6])
        result = RetrievalResult(query, tuple(episodes), self._relevant(query, preferences),
                                 (time.perf_counter() - started) * 1000)
        with self._lock:
            self._cache[key] = (moment, result)
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return result

    def _preferences(
        self, owner: Scope, version: MemoryVersion
    ) -> tuple[MemoryItem, ...]:
        """The current preferences ``owner`` sees, newest first.

        Kept while the items and the deletions stay as they were (``version``'s last two):
        each new question asks for the same ones.
        """
        key = (owner, self.max_preferences, version[1:])
        found = self._kept_preferences.get(key)
        if found is None:
            found = tuple(self.memory.items.preferences(owner, limit=self.max_preferences))
            with self._lock:
                if len(self._kept_preferences) >= 256:
                    self._kept_preferences.clear()
                self._kept_preferences[key] = found
        return found

    def _relevant(
        self, query: str, preferences: Sequence[MemoryItem]
    ) -> tuple[MemoryItem, ...]:
        """The preferences that share a searchable term with ``query``.

        A preference helps answer a question about what it names ("what food do I like?"),
        and is noise beside any other question: it is shown only when the two share a
        term, as the index would match them.
        """
        asked = self._terms(query)
        if not asked:
            return ()
        return tuple(p for p in preferences if asked & self._terms(p.text))

    def _terms(self, text: str) -> frozenset[str]:
        """The searchable terms of ``text`` (a preference's are kept: it is asked again)."""
        terms = self._term_cache.get(text)
        if terms is None:
            terms = frozenset(self.memory.messages.analyzer.query(text).terms)
            with self._lock:
                if len(self._term_cache) >= 4_096:
                    self._term_cache.clear()
                self._term_cache[text] = terms
        return terms

    def _episodes(
        self, query: str, session: SessionRecord, scope: Level, count: int,
        exclude_from_seq: int | None, now: datetime | None,
    ) -> list[Hit]:
        if count <= 0 or not query.strip():
            return []
        hits = self.memory.search(query, session=session, k=count, scope=scope,
                                  exclude_item_kinds=("preference",), now=now,
                                  exclude_from_seq=exclude_from_seq)
        return hits[:count]

    def clear(self) -> None:
        """Drop every cached result."""
        with self._lock:
            self._cache.clear()
            self._kept_preferences.clear()

    def close(self) -> None:
        """Drop every cached result (a gatherer holds nothing else to release)."""
        self.clear()
