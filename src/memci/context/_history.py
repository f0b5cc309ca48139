"""The history segments of a build: the contents page and the recent pages.

One planner decides both, because archiving moves a page from one to the other: the
paged strategy of seed 000 (:class:`~memci.context._paged.PagedContext`), or a simple
strategy of seed 001 (:mod:`memci.context._strategies`). This module keeps the strategy
state as committed (made again from the store when another writer changed it), loads
what a plan may show (the load phase: new pages, bounded by the budget; the newest tool
outputs' heads in a tool loop), plans the window on a draft (pure), and adopts the draft
once its changes are committed.

The newest message is never left out: it is cut to its floor when it alone passes the
budget (with the call it answers: providers require the pair), and the tool loop keeps
the newest steps of the current page in full, the head of the newest output beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import takewhile
from typing import Any

from memci._dataclasses import dataclass, field, replace
from memci._records import NamedTuple
from memci.context._branches import cut_fits, pages_on, seq_at
from memci.context._fit import CUT_FLOOR, floor_tokens
from memci.context._log import TOOL
from memci.context._model import SEQ, TOKENS, ContentsEntry
from memci.context._paged import PagedConfig, PagedContext, PagedPlan
from memci.context._pairing import Pairing, stand_in_result
from memci.context._recipes import Recipe
from memci.context._session_log import SessionLog
from memci.context._settings import SessionSettings
from memci.context._strategies import OldestWindow, SummarizeWindow, WindowLoader
from memci.context._tool_views import ToolViews
from memci.messages import Message
from memci.store import ContextState, SessionRecord, Store
from memci.summarize import PageSummary
from memci.tokens import Tokenizer
from memci.workspace import Artifact

__all__ = ["SHAPED", "HistoryPlan", "HistorySource", "ToolHead", "messages_tokens"]

SHAPED = "shaped"
"""The saved value that says memci shapes this session's requests now (views, its tools):
set when shaping first paid while the whole history still fitted, never unset, so the
requests that follow keep one form and a provider's cache keeps hitting."""


def messages_tokens(messages: Sequence[Message]) -> int:
    """The tokens of ``messages`` (read in C: a build sums its window's several times)."""
    return sum(filter(None, map(TOKENS, messages)))


def _is_system(message: Message) -> bool:
    return message.role == "system"


def _entry_line(message: Message) -> str:
    from memci.summarize import summarize_entry

    return summarize_entry(message)


def _summarize_texts(texts: Sequence[str], max_tokens: int) -> str:
    from memci.summarize import summarize_text

    return summarize_text(texts, max_tokens)


class ToolHead(NamedTuple):
    """A newest tool output as loaded for its head: the stored result, its artifact, text.

    ``text``: the output's first characters (one more than the most a head may show), or
    the whole output when it is that short.
    """

    stored: Message
    artifact: Artifact
    text: str


@dataclass(slots=True)
class HistoryPlan:
    """A draft of the strategy state (what one build plans on)."""

    paged: PagedPlan | None
    window: OldestWindow | SummarizeWindow | None
    values: dict[str, Any] = field(default_factory=dict)  # the cut, the base, the summary

    @property
    def first_active(self) -> int:
        """The oldest page still in the window after this plan (paged), else 0."""
        return self.paged.first_active if self.paged is not None else 0


