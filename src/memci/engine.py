"""Engine: the store and the sessions in it; the public entry point of memci.

``Engine.open()`` opens a store; ``engine.session(name)`` gets or creates a
:class:`~memci.Session` (one object per session per engine while in use, shared by threads;
only the most recently used idle ones are kept, see :mod:`memci._sessioncache`).
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from memci._lazy import LazyLogger, pathlib
from memci._session import EXPORT_FORMAT, Session, SessionStats, every_tool
from memci._sessioncache import SessionCache
from memci.context import ToolSpec
from memci.context._deleting import Deleter
from memci.context._settings import HostLimits, resolve_settings
from memci.errors import (
    ConfigError,
    InvalidFileError,
    InvalidInputError,
    InvalidMessageError,
    StoreError,
)
from memci.llm import LLMClient, client_from_env
from memci.memory import Gatherer, Memory
from memci.messages import Message, from_wire
from memci.store import SessionRecord, Store, open_store
from memci.tokens import get_tokenizer
from memci.tools._agent import check_no_clash, read_agent_tools
from memci.workspace import Workspace, contents_for

if TYPE_CHECKING:
    from memci.store import Erasure
    from memci.summarize import JobQueue

__all__ = ["EXPORT_FORMAT", "Engine", "Session", "SessionStats"]

logger = LazyLogger("memci")



def _valid(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _agent_tools_given(settings: dict[str, Any]) -> list[Any] | None:
    """Take the agent's tool definitions out of ``settings`` (memci's tool names stay).

    ``tools=[...]`` of names (or ``"auto"``, or ``[]``) is memci's own setting; a list of
    tool definitions is the agent's tools.
    """
    given = settings.get("tools")
    if given is None or isinstance(given, str | bytes | Mapping) or not isinstance(
            given, Iterable):
        return None
    items = list(given)
    settings["tools"] = items  # an iterator is read once
    if not any(isinstance(t, Mapping | ToolSpec) or hasattr(t, "model_dump") for t in items):
        return None  # names, or nothing like a definition: the setting says what is wrong
    if any(isinstance(t, str) for t in items):
        raise ConfigError(
            "tools mixes memci tool names and tool definitions: pass memci's own tools "
            "to offer as names (tools=['recall_page', ...]) or the agent's tools as "
            "definitions (tools=[{'type': 'function', ...}]), not both in one list")
    del settings["tools"]
    return items


ENV_ARTIFACTS_DIR = "MEMCI_ARTIFACTS_DIR"


ENV_LLM_WORKERS = "MEMCI_LLM_WORKERS"
DEFAULT_LLM_WORKERS = 4


def summary_workers(environ: Mapping[str, str] | None = None) -> int:
    """How many summaries an engine asks its model for at once: ``MEMCI_LLM_WORKERS``, or 4.

    A model answers a page in seconds while a chat archives a page every turn or two: one
    at a time, the backlog grows without bound; four keep up with a 2 s model and a page
    per second.
    """
    raw = (os.environ if environ is None else environ).get(ENV_LLM_WORKERS, "").strip()
    if not raw:
        return DEFAULT_LLM_WORKERS
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if not 0 <= value <= 64:
        raise ConfigError(f"{ENV_LLM_WORKERS} must be a whole number from 0 to 64, not {raw!r}")
    return value


def _check_name(what: str, value: object) -> None:
    if not isinstance(value, str) or not value or len(value) > 200 or not _valid(value):
        raise InvalidMessageError(
            f"a {what} must be a non-empty string of valid Unicode (≤ 200 chars)")


def _actor(actor: object) -> str:
    """Who asked for a deletion, as the audit log records it."""
    if not isinstance(actor, str) or not actor.strip() or len(actor) > 200:
        raise InvalidInputError(f"actor must be a non-empty string (≤ 200 chars), not {actor!r}")
    return actor


class Engine:
    """A store and the sessions in it."""

    def __init__(
        self, store: Store, *, llm: LLMClient | None = None, workers: int | None = None,
        artifacts_dir: str | pathlib.Path | None = None,
    ) -> None:
        self.store = store
        # Large tool outputs (seed 004) live where given (a folder every server mounts),
        # else in the store's own contents (a PostgreSQL database), else as files beside
        # a SQLite database.
        folder = artifacts_dir or os.environ.get(ENV_ARTIFACTS_DIR, "").strip() or None
        self.workspace = Workspace(store, contents_for(store, folder))
        self._sweep_artifacts()
        #: Deletions (retract, clear, delete a session, erase a user) and their upkeep.
        self.deleter = Deleter(store, self.workspace.artifacts, lambda: self.memory,
                               self._forget_caches)
        # Summaries by a model are made in the background and never block a build; with
        # no model configured the extractive stand-in is all there is, and no jobs exist.
        owned = client_from_env() if llm is None else None
        self._owned_client = owned
        client = llm if llm is not None else owned
        self.jobs: JobQueue | None = None
        # Made now, so a bad MEMCI_EMBEDDER fails here and never after a message is stored.
        self._memory: Memory | None = Memory(store)
        self._gatherer: Gatherer | None = None
        if client is not None:
            # The queue and the model summarizer load only for an engine with a model.
            from memci.summarize import JobQueue, default_summarizer, register_summary_handlers

            # The page just archived is the one a request shows: its summary first.
            self.jobs = JobQueue(store, newest_first=True)
            register_summary_handlers(self.jobs, default_summarizer(client))
            count = summary_workers() if workers is None else workers
            if count:
                self.jobs.start_workers(count)
        # The same object per session while in use; a bounded few idle ones kept warm.
        self._sessions: SessionCache[tuple[str, str], Session] = SessionCache()
        self._limits: weakref.WeakKeyDictionary[Session, HostLimits | None] = (
            weakref.WeakKeyDictionary())
        self._lock = threading.Lock()
        #: The operator's limits per tenant (``memci serve`` sets them): file roots and
        #: message size of every session of a tenant are cut down to them (see
        #: :class:`~memci.context._settings.HostLimits`). None: an embedded engine, no limits.
        self.host_limits: Callable[[str], HostLimits] | None = None

    @property
    def memory(self) -> Memory:
        """Long-term memory and search over this store (made on first use)."""
        made = self._memory
        if made is not None:
            return made  # no lock once made: a session asks for it inside store writes
        with self._lock:
            if self._memory is None:
                self._memory = Memory(self.store)
            return self._memory

    @property
    def gatherer(self) -> Gatherer:
        """Seed 002's long-term extractor over :attr:`memory` (TTL cache)."""
        made = self._gatherer
        if made is not None:
            return made
        memory = self.memory
        with self._lock:
            if self._gatherer is None:
                self._gatherer = Gatherer(memory)
            return self._gatherer

    @classmethod
    def open(
        cls, path: str | pathlib.Path | None = None, *, synchronous: str = "FULL",
        llm: LLMClient | None = None, workers: int | None = None,
        artifacts_dir: str | pathlib.Path | None = None, pool_size: int | None = None,
    ) -> Engine:
        """Open the store at ``path``: a SQLite file or a ``postgresql://`` URL.

        By default ``$MEMCI_DB``, else ``$MEMCI_HOME/memci.db``, else ``./.memci/memci.db``.
        ``llm`` (default: from ``MEMCI_LLM_*``) makes page summaries in the background with
        ``workers`` threads (default ``MEMCI_LLM_WORKERS``, else 4; 0 when ``memci worker``
        runs them elsewhere).
        """
        store = open_store(path, synchronous=synchronous, pool_size=pool_size)
        try:
            return cls(store, llm=llm, workers=workers, artifacts_dir=artifacts_dir)
        except BaseException:
            store.close()
            raise

    def session(
        self, name: str, *, user: str | None = None, tenant: str = "default", **settings: Any
    ) -> Session:
        """Get or create the session ``name``; keyword settings override saved ones.

        ``tools`` is either memci's own tools to offer (the setting: ``"auto"`` or a list
        of their names) or the agent's own tool definitions (a list of dicts in OpenAI,
        Anthropic or Responses form): those become the default of every ``build()`` of
        the returned Session object (not saved; ``build(tools=...)`` overrides them).
        """
        agent = _agent_tools_given(settings)
        for what, value in (("session name", name), ("tenant", tenant), ("user", user)):
            if value is None and what == "user":
                continue
            _check_name(what, value)
        key = (tenant, name)
        limits = self.host_limits(tenant) if self.host_limits is not None else None
        # The session's own lock is taken only after the engine's is let go: a deletion
        # holds a session's lock for long, and the engine's lock serves every session.
        with self._lock:
            existing = self._sessions.get(key)
            saved = self.store.session(tenant, name)
            if existing is not None and (saved is None or saved.id != existing.record.id):
                # Deleted (by another process): this name now starts a new session.
                existing = None
                self._sessions.pop(key)
            if (existing is not None and not settings and user in (None, existing.user)
                    and self._limits.get(existing) == limits):
                session, changed = existing, None
                specs = None if agent is None else existing._read_tools(agent)
            else:
                resolved, chosen = resolve_settings(settings, saved.settings if saved else {},
                                                    limits=limits)
                # Loaded before anything is saved: an encoding missing here refuses the
                # settings and leaves the session as it was. So are the agent's tools.
                get_tokenizer(resolved.tokenizer, provider=resolved.provider)
                specs = None
                if agent is not None:
                    specs = read_agent_tools(agent, max_bytes=resolved.max_message_bytes)
                    check_no_clash(specs, every_tool(resolved))
                record = self.store.ensure_session(tenant, name, user, chosen)
                if existing is not None:
                    session, changed = existing, (record, resolved)
                else:
                    session, changed = Session(self, record, resolved), None
                    self._sessions.put(key, session)
                self._limits[session] = limits
        if changed is not None:
            session._reconfigure(*changed)
        if specs is not None:
            session._use_agent_tools(specs)
        return session

    def sessions(self, tenant: str | None = None) -> list[SessionRecord]:
        """Every session in the store (of one tenant, if given)."""
        return self.store.sessions(tenant)

    # -- deleting (memci.context._deleting) ------------------------------------------------------

    def delete_session(
        self, name: str, *, tenant: str = "default", actor: str = "local", scrub: bool = True,
    ) -> Erasure:
        """Delete the session ``name`` and everything of it; return the audit record.

        Its messages, pages, working state, artifacts (a tool output another session also
        holds is kept for it), memory items, search entries, vectors and summary jobs go;
        the name is free again (``engine.session(name)`` starts a new, empty session). A
        handle still held on the deleted session raises UnknownSessionError when used.
        ``scrub`` then leaves no byte of it in the store's files (see :meth:`scrub`);
        the returned record's ``scrubbed`` is None when that is pending. Raises
        UnknownSessionError when the tenant has no such session.
        """
        _check_name("session name", name)
        _check_name("tenant", tenant)
        actor = _actor(actor)
        with self._holding(lambda key, _: key == (tenant, name)):
            erasure = self.deleter.delete_session(tenant, name, actor=actor, scrub=scrub)
        with self._lock:
            self._forget_session((tenant, name), erasure.sessions)
        return erasure

    def erase_user(self, user: str, *, tenant: str = "default", actor: str = "local") -> Erasure:
        """Erase everything of ``user`` in ``tenant`` and leave no byte of it in the files.

        That is every session, message, artifact, memory item, vector, search entry, job
        and state row of the user. Other users' data is untouched (a tool output one of
        them also holds is kept for them). The audit log keeps who asked, when, the
        session ids and counts, and the user only as the SHA-256 of the id. A user with
        nothing stored is not an error: the erasure is recorded with zero counts, and
        nothing is scrubbed. Once the deletion committed, the store is scrubbed; the
        returned record's ``scrubbed`` is None when that could not complete (scrub
        pending: the next scrub covers it), never an error for a committed deletion.
        """
        _check_name("user", user)
        _check_name("tenant", tenant)
        actor = _actor(actor)
        ids = {s.id for s in self.deleter.store.eraser.user_sessions(tenant, user)}
        with self._holding(lambda key, session: key[0] == tenant
                           and session.record.id in ids):
            erasure = self.deleter.erase_user(tenant, user, actor=actor)
        with self._lock:
            for key in [k for k, _ in self._sessions.items()]:
                self._forget_session(key, erasure.sessions)
        return erasure

    def _forget_session(self, key: tuple[str, str], deleted: Iterable[int]) -> None:
        """Drop the open session ``key`` if it is one of the ``deleted`` (engine lock held).

        A session made again under the same name meanwhile has another id: it stays.
        """
        session = self._sessions.get(key)
        if session is not None and session.record.id in set(deleted):
            self._sessions.pop(key)

    def erasures(self, tenant: str | None = None, *, limit: int = 100) -> list[Erasure]:
        """The audit log of deletions (of one tenant, if given), oldest first."""
        if tenant is not None:
            _check_name("tenant", tenant)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100_000:
            raise ConfigError(f"limit must be an int from 1 to 100000, not {limit!r}")
        return self.store.eraser.erasures(tenant, limit=limit)

    def scrub(self, *, full: bool = False) -> bool:
        """Take deleted content out of the store's files; mark the erasures it covered.

        SQLite: every deletion already zeroed what it freed; this empties the write-ahead
        log (waiting a moment at most for readers). PostgreSQL: VACUUM of every table of
        memci's. Either way other writers are not held up long, and artifact files no row
        names go. Every erasure committed before it began is then marked scrubbed.
        Returns False when a reader (SQLite) or an older snapshot (PostgreSQL) kept some:
        call it again later. ``full=True`` rewrites the files instead (SQLite: VACUUM;
        PostgreSQL: VACUUM FULL of every table): a maintenance step that holds every
        writer up while it runs. See docs/deleting.md.
        """
        if not isinstance(full, bool):
            raise ConfigError(f"full must be True or False, not {full!r}")
        return self.deleter.scrub(full=full) is not None

    @contextmanager
    def _holding(
        self, wanted: Callable[[tuple[str, str], Session], bool]
    ) -> Iterator[None]:
        """Hold the locks of this engine's open sessions ``wanted`` picks, in id order.

        So no thread of this engine adds to or builds a session while it is deleted. The
        engine's own lock is held only to pick them: a deletion may take seconds, and
        every other session of every tenant goes on meanwhile.
        """
        with self._lock:
            chosen = sorted((s for k, s in self._sessions.items() if wanted(k, s)),
                            key=lambda s: s.record.id)
        with ExitStack() as stack:
            for session in chosen:
                stack.enter_context(session._lock)
            yield

    def _sweep_artifacts(self) -> None:
        """Remove the artifact files a process that died before its commit left.

        When the engine opens: a folder that cannot be tidied (read-only, say) is logged
        and left; every later write and read works as before.
        """
        try:
            self.workspace.artifacts.sweep()
        except StoreError as exc:
            logger.warning("cannot remove unused artifact files: %s", exc)

    def _forget_caches(self) -> None:
        """Drop what this process cached of memory (after a deletion)."""
        if self._gatherer is not None:
            self._gatherer.clear()

    def import_jsonl(
        self, lines: Iterable[str], *, name: str | None = None, tenant: str | None = None
    ) -> Session:
        """Import a session exported by :meth:`Session.export_jsonl` (into a new session)."""
        it = iter(lines)
        try:
            header = json.loads(next(it))
        except (StopIteration, ValueError) as exc:
            raise InvalidFileError("export file is empty or its first line is not JSON") from exc
        if not isinstance(header, dict) or header.get("format") != EXPORT_FORMAT:
            raise InvalidFileError(f"not a memci session export (expected {EXPORT_FORMAT})")
        messages: list[Message] = []
        for number, line in enumerate(it, start=2):
            if not line.strip():
                continue
            try:
                messages.append(from_wire(json.loads(line)))
            except (ValueError, InvalidMessageError) as exc:
                raise InvalidFileError(f"line {number} of the export: {exc}") from exc
        target, owner = name or header["session"], header.get("user")
        tenant = tenant or header.get("tenant", "default")
        if self.store.session(tenant, target) is not None:
            existing = self.session(target, tenant=tenant)
            if existing.count():
                raise InvalidFileError(
                    f"session {target!r} already exists and holds messages; import under "
                    "another name"
                )
        session = self.session(target, user=owner, tenant=tenant, **header.get("settings", {}))
        session.add_many(messages)
        return session

    def close(self) -> None:
        """Stop background workers (finishing the jobs in hand) and close the store.

        The embedder memory made from the environment is closed too (an endpoint's
        connections).
        """
        if self.jobs is not None:
            self.jobs.stop()
        if self._owned_client is not None:
            self._owned_client.close()
        if self._gatherer is not None:
            self._gatherer.close()
        closes = getattr(self._memory.embedder, "close", None) if self._memory else None
        if callable(closes):
            closes()
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
