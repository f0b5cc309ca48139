"""Slow clients and connection caps of ``memci serve``: a guard inside uvicorn's HTTP protocol.

uvicorn waits for a request's headers and body as long as a client likes and accepts
connections until the process has no file descriptor left; a thousand sockets that send a
byte now and then (slowloris) then keep every other client out, ``/healthz`` included.
:class:`GuardedH11Protocol` is uvicorn's h11 protocol with a :class:`ConnectionGuard`:

- **header timeout**: a request's line and headers must arrive within ``header_timeout``
  seconds of the connection opening (or of the answer to its previous request);
- **body timeout**: its body must arrive within ``body_timeout`` seconds of its headers,
  the deadline moving one second later for every :data:`BODY_BYTES_PER_SECOND` received,
  so a large upload on a slow link goes on while it moves;
- **connection caps**: at most ``per_client`` connections from one address, and
  ``total`` in all (below the process's file-descriptor limit, so accepting one never
  fails for want of a descriptor).

A timed-out connection is closed. At a cap, the connection (of that address, or of anyone
for the total) that has waited longest for a request's headers — an idle keep-alive
connection, or a slow one — is closed to make room; only when all of them are in the
middle of a request is the new one refused: it is answered 503 ``too_many_connections``
and closed. So slow or idle sockets can never keep out a client that sends its request,
and a client busy with requests is never cut off for a newcomer.

The guard runs on the event loop only (uvicorn's protocol callbacks), without locks.
"""

from __future__ import annotations

import asyncio
import resource
from collections import OrderedDict
from typing import ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from memci.server._errors import error_body
from memci.server._listing import encode

__all__ = ["BODY_BYTES_PER_SECOND", "ConnectionGuard", "GuardedH11Protocol",
           "default_max_connections", "guarded_protocol"]

BODY_BYTES_PER_SECOND = 64 * 1024
"""Each this many body bytes received move a request's body deadline one second later."""

_RESERVED_FDS = 256  # the store, its journal, the upstream's and PostgreSQL's connections


def default_max_connections() -> int:
    """Connections a server may hold: below the file-descriptor limit, at most 10,000."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 10_000
    return max(32, min(10_000, soft - _RESERVED_FDS))


def _refusal() -> bytes:
    body = encode(error_body("too_many_connections",
                             "the server holds as many connections as it may (from this "
                             "address, or in all) and every one is busy; retry later"))
    return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
            b"connection: close\r\ncontent-length: " + str(len(body)).encode() +
            b"\r\n\r\n" + body)


class ConnectionGuard:
    """The connections of one server: who holds how many, and who waits for headers."""

    def __init__(self, *, header_timeout: float, body_timeout: float, per_client: int,
                 total: int) -> None:
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.per_client = per_client
        self.total = total
        self._held: dict[str, set[GuardedH11Protocol]] = {}
        self._count = 0
        # Waiting for a request's headers, longest first: the ones to close at a cap.
        self._waiting: OrderedDict[GuardedH11Protocol, None] = OrderedDict()
        self._waiting_from: dict[str, OrderedDict[GuardedH11Protocol, None]] = {}

    def admit(self, conn: GuardedH11Protocol) -> bool:
        """Count ``conn`` in, closing a waiting one at a cap; False: refuse it."""
        mine = self._held.get(conn.address, set())
        if len(mine) >= self.per_client and not self._close_longest(
                self._waiting_from.get(conn.address)):
            return False
        if self._count >= self.total and not self._close_longest(self._waiting):
            return False
        self._held.setdefault(conn.address, set()).add(conn)
        self._count += 1
        return True

    def waiting(self, conn: GuardedH11Protocol) -> None:
        """``conn`` now waits for a request's headers (the newest to wait)."""
        if conn in self._held.get(conn.address, ()):
            self._waiting[conn] = None
            self._waiting_from.setdefault(conn.address, OrderedDict())[conn] = None

    def busy(self, conn: GuardedH11Protocol) -> None:
        """``conn`` is in the middle of a request: not to be closed for a newcomer."""
        self._waiting.pop(conn, None)
        mine = self._waiting_from.get(conn.address)
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                del self._waiting_from[conn.address]

    def left(self, conn: GuardedH11Protocol) -> None:
        """``conn`` is closed (or being closed): it counts no more."""
        self.busy(conn)
        mine = self._held.get(conn.address)
        if mine is not None and conn in mine:
            mine.discard(conn)
            self._count -= 1
            if not mine:
                del self._held[conn.address]

    def _close_longest(self, waiting: OrderedDict[GuardedH11Protocol, None] | None) -> bool:
        if not waiting:
            return False
        longest = next(iter(waiting))
        self.left(longest)
        longest.transport.close()
        return True


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol under a :class:`ConnectionGuard` (made by guarded_protocol)."""

    guard: ClassVar[ConnectionGuard]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.address = self.client[0] if self.client else ""
        self._phase: str | None = None
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        if not self.guard.admit(self):
            transport.write(_refusal())
            transport.close()
            return
        self._await("headers", self.guard.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.left(self)
        self._stop()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._phase == "body":
            self._deadline += len(data) / BODY_BYTES_PER_SECOND
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def _follow(self) -> None:
        """Time what the connection waits for now: headers, a body, or nothing."""
        state = self.conn.their_state
        if state is h11.IDLE:
            if self._phase != "headers":
                self._await("headers", self.guard.header_timeout)
        elif state is h11.SEND_BODY:
            if self._phase != "body":
                self._await("body", self.guard.body_timeout)
        elif self._phase is not None:
            self._stop()
            self.guard.busy(self)

    def _await(self, phase: str, seconds: float) -> None:
        if self.transport.is_closing():
            return
        self._stop()
        self._phase = phase
        self._deadline = self.loop.time() + seconds
        if phase == "headers":
            self.guard.waiting(self)
        else:
            self.guard.busy(self)
        self._timer = self.loop.call_at(self._deadline, self._check)

    def _check(self) -> None:
        self._timer = None
        if self._phase is None or self.transport.is_closing():
            return
        if self.loop.time() < self._deadline:  # the body moved the deadline on
            self._timer = self.loop.call_at(self._deadline, self._check)
            return
        self.guard.left(self)
        self.transport.close()

    def _stop(self) -> None:
        self._phase = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedH11Protocol]:
    """The protocol class to give uvicorn (``Config(http=...)``) for ``guard``."""

    class Guarded(GuardedH11Protocol):
        pass

    Guarded.guard = guard
    return Guarded