class HistorySource:
    """The contents page and the recent pages of one session: state, load, plan, adopt."""

    def __init__(self, store: Store, record: SessionRecord, settings: SessionSettings,
                 tokenizer: Tokenizer, log: SessionLog, views: ToolViews, *,
                 summarized: bool) -> None:
        self.store = store
        self.record = record
        self.settings = settings
        self.tokenizer = tokenizer
        self.log = log
        self.views = views
        self.summarized = summarized
        self.pairing = Pairing(tokenizer)
        # The whole log, when one request carries it, is another list build after build:
        # paired through one Pairing with the window, each would check the other's anew.
        self.whole_pairing = Pairing(tokenizer)
        self.paged: PagedContext | None = None
        self.window: OldestWindow | SummarizeWindow | None = None
        self.values: dict[str, Any] = {}  # the saved cut, base and summary
        self._limit = 0  # the budget of the build being planned (see prepare)
        self._floor = (0, 0)  # (newest seq, its floor): see newest_floor

    # -- the state as committed ----------------------------------------------------------

    def restore(self, state: ContextState, counts: Mapping[str, int]) -> None:
        """Make the strategy objects from the store's state (on open, or after a change)."""
        s, log = self.settings, self.log
        self.values = dict(state.values)
        self.paged, self.window = None, None
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
                    recent_max_tokens=s.ctx_recent_max_tokens,
                    summary_swap_rounds=s.summary_swap_rounds),
                detect_language=log.language, summarized=self.summarized,
            )
            rows = pages_on(state.pages, log.index) if log.off_branch else list(state.pages)
            base = self.values.get("paged.base")
            first_active = 0
            if isinstance(base, Mapping) and self._base_holds(base):
                first_active = int(base["first_active"])
            paged.restore(rows, counts, first_active=first_active)
            paged.evicted_entry = self._evicted_entry
            cut = self.values.get("paged.cut")
            if isinstance(cut, Mapping) and log.cut_holds(cut):
                paged.restore_cut(int(cut["page"]), int(cut["hidden"]))
            self.paged = paged
            return
        loader = WindowLoader(log.index, log.load_views)
        if s.strategy == "summarize":
            window = SummarizeWindow(loader, self.tokenizer, _summarize_texts,
                                     low_watermark=s.archive_low_watermark)
            saved = self.values.get("summarize")
            if isinstance(saved, Mapping) and (not log.off_branch or cut_fits(
                    log.index, 0, int(saved["cut"]), saved.get("through"))):
                window.restore(int(saved["cut"]), str(saved["text"]))
            self.window = window
        else:
            self.window = OldestWindow(loader, self.tokenizer, s.max_messages)

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
        row = self.store.context.page(self.record, page)
        if row is None or row.state != "evicted" or not 0 < page <= self.log.index.pages:
            return None
        if self.log.index.page_seqs(page) != (row.first_seq, row.last_seq):
            return None  # saved on another branch
        return ContentsEntry(row.page, row.first_seq, row.last_seq, row.lines,
                             row.archived_round, row.recall_count, row.last_recall_round,
                             source=row.source)

    def language(self) -> str:
        """The language of memci's titles in this session."""
        if self.paged is not None:
            return self.paged.language
        if self.settings.language != "auto":
            return self.settings.language
        return self.log.language()[0]

    # -- load ----------------------------------------------------------------------------

    def prepare(self, limit: int, ready: Mapping[int, PageSummary]) -> None:
        """Load what a plan may show: pages within the budget (a backlog is never read)."""
        self._limit = limit
        if self.paged is not None:
            # A window holds at most the budget: an active backlog older than that is
            # archived as one range, never read. A budget larger than the last build's
            # may bring back pages that left the window.
            saved = self.values.get("paged.budget")
            grew = isinstance(saved, int) and limit > saved
            bound = max(limit, 4_000)
            index = self.log.index
            if (index.pages and self.all_in()
                    and self.log.raw_total - index.page_tokens(index.pages) <= limit):
                # The requests so far carried the whole history (it fitted but for its
                # newest page): every page was sent, so every page is loaded and listed
                # when they start to leave the window, none is an unread backlog.
                bound = max(bound, index.total())
            self.paged.prepare(bound, ready, grew=grew)
        elif self.window is not None:
            self.window.loader.prefetch(0 if isinstance(self.window, SummarizeWindow)
                                        and not self.window.cut else self.window_start(limit))

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

    def newest_floor(self) -> int:
        """Tokens the newest message keeps at least in a request, with what must come with it.

        A tool result comes with the assistant message that made its call, and a call not
        yet answered with its stand-in result: providers require the pair. (Under the paged
        strategy the page's opener comes too when it fits, and gives way when it does not.)
        Their text may be cut (:func:`~memci.context._fit.fit_messages`); images, tool calls
        and framing count whole. Kept by the newest seq: a stored message never changes.
        """
        index = self.log.index
        n = len(index)
        if not n:
            return 0
        seq = index.seqs[-1]
        if self._floor[0] == seq:
            return self._floor[1]
        start = n - 1
        while start > 0 and index.roles[start] == TOOL:
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

    def newest_need(self) -> int:
        """Tokens the newest message needs in the window (a tool output may be cut)."""
        index = self.log.index
        if not len(index):
            return 0
        return self.newest_floor() if index.roles[-1] == TOOL else max(
            index.tokens[-1], self.newest_floor())

    def shows_head(self, recipe: Recipe) -> bool:
        """Whether the request keeps room for the head of the newest tool output.

        A tool-loop turn whose newest message is a tool result: see :meth:`head_reserve`.
        """
        index = self.log.index
        return bool(recipe.tool_head and len(index) and index.roles[-1] == TOOL)

    def head_reserve(self, room: int) -> int:
        """Tokens kept for the head of the newest tool output, of ``room`` left for it.

        Only when :meth:`shows_head`.
        """
        return max(0, min(self.settings.tool_head_tokens, room // 4))

    def load_heads(self, reserve: int) -> dict[int, ToolHead]:
        """The newest tool outputs (the log's last run of tool results), read for their heads.

        At most ``reserve * 3`` characters of each are read, once: the plan shows what fits.
        """
        index = self.log.index
        if not reserve or not len(index):
            return {}
        position = len(index)
        while position > 0 and index.roles[position - 1] == TOOL:
            position -= 1
        if position == len(index):
            return {}
        chars = reserve * 3
        heads: dict[int, ToolHead] = {}
        stored = self.log.load_seqs(index.seqs[position], index.seqs[-1])
        for message in stored:
            if message.role != "tool" or message.seq is None:
                continue
            artifact = self.views.artifact_of(message)
            heads[message.seq] = ToolHead(message, artifact,
                                          self.views.head_text(message, artifact, chars))
        return heads

    # -- plan ----------------------------------------------------------------------------

    def draft(self) -> HistoryPlan:
        """A plan over the state as it is now."""
        return HistoryPlan(self.paged.draft() if self.paged is not None else None,
                           self.window.draft() if self.window is not None else None)

    def plan(self, draft: HistoryPlan, room: int, contents_cap: int,
             recipe: Recipe) -> tuple[list[Message], int]:
        """The window within ``room``, its tool calls paired (stand-in results counted).

        With its tokens. The contents page (or summary) comes first, as system messages.
        May run several times on one draft, each with less room.
        """
        planned = self._planned(draft, room, contents_cap, recipe)
        window = self.pairing(planned)
        tokens = messages_tokens(window)
        grown = 0 if window is planned else tokens - messages_tokens(planned)
        if grown > 0 and room > 1:
            # Stand-in results of calls never answered take room the plan did not see.
            planned = self._planned(draft, max(1, room - grown), contents_cap, recipe)
            window = self.pairing(planned)
            tokens = messages_tokens(window)
        if tokens > room:
            # The newest messages, cut to their floor, fill the room: the contents page (or
            # summary) gives way in this request.
            contents = list(takewhile(_is_system, window))
            window, tokens = window[len(contents):], tokens - messages_tokens(contents)
        return window, tokens

    def _planned(self, draft: HistoryPlan, room: int, contents_cap: int,
                 recipe: Recipe) -> list[Message]:
        if draft.paged is not None:
            # seed 004's recent_window_policy: the tool loop keeps ``keep_rounds`` rounds in
            # full, and more while they fit (within ``tool_loop_tokens``, when set).
            steps = self.settings.keep_rounds if recipe.recent_steps else 0
            return draft.paged.plan(room, contents_cap, recent_steps=steps,
                                    steps_tokens=self.settings.tool_loop_tokens
                                    if recipe.recent_steps else 0)
        if isinstance(draft.window, SummarizeWindow):
            return draft.window.plan(room, contents_cap)
        assert draft.window is not None
        return draft.window.plan(room)

    def saved_values(self, draft: HistoryPlan) -> dict[str, Any]:
        """The values a plan changed: the paged cut and first active page, or the summary."""
        values: dict[str, Any] = {}
        index = self.log.index
        if draft.paged is not None:
            paged = draft.paged
            cut, saved_cut = paged.cut, self._saved_cut()
            if cut != saved_cut and (cut[1] or saved_cut[1]):
                page, hidden = cut
                start = index.page_span(page)[0] if 0 < page <= index.pages else 0
                values["paged.cut"] = {"page": page, "hidden": hidden,
                                       "through": seq_at(index, start + hidden)}
            if self.values.get("paged.budget") != self._limit:
                values["paged.budget"] = self._limit  # written when the budget changes
            if paged.first_active != self._saved_base():
                first = paged.first_active
                values["paged.base"] = {
                    "first_active": first,
                    "at": seq_at(index, index.page_starts[first - 1])
                    if first <= index.pages else None}
        elif isinstance(draft.window, SummarizeWindow) and draft.window.changed:
            summary = draft.window.summary
            values["summarize"] = {
                "cut": draft.window.cut,
                "text": summary.content.split("\n", 1)[1] if summary else "",
                "through": seq_at(index, draft.window.cut - 1)}
        return values

    def _saved_cut(self) -> tuple[int, int]:
        saved = self.values.get("paged.cut")
        if isinstance(saved, Mapping):
            return int(saved["page"]), int(saved["hidden"])
        return 0, 0

    def _saved_base(self) -> int:
        saved = self.values.get("paged.base")
        return int(saved["first_active"]) if isinstance(saved, Mapping) else 1

    def with_heads(self, window: list[Message], reserve: int,
                   heads: Mapping[int, ToolHead]) -> list[Message]:
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
            head = heads.get(out[i].seq or 0)
            if head is None:
                continue
            base = out[i].tokens or 0
            chars = share * 3
            while chars > 0:
                shown = self.views.view(head.stored, head.artifact, head_chars=chars,
                                        head=head.text)
                if (shown.tokens or 0) - base <= share:
                    out[i] = shown
                    break
                chars = int(chars * 0.7) - 1
        return out

    # -- after the plan ------------------------------------------------------------------

    def adopt(self, draft: HistoryPlan) -> None:
        """Make a committed plan the state."""
        if self.paged is not None and draft.paged is not None:
            self.paged.adopt(draft.paged)
        if isinstance(self.window, SummarizeWindow) and isinstance(draft.window,
                                                                   SummarizeWindow):
            self.window.adopt(draft.window)
        self.values.update(draft.values)

    def all_in(self) -> bool:
        """Whether the state as committed leaves nothing of the history out of the window.

        No page archived or recalled, no tool-loop step hidden, no summary, no cap on the
        messages the window may hold that the log passes.
        """
        if self.values.get(SHAPED):
            return False
        if self.paged is not None:
            paged = self.paged
            return (paged.first_active <= 1 and not paged.archive.contents
                    and not paged.recalled and not paged.cut[1])
        if isinstance(self.window, SummarizeWindow):
            return not self.window.cut
        limit = self.settings.max_messages
        return not limit or len(self.log.index) <= limit

    def left_out(self, draft: HistoryPlan, window: Sequence[Message]) -> bool:
        """Whether a build's ``window`` leaves some of the history out (after its plan).

        Counted in messages, not tokens: a tool result shown by its view is in the window
        (artifact_get reads the rest), though the view costs less than the output. Pages
        archived once and back in the window (the budget grew) leave nothing out.
        """
        if draft.paged is not None and draft.paged.contents:
            return True
        held = len(self.log.index)
        if len(window) < held:  # fewer messages than the log, stored or not
            return True
        return len(window) - list(map(SEQ, window)).count(None) < held

    def has_left_window(self, limit: int) -> bool:
        """Whether some of the conversation is out of the window (at a budget of ``limit``).

        Then the tools that bring it back can act: an archived page, or a history longer
        than the budget (the build archives, so its contents page points at pages the
        model can recall at once).
        """
        if self.paged is not None and (self.paged.first_active > 1
                                       or self.paged.archive.contents):
            return True
        return self.log.index.total() > limit

    def window_seq(self, first_active: int) -> int:
        """The seq the window starts at: its oldest page's first (recalled pages aside).

        1 while no page has left it: the whole conversation is in the window (what comes
        before the first page is system messages, never retrieved). ``first_active``: the
        oldest active page (of the state, or of a plan).
        """
        index = self.log.index
        first = first_active if self.paged is not None else index.pages
        if first <= 1:
            return 1
        start, _ = index.page_span(min(first, index.pages))
        return index.seqs[start]

    def archived(self, place_of: Callable[[int], str]) -> Callable[[int], bool]:
        """Whether a page left the window, by ``place_of`` (the state's or a plan's)."""
        if self.paged is None:
            return lambda page: False
        return lambda page: place_of(page) in ("contents", "evicted")

    def summary_key(self, page: int) -> str:
        """The key of a page's background summary job."""
        first, last = self.log.index.page_seqs(page)
        return f"session:{self.record.id}:page:{page}:{first}-{last}"

    def entries(self, page: int) -> int:
        """How many messages page ``page`` holds."""
        start, end = self.log.index.page_span(page)
        return end - start

