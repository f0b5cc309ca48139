"""The session objects a process hands out: one per session while in use, few kept idle.

:meth:`Engine.session` (and :meth:`AsyncEngine.session`) return the same object for a
session for as long as anyone holds it, so the threads of one process share its lock and
its copy of the log. An object nobody holds any more is kept only while it is among the
``keep`` most recently used; older ones are freed (the next call makes a new object, which
reads what it needs from the store again). So a process that touches many sessions — a
server over thousands of tenants' sessions — holds memory for the sessions in use and at
most ``keep`` idle ones, never for every session it ever opened.

Invariants: an object held anywhere is the one :meth:`SessionCache.get` returns for its
key; at most ``keep`` objects are held by the cache itself. Not thread-safe: the engine
calls it under its own lock.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Generic, TypeVar

__all__ = ["WARM_SESSIONS", "SessionCache"]

WARM_SESSIONS = 256
"""Idle session objects an engine keeps (the most recently used), beyond those in use."""

K = TypeVar("K")
V = TypeVar("V")


class SessionCache(Generic[K, V]):
    """Live objects by key (weakly), and the ``keep`` most recently used (strongly)."""

    def __init__(self, keep: int = WARM_SESSIONS) -> None:
        self.keep = keep
        self._live: weakref.WeakValueDictionary[K, V] = weakref.WeakValueDictionary()
        self._warm: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        """The object for ``key`` while one is alive (it becomes the most recent)."""
        value = self._live.get(key)
        if value is not None:
            self._touch(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        """Make ``value`` the object for ``key``."""
        self._live[key] = value
        self._touch(key, value)

    def pop(self, key: K) -> None:
        """Forget the object for ``key`` (a deleted session)."""
        self._live.pop(key, None)
        self._warm.pop(key, None)

    def items(self) -> list[tuple[K, V]]:
        """Every live object with its key."""
        return list(self._live.items())

    def _touch(self, key: K, value: V) -> None:
        self._warm[key] = value
        self._warm.move_to_end(key)
        while len(self._warm) > self.keep:
            self._warm.popitem(last=False)
