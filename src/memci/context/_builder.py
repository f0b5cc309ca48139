"""The context builder: what a session sends now, from its segment sources, in three phases.

A request is made of segments, each from a source of its own:

- **system** (:mod:`~memci.context._system`): the system prompt, the tool contract and the
  tools sent (the agent's, then memci's that can act);
- **state** (:mod:`~memci.context._working`): the working state under the recipe's titles;
- **contents** and **recent** (:mod:`~memci.context._history`): the contents page and the
  pages in the window, planned together (archiving moves a page from one to the other);
- **retrieval** (:mod:`~memci.context._retrieval`): long-term memory for a page that asks:
  its block, placed after the page's opener and kept there while the page is in the
  window, and the rest of its lines, last, in that page's requests only; so each request
  but that rest is a prefix of the next, which a provider can cache.

The phases:

1. **Load** a snapshot: catch up with the log (new messages only) and, when another writer
   changed it, the context state; the system segment and the tools; the budget's split
   (:meth:`ContextBuilder._allot`: the room once the head is taken, then the segments'
   caps); the working state within its cap; memory gathered once per page; pages the
   window may show (bounded by the budget: an older backlog is archived as one range,
   never read); the newest tool outputs' heads. O(window), never O(history). When a plan
   of this snapshot would archive pages the gather left out, memory is gathered again
   without them left out, still in the load phase.
2. **Plan** with no I/O, on drafts of the strategy state: archive, evict and trim pages so
   the window fits its room, pair tool calls with their results, choose the memory lines
   that fit, size the request. Nothing of the state changes.
3. **Commit** what the plan changed (page rows, events, the cut, the notebook lines and
   context pool entries it implies, long-term memory of archived pages, summary jobs) in
   one transaction guarded by the session's version. If another process or engine
   committed first, nothing is written, the drafts are dropped, and the build loads again
   and plans again. Otherwise the drafts become the state.

The request is then assembled from the plan alone and labelled by segment.
"""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from itertools import compress, takewhile
from typing import Any

from memci._dataclasses import dataclass, field, replace
from memci._records import NamedTuple
from memci.context._branches import pages_on
from memci.context._budget import BudgetAllocator, PriorityRanker, Section
from memci.context._context import Context, ContextStats, Segment, ToolSpec
from memci.context._history import (
    SHAPED,
    HistoryPlan,
    HistorySource,
    ToolHead,
    messages_tokens,
)
from memci.context._log import LogIndex, role_name
from memci.context._model import SEQ, ContentsEntry, PageInfo
from memci.context._recipes import Recipe, choose_recipe
from memci.context._retrieval import (
    BLOCKS,
    HELD_TOKENS,
    KEPT_TOKENS,
    Block,
    Gathered,
    RetrievalSource,
    blocks_form,
    line_key,
    saved_blocks,
)
from memci.context._services import SessionServices
from memci.context._session_log import SessionLog
from memci.context._settings import SessionSettings
from memci.context._system import SystemSource, offered_tools
from memci.context._tool_views import ToolViews
from memci.context._working import WorkingStateSource
from memci.errors import BudgetTooSmallError, ConfigError, StoreError, StoreFullError
from memci.memory import Retrieved
from memci.messages import Message, to_openai
from memci.store import SessionRecord
from memci.store._log import ContextChanges
from memci.summarize import PageSummary, SummaryJobs
from memci.tokens import Tokenizer
from memci.workspace import WorkState

__all__ = ["REPLY_PRIMING", "ContextBuilder"]

REPLY_PRIMING = 3  # tokens every request spends priming the reply
_CONTENTS_FLOOR = 40  # tokens of a contents page that lists nothing (its title and ranges)
_STATE_FLOOR = 0.08  # share of the room the working state keeps whatever the window needs
_ATTEMPTS = 8  # builds planned again after losing a compare-and-swap, before giving up
# memci starts shaping a history that still fits once its request costs at most this share
# of the history sent as it is: then even the first shaped request, which no cache holds,
# costs no more than the whole one with its prefix cached at half price.
SHAPING_PAYS = 0.5


class _Conflict(Exception):
    """Another writer committed the session's context state first."""


class _Peeked(Exception):
    """A peek's build is done: its transaction is rolled back, its context carried out."""

    def __init__(self, context: Context) -> None:
        super().__init__("peeked")
        self.context = context


class _Whole(NamedTuple):
    """The history as stored, when a request can carry all of it, and what comes with it.

    ``window``: every message whole (tool outputs raw), calls paired; ``specs``: memci's
    tools that can act when nothing is left out; ``head``: the system segment for them.
    """

    window: list[Message]
    window_tokens: int
    specs: tuple[ToolSpec, ...]
    tools_tokens: int
    head: list[Message]

    def request_tokens(self, agent_tokens: int, state: Message | None) -> int:
        """The request's tokens without memory."""
        return (messages_tokens(self.head) + agent_tokens + self.tools_tokens
                + ((state.tokens or 0) if state else 0) + self.window_tokens + REPLY_PRIMING)


