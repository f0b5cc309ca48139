"""The context builder: what a session sends now, in three phases.

1. **Load** a snapshot: catch up with the log (new messages only), read the session's
   context version and, when another writer changed it, its page states; put into pages
   what the window may show (bounded by the budget: a backlog older than that is never
   read) and gather long-term memory once per page. O(window), never O(history).
2. **Plan** with no I/O: archive, evict and trim pages so the window fits its room, pair
   tool calls with their results, choose what memory to show. The plan runs once; a
   request's size in bytes is the sum of its messages' sizes, each measured once.
3. **Commit** what changed (page rows, events, the cut, the notebook lines and context
   pool entries it implies, long-term memory of archived pages, summary jobs) in one
   transaction guarded by the session's version: if another process or engine committed
   first, nothing is written and the build loads again and plans again. So every archive,
   recall and eviction is recorded exactly once, whichever process builds.

The request is then assembled from the plan and the working state as committed (rendered
once per change of the working state), and labelled by segment.
"""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import takewhile
from typing import Any

from memci.context._branches import cut_fits, pages_on, seq_at
from memci.context._budget import BudgetAllocator, PriorityRanker, Section
from memci.context._context import Context, ContextStats, Segment, ToolSpec
from memci.context._fit import CUT_FLOOR, cut_middle, floor_tokens
from memci.context._log import LogIndex
from memci.context._model import ContentsEntry
from memci.context._paged import PagedConfig, PagedContext
from memci.context._pairing import Pairing, stand_in_result
from memci.context._recipes import TITLES, Recipe, choose_recipe
from memci.context._services import SessionServices
from memci.context._session_log import SessionLog
from memci.context._settings import SessionSettings
from memci.context._strategies import OldestWindow, SummarizeWindow, WindowLoader
from memci.context._tool_views import ToolViews
from memci.errors import BudgetTooSmallError, StoreError, StoreFullError
from memci.memory import DocIndex, Memory, Retrieved, Scope
from memci.memory._judge import judge
from memci.memory._query import analyze_query
from memci.messages import Message, to_openai
from memci.store import SessionRecord
from memci.store._log import ContextChanges, ContextState
from memci.summarize import SummaryJobs
from memci.tokens import EstimateTokenizer, Tokenizer
from memci.workspace import CHINESE_TITLES, ENGLISH_TITLES, WorkState
from memci.workspace._summary import arguments_line

__all__ = ["REPLY_PRIMING", "ContextBuilder"]

REPLY_PRIMING = 3  # tokens every request spends priming the reply
_CONTENTS_FLOOR = 40  # tokens of a contents page that lists nothing (its title and ranges)
_STATE_FLOOR = 0.08  # share of the room the working state keeps whatever the window needs
_ATTEMPTS = 8  # builds planned again after losing a compare-and-swap, before giving up
_EPISODES_GATHERED = 40  # episodes gathered per page (a large budget shows many)
_RESERVED_LINES = 3  # memory lines held room for before the window is planned
_LINE_CHARS = 600  # characters of one memory line at most
_SOURCE_CHARS = 300  # characters of a notebook line's source at most (a call id may be longer)


@dataclass(frozen=True, slots=True)
class PageInfo:
    """Where one page of the followed branch is, and what it holds.

    ``place``: ``window`` (``detail``: current, recalled or active), ``contents`` (listed on
    the contents page) or ``evicted``; with another strategy than paged, ``window`` for
    every page.
    """

    page: int
    first_seq: int
    last_seq: int
    messages: int
    tokens: int
    place: str
    detail: str | None = None
    recall_count: int = 0
    last_recall_round: int | None = None
    archived_round: int | None = None


class _Conflict(Exception):
    """Another writer committed the session's context state first."""


def _entry_line(message: Message) -> str:
    from memci.summarize import summarize_entry

    return summarize_entry(message)


def _summarize_texts(texts: Sequence[str], max_tokens: int) -> str:
    from memci.summarize import summarize_text

    return summarize_text(texts, max_tokens)


@dataclass(slots=True)
class _Snapshot:
    """What the load phase read and derived, for one plan."""

    recipe: Recipe
    limit: int
    specs: tuple[ToolSpec, ...]
    tools_tokens: int
    agent: tuple[ToolSpec, ...]  # the agent's own tools, sent before memci's
    agent_tokens: int
    head: list[Message]
    room: int
    caps: dict[str, int]
    candidates: tuple[Retrieved, ...]
    gathered: bool  # the candidates were gathered by this build (saved at commit)
    state: Message | None
    reserve: int


def _is_system(message: Message) -> bool:
    return message.role == "system"


def _contents_tokens(window: Sequence[Message]) -> int:
    """Tokens of the contents page (or summary) a window starts with."""
    return _tokens(takewhile(_is_system, window))


@dataclass(slots=True)
class _Plan:
    """What the plan decided: the window, and what to commit."""

    window: list[Message]
    window_tokens: int  # of ``window``, counted once by _window
    retrieval: Message | None
    changes: ContextChanges
    hidden: list[int] = field(default_factory=list)
    evicted: dict[int, ContentsEntry] = field(default_factory=dict)
    archived: list[tuple[int, list[Message]]] = field(default_factory=list)
    payload_bytes: int = 0
    cache: dict[str, Any] = field(default_factory=dict)  # derived values, saved unguarded
    memory_room: int = 0  # tokens the retrieval segment may take

    @property
    def events(self) -> tuple[str, ...]:
        out = tuple(f"{e.kind} page {e.page}" if e.pages == 1
                    else f"{e.kind} pages {e.page}-{e.last_page}" for e in self.changes.events)
        if "summarize" in self.changes.values:
            out += ("summarize",)
        return out + (("steps hidden",) if self.hidden else ())


