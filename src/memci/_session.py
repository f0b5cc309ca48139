"""Session: the public face of one conversation.

A session takes messages in (``add``, ``add_many``: each is stored before it returns),
answers "what do I send now?" with ``build()``, searches its memory and runs memci's own
tools. It wires the parts that do the work: the store (the write-back log), a
:class:`~memci.context._session_log.SessionLog` (the followed branch of the log, kept in step with
the store), a :class:`~memci.context._builder.ContextBuilder` (load, plan, commit) and the tools,
which reach the session only through :class:`~memci.tools._host.ToolHost`.

A session object is shared by threads (one lock); several processes or engines may hold
the same session at once: builds commit through the store's compare-and-swap.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from memci import _trace
from memci._dataclasses import dataclass, replace
from memci._lazy import pathlib
from memci.context import Context, PageInfo, ToolSpec
from memci.context._builder import ContextBuilder
from memci.context._services import SessionServices
from memci.context._session_log import SessionLog
from memci.context._settings import SessionSettings, resolve_settings
from memci.context._tool_views import SessionArtifacts, ToolViews, count_tool_result
from memci.errors import ConfigError, InvalidInputError, InvalidMessageError, UnknownMessageError
from memci.memory import Hit
from memci.messages import Message, coerce_many, to_wire
from memci.store import SessionRecord
from memci.tokens import Tokenizer, get_tokenizer
from memci.tools._agent import check_no_clash, read_agent_tools, tool_call_name
from memci.tools._builtin import (
    FILE_TOOLS,
    RECALL_PAGE,
    SEARCH_MEMORY,
    WORKING_STATE,
    WORKSPACE_TOOLS,
)
from memci.tools._host import ToolHost
from memci.tools._registry import Tool, run_tool
from memci.workspace import InvalidStateFileError, WorkState

if TYPE_CHECKING:
    from memci.memory import IndexReport

__all__ = ["EXPORT_FORMAT", "Session", "SessionStats", "every_tool"]

EXPORT_FORMAT = "memci.session.v1"


@dataclass(frozen=True, slots=True)
class SessionStats:
    """What a session has done (seed 002 GetStats).

    ``builds``, ``mean_build_ms`` and ``tokens_saved`` count builds in this process;
    archive, recall and evict counts are the session's whole history, in pages.
    Background jobs of the session (page summaries by a model): ``jobs_pending`` wait or
    run; ``jobs_failed`` are not done and their latest attempt failed (waiting for a
    retry, or ``jobs_gave_up``: failed for good); ``jobs_last_error`` is the newest
    failure's text.
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


