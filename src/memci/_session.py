"""Session: one conversation's log, its settings, and how its context is built.

A session takes messages in (``add``, ``add_many``: each is stored before it returns) and
answers "what do I send now?" with ``build()``. It keeps a :class:`LogIndex` of its log in
memory (seq, role, tokens, pages), so planning a build reads no message; before every build
it catches up with the store, so appends made by other processes are seen. The index holds
the branch the context follows (:mod:`memci.context._branches`): a fork keeps every message
stored and rebuilds the index over the branch. Everything in memory is derived from the
store and rebuilt from it when the session is opened.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from memci._settings import SessionSettings
from memci._toolviews import SessionArtifacts, ToolViews, count_tool_result
from memci.budget import BudgetAllocator, PriorityRanker, Section, cut_middle
from memci.context import Context, ContextStats, ToolSpec
from memci.context._branches import (
    BRANCH_META,
    Branches,
    check_links,
    cut_fits,
    link_of,
    pages_on,
    runs,
    seq_at,
    within,
)
from memci.context._log import LogIndex
from memci.context._paged import PagedConfig, PagedContext, PageRow
from memci.context._pairing import pair_tool_calls
from memci.context._strategies import OldestWindow, SummarizeWindow, WindowLoader
from memci.errors import ConfigError, InvalidMessageError
from memci.memory import DocIndex, Hit, IndexReport, Retrieved, Scope
from memci.memory._judge import judge
from memci.memory._query import analyze_query
from memci.messages import Message, ToolCallPart, coerce_many, to_openai, to_wire
from memci.recipes import TITLES, Recipe, choose_recipe
from memci.store import SessionRecord
from memci.summarize import SUMMARIZE_PAGE, JobQueue, PageSummary, job_counts
from memci.tokens import Tokenizer, get_tokenizer
from memci.tools._builtin import FILE_TOOLS, RECALL_PAGE, SEARCH_MEMORY, WORKSPACE_TOOLS
from memci.tools._registry import Tool, ToolArgumentError, run_tool
from memci.workspace import (
    CHINESE_TITLES,
    ENGLISH_TITLES,
    Artifact,
    WorkState,
)

if TYPE_CHECKING:
    from memci.engine import Engine

__all__ = ["EXPORT_FORMAT", "Session", "SessionStats"]

EXPORT_FORMAT = "memci.session.v1"
_REPLY_PRIMING = 3


@dataclass(frozen=True, slots=True)
class SessionStats:
    """What a session has done (seed 002 GetStats).

    ``builds``, ``mean_build_ms`` and ``tokens_saved`` count builds in this process;
    archive, recall and evict counts are the session's whole history. Background jobs of
    the session (page summaries by a model): ``jobs_pending`` wait or run;
    ``jobs_failed`` are not done and their latest attempt failed (waiting for a retry, or
    ``jobs_gave_up``: failed for good); ``jobs_last_error`` is the newest failure's text.
    """

    messages: int
    pages: int
    builds: int
    mean_build_ms: float
    tokens_saved: int
    archived: int
    recalled: int
    evicted: int
    jobs_pending: int = 0
    jobs_failed: int = 0
    jobs_gave_up: int = 0
    jobs_last_error: str | None = None


def _language(texts: Iterable[str]) -> str:
    sample = "".join(texts)[:2000]
    cjk = sum(1 for ch in sample if "\u4e00" <= ch <= "\u9fff")
    return "zh" if sample and cjk / len(sample) > 0.15 else "en"


def _entry_line(message: Message) -> str:
    from memci.summarize import summarize_entry

    return summarize_entry(message)


def _summarize_texts(texts: Sequence[str], max_tokens: int) -> str:
    from memci.summarize import summarize_text

    return summarize_text(texts, max_tokens)


class Session:
    """One conversation: its stored log, its settings, and how its context is built."""

    def __init__(self, engine: Engine, record: SessionRecord, settings: SessionSettings) -> None:
        self.engine = engine
        self._lock = threading.RLock()
        self._record = record
        self.settings = settings
        self.tokenizer: Tokenizer = get_tokenizer(settings.tokenizer, provider=settings.provider)
        self._log = LogIndex()
        self._system: Message | None = None
        self._last_seq = 0
        self._builds = 0
        self._build_ms = 0.0
        self._saved = 0
        self._previous: list[tuple[tuple[int | None, int | None, str | None], int]] = []
        self._allocator = BudgetAllocator()
        self._ranker = PriorityRanker()
        self._tool_token_cache: dict[tuple[str, ...], int] = {}
        self._contract: tuple[str, Message] = ("", Message.system(""))
        self._call_ids: dict[int, frozenset[str]] = {}
        self._calls: dict[str, ToolCallPart] = {}
        self._raw_total = 0
        self._work: WorkState | None = None
        self._state_message: tuple[str, Message | None] = ("", None)
        self._expired_round = 0
        self._has_tool_results = False
        self._retrieval_for: tuple[int, tuple[Retrieved, ...]] = (0, ())
        self._branches = Branches()  # the log's tree; self._log is the branch followed
        self._followed = 0  # positions of self._log checked against the branches
        self._at: int | None = None  # the message fork() continues from, until an add
        self.artifacts = SessionArtifacts(engine.workspace.artifacts, record)
        self._views = ToolViews(engine.store, record, engine.workspace.artifacts,
                                self.tokenizer)
        self._sync()
        self._make_strategy()

    def _reconfigure(self, record: SessionRecord, settings: SessionSettings) -> None:
        with self._lock:
            changed = settings != self.settings
            self._record = record
            if changed:
                self.settings = settings
                self.tokenizer = get_tokenizer(settings.tokenizer, provider=settings.provider)
                self._views.tokenizer = self.tokenizer
                self._tool_token_cache = {}
                self._contract = ("", Message.system(""))
                self._make_strategy()

    def _make_strategy(self) -> None:
        s = self.settings
        loader = WindowLoader(self._log, self._load_views)
        self._paged: PagedContext | None = None
        self._saved_cut = (0, 0)
        self._window: OldestWindow | SummarizeWindow
        if s.strategy == "paged":
            self._paged = PagedContext(
                log=self._log, loader=self._load_views, tokenizer=self.tokenizer,
                line_of=_entry_line,
                config=PagedConfig(
                    low_watermark=s.archive_low_watermark,
                    evict_unrecalled_rounds=s.evict_unrecalled_rounds,
                    evict_unchanged_rounds=s.evict_unchanged_rounds,
                    contents_max_tokens=s.contents_max_tokens,
                    contents_entry_lines=s.contents_entry_lines, language=s.language,
                    recent_max_tokens=s.ctx_recent_max_tokens),
                detect_language=self._detect_language,
                summaries=(_JobSummaries(self.engine.jobs, self._record, self._log)
                           if self.engine.jobs is not None else None),
            )
            rows, counts = self._load_page_state()
            if self._off_branch():
                rows = pages_on(rows, self._log)  # states saved on other branches
            self._paged.restore(rows, counts)
            saved_cut = self._state_get("paged.cut")
            if saved_cut and self._cut_holds(saved_cut):
                self._paged.restore_cut(int(saved_cut["page"]), int(saved_cut["hidden"]))
            self._saved_cut = self._paged.cut
        elif s.strategy == "summarize":
            window = SummarizeWindow(loader, self.tokenizer, _summarize_texts,
                                     low_watermark=s.archive_low_watermark)
            saved = self._state_get("summarize")
            if saved and (not self._off_branch() or cut_fits(
                    self._log, 0, int(saved["cut"]), saved.get("through"))):
                window.restore(int(saved["cut"]), str(saved["text"]))
            self._window = window
        else:
            self._window = OldestWindow(loader, self.tokenizer, s.max_messages)

    def _detect_language(self) -> tuple[str, bool]:
        """The conversation's language from its first four messages; final once they exist.

        Derived from the log alone, so it is the same after a reopen.
        """
        if not len(self._log):
            return "en", False
        last = self._log.seqs[min(3, len(self._log) - 1)]
        texts = [m.content for m in self._load_branch(self._log.seqs[0], last)
                 if m.role != "system"]
        return _language(texts), len(self._log) >= 4

    # -- identity ------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The session's name."""
        return self._record.name

    @property
    def tenant(self) -> str:
        """The tenant the session belongs to."""
        return self._record.tenant

    @property
    def user(self) -> str | None:
        """The user the session belongs to."""
        return self._record.user

    @property
    def record(self) -> SessionRecord:
        """The session's row in the store."""
        return self._record

    @property
    def system_prompt(self) -> str | None:
        """The text of the newest system message, as stored (None when there is none)."""
        with self._lock:
            self._sync()
            return self._system.content if self._system is not None else None

    # -- writing -------------------------------------------------------------------------

    def set_system(self, text: str) -> Message:
        """Store a system message; the newest one is the session's system prompt."""
        return self.add({"role": "system", "content": text})

    def add(self, message: object) -> Message:
        """Store one message (OpenAI or Anthropic dict, SDK object, or Message).

        Durable when this returns. Returns the stored message (the last one, when an
        Anthropic message holds tool results and text and so becomes several).
        """
        return self.add_many([message])[-1]

    def add_many(self, messages: Iterable[object]) -> list[Message]:
        """Store messages in one transaction: all of them, or none (then it raises)."""
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
            raise InvalidMessageError(
                f"add_many takes a list of messages, not {type(messages).__name__}")
        limit = self.settings.max_message_bytes
        ready: list[Message] = []
        for message in coerce_many(messages, max_bytes=limit):
            tokens = (message.tokens if message.tokens is not None
                      else count_tool_result(self.tokenizer, message))
            ready.append(replace(message, tokens=tokens, seq=None, session=None))
        if not ready:
            return []
        with self._lock:
            ready = self._linked(ready)
            # Tool outputs are hashed, summarized and (large ones) written to their files
            # first; their rows, the messages and the search index then commit together.
            pending = self._views.prepare(ready, self._calls)
            memory = self.engine.memory
            linked: list[tuple[Message, Artifact]] = []

            def also(_db: object, rows: list[Message]) -> None:
                # Runs inside the append's transaction: these writes join it.
                memory.index(self._record, ToolViews.as_stored(rows, pending))
                linked.extend(self._views.link(pending, rows))

            stored = self.engine.store.append(
                self._record, ready, also=also,
                external={p.position: p.prepared.sha256 for p in pending if p.external})
            if stored[0].seq == self._last_seq + 1:
                self._index(stored, linked)
            else:
                self._sync()
        return stored

    def search(
        self, query: str, k: int = 10, scope: str = "session", *, now: datetime | None = None
    ) -> list[Hit]:
        """Messages (and memory items) for ``query``, best first.

        Keyword search (FTS5, English and Chinese) fused with dense vectors when an
        embedder is configured, time-aware ("yesterday", "上周"; counted from ``now``, the
        current time by default). ``scope``: ``session``, ``user`` (all of the user's
        sessions) or ``tenant``. Evicted pages are found too.
        """
        if scope not in ("session", "user", "tenant"):
            raise ConfigError(f"scope must be 'session', 'user' or 'tenant', not {scope!r}")
        if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= 10_000:
            raise ConfigError(f"k must be an int from 1 to 10000, not {k!r}")
        if now is not None and not isinstance(now, datetime):
            raise ConfigError(f"now must be a datetime, not {type(now).__name__}")
        return self.engine.memory.search(query, session=self._record, k=k,
                                         scope=scope, now=now)  # type: ignore[arg-type]

    # -- reading -------------------------------------------------------------------------

    def messages(self) -> list[Message]:
        """The whole stored log, in order."""
        return self.engine.store.messages(self._record)

    def count(self) -> int:
        """How many messages the session holds."""
        with self._lock:
            self._sync()
            return self._last_seq

    def export_jsonl(self, out: IO[str]) -> int:
        """Write the session as JSONL (a header line, then one message a line); lossless."""
        header = {"format": EXPORT_FORMAT, "session": self.name, "tenant": self.tenant,
                  "user": self.user, "settings": dict(self._record.settings)}
        out.write(json.dumps(header, ensure_ascii=False) + "\n")
        count = 0
        for message in self.messages():
            out.write(json.dumps(to_wire(message), ensure_ascii=False) + "\n")
            count += 1
        return count

    # -- branches (memci.context._branches) ---------------------------------------------

    def fork(self, after: int) -> None:
        """Continue the conversation after message ``after`` (``0``: from its start).

        A regenerated reply, an edited message or a retried turn is a branch: from now on
        this session's builds and tools use the branch that ends at ``after``, and the next
        message added continues it (its metadata records ``memci_branch: {"after": …}``,
        so every process follows it from then on). Nothing is removed: what came after
        ``after`` on the old branch stays in ``messages()`` and in search, and leaves the
        context. Raises ConfigError when ``after`` is neither 0 nor the seq of a user,
        assistant or tool message of the session.
        """
        if isinstance(after, bool) or not isinstance(after, int):
            raise ConfigError(f"after must be a message seq (an int), not {after!r}")
        with self._lock:
            self._sync()
            if after != 0 and after not in self._branches:
                raise ConfigError(
                    f"after={after} is not the seq of a user, assistant or tool message of "
                    f"session {self.name!r}: pass one of those seqs, or 0 for the start")
            self._at = after
            self._follow_branch({})

    def branch_seqs(self) -> list[int]:
        """The seqs of the branch the context follows (system messages aside), in order."""
        with self._lock:
            self._sync()
            return list(self._log.seqs)

    def branch(self) -> list[Message]:
        """The messages of the branch the context follows, with the system messages."""
        with self._lock:
            self._sync()
            keep = set(self._log.seqs)
        return [m for m in self.messages() if m.role == "system" or m.seq in keep]

    def _off_branch(self) -> bool:
        """Whether the log holds non-system messages that the followed branch leaves out."""
        return len(self._log) < len(self._branches)

    def _linked(self, ready: list[Message]) -> list[Message]:
        """Messages to store, checked for branch links; after ``fork`` the first one links."""
        if self._at is not None:
            first = next((i for i, m in enumerate(ready) if m.role != "system"), None)
            if first is not None and BRANCH_META not in ready[first].metadata:
                message = ready[first]
                ready = [*ready[:first], replace(message, metadata={
                    **message.metadata, BRANCH_META: {"after": self._at}}), *ready[first + 1:]]
        if any(BRANCH_META in m.metadata for m in ready):
            check_links(ready, self._branches, self._last_seq)
        return ready

    def _follow_branch(self, links: Mapping[int, int]) -> None:
        """Record the messages just indexed in the tree; keep the index on the followed branch.

        Messages that continue the followed branch were appended to the index already;
        anything else (a link to an earlier message, a message added elsewhere while this
        session was on a forked branch) rebuilds the index from the store.
        """
        log = self._log
        tip = log.seqs[self._followed - 1] if self._followed else 0
        continues = True
        new = log.seqs[self._followed:]
        if not links and tip == self._branches.newest:
            self._branches.extend(new)  # the plain case, in bulk: each continues the last
            tip = new[-1] if new else tip
        else:
            for seq in new:
                parent = self._branches.add(seq, links.get(seq))
                continues = continues and parent == tip
                tip = seq
        if new:
            self._at = None  # a message was added: follow the newest from now on
        self._followed = len(log)
        target = self._at if self._at is not None else self._branches.newest
        if not continues or tip != target:
            self._rebuild_branch(target)

    def _rebuild_branch(self, tip: int) -> None:
        """Index the branch that ends at ``tip`` and remake the strategy over it."""
        keep = set(self._branches.chain(tip))
        log = LogIndex()
        raw = 0
        for seq, role, tokens, view in self.engine.store.token_index(self._record):
            if seq in keep:
                raw += tokens
                log.append(seq, role, view if view is not None else tokens)
        self._log, self._raw_total, self._followed = log, raw, len(log)
        self._make_strategy()

    def _cut_holds(self, saved: Mapping[str, Any]) -> bool:
        """Whether a saved cut of a page holds on the followed branch."""
        page, hidden = int(saved["page"]), int(saved["hidden"])
        if not self._off_branch() or hidden == 0:
            return True
        if not 0 < page <= self._log.pages:
            return False
        start, end = self._log.page_span(page)
        return start + 1 + hidden <= end and cut_fits(self._log, start + 1, hidden,
                                                        saved.get("through"))

    def _on_branch(self, hit: Hit) -> bool:
        """Whether a retrieved hit is not this session's past that left the branch.

        Another branch of this very conversation is not an earlier conversation: its
        messages, and the episodes remembered of its archived pages, are not retrieved.
        """
        if not self._off_branch():
            return True
        item = hit.item
        if item is None:
            return hit.session != self.name or bool(self._log.page_of_seq(hit.message.seq or 0))
        if item.session_id != self._record.id or item.page is None:
            return True
        paged = self._paged
        return paged is not None and (item.page in paged.archive.contents
                                      or item.page in paged.archive.evicted)

    def _load_branch(self, first: int, last: int) -> list[Message]:
        """Messages with ``first <= seq <= last`` on the followed branch (and system ones)."""
        if not self._off_branch():
            return self._load_seqs(first, last)
        out: list[Message] = []
        for a, b in runs(within(self._log, first, last)):
            out += [m for m in self._load_seqs(a, b)
                    if m.role == "system" or self._log.page_of_seq(m.seq or 0)]
        return out

    # -- building ------------------------------------------------------------------------

    def build(self, *, budget: int | None = None, recipe: str = "auto") -> Context:
        """The context to send now, within ``budget`` tokens (default: the session's).

        ``recipe`` is ``chat``, ``tool_loop`` or ``auto`` (the tool loop when the newest
        message is a tool result or a tool call is unanswered).
        """
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0
        ):
            raise ConfigError(f"budget must be a positive int, not {budget!r}")
        started = time.perf_counter()
        with self._lock:
            self._sync()
            chosen = choose_recipe(recipe, newest_role=self._log.roles[-1] if len(self._log)
                                   else None, call_pending=self._call_pending())
            self._expire_pins()
            specs = self.tool_specs()
            limit = budget if budget is not None else self.settings.budget
            tools_tokens = self._tool_tokens(specs)
            for keep in (("recall_page", "search_memory"), ("recall_page",), ()):
                if tools_tokens <= limit // 4:
                    break  # a small budget cannot carry every schema: keep the essential
                specs = tuple(s for s in specs if s.name in keep)
                tools_tokens = self._tool_tokens(specs)
            head = self._head_system(specs)
            head_tokens = sum(m.tokens or 0 for m in head)
            room = limit - tools_tokens - head_tokens - _REPLY_PRIMING
            # The profile follows the setting, not each page's hits: a profile that came
            # and went with the hits would resize the contents page back and forth.
            caps = self._trimmed(self._allocator.allocate(
                max(room, 0), turns=self._log.pages, has_retrieval=self._retrieval_on()), room)
            found = self._retrieved(gather=False)
            retrieval = self._retrieval_message(found or (), caps["retrieval"])
            retrieval_tokens = (retrieval.tokens or 0) if retrieval else 0
            state = self._state(chosen, caps["state"])
            state_tokens = (state.tokens or 0) if state else 0
            reserve = self._head_reserve(chosen, room - state_tokens - retrieval_tokens)

            def plan() -> tuple[list[Message], int]:
                return self._fit_bytes(head, room - retrieval_tokens - state_tokens - reserve,
                                       caps, specs, chosen)

            window, payload_bytes = plan()
            if found is None:
                # Gathered once per page, after the first plan has archived what it must,
                # so that what is still in the window is not fetched again.
                retrieval = self._retrieval_message(self._retrieved(gather=True) or (),
                                                    caps["retrieval"])
                retrieval_tokens = (retrieval.tokens or 0) if retrieval else 0
                if retrieval_tokens:
                    window, payload_bytes = plan()
            events = self._save_changes()
            if events:
                # Evicted pages went into the context pool: show it in this very request,
                # the one whose prefix changes anyway, not in the next one.
                state = self._state(chosen, caps["state"])
                grown = ((state.tokens or 0) if state else 0) - state_tokens
                state_tokens += grown
                if grown > 0:
                    window, payload_bytes = plan()
                    events += self._save_changes()
            if reserve:
                window = self._with_head(window, reserve)
            if retrieval is not None:
                window = self._place_retrieval(window, retrieval)
                if window[-1] is not retrieval:
                    retrieval, retrieval_tokens = None, 0
            body = [*head, *([state] if state else []), *window]
            history = sum(m.tokens or 0 for m in window)
            contents = sum(m.tokens or 0 for m in window if m.role == "system")
            history -= retrieval_tokens
            total = (head_tokens + state_tokens + tools_tokens + retrieval_tokens + history
                     + _REPLY_PRIMING)
            system_tokens = (self._system.tokens or 0) if self._system else 0
            full = self._raw_total + system_tokens + tools_tokens + _REPLY_PRIMING
            elapsed = (time.perf_counter() - started) * 1000
            stats = ContextStats(
                total_tokens=total, budget=limit,
                sections={"system": head_tokens, "tools": tools_tokens, "state": state_tokens,
                          "retrieval": retrieval_tokens, "contents": contents,
                          "recent": history - contents},
                build_ms=elapsed, messages=len(body), full_tokens=full,
                strategy=self.settings.strategy, shares=caps,
                prefix_tokens=self._prefix(body, tools_tokens), request_bytes=payload_bytes,
                events=events, recipe=chosen.name,
            )
            self._builds += 1
            self._build_ms += elapsed
            self._saved += stats.saved_tokens
        return Context(messages=body, stats=stats, tools=specs)

    def _trimmed(self, caps: dict[str, int], room: int) -> dict[str, int]:
        """Caps cut by priority when the newest page needs more than its share (seed 002).

        The newest page is required; what it needs beyond the recent share comes out of
        the lowest priorities first: working state (preferences), contents page (episodic),
        then retrieval.
        """
        if not len(self._log):
            return caps
        need = min(self._log.page_tokens(self._log.pages), int(room * 0.6))
        sections = [Section("recent", "recent", max(need, caps["recent"]), required=True),
                    Section("retrieval", "retrieval", caps["retrieval"]),
                    Section("contents", "episodic", caps["contents"]),
                    Section("state", "preferences", caps["state"])]
        keep = self._ranker.rank_and_truncate(sections, max(room, 0))
        return {**caps, **{k: keep[k] for k in ("retrieval", "contents", "state")}}

    def _retrieved(self, *, gather: bool) -> tuple[Retrieved, ...] | None:
        """Long-term memory for the user message that opened the current page (seed 002).

        Gathered once per page (episodes and preferences, in parallel, cached) and saved,
        so the requests of a tool loop, and a reopened session, carry the same text.
        None when this page's retrieval is not gathered yet and ``gather`` is false.
        """
        if not self._retrieval_on() or not self._log.pages:
            return ()
        start, _ = self._log.page_span(self._log.pages)
        opener = self._log.seqs[start]
        if self._retrieval_for[0] == opener:
            return self._retrieval_for[1]
        saved = self._state_get("retrieval")
        if saved and saved.get("opener") == opener:
            found_saved = tuple(Retrieved(t["text"], t["source"], t["kind"], t["score"])
                                for t in saved["texts"])
            self._retrieval_for = (opener, found_saved)
            return found_saved
        if not gather:
            return None
        first = self._load_seqs(opener, opener)[0]
        found: tuple[Retrieved, ...] = ()
        if first.role == "user" and first.content.strip():
            query = first.content[:500]
            # The query analyzer (rules: a build never waits on a model) says which
            # sources this input needs: chat history, documents, code (seed 003).
            plan = analyze_query(query)
            if plan.consults("history") or not (plan.consults("documents")
                                                 or plan.consults("code")):
                oldest = self._log.seqs[self._log.page_span(self._first_window_page())[0]]
                # "Yesterday" counts from when the question was asked (a replayed or
                # imported conversation keeps its own dates), not from the wall clock.
                gathered = self.engine.gatherer.gather(
                    query, session=self._record, scope="user", exclude_from_seq=oldest,
                    now=first.created_at)
                found = replace(gathered, episodes=tuple(
                    h for h in gathered.episodes if self._on_branch(h))).texts
            if plan.consults("documents") or plan.consults("code"):
                docs = DocIndex(self.engine.store).search_docs(query, k=3)
                found += tuple(
                    Retrieved(h.text[:600], f"{h.path}#L{h.start_line}-{h.end_line}",
                              "document", h.score) for h in docs)
        self._retrieval_for = (opener, found)
        self._state_set("retrieval", {"opener": opener, "texts": [
            {"text": r.text, "source": r.source, "kind": r.kind, "score": r.score}
            for r in found]})
        return found

    def _retrieval_on(self) -> bool:
        # The simple strategies of seed 001 stay simple: retrieval goes with paging.
        return self.settings.retrieval and self._paged is not None

    def _first_window_page(self) -> int:
        return self._paged.first_active if self._paged is not None else self._log.pages

    def _retrieval_message(self, found: Sequence[Retrieved], cap: int) -> Message | None:
        """The retrieval segment: a titled user-role block (placed last in the request)."""
        if not found or cap <= 0:
            return None
        titles = TITLES[self._language()]
        lines = [titles.retrieval]
        for item in found:
            text = " ".join(item.text.split())
            lines.append(f"- [{item.kind} · {item.source}] {text[:600]}")
        text = "\n".join(lines)
        if self.tokenizer.count(text) > cap:
            text = cut_middle(text, max(0, cap - 8), self.tokenizer)
        if not text:
            return None
        built = Message.user(text)
        return replace(built, tokens=self.tokenizer.count_message(built))

    def _place_retrieval(self, window: list[Message], retrieval: Message) -> list[Message]:
        """Put the retrieval block at the end, after the newest message.

        It is gathered once per page and is the only part of a request that is not carried
        into the next one, so everything before it stays a prefix a provider can cache.
        """
        if not window or window[-1].role == "assistant":
            return window  # the model is not answering a user or a tool now: nothing to add
        return [*window, retrieval]

    def _call_pending(self) -> bool:
        """Whether the newest assistant message made tool calls not yet all answered."""
        roles = self._log.roles
        if not roles or roles[-1] not in ("assistant", "tool"):
            return False
        i = len(roles) - 1
        while i >= 0 and roles[i] == "tool":
            i -= 1
        if i < 0 or roles[i] != "assistant":
            return False
        answered = len(roles) - 1 - i
        if answered == 0 and roles[-1] == "assistant":
            message = self._load_seqs(self._log.seqs[i], self._log.seqs[i])
            return bool(message and message[0].tool_calls)
        return False

    def _head_system(self, specs: Sequence[ToolSpec]) -> list[Message]:
        """The system segment: the system prompt, and the tool contract when tools are on."""
        out = [self._system] if self._system is not None else []
        if any(s.name == "artifact_get" for s in specs):
            language = self._language()
            if self._contract[0] != language:
                titles = TITLES[language]
                contract = Message.system(f"{titles.contract_title}\n{titles.contract}")
                self._contract = (language, replace(
                    contract, tokens=self.tokenizer.count_message(contract)))
            out.append(self._contract[1])
        return out

    def _language(self) -> str:
        if self._paged is not None:
            return self._paged.language
        if self.settings.language != "auto":
            return self.settings.language
        return self._detect_language()[0]

    def _state(self, recipe: Recipe, cap: int) -> Message | None:
        """The working-state segment for ``recipe``: titled sections, within ``cap``."""
        version = self._workspace_version()
        key = f"{recipe.name}:{version}:{cap}:{self._language()}"
        if self._state_message[0] == key:
            return self._state_message[1]
        state = self.work_state()
        render = {"fastmemo": state.render_fastmemo, "context_pool": state.render_context_pool,
                  "pins": state.render_pins, "plan": state.render_plan,
                  "notebook": state.render_notebook}
        sections = {name: text for name in recipe.sections if (text := render[name]())}
        message: Message | None = None
        if sections:
            from memci.summarize import ExtractiveSummarizer, fit_sections

            title = TITLES[self._language()].state
            heads = {k: v.split("\n", 1)[0] for k, v in sections.items()}
            bodies = {k: v.split("\n", 1)[1] if "\n" in v else "" for k, v in sections.items()}
            room = max(0, cap - self.tokenizer.count(title + "".join(heads.values())) - 8)
            # Over its share, a section is summarized down, never dropped (seed 003).
            fitted = fit_sections(bodies, room, self.tokenizer, ExtractiveSummarizer())
            blocks = [f"{heads[k]}\n{fitted[k]}" for k in sections]
            text = "\n\n".join([title, *blocks])
            if self.tokenizer.count(text) > cap:
                text = cut_middle(text, max(0, cap - 8), self.tokenizer)
            if text:
                built = Message.system(text)
                message = replace(built, tokens=self.tokenizer.count_message(built))
        self._state_message = (key, message)
        return message

    def _workspace_version(self) -> int:
        return self.engine.store.work.latest_event(self._record.id)

    def _expire_pins(self) -> None:
        """Expire pins once per round (by time and by rounds): they move to the notebook.

        Only when there are pins: a chat without pins pays no write per round (the round
        a new pin starts from is recorded by :meth:`record_round` before a state tool runs).
        """
        if self._log.pages != self._expired_round:
            self._expired_round = self._log.pages
            state = self.work_state()
            if state.pin_list():
                state.expire(round=self._log.pages)

    def record_round(self) -> None:
        """Record the current round in the working state (TTLs in rounds count from it)."""
        self.work_state().expire(round=self._log.pages)

    def _head_reserve(self, recipe: Recipe, room: int) -> int:
        """Tokens kept for the head of the newest tool output (tool-loop turns)."""
        if not recipe.tool_head or not len(self._log) or self._log.roles[-1] != "tool":
            return 0
        return max(0, min(self.settings.tool_head_tokens, room // 4))

    def _with_head(self, window: list[Message], reserve: int) -> list[Message]:
        """The newest tool results shown with the head of their output, within ``reserve``."""
        last = [i for i in range(len(window) - 1, -1, -1) if window[i].role == "tool"]
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
            stored = self._load_seqs(out[i].seq or 0, out[i].seq or 0)[0]
            artifact = self._views.artifact_of(stored)
            base = out[i].tokens or 0
            chars = share * 3
            while chars > 0:
                shown = self._views.view(stored, artifact, head_chars=chars)
                if (shown.tokens or 0) - base <= share:
                    out[i] = shown
                    break
                chars = int(chars * 0.7) - 1
        return out

    def _plan(self, room: int, caps: Mapping[str, int], recipe: Recipe) -> list[Message]:
        if self._paged is not None:
            window = self._paged.plan(room, caps["contents"], recent_steps=recipe.recent_steps)
        elif isinstance(self._window, SummarizeWindow):
            window = self._window.plan(room, caps["contents"])
        else:
            window = self._window.plan(room)
        return pair_tool_calls(window, self.tokenizer, self._call_ids)

    def _fit_bytes(
        self, head: list[Message], room: int, caps: Mapping[str, int],
        specs: Sequence[ToolSpec], recipe: Recipe,
    ) -> tuple[list[Message], int]:
        """Plan the window; if the request passes ``max_request_bytes``, plan smaller."""
        limit = self.settings.max_request_bytes
        for _ in range(8):
            window = self._plan(room, caps, recipe)
            if not limit:
                return window, 0
            body = [*head, *window]
            size = len(json.dumps({"messages": to_openai(body),
                                   "tools": [s.to_openai() for s in specs]},
                                  ensure_ascii=False).encode())
            if size <= limit or room <= 1:
                return window, size
            room = max(1, int(room * limit / size * 0.9))
        return window, size

    def _prefix(self, body: Sequence[Message], tools_tokens: int) -> int:
        """Tokens at the start of this request that repeat the previous request exactly."""
        keys = [((m.seq, m.tokens, m.content if m.seq is None else None), m.tokens or 0)
                for m in body]
        shared = 0
        if self._previous:
            shared = tools_tokens  # memci's tool schemas come first and do not change
            for (key, tokens), (old, _) in zip(keys, self._previous, strict=False):
                if key != old:
                    break
                shared += tokens
        self._previous = keys
        return shared

    # -- tools ---------------------------------------------------------------------------

    def _all_tools(self) -> dict[str, Tool[Session]]:
        tools: dict[str, Tool[Session]] = {}
        if self._paged is not None:
            tools[RECALL_PAGE.spec.name] = RECALL_PAGE
        tools[SEARCH_MEMORY.spec.name] = SEARCH_MEMORY
        tools.update(FILE_TOOLS)
        tools.update(WORKSPACE_TOOLS)
        return tools

    def _tools(self) -> dict[str, Tool[Session]]:
        """memci's tools offered in this session: the ``tools`` setting, or by need.

        ``auto``: recall_page with the paged strategy; once the session has tool calls,
        artifact_get, grep, pins, plan and notebook; file_snippet and grep when file_roots
        are set.
        """
        every = self._all_tools()
        chosen = self.settings.tools
        if chosen != "auto":
            return {name: every[name] for name in chosen if name in every}
        return {name: tool for name, tool in every.items()
                if name in ("recall_page", "search_memory")
                or (name in ("file_snippet", "grep") and self.settings.file_roots)
                or (self._has_tool_results and name != "file_snippet")}

    def export_state(self) -> dict[str, Any]:
        """The session's ``context_state.json`` (pins, plan, notebook, fastmemo, limits)."""
        return self.work_state().export_state()

    def import_state(self, data: Any) -> None:
        """Replace the working state with a ``context_state.json`` object (all or nothing).

        An unknown version or a malformed object raises ``InvalidStateFileError`` and
        changes nothing.
        """
        self.work_state().import_state(data)

    def index_path(
        self, path: str | Path, *, progress: Callable[[int, int, str], None] | None = None
    ) -> IndexReport:
        """Index text, Markdown and code files under ``path`` for search (incremental)."""
        return DocIndex(self.engine.store).index_path(path, progress=progress)

    def work_state(self) -> WorkState:
        """The session's pins, plan, notebook and fastmemo (seed 004)."""
        titles = CHINESE_TITLES if self._language() == "zh" else ENGLISH_TITLES
        if self._work is None:
            self._work = WorkState(self.engine.store, self._record, titles=titles)
        self._work.titles = titles
        return self._work

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """memci's own tools offered to the model in this session."""
        return tuple(t.spec for t in self._tools().values())

    def tools(self, format: str = "openai") -> list[dict[str, Any]]:
        """memci's own tool schemas, in OpenAI or Anthropic format."""
        if format not in ("openai", "anthropic"):
            raise ConfigError(f"format must be 'openai' or 'anthropic', not {format!r}")
        specs = self.tool_specs()
        if format == "anthropic":
            return [s.to_anthropic() for s in specs]
        return [s.to_openai() for s in specs]

    def call_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run one of memci's own tools; refusals and bad arguments answer ``error: …``."""
        with self._lock:
            self._sync()
            return run_tool(self._tools(), self, name, arguments)

    def _recall(self, page: int) -> str:
        if self._paged is None:
            raise ToolArgumentError("recall_page works with the paged strategy only")
        answer = self._paged.recall(page)
        self._save_changes()
        return answer

    def _tool_tokens(self, specs: Sequence[ToolSpec]) -> int:
        key = tuple(s.name for s in specs)
        if key not in self._tool_token_cache:
            text = json.dumps([s.to_openai() for s in specs]) if specs else ""
            self._tool_token_cache[key] = (self.tokenizer.count(text) + 4 * len(specs)
                                           if specs else 0)
        return self._tool_token_cache[key]

    # -- stats ---------------------------------------------------------------------------

    def stats(self) -> SessionStats:
        """Builds, build time, tokens saved, and archive / recall / evict counts."""
        with self._lock:
            counts = self._paged.counts if self._paged else {}
            return SessionStats(
                messages=self._last_seq, pages=self._log.pages, builds=self._builds,
                mean_build_ms=self._build_ms / self._builds if self._builds else 0.0,
                tokens_saved=self._saved, archived=counts.get("archive", 0),
                recalled=counts.get("recall", 0), evicted=counts.get("evict", 0),
                **self._job_counts(),
            )

    def _job_counts(self) -> dict[str, Any]:
        """Background jobs of this session: pending, failing, given up, the newest error.

        Read from the store whether or not this engine runs a model (``memci stats`` and
        ``memci inspect`` open it without one).
        """
        counts = job_counts(self.engine.store, key_prefix=f"session:{self._record.id}:")
        return {"jobs_pending": counts.pending, "jobs_failed": counts.failed,
                "jobs_gave_up": counts.gave_up, "jobs_last_error": counts.last_error}

    def page_of(self, seq: int) -> int:
        """The number of the page holding message ``seq`` (0 for a system message)."""
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise ConfigError(f"seq must be an int, not {type(seq).__name__}")
        with self._lock:
            self._sync()
            return self._log.page_of_seq(seq)

    def place_of_page(self, page: int) -> str:
        """Where a page is now: window, contents or evicted (paged strategy)."""
        if self._paged is None:
            raise ConfigError("pages have places with the paged strategy only")
        with self._lock:
            return self._paged.place_of(page)

    # -- store I/O -----------------------------------------------------------------------

    def _sync(self) -> None:
        """Catch up with the store (other processes may have appended)."""
        store = self.engine.store
        if store.last_seq(self._record) <= self._last_seq:
            return
        rows = store.token_index(self._record, after=self._last_seq)
        systems = [seq for seq, role, _, _ in rows if role == "system"]
        if systems:
            self._system = self._load_seqs(systems[-1], systems[-1])[0]
        unseen = [seq for seq, role, _, view in rows if role == "tool" and view is None]
        made: dict[int, int] = {}
        if unseen:
            shown = self._views.views_of(self._load_seqs(unseen[0], unseen[-1]))
            made = {m.seq or 0: m.tokens or 0 for m in shown if m.role == "tool"}
        for seq, role, tokens, view in rows:
            if role == "system":
                continue
            self._raw_total += tokens
            self._has_tool_results |= role == "tool"
            self._log.append(seq, role, view if view is not None else made.get(seq, tokens))
        self._last_seq = rows[-1][0]
        self._follow_branch(store.branch_links(self._record, after=rows[0][0] - 1))

    def _index(self, stored: list[Message], linked: list[tuple[Message, Artifact]]) -> None:
        """Index messages this session just stored (``linked``: their tool results' artifacts)."""
        for message in stored:
            for call in message.tool_calls:
                self._calls[call.id] = call
        made = {m.seq: (m, a) for m, a in linked}
        for message in stored:
            if message.role == "system":
                self._system = message
                continue
            tokens = message.tokens or 0
            self._raw_total += tokens
            self._has_tool_results |= message.role == "tool"
            if message.seq in made:
                view = self._views.view(*made[message.seq])
                tokens = view.tokens or 0
            self._log.append(message.seq or 0, message.role, tokens)
        self._last_seq = stored[-1].seq or self._last_seq
        self._follow_branch({m.seq: after for m in stored
                             if m.seq is not None and (after := link_of(m.metadata)) is not None})

    def _note_hidden(self, seqs: Sequence[int]) -> bool:
        """One short notebook line per tool result that left the window (seed 004, phase 1).

        Steps of a tool loop leave the window in batches; the notebook keeps a sourced line
        with the pointer for each, so the notebook changes only when the window does.
        """
        results = [m for m in self._load_seqs(seqs[0], seqs[-1])
                   if m.role == "tool" and m.seq in set(seqs)] if seqs else []
        if not results:
            return False
        state = self.work_state().with_actor("memci")
        for message in results:
            result = message.tool_result
            assert result is not None
            artifact = self._views.artifact_of(message)
            what = artifact.tool_name or "tool"
            line = artifact.summary[0] if artifact.summary else f"{artifact.lines} lines"
            state.notebook_add(f"{what}: {line}"[:300], source=f"tool:{result.call_id}",
                               artifact_ref=artifact.pointer)
        return True

    def _load_seqs(self, first: int, last: int) -> list[Message]:
        # A large tool output comes with the head its row holds: contexts show its view.
        return self.engine.store.messages(self._record, after=first - 1, upto=last,
                                          whole=False)

    def _load_views(self, first: int, last: int) -> list[Message]:
        """Messages as a context shows them: tool results as their artifacts' views."""
        return self._views.views_of(self._load_branch(first, last))

    def _load_page_state(self) -> tuple[list[PageRow], dict[str, int]]:
        with self.engine.store.read() as db:
            rows = db.execute(
                "SELECT page, first_seq, last_seq, state, archived_round, recall_count,"
                " last_recall_round, lines FROM pages WHERE session_id = ? ORDER BY page",
                (self._record.id,),
            ).fetchall()
            counts = dict(db.execute(
                "SELECT kind, COUNT(*) FROM context_events WHERE session_id = ? GROUP BY kind",
                (self._record.id,),
            ).fetchall())
        out = []
        for r in rows:
            saved = json.loads(r[7])
            out.append(PageRow(int(r[0]), int(r[1]), int(r[2]), str(r[3]), int(r[4]),
                               int(r[5]), None if r[6] is None else int(r[6]),
                               tuple(saved["lines"]), str(saved["source"])))
        return out, {str(k): int(v) for k, v in counts.items()}

    def _save_changes(self) -> tuple[str, ...]:
        """Save what the strategy changed (one transaction); return the events as text."""
        if self._paged is not None:
            noted = self._note_hidden(self._paged.take_hidden())
            if self._paged.cut != self._saved_cut:
                self._saved_cut = self._paged.cut
                page, hidden = self._saved_cut
                start = self._log.page_span(page)[0] if 0 < page <= self._log.pages else 0
                self._state_set("paged.cut", {"page": page, "hidden": hidden,
                                              "through": seq_at(self._log, start + hidden)})
            rows, events = self._paged.take_changes()
            if not rows and not events:
                return ("steps hidden",) if noted else ()
            self._pool_evicted([e.page for e in events if e.kind == "evict"])
            self._remember_archived([e.page for e in events if e.kind == "archive"])
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            with self.engine.store.write() as db:
                db.executemany(
                    "INSERT OR REPLACE INTO pages (session_id, page, first_seq, last_seq, state,"
                    " archived_round, recall_count, last_recall_round, lines)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(self._record.id, r.page, r.first_seq, r.last_seq, r.state,
                      r.archived_round, r.recall_count, r.last_recall_round,
                      json.dumps({"lines": r.lines, "source": r.source}, ensure_ascii=False))
                     for r in rows])
                db.executemany(
                    "INSERT INTO context_events (session_id, round, kind, page, reason,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                    [(self._record.id, e.round, e.kind, e.page, e.reason, now)
                     for e in events])
            return tuple(f"{e.kind} page {e.page}" for e in events) + (
                ("steps hidden",) if noted else ())
        if isinstance(self._window, SummarizeWindow) and self._window.changed:
            self._window.changed = False
            summary = self._window.summary
            text = summary.content.split("\n", 1)[1] if summary else ""
            self._state_set("summarize", {"cut": self._window.cut, "text": text,
                                          "through": seq_at(self._log, self._window.cut - 1)})
            return ("summarize",)
        return ()

    def _remember_archived(self, pages: Sequence[int]) -> None:
        """Keep archived pages as episodic memory, and the user's facts at user scope.

        What the user states about themselves, their preferences, decisions, constraints
        and corrections passes the eligibility judge (seed 003) into long-term memory,
        with the judge's reason in its source. The judge here is the rule-based one:
        a build never waits on a model.
        """
        assert self._paged is not None
        archive = self._paged.archive
        # At most the newest 100 a build: a long unbuilt backlog stays findable as
        # messages without being judged page by page.
        listed = [archive.contents.get(p) or archive.evicted[p] for p in pages[-100:]
                  if p in archive.contents or p in archive.evicted]
        if not listed:
            return
        memory = self.engine.memory
        scope = Scope.of(self._record, "user")
        for entry in listed:
            messages = self._load_branch(entry.first_seq, entry.last_seq)
            said = "\n".join(m.content for m in messages if m.role in ("user", "assistant"))
            if not said.strip():
                continue
            memory.remember_page(self._record, entry.page, said, "\n".join(entry.lines))
            users = "\n".join(m.content for m in messages if m.role == "user")
            verdict = judge(users)
            if not verdict.eligible:
                continue
            source = f"{self.name}#p{entry.page} · {verdict.source}: {verdict.reason}"
            for fact in verdict.facts[:5]:
                memory.remember(scope, fact, verdict.kind, source=source[:300])

    def _pool_evicted(self, pages: Sequence[int]) -> None:
        """Fold evicted pages into the context pool (seed 004's compressed chat history)."""
        assert self._paged is not None
        listed = [(p, self._paged.archive.evicted[p].lines) for p in pages
                  if p in self._paged.archive.evicted and self._paged.archive.evicted[p].lines]
        if not listed:
            return
        state = self.work_state().with_actor("memci")
        for page, lines in listed:
            text = f"Page {page}: " + " / ".join(line for line in lines[:3])
            state.pool_add(text[:380], source=f"chat:page-{page}")

    def _state_get(self, key: str) -> dict[str, Any] | None:
        with self.engine.store.read() as db:
            row = db.execute("SELECT value FROM session_state WHERE session_id = ? AND key = ?",
                             (self._record.id, key)).fetchone()
        return json.loads(row[0]) if row else None

    def _state_set(self, key: str, value: Mapping[str, Any]) -> None:
        with self.engine.store.write() as db:
            db.execute("INSERT OR REPLACE INTO session_state (session_id, key, value)"
                       " VALUES (?, ?, ?)",
                       (self._record.id, key, json.dumps(dict(value), ensure_ascii=False)))

    def events(self, *, limit: int = 1000) -> list[dict[str, Any]]:
        """The newest archive, recall and eviction events (page, round, reason), oldest first."""
        with self.engine.store.read() as db:
            rows = db.execute(
                "SELECT round, kind, page, reason, created_at FROM context_events"
                " WHERE session_id = ? ORDER BY id DESC LIMIT ?", (self._record.id, limit),
            ).fetchall()
        return [{"round": r[0], "kind": r[1], "page": r[2], "reason": r[3], "at": r[4]}
                for r in reversed(rows)]


class _JobSummaries:
    """Page summaries by the model through the durable job queue (never waited on)."""

    def __init__(self, queue: JobQueue, record: SessionRecord, log: LogIndex) -> None:
        self.queue = queue
        self.record = record
        self.log = log

    def _key(self, page: int) -> str:
        first, last = self.log.page_seqs(page)
        return f"session:{self.record.id}:page:{page}:{first}-{last}"

    def submit(self, pages: Sequence[tuple[int, list[Message]]]) -> None:
        self.queue.submit_many([
            (SUMMARIZE_PAGE, self._key(page), {"messages": [to_wire(m) for m in messages]})
            for page, messages in pages])

    def ready(self, pages: Sequence[int]) -> dict[int, tuple[str, ...]]:
        keys = {self._key(p): p for p in pages}
        out: dict[int, tuple[str, ...]] = {}
        for key, result in self.queue.results(keys).items():
            page = keys[key]
            start, end = self.log.page_span(page)
            summary = PageSummary.from_json(result, end - start)
            if summary is not None:
                out[page] = summary.lines
        return out