class ContextBuilder:
    """Builds the contexts of one session (load, plan, commit); owns its strategy state.

    Not thread-safe by itself: the session calls it under its lock.
    """

    def __init__(
        self, services: SessionServices, record: SessionRecord, settings: SessionSettings,
        tokenizer: Tokenizer, log: SessionLog, views: ToolViews,
        work: Callable[[], WorkState], specs: Callable[[bool], tuple[ToolSpec, ...]],
    ) -> None:
        self.services = services
        self.record = record
        self.settings = settings
        self.tokenizer = tokenizer
        self.log = log
        self.views = views
        self.work = work
        self.specs = specs
        self.allocator = BudgetAllocator()
        self.ranker = PriorityRanker()
        self.summaries = SummaryJobs(services.jobs) if services.jobs is not None else None
        self.counts = {"archive": 0, "recall": 0, "evict": 0}
        self.builds = 0
        self.build_ms = 0.0
        self.saved = 0
        self._version = -1  # the context version the strategy state was loaded at
        self._generation = -1  # the log's branch generation it was loaded over
        self._values: dict[str, Any] = {}
        self._tool_tokens: dict[tuple[str, ...], int] = {}
        self._agent_tokens: dict[tuple[tuple[str, str], ...], int] = {}
        self._contract: tuple[str, Message] = ("", Message.system(""))
        self._state_cache: tuple[tuple[Any, ...], Message | None] = ((), None)
        self._pairing = Pairing(self.tokenizer)
        self._floor = (0, 0)  # (newest seq, its floor): see _newest_floor
        # the last request's tools and messages (see _prefix)
        self._previous: tuple[object, list[Message]] = (None, [])
        self._sizes: dict[tuple[int | None, int | None, int], int] = {}
        # a memory text -> what its line shows; (that, kind, source, date) -> the line
        # and its tokens
        self._shown: dict[str, str] = {}
        self._lines: dict[tuple[str, str, str, datetime | None], tuple[str, int]] = {}
        self._expired_round = 0
        self.paged: PagedContext | None = None
        self.window: OldestWindow | SummarizeWindow | None = None

    # -- the strategy state --------------------------------------------------------------

    def reset(self) -> None:
        """Forget the strategy state: the next load reads it again from the store."""
        self._version = -1

    def _restore(self, state: ContextState) -> None:
        """Make the strategy objects from the store's state (on open, or after a change)."""
        s, log = self.settings, self.log
        self._values = dict(state.values)
        self.counts = {"archive": 0, "recall": 0, "evict": 0, **state.counts}
        self.paged, self.window = None, None
        loader = WindowLoader(log.index, log.load_views)
        if s.strategy == "paged":
            paged = PagedContext(
                log=log.index, loader=log.load_views, tokenizer=self.tokenizer,
                line_of=_entry_line,
                config=PagedConfig(
                    low_watermark=s.archive_low_watermark,
                    evict_unrecalled_rounds=s.evict_unrecalled_rounds,
                    evict_unchanged_rounds=s.evict_unchanged_rounds,
                    contents_max_tokens=s.contents_max_tokens,
                    contents_entry_lines=s.contents_entry_lines, language=s.language,
                    recent_max_tokens=s.ctx_recent_max_tokens),
                detect_language=log.language, summarized=self.summaries is not None,
            )
            rows = pages_on(state.pages, log.index) if log.off_branch else list(state.pages)
            base = self._values.get("paged.base")
            first_active = 0
            if isinstance(base, Mapping) and self._base_holds(base):
                first_active = int(base["first_active"])
            paged.restore(rows, self.counts, first_active=first_active)
            paged.evicted_entry = self._evicted_entry
            cut = self._values.get("paged.cut")
            if isinstance(cut, Mapping) and log.cut_holds(cut):
                paged.restore_cut(int(cut["page"]), int(cut["hidden"]))
            self.paged = paged
        elif s.strategy == "summarize":
            window = SummarizeWindow(loader, self.tokenizer, _summarize_texts,
                                     low_watermark=s.archive_low_watermark)
            saved = self._values.get("summarize")
            if isinstance(saved, Mapping) and (not log.off_branch or cut_fits(
                    log.index, 0, int(saved["cut"]), saved.get("through"))):
                window.restore(int(saved["cut"]), str(saved["text"]))
            self.window = window
        else:
            self.window = OldestWindow(loader, self.tokenizer, s.max_messages)
        self._version = state.version
        self._generation = log.generation

    def _base_holds(self, base: Mapping[str, Any]) -> bool:
        """Whether a saved first active page is that page on the followed branch."""
        page = int(base.get("first_active", 0))
        index = self.log.index
        if page <= 1:
            return page == 1
        if page > index.pages + 1:
            return False
        at = base.get("at")
        return (at is None or page > index.pages
                or seq_at(index, index.page_starts[page - 1]) == at)

    def _evicted_entry(self, page: int) -> ContentsEntry | None:
        """The saved entry of an evicted page (read only when it is recalled)."""
        row = self.services.store.context.page(self.record, page)
        if row is None or row.state != "evicted" or not 0 < page <= self.log.index.pages:
            return None
        if self.log.index.page_seqs(page) != (row.first_seq, row.last_seq):
            return None  # saved on another branch
        return ContentsEntry(row.page, row.first_seq, row.last_seq, row.lines,
                             row.archived_round, row.recall_count, row.last_recall_round,
                             source=row.source)

    def current(self) -> None:
        """Catch up with the log, and with the context state when another writer changed it."""
        self.log.sync()
        version, _ = self.services.store.context.head(self.record)
        if version != self._version or self.log.generation != self._generation:
            self._restore(self.services.store.context.load(self.record))

    # -- building ------------------------------------------------------------------------

    def build(
        self, budget: int | None, recipe: str, agent: tuple[ToolSpec, ...] = ()
    ) -> Context:
        """The context to send now (see the module's docstring for the phases).

        ``agent``: the agent's own tools (checked), budgeted and carried before memci's.
        """
        started = time.perf_counter()
        for _ in range(_ATTEMPTS):
            snap = self._load(budget, recipe, agent)
            plan = self._plan(snap)
            self._regather(snap, plan)
            self._check_window(snap, plan)
            try:
                self._commit(snap, plan)
            except _Conflict:
                self.reset()  # another writer got there first: load again, plan again
                continue
            except StoreFullError:
                # The request is right; only its bookkeeping could not be saved. A session
                # keeps answering while the disk is full: the next build plans it again.
                self.reset()
            return self._assemble(snap, plan, started)
        raise StoreError(f"session {self.record.name!r}: {_ATTEMPTS} builds in a row lost "
                         "to concurrent writers; try again")

    def _load(self, budget: int | None, recipe: str, agent: tuple[ToolSpec, ...]) -> _Snapshot:
        self.current()
        index = self.log.index
        chosen = choose_recipe(recipe, newest_role=index.roles[-1] if len(index) else None,
                               call_pending=self.log.call_pending())
        self._expire_pins()
        limit = budget if budget is not None else self.settings.budget
        agent_tokens = self._agent_tools_tokens(agent)
        prompt = self._head_system(())
        self._check_fits(limit, prompt, index, agent_tokens)
        # Room is kept for the tools that bring history back; the request carries them only
        # when this build leaves some of it out (see _assemble). They (and their contract)
        # take a quarter of the budget at most, and only what the system prompt, the
        # agent's tools and the newest message leave.
        prompt_tokens = sum(m.tokens or 0 for m in prompt)
        spare = (limit - agent_tokens - prompt_tokens - self._newest_floor() - REPLY_PRIMING
                 - _CONTENTS_FLOOR)
        specs = self.specs(True)
        for keep in (("recall_page", "search_memory"), ("recall_page",), ()):
            tools_tokens = self._tools_tokens(specs)
            contract = sum(m.tokens or 0 for m in self._head_system(specs)) - prompt_tokens
            if tools_tokens <= (limit - agent_tokens) // 4 and tools_tokens + contract <= spare:
                break  # a small budget cannot carry every schema: keep the essential
            specs = tuple(s for s in specs if s.name in keep)
        head = self._head_system(specs)
        tools_tokens = self._tools_tokens(specs)
        room = (limit - agent_tokens - tools_tokens - sum(m.tokens or 0 for m in head)
                - REPLY_PRIMING)
        # The profile follows the setting, not each page's hits: a profile that came and
        # went with the hits would resize the contents page back and forth.
        candidates, gathered = self._candidates()
        caps = self._trimmed(self.allocator.allocate(
            max(room, 0), turns=index.pages, has_retrieval=self._retrieval_on()), room,
            retrieving=self._retrieving(candidates))
        state = self._state(chosen, caps["state"])
        state_tokens = (state.tokens or 0) if state else 0
        retrieval = self._retrieval_reserve(candidates, caps["retrieval"])
        reserve = self._head_reserve(chosen, room - state_tokens - retrieval)
        if self.paged is not None:
            ready: dict[int, tuple[str, ...]] = {}
            if self.summaries is not None and self.paged.archive.contents:
                keys = {self._summary_key(p): p for p in self.paged.waiting()}
                ready = {keys[k]: lines for k, lines in self.summaries.ready(
                    {k: self._entries(p) for k, p in keys.items()}).items()}
            # A window holds at most the budget: an active backlog older than that is
            # archived as one range, never read.
            self.paged.prepare(max(limit, 4_000), ready)
        elif self.window is not None:
            self.window.loader.prefetch(0 if isinstance(self.window, SummarizeWindow)
                                        and not self.window.cut else self.window_start(limit))
        return _Snapshot(chosen, limit, specs, tools_tokens, agent, agent_tokens, head, room,
                         caps, candidates, gathered, state, reserve)

    def _newest_need(self) -> int:
        """Tokens the newest message needs in the window (a tool output may be cut)."""
        index = self.log.index
        if not len(index):
            return 0
        return self._newest_floor() if index.roles[-1] == "tool" else max(
            index.tokens[-1], self._newest_floor())

    def _newest_floor(self) -> int:
        """Tokens the newest message keeps at least in a request, with what must come with it.

        A tool result comes with the assistant message that made its call, and a call not
        yet answered with its stand-in result: providers require the pair. (Under the paged
        strategy the page's opener comes too when it fits, and gives way when it does not.)
        Their text may be cut (:func:`~memci.context._fit.fit_messages`); images, tool calls and
        framing count whole. Cached by the newest seq: a stored message never changes.
        """
        index = self.log.index
        n = len(index)
        if not n:
            return 0
        seq = index.seqs[-1]
        if self._floor[0] == seq:
            return self._floor[1]
        start = n - 1
        while start > 0 and index.roles[start] == "tool":
            start -= 1
        if start == n - 1 and index.tokens[-1] <= CUT_FLOOR and not self.log.call_pending():
            floor = index.tokens[-1]
        else:
            shown = dict(zip(index.seqs[start:], index.tokens[start:], strict=True))
            unit = [replace(m, tokens=shown[m.seq or 0])
                    for m in self.log.load_views(index.seqs[start], seq) if m.seq in shown]
            floor = sum(floor_tokens(m, self.tokenizer) for m in unit)
            answered = {m.tool_result.call_id for m in unit if m.tool_result is not None}
            floor += sum(stand_in_result(c.id, self.tokenizer).tokens or 0
                         for m in unit for c in m.tool_calls if c.id not in answered)
        self._floor = (seq, floor)
        return floor

    def _check_fits(self, limit: int, head: Sequence[Message], index: LogIndex,
                    agent_tokens: int = 0) -> None:
        """Raise when the system prompt, the agent's tools and the newest message pass the budget.

        Every request holds them all (memci's own tools give way). The newest message is
        cut only when it alone is larger than what the budget leaves (its text's head and
        tail, marked; see :meth:`_newest_floor`), never left out; below that, a build
        cannot keep the budget.
        """
        head_tokens = sum(m.tokens or 0 for m in head)
        newest = self._newest_floor() if len(index) else 0
        need = head_tokens + agent_tokens + newest + REPLY_PRIMING
        if need > limit:
            self._too_small(limit, head_tokens, agent_tokens, newest, need)

    def _too_small(self, limit: int, head_tokens: int, agent_tokens: int, newest: int,
                   need: int) -> None:
        tools = (f", the agent's tools ({agent_tokens} tokens of schemas)"
                 if agent_tokens else "")
        fix = ("send fewer or shorter tools, or shorten the system prompt" if agent_tokens
               else "shorten the system prompt")
        raise BudgetTooSmallError(
            f"session {self.record.name!r}: the budget of {limit} tokens cannot hold the "
            f"system prompt ({head_tokens} tokens){tools} and the newest message (at "
            f"least {newest} tokens of it); raise the budget to at least {need} or {fix}",
            budget=limit, needed=need)

    def _check_window(self, snap: _Snapshot, plan: _Plan) -> None:
        """Raise, before anything is committed, when the window's messages pass the budget.

        :meth:`_check_fits` estimates what the newest messages keep when cut; this checks
        what the plan holds, so that a build keeps its budget or says it cannot.
        """
        head_tokens = sum(m.tokens or 0 for m in snap.head)
        recent = plan.window_tokens - _contents_tokens(plan.window)
        need = head_tokens + snap.agent_tokens + recent + REPLY_PRIMING
        if need > snap.limit:
            self._too_small(snap.limit, head_tokens, snap.agent_tokens, recent, need)

    def window_start(self, limit: int) -> int:
        """The oldest log position a window of ``limit`` tokens can show (for prefetching)."""
        index = self.log.index
        total = index.total()
        position = len(index)
        while position > 0 and total - index.cum[position - 1] <= 2 * limit:
            position -= 1
        if isinstance(self.window, SummarizeWindow):
            position = min(position, self.window.cut)
        return position

    def _plan(self, snap: _Snapshot) -> _Plan:
        """Decide the window and what changes; reads nothing."""
        reserved = self._retrieval_reserve(snap.candidates, snap.caps["retrieval"])
        state_tokens = (snap.state.tokens or 0) if snap.state else 0
        # The newest message is never cut for memory: at a small budget the reserve for
        # retrieved lines, then the working state, give way first.
        newest = self._newest_need() + _CONTENTS_FLOOR
        snap.reserve = max(0, min(snap.reserve, snap.room - newest))  # it gives way too
        free = snap.room - snap.reserve - newest
        reserved = max(0, min(reserved, free - state_tokens))
        if state_tokens > free:
            snap.state, state_tokens = None, 0
        room = snap.room - reserved - state_tokens - snap.reserve
        limit_bytes = self.settings.max_request_bytes
        payload = 0
        for _ in range(8):
            window, window_tokens = self._window(room, snap.caps, snap.recipe)
            if not limit_bytes:
                break
            payload = self._request_bytes([*snap.head, *window], (*snap.agent, *snap.specs))
            if payload <= limit_bytes or room <= 1:
                break
            room = max(1, int(room * limit_bytes / payload * 0.9))
        if (self.paged is not None and self.paged.feeds_state()
                and snap.caps["state"] > state_tokens):
            # Pages leave the window: their lines join the working state (context pool,
            # notebook), which then takes its share. The window is planned for that now,
            # so the next build, with the state grown, has nothing more to archive.
            grown = min(snap.caps["state"], max(free, 0))
            if grown > state_tokens:
                window, window_tokens = self._window(room - (grown - state_tokens), snap.caps,
                                                     snap.recipe)
                state_tokens = grown
        # Memory takes what the window leaves: at least what was reserved for it, and the
        # rest of the budget when the window sits below its high watermark.
        left = snap.room - state_tokens - snap.reserve - window_tokens
        retrieval = self._retrieval_message(snap.candidates, window, max(reserved, left))
        values: dict[str, Any] = {}
        plan = _Plan(window, window_tokens, retrieval, ContextChanges(values=values),
                     payload_bytes=payload,
                     cache={"retrieval": self._values["retrieval"]} if snap.gathered else {},
                     memory_room=max(reserved, left))
        if self.paged is not None:
            paged = self.paged
            rows, events = paged.take_changes()
            plan.hidden = paged.take_hidden()
            plan.evicted = paged.take_evicted()
            plan.archived = paged.take_archived()
            index = self.log.index
            cut = paged.cut
            if cut != self._saved_cut() and (cut[1] or self._saved_cut()[1]):
                page, hidden = cut
                start = index.page_span(page)[0] if 0 < page <= index.pages else 0
                values["paged.cut"] = {"page": page, "hidden": hidden,
                                       "through": seq_at(index, start + hidden)}
            if paged.first_active != self._saved_base():
                first = paged.first_active
                values["paged.base"] = {
                    "first_active": first,
                    "at": seq_at(index, index.page_starts[first - 1])
                    if first <= index.pages else None}
            plan.changes = ContextChanges(rows, events, values)
        elif isinstance(self.window, SummarizeWindow) and self.window.changed:
            self.window.changed = False
            summary = self.window.summary
            values["summarize"] = {
                "cut": self.window.cut,
                "text": summary.content.split("\n", 1)[1] if summary else "",
                "through": seq_at(self.log.index, self.window.cut - 1)}
        return plan

    def _regather(self, snap: _Snapshot, plan: _Plan) -> None:
        """Gather again when this build's plan archived what the gather left out.

        A gather leaves out what is in the window then (see :meth:`_candidates`); pages
        this very plan archived left the window after it, so memory is gathered again
        without them left out: retrieval is decided after what is archived. The page
        keeps the shares its first plan gave memory and the working state, so its later
        requests are planned as this one was.
        """
        if not self._retrieval_on() or not self.log.index.pages:
            return
        saved = self._values.get("retrieval")
        if (not isinstance(saved, Mapping)
                or int(saved.get("from", saved["opener"])) >= self._window_seq()):
            return
        share = self._retrieving(snap.candidates)
        snap.candidates, snap.gathered = self._candidates()
        self._values["retrieval"]["share"] = share
        plan.retrieval = self._retrieval_message(snap.candidates, plan.window,
                                                 plan.memory_room)
        plan.cache = {"retrieval": self._values["retrieval"]}

    def _retrieving(self, candidates: Sequence[Retrieved]) -> bool:
        """Whether memory takes its share of this page's requests: it found something.

        Decided by the page's first gather (and saved with it), so a gather again in the
        same build does not change how the page's requests are planned.
        """
        saved = self._values.get("retrieval")
        if isinstance(saved, Mapping) and "share" in saved:
            return bool(saved["share"])
        return bool(candidates)

    def _commit(self, snap: _Snapshot, plan: _Plan) -> None:
        """Write what the plan changed, once, if the context version is still ours."""
        # Everything a commit needs from the engine is fetched before its transaction:
        # no other lock is taken while the store's is held.
        store, memory = self.services.store, self.services.memory
        if not plan.changes and not plan.hidden:
            for key, value in plan.cache.items():
                store.context.put(self.record, key, value)
            return
        with store.atomic():
            if not store.context.commit(self.record, self._version, plan.changes):
                raise _Conflict
            self._note_hidden(plan.hidden)
            self._pool_evicted(plan.evicted)
            self._remember_archived(memory, plan.archived)
            listed = [(self._summary_key(page), messages) for page, messages in plan.archived
                      if self.paged is not None and page in self.paged.archive.contents]
            if self.summaries is not None and listed:
                self.summaries.submit_keyed(listed)
            for key, value in plan.cache.items():
                store.context.put(self.record, key, value)
        self._version += 1
        self._values.update(plan.changes.values)
        self._values.update(plan.cache)

    def _assemble(self, snap: _Snapshot, plan: _Plan, started: float) -> Context:
        """The request: head, working state, window, memory; labelled by segment."""
        window, window_tokens = plan.window, plan.window_tokens
        if snap.reserve:
            window = self._with_head(window, snap.reserve)
            window_tokens = _tokens(window)
        retrieval = plan.retrieval if window and window[-1].role != "assistant" else None
        retrieval_tokens = (retrieval.tokens or 0) if retrieval else 0
        state = snap.state
        if plan.evicted or plan.hidden:
            # What this build moved out went into the working state: show it in this very
            # request, the one whose prefix changes anyway, within what is left.
            left = snap.room - window_tokens - retrieval_tokens
            state = self._state(snap.recipe, min(snap.caps["state"], max(left, 0)))
        specs, tools_tokens = snap.specs, snap.tools_tokens
        if not self._left_out(window):
            # The whole history is in the request: recall_page and search_memory could not
            # act, so they are not offered (the room kept for them stays unused).
            offered = {s.name for s in self.specs(False)}
            specs = tuple(s for s in specs if s.name in offered)
            tools_tokens = self._tools_tokens(specs)
        head_tokens = sum(m.tokens or 0 for m in snap.head)
        state_tokens = (state.tokens or 0) if state else 0
        body: list[Message] = [*snap.head]
        segments = [Segment("system", 0, len(body), head_tokens)]
        if state is not None:
            segments.append(Segment("state", len(body), len(body) + 1, state_tokens))
            body.append(state)
        contents = list(takewhile(_is_system, window))
        contents_tokens = sum(m.tokens or 0 for m in contents)
        if contents:
            segments.append(Segment("contents", len(body), len(body) + len(contents),
                                    contents_tokens))
        segments.append(Segment("recent", len(body) + len(contents), len(body) + len(window),
                                window_tokens - contents_tokens))
        body.extend(window)
        if retrieval is not None:
            segments.append(Segment("retrieval", len(body), len(body) + 1, retrieval_tokens))
            body.append(retrieval)
        tools = (*snap.agent, *specs)  # the agent's first, then memci's
        total = (head_tokens + state_tokens + snap.agent_tokens + tools_tokens + window_tokens
                 + retrieval_tokens + REPLY_PRIMING)
        system = self.log.system
        # The conversation's own full history: its messages as stored, not memci's tools.
        full = self.log.raw_total + ((system.tokens or 0) if system else 0) + REPLY_PRIMING
        prefix = self._prefix(body, tools, snap.agent_tokens + tools_tokens)
        elapsed = (time.perf_counter() - started) * 1000
        stats = ContextStats(
            total_tokens=total, budget=snap.limit,
            sections={"system": head_tokens, "tools": tools_tokens,
                      "agent_tools": snap.agent_tokens, "state": state_tokens,
                      "retrieval": retrieval_tokens, "contents": contents_tokens,
                      "recent": window_tokens - contents_tokens},
            build_ms=elapsed, messages=len(body), full_tokens=full,
            strategy=self.settings.strategy, shares=snap.caps,
            prefix_tokens=prefix,
            request_bytes=plan.payload_bytes, events=plan.events, recipe=snap.recipe.name,
        )
        self.builds += 1
        self.build_ms += elapsed
        self.saved += stats.saved_tokens
        return Context(messages=body, stats=stats, tools=tools,
                       segments=tuple(s for s in segments if s.stop > s.start))

    # -- recall --------------------------------------------------------------------------

    def recall(self, page: int) -> str:
        """Bring page ``page`` back from the next build on (a tool call); committed once."""
        for _ in range(_ATTEMPTS):
            self.current()
            if self.paged is None:
                return "error: recall_page works with the paged strategy only"
            answer = self.paged.recall(page)
            rows, events = self.paged.take_changes()
            if not events:
                return answer
            store = self.services.store
            with store.atomic():
                if store.context.commit(self.record, self._version,
                                        ContextChanges(rows, events)):
                    self._version += 1
                    return answer
            self.reset()
        raise StoreError(f"session {self.record.name!r}: recall lost {_ATTEMPTS} times in a "
                         "row to concurrent writers; try again")

    def place_of(self, page: int) -> str:
        """Where a page is now: window, contents or evicted."""
        self.current()
        assert self.paged is not None
        return self.paged.place_of(page)

    def pages(self) -> list[PageInfo]:
        """Every page of the followed branch, oldest first, with its place."""
        self.current()
        index, paged = self.log.index, self.paged
        evicted = {r.page: r for r in pages_on(self.services.store.context.page_rows(
            self.record, state="evicted"), index)} if paged is not None else {}
        out: list[PageInfo] = []
        for page in range(1, index.pages + 1):
            first, last = index.page_seqs(page)
            start, end = index.page_span(page)
            info = PageInfo(page, first, last, end - start, index.page_tokens(page), "window",
                            "current" if page == index.pages else None)
            if paged is not None:
                place = paged.place_of(page)
                entry = (paged.recalled.get(page) or paged.archive.contents.get(page)
                         or paged.archive.evicted.get(page) or evicted.get(page))
                detail = (("current" if page == index.pages else "recalled"
                           if page in paged.recalled else "active")
                          if place == "window" else None)
                info = replace(info, place=place, detail=detail,
                               recall_count=entry.recall_count if entry else 0,
                               last_recall_round=entry.last_recall_round if entry else None,
                               archived_round=entry.archived_round if entry else None)
            out.append(info)
        return out

    def _left_out(self, window: Sequence[Message]) -> bool:
        """Whether a build's ``window`` leaves some of the history out (after its plan)."""
        if self.paged is not None:
            return (self.paged.first_active > 1 or bool(self.paged.archive.contents)
                    or self.log.raw_total > _tokens(window))
        return self.log.raw_total > sum(m.tokens or 0 for m in window if m.seq is not None)

    def has_left_window(self, limit: int | None = None) -> bool:
        """Whether some of the conversation is out of the window (at a budget of ``limit``).

        Then the tools that bring it back can act: an archived page, or a history longer
        than the budget (the build archives, so its contents page points at pages the
        model can recall at once).
        """
        if self.paged is not None and (self.paged.first_active > 1
                                       or self.paged.archive.contents):
            return True
        return self.log.index.total() > (limit or self.settings.budget)

    def first_window_page(self) -> int:
        """The oldest page still in the window."""
        return self.paged.first_active if self.paged is not None else self.log.index.pages

    # -- the window ----------------------------------------------------------------------

    def _window(self, room: int, caps: Mapping[str, int],
                recipe: Recipe) -> tuple[list[Message], int]:
        """The window within ``room``, its tool calls paired (stand-in results counted).

        With its tokens. The contents page (or summary) comes first, as system messages.
        """
        planned = self._planned(room, caps, recipe)
        window = self._pairing(planned)
        tokens = _tokens(window)
        grown = 0 if window is planned else tokens - _tokens(planned)
        if grown > 0 and room > 1:
            # Stand-in results of calls never answered take room the plan did not see.
            planned = self._planned(max(1, room - grown), caps, recipe)
            window = self._pairing(planned)
            tokens = _tokens(window)
        if tokens > room:
            # The newest messages, cut to their floor, fill the room: the contents page (or
            # summary) gives way in this request.
            contents = list(takewhile(_is_system, window))
            window, tokens = window[len(contents):], tokens - _contents_tokens(contents)
        return window, tokens

    def _planned(self, room: int, caps: Mapping[str, int], recipe: Recipe) -> list[Message]:
        if self.paged is not None:
            # seed 004's recent_window_policy: the tool loop keeps ``keep_rounds`` rounds in
            # full, and more while they fit (within ``tool_loop_tokens``, when set).
            steps = self.settings.keep_rounds if recipe.recent_steps else 0
            window = self.paged.plan(room, caps["contents"], recent_steps=steps,
                                     steps_tokens=self.settings.tool_loop_tokens
                                     if recipe.recent_steps else 0)
        elif isinstance(self.window, SummarizeWindow):
            window = self.window.plan(room, caps["contents"])
        else:
            assert self.window is not None
            window = self.window.plan(room)
        return window

    def _trimmed(self, caps: dict[str, int], room: int, *, retrieving: bool) -> dict[str, int]:
        """Caps cut by priority when the newest page needs more than its share (seed 002).

        The newest page is required; what it needs beyond the recent share comes out of
        the lowest priorities first: working state (preferences), contents page (episodic),
        then retrieval. With nothing retrieved (a tool loop's later steps, a new session),
        the retrieval share goes to the working state. The working state keeps at least
        ``_STATE_FLOOR`` of the room: summarized down to its share, never to nothing
        (seed 003), so the notebook of a long tool loop stays in its requests.
        """
        if not retrieving:
            caps = {**caps, "state": caps["state"] + caps["retrieval"], "retrieval": 0}
        index = self.log.index
        if not len(index):
            return caps
        need = min(index.page_tokens(index.pages), int(room * 0.6))
        sections = [Section("recent", "recent", max(need, caps["recent"]), required=True),
                    Section("retrieval", "retrieval", caps["retrieval"]),
                    Section("contents", "episodic", caps["contents"]),
                    Section("state", "preferences", caps["state"])]
        keep = self.ranker.rank_and_truncate(sections, max(room, 0))
        out = {**caps, **{k: keep[k] for k in ("retrieval", "contents", "state")}}
        out["state"] = max(out["state"], min(caps["state"], int(room * _STATE_FLOOR)))
        return out

    def _saved_cut(self) -> tuple[int, int]:
        saved = self._values.get("paged.cut")
        if isinstance(saved, Mapping):
            return int(saved["page"]), int(saved["hidden"])
        return 0, 0

    def _saved_base(self) -> int:
        saved = self._values.get("paged.base")
        return int(saved["first_active"]) if isinstance(saved, Mapping) else 1

    def _summary_key(self, page: int) -> str:
        first, last = self.log.index.page_seqs(page)
        return f"session:{self.record.id}:page:{page}:{first}-{last}"

    def _entries(self, page: int) -> int:
        start, end = self.log.index.page_span(page)
        return end - start

    def _request_bytes(self, body: Sequence[Message], specs: Sequence[ToolSpec]) -> int:
        """Bytes of ``{"messages": [...], "tools": [...]}`` as JSON, each message measured once."""
        sizes = 0
        for message in body:
            key = (message.seq, message.tokens, hash(message.content) if message.seq is None
                   else len(message.parts))
            size = self._sizes.get(key)
            if size is None:
                size = len(json.dumps(to_openai([message])[0], ensure_ascii=False).encode())
                if len(self._sizes) > 4096:
                    self._sizes.clear()
                self._sizes[key] = size
            sizes += size
        tools = len(json.dumps([s.to_openai() for s in specs], ensure_ascii=False).encode())
        return len('{"messages": [], "tools": ]}') + sizes + 2 * max(len(body) - 1, 0) + tools

    # -- the system segment and tools ----------------------------------------------------

    def _agent_tools_tokens(self, agent: Sequence[ToolSpec]) -> int:
        """Tokens of the agent's tool schemas, counted as memci counts its own."""
        if not agent:
            return 0
        key = tuple((s.name, s.original or json.dumps(s.to_openai())) for s in agent)
        if key not in self._agent_tokens:
            if len(self._agent_tokens) > 64:
                self._agent_tokens.clear()
            text = json.dumps([s.to_openai() for s in agent])
            self._agent_tokens[key] = self.tokenizer.count(text) + 4 * len(agent)
        return self._agent_tokens[key]

    def _tools_tokens(self, specs: Sequence[ToolSpec]) -> int:
        key = tuple(s.name for s in specs)
        if key not in self._tool_tokens:
            text = json.dumps([s.to_openai() for s in specs]) if specs else ""
            self._tool_tokens[key] = (self.tokenizer.count(text) + 4 * len(specs)
                                      if specs else 0)
        return self._tool_tokens[key]

    def _head_system(self, specs: Sequence[ToolSpec]) -> list[Message]:
        """The system segment: the system prompt, and the tool contract when tools are on."""
        out = [self.log.system] if self.log.system is not None else []
        if any(s.name == "artifact_get" for s in specs):
            language = self.language()
            if self._contract[0] != language:
                titles = TITLES[language]
                contract = Message.system(f"{titles.contract_title}\n{titles.contract}")
                self._contract = (language, replace(
                    contract, tokens=self.tokenizer.count_message(contract)))
            out.append(self._contract[1])
        return out

    def language(self) -> str:
        """The language of memci's titles in this session."""
        if self.paged is not None:
            return self.paged.language
        if self.settings.language != "auto":
            return self.settings.language
        return self.log.language()[0]

    # -- working state -------------------------------------------------------------------

    def work_state(self) -> WorkState:
        """The session's working state, with titles in the session's language."""
        state = self.work()
        state.titles = CHINESE_TITLES if self.language() == "zh" else ENGLISH_TITLES
        return state

    def _state(self, recipe: Recipe, cap: int) -> Message | None:
        """The working-state segment for ``recipe``: titled sections, within ``cap``."""
        state = self.work_state()
        key = (recipe.name, state.version(), cap, self.language())
        if self._state_cache[0] == key:
            return self._state_cache[1]
        render = {"fastmemo": state.render_fastmemo, "context_pool": state.render_context_pool,
                  "pins": state.render_pins, "plan": state.render_plan,
                  "notebook": state.render_notebook}
        sections = {name: text for name in recipe.sections if (text := render[name]())}
        message: Message | None = None
        if sections:
            from memci.summarize import ExtractiveSummarizer, fit_sections

            title = TITLES[self.language()].state
            heads = {k: v.split("\n", 1)[0] for k, v in sections.items()}
            bodies = {k: v.split("\n", 1)[1] if "\n" in v else "" for k, v in sections.items()}
            room = max(0, cap - self.tokenizer.count(title + "".join(heads.values())) - 8)
            # Over its share, a section is summarized down, never dropped (seed 003).
            fitted = fit_sections(bodies, room, self.tokenizer, ExtractiveSummarizer())
            # A section with nothing left under its title is not sent (no empty headers).
            blocks = [f"{heads[k]}\n{fitted[k]}" for k in sections if fitted[k].strip()]
            text = "\n\n".join([title, *blocks]) if blocks else ""
            if text and self.tokenizer.count(text) > cap:
                text = cut_middle(text, max(0, cap - 8), self.tokenizer)
            if text:
                built = Message.system(text)
                tokens = self.tokenizer.count_message(built)
                # Too small a share for even a line: nothing, rather than over the budget.
                message = replace(built, tokens=tokens) if tokens <= cap else None
        self._state_cache = (key, message)
        return message

    def _expire_pins(self) -> None:
        """Expire pins once per round (by time and by rounds): they move to the notebook.

        Only when there are pins: a chat without pins pays no write per round (the round
        a new pin starts from is recorded before a state tool runs).
        """
        pages = self.log.index.pages
        if pages != self._expired_round:
            self._expired_round = pages
            state = self.work_state()
            if state.pin_list():
                state.expire(round=pages)

    def _note_hidden(self, seqs: Sequence[int]) -> None:
        """One short notebook line per tool result that left the window (seed 004, phase 1).

        Steps of a tool loop leave the window in batches; the notebook keeps a sourced line
        with the pointer for each, so the notebook changes only when the window does.
        """
        results = self.log.tool_results_of(seqs)
        if not results:
            return
        state = self.work_state().with_actor("memci")
        for message in results:
            result = message.tool_result
            assert result is not None
            artifact = self.views.artifact_of(message)
            what = artifact.tool_name or "tool"
            asked = arguments_line(artifact.arguments)
            line = artifact.summary[0] if artifact.summary else f"{artifact.lines} lines"
            # What was done, its outcome, and where the whole output is (the pointer).
            state.notebook_add(f"{what}({asked}) → {line}"[:300] if asked
                               else f"{what}: {line}"[:300],
                               source=f"tool:{result.call_id}"[:_SOURCE_CHARS],
                               artifact_ref=artifact.pointer)

    def _pool_evicted(self, evicted: Mapping[int, ContentsEntry]) -> None:
        """Fold evicted pages into the context pool (seed 004's compressed chat history)."""
        listed = [(p, e.lines) for p, e in sorted(evicted.items()) if e.lines]
        if not listed:
            return
        state = self.work_state().with_actor("memci")
        for page, lines in listed:
            text = f"Page {page}: " + " / ".join(line for line in lines[:3])
            state.pool_add(text[:380], source=f"chat:page-{page}")

    def _remember_archived(
        self, memory: Memory, pages: Sequence[tuple[int, list[Message]]]
    ) -> None:
        """Keep archived pages as episodic memory, and the user's facts at user scope.

        What the user states about themselves, their preferences, decisions, constraints
        and corrections passes the eligibility judge (seed 003) into long-term memory,
        with the judge's reason in its source. The judge here is the rule-based one:
        a build never waits on a model. Pages archived with a backlog, never loaded, stay
        findable as messages.
        """
        if not pages:
            return
        scope = Scope.of(self.record, "user")
        contents = self.paged.archive.contents if self.paged is not None else {}
        for page, messages in pages:
            said = "\n".join(m.content for m in messages if m.role in ("user", "assistant"))
            if not said.strip():
                continue
            entry = contents.get(page)
            memory.remember_page(self.record, page, said,
                                 "\n".join(entry.lines) if entry is not None else "")
            users = "\n".join(m.content for m in messages if m.role == "user")
            verdict = judge(users)
            if not verdict.eligible:
                continue
            source = f"{self.record.name}#p{page} · {verdict.source}: {verdict.reason}"
            for fact in verdict.facts[:5]:
                memory.remember(scope, fact, verdict.kind, source=source[:300])

    # -- the tool head -------------------------------------------------------------------

    def _head_reserve(self, recipe: Recipe, room: int) -> int:
        """Tokens kept for the head of the newest tool output (tool-loop turns)."""
        index = self.log.index
        if not recipe.tool_head or not len(index) or index.roles[-1] != "tool":
            return 0
        return max(0, min(self.settings.tool_head_tokens, room // 4))

    def _with_head(self, window: list[Message], reserve: int) -> list[Message]:
        """The newest tool results shown with the head of their output, within ``reserve``."""
        # Stand-in results (no seq) have no output to show.
        last = [i for i in range(len(window) - 1, -1, -1)
                if window[i].role == "tool" and window[i].seq is not None]
        tail: list[int] = []
        for i in last:
            if tail and i != tail[-1] - 1:
                break
            tail.append(i)
        if not tail:
            return window
        share = reserve // len(tail)
        out = list(window)
        for i in tail:
            stored = self.log.load_seqs(out[i].seq or 0, out[i].seq or 0)[0]
            artifact = self.views.artifact_of(stored)
            base = out[i].tokens or 0
            chars = share * 3
            while chars > 0:
                shown = self.views.view(stored, artifact, head_chars=chars)
                if (shown.tokens or 0) - base <= share:
                    out[i] = shown
                    break
                chars = int(chars * 0.7) - 1
        return out

    def _prefix(self, body: Sequence[Message], tools: Sequence[ToolSpec],
                tools_tokens: int) -> int:
        """Tokens at the start of this request that repeat the previous request exactly.

        The tool schemas (the agent's, then memci's) come first (providers cache tools
        before messages); when the tools sent change, nothing is shared. Messages repeat
        when they are the same objects (a stored message never changes: compared in C),
        or have the same seq and tokens (and text, for one that is not stored).
        """
        tools_key = (tuple((t.name, t.original) for t in tools), tools_tokens)
        (old_key, old), self._previous = self._previous, (tools_key, list(body))
        if old_key != tools_key:
            return 0
        n, shared = min(len(body), len(old)), 0
        while shared < n:
            same = list(map(operator.is_, body[shared:n], old[shared:n]))
            shared += same.index(False) if False in same else len(same)
            if shared == n or _repeat_key(body[shared]) != _repeat_key(old[shared]):
                break
            shared += 1
        return tools_tokens + _tokens(body[:shared])

    # -- retrieval -----------------------------------------------------------------------

    def _retrieval_on(self) -> bool:
        # The simple strategies of seed 001 stay simple: retrieval goes with paging.
        return self.settings.retrieval and self.paged is not None

    def _candidates(self) -> tuple[tuple[Retrieved, ...], bool]:
        """Long-term memory for the user message that opened the current page (seed 002).

        Gathered once per page (episodes and preferences, cached), saved with
        the page's opener so the requests of a tool loop, and a reopened session, carry
        the same text. What the window holds is not searched (from the oldest page in it
        on: a memory line would only repeat it); when pages leave the window later, memory
        is gathered again without them left out (see :meth:`_regather`). Many more
        episodes are gathered than a small budget shows: the plan shows, best first, what
        fits. The chat's own history is always searched; the query analyzer adds documents
        and code. Returns the candidates and whether this build gathered them.
        """
        index = self.log.index
        if not self._retrieval_on() or not index.pages:
            return (), False
        start, _ = index.page_span(index.pages)
        opener = index.seqs[start]
        window = self._window_seq()
        saved = self._values.get("retrieval")
        if (isinstance(saved, Mapping) and saved.get("opener") == opener
                and int(saved.get("from", opener)) >= window):
            return tuple(_retrieved_from(t) for t in saved["texts"]), False
        first = self.log.load_seqs(opener, opener)[0]
        found: tuple[Retrieved, ...] = ()
        if first.role == "user" and first.content.strip():
            query = first.content[:500]
            gatherer = self.services.gatherer
            # "Yesterday" counts from when the question was asked (a replayed or imported
            # conversation keeps its own dates), not from the wall clock.
            gathered = gatherer.gather(
                query, session=self.record, scope="user", exclude_from_seq=window,
                max_episodes=_EPISODES_GATHERED, now=first.created_at)
            archived = self._archived_predicate()
            found = _deduped(replace(gathered, episodes=tuple(
                h for h in gathered.episodes if self.log.on_branch(h, archived))).texts,
                self._shown)
            # The query analyzer (rules: a build never waits on a model) says which other
            # sources this input needs: documents, code (seed 003).
            plan = analyze_query(query, now=first.created_at)
            if plan.consults("documents") or plan.consults("code"):
                docs = DocIndex(self.services.store).search_docs(query, k=3)
                found += tuple(
                    Retrieved(h.text[:600], f"{h.path}#L{h.start_line}-{h.end_line}",
                              "document", h.score) for h in docs)
        self._values["retrieval"] = self._saved_retrieval(found, opener, window)
        return found, True

    def _window_seq(self) -> int:
        """The seq the window starts at: its oldest page's first (recalled pages aside).

        1 while no page has left it: the whole conversation is in the window (what comes
        before the first page is system messages, never retrieved).
        """
        index = self.log.index
        first = self.paged.first_active if self.paged is not None else index.pages
        if first <= 1:
            return 1
        start, _ = index.page_span(min(first, index.pages))
        return index.seqs[start]

    def _archived_predicate(self) -> Callable[[int], bool]:
        paged = self.paged
        if paged is None:
            return lambda page: False
        return lambda page: paged.place_of(page) in ("contents", "evicted")

    def _saved_retrieval(
        self, found: Sequence[Retrieved], opener: int, start: int
    ) -> dict[str, Any]:
        """The saved form of a page's memory.

        Its opener, the seq from which the window was left out of the search, the texts.
        """
        return {"opener": opener, "from": start, "share": bool(found), "texts": [
            {"text": r.text, "source": r.source, "kind": r.kind, "score": r.score,
             "session": r.session, "seq": r.seq, "page": r.page,
             "at": r.created_at.isoformat() if r.created_at is not None else None}
            for r in found]}

    def _line(self, item: Retrieved) -> tuple[str, int]:
        """One line of the retrieval segment for ``item``, and its tokens (made once)."""
        key = (item.text, item.kind, item.source, item.created_at)
        made = self._lines.get(key)
        if made is None:
            when = f"{item.created_at:%Y-%m-%d} · " if item.created_at is not None else ""
            line = f"- [{when}{item.kind} · {item.source}] {_squeezed(item.text, _LINE_CHARS)}"
            made = (line, self._lines_tokens((line,)) + 1)
            if len(self._lines) > 4096:
                self._lines.clear()
            self._lines[key] = made
        return made

    def _retrieval_reserve(self, found: Sequence[Retrieved], cap: int) -> int:
        """Tokens held for memory before the window is planned: its best few lines."""
        if not found or cap <= 0:
            return 0
        title = self.tokenizer.count(TITLES[self.language()].retrieval) + 8
        best = sum(self._line(item)[1] for item in found[:_RESERVED_LINES])
        return min(cap, title + best)

    def _retrieval_message(
        self, found: Sequence[Retrieved], window: Sequence[Message], room: int
    ) -> Message | None:
        """The retrieval segment: a titled user-role block of the best lines that fit.

        Lines go in rank order, leaving out what the window shows; each line is whole or
        left out, never cut. It is gathered once per page and is the only part of a request
        that is not carried into the next one, so everything before it stays a prefix a
        provider can cache.
        """
        if not found or room <= 0:
            return None
        shown = set(map(_SEQ, window))
        shown.discard(None)  # messages memci wrote (a contents page) have no seq
        title = TITLES[self.language()].retrieval
        used = self.tokenizer.count(title) + 8
        lines = [title]
        for item in found:
            if item.session == self.record.name and item.seq in shown:
                continue
            line, tokens = self._line(item)
            if used + tokens > room:
                continue
            lines.append(line)
            used += tokens
        if len(lines) == 1:
            return None
        # A message's framing and its text count apart (count_message adds them).
        tokens = self.tokenizer.count_message(Message.user("")) + self._lines_tokens(lines)
        return replace(Message.user("\n".join(lines)), tokens=tokens)

    def _lines_tokens(self, lines: Sequence[str]) -> int:
        """Tokens of ``lines`` joined by newlines.

        The estimator sums the lines' kept estimates (memory lines recur from build to
        build): each line is estimated once, for its own count and for the block's.
        """
        if isinstance(self.tokenizer, EstimateTokenizer):
            return self.tokenizer.count_lines(lines)
        return self.tokenizer.count("\n".join(lines))


_SEQ = operator.attrgetter("seq")
_TOKENS = operator.attrgetter("tokens")


def _tokens(messages: Iterable[Message]) -> int:
    """The tokens of ``messages`` (summed in C: a window holds thousands)."""
    return sum(filter(None, map(_TOKENS, messages)))


def _repeat_key(message: Message) -> tuple[object, ...]:
    """What makes two messages of successive requests the same (see ``_prefix``)."""
    return (message.seq, message.tokens, message.content if message.seq is None else None)


def _retrieved_from(saved: Mapping[str, Any]) -> Retrieved:
    at = saved.get("at")
    return Retrieved(saved["text"], saved["source"], saved["kind"], saved["score"],
                     saved.get("session"), saved.get("seq"),
                     datetime.fromisoformat(at) if isinstance(at, str) else None,
                     saved.get("page"))


def _deduped(found: Sequence[Retrieved], shown_of: dict[str, str]) -> tuple[Retrieved, ...]:
    """Memory without repeats, each text as its line shows it.

    A page's summary is left out when one of its messages was found, and so is a text
    whose line would show what a line before shows (spaces squeezed, cut to
    :data:`_LINE_CHARS`, case aside). A text keeps what its line shows: only that is
    saved with the page and read again. ``shown_of`` keeps what a text shows (the same
    messages are found again and again).
    """
    pages = {(r.session, r.page) for r in found if r.seq is not None and r.page is not None}
    seen: set[str] = set()
    out: list[Retrieved] = []
    if len(shown_of) > 4096:
        shown_of.clear()
    for r in found:
        shown = shown_of.get(r.text)
        if shown is None:
            shown = shown_of[r.text] = _squeezed(r.text, _LINE_CHARS)
        key = shown.casefold()
        if key in seen or (r.seq is None and r.kind == "episode"
                           and (r.session, r.page) in pages):
            continue
        seen.add(key)
        out.append(r if shown == r.text else Retrieved(
            shown, r.source, r.kind, r.score, r.session, r.seq, r.created_at, r.page))
    return tuple(out)


def _squeezed(text: str, limit: int) -> str:
    """``" ".join(text.split())[:limit]``, reading about as much of ``text`` as it needs."""
    n = 2 * limit
    while n < len(text):
        words = text[:n].split()
        head = " ".join(words[:-1])  # the last word may be cut: the rest is the text's
        if len(head) >= limit:
            return head[:limit]
        n *= 2
    return " ".join(text.split())[:limit]
