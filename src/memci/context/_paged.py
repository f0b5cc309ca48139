"""The paged context of seed 000: archiving, the contents page, recall and eviction.

The ActiveChapter holds recent pages in full. When it passes its budget (the high
watermark) whole pages, oldest first, move to the ArchiveChapter until it is back under
the low watermark: archiving happens in batches, so between two archive events every
request begins with exactly the previous request and providers' prompt caches keep
hitting (with a model summarizing archived pages, its ready lines may also replace the
stand-ins in between, at most once every ``summary_swap_rounds`` rounds: see
:meth:`PagedPlan._swap_due`). An archived page is listed on the contents page (its index,
one short line per entry, its recall count and last recall round — absolute numbers,
never "5 rounds ago") and its messages stay in the store.

``recall_page(n)`` brings a page back in full from the next build on (it sits before the
active pages, in page order) and it ages out again at the next archive event. Entries
leave the contents page by seed 000's rules: never recalled after ``m`` rounds; recall
count unchanged for ``p`` rounds; least recently used first when the contents page passes
its token limit. Every archive, recall and eviction is an event (page, round, reason).

A round is a page: the round number is the number of the newest page.

System messages are not part of pages. A system prompt may change at any time, so a system
message can lie inside a page's seq span (between a user message and its answer); pages
are loaded without it, and it is never archived, recalled or listed.

A plan never changes the state it starts from: :meth:`PagedContext.draft` gives a
:class:`PagedPlan` that copies the little it may change (the contents entries, the recalled
pages, the first active page, the cut) and records the pages it takes out of the window
instead of unlinking them. The builder commits what the draft changed; only then does
:meth:`PagedContext.adopt` make it the state. A draft that loses its compare-and-swap is
dropped, and the next one starts from the state as loaded again.

Invariant: every non-system message of the log is in exactly one place — an active page,
a recalled page (both in the window), a page listed on the contents page, or an evicted
page. The current page's opening user message is always in the window in full (cut only
when it alone passes the whole budget).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from memci._dataclasses import dataclass, field, replace
from memci._records import NamedTuple
from memci.context._contents import CONTENTS_OVERHEAD, ContentsPage, capped_lines, entry_text
from memci.context._fit import fit_messages, floor_tokens, newest_that_fit
from memci.context._log import TOOL, USER, LogIndex, role_name
from memci.context._model import (
    NUMBER,
    TOKENS,
    ActiveChapter,
    ArchiveChapter,
    ContentsEntry,
    MessageNode,
    Page,
    page_from_messages,
)
from memci.messages import Message
from memci.store._log import ContextEvent, PageRow
from memci.summarize import ENTRY_WIDTH, PageSummary, pack_lines
from memci.text import fit_line
from memci.tokens import Tokenizer

__all__ = ["ContextEvent", "PageRow", "PagedConfig", "PagedContext", "PagedPlan"]

Loader = Callable[[int, int], list[Message]]  # (first_seq, last_seq) -> messages


class PagedConfig(NamedTuple):
    """Tunables of the paged strategy (all configurable per session)."""

    low_watermark: float = 0.6
    evict_unrecalled_rounds: int = 30
    evict_unchanged_rounds: int = 20
    contents_max_tokens: int = 0
    contents_entry_lines: int = 8
    language: str = "auto"
    recent_max_tokens: int = 0
    recent_pages: int = 3
    summary_swap_rounds: int = 4


@dataclass(slots=True)
class _Dirty:
    pages: set[int] = field(default_factory=set)
    events: list[ContextEvent] = field(default_factory=list)


class PagedContext:
    """Pages of one session as committed: which are in the window, listed, recalled."""

    def __init__(
        self, *, log: LogIndex, loader: Loader, tokenizer: Tokenizer,
        line_of: Callable[[Message], str], config: PagedConfig,
        detect_language: Callable[[], tuple[str, bool]] = lambda: ("en", True),
        summarized: bool = False,
    ) -> None:
        self.log = log
        self._loader = loader
        self.tokenizer = tokenizer
        self.contents_page = ContentsPage(tokenizer)
        self.line_of = line_of
        self.config = config
        self._detect_language = detect_language
        self.summarized = summarized  # a model summarizes archived pages in the background
        self._language = config.language if config.language != "auto" else ""
        self.active = ActiveChapter()
        self.archive = ArchiveChapter()
        self.recalled: dict[int, ContentsEntry] = {}
        self.first_active = 1
        self._next_position = 0  # the next log position to put into a page
        self._cut = 0  # messages of the current page hidden after its opening message
        self._cut_page = 0
        self._contents: Message | None = None  # the contents page as last rendered
        self.counts = {"archive": 0, "recall": 0, "evict": 0}
        # The window's high watermark as the last plan adopted here found it (its room
        # less the contents page; None before one): a bulk write settles past it.
        self.high: int | None = None
        self._backlog = 0  # active pages up to this one are past the load bound
        self._ready: dict[int, PageSummary] = {}  # model summaries ready, by page
        #: Pages before the window loaded because the budget grew (a plan may bring them back).
        self._restorable: dict[int, Page] = {}
        #: The saved entry of a page evicted before this object was made (recall reads it).
        self.evicted_entry: Callable[[int], ContentsEntry | None] = lambda page: None
        #: Contents lines made by the plans of one build (a build plans several times as it
        #: refines its room), by page, first and last seq and language; emptied at adopt.
        self.lines_made: dict[tuple[int, int, int, str], tuple[str, ...]] = {}

    def _load(self, first: int, last: int) -> list[Message]:
        """The page messages with ``first <= seq <= last``: system messages left out."""
        return [m for m in self._loader(first, last) if m.role != "system"]

    @property
    def language(self) -> str:
        """The language of the contents page's titles: set, or found from the log's start."""
        if self._language:
            return self._language
        language, final = self._detect_language()
        if final:
            self._language = language
        return language

    @property
    def round(self) -> int:
        """The current round: the newest page's number."""
        return self.log.pages

    @property
    def cut(self) -> tuple[int, int]:
        """``(page, hidden)``: how many steps of the current page are hidden (as committed)."""
        return self._cut_page, self._cut

    def entry_tokens(self, entry: ContentsEntry) -> int:
        """Tokens an entry adds to the contents page."""
        return self.contents_page.entry_tokens(entry, self.language)

    @property
    def counted(self) -> str:
        """What an entry's tokens are counted for: the tokenizer, the language, the blank line.

        ``+blank``: its text with the blank line after it (rows saved before 2026-11-28
        counted the text and one token, and are counted again).
        """
        return f"{self.tokenizer.name}/{self.language}+blank"

    def _restored_tokens(self, row: PageRow, entry: ContentsEntry) -> int:
        """The entry's tokens: as saved with its row when counted alike, else counted."""
        if row.counted and row.counted == self.counted:
            self.contents_page.known(entry_text(entry, self.language), row.tokens)
            return row.tokens
        return self.entry_tokens(entry)

    # -- save / load ---------------------------------------------------------------------

    def restore(
        self, rows: Sequence[PageRow], counts: Mapping[str, int], *, first_active: int = 0
    ) -> None:
        """Load saved page states (before the first build).

        Evicted pages are not among ``rows``: pages before ``first_active`` that are not
        listed or recalled are evicted.
        """
        self.first_active = max(1, first_active)
        for row in rows:
            entry = ContentsEntry(row.page, row.first_seq, row.last_seq, row.lines,
                                  row.archived_round, row.recall_count,
                                  row.last_recall_round, source=row.source)
            entry.tokens = self._restored_tokens(row, entry)
            if row.state == "archived":
                self.archive.contents[row.page] = entry
            elif row.state == "recalled":
                self.recalled[row.page] = entry
            self.first_active = max(self.first_active, row.page + 1)
        for page in sorted(self.recalled):
            self.active.add_page(self._recalled_page(page), before=self._later(page))
        self.counts.update(counts)

    def restore_cut(self, page: int, hidden: int) -> None:
        """Load a saved cut of the current page."""
        self._cut_page, self._cut = page, hidden

    def waiting(self) -> list[int]:
        """Listed pages whose lines are stand-ins a model's summary may replace."""
        return [p for p, e in self.archive.contents.items() if e.source != "llm"]

    def prepare(
        self, bound: int, ready: Mapping[int, PageSummary] | None = None, *,
        grew: bool = False,
    ) -> None:
        """The load phase: put what a plan may show into pages, within ``bound`` tokens.

        Active pages older than the newest ``bound`` tokens (a backlog imported without
        builds) are not loaded: the next plan archives them at once, as one range
        (a plan reads nothing). ``ready`` are model summaries done for :meth:`waiting`
        pages. ``grew``: the budget is larger than the last build's, so the newest pages
        that left the window are loaded too, as many as ``bound`` holds with the window
        (the plan brings back those that fit).
        """
        self._ready = dict(ready or {})
        self._restorable = {}
        log = self.log
        if not len(log):
            return
        if grew:
            self._load_restorable(bound)
        last = self.round - 1  # the current page is never backlog
        backlog = self.first_active - 1
        if last >= self.first_active and self._active_tokens() > bound:
            end = log.span_tokens(0, len(log))
            # the oldest page whose start is within ``bound`` of the end
            keep = self.first_active
            while keep <= last and end - log.cum[log.page_starts[keep - 1]] > bound:
                keep += 1
            backlog = keep - 1
        self._backlog = max(backlog, self.first_active - 1)
        self._materialize_new()

    def _active_tokens(self) -> int:
        start = self.log.page_starts[self.first_active - 1]
        total = self.log.span_tokens(start, len(self.log))
        return total + sum(self.log.page_tokens(p) for p in self.recalled)

    def unbuilt_tokens(self) -> int:
        """Tokens of the window as committed: the active pages, new ones too, and recalled."""
        return self._active_tokens() if len(self.log) else 0

    def _load_restorable(self, bound: int) -> None:
        """Load the newest pages before the window that ``bound`` holds beside it."""
        tokens = self._active_tokens()
        pages: list[int] = []
        for page in range(self.first_active - 1, 0, -1):
            if page in self.recalled:
                continue
            tokens += self.log.page_tokens(page)
            if tokens > bound:
                break
            pages.append(page)
        if not pages:
            return
        messages = self._load(self.log.page_seqs(pages[-1])[0], self.log.page_seqs(pages[0])[1])
        by_page: dict[int, list[Message]] = {}
        for message in messages:
            by_page.setdefault(self.log.page_of_seq(message.seq or 0), []).append(message)
        self._restorable = {p: page_from_messages(p, by_page[p]) for p in pages
                            if by_page.get(p)}

    def _materialize_new(self) -> None:
        """Put log positions not yet in a page into the active chapter."""
        log = self.log
        start = max(self._next_position,
                    log.page_starts[max(self.first_active, self._backlog + 1) - 1]
                    if self._backlog < log.pages else len(log))
        if start >= len(log):
            self._next_position = len(log)
            return
        for message in self._load(log.seqs[start], log.seqs[-1]):
            number = log.page_of_seq(message.seq or 0)
            current = self.active.pages.get(number)
            if current is None:
                current = Page(number, message.seq or 0)
                self.active.add_page(current)
            current.append(message)
        self._next_position = len(log)

    def _recalled_page(self, page: int) -> Page:
        """Page ``page`` loaded from the store, detached (to be linked in)."""
        first, last = self.log.page_seqs(page)
        return page_from_messages(page, self._load(first, last))

    def _later(self, page: int) -> Page | None:
        later = [p for p in self.active.pages.values() if p.number > page]
        return min(later, key=NUMBER) if later else None

    # -- plans ---------------------------------------------------------------------------

    def draft(self) -> PagedPlan:
        """A plan over the state as it is now (the state itself is not changed)."""
        return PagedPlan(self)

    def adopt(self, plan: PagedPlan) -> None:
        """Make what ``plan`` decided the state (after its changes were committed)."""
        for number in plan.detached:
            page = self.active.pages.get(number)
            if page is not None:
                page.detach()
        for page in (*plan.attach, *plan.restored):
            self.active.add_page(page, before=self._later(page.number))
        self.first_active = plan.first_active
        self.archive.contents = plan.contents
        self.recalled = plan.recalled
        self._cut_page, self._cut = plan.cut
        self.counts = plan.counts
        self._contents = plan.contents_cache
        self.high = plan.high
        self.lines_made.clear()
        if plan.backlog_archived:
            self._backlog = 0

    def recall(self, page: int) -> tuple[str, PagedPlan]:
        """A draft that brings page ``page`` back in full from the next build on.

        Returns what to tell the model and the draft (to commit, then adopt); the page's
        messages are loaded here.
        """
        plan = self.draft()
        return plan.recall(page), plan

    def place_of(self, page: int) -> str:
        """Where page ``page`` is now: window, contents, evicted (for checks and inspect)."""
        return _place(page, self.recalled, self.archive.contents, self.first_active)


