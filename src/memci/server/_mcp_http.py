"""MCP over Streamable HTTP at ``/mcp`` of ``memci serve``: the same tools as ``memci mcp``.

An ASGI endpoint in front of the official SDK's
:class:`~mcp.server.streamable_http_manager.StreamableHTTPSessionManager`. Every HTTP
request (POST, the GET stream, DELETE) is checked before the SDK sees it:

- **authenticated** with memci's API keys, exactly as the REST API (:mod:`._auth`): no key,
  a bad key or a revoked one answers 401 with ``WWW-Authenticate: Bearer``;
- **tenant-isolated**: the key's tenant rides in the request's scope, and a tool call
  opens sessions of that tenant only (a session of the same name in another tenant is
  another session). The SDK binds each MCP connection (``Mcp-Session-Id``) to the key
  that opened it, so another key cannot use it (404);
- **many sessions per server**: the connection names its memci session with the header
  ``X-Memci-Session`` (or ``?session=``), each tool call may name another with its
  ``session`` argument, and without either calls go to ``default``. The user is
  ``X-Memci-User`` (or ``?user=``);
- **capped**: the MCP sessions (``Mcp-Session-Id``) a key, a tenant and the server hold
  open are counted and capped (:mod:`._mcp_sessions`); at a cap the least recently used
  idle session within it is ended (as its client's DELETE would), else the new one is
  refused with 429 (503 at the server's cap);
- **revocable while open**: a request that stays open (the GET event stream, a streamed
  answer) is ended within about two seconds once its key is revoked (the key is checked
  again every ``KeyStore.cache_seconds``, at least every second), and the key's sessions
  end with it.

Nothing here widens what a session may reach: sessions are opened through the
server's :class:`~memci.server._sessions.SessionHub`, so the operator's file roots and
message size of the tenant apply (``memci serve --file-root``, key policies), and no
MCP call takes session settings at all.

The session manager runs inside the app's lifespan (:meth:`McpEndpoint.running`), a
new one per lifespan; before it starts (or after it stops) ``/mcp`` answers 503.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from memci._session import Session
from memci.errors import MemciError
from memci.server._auth import revoked, sent_key, tenant_of
from memci.server._bodies import read_body
from memci.server._config import ServerConfig
from memci.server._errors import ApiError, classify, error_response
from memci.server._jsonrpc import check_message
from memci.server._keys import KeyStore
from memci.server._mcp import DEFAULT_SESSION, Caller, build_server, engine_reader
from memci.server._mcp_sessions import McpSession, McpSessions
from memci.server._sessions import SessionHub

__all__ = ["CALLER_KEY", "McpEndpoint"]

CALLER_KEY = "memci.mcp.caller"
"""Where the endpoint leaves the :class:`~memci.server._mcp.Caller` in the ASGI scope."""

def _named(headers: Headers, query: QueryParams, header: str, param: str) -> str | None:
    value = headers.get(header) or query.get(param)
    if value is not None and (not value or len(value) > 200):
        raise ApiError(400, "invalid_request",
                       f"{header} (or ?{param}=) must be a non-empty name of ≤ 200 chars")
    return value or None


def _caller_of(ctx: ServerRequestContext[Any]) -> Caller:
    """The caller the endpoint recorded for this request; fails closed without one."""
    scope = getattr(ctx.request, "scope", None)
    caller = scope.get(CALLER_KEY) if isinstance(scope, dict) else None
    if not isinstance(caller, Caller):
        raise RuntimeError("an MCP request reached memci without passing /mcp's key check")
    return caller


def _opens_session(scope: Scope, headers: Headers) -> bool:
    """True for a request the SDK may answer with a new ``Mcp-Session-Id``.

    That is a POST without a session id in the handshake-era protocol (no
    ``MCP-Protocol-Version`` header, or one of those versions); later versions keep no
    sessions on the server.
    """
    version = headers.get("mcp-protocol-version")
    return (scope["method"] == "POST" and MCP_SESSION_ID_HEADER not in headers
            and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS))


class _Answer:
    """Passes a response on, noting its status, its session id and whether it ended."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.status: int | None = None
        self.session_id: str | None = None
        self.ended = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.session_id = MutableHeaders(raw=list(message.get("headers", []))).get(
                MCP_SESSION_ID_HEADER)
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.ended = True
        await self._send(message)

    async def cut(self) -> None:
        """End a response its key may no longer receive (401 if nothing was sent yet)."""
        if self.status is None:
            refused = error_response(revoked())
            await self.send({"type": "http.response.start", "status": 401,
                             "headers": refused.raw_headers})
            await self.send({"type": "http.response.body", "body": refused.body,
                             "more_body": False})
        elif not self.ended:
            await self.send({"type": "http.response.body", "body": b"", "more_body": False})


