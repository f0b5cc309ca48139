"""Sessions as the server sees them: keyed by (tenant, name), found or made per request.

A request's API key decides its tenant, and a session is looked up only inside that
tenant, so another tenant's session of the same name is simply not there (404). Reads
never create a session; only adding messages (REST or proxy) does. Whether a session
exists is always asked of the store (another server may have made or deleted it).

The hub keeps nothing per session that outlives its use: session objects come from the
engine (which keeps a bounded few idle ones, :mod:`memci._sessioncache`), and a turn's
lock lives as long as its session object, so a server that has opened a million sessions
holds memory for the ones in use only.

Every session is handed out through :meth:`Engine.session`, which applies the tenant's
host limits (the operator's file roots and message size, see :mod:`memci.server._policy`)
as they are now, so a policy changed while the server runs applies to open sessions too.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from typing import Any

from memci._session import Session
from memci.engine import Engine
from memci.errors import InvalidInputError, OrphanToolResultError, UnknownSessionError
from memci.messages import Message, coerce
from memci.store import Erasure

__all__ = ["SessionHub", "read_messages"]


def read_messages(items: list[Any], *, new_session: bool = False) -> list[Message]:
    """Read and check messages before anything is stored (errors name the message).

    For a session that does not exist yet, a tool result must answer a call made earlier
    in the same list, so a bad first request leaves no empty session behind either.
    """
    messages: list[Message] = []
    for number, item in enumerate(items, start=1):
        try:
            messages.extend(coerce(item))
        except InvalidInputError as exc:
            raise type(exc)(f"message {number}: {exc}") from exc
    if new_session:
        open_calls: set[str] = set()
        for message in messages:
            open_calls.update(c.id for c in message.tool_calls)
            result = message.tool_result
            if result is not None:
                if result.call_id not in open_calls:
                    raise OrphanToolResultError(
                        f"tool result for call id {result.call_id!r} answers no tool call: "
                        "add the assistant message with that tool call first")
                open_calls.discard(result.call_id)
    return messages


class SessionHub:
    """Finds and makes sessions for tenants; shared by every request thread."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._lock = threading.Lock()
        # Keyed by the session object: the engine hands every request of a session the
        # same object while one of them holds it, and the lock goes with the object.
        self._turn_locks: weakref.WeakKeyDictionary[Session, threading.Lock] = (
            weakref.WeakKeyDictionary())

    def get(self, tenant: str, name: str) -> Session:
        """The existing session ``name`` of ``tenant``; raises UnknownSessionError."""
        if not self.exists(tenant, name):
            raise UnknownSessionError(f"no session {name!r}")
        return self.engine.session(name, tenant=tenant)

    def exists(self, tenant: str, name: str) -> bool:
        """True when the session is in the store."""
        return self.engine.store.session(tenant, name) is not None

    def open(
        self, tenant: str, name: str, *, user: str | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> Session:
        """Get or create the session; ``settings`` apply (and are saved) when given."""
        return self.engine.session(name, user=user, tenant=tenant, **dict(settings or {}))

    def delete(self, tenant: str, name: str, *, actor: str) -> Erasure:
        """Delete the session (see :meth:`Engine.delete_session`)."""
        return self.engine.delete_session(name, tenant=tenant, actor=actor)

    def erase_user(self, tenant: str, user: str, *, actor: str) -> Erasure:
        """Erase the user (see :meth:`Engine.erase_user`)."""
        return self.engine.erase_user(user, tenant=tenant, actor=actor)

    def turn_lock(self, session: Session) -> threading.Lock:
        """A lock that serializes the proxy's read-compare-append of one session."""
        with self._lock:
            return self._turn_locks.setdefault(session, threading.Lock())
