"""How many MCP sessions over HTTP each API key, each tenant and the server may hold open.

An MCP session (Streamable HTTP, ``Mcp-Session-Id``) costs the server memory until the
client deletes it or it idles out, so one key could otherwise open sessions until the
server is full and every other tenant's ``initialize`` is refused. :class:`McpSessions`
keeps the count of the sessions the endpoint opened, by key, by tenant and in all, and
decides about each new one:

- under every cap: it opens;
- at a cap (the key's, else the tenant's, else the server's): the least recently used
  *idle* session within that cap — no request in flight, no open event stream — is closed
  to make room (its client gets 404 on its next request and starts a new session, as MCP
  clients do), so a key that forgets to delete its sessions only ever closes its own;
- at a cap where every session is busy: the new one is refused, 429
  ``too_many_mcp_sessions`` (the key's or the tenant's cap) or 503 (the server's).

So a key holds at most ``per_key`` sessions, a tenant ``per_tenant``, the server ``total``
(its memory is bounded by that), and a tenant can neither lock another out nor close
another's busy sessions. Sessions idle longer than ``idle_seconds`` are forgotten here as
the SDK ends them. Not thread-safe: used from the event loop only.
"""

from __future__ import annotations

import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from memci._dataclasses import dataclass, field
from memci.server._errors import ApiError

__all__ = ["McpSession", "McpSessions", "Opening"]


@dataclass(eq=False)
class McpSession:
    """One open MCP session: whose it is and whether it is in use."""

    id: str
    key: str | None  # the digest of the key that opened it (None without keys)
    tenant: str
    owner: Any  # the credential it was opened with (closing it takes the same one)
    busy: int = 0  # requests in flight, an open event stream included
    last: float = 0.0  # when its last request ended


@dataclass(eq=False)
class Opening:
    """A session being opened: it counts against the caps until it opened or failed."""

    key: str | None
    tenant: str
    closing: list[McpSession] = field(default_factory=list)  # made room for it
    refused: ApiError | None = None  # every session within a cap it met was busy


class McpSessions:
    """The open MCP sessions, by key and tenant, under the caps (see the module)."""

    def __init__(self, *, per_key: int, per_tenant: int, total: int, idle_seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_key = per_key
        self.per_tenant = per_tenant
        self.total = total
        self.idle_seconds = idle_seconds
        self.clock = clock
        self._open: OrderedDict[str, McpSession] = OrderedDict()  # least recently used first
        self._keys: Counter[str | None] = Counter()
        self._tenants: Counter[str] = Counter()
        self._openings = 0

    def reserve(self, key: str | None, tenant: str) -> Opening:
        """Room for a new session of ``key`` (unless ``Opening.refused`` says why not).

        The sessions closed to make room are in ``Opening.closing``: they are forgotten
        here, and the caller ends them, refused or not.
        """
        self._expire()
        opening = Opening(key, tenant)
        try:
            if key is not None and self._keys[key] >= self.per_key:
                self._make_room(opening, lambda s: s.key == key, "this API key",
                                self.per_key, 429)
            if self._tenants[tenant] >= self.per_tenant:
                self._make_room(opening, lambda s: s.tenant == tenant, "this tenant",
                                self.per_tenant, 429)
            if len(self._open) + self._openings >= self.total:
                self._make_room(opening, lambda _: True, "the server", self.total, 503)
        except ApiError as exc:
            opening.refused = exc
            return opening
        self._keys[key] += 1
        self._tenants[tenant] += 1
        self._openings += 1
        return opening

    def opened(self, opening: Opening, session_id: str, owner: Any) -> None:
        """The reserved session opened with id ``session_id``."""
        self._openings -= 1
        self._open[session_id] = McpSession(session_id, opening.key, opening.tenant, owner,
                                            last=self.clock())

    def failed(self, opening: Opening) -> None:
        """The reserved session did not open: its room is free again."""
        self._openings -= 1
        self._uncount(opening.key, opening.tenant)

    def enter(self, session_id: str) -> McpSession | None:
        """A request of the session starts (None: not a session this endpoint knows)."""
        session = self._open.get(session_id)
        if session is not None:
            session.busy += 1
            self._open.move_to_end(session_id)
        return session

    def leave(self, session: McpSession) -> None:
        """A request of ``session`` ended."""
        session.busy -= 1
        session.last = self.clock()

    def closed(self, session_id: str) -> None:
        """The session ended (deleted by its client, or unknown to the SDK any more)."""
        session = self._open.pop(session_id, None)
        if session is not None:
            self._uncount(session.key, session.tenant)

    def of_key(self, key: str) -> list[McpSession]:
        """Forget and return every session of ``key`` (a revoked key: the caller closes them)."""
        found = [s for s in self._open.values() if s.key == key]
        for session in found:
            self.closed(session.id)
        return found

    def _make_room(self, opening: Opening, within: Callable[[McpSession], bool], who: str,
                   cap: int, status: int) -> None:
        for session in self._open.values():  # least recently used first
            if not session.busy and within(session):
                self.closed(session.id)
                opening.closing.append(session)
                return
        raise ApiError(status, "too_many_mcp_sessions",
                       f"{who} has {cap} MCP sessions open, its limit, and every one is in "
                       "use; end one (DELETE /mcp with its Mcp-Session-Id) or retry later")

    def _expire(self) -> None:
        """Forget the sessions idle longer than the SDK keeps them."""
        oldest = self.clock() - self.idle_seconds
        for session in [s for s in self._open.values() if not s.busy and s.last < oldest]:
            self.closed(session.id)

    def _uncount(self, key: str | None, tenant: str) -> None:
        self._keys[key] -= 1
        if not self._keys[key]:
            del self._keys[key]
        self._tenants[tenant] -= 1
        if not self._tenants[tenant]:
            del self._tenants[tenant]