@dataclass(slots=True)
class _Snapshot:
    """What the load phase read and derived, for one plan (which only reads it)."""

    recipe: Recipe
    limit: int
    specs: tuple[ToolSpec, ...]  # memci's tools, when the request leaves history out
    specs_all_in: tuple[ToolSpec, ...]  # ... and when it holds the whole history
    tools_tokens: int
    agent: tuple[ToolSpec, ...]  # the agent's own tools, sent before memci's
    agent_tokens: int
    head: list[Message]
    room: int
    caps: dict[str, int]
    memory: Gathered  # what sized the retrieval share (the page's first gather)
    shown: Gathered  # what the retrieval segment shows (gathered again after archiving)
    state: Message | None
    reserve: int  # tokens for the newest tool outputs' heads
    heads: dict[int, ToolHead]
    whole: _Whole | None = None  # the history as stored, when it fits (see _plan)
    blocks: dict[int, Block] = field(default_factory=dict[int, Block])  # saved, by page


@dataclass(slots=True)
class _Plan:
    """What the plan decided: the window and the request's parts, and what to commit."""

    history: HistoryPlan
    window: list[Message]  # the contents page, then the recent pages, heads shown
    window_tokens: int
    retrieval: Message | None
    memory: tuple[Retrieved, ...]  # what the retrieval segment shows
    state: Message | None
    changes: ContextChanges
    planned_tokens: int = 0  # of the window as planned, before the tool heads are shown
    payload_bytes: int = 0
    memory_room: int = 0  # tokens the retrieval segment may take
    cache: dict[str, Any] = field(default_factory=dict)  # derived values, saved unguarded
    whole: _Whole | None = None  # the request carries the history as stored
    blocks: dict[int, Block] = field(default_factory=dict[int, Block])  # placed, by page

    @property
    def hidden(self) -> list[int]:
        """Seqs of tool-loop steps this plan hid."""
        return self.history.paged.hidden if self.history.paged is not None else []

    @property
    def evicted(self) -> dict[int, ContentsEntry]:
        """Pages this plan took off the contents page."""
        return self.history.paged.evicted if self.history.paged is not None else {}

    @property
    def archived(self) -> list[tuple[int, list[Message]]]:
        """Pages this plan archived, with their messages (those that were loaded)."""
        return self.history.paged.archived if self.history.paged is not None else []

    @property
    def events(self) -> tuple[str, ...]:
        """What this build moved, as short phrases (for stats and traces)."""
        out = tuple(f"{e.kind} page {e.page}" if e.pages == 1
                    else f"{e.kind} pages {e.page}-{e.last_page}" for e in self.changes.events)
        if "summarize" in self.changes.values:
            out += ("summarize",)
        if SHAPED in self.changes.values:
            out += ("shaped",)  # memci shapes the requests from this one on
        return out + (("steps hidden",) if self.hidden else ())