class Session:
    """One conversation: its stored log, its settings, and how its context is built."""

    def __init__(
        self, engine: SessionServices, record: SessionRecord, settings: SessionSettings
    ) -> None:
        self.engine = engine
        self._lock = threading.RLock()
        self._record = record
        self.settings = settings
        self.tokenizer: Tokenizer = get_tokenizer(settings.tokenizer, provider=settings.provider)
        self.artifacts = SessionArtifacts(engine.workspace.artifacts, record)
        self._views = ToolViews(engine.store, record, engine.workspace.artifacts,
                                self.tokenizer)
        self._log = SessionLog(engine.store, record, self._views)
        self._host = _Host(self)
        self._agent_tools: tuple[ToolSpec, ...] = ()
        self._builder = self._make_builder()

    def _make_builder(self) -> ContextBuilder:
        own = tuple(t.spec for t in every_tool(self.settings).values())
        return ContextBuilder(self.engine, self._record, self.settings, self.tokenizer,
                              self._log, self._views, own)

    def _reconfigure(self, record: SessionRecord, settings: SessionSettings) -> None:
        with self._lock:
            changed = settings != self.settings
            self._record = record
            if changed:
                self.settings = settings
                self.tokenizer = get_tokenizer(settings.tokenizer, provider=settings.provider)
                self._views.tokenizer = self.tokenizer
                self._builder = self._make_builder()

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
            self._log.sync()
            return self._log.system.content if self._log.system is not None else None

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
        """Store messages in one transaction: all of them, or none (then it raises).

        A batch of several pages (an import) is then paged, as the next build would page
        it, so that build has nothing to catch up on (see ``docs/context.md``).
        """
        with _trace.span("memci.add") as traced:
            stored = self._add_many(messages)
            if traced is not None:
                _trace.describe_add(traced, self, stored)
        if _opens_pages(stored) > 1:
            # A bulk write (an import, a history synced at once): it is paged now, so
            # the first build after it (in any process) plans only its newest pages.
            with self._lock:
                self._builder.settle(self._agent_tools)
        return stored

    def _add_many(self, messages: Iterable[object]) -> list[Message]:
        if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
            raise InvalidMessageError(
                f"add_many takes a list of messages, not {type(messages).__name__}")
        limit = self.settings.max_message_bytes
        ready: list[Message] = []
        for message in coerce_many(messages, max_bytes=limit):
            # Counted here, whatever count came with it (a memci.Message, an import file):
            # builds are sized by it.
            tokens = count_tool_result(self.tokenizer, message)
            ready.append(replace(message, tokens=tokens, seq=None, session=None))
        if not ready:
            return []
        artifacts = self.engine.workspace.artifacts
        # The files written for this batch are held until its transaction ended, and go
        # with it when it fails: no file outlives a refused batch.
        with self._lock, artifacts.writing():
            ready = self._log.linked(ready)
            # Tool outputs are hashed, summarized and (large ones) written to their files
            # first; their rows, the messages and the search index then commit together.
            pending = self._views.prepare(ready, self._log.calls)
            store, memory = self.engine.store, self.engine.memory
            # One transaction: the messages, their search entries, artifacts and views.
            with store.atomic():
                stored = store.append(
                    self._record, ready,
                    external={p.position: p.prepared.sha256 for p in pending if p.external})
                rows = ToolViews.as_stored(stored, pending)
                memory.index(self._record, rows)
                linked = self._views.link(pending, stored)
            self._log.stored(stored, linked, rows)
        return stored

    # -- reading -------------------------------------------------------------------------

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
        with _trace.span("memci.search") as traced:
            hits = self.engine.memory.search(query, session=self._record, k=k,
                                             scope=scope, now=now)  # type: ignore[arg-type]
            if traced is not None:
                _trace.describe_search(traced, self, scope, k, hits)
            return hits

    def messages(self) -> list[Message]:
        """The whole stored log, in order."""
        return self.engine.store.messages(self._record)

    def count(self) -> int:
        """How many messages the session holds."""
        with self._lock:
            self._log.sync()
            return self._log.held

    # -- deleting (memci.context._deleting) ------------------------------------------------------

    def retract(self, seq: int, *, actor: str = "local") -> list[Message]:
        """Delete the message ``seq`` and everything derived from it; return what went.

        An assistant message goes with the tool results that answer its calls; a tool
        result that goes leaves its call unanswered. The saved state of the message's page
        and of later pages is dropped and made again by the next build; the seq is never
        given again. Raises UnknownMessageError (nothing deleted) when the session holds
        no message ``seq``. The audit log records it (``actor``, ids, counts).
        """
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
            raise UnknownMessageError(f"seq must be a positive int (a message's .seq), "
                                      f"not {seq!r}")
        with self._lock:
            removed, _ = self.engine.deleter.retract(self._record, self._log, [seq],
                                                     actor=_actor(actor))
            return removed

    def pop(self, *, actor: str = "local") -> Message:
        """Delete the newest message (e.g. a cancelled turn) and return it.

        Raises UnknownMessageError when the session holds no message.
        """
        actor = _actor(actor)
        with self._lock:
            self._log.sync()
            if not self._log.held:
                raise UnknownMessageError(f"session {self.name!r} holds no message to pop")
            removed, _ = self.engine.deleter.retract(
                self._record, self._log, [self._log.last_seq], actor=actor)
            return removed[-1]

    def clear(self, *, actor: str = "local") -> int:
        """Delete every message of the session and everything derived; return how many went.

        The session stays, with its name, user and settings: its pages, contents page,
        working state, artifacts, memory items and summary jobs go. Seqs continue after
        the highest the session ever had.
        """
        actor = _actor(actor)
        with self._lock:
            erasure = self.engine.deleter.clear(self._record, self._log, actor=actor)
            return int(erasure.counts.get("messages", 0))

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
            self._log.sync()
            self._log.fork(after)

    def branch_seqs(self) -> list[int]:
        """The seqs of the branch the context follows (system messages aside), in order."""
        with self._lock:
            self._log.sync()
            return list(self._log.index.seqs)

    def branch(self) -> list[Message]:
        """The messages of the branch the context follows, with the system messages."""
        with self._lock:
            self._log.sync()
            keep = set(self._log.index.seqs)
        return [m for m in self.messages() if m.role == "system" or m.seq in keep]

    # -- building ------------------------------------------------------------------------

    def build(
        self, *, budget: int | None = None, recipe: str = "auto", tools: object = None
    ) -> Context:
        """The context to send now, within ``budget`` tokens (default: the session's).

        ``recipe`` is ``chat``, ``tool_loop`` or ``auto`` (the tool loop when the newest
        message is a tool result or a tool call is unanswered). ``tools`` are the agent's
        own tool definitions (OpenAI, Anthropic or Responses form; default: the ones given
        to ``engine.session(..., tools=[...])``): their schemas are counted in the budget
        and the context's payloads carry them before memci's own. A definition memci
        cannot send raises :class:`~memci.InvalidToolError`, one named like a memci tool
        :class:`~memci.ToolNameClashError`, and tools that leave no room for the
        conversation :class:`~memci.ConfigError`.
        """
        return self._context(budget, recipe, tools, peek=False)

    def peek(
        self, *, budget: int | None = None, recipe: str = "auto", tools: object = None
    ) -> Context:
        """The context :meth:`build` would return now, committing nothing.

        Nothing of the session changes: no page is archived or evicted, no notebook line,
        no memory saved; the next build is as it would have been. Its
        ``stats.prefix_tokens`` says how much of it repeats the last request built (what a
        provider's prompt cache would reuse), and ``ctx.memory`` what the retrieval segment
        shows and where each line came from. For looking (``memci ui``, ``memci inspect``).
        """
        return self._context(budget, recipe, tools, peek=True)

    def _context(self, budget: int | None, recipe: str, tools: object, *,
                 peek: bool) -> Context:
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0
        ):
            raise ConfigError(f"budget must be a positive int, not {budget!r}")
        agent = self._agent_tools if tools is None else self._read_tools(tools)
        if peek:
            with self._lock:
                check_no_clash(agent, every_tool(self.settings))
                return self._builder.peek(budget, recipe, agent)
        with self._lock, _trace.span("memci.build") as traced:
            # The settings may have changed since the default tools were checked.
            check_no_clash(agent, every_tool(self.settings))
            context = self._builder.build(budget, recipe, agent)
            if traced is not None:
                builder = self._builder
                counts = builder.paged.counts if builder.paged is not None else builder.counts
                _trace.describe_build(traced, self, context, self.settings.model, counts)
            return context

    @property
    def agent_tools(self) -> tuple[ToolSpec, ...]:
        """The agent's tools every build carries unless given others (``engine.session``)."""
        return self._agent_tools

    def _read_tools(self, tools: object) -> tuple[ToolSpec, ...]:
        return read_agent_tools(tools, max_bytes=self.settings.max_message_bytes)

    def _use_agent_tools(self, specs: tuple[ToolSpec, ...]) -> None:
        """Make ``specs`` (read and checked) the agent's tools of every build from now on."""
        with self._lock:
            check_no_clash(specs, every_tool(self.settings))
            self._agent_tools = specs

    # -- tools ---------------------------------------------------------------------------

    def _tools(self) -> dict[str, Tool[ToolHost]]:
        """memci's tools this session has: the ``tools`` setting, or all that apply.

        Any of them can be called (a model may call one it saw in an earlier request); the
        ones offered to the model now are :meth:`_offered`.
        """
        return every_tool(self.settings)

    def _offered(self, left: bool | None = None) -> dict[str, Tool[ToolHost]]:
        """The tools offered to the model now: those that can act (``tools="auto"``).

        None but the file tools while the last build sent the history as stored; then
        recall_page and search_memory once pages have left the window (before that,
        everything is in it); file_snippet and grep when file_roots are set; artifact_get
        and grep once a tool result's view leaves part of its output out; working_state
        (pins, plan and notebook as one schema) once the session has tool results. With an
        explicit ``tools`` setting, exactly those.
        """
        every = self._tools()
        return {s.name: every[s.name] for s in self._builder.offered(left)}

    def tool_specs(self, every: bool = False) -> tuple[ToolSpec, ...]:
        """memci's own tools offered to the model now (see :meth:`_offered`).

        ``every``: all the tools this session can run, offered now or not.
        """
        return tuple(t.spec for t in (self._tools() if every else self._offered()).values())

    def tools(self, format: str = "openai", *, every: bool = False) -> list[dict[str, Any]]:
        """memci's own tool schemas, in OpenAI, Anthropic or Responses form.

        The tools offered to the model now (those that can act: recall_page once some of
        the conversation has left the window, …); ``every=True`` lists all the session can
        run — :meth:`call_tool` accepts any of them, since a model may call a tool it saw in
        an earlier request.
        """
        if format not in ("openai", "anthropic", "responses"):
            raise ConfigError(
                f"format must be 'openai', 'anthropic' or 'responses', not {format!r}")
        with self._lock:
            self._log.sync()
            if not every:
                self._builder.current()
            specs = self.tool_specs(every)
        if format == "anthropic":
            return [s.to_anthropic() for s in specs]
        if format == "responses":
            return [s.to_responses() for s in specs]
        return [s.to_openai() for s in specs]

    def handles(self, call: object) -> bool:
        """Whether a model's tool call is for memci: run it with :meth:`call_tool`.

        ``call`` is a tool call as the model gave it (an OpenAI tool call, an Anthropic
        ``tool_use`` block, a Responses ``function_call`` item, their SDK objects, a
        :class:`~memci.ToolCallPart`) or a tool name. False means the call is the agent's
        own: memci's tools never share a name with the agent's (that is refused).
        """
        # Every tool the session can run, offered now or not (a model may call one it
        # saw in an earlier request): that depends on the settings only, so no I/O.
        return tool_call_name(call) in self._tools()

    def call_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run one of memci's own tools; refusals and bad arguments answer ``error: …``."""
        with self._lock, _trace.span("execute_tool", name) as traced:
            self._log.sync()
            result = run_tool(self._tools(), self._host, name, arguments)
            if traced is not None:
                _trace.describe_tool(traced, self, name, result)
            return result

    def record_round(self) -> None:
        """Record the current round in the working state (TTLs in rounds count from it)."""
        self.work_state().expire(round=self._log.index.pages)

    # -- working state -------------------------------------------------------------------

    def _work_state(self) -> WorkState:
        return self._builder.working.work

    def work_state(self) -> WorkState:
        """The session's pins, plan, notebook and fastmemo (seed 004)."""
        with self._lock:
            return self._builder.work_state()

    def export_state(self) -> dict[str, Any]:
        """The session's ``context_state.json`` (pins, plan, notebook, fastmemo, limits).

        ``recent_window_policy`` holds the session's ``keep_rounds`` and
        ``tool_loop_tokens`` (seed 004's dial for the tool loop).
        """
        data = self.work_state().export_state()
        policy = dict(data.get("recent_window_policy") or {})
        policy.update(keep_rounds=self.settings.keep_rounds,
                      tool_loop_tokens=self.settings.tool_loop_tokens)
        data["recent_window_policy"] = policy
        return data

    def import_state(self, data: Any) -> None:
        """Replace the working state with a ``context_state.json`` object (all or nothing).

        An unknown version or a malformed object raises ``InvalidStateFileError`` and
        changes nothing. ``keep_rounds`` and ``tool_loop_tokens`` of its
        ``recent_window_policy`` become the session's settings.
        """
        dial = _window_policy(data)
        if dial:  # checked against the host's limits before anything is stored
            host = self.engine.host_limits
            resolved, chosen = resolve_settings(
                dial, self._record.settings,
                limits=host(self.tenant) if host is not None else None)
        self.work_state().import_state(data)
        if dial:
            record = self.engine.store.ensure_session(self.tenant, self.name, self.user, chosen)
            self._reconfigure(record, resolved)

    def index_path(
        self, path: str | pathlib.Path, *, progress: Callable[[int, int, str], None] | None = None
    ) -> IndexReport:
        """Index text, Markdown and code files under ``path`` for search (incremental)."""
        from memci.memory import DocIndex  # with the chunkers: only a session that indexes

        return DocIndex(self.engine.store).index_path(path, progress=progress)

    # -- stats and pages -----------------------------------------------------------------

    def stats(self) -> SessionStats:
        """Builds, build time, tokens saved, and archive / recall / evict counts."""
        from memci.summarize import job_counts  # the job queue's reader: for stats only

        with self._lock:
            builder = self._builder
            builder.current()
            counts = builder.paged.counts if builder.paged is not None else builder.counts
            jobs = job_counts(self.engine.store, key_prefix=f"session:{self._record.id}:")
            return SessionStats(
                messages=self._log.held, pages=self._log.index.pages,
                builds=builder.builds,
                mean_build_ms=builder.build_ms / builder.builds if builder.builds else 0.0,
                tokens_saved=builder.saved, archived=counts.get("archive", 0),
                recalled=counts.get("recall", 0), evicted=counts.get("evict", 0),
                jobs_pending=jobs.pending, jobs_failed=jobs.failed,
                jobs_gave_up=jobs.gave_up, jobs_last_error=jobs.last_error,
            )

    def page_of(self, seq: int) -> int:
        """The number of the page holding message ``seq`` (0 for a system message)."""
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise ConfigError(f"seq must be an int, not {type(seq).__name__}")
        with self._lock:
            self._log.sync()
            return self._log.index.page_of_seq(seq)

    def place_of_page(self, page: int) -> str:
        """Where a page is now: window, contents or evicted (paged strategy)."""
        if self.settings.strategy != "paged":
            raise ConfigError("pages have places with the paged strategy only")
        with self._lock:
            return self._builder.place_of(page)

    def pages(self) -> list[PageInfo]:
        """Every page of the branch the context follows: its seqs, tokens and place."""
        with self._lock:
            return self._builder.pages()

    def events(self, *, limit: int = 1000) -> list[dict[str, Any]]:
        """The newest archive, recall and eviction events (page, round, reason), oldest first.

        A backlog archived at once is stored as one event over a range of pages; it is
        listed here page by page, like any other.
        """
        out: list[dict[str, Any]] = []
        for e in self.engine.store.context.events(self._record, limit=limit):
            out += [{"round": e.round, "kind": e.kind, "page": page, "reason": e.reason,
                     "at": e.at} for page in range(e.page, max(e.last_page, e.page) + 1)]
        return out[-limit:]


