"""Long-term memory items in scopes tenant > user > session: remember, supersede, recall.

Kinds: ``episodic`` (an archived or evicted page and its summary, one per session page),
``preference`` (a user's taste or setting), ``fact`` and any other name for explicit items.

Invariants:

- one current item per owner, kind and normalized text: remembering the same thing again
  merges into it (``seen`` grows, a new summary or source replaces the old);
- one current item per owner, kind and ``subject``: a newer item about a subject
  supersedes the older, which keeps its row with ``valid_to`` and ``superseded_by`` set —
  nothing is deleted, :meth:`MemoryItems.history` returns the chain;
- visibility: a session-scope read sees the session's items, its user's and the tenant's;
  a user-scope read sees every item of the user (all their sessions) and the tenant's; a
  tenant-scope read sees all of the tenant. Nothing crosses tenants or users.

Items are kept by the store's item part (``store.items(analyzer)``, an
:class:`~memci.store.ItemStore`); :class:`Scope` and :class:`MemoryItem` are its records.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal

from memci import _trace
from memci._records import NamedTuple
from memci.errors import InvalidInputError
from memci.memory._embed import Embedder, embedder_from_env, query_vector, speaks
from memci.memory._hit import Hit, fuse
from memci.memory._time import TimeRange, time_hint, without_time
from memci.messages import Message, TextPart
from memci.store import (
    ItemFilter,
    ItemStore,
    Level,
    MemoryItem,
    NewItem,
    Scope,
    SessionRecord,
    Store,
    VectorStore,
)
from memci.text import Analyzer, get_analyzer, normalize

__all__ = ["Kept", "Level", "MemoryItem", "MemoryItems", "Scope"]

_EMBED_LIMIT = 2_000


class Kept(NamedTuple):
    """One item :meth:`MemoryItems.remember_many` keeps (see :meth:`MemoryItems.remember`)."""

    text: str
    subject: str | None = None
    source: str | None = None
    summary: str | None = None
    page: int | None = None
    at: datetime | None = None  # when it became true (None: now)


class MemoryItems:
    """Memory items of a store: remember, merge, supersede, list and recall them."""

    def __init__(
        self,
        store: Store,
        *,
        analyzer: str | Analyzer | None = None,
        embedder: Embedder | Literal["env"] | None = "env",
        clock: Any = time.time,
    ) -> None:
        from memci.memory._index import DEFAULT_ANALYZER

        self.store = store
        self.analyzer = (get_analyzer(analyzer or DEFAULT_ANALYZER)
                         if analyzer is None or isinstance(analyzer, str) else analyzer)
        self.embedder = embedder_from_env() if embedder == "env" else embedder
        self.vectors: VectorStore | None = (
            store.vectors(self.embedder.name) if self.embedder is not None else None)
        self.rows: ItemStore = store.items(self.analyzer)
        self._clock = clock
        self._lock = threading.Lock()

    # -- writing -------------------------------------------------------------------------

    def remember(
        self,
        scope: Scope,
        text: str,
        kind: str = "fact",
        subject: str | None = None,
        source: str | None = None,
        *,
        summary: str | None = None,
        page: int | None = None,
        at: datetime | None = None,
    ) -> MemoryItem:
        """Store an item owned by ``scope``; merge a duplicate, supersede by ``subject``.

        ``at`` is when the fact became true (default now). Returns the current item.
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("a memory item needs non-empty text")
        if not isinstance(kind, str) or not kind.strip():
            raise InvalidInputError("a memory item needs a kind (e.g. 'fact', 'preference')")
        norm = normalize(text)
        subj = normalize(subject) if subject else None
        now = self._clock()
        since = at.timestamp() if at is not None else now
        rows = self.rows
        with self.store.atomic():
            rows.hold(scope, kind)
            same = rows.find(scope, kind, norm)
            if same is not None:
                rows.merge(same, now=now, summary=summary, source=source, subject=subj)
                if summary is not None and self.vectors is not None:
                    self.vectors.delete("item", [same])  # its text changed: embed again
                return self._get(same)
            new_id = rows.add(NewItem(scope, kind, subj, text, norm, summary, source, page,
                                      since, now))
            if subj is not None:
                rows.supersede(scope, kind, subj, by=new_id, since=since, now=now)
            return self._get(new_id)

    def remember_page(
        self, session: SessionRecord, page_no: int, text: str, summary: str | None = None,
        *, at: datetime | None = None,
    ) -> MemoryItem:
        """Keep an archived or evicted page (and its summary) as episodic memory.

        One current item per session page: remembering the page again with other text
        supersedes the old one; with the same text it only updates the summary.
        """
        return self.remember(Scope.of(session), text, "episodic", subject=f"page {page_no}",
                             source=f"{session.name}#p{page_no}", summary=summary,
                             page=page_no, at=at)

    def remember_pages(
        self, session: SessionRecord, pages: Sequence[tuple[int, str, str | None]], *,
        said_at: Mapping[int, datetime] | None = None,
    ) -> None:
        """:meth:`remember_page` for each ``(page, text, summary)``, in a few statements.

        ``said_at``: when each page was said (its first message's time), which is when its
        item holds from (a replayed or imported chat keeps its own dates); now for a page
        not in it. An older item of the same page still ends now.
        """
        said = said_at or {}
        self.remember_many(Scope.of(session), "episodic", [
            Kept(text, f"page {page_no}", f"{session.name}#p{page_no}", summary, page_no,
                 said.get(page_no)) for page_no, text, summary in pages])

    def remember_many(self, scope: Scope, kind: str, entries: Sequence[Kept]) -> None:
        """:meth:`remember` for each of ``entries`` (items of ``scope`` and ``kind``) at once.

        An archive event keeps many pages, and the user's facts, at once: their items are
        found, merged, added and superseded as one batch each, with what remembering them
        one after another gives (the texts met again in the batch are merged as they would
        be then, as a batch of their own after the first). A superseded item ends now, not
        at the new item's ``at``.
        """
        if not isinstance(kind, str) or not kind.strip():
            raise InvalidInputError("a memory item needs a kind (e.g. 'fact', 'preference')")
        now = self._clock()
        batch: dict[str, NewItem] = {}  # norm -> the item to add
        again: list[Kept] = []  # texts met twice: merged after
        for entry in entries:
            if not isinstance(entry.text, str) or not entry.text.strip():
                raise InvalidInputError("a memory item needs non-empty text")
            norm = normalize(entry.text)
            if norm in batch:
                again.append(entry)
                continue
            batch[norm] = NewItem(
                scope, kind, normalize(entry.subject) if entry.subject else None, entry.text,
                norm, entry.summary, entry.source, entry.page,
                entry.at.timestamp() if entry.at is not None else now, now)
        rows = self.rows
        with self.store.atomic():
            rows.hold(scope, kind)
            seen = {same: batch.pop(norm)
                    for norm, same in rows.find_many(scope, kind, list(batch)).items()}
            rows.merge_many(seen, now=now)
            summarized = [same for same, item in seen.items() if item.summary is not None]
            if summarized and self.vectors is not None:
                self.vectors.delete("item", summarized)  # their text changed: embed again
            new = list(batch.values())
            ids = rows.add_many(new)
            rows.supersede_many(scope, kind, {
                item.subject: item_id for item, item_id in zip(new, ids, strict=True)
                if item.subject is not None}, since=now, now=now)
            if again:  # each merged into the item its first meeting kept, as a batch
                self.remember_many(scope, kind, again)

    def remember_preference(
        self, scope: Scope, text: str, subject: str | None = None, source: str | None = None
    ) -> MemoryItem:
        """Keep a preference (usually user-scoped); a subject makes newer ones supersede."""
        return self.remember(scope, text, "preference", subject=subject, source=source)

    def forget(self, item_id: int) -> None:
        """End an item's validity now (it stays in the history)."""
        self.rows.end(item_id, self._clock())

    # -- reading -------------------------------------------------------------------------

    def _get(self, item_id: int) -> MemoryItem:
        found = self.rows.get(item_id)
        assert found is not None
        return found

    def get(self, item_id: int) -> MemoryItem | None:
        """Return the item ``item_id``, or None."""
        return self.rows.get(item_id)

    def items(
        self, scope: Scope, *, kinds: Collection[str] | None = None, current: bool = True,
        limit: int | None = None,
    ) -> list[MemoryItem]:
        """Items visible in ``scope`` (current ones by default), newest first."""
        return self.rows.visible(ItemFilter(scope, kinds, current=current), limit=limit)

    def preferences(self, scope: Scope, *, limit: int | None = None) -> list[MemoryItem]:
        """Return the current preferences visible in ``scope``, newest first."""
        return self.items(scope, kinds=("preference",), limit=limit)

    def history(self, item_id: int) -> list[MemoryItem]:
        """Every version of the item's subject (or the item alone), oldest first."""
        return self.rows.history(item_id)

    def version(self) -> int:
        """Return a number that grows with every change to items (for caches)."""
        return self.rows.version()

    def embed_pending(self, *, batch: int = 128) -> int:
        """Embed items that have no vector yet (a no-op without an embedder)."""
        if self.vectors is None or self.embedder is None:
            return 0
        done = 0
        while True:
            items = self.rows.get_many(self.vectors.missing("item", batch))
            if not items:
                return done
            texts = [(i.text + ("\n" + i.summary if i.summary else ""))[:_EMBED_LIMIT]
                     for i in items]
            vectors = _trace.embed(self.embedder, texts)
            self.vectors.add("item", [(i.id, i.session_id) for i in items], vectors)
            done += len(items)

    def ranked(
        self, query: str, scope: Scope, *, depth: int = 50,
        kinds: Collection[str] | None = None, exclude_kinds: Collection[str] = (),
        include_superseded: bool = False, time_range: TimeRange | None = None,
    ) -> dict[str, list[int]]:
        """Ranked item ids per retriever (``keyword``, ``dense``, ``time``)."""
        where = ItemFilter(scope, kinds, tuple(exclude_kinds), current=not include_superseded)
        lists: dict[str, list[int]] = {}
        inside: set[int] = set()
        query = without_time(query, time_range)  # the range stands for those words
        plan = self.analyzer.query(query)
        if plan.match is not None or plan.short_terms:
            lists["keyword"] = self.rows.keyword(plan, where, depth)
        if time_range is not None:
            inside = self.rows.valid_within(where, time_range.start.timestamp(),
                                            time_range.end.timestamp())
            lists["time"] = [i for i in lists.get("keyword", []) if i in inside]
        if (self.vectors is not None and self.embedder is not None and query.strip()
                and speaks(self.embedder, query) and (allowed := self.rows.ids(where))):
            self.embed_pending()
            vector = query_vector(self.embedder, query)
            found = self.vectors.search("item", vector, depth, refs=allowed)
            lists["dense"] = [ref for ref, _ in found]
            if time_range is not None:
                both = {"k": lists.get("time", []),
                        "d": [r for r in lists["dense"] if r in inside]}
                lists["time"] = [i for i, _, _ in fuse(both)]
        return lists

    def recall(
        self,
        query: str,
        *,
        scope: Scope,
        k: int = 10,
        kinds: Collection[str] | None = None,
        include_superseded: bool = False,
        now: datetime | None = None,
        time_range: TimeRange | None = None,
    ) -> list[Hit]:
        """Return the ``k`` items visible in ``scope`` that best match ``query``."""
        if k <= 0:
            return []
        if time_range is None:
            time_range = time_hint(query, now=now)
        lists = self.ranked(query, scope, depth=max(50, 3 * k), kinds=kinds,
                            include_superseded=include_superseded, time_range=time_range)
        fused = fuse(lists)[:k]
        return self.hits([(i, score, names) for i, score, names in fused])

    def hits(self, ranked: Sequence[tuple[int, float, tuple[str, ...]]],
             known: dict[int, MemoryItem] | None = None) -> list[Hit]:
        """Hits for ranked item ids.

        ``known``: items already read (by id); the others are read and added to it.
        """
        kept = known if known is not None else {}
        missing = [item_id for item_id, _, _ in ranked if item_id not in kept]
        if missing:
            kept.update((i.id, i) for i in self.rows.get_many(missing))
        items = {item_id: kept[item_id] for item_id, _, _ in ranked if item_id in kept}
        names = self.rows.session_names({i.session_id for i in items.values()
                                         if i.session_id is not None})
        out: list[Hit] = []
        for item_id, score, retrievers in ranked:
            item = items.get(item_id)
            if item is None:
                continue
            session = names[item.session_id] if item.session_id is not None else None
            out.append(Hit(message=item_message(item, session), page=item.page, score=score,
                           retrievers=retrievers, session=session, item=item))
        return out


def item_message(item: MemoryItem, session: str | None = None) -> Message:
    """Return a memory item as an assistant message, with what it is in ``metadata``."""
    text = item.text if not item.summary else f"{item.summary}\n\n{item.text}"
    meta = {"memory_item": item.id, "kind": item.kind, "scope": item.scope}
    if item.subject:
        meta["subject"] = item.subject
    if item.source:
        meta["source"] = item.source
    return Message("assistant", (TextPart(text),), metadata=MappingProxyType(meta),
                   created_at=item.valid_from, session=session)