def _place(page: int, recalled: Mapping[int, ContentsEntry],
           contents: Mapping[int, ContentsEntry], first_active: int) -> str:
    if page in recalled or page >= first_active:
        return "window"
    if page in contents:
        return "contents"
    if 1 <= page < first_active:
        return "evicted"
    return "unknown"


class PagedPlan:
    """One build's plan over a :class:`PagedContext`: archive, evict, trim; reads nothing.

    It starts from copies of what it may change and never touches the state's pages: the
    pages it takes out of the window are recorded in :attr:`detached`.
    """

    def __init__(self, state: PagedContext) -> None:
        self.state = state
        self.log = state.log
        self.config = state.config
        self.tokenizer = state.tokenizer
        self.language = state.language
        self.first_active = state.first_active
        self.contents = dict(state.archive.contents)
        self.recalled = dict(state.recalled)
        self.evicted: dict[int, ContentsEntry] = {}  # evicted by this plan
        self.counts = dict(state.counts)
        self.high = state.high  # the last run of plan() sets it
        self._cut_page, self._cut = state.cut
        self.contents_cache = state._contents
        self.detached: set[int] = set()  # pages this plan took out of the window
        self.attach: list[Page] = []  # pages to link in (a recall: shown from the next build)
        self.restored: list[Page] = []  # pages to link in that this plan shows (a larger budget)
        self.hidden: list[int] = []  # seqs newly hidden by the cut
        self.archived: list[tuple[int, list[Message]]] = []  # pages archived, loaded
        self.backlog_archived = False
        self._backlog = state._backlog
        self._dirty = _Dirty()
        self._just_archived: set[int] = set()  # pages this plan archived (never evicted)
        # tokens of the memory block each page carries while it is in the window (see
        # memci.context._retrieval): a page's block comes and goes with it
        self.kept: Mapping[int, int] = {}

    @property
    def cut(self) -> tuple[int, int]:
        """``(page, hidden)``: how many steps of the current page are hidden (to save)."""
        return self._cut_page, self._cut

    @property
    def round(self) -> int:
        """The current round: the newest page's number."""
        return self.log.pages

    def changes(self) -> tuple[list[PageRow], list[ContextEvent]]:
        """Page rows and events this plan changed (for the store to save)."""
        rows = [self._row(p) for p in sorted(self._dirty.pages) if self._has_row(p)]
        return rows, list(self._dirty.events)

    def feeds_state(self) -> bool:
        """Whether the plan moved lines to the working state (evicted or hidden steps)."""
        return bool(self.evicted) or bool(self.hidden)

    def place_of(self, page: int) -> str:
        """Where page ``page`` is after this plan: window, contents, evicted."""
        return _place(page, self.recalled, self.contents, self.first_active)

    def _has_row(self, page: int) -> bool:
        return page in self.contents or page in self.evicted or page in self.recalled

    def _row(self, page: int) -> PageRow:
        for state, table in (("archived", self.contents), ("evicted", self.evicted),
                             ("recalled", self.recalled)):
            if page in table:
                e = table[page]
                # Counted for the row as it is saved (a count is kept: it costs little).
                return PageRow(page, e.first_seq, e.last_seq, state, e.archived_round,
                               e.recall_count, e.last_recall_round, e.lines, e.source,
                               self.state.entry_tokens(e), self.state.counted)
        raise AssertionError(f"page {page} has no saved state")

    def _in_window(self, number: int) -> bool:
        return number in self.state.active.pages and number not in self.detached

    # -- the plan ------------------------------------------------------------------------

    def plan(self, room: int, contents_cap: int, *, recent_steps: int = 0,
             steps_tokens: int = 0) -> list[Message]:
        """Archive, evict and trim so that the contents page and the window fit ``room``.

        Reads no message (:meth:`PagedContext.prepare` loaded what it may show). May run
        several times on one draft (a smaller room each time), as a build refines its room.

        With ``recent_steps`` (the tool-loop recipe), the current page shows its opening
        message and its newest steps only: at least ``recent_steps`` of them, cut back to
        that many when they pass twice as many less one (so the cut moves in batches);
        ``steps_tokens`` (when not 0) caps the tokens of the current page's steps shown.
        """
        if not len(self.log):
            return []
        cap = min(self.config.contents_max_tokens or contents_cap, contents_cap)
        self._archive_backlog()
        self._evict_by_rules()
        self._evict_lru(cap)  # the cap shrinks when the allocator's profile changes
        high = self.high = room - self._contents_tokens()
        if self._active_tokens() > high:
            self._archive_down_to(int(high * self.config.low_watermark), cap,
                                  "active chapter over its budget", limit=high)
            self._evict_lru(cap)
        if self.compaction_pending and self.log.roles[-1] == USER:
            # seed 004's soft trigger: run only at a user turn, never inside a tool chain
            keep = self.round - self.config.recent_pages + 1
            self._archive_down_to(self._tokens_from(keep), cap,
                                  "soft trigger: chat tokens over ctx_recent_max_tokens")
            self._evict_lru(cap)
        if self.state.summarized and self._swap_due(high):
            self._upgrade_lines()
            self._evict_lru(cap)  # a model's lines may be longer than the stand-ins
        if self.state._restorable and not self._just_archived:
            self._restore_to(int((room - self._contents_tokens()) * self.config.low_watermark))
        contents = self.contents_message()
        budget_left = room - (contents.tokens or 0 if contents else 0)
        window = self._window(budget_left, recent_steps, steps_tokens)
        return [contents, *window] if contents else window

    @property
    def compaction_pending(self) -> bool:
        """Whether the soft trigger of seed 004 has fired.

        It fires when the chat tokens (user and assistant) of the active pages older than
        the newest ``recent_pages`` pass ``recent_max_tokens``.
        """
        limit, keep = self.config.recent_max_tokens, self.config.recent_pages
        last = self.round - keep
        if not limit or last < self.first_active:
            return False
        end = self.log.page_span(last)[1]
        start = self.log.page_starts[self.first_active - 1]
        roles, tokens = self.log.roles, self.log.tokens
        chat = sum(tokens[i] for i in range(start, end) if roles[i] != TOOL)
        return chat > limit

    def _tokens_from(self, page: int) -> int:
        start = self.log.page_starts[max(page, 1) - 1]
        return self.log.span_tokens(start, len(self.log))

    def _active_tokens(self) -> int:
        start = self.log.page_starts[self.first_active - 1]
        total = self.log.span_tokens(start, len(self.log))
        kept = sum(t for p, t in self.kept.items() if p >= self.first_active or p in self.recalled)
        return total + kept + sum(self.log.page_tokens(p) for p in self.recalled)

    def _page_tokens(self, page: int) -> int:
        """Tokens of a page in the window: its messages and its memory block."""
        return self.log.page_tokens(page) + self.kept.get(page, 0)

    def _archive_backlog(self) -> None:
        """Archive and evict, as one range, the active pages the load did not read."""
        if self._backlog < self.first_active:
            return
        first, last = self.first_active, self._backlog
        self.detached.update(p for p in self.state.active.pages
                             if p <= last and p not in self.recalled)
        self.first_active = last + 1
        # Listed on the contents page as one range line (memci.context._contents), never
        # archived and evicted in one build.
        self._event("archive", first, "backlog: older than what the window can hold, "
                    "not listed (no room on the contents page)", last)
        self._backlog = 0
        self.backlog_archived = True
        self.contents_cache = None

    def _archive_down_to(self, target: int, cap: int, reason: str, *, limit: int = 0) -> None:
        """Archive recalled pages, then the oldest active ones, until under ``target``.

        A page recalled in this round stays (the model has not read it yet) unless the
        window is still over ``limit`` without it.
        """
        tokens = self._active_tokens()
        for page in sorted(self.recalled):
            if tokens <= target:
                return
            if self.recalled[page].last_recall_round != self.round:
                tokens -= self._archive_recalled(page)
        # Pages that would not even fit on the contents page are evicted straight away
        # (the LRU rule), so a long unbuilt backlog is never summarized page by page.
        last = self.round - 1
        batch: list[int] = []
        while self.first_active <= last and tokens > target:
            batch.append(self.first_active)
            tokens -= self._page_tokens(self.first_active)
            self.first_active += 1
        listed_budget = cap
        listed: set[int] = set()
        for page in reversed(batch):
            if listed_budget <= 0 or not self._in_window(page):
                break
            listed.add(page)
            listed_budget -= self._estimate_entry_tokens(page)
        taken: list[tuple[int, list[Message]]] = []
        for page in batch:
            first, last_seq = self.log.page_seqs(page)
            messages: list[Message] = []
            if self._in_window(page):
                messages = list(self.state.active.pages[page].messages())
                self.detached.add(page)
            entry = ContentsEntry(page, first, last_seq,
                                  self._lines(messages) if page in listed else (),
                                  archived_round=self.round)
            self._just_archived.add(page)
            if messages:
                taken.append((page, messages))
            if page in listed:
                entry.tokens = self.state.entry_tokens(entry)
                self.contents[page] = entry
                self._event("archive", page, reason)
            else:
                # No room to list it: its lines go to the context pool, and the contents
                # page names it in its range line (archived, not evicted, in this build).
                self.evicted[page] = entry
                self._event("archive", page, f"{reason}, not listed (no room on the "
                            "contents page)")
        for page in sorted(self.recalled):
            if tokens <= max(limit, target):
                break
            tokens -= self._archive_recalled(page)
        self.archived += taken
        self.contents_cache = None

    def _archive_recalled(self, page: int) -> int:
        """Move a recalled page back to the contents page; return its tokens."""
        self.contents[page] = self.recalled.pop(page)
        self.detached.add(page)
        self._event("archive", page, "aged out after recall")
        return self._page_tokens(page)

    def _swap_due(self, high: int) -> bool:
        """Whether the model summaries ready now go onto the contents page in this build.

        Always when the page changes anyway (this build archived or evicted a page).
        Otherwise only every ``summary_swap_rounds`` rounds after the newest archive, so
        the prefix of the requests in between breaks at most once per that many rounds,
        and not when the next archive event is due within that many rounds (it takes
        them in for free): the active chapter's room left, ``high`` less its tokens, is
        compared with the tokens the last that many rounds added.
        """
        if self._dirty.events:
            return True
        every = self.config.summary_swap_rounds
        if not every or not any(p in self.contents and self.contents[p].source != "llm"
                                for p in self.state._ready):
            return False
        since = self.round - max(e.archived_round for e in self.contents.values())
        if since < every or since % every:
            return False
        recent = self._tokens_from(self.round - every + 1) / every  # tokens a round, lately
        return high - self._active_tokens() > every * recent

    def _upgrade_lines(self) -> None:
        """Swap stand-in lines for the model's where they are ready (see :meth:`_swap_due`).

        Lines written per message keep their roles; lines about the page as a whole are
        shown as they are, packed into the entry's line cap so none is cut away.
        """
        cap = self.config.contents_entry_lines
        for page, summary in self.state._ready.items():
            if page not in self.contents or self.contents[page].source == "llm":
                continue
            if summary.form == "page":
                lines = pack_lines(summary.lines, cap,
                                   lambda text: fit_line(text, ENTRY_WIDTH))
            else:
                start, _ = self.log.page_span(page)
                roles = self.log.roles[start:start + len(summary.lines)]
                lines = self._capped([f"{role_name(r)}: {t}" for r, t in
                                      zip(roles, summary.lines, strict=True)])
            entry = replace(self.contents[page], source="llm", lines=lines)
            entry.tokens = self.state.entry_tokens(entry)
            self.contents[page] = entry
            self._dirty.pages.add(page)
            self.contents_cache = None

    def _evict_by_rules(self) -> None:
        m, p, now = (self.config.evict_unrecalled_rounds, self.config.evict_unchanged_rounds,
                     self.round)
        for page, entry in list(self.contents.items()):
            if entry.recall_count == 0 and m and now - entry.archived_round >= m:
                self._evict(page, f"never recalled in {m} rounds")
            elif (entry.recall_count and p and entry.last_recall_round is not None
                  and now - entry.last_recall_round >= p):
                self._evict(page, f"recall count unchanged for {p} rounds")

    def _evict_lru(self, cap: int) -> None:
        # First on the entries' own counts (no page is rendered per eviction, which made
        # a long first build quadratic), then on the page as sent, for the last few.
        while self.contents and self._estimate_contents() > cap:
            self._evict_one()
        while self.contents and self._contents_tokens() > cap:
            self._evict_one()

    def _estimate_contents(self) -> int:
        """The contents page's tokens from its entries' counts (a little over, never under)."""
        return CONTENTS_OVERHEAD + sum(e.tokens for e in self.contents.values())

    def _evict_one(self) -> None:
        """Take the least recently used entry off the contents page (see _evict_lru)."""
        older = [e for e in self.contents.values() if e.page not in self._just_archived]
        if not older:
            # Only pages archived by this build are left: one is not listed after all
            # (its lines go to the context pool, the range line names it); a page is
            # never archived and evicted in one build.
            page = min(self.contents)
            self.evicted[page] = self.contents.pop(page)
            self.contents_cache = None
            return
        # Least recently used first; at a tie, a page never recalled before one that was.
        page = min(older, key=lambda e: (e.last_recall_round or e.archived_round,
                                         e.recall_count, e.page)).page
        self._evict(page, "lru: contents page over its token limit")

    def _evict(self, page: int, reason: str) -> None:
        self.evicted[page] = self.contents.pop(page)
        self._event("evict", page, reason)
        self.contents_cache = None

    def _event(self, kind: str, page: int, reason: str, last_page: int = 0) -> None:
        event = ContextEvent(self.round, kind, page, reason, max(last_page, page))
        self._dirty.events.append(event)
        if event.pages == 1:
            self._dirty.pages.add(page)  # a range (a backlog) keeps no row per page
        self.counts[kind] += event.pages

    def _restore_to(self, target: int) -> None:
        """Bring back, newest first, the loaded pages that fit the window under ``target``.

        A page comes back as a recalled one: in full, first to leave again when the window
        is over its budget. Only the pages :meth:`PagedContext.prepare` loaded (the budget
        grew), so a steady budget never archives a page and brings it back.
        """
        tokens = self._active_tokens()
        for page in sorted(self.state._restorable, reverse=True):
            if page in self.recalled:  # back already: this plan was fitted once before
                continue
            tokens += self.log.page_tokens(page)
            if tokens > target:
                return
            back = self.state._restorable[page]
            entry = self.contents.pop(page, None) or self.evicted.pop(page, None)
            if entry is None:  # evicted, or archived with a backlog: lines made again
                first, last_seq = self.log.page_seqs(page)
                entry = ContentsEntry(page, first, last_seq, self._lines(back.messages()),
                                      archived_round=self.round)
            self.recalled[page] = replace(entry, last_recall_round=self.round)
            self.restored.append(back)
            self._event("recall", page, "the budget grew: room for the page in full again")
            self.contents_cache = None

    # -- recall --------------------------------------------------------------------------

    def recall(self, page: int) -> str:
        """Bring page ``page`` back in full from the next build on; say what happened."""
        if not 1 <= page <= self.round:
            return f"error: there is no page {page}; pages are numbered 1 to {self.round}"
        if page in self.recalled or page >= self.first_active:
            return f"Page {page} is already in your context in full."
        entry = (self.contents.pop(page, None) or self.evicted.pop(page, None)
                 or self.state.evicted_entry(page))
        if entry is None:  # evicted with a backlog: no row, its messages are in the log
            first, last_seq = self.log.page_seqs(page)
            entry = ContentsEntry(page, first, last_seq, (), archived_round=self.round)
        entry = replace(entry, recall_count=entry.recall_count + 1,
                        last_recall_round=self.round)
        self.recalled[page] = entry
        self.attach.append(self.state._recalled_page(page))
        self._event("recall", page, "recall_page tool call")
        self.contents_cache = None
        return (f"Page {page} (messages {entry.first_seq}-{entry.last_seq}) is back in your "
                "context in full from the next request on.")

    # -- the window ----------------------------------------------------------------------

    def _window(self, room: int, recent_steps: int, steps_tokens: int = 0) -> list[Message]:
        """Recalled and active pages; the current page trimmed in batches if it must be.

        A list made page by page, not a generator: a window holds thousands of messages.
        """
        active = self.state.active
        current = active.pages.get(self.round)
        if current is not None and current.number in self.detached:
            current = None
        pages = [p for p in active.ordered_pages()
                 if p.number not in self.detached and p is not current]
        if self.restored:  # the budget brings them back in this request
            pages = sorted([*pages, *self.restored], key=NUMBER)
        kept = self.kept
        others = sum(map(TOKENS, pages))
        if kept:
            others += sum(kept.get(p.number, 0) for p in pages)
        window: list[Message] = []
        for page in pages:
            window += page.messages()
        if current is not None and current.head is not None:
            window += self._current_page(current, room - others, recent_steps, steps_tokens)
        return window

    def _current_page(self, page: Page, room: int, recent_steps: int,
                      steps_tokens: int = 0) -> Iterator[Message]:
        opener = page.head
        assert opener is not None
        if self._cut_page != page.number:
            self._cut_page, self._cut = page.number, 0
        rest_tokens = page.tokens - (opener.message.tokens or 0)
        shown = rest_tokens - self._hidden_tokens(page)
        room_rest = room - (opener.message.tokens or 0)
        # The steps shown stay within the tool-loop target (the newest is never cut for it).
        target = min(room_rest, steps_tokens) if steps_tokens else room_rest
        before = self._cut
        if recent_steps:
            self._cut = max(self._cut, self._step_cut(page, recent_steps))
            shown = rest_tokens - self._hidden_tokens(page)
        if shown > target:
            self._cut = self._new_cut(page, int(target * self.config.low_watermark))
        if self._cut > before:
            start, _ = self.log.page_span(page.number)
            self.hidden += self.log.seqs[start + 1 + before:start + 1 + self._cut]
        node: MessageNode | None = opener.next
        for _ in range(self._cut):
            assert node is not None
            node = node.next
        rest: list[Message] = []
        while node is not None:
            rest.append(node.message)
            node = node.next
        # When even the page's opener and its newest step do not fit, their text is cut
        # (the largest first), for this request only; below their floors, the opener
        # gives way (the newest step is never left out).
        shown_unit = [opener.message, *rest]
        if rest and sum(floor_tokens(m, self.tokenizer) for m in shown_unit) > room:
            shown_unit = rest
        yield from fit_messages(shown_unit, room, self.tokenizer)

    def _step_cut(self, page: Page, steps: int) -> int:
        """The cut that shows ``steps`` newest steps, if more than ``2 * steps - 1`` show."""
        start, end = self.log.page_span(page.number)
        roles = self.log.roles
        starts = [i for i in range(start + 1 + self._cut, end) if roles[i] != TOOL]
        if len(starts) <= 2 * steps - 1:
            return self._cut
        return starts[-steps] - (start + 1)

    def _hidden_tokens(self, page: Page) -> int:
        start, _ = self.log.page_span(page.number)
        return self.log.span_tokens(start + 1, start + 1 + self._cut)

    def _new_cut(self, page: Page, target: int) -> int:
        start, end = self.log.page_span(page.number)
        keep = newest_that_fit(self.log.roles, self.log.tokens, target, lo=start + 1)
        if keep >= end:  # not even the newest step fits: keep it anyway, cut later
            keep = end - 1
            while keep > start + 1 and self.log.roles[keep] == TOOL:
                keep -= 1
        return max(0, keep - (start + 1))

    # -- the contents page ---------------------------------------------------------------

    def _lines(self, messages: Sequence[Message]) -> tuple[str, ...]:
        if not messages:
            return self._capped([])
        key = (self.log.page_of_seq(messages[0].seq or 0), messages[0].seq or 0,
               messages[-1].seq or 0, self.language)
        made = self.state.lines_made.get(key)
        if made is None:
            made = self._capped([f"{m.role}: {self.state.line_of(m)}" for m in messages
                                 if m.role != "system"])
            self.state.lines_made[key] = made
        return made

    def _capped(self, lines: list[str]) -> tuple[str, ...]:
        return capped_lines(lines, self.config.contents_entry_lines, self.language)

    def _estimate_entry_tokens(self, page: int) -> int:
        start, end = self.log.page_span(page)
        return 12 + 18 * min(end - start, self.config.contents_entry_lines or end - start)

    def _contents_tokens(self) -> int:
        # Counted on the page itself, as sent: an estimate that differs from what the next
        # build counts would evict there, with nothing new to archive.
        contents = self.contents_message()
        return (contents.tokens or 0) if contents is not None else 0

    def contents_message(self) -> Message | None:
        """The contents page: every listed page, then one line naming the unlisted ones."""
        if not self.contents and self.first_active <= 1:
            return None
        if self.contents_cache is None:
            self.contents_cache = self.state.contents_page.render(
                self.contents, self.recalled.keys(), self.first_active, self.language)
        return self.contents_cache


def node_messages(first: MessageNode | None) -> list[Message]:
    """Messages from ``first`` to the end of its list (a debugging aid)."""
    out: list[Message] = []
    while first is not None:
        out.append(first.message)
        first = first.next
    return out
