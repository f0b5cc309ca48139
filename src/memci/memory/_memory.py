"""Long-term memory of a store as one object: messages, items, and search across both.

:class:`Memory` bundles the :class:`~memci.memory.MessageIndex` and the
:class:`~memci.memory.MemoryItems` of one store with one analyzer and one embedder, and
answers :meth:`Memory.search` — messages (and items) of a session, or of every session of
its user, fused by reciprocal rank. :func:`search` is the same for callers that hold only a
store; it keeps one :class:`Memory` per store.

Scopes of :meth:`Memory.search`: ``"session"`` searches the session's messages, and the
items the session may see; ``"user"`` searches the messages of every session of the same
user and tenant (a session without a user falls back to itself), and the user's items;
``"tenant"`` searches every session of the tenant. Nothing crosses a tenant.

Inside :meth:`Memory.reading` (a build's load phase: the page's gather, then the gather
again after archiving) memory is read as of one moment: its version, the sessions a
search covers (their index caught up), the items' rankings and rows and the session's
entries from its window on are read once, and the searches after the first reuse them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from typing import Literal

from memci._dataclasses import dataclass, field
from memci.errors import InvalidInputError
from memci.memory._embed import Embedder, embedder_from_env
from memci.memory._hit import Hit, fuse
from memci.memory._index import ADDS, Candidate, MessageIndex, TimeMode
from memci.memory._items import Kept, Level, MemoryItem, MemoryItems, Scope
from memci.memory._time import TimeRange, time_hint
from memci.messages import Message
from memci.store import MemoryVersion, SessionRecord, Store
from memci.text import Analyzer

__all__ = ["Memory", "memory_for", "search"]

_SCOPES: tuple[Level, ...] = ("session", "user", "tenant")
DOCS_READ = 128  # a session's entries read from its window on for the search's bound
_Fused = tuple[tuple[str, int], float, tuple[str, ...]]
_ItemsKey = tuple[object, ...]
_ScopeKey = tuple[str, str, str | None, int]


@dataclass(slots=True)
class _Reads:
    """What one :meth:`Memory.reading` block has read: reused by its later searches."""

    version: MemoryVersion | None = None
    sessions: dict[_ScopeKey, list[int]] = field(default_factory=dict)
    # read with the version (see Memory.version), caught up at the first search
    behind: dict[_ScopeKey, tuple[list[int], list[tuple[int, int]]]] = field(
        default_factory=dict)
    item_lists: dict[_ItemsKey, dict[str, list[int]]] = field(default_factory=dict)
    items: dict[int, MemoryItem] = field(default_factory=dict)
    # session id -> (a seq, its first entries from that seq on): the window's first entries
    docs_from: dict[int, tuple[int, list[tuple[int, int]]]] = field(default_factory=dict)


class Memory:
    """The long-term memory of ``store``: index messages, remember items, search both.

    Create it outside any write transaction (it applies migrations and may build an
    FTS5 table). ``page_of(session_id, seq)`` overrides the page number of hits (by
    default: user messages with seq ≤ the hit's, counted at indexing).
    """

    def __init__(
        self,
        store: Store,
        *,
        analyzer: str | Analyzer | None = None,
        embedder: Embedder | Literal["env"] | None = "env",
        time_mode: TimeMode = "boost",
        page_of: Callable[[int, int], int] | None = None,
    ) -> None:
        chosen = embedder_from_env() if embedder == "env" else embedder
        self.store = store
        self.messages = MessageIndex(store, analyzer=analyzer, embedder=chosen,
                                     time_mode=time_mode, page_of=page_of)
        self.items = MemoryItems(store, analyzer=self.messages.analyzer, embedder=chosen)
        self.embedder = chosen
        self._local = threading.local()  # the thread's open reading() block, if any

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Within the block, read memory's version, sessions, item rankings and index once.

        The searches of the block after the first reuse what it read (a build's gathers:
        the page's, then again without what the plan archives). Nested blocks are the
        outer one. Per thread: another thread's searches read for themselves.
        """
        if getattr(self._local, "reads", None) is not None:
            yield
            return
        self._local.reads = _Reads()
        try:
            with self.messages.rows.reading():  # and the index's size and changes, once
                yield
        finally:
            self._local.reads = None

    def _reads(self) -> _Reads | None:
        reads: _Reads | None = getattr(self._local, "reads", None)
        return reads

    # -- writing -------------------------------------------------------------------------

    def index(self, session: SessionRecord, messages: Sequence[Message]) -> int:
        """Index stored messages: one transaction, or part of the caller's ``store.atomic()``.

        See :meth:`MessageIndex.index`.
        """
        return self.messages.index(session, messages)

    def remember(
        self, scope: Scope, text: str, kind: str = "fact", subject: str | None = None,
        source: str | None = None,
    ) -> MemoryItem:
        """Store a memory item (see :meth:`MemoryItems.remember`)."""
        return self.items.remember(scope, text, kind, subject, source)

    def remember_page(
        self, session: SessionRecord, page_no: int, text: str, summary: str | None = None
    ) -> MemoryItem:
        """Keep an archived or evicted page as episodic memory."""
        return self.items.remember_page(session, page_no, text, summary)

    def remember_pages(
        self, session: SessionRecord, pages: Sequence[tuple[int, str, str | None]], *,
        said_at: Mapping[int, datetime] | None = None,
    ) -> None:
        """Keep archived or evicted pages (``(page, text, summary)``) as episodic memory.

        ``said_at``: when each page was said (see :meth:`MemoryItems.remember_pages`).
        """
        self.items.remember_pages(session, pages, said_at=said_at)

    def remember_many(self, scope: Scope, kind: str, entries: Sequence[Kept]) -> None:
        """Store many items of ``scope`` and ``kind`` at once: :meth:`MemoryItems.remember_many`."""
        self.items.remember_many(scope, kind, entries)

    def recall(self, query: str, *, scope: Scope, k: int = 10) -> list[Hit]:
        """Items visible in ``scope`` that best match ``query``."""
        return self.items.recall(query, scope=scope, k=k)

    # -- searching -----------------------------------------------------------------------

    def _covered(self, session: SessionRecord, scope: Level) -> list[int]:
        """Ids of the sessions ``scope`` covers, seen from ``session``, their index caught up.

        One read when none lags; inside :meth:`reading`, once per scope.
        """
        if scope not in _SCOPES:
            raise InvalidInputError(f"scope must be one of {', '.join(_SCOPES)}, not {scope!r}")
        reads = self._reads()
        key = _scope_key(session, scope)
        if reads is not None and key in reads.sessions:
            return reads.sessions[key]
        if key[3]:  # the session's own
            sessions = [session.id]
            added = self.messages.sync(sessions)
        else:
            found = reads.behind.pop(key, None) if reads is not None else None
            sessions, behind = (found if found is not None
                                else self.messages.rows.sessions_behind(session.tenant, key[2]))
            added = self.messages.catch_up(behind)
        if reads is not None:
            reads.sessions[key] = sessions
            if added:  # what was read before the catch-up is behind it
                reads.version = None
                reads.docs_from.clear()
        return sessions

    def _first_doc(self, session_id: int, seq: int) -> int | None:
        """:meth:`MessageSearch.first_doc` (inside :meth:`reading`, read once per session).

        The block's first search reads the session's first :data:`DOCS_READ` entries from
        its window on; a later one (after archiving, the window starts later) finds its
        bound among them, or reads again when its window starts past them. Not the whole
        window: a large one holds thousands of entries, read at every build for a bound
        that archiving moves by a few pages.
        """
        reads = self._reads()
        if reads is None:
            return self.messages.rows.first_doc(session_id, seq)
        kept = reads.docs_from.get(session_id)
        if kept is None or not _covers(kept, seq):
            kept = reads.docs_from[session_id] = (
                seq, self.messages.rows.docs_from(session_id, seq, DOCS_READ))
        return next((doc for at, doc in kept[1] if at >= seq), None)

    def _item_lists(self, query: str, owner: Scope, depth: int,
                    kinds: Collection[str] | None, exclude_kinds: Collection[str],
                    time_range: TimeRange | None) -> Callable[[], dict[str, list[int]]]:
        """:meth:`MemoryItems.ranked` started; the returned call gives the lists.

        Beside the caller's reads where the store serves several at once
        (:meth:`Store.beside`). Inside :meth:`reading`, ranked once per question.
        """
        reads = self._reads()
        key: _ItemsKey = (query, owner, depth, None if kinds is None else tuple(kinds),
                          tuple(exclude_kinds), time_range)
        if reads is not None and key in reads.item_lists:
            kept = reads.item_lists[key]
            return lambda: kept
        started = self.store.beside(partial(
            self.items.ranked, query, owner, depth=depth, kinds=kinds,
            exclude_kinds=exclude_kinds, time_range=time_range))
        if reads is None:
            return started

        def kept_once() -> dict[str, list[int]]:
            lists = reads.item_lists[key] = started()
            return lists

        return kept_once

    def search(
        self,
        query: str,
        *,
        session: SessionRecord,
        k: int = 10,
        scope: Level = "session",
        items: bool = True,
        item_kinds: Collection[str] | None = None,
        exclude_item_kinds: Collection[str] = (),
        now: datetime | None = None,
        time_range: TimeRange | None = None,
        exclude_from_seq: int | None = None,
    ) -> list[Hit]:
        """Return the ``k`` best messages (and items) for ``query`` in ``scope``.

        ``exclude_from_seq`` drops the session's own messages from that seq on (the ones
        already in the context window).
        """
        if not isinstance(query, str):
            raise InvalidInputError("a search query must be a string")
        if k <= 0:
            return []
        sessions = self._covered(session, scope)
        # One look at the index for the ranked lists and the load of the hits.
        with self.messages.rows.reading():
            return self._search(query, session, sessions, k, scope, items, item_kinds,
                                exclude_item_kinds, now, time_range, exclude_from_seq)

    def _search(
        self, query: str, session: SessionRecord, sessions: list[int], k: int, scope: Level,
        items: bool, item_kinds: Collection[str] | None, exclude_item_kinds: Collection[str],
        now: datetime | None, time_range: TimeRange | None, exclude_from_seq: int | None,
    ) -> list[Hit]:
        """:meth:`search` over ``sessions``, their index caught up."""
        index = self.messages
        if time_range is None and index.time_mode != "off":
            time_range = time_hint(query, now=now)
        depth = max(50, 3 * k)
        # Only this session, and all of it excluded (in the window): no message can come
        # back, so none is searched. The index still catches up, a few messages a build,
        # rather than all at once at the first search that runs.
        everything_excluded = (sessions == [session.id] and exclude_from_seq is not None
                               and exclude_from_seq <= 1)
        message_lists: dict[str, list[Candidate]] = {}
        read: dict[int, tuple[Message, int]] = {}  # messages read by the search, by doc
        # The items' ranking first: where the store can, it runs beside the messages'.
        item_lists = (self._item_lists(query, Scope.of(session, scope), depth, item_kinds,
                                       exclude_item_kinds, time_range) if items else None)
        if not everything_excluded:
            index.embed_pending()
            # Searching only this session, its excluded messages are left out inside the
            # search (they are its newest entries), so the depth holds others; searching
            # several, they are left out below.
            below = (self._first_doc(session.id, exclude_from_seq)
                     if exclude_from_seq is not None and sessions == [session.id] else None)
            reads = self._reads()  # a build's reading() has read memory's version: reused
            message_lists = index.ranked_lists(
                query, depth=depth, sessions=sessions, time_range=time_range, below=below,
                read=read, version=reads.version if reads is not None else None)
        lists: dict[str, list[tuple[str, int]]] = {}
        candidates: dict[int, Candidate] = {}
        for name, found in message_lists.items():
            keep = [c for c in found if not (exclude_from_seq is not None
                                             and c.session_id == session.id
                                             and c.seq >= exclude_from_seq)]
            lists[name] = [("m", c.doc) for c in keep]
            candidates.update({c.doc: c for c in keep})
        if item_lists is not None:
            for name, ids in item_lists().items():
                lists[f"items:{name}"] = [("i", i) for i in ids]
        weights = index.fusion_weights()
        weights["items:time"] = index.time_weight
        fused = fuse(lists, weights=weights, after=ADDS)
        reads = self._reads()
        item_hits = {h.item.id: h for h in self.items.hits(
            [(key[1], score, _base(names)) for key, score, names in fused[:k] if key[0] == "i"],
            reads.items if reads is not None else None) if h.item is not None}
        fused = _episodes_after(fused, k, item_hits)
        message_hits = index.load_docs([(candidates[key[1]], score, _base(names))
                                        for key, score, names in fused if key[0] == "m"],
                                       read)
        out: list[Hit] = []
        for (kind, ref), _score, _names in fused:
            hit = message_hits.get(ref) if kind == "m" else item_hits.get(ref)
            if hit is not None:
                out.append(hit)
        return out

    def version(self, session: SessionRecord | None = None,
                scope: Level = "session") -> MemoryVersion:
        """Changes whenever a message is indexed, an item changes or anything is deleted.

        For caches: a deletion may leave the newest message and item as they were, so
        the store's erasure epoch is part of it. One read (inside :meth:`reading`, once).
        ``session`` and ``scope``: the search that follows, inside :meth:`reading`: the
        sessions it covers of a user or tenant are read in the same statement (it catches
        them up when it runs, as it would have read them).
        """
        reads = self._reads()
        if reads is not None and reads.version is not None:
            return reads.version
        version = (self._with_sessions(reads, session, scope)
                   if reads is not None and session is not None else None)
        if version is None:
            version = self.messages.rows.memory_version()
        if reads is not None:
            reads.version = version
        return version

    def _with_sessions(self, reads: _Reads, session: SessionRecord,
                       scope: Level) -> MemoryVersion | None:
        """The version, and into ``reads`` the sessions ``scope`` covers, in one statement.

        None (nothing read) when the search of ``scope`` covers only ``session``, or its
        sessions are read already.
        """
        if scope not in _SCOPES:
            return None  # the search refuses it
        key = _scope_key(session, scope)
        if key[3] or key in reads.sessions:
            return None
        version, sessions, behind = self.messages.rows.version_and_sessions(
            session.tenant, key[2])
        reads.behind[key] = (sessions, behind)
        return version


def _covers(kept: tuple[int, list[tuple[int, int]]], seq: int) -> bool:
    """Whether entries read from ``kept[0]`` on (at most :data:`DOCS_READ`) hold ``seq``'s bound."""
    start, entries = kept
    return start <= seq and (len(entries) < DOCS_READ or seq <= entries[-1][0])


def _scope_key(session: SessionRecord, scope: Level) -> _ScopeKey:
    """What identifies the sessions ``scope`` covers seen from ``session``.

    ``(scope, tenant, user or None, the session's id when only its own, else 0)``.
    """
    own = scope == "session" or (scope == "user" and not session.user)
    return (scope, session.tenant, None if own or scope == "tenant" else session.user,
            session.id if own else 0)


def _episodes_after(fused: Sequence[_Fused], k: int, items: dict[int, Hit]) -> list[_Fused]:
    """The ``k`` first of ``fused`` with the episodic items among them after the rest.

    An episodic item is an archived page's text, and its messages are searched
    themselves: it only adds, as the dense list does, and the places it leaves go to the
    next messages. Fused by rank, every archived page's item took every other place from
    the messages (their words said twice, the page's text and its contents lines), so a
    chat whose pages became items as they left the window found less than the same chat
    imported at once, whose pages had not yet. ``items``: the hits of the items among the
    first ``k`` (the ones after them are not loaded, and not needed).
    """
    def episodic(entry: _Fused) -> bool:
        hit = items.get(entry[0][1]) if entry[0][0] == "i" else None
        return hit is not None and hit.item is not None and hit.item.kind == "episodic"

    first = list(fused[:k])
    episodes = [entry for entry in first if episodic(entry)]
    if not episodes:
        return first
    kept = [entry for entry in first if not episodic(entry)]
    kept += [entry for entry in fused[k:] if entry[0][0] == "m"][:len(episodes)]
    return (kept + episodes)[:k]


def _base(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n.partition(":")[2] or n for n in names))


def memory_for(store: Store) -> Memory:
    """Return the :class:`Memory` of ``store`` with default settings (one per store).

    Kept with the store (:meth:`~memci.store.Store.kept`): it goes when the store does.
    """
    return store.kept("memory", lambda: Memory(store))


def search(
    store: Store,
    *,
    query: str,
    k: int = 10,
    session: SessionRecord,
    scope: Level = "session",
    now: datetime | None = None,
) -> list[Hit]:
    """Search ``session``'s messages and memory items (or its user's, or its tenant's)."""
    return memory_for(store).search(query, session=session, k=k, scope=scope, now=now)