def _opens_pages(messages: Sequence[Message]) -> int:
    """How many pages ``messages`` open (a page opens with a user message)."""
    return sum(1 for m in messages if m.role == "user")


def _actor(actor: object) -> str:
    """Who asked for a deletion, as the audit log records it."""
    if not isinstance(actor, str) or not actor.strip() or len(actor) > 200:
        raise InvalidInputError(f"actor must be a non-empty string (≤ 200 chars), not {actor!r}")
    return actor


def every_tool(settings: SessionSettings) -> dict[str, Tool[ToolHost]]:
    """Every tool memci can run in a session with ``settings``, offered now or not.

    The ``tools`` setting, or with ``auto`` all that apply: recall_page with the paged
    strategy, file_snippet with file_roots. The agent's tools may take none of these
    names, so a tool call is never ambiguous and a clash shows on the first build, not
    once memci starts offering the tool.
    """
    every: dict[str, Tool[ToolHost]] = {}
    if settings.strategy == "paged":
        every[RECALL_PAGE.spec.name] = RECALL_PAGE
    every[SEARCH_MEMORY.spec.name] = SEARCH_MEMORY
    every.update(FILE_TOOLS)
    every[WORKING_STATE.spec.name] = WORKING_STATE
    every.update(WORKSPACE_TOOLS)
    if settings.tools != "auto":
        return {name: every[name] for name in settings.tools if name in every}
    if not settings.file_roots:
        every.pop("file_snippet")
    return every


