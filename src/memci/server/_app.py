"""The app of ``memci serve``: the REST API, the model proxies and MCP over HTTP, assembled.

:func:`create_app` makes the app's :class:`~memci.server._state.ServerState`, and then an
app that includes one router per resource (:mod:`memci.server.routes`: sessions,
messages, context, search, tools, deleting, proxy, health, and ``/mcp``). MCP over
Streamable HTTP is mounted at ``/mcp`` (:mod:`memci.server._mcp_http`) when
``memci[mcp]`` is installed, behind the same API keys; without it ``/mcp`` answers 501.

One :class:`~memci.Engine` serves every request of the process; every call into memci
runs in the server's thread pool, never on the event loop (sessions and the store are
thread-safe).
Every route under ``/v1`` needs an API key (``Authorization: Bearer mk_…``) unless the
server runs with ``auth=False``; the key's tenant is the only tenant the request sees.
Reads of an unknown session answer 404; adding messages creates the session; ``DELETE``
routes retract, clear or delete a session and erase a user, only within the key's tenant. Bodies
larger than ``max_body_bytes`` answer 413 before any handler runs
(:class:`~memci.server._bodies.BodyLimit`), and a request that fails validation stores
nothing (``add_many`` is one transaction).

Bad input is a 4xx, never a 500: bodies are parsed with a depth limit and without NaN,
integers and dates are bounded before they reach SQLite or date arithmetic, and a
request's session settings are checked by key (see :mod:`memci.server._policy` for which
ones a request may set at all). Every error leaves as one JSON shape
(:mod:`memci.server._errors`). The OpenAPI schema carries the request models of
:mod:`memci.server._models` (:mod:`memci.server._openapi`). A browser page's ``Origin``
and the ``Host`` are checked before anything else (:mod:`memci.server._origins`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, nullcontext
from functools import partial

import httpx
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Match

import memci
from memci.engine import Engine
from memci.errors import MemciError
from memci.server._bodies import BodyLimit
from memci.server._config import ServerConfig
from memci.server._errors import ApiError, classify, error_response, problems
from memci.server._keys import KeyStore
from memci.server._openapi import openapi_of
from memci.server._origins import OriginGuard, OriginPolicy
from memci.server._state import ServerState
from memci.server.routes import ROUTERS, mcp_router

__all__ = ["create_app"]


def create_app(
    engine: Engine, config: ServerConfig | None = None, *, keys: KeyStore | None = None
) -> FastAPI:
    """The ASGI app of ``memci serve`` over ``engine`` (which the caller closes).

    The app is wrapped in the body-size limit; ``app.state.server`` holds its
    :class:`~memci.server._state.ServerState` (``app.state.hub`` the sessions).
    """
    state = ServerState.start(engine, config, keys)
    app = FastAPI(
        title="memci",
        version=memci.__version__,
        description="REST API and OpenAI-compatible proxy of memci, the context and memory "
                    "engine for LLM agents. Authenticate with `Authorization: Bearer <key>` "
                    "(a key made with `memci keys create TENANT`).",
        lifespan=_lifespan,
        dependencies=[Depends(_one_value_each)],
    )
    app.state.server = state
    # The parts by name, as the app held them before the state object: code outside
    # memci may read them.
    app.state.hub, app.state.keys = state.hub, state.keys
    app.state.config, app.state.policy = state.config, state.policy
    app.openapi = partial(openapi_of, app)  # type: ignore[method-assign]  # FastAPI's hook
    app.add_middleware(BodyLimit, max_bytes=state.config.max_body_bytes)
    # Outermost: a page's Origin and the Host are checked before a body is read.
    app.add_middleware(OriginGuard, policy=OriginPolicy(state.config.allowed_origins,
                                                        state.config.allowed_hosts),
                       every_host=not state.config.auth)
    for kind, handler in _HANDLERS:
        app.exception_handler(kind)(handler)
    app.include_router(mcp_router(state.mcp))
    for router in ROUTERS:
        app.include_router(router)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Run the MCP sessions and the proxy's upstream client for the life of the app."""
    state: ServerState = app.state.server
    mcp = state.mcp.running() if state.mcp is not None else nullcontext()
    upstream = httpx.AsyncClient(
        timeout=httpx.Timeout(state.config.upstream_timeout, connect=10.0),
        limits=httpx.Limits(max_connections=200, max_keepalive_connections=50))
    async with mcp, upstream as client:
        state.proxy.http = client
        yield
        state.proxy.http = None


# -- how errors answer (memci.server._errors) ------------------------------------------


async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
    return error_response(exc)


async def _memci_error(_: Request, exc: MemciError) -> JSONResponse:
    return error_response(classify(exc))


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    # Logged by the server (the exception is re-raised after this answer); the client
    # learns nothing of the internals.
    return error_response(ApiError(500, "internal_error", "internal server error"))


async def _gone(_: Request, exc: ClientDisconnect) -> JSONResponse:
    # The client left, or its body timed out (memci serve closed the connection):
    # nobody reads this answer; it only keeps the log free of a traceback.
    return error_response(ApiError(408, "request_timeout", "the request body did not arrive"))


def _one_value_each(request: Request) -> None:
    """Refuse a query parameter given more than once (400): each one memci takes is one value.

    FastAPI would keep the last of them and answer as if the others were not there.
    """
    seen: set[str] = set()
    for name, _ in request.query_params.multi_items():
        if name in seen:
            raise ApiError(400, "invalid_request",
                           f"the query parameter {name!r} is given more than once: give it once")
        seen.add(name)


async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
    # Failed validation answers 400, never FastAPI's 422 (the OpenAPI document agrees).
    return error_response(ApiError(400, "invalid_request", problems(exc.errors())))


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    # Its headers go with it; a 405 names every method the path takes (Allow, RFC 9110),
    # of all the routes at that path, not only of the first one Starlette tried.
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(_allowed(request))
    return error_response(ApiError(exc.status_code, code, str(exc.detail), headers))


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def _allowed(request: Request) -> list[str]:
    """The methods some route answers at the request's path (each one asked of the router)."""
    return [method for method in _METHODS
            if any(route.matches({**request.scope, "method": method})[0] == Match.FULL
                   for route in request.app.router.routes)]


_HANDLERS: tuple[tuple[type[Exception], Callable[..., Awaitable[JSONResponse]]], ...] = (
    (ApiError, _api_error),
    (MemciError, _memci_error),
    (Exception, _unexpected),
    (ClientDisconnect, _gone),
    (RequestValidationError, _invalid),
    (StarletteHTTPException, _http_error),
)
