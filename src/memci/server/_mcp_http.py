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
  ``X-Memci-User`` (or ``?user=``).

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
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers, QueryParams
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from memci._session import Session
from memci.errors import MemciError
from memci.server._auth import sent_key, tenant_of
from memci.server._config import ServerConfig
from memci.server._errors import ApiError, classify, error_body
from memci.server._keys import KeyStore
from memci.server._mcp import DEFAULT_SESSION, Caller, build_server
from memci.server._sessions import SessionHub

__all__ = ["CALLER_KEY", "McpEndpoint"]

CALLER_KEY = "memci.mcp.caller"
"""Where the endpoint leaves the :class:`~memci.server._mcp.Caller` in the ASGI scope."""

_LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
_LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def _refuse(exc: ApiError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(error_body(exc.code, exc.message), status_code=exc.status,
                        headers=headers)


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


class McpEndpoint:
    """The ASGI app mounted at ``/mcp``: check the key, name the caller, hand to the SDK."""

    def __init__(self, hub: SessionHub, keys: KeyStore, config: ServerConfig) -> None:
        self.keys = keys
        self.config = config

        def open_session(caller: Caller, name: str) -> Session:
            return hub.open(caller.tenant, name, user=caller.user)

        self.server = build_server(
            open_session, _caller_of,
            instructions="memci keeps conversations: add messages, build the context to "
                         "send, search what was said. Every tool takes an optional "
                         "'session' (default: this connection's X-Memci-Session, else "
                         f"{DEFAULT_SESSION!r}).")
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run a session manager for the life of the app (enter from its lifespan)."""
        # Without keys (--no-auth, loopback only) a web page could reach the endpoint
        # through DNS rebinding; with keys, a page cannot send one it does not know.
        security = None if self.config.auth else TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=list(_LOOPBACK_HOSTS),
            allowed_origins=list(_LOOPBACK_ORIGINS))
        manager = StreamableHTTPSessionManager(
            self.server, security_settings=security,
            max_request_body_size=self.config.max_body_bytes)
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if scope["type"] != "http" or manager is None:
            await _refuse(ApiError(503, "unavailable", "the MCP endpoint is not running"))(
                scope, receive, send)
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
            await _refuse(exc)(scope, receive, send)
            return
        except MemciError as exc:  # the key store cannot be read
            await _refuse(classify(exc))(scope, receive, send)
            return
        scope = dict(scope)
        scope[CALLER_KEY] = caller
        key = sent_key(headers)
        if key is not None:
            # The SDK binds an MCP connection to the credential that opened it; it is
            # identified by the key's digest (the key itself is never kept).
            digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
            scope["user"] = AuthenticatedUser(AccessToken(
                token=digest, client_id=tenant, scopes=[], subject=digest))
        await manager.handle_request(scope, receive, send)
