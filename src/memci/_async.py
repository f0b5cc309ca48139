"""AsyncEngine and AsyncSession: memci for asyncio, the same methods awaited.

Every line of logic is the sync classes' own: an :class:`AsyncSession` wraps a
:class:`~memci.Session` and runs each of its methods that reads or writes the store in a
worker thread of its engine's bounded pool (``threads``, default ``min(32, cores + 4)``),
so the event loop never waits on SQLite, a file or a lock. Methods that do no I/O
(``tool_specs``, ``handles`` and the properties) are the plain methods.

Invariants:

- the calls on one session run one at a time, in the order they were awaited (an
  ``asyncio.Lock`` per session, held until the worker is done), so a task never holds a
  worker thread waiting for another task's call on the same session;
- a call whose task is cancelled still finishes in its thread: an ``add`` is stored
  whole or not at all, and the next call on the session sees it (a cancelled call was
  never acknowledged, so it may or may not have been stored);
- results, errors and stored data are exactly those of the sync classes (a parity test
  runs one scenario through both).

An AsyncEngine belongs to the event loop that uses it.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

from memci._session import Session, SessionStats
from memci.context import Context, PageInfo, ToolSpec
from memci.context._settings import SessionSettings
from memci.engine import Engine
from memci.errors import ConfigError, StoreError
from memci.llm import LLMClient
from memci.memory import Hit, IndexReport
from memci.messages import Message
from memci.store import Erasure, SessionRecord
from memci.tokens import Tokenizer

__all__ = ["AsyncEngine", "AsyncSession"]

T = TypeVar("T")


def _default_threads() -> int:
    return min(32, (os.cpu_count() or 1) + 4)


class AsyncEngine:
    """A store and the sessions in it, for asyncio (see :class:`~memci.Engine`)."""

    def __init__(self, engine: Engine, *, threads: int | None = None) -> None:
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ConfigError(f"threads must be an int >= 1, not {threads!r}")
        self._engine = engine
        self._pool = ThreadPoolExecutor(max_workers=threads or _default_threads(),
                                        thread_name_prefix="memci-async")
        # Wrappers live as long as their users hold them (the engine keeps the warm ones).
        self._sessions: weakref.WeakValueDictionary[tuple[str, str], AsyncSession] = (
            weakref.WeakValueDictionary())
        self._closed = False

    @classmethod
    async def open(
        cls, path: str | Path | None = None, *, synchronous: str = "FULL",
        llm: LLMClient | None = None, workers: int | None = None,
        artifacts_dir: str | Path | None = None, pool_size: int | None = None,
        threads: int | None = None,
    ) -> AsyncEngine:
        """Open the store at ``path`` (the arguments of :meth:`Engine.open`).

        ``threads`` bounds the worker threads that run the store's I/O.
        """
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or threads < 1
        ):
            raise ConfigError(f"threads must be an int >= 1, not {threads!r}")
        loop = asyncio.get_running_loop()
        opened = partial(Engine.open, path, synchronous=synchronous, llm=llm, workers=workers,
                         artifacts_dir=artifacts_dir, pool_size=pool_size)
        engine = await loop.run_in_executor(None, opened)
        try:
            return cls(engine, threads=threads)
        except BaseException:
            await loop.run_in_executor(None, engine.close)
            raise

    @property
    def sync(self) -> Engine:
        """The :class:`~memci.Engine` underneath (its methods block: not for the loop)."""
        return self._engine

    async def _call(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise StoreError("this AsyncEngine is closed")
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)

    async def session(
        self, name: str, *, user: str | None = None, tenant: str = "default", **settings: Any
    ) -> AsyncSession:
        """Get or create the session ``name`` (the arguments of :meth:`Engine.session`)."""
        session = await self._call(partial(self._engine.session, name, user=user,
                                           tenant=tenant, **settings))
        return self._wrap(session)

    def _wrap(self, session: Session) -> AsyncSession:
        key = (session.tenant, session.name)
        wrapper = self._sessions.get(key)
        if wrapper is None or wrapper.sync is not session:
            wrapper = self._sessions[key] = AsyncSession(session, self)
        return wrapper

    async def sessions(self, tenant: str | None = None) -> list[SessionRecord]:
        """Every session in the store (of one tenant, if given)."""
        return await self._call(partial(self._engine.sessions, tenant))

    async def import_jsonl(
        self, lines: Iterable[str], *, name: str | None = None, tenant: str | None = None
    ) -> AsyncSession:
        """Import a session exported by ``export_jsonl`` (into a new session)."""
        session = await self._call(partial(self._engine.import_jsonl, lines, name=name,
                                           tenant=tenant))
        return self._wrap(session)

    async def delete_session(self, name: str, *, tenant: str = "default",
                             actor: str = "local", scrub: bool = True) -> Erasure:
        """Delete a session and everything of it (see :meth:`Engine.delete_session`)."""
        return await self._call(partial(self._engine.delete_session, name, tenant=tenant,
                                        actor=actor, scrub=scrub))

    async def erase_user(self, user: str, *, tenant: str = "default",
                         actor: str = "local") -> Erasure:
        """Erase everything of a user in a tenant (see :meth:`Engine.erase_user`)."""
        return await self._call(partial(self._engine.erase_user, user, tenant=tenant,
                                        actor=actor))

    async def erasures(self, tenant: str | None = None, *, limit: int = 100) -> list[Erasure]:
        """The audit log of deletions, newest first (no content)."""
        return await self._call(partial(self._engine.erasures, tenant, limit=limit))

    async def scrub(self, *, full: bool = False) -> bool:
        """Make deleted bytes go from the store's files (see :meth:`Engine.scrub`)."""
        return await self._call(lambda: self._engine.scrub(full=full))

    async def close(self) -> None:
        """Finish the calls under way, stop background workers and close the store."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        # The pool's shutdown waits for the calls under way; then the store closes.
        await loop.run_in_executor(None, partial(self._pool.shutdown, wait=True))
        await loop.run_in_executor(None, self._engine.close)

    async def __aenter__(self) -> AsyncEngine:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class AsyncSession:
    """One conversation, for asyncio: the methods of :class:`~memci.Session`, awaited."""

    def __init__(self, session: Session, engine: AsyncEngine) -> None:
        self._session = session
        self._engine = engine
        self._lock = asyncio.Lock()

    async def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` in a worker thread, after the calls awaited before it on this session."""
        await self._lock.acquire()
        try:
            if self._engine._closed:
                raise StoreError("this AsyncEngine is closed")
            future = asyncio.get_running_loop().run_in_executor(self._engine._pool, fn)
        except BaseException:
            self._lock.release()
            raise
        # Released when the thread is done, not when the awaiting task is: a cancelled
        # call keeps the session until its work has ended.
        future.add_done_callback(lambda _: self._lock.release())
        return await asyncio.shield(future)

    async def run(self, fn: Callable[[Session], T]) -> T:
        """Run ``fn(session)`` with the sync :class:`~memci.Session`, in turn, in a worker.

        For what has no awaited form, such as the working state:
        ``await s.run(lambda s: s.work_state().pin_add("…", source="user"))``.
        """
        return await self._call(partial(fn, self._session))

    # -- what does no I/O -----------------------------------------------------------------

    @property
    def sync(self) -> Session:
        """The :class:`~memci.Session` underneath (its methods block: not for the loop)."""
        return self._session

    @property
    def name(self) -> str:
        """The session's name."""
        return self._session.name

    @property
    def tenant(self) -> str:
        """The tenant the session belongs to."""
        return self._session.tenant

    @property
    def user(self) -> str | None:
        """The user the session belongs to."""
        return self._session.user

    @property
    def record(self) -> SessionRecord:
        """The session's row in the store."""
        return self._session.record

    @property
    def settings(self) -> SessionSettings:
        """The session's resolved settings."""
        return self._session.settings

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer the session counts with."""
        return self._session.tokenizer

    @property
    def agent_tools(self) -> tuple[ToolSpec, ...]:
        """The agent's tools every build carries unless given others."""
        return self._session.agent_tools

    def tool_specs(self, every: bool = False) -> tuple[ToolSpec, ...]:
        """memci's own tools offered to the model now (``every``: all it can run)."""
        return self._session.tool_specs(every)

    async def tools(self, format: str = "openai", *, every: bool = False) -> list[dict[str, Any]]:
        """memci's own tool schemas, in OpenAI, Anthropic or Responses form.

        Awaited: which tools are offered now follows the stored log (see
        :meth:`Session.tools`).
        """
        return await self._call(partial(self._session.tools, format, every=every))

    def handles(self, call: object) -> bool:
        """Whether a model's tool call is for memci (run it with :meth:`call_tool`)."""
        return self._session.handles(call)

    # -- writing --------------------------------------------------------------------------

    async def set_system(self, text: str) -> Message:
        """Store a system message; the newest one is the session's system prompt."""
        return await self._call(partial(self._session.set_system, text))

    async def add(self, message: object) -> Message:
        """Store one message; durable when the await returns (see :meth:`Session.add`)."""
        return await self._call(partial(self._session.add, message))

    async def add_many(self, messages: Iterable[object]) -> list[Message]:
        """Store messages in one transaction: all of them, or none (then it raises)."""
        return await self._call(partial(self._session.add_many, messages))

    async def fork(self, after: int) -> None:
        """Continue the conversation after message ``after`` (see :meth:`Session.fork`)."""
        await self._call(partial(self._session.fork, after))

    async def record_round(self) -> None:
        """Record the current round in the working state."""
        await self._call(self._session.record_round)

    # -- deleting (see docs/deleting.md) ----------------------------------------------------

    async def retract(self, seq: int, *, actor: str = "local") -> list[Message]:
        """Delete message ``seq`` and what was derived from it (see :meth:`Session.retract`)."""
        return await self._call(partial(self._session.retract, seq, actor=actor))

    async def pop(self, *, actor: str = "local") -> Message:
        """Delete the newest message (a cancelled turn); see :meth:`Session.pop`."""
        return await self._call(partial(self._session.pop, actor=actor))

    async def clear(self, *, actor: str = "local") -> int:
        """Delete every message of the session and what was derived; how many."""
        return await self._call(partial(self._session.clear, actor=actor))

    async def import_state(self, data: Any) -> None:
        """Replace the working state with a ``context_state.json`` object (all or nothing)."""
        await self._call(partial(self._session.import_state, data))

    async def index_path(
        self, path: str | Path, *, progress: Callable[[int, int, str], None] | None = None
    ) -> IndexReport:
        """Index files under ``path`` for search (``progress`` is called in a worker)."""
        return await self._call(partial(self._session.index_path, path, progress=progress))

    # -- reading --------------------------------------------------------------------------

    async def system_prompt(self) -> str | None:
        """The text of the newest system message (the sync ``system_prompt`` property)."""
        return await self._call(lambda: self._session.system_prompt)

    async def build(
        self, *, budget: int | None = None, recipe: str = "auto", tools: object = None
    ) -> Context:
        """The context to send now (see :meth:`Session.build`)."""
        return await self._call(partial(self._session.build, budget=budget, recipe=recipe,
                                        tools=tools))

    async def peek(
        self, *, budget: int | None = None, recipe: str = "auto", tools: object = None
    ) -> Context:
        """The context a build would return now, committing nothing (see :meth:`Session.peek`)."""
        return await self._call(partial(self._session.peek, budget=budget, recipe=recipe,
                                        tools=tools))

    async def search(
        self, query: str, k: int = 10, scope: str = "session", *, now: datetime | None = None
    ) -> list[Hit]:
        """Messages and memory items for ``query``, best first (see :meth:`Session.search`)."""
        return await self._call(partial(self._session.search, query, k, scope, now=now))

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | str | None = None
    ) -> str:
        """Run one of memci's own tools; refusals and bad arguments answer ``error: …``."""
        return await self._call(partial(self._session.call_tool, name, arguments))

    async def messages(self) -> list[Message]:
        """The whole stored log, in order."""
        return await self._call(self._session.messages)

    async def count(self) -> int:
        """How many messages the session holds."""
        return await self._call(self._session.count)

    async def export_jsonl(self, out: IO[str]) -> int:
        """Write the session as JSONL (written from a worker thread)."""
        return await self._call(partial(self._session.export_jsonl, out))

    async def branch_seqs(self) -> list[int]:
        """The seqs of the branch the context follows (system messages aside), in order."""
        return await self._call(self._session.branch_seqs)

    async def branch(self) -> list[Message]:
        """The messages of the branch the context follows, with the system messages."""
        return await self._call(self._session.branch)

    async def export_state(self) -> dict[str, Any]:
        """The session's ``context_state.json``."""
        return await self._call(self._session.export_state)

    async def stats(self) -> SessionStats:
        """Builds, build time, tokens saved, and archive / recall / evict counts."""
        return await self._call(self._session.stats)

    async def page_of(self, seq: int) -> int:
        """The number of the page holding message ``seq`` (0 for a system message)."""
        return await self._call(partial(self._session.page_of, seq))

    async def place_of_page(self, page: int) -> str:
        """Where a page is now: window, contents or evicted (paged strategy)."""
        return await self._call(partial(self._session.place_of_page, page))

    async def pages(self) -> list[PageInfo]:
        """Every page of the branch the context follows: its seqs, tokens and place."""
        return await self._call(self._session.pages)

    async def events(self, *, limit: int = 1000) -> list[dict[str, Any]]:
        """The newest archive, recall and eviction events, oldest first."""
        return await self._call(partial(self._session.events, limit=limit))