class _Host:
    """The session as its tools see it (:class:`~memci.tools._host.ToolHost`)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    @property
    def file_roots(self) -> tuple[str, ...]:
        return self._session.settings.file_roots

    @property
    def artifacts(self) -> SessionArtifacts:
        return self._session.artifacts

    def recall_page(self, page: int) -> str:
        return self._session._builder.recall(page)

    def search(self, query: str, k: int, scope: str, *, now: datetime | None = None) -> list[Hit]:
        return self._session.search(query, k, scope, now=now)

    def work_state(self) -> WorkState:
        return self._session.work_state()

    def record_round(self) -> None:
        self._session.record_round()


def _window_policy(data: Any) -> dict[str, int]:
    """The settings a ``context_state.json``'s ``recent_window_policy`` sets, checked."""
    policy = data.get("recent_window_policy") if isinstance(data, Mapping) else None
    if policy is None:
        return {}
    if not isinstance(policy, Mapping):
        raise InvalidStateFileError("recent_window_policy: must be an object")
    dial: dict[str, int] = {}
    for key, low in (("keep_rounds", 1), ("tool_loop_tokens", 0)):
        if key not in policy:
            continue
        value = policy[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InvalidStateFileError(
                f"recent_window_policy.{key}: must be an integer ≥ {low}, not {value!r}")
        dial[key] = value
    return dial
