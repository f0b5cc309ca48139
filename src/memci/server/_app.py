"""The REST API: sessions, messages, context, search, memci's tools, state and stats.

MCP over Streamable HTTP is mounted at ``/mcp`` (:mod:`memci.server._mcp_http`) when
``memci[mcp]`` is installed, behind the same API keys; without it ``/mcp`` answers 501.

One :class:`~memci.Engine` serves every request of the process; every call into memci
runs in the server's thread pool, never on the event loop (sessions and the store are
thread-safe).
Every route under ``/v1`` needs an API key (``Authorization: Bearer mk_…``) unless the
server runs with ``auth=False``; the key's tenant is the only tenant the request sees.
Reads of an unknown session answer 404; adding messages creates the session; ``DELETE``
routes retract, clear or delete a session and erase a user, only within the key's tenant. Bodies
larger than ``max_body_bytes`` answer 413 before any handler runs, and a request that
fails validation stores nothing (``add_many`` is one transaction).

Bad input is a 4xx, never a 500: bodies are parsed with a depth limit and without NaN,
integers and dates are bounded before they reach SQLite or date arithmetic, and a
request's session settings are checked by key (see :mod:`memci.server._policy` for which
ones a request may set at all). The OpenAPI schema carries the request models of
:mod:`memci.server._models`.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the routes' annotations,
# and the ones made inside create_app (Tenant, Sid) only resolve when evaluated in place.

import importlib.util
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, nullcontext
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anyio.to_thread
import httpx
from fastapi import Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import TypeAdapter, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

import memci
from memci._session import Session
from memci.engine import Engine
from memci.errors import InvalidMessageError, MemciError, MissingExtraError
from memci.server._auth import tenant_of as key_tenant
from memci.server._config import ServerConfig
from memci.server._errors import ApiError, classify, error_body
from memci.server._json import jsonable, message_json
from memci.server._keys import KeyStore, hash_key
from memci.server._listing import (
    hits_page,
    messages_json,
    messages_page,
    page_response,
    sessions_page,
)
from memci.server._models import ContextRequest, ErrorAnswer, MessagesBody
from memci.server._policy import HostPolicy, guarded_paths, request_settings
from memci.server._proxy import ChatProxy
from memci.server._sessions import SessionHub, read_messages
from memci.server._threads import ToolThreads
from memci.tools._builtin import FILE_TOOLS, RECALL_PAGE, SEARCH_MEMORY, WORKSPACE_TOOLS
from memci.workspace import parse_artifact_ref

if TYPE_CHECKING:
    from memci.server._mcp_http import McpEndpoint

__all__ = ["BodyLimit", "ContextRequest", "create_app"]

_SID = Path(description="The session's name (unique within the key's tenant).",
            min_length=1, max_length=200)


_TOOL_NAMES = [RECALL_PAGE.spec.name, SEARCH_MEMORY.spec.name, *FILE_TOOLS, *WORKSPACE_TOOLS]
_BIGGEST = 2**62  # seqs and offsets: anything larger is refused before SQLite sees it
_MAX_DEPTH = 128  # nesting of a JSON body; far deeper than any message


def _moment(now: datetime | None) -> datetime | None:
    """``now`` of a search, refused (400) when it cannot be compared with stored times."""
    if now is None:
        return None
    try:
        return now.astimezone(UTC) if now.tzinfo is not None else now.replace(tzinfo=UTC)
    except (OverflowError, ValueError) as exc:
        raise ApiError(400, "invalid_request",
                       f"now: {now.isoformat()} is out of range; give a date-time between "
                       "0001-01-01 and 9999-12-31 in UTC") from exc


def _json(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status)


def _error(exc: ApiError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return JSONResponse(error_body(exc.code, exc.message), status_code=exc.status,
                        headers=headers)


class BodyLimit:
    """ASGI middleware: refuse a request body over ``max_bytes`` with a JSON 413.

    A declared ``Content-Length`` over the limit is refused before reading; otherwise
    the body is read up to the limit and replayed to the app, so a chunked upload is
    held to the same limit.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message], receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body: ASGIMessage = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([body], receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(
            error_body("payload_too_large",
                       f"the request body is over the server's limit of {self.max_bytes} bytes"),
            status_code=413, headers={"Connection": "close"})
        await response(scope, receive, send)


def _replay(messages: list[ASGIMessage], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> ASGIMessage:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay


_TOO_DEEP = object()


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


async def _read_json(request: Request) -> Any:
    """The request body as JSON, whatever its content type says (None when empty).

    Refused with 400: text that is not JSON (NaN and Infinity included), and nesting
    deeper than ``_MAX_DEPTH`` (no handler ever recurses through a body that deep).
    """
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        body = json.loads(raw, parse_constant=_not_json)
    except RecursionError:
        body = _TOO_DEEP
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"the body is not valid JSON: {exc}") from exc
    if body is _TOO_DEEP or _deeper_than(body, _MAX_DEPTH):
        raise ApiError(400, "too_deep",
                       f"the body nests arrays and objects more than {_MAX_DEPTH} deep")
    return body


def _deeper_than(value: Any, limit: int) -> bool:
    """True when ``value`` nests lists and dicts more than ``limit`` deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _problems(errors: Sequence[Any]) -> str:
    """Validation errors as one line: ``where: what`` for the first few."""
    problems = []
    for error in list(errors)[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        problems.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(problems) or "invalid request"


def _json_body(description: str, schema: dict[str, Any] | None = None,
               required: bool = False) -> dict[str, Any]:
    """OpenAPI for a JSON body read by hand (any JSON value unless a schema is given)."""
    return {"requestBody": {"required": required, "description": description,
                            "content": {"application/json": {"schema": schema or {}}}}}


_ENVELOPE = frozenset({"messages", "user", "settings"})


def _split_body(body: Any) -> tuple[list[Any], str | None, dict[str, Any]]:
    """Messages, user and settings (checked) of a ``POST …/messages`` body."""
    if isinstance(body, list):
        return body, None, {}
    if isinstance(body, dict) and "messages" in body and "role" not in body:
        extra = sorted(str(k)[:80] for k in set(body) - _ENVELOPE)
        if extra:
            raise InvalidMessageError(
                f"{extra[0]!r} is not a field of the messages envelope; it takes "
                '"messages", "user" and "settings"')
        items = body["messages"]
        user = body.get("user")
        if user is not None and not isinstance(user, str):
            raise InvalidMessageError("'user' must be a string")
        return ((items if isinstance(items, list) else [items]), user,
                request_settings(body.get("settings")))
    if isinstance(body, dict):
        return [body], None, {}
    raise InvalidMessageError(
        "the body must be a message (an object with a role), a list of messages, or "
        '{"messages": [...], "user": ..., "settings": {...}}')


def _schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON schemas of the message and context bodies, with their shared definitions."""
    messages = TypeAdapter(MessagesBody).json_schema(ref_template="#/components/schemas/{model}")
    context = ContextRequest.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = {**messages.pop("$defs", {}), **context.pop("$defs", {})}
    return {"messages": messages, "context": context}, defs


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorAnswer, "description": what} for status, what in (
        (400, "Bad input: the message says what to fix; nothing was stored."),
        (401, "No API key, or an unknown or revoked one."),
        (404, "Unknown session, tool, artifact or route."),
        (409, "The session belongs to another user (owner_conflict); nothing was stored."),
        (413, "The body is over the server's limit."),
        (503, "The store cannot be written."))}