class ContextBuilder:
    """Builds the contexts of one session (load, plan, commit); owns its strategy state.

    Takes values, never calls back: memci's own tools come as specs (``own_tools``: every
    one the session can run; which are offered is decided here), the working state is
    read from the store. Not thread-safe by itself: the session calls it under its lock.
    """

    def __init__(
        self, services: SessionServices, record: SessionRecord, settings: SessionSettings,
        tokenizer: Tokenizer, log: SessionLog, views: ToolViews,
        own_tools: tuple[ToolSpec, ...],
    ) -> None:
        self.services = services
        self.record = record
        self.settings = settings
        self.tokenizer = tokenizer
        self.log = log
        self.views = views
        self.own_tools = own_tools
        self.allocator = BudgetAllocator()
        self.ranker = PriorityRanker()
        self.summaries = SummaryJobs(services.jobs) if services.jobs is not None else None
        self.system = SystemSource(tokenizer)
        self.working = WorkingStateSource(services.store, record, tokenizer)
        self.history = HistorySource(services.store, record, settings, tokenizer, log, views,
                                     summarized=self.summaries is not None)
        self.retrieval = RetrievalSource(services, record, log, tokenizer,
                                         enabled=settings.retrieval
                                         and settings.strategy == "paged")
        self.counts = {"archive": 0, "recall": 0, "evict": 0}
        self.builds = 0
        self.build_ms = 0.0
        self.saved = 0
        self._version = -1  # the context version the strategy state was loaded at
        self._generation = -1  # the log's branch generation it was loaded over
        # the last request's tools and messages (see _prefix)
        self._previous: tuple[object, list[Message]] = (None, [])
        self._sizes: dict[tuple[int | None, int | None, int], int] = {}
        self._whole_last = True  # the last request sent the history as stored (see offered)

    @property
    def paged(self) -> Any:
        """The paged strategy's state (None with another strategy)."""
        return self.history.paged

    # -- the strategy state --------------------------------------------------------------

    def reset(self) -> None:
        """Forget the strategy state: the next load reads it again from the store."""
        self._version = -1

    def current(self) -> None:
        """Catch up with the log, and with the context state when another writer changed it."""
        # The log's head, the state's version and the working state's in one read.
        heads = self.services.store.context.heads(self.record)
        if heads is None:
            self.log.sync()  # raises: the session was deleted
        else:
            self.log.sync((heads.epoch, heads.last_seq))
            self.working.saw(heads.work_event)
        version = -1 if heads is None else heads.version
        if version != self._version or self.log.generation != self._generation:
            state = self.services.store.context.load(self.record)
            if state.version != version:
                # Another writer committed after the heads were read: its state may name
                # pages of messages stored after them (a commit follows what it names).
                self.log.sync()
            self.counts = {"archive": 0, "recall": 0, "evict": 0, **state.counts}
            self.history.restore(state, self.counts)
            self._version = state.version
            self._generation = self.log.generation

    def language(self) -> str:
        """The language of memci's titles in this session."""
        return self.history.language()

    def work_state(self) -> WorkState:
        """The session's working state, with titles in the session's language."""
        return self.working.state(self.language())

    def offered(self, left_out: bool | None = None, *,
                whole: bool = False) -> tuple[ToolSpec, ...]:
        """memci's tools offered now; ``left_out``: whether history is out of the window.

        ``whole``: the request carries the history as stored (nothing hidden, nothing
        left out), so only the tools that reach beyond it can act. Asked with neither (what
        the session offers now), the last build's form answers: a request that sent the
        history as stored offers the next the same, until memci shapes it.
        """
        if left_out is None:
            left_out = self.has_left_window()
            whole = self._whole_last and self.history.all_in()
        return offered_tools(self.own_tools, auto=self.settings.tools == "auto",
                             file_roots=bool(self.settings.file_roots),
                             has_tool_results=self.log.has_tool_results and not whole,
                             hides_output=self.log.hides_output and not whole,
                             left_out=left_out and not whole)

    # -- building ------------------------------------------------------------------------

    def build(
        self, budget: int | None, recipe: str, agent: tuple[ToolSpec, ...] = ()
    ) -> Context:
        """The context to send now (see the module's docstring for the phases).

        ``agent``: the agent's own tools (checked), budgeted and carried before memci's.
        """
        started = time.perf_counter()
        snap, plan = self._committed(budget, recipe, agent)
        return self._assemble(snap, plan, started)

    def _committed(self, budget: int | None, recipe: str, agent: tuple[ToolSpec, ...]
                   ) -> tuple[_Snapshot, _Plan]:
        """Load, plan and commit (again while another writer commits first)."""
        for _ in range(_ATTEMPTS):
            snap, plan = self._snapshot_and_plan(budget, recipe, agent)
            try:
                self._commit(snap, plan)
            except _Conflict:
                self.reset()  # another writer got there first: load again, plan again
                continue
            except StoreFullError:
                # The request is right; only its bookkeeping could not be saved. A session
                # keeps answering while the disk is full: the next build plans it again.
                self.reset()
            else:
                self._adopt(plan)
                self._note_window_room(snap, plan)
            return snap, plan
        raise StoreError(f"session {self.record.name!r}: {_ATTEMPTS} builds in a row lost "
                         "to concurrent writers; try again")

    def settle(self, agent: tuple[ToolSpec, ...] = ()) -> bool:
        """After a bulk write, do now what the next build would: archive what does not fit.

        A batch of several pages (an import, a history synced at once) is planned here, in
        the writing process, as the next build would plan it: the pages that do not fit
        are archived (their contents lines, their long-term memory, the views of
        their tool outputs) and committed, as the next build would have done at the
        budget of the last build (or the session's). The next build then finds a paged
        session and plans only its newest pages; its request is the one it would have
        made. Returns whether it ran. Nothing is assembled and no build is counted.
        """
        self.current()
        paged = self.history.paged
        if paged is None or not len(self.log.index):
            return False
        saved = self.history.values.get("paged.budget")
        limit = saved if isinstance(saved, int) else self.settings.budget
        # A build archives once the window passes the room the budget leaves it (after
        # the system prompt, memci's tools, the working state, memory and the contents
        # page), which only a plan knows: settled past the high watermark the last plan
        # found or, before one, past the budget's low watermark (a plan that archives
        # nothing costs about a build). Settling only a window over the budget left the
        # rest to the first build (1,006 pages of a 100k-message chat, 0.7 s).
        high = paged.high if paged.high is not None else limit * paged.config.low_watermark
        if paged.unbuilt_tokens() <= high:
            return False
        try:
            self._committed(limit, "auto", agent)
        except (ConfigError, StoreError):
            # The messages are stored; what stops the catch-up stops the next build too,
            # which raises it to the caller, at the budget and with the tools it is given.
            return False
        return True

    def peek(self, budget: int | None, recipe: str, agent: tuple[ToolSpec, ...] = ()) -> Context:
        """The context a build would make now, committing nothing and changing nothing.

        The build runs whole — its commit too, so the working state shows what the build
        would add to it — in one transaction that is rolled back, and its drafts are
        dropped. Its stats compare it with the last request built (``prefix_tokens``); it
        is not counted among the builds.
        """
        started = time.perf_counter()
        try:
            with self.services.store.atomic():
                snap, plan = self._snapshot_and_plan(budget, recipe, agent)
                try:
                    self._commit(snap, plan)
                except _Conflict:
                    pass  # another writer got there first: what this build planned, as is
                raise _Peeked(self._assemble(snap, plan, started, counted=False))
        except _Peeked as peeked:
            return peeked.context
        finally:
            self.working.forget()  # what it read or rendered inside was rolled back
        raise AssertionError("unreachable")  # pragma: no cover

    def _snapshot_and_plan(self, budget: int | None, recipe: str, agent: tuple[ToolSpec, ...]
                           ) -> tuple[_Snapshot, _Plan]:
        """Load and plan (again when memory must be gathered without what the plan archives).

        Both gathers read memory as of one moment (its version, the sessions searched and
        the items' rankings, read once).
        """
        with self.retrieval.reading():
            snap = self._load(budget, recipe, agent)
            plan = self._plan(snap)
            if self._memory_left_behind(snap, plan):
                snap = self._gather_again(snap, plan)
                plan = self._plan(snap)
        self._check_window(snap, plan)
        return snap, plan

    def _load(self, budget: int | None, recipe: str, agent: tuple[ToolSpec, ...]) -> _Snapshot:
        self.current()
        index = self.log.index
        newest = role_name(index.roles[-1]) if len(index) else None
        chosen = choose_recipe(recipe, newest_role=newest, call_pending=self.log.call_pending())
        language = self.language()
        known = self.working.expire_pins(index.pages, language)  # the state's version
        limit = budget if budget is not None else self.settings.budget
        agent_tokens = self.system.agent_tokens(agent)
        prompt = self.system.head(self.log.system, (), language)
        self._check_fits(limit, prompt, index, agent_tokens)
        # Room is kept for the tools that bring history back; the request carries them only
        # when this build leaves some of it out (see _assemble).
        spare = (limit - agent_tokens - messages_tokens(prompt) - self.history.newest_floor()
                 - REPLY_PRIMING - _CONTENTS_FLOOR)
        specs = self.system.affordable(self.offered(True), self.log.system, language,
                                       budget=limit - agent_tokens, spare=spare)
        all_in = {s.name for s in self.offered(False)}
        head = self.system.head(self.log.system, specs, language)
        tools_tokens = self.system.tools_tokens(specs)
        memory = self.retrieval.gather(
            self.history.values.get("retrieval"),
            self.history.window_seq(self.history.paged.first_active
                                    if self.history.paged is not None else 0),
            self.history.archived(self.history.paged.place_of
                                  if self.history.paged is not None else _nowhere),
            task=bool(agent) or chosen.name == "tool_loop", budget=limit)
        room, caps, state, reserve = self._sized(chosen, limit, agent_tokens, tools_tokens,
                                                 head, memory, known)
        ready: dict[int, PageSummary] = {}
        paged = self.history.paged
        if self.summaries is not None and paged is not None and paged.archive.contents:
            keys = {self.history.summary_key(p): p for p in paged.waiting()}
            ready = {keys[k]: summary for k, summary in self.summaries.ready(
                {k: self.history.entries(p) for k, p in keys.items()}).items()}
        self.history.prepare(limit, ready)
        return _Snapshot(chosen, limit, specs, tuple(s for s in specs if s.name in all_in),
                         tools_tokens, agent, agent_tokens, head, room, caps, memory, memory,
                         state, reserve, self.history.load_heads(reserve),
                         self._whole(limit, agent, agent_tokens, state, language),
                         saved_blocks(self.history.values.get(BLOCKS), self._opener))

    def _opener(self, page: int) -> int | None:
        """The seq of the message that opens page ``page`` (None: no such page)."""
        index = self.log.index
        return index.page_seqs(page)[0] if 0 < page <= index.pages else None

    def _whole(self, limit: int, agent: tuple[ToolSpec, ...], agent_tokens: int,
               state: Message | None, language: str) -> _Whole | None:
        """The history as stored, when one request can carry all of it (else None).

        With the system prompt, the agent's tools, the working state when it has entries
        and memci's tools that can still act. Only while nothing has left the window: once
        memci has shaped the requests, they keep that form.
        """
        log = self.log
        if not self.history.all_in():
            log.forget_whole()
            return None
        specs = self.system.affordable(self.offered(False, whole=True), log.system, language,
                                       budget=limit - agent_tokens, spare=limit)
        head = self.system.head(log.system, specs, language)
        tools_tokens = self.system.tools_tokens(specs)
        fixed = _Whole([], 0, specs, tools_tokens, head).request_tokens(agent_tokens, state)
        # The stored tokens say no before anything is read; a soft cap the session sets on
        # its chat (ctx_recent_max_tokens, tool_loop_tokens) asks for memci's shaping.
        caps = (self.settings.ctx_recent_max_tokens, self.settings.tool_loop_tokens)
        if log.raw_total + fixed > limit or any(0 < cap < log.raw_total for cap in caps):
            log.forget_whole()
            return None
        window = self.history.whole_pairing(log.whole())
        whole = _Whole(window, messages_tokens(window), specs, tools_tokens, head)
        if whole.request_tokens(agent_tokens, state) > limit:
            return None
        limit_bytes = self.settings.max_request_bytes
        if limit_bytes and self._request_bytes(
                [*head, *([state] if state else []), *window], (*agent, *specs)) > limit_bytes:
            return None
        return whole

    def _sized(self, chosen: Recipe, limit: int, agent_tokens: int, tools_tokens: int,
               head: Sequence[Message], memory: Gathered, version: int | None = None,
               ) -> tuple[int, dict[str, int], Message | None, int]:
        """The room, the caps, the working state rendered to its cap, the tool heads' reserve.

        ``memory``: the gather that sizes the retrieval share; ``version``: the working
        state's, when this load read it already.
        """
        language = self.language()
        room, caps = self._allot(limit, agent_tokens, tools_tokens, head, memory)
        state = self.working.render(chosen, caps["state"], language, version=version)
        state_tokens = (state.tokens or 0) if state else 0
        reserve = 0
        # Only a turn that shows the newest tool output's head sizes it by what memory
        # leaves: memory's lines are counted for it then only (a pass of the tokenizer
        # over each, in a fresh process).
        if self.history.shows_head(chosen):
            reserved = self.retrieval.reserve(memory.candidates, caps["retrieval"], language)
            reserve = self.history.head_reserve(room - state_tokens - reserved)
        # The newest message is never cut for the tool heads: they give way first.
        reserve = max(0, min(reserve, room - self.history.newest_need() - _CONTENTS_FLOOR))
        return room, caps, state, reserve

    def _allot(self, limit: int, agent_tokens: int, tools_tokens: int,
               head: Sequence[Message], memory: Gathered) -> tuple[int, dict[str, int]]:
        """The budget's split: the room left once the head is taken, and each segment's cap.

        The profile follows the setting, not each page's hits: a profile that came and
        went with the hits would resize the contents page back and forth.
        """
        room = limit - agent_tokens - tools_tokens - messages_tokens(head) - REPLY_PRIMING
        caps = self.allocator.allocate(max(room, 0), turns=self.log.index.pages,
                                       has_retrieval=self.retrieval.enabled)
        return room, self._trimmed(caps, room, retrieving=memory.share)

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

    def _memory_left_behind(self, snap: _Snapshot, plan: _Plan) -> bool:
        """Whether the plan archived pages the page's memory gather left out of its search."""
        saved = snap.shown.saved
        if not self.retrieval.enabled or not self.log.index.pages or saved is None:
            return False
        return snap.shown.left_out_from < self.history.window_seq(plan.history.first_active)

    def _gather_again(self, snap: _Snapshot, plan: _Plan) -> _Snapshot:
        """The load phase again for memory: gathered without the pages the plan archives.

        Retrieval is decided after what is archived. The page keeps the share a committed
        gather gave memory, so its later requests are planned as the first one was. When
        this build is the page's first (its gather not yet committed), the gather after
        archiving decides the share: before it, the history it searches may have been all
        in the window (an imported history's first build), and a page planned without
        memory left a third of its budget unused.
        """
        draft = plan.history.paged
        assert draft is not None
        again = self.retrieval.gather(
            snap.shown.saved, self.history.window_seq(draft.first_active),
            self.history.archived(draft.place_of),
            task=bool(snap.agent) or snap.recipe.name == "tool_loop", budget=snap.limit)
        saved = dict(again.saved or {})
        if snap.memory.gathered and again.share != snap.memory.share:
            room, caps, state, reserve = self._sized(
                snap.recipe, snap.limit, snap.agent_tokens, snap.tools_tokens, snap.head, again)
            return replace(snap, room=room, caps=caps, memory=again, shown=again, state=state,
                           reserve=reserve, heads=self.history.load_heads(reserve))
        saved["share"] = snap.memory.share
        return replace(snap, shown=again._replace(saved=saved))

    def _check_fits(self, limit: int, head: Sequence[Message], index: LogIndex,
                    agent_tokens: int = 0) -> None:
        """Raise when the system prompt, the agent's tools and the newest message pass the budget.

        Every request holds them all (memci's own tools give way). The newest message is
        cut only when it alone is larger than what the budget leaves (its text's head and
        tail, marked; see :meth:`HistorySource.newest_floor`), never left out; below that,
        a build cannot keep the budget.
        """
        head_tokens = messages_tokens(head)
        newest = self.history.newest_floor() if len(index) else 0
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
        head_tokens = messages_tokens(plan.whole.head if plan.whole is not None else snap.head)
        recent = plan.planned_tokens - _contents_tokens(plan.window)
        need = head_tokens + snap.agent_tokens + recent + REPLY_PRIMING
        if need > snap.limit:
            self._too_small(snap.limit, head_tokens, snap.agent_tokens, recent, need)

    def _plan(self, snap: _Snapshot) -> _Plan:
        """Decide the window, the memory and the working state shown; reads nothing.

        While the whole history fits, the request carries it as stored (what an agent
        without memci sends, so never costlier), unless the request memci shapes (views,
        its tools, the notebook) costs at most :data:`SHAPING_PAYS` of it: from then on,
        memci shapes every request of the session.
        """
        plan = self._shaped(snap)
        whole = snap.whole
        if whole is None:
            return plan
        # The shaped request whole: its memory block too (it takes the room the window
        # leaves, so a small window may still make a large request).
        shaped = (messages_tokens(snap.head) + snap.agent_tokens + self._specs(snap, plan)[1]
                  + ((plan.state.tokens or 0) if plan.state else 0) + plan.window_tokens
                  + ((plan.retrieval.tokens or 0) if plan.retrieval else 0) + REPLY_PRIMING)
        if shaped > SHAPING_PAYS * whole.request_tokens(snap.agent_tokens, snap.state):
            return self._whole_plan(snap, plan, whole)
        plan.history.values[SHAPED] = True
        plan.changes = replace(plan.changes, values=plan.history.values)
        return plan

    def _whole_plan(self, snap: _Snapshot, shaped: _Plan, whole: _Whole) -> _Plan:
        """The plan of a request that carries the history as stored: nothing to commit.

        Memory of the user's other conversations comes only when the page's opener refers
        to earlier work (the query analyzer's rule that keeps a task to its own past): any
        other would be an addition the full history never pays, rewritten every page.
        Documents and code come when the analyzer asks for them, as always.
        """
        state = snap.state
        room = snap.limit - whole.request_tokens(snap.agent_tokens, state)
        earlier = snap.shown.saved is not None and bool(snap.shown.saved.get("earlier"))
        found = [r for r in snap.shown.candidates if earlier or r.kind == "document"]
        retrieval, memory = self.retrieval.message(found, whole.window, room, self.language())
        if not whole.window or whole.window[-1].role == "assistant":
            retrieval, memory = None, ()
        # The shaped plan's blocks were never sent: none is saved.
        cache = {k: v for k, v in shaped.cache.items() if k != BLOCKS}
        return _Plan(self.history.draft(), whole.window, whole.window_tokens, retrieval,
                     memory, state, ContextChanges(), planned_tokens=whole.window_tokens,
                     memory_room=room, cache=cache, whole=whole)

    def _specs(self, snap: _Snapshot, plan: _Plan) -> tuple[tuple[ToolSpec, ...], int]:
        """memci's tools a plan's request carries, and their tokens."""
        if plan.whole is not None:
            return plan.whole.specs, plan.whole.tools_tokens
        if not self.history.left_out(plan.history, plan.window):
            # The whole history is in the request: recall_page and search_memory could not
            # act, so they are not offered (the room kept for them stays unused).
            return snap.specs_all_in, self.system.tools_tokens(snap.specs_all_in)
        return snap.specs, snap.tools_tokens

    def _shaped(self, snap: _Snapshot) -> _Plan:
        """The plan of a request memci shapes: views, archive, its tools and state."""
        language = self.language()
        # The window leaves memory its room whatever the page asks, so that the window's
        # watermarks, hence its archive events, do not move from page to page.
        reserved = self.retrieval.reserve(snap.memory.candidates,
                                          min(HELD_TOKENS, snap.caps["retrieval"]), language)
        state, state_tokens = snap.state, (snap.state.tokens or 0) if snap.state else 0
        # The newest message is never cut for memory: at a small budget the reserve for
        # retrieved lines, then the working state, give way first.
        newest = self.history.newest_need() + _CONTENTS_FLOOR
        free = snap.room - snap.reserve - newest
        reserved = max(0, min(reserved, free - state_tokens))
        if state_tokens > free:
            state, state_tokens = None, 0
        room = snap.room - reserved - state_tokens - snap.reserve
        limit_bytes = self.settings.max_request_bytes
        payload = 0
        draft = self.history.draft()
        if draft.paged is not None:
            draft.paged.kept = {p: b.message.tokens or 0 for p, b in snap.blocks.items()}
        for _ in range(8):
            window, window_tokens = self.history.plan(draft, room, snap.caps["contents"],
                                                      snap.recipe)
            if not limit_bytes:
                break
            payload = self._request_bytes([*snap.head, *window], (*snap.agent, *snap.specs))
            if payload <= limit_bytes or room <= 1:
                break
            room = max(1, int(room * limit_bytes / payload * 0.9))
        if (draft.paged is not None and draft.paged.feeds_state()
                and snap.caps["state"] > state_tokens):
            # Pages leave the window: their lines join the working state (context pool,
            # notebook), which then takes its share. The window is planned for that now,
            # so the next build, with the state grown, has nothing more to archive.
            grown = min(snap.caps["state"], max(free, 0))
            if grown > state_tokens:
                window, window_tokens = self.history.plan(
                    draft, room - (grown - state_tokens), snap.caps["contents"], snap.recipe)
                state_tokens = grown
        every = not self.history.left_out(draft, window)
        if state is not None and every:
            # Every page is in the window again (the budget grew): the context pool would
            # repeat them, and the whole history may cost no more than itself.
            state = self.working.render(snap.recipe.without_pool(), state_tokens, language)
            state_tokens = (state.tokens or 0) if state else 0
        placed, retrieval, memory, memory_room = self._memory(
            snap, draft, window, snap.room - state_tokens - snap.reserve - window_tokens,
            language, every=every)
        planned_tokens = window_tokens
        if snap.reserve:
            window = self.history.with_heads(window, snap.reserve, snap.heads)
        window, placed = _with_blocks(window, placed)
        window_tokens = messages_tokens(window)
        rows, events = draft.paged.changes() if draft.paged is not None else ([], [])
        draft.values = self.history.saved_values(draft)
        cache = {"retrieval": snap.shown.saved} if snap.shown.gathered else {}
        form = blocks_form(placed)
        if form != blocks_form(snap.blocks):
            cache[BLOCKS] = form
        plan = _Plan(draft, window, window_tokens, retrieval, memory, state,
                     ContextChanges(rows, events, draft.values), planned_tokens=planned_tokens,
                     payload_bytes=payload, memory_room=memory_room, cache=cache, blocks=placed)
        return plan

    def _memory(self, snap: _Snapshot, draft: HistoryPlan, window: list[Message], left: int,
                language: str, *, every: bool = False
                ) -> tuple[dict[int, Block], Message | None, tuple[Retrieved, ...], int]:
        """The memory a plan shows: each page's block, and the tail of a page that asks.

        ``left``: the room the window leaves (its pages' blocks not counted yet). Blocks of
        pages still in the window stay as placed; the current page, at its first build,
        gets its block (its best lines that no block in the window shows, within
        :data:`KEPT_TOKENS`: none when even the shortest is longer) when its opener asks
        something. Such a page's request then ends with the rest of its lines, within its
        share (:attr:`Gathered.relevance`) of what the window leaves: this tail is the only
        memory a later request does not repeat. Returns the blocks placed, the tail,
        the items the current page shows, the tail's room. ``every``: the window holds every
        message (pages back after the budget grew): the session's own memory would repeat
        it, so none is shown, nor the blocks placed while pages were out.
        """
        placed = {} if every else {
            p: b for p, b in snap.blocks.items()
            if draft.paged is not None and draft.paged.place_of(p) == "window"}
        left -= sum(b.message.tokens or 0 for b in placed.values())
        if not window or window[-1].role == "assistant" or not snap.shown.asks:
            return placed, None, (), 0
        page, found, around = self.log.index.pages, snap.shown.candidates, snap.shown.around
        if every:
            found, around = (tuple(r for r in items if r.session != self.record.name)
                             for items in (found, around))
        opener = self._opener(page)
        if page not in placed and opener is not None:
            message, items = self.retrieval.message(
                found, window, min(KEPT_TOKENS, left), language, placed=_keys(placed))
            if message is not None:
                placed[page] = Block.made(message, items, opener)
                left -= message.tokens or 0
        # The turns around the matches come after them: they fill only what the matches leave.
        # In proportion to what the opener asks of memory: a turn that asks in passing about
        # what was just said takes little of the room, a question all of it.
        tail, more = self.retrieval.message((*found, *around), window,
                                            int(left * snap.shown.relevance), language,
                                            placed=_keys(placed))
        own = placed[page].keys if page in placed else frozenset()
        return placed, tail, (*(r for r in found if line_key(r) in own), *more), max(left, 0)

    def _commit(self, snap: _Snapshot, plan: _Plan) -> None:
        """Write what the plan changed, once, if the context version is still ours."""
        # Everything a commit needs from the engine is fetched before its transaction:
        # no other lock is taken while the store's is held.
        store, memory = self.services.store, self.services.memory
        if not plan.changes and not plan.hidden:
            for key, value in plan.cache.items():
                store.context.put(self.record, key, value)
            return
        language = self.language()
        # The cached values go with the guarded ones: one batch of values, not two.
        changes = replace(plan.changes, values={**plan.changes.values, **plan.cache})
        shown: tuple[tuple[Any, ...], Message | None] | None = None
        with store.atomic():
            if not store.context.commit(self.record, self._version, changes):
                raise _Conflict
            with self.working.committing(language) as state:
                self.working.note_hidden(state, self.log.tool_results_of(plan.hidden),
                                         self.views)
                self.working.pool_evicted(state, plan.evicted)
                if plan.evicted or plan.hidden:
                    # What this build moved out went into the working state: show it in
                    # this very request, the one whose prefix changes anyway, within what
                    # is left (rendered from what the writes read, kept once committed).
                    retrieval_tokens = (plan.retrieval.tokens or 0) if plan.retrieval else 0
                    left = snap.room - plan.window_tokens - retrieval_tokens
                    shown = self.working.rendered(state, snap.recipe,
                                                  min(snap.caps["state"], max(left, 0)),
                                                  language)
            paged = plan.history.paged
            self.retrieval.remember(memory, plan.archived,
                                    paged.contents if paged is not None else {})
            if self.summaries is not None and plan.archived:
                self.summaries.submit_keyed([(self.history.summary_key(page), messages)
                                             for page, messages in plan.archived])
        if shown is not None:
            self.working.keep(*shown)
            plan.state = shown[1]

    def _note_window_room(self, snap: _Snapshot, plan: _Plan) -> None:
        """After a request that carried the whole history, the room its window had.

        Such a plan pages nothing, so it finds no high watermark: the window may grow
        until the whole history no longer fits, and a bulk write settles only past that
        (it used to settle past the budget's low watermark: at a 128k window every batch
        of an import from ~58k to ~96k tokens ran a build's load and plan for nothing).
        """
        paged, whole = self.history.paged, plan.whole
        if paged is not None and whole is not None:
            fixed = whole.request_tokens(snap.agent_tokens, plan.state) - whole.window_tokens
            paged.high = snap.limit - fixed

    def _adopt(self, plan: _Plan) -> None:
        """The committed plan becomes the strategy state."""
        if plan.changes or plan.hidden:
            self._version += 1
        self.history.adopt(plan.history)
        self.history.values.update(plan.cache)
        self.counts = (dict(plan.history.paged.counts) if plan.history.paged is not None
                       else self.counts)

    def _assemble(self, snap: _Snapshot, plan: _Plan, started: float, *,
                  counted: bool = True) -> Context:
        """The request: head, working state, window, memory; labelled by segment.

        ``counted``: a build (its request is the one the next compares with), not a peek.
        """
        window, window_tokens, state = plan.window, plan.window_tokens, plan.state
        # The newest page's block closes the window when nothing follows its opener: it is
        # labelled with the memory after it, which the next request no longer carries.
        tail = list(reversed(list(takewhile(_memory_of(plan), reversed(window)))))
        if tail:
            window = window[:len(window) - len(tail)]
            window_tokens -= messages_tokens(tail)
        if plan.retrieval is not None:
            tail.append(plan.retrieval)
        retrieval_tokens = messages_tokens(tail)
        specs, tools_tokens = self._specs(snap, plan)
        head = plan.whole.head if plan.whole is not None else snap.head
        head_tokens = messages_tokens(head)
        state_tokens = (state.tokens or 0) if state else 0
        body: list[Message] = [*head]
        segments = [Segment("system", 0, len(body), head_tokens)]
        if state is not None:
            segments.append(Segment("state", len(body), len(body) + 1, state_tokens))
            body.append(state)
        contents = list(takewhile(_is_system, window))
        contents_tokens = messages_tokens(contents)
        if contents:
            segments.append(Segment("contents", len(body), len(body) + len(contents),
                                    contents_tokens))
        segments.append(Segment("recent", len(body) + len(contents), len(body) + len(window),
                                window_tokens - contents_tokens))
        body.extend(window)
        if tail:
            segments.append(Segment("retrieval", len(body), len(body) + len(tail),
                                    retrieval_tokens))
            body.extend(tail)
        tools = (*snap.agent, *specs)  # the agent's first, then memci's
        total = (head_tokens + state_tokens + snap.agent_tokens + tools_tokens + window_tokens
                 + retrieval_tokens + REPLY_PRIMING)
        system = self.log.system
        # The conversation's own full history: its messages as stored, not memci's tools.
        full = self.log.raw_total + ((system.tokens or 0) if system else 0) + REPLY_PRIMING
        prefix = self._prefix(body, tools, snap.agent_tokens + tools_tokens, keep=counted)
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
        if counted:
            self._whole_last = plan.whole is not None
            self.builds += 1
            self.build_ms += elapsed
            self.saved += stats.saved_tokens
        return Context(messages=body, stats=stats, tools=tools,
                       segments=tuple(s for s in segments if s.stop > s.start),
                       memory=plan.memory)

    # -- recall --------------------------------------------------------------------------

    def recall(self, page: int) -> str:
        """Bring page ``page`` back from the next build on (a tool call); committed once."""
        for _ in range(_ATTEMPTS):
            self.current()
            paged = self.history.paged
            if paged is None:
                return "error: recall_page works with the paged strategy only"
            answer, draft = paged.recall(page)
            rows, events = draft.changes()
            if not events:
                return answer
            store = self.services.store
            with store.atomic():
                if store.context.commit(self.record, self._version,
                                        ContextChanges(rows, events)):
                    self._version += 1
                    paged.adopt(draft)
                    self.counts = dict(draft.counts)
                    return answer
            self.reset()
        raise StoreError(f"session {self.record.name!r}: recall lost {_ATTEMPTS} times in a "
                         "row to concurrent writers; try again")

    def place_of(self, page: int) -> str:
        """Where a page is now: window, contents or evicted."""
        self.current()
        assert self.history.paged is not None
        return str(self.history.paged.place_of(page))

    def pages(self) -> list[PageInfo]:
        """Every page of the followed branch, oldest first, with its place."""
        self.current()
        index, paged = self.log.index, self.history.paged
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
                         or evicted.get(page))
                detail = (("current" if page == index.pages else "recalled"
                           if page in paged.recalled else "active")
                          if place == "window" else None)
                info = replace(info, place=place, detail=detail,
                               recall_count=entry.recall_count if entry else 0,
                               last_recall_round=entry.last_recall_round if entry else None,
                               archived_round=entry.archived_round if entry else None)
            out.append(info)
        return out

    def has_left_window(self, limit: int | None = None) -> bool:
        """Whether some of the conversation is out of the window (at a budget of ``limit``)."""
        return self.history.has_left_window(limit or self.settings.budget)

    def first_window_page(self) -> int:
        """The oldest page still in the window."""
        paged = self.history.paged
        return int(paged.first_active) if paged is not None else self.log.index.pages

    # -- sizes ---------------------------------------------------------------------------

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

    def _prefix(self, body: Sequence[Message], tools: Sequence[ToolSpec],
                tools_tokens: int, *, keep: bool = True) -> int:
        """Tokens at the start of this request that repeat the previous request exactly.

        The tool schemas (the agent's, then memci's) come first (providers cache tools
        before messages); when the tools sent change, nothing is shared. Messages repeat
        when they are the same objects (a stored message never changes: compared in C),
        or have the same seq and tokens (and text, for one that is not stored).
        """
        tools_key = (tuple((t.name, t.original) for t in tools), tools_tokens)
        old_key, old = self._previous
        if keep:
            self._previous = (tools_key, list(body))
        if old_key != tools_key:
            return 0
        n, shared = min(len(body), len(old)), 0
        while shared < n:
            same = list(map(operator.is_, body[shared:n], old[shared:n]))
            shared += same.index(False) if False in same else len(same)
            if shared == n or _repeat_key(body[shared]) != _repeat_key(old[shared]):
                break
            shared += 1
        return tools_tokens + messages_tokens(body[:shared])


