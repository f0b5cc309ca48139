"""The one place where the adapters' async methods reach memci's (sync) session.

Every ``async`` method of an adapter calls :func:`call`: the sync call runs in a worker
thread (``asyncio.to_thread``), so a build or a write never blocks the event loop, and the
calls of one session run one at a time, in the order they were made (a per-session lock
taken in the worker thread), so a write and the build that must see it never overlap.

It is not :class:`~memci.AsyncSession`: an adapter is given a sync ``Session`` and the
frameworks call it both ways (a LangChain history's ``messages`` and ``aget_messages``);
one thread lock per session orders the sync and the async calls alike, where
``AsyncSession``'s ``asyncio.Lock`` orders awaited calls only.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from memci import Session

__all__ = ["call", "run"]

P = ParamSpec("P")
T = TypeVar("T")

_locks: weakref.WeakKeyDictionary[Session, threading.Lock] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def _lock_of(session: Session) -> threading.Lock:
    with _guard:
        lock = _locks.get(session)
        if lock is None:
            lock = _locks[session] = threading.Lock()
        return lock


def _locked(session: Session, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    with _lock_of(session):
        return fn(*args, **kwargs)


async def call(session: Session, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn(*args, **kwargs)`` (sync work on ``session``) off the event loop, serialized."""
    def work() -> T:
        return _locked(session, fn, *args, **kwargs)

    return await asyncio.to_thread(work)


def run(session: Session, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn`` now, in this thread, in turn with the session's other adapter calls."""
    return _locked(session, fn, *args, **kwargs)