def _mcp_endpoint(
    hub: SessionHub, keys: KeyStore, config: ServerConfig
) -> "McpEndpoint | None":
    """The endpoint of MCP over HTTP, or None without ``memci[mcp]`` installed."""
    if importlib.util.find_spec("mcp") is None:
        return None
    from memci.server._mcp_http import McpEndpoint

    return McpEndpoint(hub, keys, config)


def create_app(
    engine: Engine, config: ServerConfig | None = None, *, keys: KeyStore | None = None
) -> FastAPI:
    """The ASGI app of ``memci serve`` over ``engine`` (which the caller closes).

    The app is wrapped in the body-size limit; ``app.state.hub`` holds the sessions.
    """
    config = config or ServerConfig.resolve()
    keys = keys or KeyStore(engine.store)
    policy = HostPolicy(config, keys, guarded_paths(engine))
    policy.check()
    # Every session of the engine, however reached (REST, proxy), gets its tenant's limits.
    engine.host_limits = policy.limits
    hub = SessionHub(engine)
    tool_threads = ToolThreads()
    proxy = ChatProxy(hub, config, tool_threads)
    bodies, definitions = _schemas()

    mcp = _mcp_endpoint(hub, keys, config)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with (mcp.running() if mcp is not None else nullcontext()), httpx.AsyncClient(
            timeout=httpx.Timeout(config.upstream_timeout, connect=10.0),
            limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
        ) as client:
            proxy.http = client
            yield
            proxy.http = None

    app = FastAPI(
        title="memci",
        version=memci.__version__,
        description="REST API and OpenAI-compatible proxy of memci, the context and memory "
                    "engine for LLM agents. Authenticate with `Authorization: Bearer <key>` "
                    "(a key made with `memci keys create TENANT`).",
        lifespan=lifespan,
    )
    app.state.hub = hub
    app.state.keys = keys
    app.state.config = config
    app.state.policy = policy

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            schema.setdefault("components", {}).setdefault("schemas", {}).update(definitions)
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    # Failed validation answers 400 (see _invalid), never FastAPI's 422.
                    operation.get("responses", {}).pop("422", None)
            for unused in ("HTTPValidationError", "ValidationError"):
                schema["components"]["schemas"].pop(unused, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented hook
    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _error(exc)

    @app.exception_handler(MemciError)
    async def _memci_error(_: Request, exc: MemciError) -> JSONResponse:
        return _error(classify(exc))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        # Logged by the server (the exception is re-raised after this answer); the client
        # learns nothing of the internals.
        return _error(ApiError(500, "internal_error", "internal server error"))

    @app.exception_handler(ClientDisconnect)
    async def _gone(_: Request, exc: ClientDisconnect) -> JSONResponse:
        # The client left, or its body timed out (memci serve closed the connection):
        # nobody reads this answer; it only keeps the log free of a traceback.
        return _error(ApiError(408, "request_timeout", "the request body did not arrive"))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(ApiError(400, "invalid_request", _problems(exc.errors())))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
        return _error(ApiError(exc.status_code, codes.get(exc.status_code, "http_error"),
                               str(exc.detail)))

    bearer = HTTPBearer(auto_error=False, scheme_name="memci API key",
                        description="A key made with `memci keys create TENANT`.")

    api_key_header = APIKeyHeader(
        name="x-api-key", auto_error=False, scheme_name="memci API key (x-api-key)",
        description="The same key, as Anthropic's SDK sends it (instead of Bearer).")

    async def tenant_of(
        request: Request,
        # Declared for the OpenAPI schema; the check itself reads the headers (_auth).
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        x_api_key: Annotated[str | None, Depends(api_key_header)],
    ) -> str:
        return await key_tenant(keys, config, request.headers)

    Tenant = Annotated[str, Depends(tenant_of)]
    Sid = Annotated[str, _SID]

    def proxy_session(session_name: Annotated[str | None, Header(
            alias="X-Memci-Session", description="The memci session of this conversation.")
    ] = None) -> str:
        if not session_name:
            raise ApiError(400, "missing_session",
                           "send the memci session name in the 'X-Memci-Session' header")
        return session_name

    ProxySession = Annotated[str, Depends(proxy_session)]
    ProxyUser = Annotated[str | None, Header(alias="X-Memci-User",
                                             description="The session's user.")]

    def offered(session: Session, every: bool = False) -> list[str]:
        """The names of memci's tools offered now; ``every``: all the session can run."""
        return [t["function"]["name"] for t in session.tools("openai", every=every)]

    # -- routes ----------------------------------------------------------------------

    if mcp is not None:
        # An ASGI app as the endpoint: Starlette hands it the request's scope as is.
        app.router.routes.append(Route("/mcp", mcp, methods=["GET", "POST", "DELETE"],
                                       include_in_schema=False))
    else:
        @app.api_route("/mcp", methods=["GET", "POST", "DELETE"], include_in_schema=False)
        def mcp_missing() -> JSONResponse:
            return _error(classify(MissingExtraError("mcp", "mcp", "MCP over HTTP (/mcp)")))

    @app.get("/healthz", tags=["server"], summary="Liveness: the server answers")
    def healthz() -> JSONResponse:
        return _json({"status": "ok", "version": memci.__version__})

    @app.get("/v1/sessions", tags=["sessions"], responses=_ERRORS,
             summary="The tenant's sessions, oldest first, a page at a time")
    def list_sessions(
        tenant: Tenant,
        after: Annotated[int, Query(ge=0, le=_BIGGEST, description=(
            "Where to continue: the next_after of the page before."))] = 0,
        limit: Annotated[int, Query(ge=1, le=10_000, description="At most this many.")] = 1000,
    ) -> Response:
        page, next_after = sessions_page(engine, tenant, after=after, limit=limit,
                                         budget=config.max_response_bytes)
        return page_response({}, "sessions", page, {"next_after": next_after})

    @app.get("/v1/sessions/{sid}", tags=["sessions"],
             responses=_ERRORS, summary="A session's state summary")
    def get_session(sid: Sid, tenant: Tenant) -> JSONResponse:
        session = hub.get(tenant, sid)
        stats = session.stats()
        return _json({
            "session": session.name, "user": session.user,
            "created_at": session.record.created_at.isoformat(),
            "messages": session.count(), "pages": stats.pages,
            "settings": jsonable(session.record.settings),
            "stats": jsonable(stats), "tools": offered(session),
        })

    @app.post("/v1/sessions/{sid}/messages", tags=["messages"],
              summary="Add one message or a list (OpenAI or Anthropic format)",
              responses=_ERRORS, openapi_extra=_json_body(
                  "One message, a list of messages, or {\"messages\": [...], \"user\": "
                  "\"u1\", \"settings\": {...}}; messages in OpenAI or Anthropic format, "
                  "as for session.add. All are stored, or none.", bodies["messages"],
                  required=True))
    async def add_messages(
        request: Request, sid: Sid, tenant: Tenant,
        user: Annotated[str | None, Query(min_length=1, max_length=200,
                                          description="The session's user.")] = None,
    ) -> JSONResponse:
        items, body_user, settings = _split_body(await _read_json(request))

        def store() -> list[Any]:
            messages = read_messages(items, new_session=not hub.exists(tenant, sid))
            session = hub.open(tenant, sid, user=body_user or user, settings=settings)
            return session.add_many(messages)

        stored = await anyio.to_thread.run_sync(store)
        return _json({"session": sid,
                      "messages": messages_json(stored, config.max_response_bytes)})

    @app.get("/v1/sessions/{sid}/messages", tags=["messages"], responses=_ERRORS,
             summary="The stored log, in order (seq after `after`), a page at a time")
    def get_messages(
        sid: Sid, tenant: Tenant,
        after: Annotated[int, Query(ge=0, le=_BIGGEST,
                                    description="Only messages with seq > after.")] = 0,
        limit: Annotated[int, Query(ge=1, le=10_000, description="At most this many.")] = 1000,
    ) -> Response:
        session = hub.get(tenant, sid)
        page, next_after = messages_page(engine, session.record, after=after, limit=limit,
                                         budget=config.max_response_bytes)
        return page_response({"session": sid}, "messages", page, {"next_after": next_after})

    @app.post("/v1/sessions/{sid}/context", tags=["context"],
              summary="Build the context: a provider-ready payload and its figures",
              responses=_ERRORS, openapi_extra=_json_body(
                  "What to build (all optional).", bodies["context"]))
    async def build_context(request: Request, sid: Sid, tenant: Tenant) -> JSONResponse:
        try:
            asked = ContextRequest.model_validate(await _read_json(request) or {})
        except ValidationError as exc:
            raise ApiError(400, "invalid_request", _problems(exc.errors())) from exc

        def build() -> dict[str, Any]:
            session = hub.get(tenant, sid)
            context = session.build(budget=asked.budget, recipe=asked.recipe)
            payload = (context.to_openai() if asked.format == "openai"
                       else context.to_anthropic())
            stats = jsonable(context.stats)
            stats["saved_tokens"] = context.stats.saved_tokens
            return {"session": sid, "format": asked.format, "payload": payload,
                    "stats": stats}

        return _json(await anyio.to_thread.run_sync(build))

    @app.get("/v1/sessions/{sid}/search", tags=["search"],
             responses=_ERRORS, summary="Search the session's memory")
    def search(
        sid: Sid, tenant: Tenant,
        q: Annotated[str, Query(min_length=1, max_length=4000,
                                description="What to look for.")],
        k: Annotated[int, Query(ge=1, le=100, description="How many hits.")] = 10,
        offset: Annotated[int, Query(ge=0, le=99, description=(
            "Skip this many of the best hits: the next_offset of the page before."))] = 0,
        scope: Annotated[Literal["session", "user"], Query(
            description="Search this session, or every session of its user.")] = "session",
        now: Annotated[datetime | None, Query(
            description="ISO 8601 date-time a time in q (\"yesterday\") counts from;"
                        " the server's clock by default.")] = None,
    ) -> Response:
        hits = hub.get(tenant, sid).search(q, k=min(offset + k, 100), scope=scope,
                                           now=_moment(now))
        page, next_offset = hits_page(hits, offset=offset, budget=config.max_response_bytes)
        return page_response({"session": sid, "query": q}, "hits", page,
                             {"next_offset": next_offset})

    @app.get("/v1/sessions/{sid}/tools", tags=["tools"],
             responses=_ERRORS, summary="memci's tools in this session")
    def list_tools(
        sid: Sid, tenant: Tenant,
        format: Annotated[Literal["openai", "anthropic"], Query(
            description="Schema format.")] = "openai",
        every: Annotated[bool, Query(
            description="All the tools the session can run, not only those offered to the "
                        "model now.")] = False,
    ) -> JSONResponse:
        session = hub.get(tenant, sid)
        return _json({"session": sid, "tools": session.tools(format, every=every)})

    @app.post("/v1/sessions/{sid}/tools/{name}", tags=["tools"],
              summary="Run one of memci's tools (JSON arguments)",
              responses=_ERRORS, openapi_extra=_json_body(
                  "The tool's arguments as a JSON object.", {"type": "object"}))
    async def call_tool(
        request: Request, sid: Sid, tenant: Tenant,
        name: Annotated[str, Path(max_length=100, description="The tool's name.",
                                  json_schema_extra={"enum": _TOOL_NAMES})],
    ) -> JSONResponse:
        arguments = await _read_json(request)
        if arguments is not None and not isinstance(arguments, dict):
            raise ApiError(400, "invalid_arguments", "the tool's arguments must be a JSON object")

        def run() -> str:
            session = hub.get(tenant, sid)
            names = offered(session, every=True)
            if name not in names:
                raise ApiError(404, "unknown_tool",
                               f"{name!r} is not a tool of this session; its tools: "
                               f"{', '.join(names) or 'none'}")
            return session.call_tool(name, arguments or {})

        result = await tool_threads.run(run)
        return _json({"session": sid, "tool": name, "result": result,
                      "is_error": result.startswith("error:")})

    @app.get("/v1/sessions/{sid}/state", tags=["tools"], responses=_ERRORS,
             summary="Working state: pins and plan (when the session offers them)")
    def working_state(sid: Sid, tenant: Tenant) -> JSONResponse:
        session = hub.get(tenant, sid)
        names = offered(session, every=True)
        state: dict[str, Any] = {"session": sid}
        for key, tool in (("pins", "pin_list"), ("plan", "plan_list")):
            state[key] = session.call_tool(tool, {}) if tool in names else None
        state["tools"] = [n for n in names if n.startswith(("pin_", "plan_", "notebook_"))]
        return _json(state)

    @app.get("/v1/sessions/{sid}/artifacts/{artifact_id}", tags=["tools"], responses=_ERRORS,
             summary="Read a stored tool output (artifact) by id")
    def get_artifact(
        sid: Sid, tenant: Tenant,
        artifact_id: Annotated[str, Path(max_length=80,
                                         description="The id in `artifact:<id>`.")],
        offset: Annotated[int, Query(ge=0, le=_BIGGEST, description="First character.")] = 0,
        length: Annotated[int, Query(ge=1, le=1_000_000, description="Characters.")] = 4000,
    ) -> JSONResponse:
        session = hub.get(tenant, sid)
        if "artifact_get" not in offered(session, every=True):
            raise ApiError(404, "not_offered", "this session offers no artifact_get tool")
        text = session.call_tool("artifact_get",
                                 {"id": artifact_id, "offset": offset, "length": length})
        if text.startswith("error:"):
            raise ApiError(404, "unknown_artifact", text.removeprefix("error:").strip())
        end = offset + len(text)
        chars = session.artifacts.get(parse_artifact_ref(artifact_id)).chars
        return _json({"session": sid, "id": artifact_id, "offset": offset, "text": text,
                      "next_offset": end if end < chars else None})

    @app.get("/v1/sessions/{sid}/stats", tags=["sessions"],
             responses=_ERRORS, summary="A session's stats")
    def get_stats(sid: Sid, tenant: Tenant) -> JSONResponse:
        session = hub.get(tenant, sid)
        return _json({"session": sid, **jsonable(session.stats())})

    # -- deleting (docs/deleting.md) ---------------------------------------------------

    def actor_of(request: Request) -> str:
        """Who asks, for the audit log: the key's fingerprint, never the key."""
        header = request.headers.get("authorization", "")
        key = header[7:].strip() if header.lower().startswith("bearer ") else None
        key = key or request.headers.get("x-api-key")
        return f"rest:key-{hash_key(key)[:12]}" if key and config.auth else "rest"

    Actor = Annotated[str, Depends(actor_of)]

    def erasure_json(erasure: memci.Erasure) -> dict[str, Any]:
        # "scrub": "pending" — the deletion is committed; its bytes leave the files with
        # the next scrub (docs/deleting.md).
        scrubbed = erasure.scrubbed
        return {"id": erasure.id, "at": erasure.at.isoformat(), "actor": erasure.actor,
                "action": erasure.action, "user_sha256": erasure.user,
                "sessions": len(erasure.sessions), "counts": dict(erasure.counts),
                "scrub": "pending" if scrubbed is None else "done",
                "scrubbed": None if scrubbed is None else scrubbed.isoformat()}

    @app.delete("/v1/sessions/{sid}/messages/last", tags=["deleting"], responses=_ERRORS,
                summary="Delete the newest message (a cancelled turn)")
    def pop_message(sid: Sid, tenant: Tenant, actor: Actor) -> JSONResponse:
        message = hub.get(tenant, sid).pop(actor=actor)
        return _json({"session": sid, "removed": [message_json(message)]})

    @app.delete("/v1/sessions/{sid}/messages/{seq}", tags=["deleting"], responses=_ERRORS,
                summary="Delete one message (and the results of its tool calls)")
    def retract_message(
        sid: Sid, tenant: Tenant, actor: Actor,
        seq: Annotated[int, Path(ge=1, le=_BIGGEST, description="The message's seq.")],
    ) -> JSONResponse:
        removed = hub.get(tenant, sid).retract(seq, actor=actor)
        return _json({"session": sid,
                      "removed": messages_json(removed, config.max_response_bytes)})

    @app.delete("/v1/sessions/{sid}/messages", tags=["deleting"], responses=_ERRORS,
                summary="Delete every message of the session (it stays, empty)")
    def clear_session(sid: Sid, tenant: Tenant, actor: Actor) -> JSONResponse:
        removed = hub.get(tenant, sid).clear(actor=actor)
        return _json({"session": sid, "removed": removed})

    @app.delete("/v1/sessions/{sid}", tags=["deleting"], responses=_ERRORS,
                summary="Delete the session and everything of it")
    def delete_session(sid: Sid, tenant: Tenant, actor: Actor) -> JSONResponse:
        if not hub.exists(tenant, sid):
            raise ApiError(404, "unknown_session", f"no session {sid!r}")
        erasure = hub.delete(tenant, sid, actor=actor)
        return _json({"session": sid, "erasure": erasure_json(erasure)})

    @app.delete("/v1/users/{user}", tags=["deleting"], responses=_ERRORS,
                summary="Erase everything of a user of the key's tenant; leave no trace")
    def erase_user(
        tenant: Tenant, actor: Actor,
        user: Annotated[str, Path(min_length=1, max_length=200, description="The user.")],
    ) -> JSONResponse:
        erasure = hub.erase_user(tenant, user, actor=actor)
        return _json({"user": user, "erasure": erasure_json(erasure)})

    @app.get("/v1/erasures", tags=["deleting"], responses=_ERRORS,
             summary="The tenant's audit log of deletions (ids and counts, no content)")
    def erasures(
        tenant: Tenant,
        limit: Annotated[int, Query(ge=1, le=10_000, description="At most this many.")] = 100,
    ) -> JSONResponse:
        return _json({"erasures": [erasure_json(e)
                                   for e in engine.erasures(tenant, limit=limit)]})

    @app.post("/v1/chat/completions", tags=["proxy"],
              summary="OpenAI-compatible chat completions with memci's context")
    async def chat_completions(
        request: Request, tenant: Tenant,
        session_name: ProxySession,
        user: ProxyUser = None,
    ) -> Response:
        return await proxy.openai(tenant, session_name, user, await _read_json(request))

    @app.post("/v1/messages", tags=["proxy"],
              summary="Anthropic-compatible messages with memci's context")
    async def messages(
        request: Request, tenant: Tenant,
        session_name: ProxySession,
        user: ProxyUser = None,
        anthropic_version: Annotated[str | None, Header(
            alias="anthropic-version", description="Passed to the upstream.")] = None,
        anthropic_beta: Annotated[str | None, Header(
            alias="anthropic-beta", description="Passed to the upstream.")] = None,
    ) -> Response:
        return await proxy.anthropic(tenant, session_name, user, await _read_json(request),
                                     anthropic_version, anthropic_beta)

    return app
