"""What every router reads: the app's state, the caller's tenant, and shared parameters.

Each is a FastAPI dependency or an annotated parameter type, so a route says what it
needs in its signature:

- :data:`State` — the app's :class:`~memci.server._state.ServerState` (engine, config,
  session hub, proxy, tool threads);
- :data:`Tenant` — the tenant of the request's API key (:mod:`memci.server._auth`); the
  route never runs without one, and a bad key answers 401 before any parameter is read;
- :data:`Actor` — who asks, for the audit log of deletions: the key's fingerprint;
- :data:`Sid` — a session's name in the path.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from memci._session import Session
from memci.server._auth import tenant_of
from memci.server._keys import hash_key
from memci.server._state import ServerState

__all__ = ["BIGGEST", "Actor", "Sid", "State", "Tenant", "offered", "request_actor",
           "request_tenant", "server_state"]

BIGGEST = 2**62  # seqs and offsets: anything larger is refused before SQLite sees it


async def server_state(request: Request) -> ServerState:
    """The state of the app serving ``request`` (set by ``create_app``)."""
    state: ServerState = request.app.state.server
    return state


State = Annotated[ServerState, Depends(server_state)]

# Scheme names are component keys: OpenAPI allows letters, digits, '.', '_' and '-' only.
_bearer = HTTPBearer(auto_error=False, scheme_name="memciApiKey",
                     description="A static API key made with `memci keys create TENANT` "
                                 "(the server does no OAuth).")
_api_key_header = APIKeyHeader(
    name="x-api-key", auto_error=False, scheme_name="memciApiKeyHeader",
    description="The same key, as Anthropic's SDK sends it (instead of Bearer).")


async def request_tenant(
    request: Request, server: State,
    # Declared for the OpenAPI schema; the check itself reads the headers (_auth).
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    x_api_key: Annotated[str | None, Depends(_api_key_header)],
) -> str:
    """The tenant of the request's API key; 401 without a valid one."""
    return await tenant_of(server.keys, server.config, request.headers)


Tenant = Annotated[str, Depends(request_tenant)]


def request_actor(request: Request, server: State) -> str:
    """Who asks, for the audit log: the key's fingerprint, never the key."""
    header = request.headers.get("authorization", "")
    key = header[7:].strip() if header.lower().startswith("bearer ") else None
    key = key or request.headers.get("x-api-key")
    return f"rest:key-{hash_key(key)[:12]}" if key and server.config.auth else "rest"


Actor = Annotated[str, Depends(request_actor)]

Sid = Annotated[str, Path(description="The session's name (unique within the key's tenant).",
                          min_length=1, max_length=200)]


def offered(session: Session, every: bool = False) -> list[str]:
    """The names of memci's tools offered now; ``every``: all the session can run."""
    return [t["function"]["name"] for t in session.tools("openai", every=every)]