def _with_blocks(window: Sequence[Message], blocks: Mapping[int, Block]
                 ) -> tuple[list[Message], dict[int, Block]]:
    """``window`` with each page's memory block right after the message that opened it.

    With the blocks placed (a page whose opener the window does not show keeps none).
    """
    if not blocks:
        return list(window), {}
    after = {b.opener: (page, b) for page, b in blocks.items()}
    out: list[Message] = []
    placed: dict[int, Block] = {}
    done = 0
    # The openers' places, found in C: a window holds thousands of messages, a few blocks.
    for at in compress(range(len(window)), map(after.__contains__, map(SEQ, window))):
        message = window[at]
        if message.role != "user" or message.seq is None:
            continue
        page, block = after[message.seq]
        out += window[done:at + 1]
        out.append(block.message)
        placed[page] = block
        done = at + 1
    out += window[done:]
    return out, placed


def _keys(blocks: Mapping[int, Block]) -> frozenset[str]:
    """The keys of every line ``blocks`` show."""
    return frozenset().union(*(b.keys for b in blocks.values()))


def _memory_of(plan: _Plan) -> Callable[[Message], bool]:
    """Whether a message is one of the memory blocks ``plan`` placed."""
    blocks = {id(b.message) for b in plan.blocks.values()}
    return lambda message: id(message) in blocks


def _nowhere(page: int) -> str:
    return "window"


def _is_system(message: Message) -> bool:
    return message.role == "system"


def _contents_tokens(window: Sequence[Message]) -> int:
    """Tokens of the contents page (or summary) a window starts with."""
    return messages_tokens(list(takewhile(_is_system, window)))


def _repeat_key(message: Message) -> tuple[object, ...]:
    """What makes two messages of successive requests the same (see ``_prefix``)."""
    return (message.seq, message.tokens, message.content if message.seq is None else None)