def _ending(session: McpSession) -> Scope:
    """A DELETE of ``session`` as its owner sends it: how the endpoint ends one itself."""
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "DELETE", "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
            "root_path": "", "query_string": b"", "server": ("127.0.0.1", 0),
            "client": ("127.0.0.1", 0), "user": session.owner,
            "headers": [(b"host", b"127.0.0.1:0"),
                        (MCP_SESSION_ID_HEADER.encode(), session.id.encode("ascii"))]}


class McpEndpoint:
    """The ASGI app mounted at ``/mcp``: check the key, name the caller, hand to the SDK."""

    def __init__(self, hub: SessionHub, keys: KeyStore, config: ServerConfig) -> None:
        self.keys = keys
        self.config = config
        self.sessions = McpSessions(
            per_key=config.mcp_sessions_per_key, per_tenant=config.mcp_sessions_per_tenant,
            total=config.mcp_sessions, idle_seconds=config.mcp_idle_seconds)

        def open_session(caller: Caller, name: str) -> Session:
            return hub.open(caller.tenant, name, user=caller.user)

        self.server = build_server(
            open_session, _caller_of, reader_of=partial(engine_reader, hub.engine),
            instructions="memci keeps conversations: add messages, build the context to "
                         "send, search what was said. Every tool takes an optional "
                         "'session' (default: this connection's X-Memci-Session, else "
                         f"{DEFAULT_SESSION!r}).",
            max_response_bytes=config.max_response_bytes)
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run a session manager for the life of the app (enter from its lifespan)."""
        # Origin and Host are checked for every request before it gets here (OriginGuard,
        # memci.server._origins), with or without keys; the SDK's own check stays off.
        manager = StreamableHTTPSessionManager(
            self.server, security_settings=None,
            max_request_body_size=self.config.max_body_bytes,
            session_idle_timeout=self.config.mcp_idle_seconds,
            max_sessions=self.config.mcp_sessions)
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if scope["type"] != "http" or manager is None:
            refused = ApiError(503, "unavailable", "the MCP endpoint is not running")
            await error_response(refused)(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            tenant = await tenant_of(self.keys, self.config, headers)
            query = QueryParams(scope.get("query_string", b""))
            caller = Caller(
                tenant=tenant,
                session=_named(headers, query, "x-memci-session", "session") or DEFAULT_SESSION,
                user=_named(headers, query, "x-memci-user", "user"))
        except ApiError as exc:
            await error_response(exc)(scope, receive, send)
            return
        except MemciError as exc:  # the key store cannot be read
            await error_response(classify(exc))(scope, receive, send)
            return
        if scope["method"] == "POST":
            body, receive = await read_body(receive)
            not_jsonrpc = check_message(body)
            if not_jsonrpc is not None:  # its JSON-RPC error, in a 400 (Streamable HTTP)
                await JSONResponse(not_jsonrpc, status_code=400)(scope, receive, send)
                return
        scope = dict(scope)
        scope[CALLER_KEY] = caller
        key = sent_key(headers)
        digest = None
        if key is not None:
            # The SDK binds an MCP connection to the credential that opened it; it is
            # identified by the key's digest (the key itself is never kept).
            digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
            scope["user"] = AuthenticatedUser(AccessToken(
                token=digest, client_id=tenant, scopes=[], subject=digest))
        served = _Served(self, manager, key, digest)
        if _opens_session(scope, headers):
            await served.opening(tenant, scope, receive, send)
        else:
            await served.using(headers.get(MCP_SESSION_ID_HEADER), scope, receive, send)

    async def end(self, manager: StreamableHTTPSessionManager,
                  sessions: list[McpSession]) -> None:
        """End ``sessions`` in the SDK, as their clients' DELETE would."""

        async def nothing_more() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def dropped(_: Message) -> None:
            return None

        with anyio.CancelScope(shield=True):  # forgotten here already: end them whatever
            for session in sessions:
                await manager.handle_request(_ending(session), nothing_more, dropped)


class _Served:
    """One request handed to the SDK: counted against the caps, cut if its key is revoked."""

    def __init__(self, endpoint: McpEndpoint, manager: StreamableHTTPSessionManager,
                 key: str | None, digest: str | None) -> None:
        self.endpoint = endpoint
        self.manager = manager
        self.key = key
        self.digest = digest

    async def opening(self, tenant: str, scope: Scope, receive: Receive, send: Send) -> None:
        """A request that may open a session: room is made (or refused) first."""
        sessions = self.endpoint.sessions
        opening = sessions.reserve(self.digest, tenant)
        await self.endpoint.end(self.manager, opening.closing)
        if opening.refused is not None:
            await error_response(opening.refused)(scope, receive, send)
            return
        answer = _Answer(send)
        try:
            await self.watched(scope, receive, answer)
        finally:
            if answer.session_id and answer.status is not None and answer.status < 400:
                sessions.opened(opening, answer.session_id, scope.get("user"))
            else:
                sessions.failed(opening)

    async def using(self, session_id: str | None, scope: Scope, receive: Receive,
                    send: Send) -> None:
        """A request of an existing session (or of none): its session is busy meanwhile."""
        sessions = self.endpoint.sessions
        session = sessions.enter(session_id) if session_id is not None else None
        answer = _Answer(send)
        try:
            await self.watched(scope, receive, answer)
        finally:
            if session is not None:
                sessions.leave(session)
        ended = answer.status == 404 or (scope["method"] == "DELETE" and answer.status == 200)
        # Only its own key's answer says a session ended: another key's id is 404 as well.
        if session is not None and session.key == self.digest and ended:
            sessions.closed(session.id)

    async def watched(self, scope: Scope, receive: Receive, answer: _Answer) -> None:
        """The SDK answers; with a key, it is checked again while the answer lasts."""
        if self.key is None:
            await self.manager.handle_request(scope, receive, answer.send)
            return
        revoked = False
        async with anyio.create_task_group() as tasks:

            async def watch() -> None:
                nonlocal revoked
                revoked = await self._until_revoked()
                tasks.cancel_scope.cancel()

            tasks.start_soon(watch)
            await self.manager.handle_request(scope, receive, answer.send)
            tasks.cancel_scope.cancel()
        if revoked:
            await answer.cut()
            if self.digest is not None:
                await self.endpoint.end(self.manager,
                                        self.endpoint.sessions.of_key(self.digest))

    async def _until_revoked(self) -> bool:
        """Wait until the key stops being valid (revoked, or the store cannot tell)."""
        keys, key = self.endpoint.keys, self.key
        assert key is not None
        while True:
            await anyio.sleep(max(keys.cache_seconds, 1.0))
            try:
                found, tenant = keys.cached(key)
                if not found:
                    tenant = await anyio.to_thread.run_sync(keys.tenant_of, key)
            except MemciError:
                return True  # fails closed, as a new request would (503)
            if tenant is None:
                return True
