"""memci's MCP server: the tools of ``memci mcp`` (stdio) and of ``/mcp`` (HTTP).

Built on the official MCP SDK's low-level server, so the tool list follows the session
(``session.tools()`` changes with its strategy and features). Offered tools:

- ``add`` — store messages (``messages``: a list in OpenAI or Anthropic format, or one
  ``role`` and ``content``); answers the stored seqs;
- ``build`` — the context to send now (``format``, ``budget``, ``recipe``), as JSON;
- ``search`` — search the session's memory (``query``, ``k``, ``offset``): the hits within
  the server's byte budget, and ``next_offset`` where the rest start (:mod:`._listing`);
- every tool of ``session.tools(every=True)`` (``recall_page``, ``working_state``,
  ``artifact_get`` …), run with ``session.call_tool``; the nine working-state tools are
  listed as the one ``working_state`` (a client sends every listed schema to its model),
  and each stays callable by its own name, checked against its own schema.

Resources (:mod:`memci.server._mcp_resources`) read the caller's sessions, their pages
and artifacts, without changing them.

Every tool takes an optional ``session``: the session of the caller's tenant the call
works in (made on first use). Without it a call goes to its connection's session (``memci
mcp --session``, the ``X-Memci-Session`` header), else to :data:`DEFAULT_SESSION`
(``default``). The tenant is never the call's to choose: it is the transport's (the
command's ``--tenant``, the API key over HTTP), see :class:`Caller`.

Blocking store work runs in worker threads, never on the event loop; tool calls in their
own few (:mod:`memci.server._threads`), so a long grep never holds up the other requests.

Every call is checked against what ``tools/list`` declares, as the MCP specification
(2025-11-25) says: a tool the session does not list (nor group under ``working_state``)
is a protocol error (JSON-RPC ``-32602``, invalid params); arguments that break the tool's
declared input schema (types, ranges, unknown properties: JSON Schema 2020-12, what the
schema says and nothing more) are a tool error (``isError``) whose text says what to fix,
so a model can correct itself. So is any other bad input; nothing is stored then, and no
bad input reaches a handler raw.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

import memci
from memci._dataclasses import dataclass
from memci._session import Session
from memci.engine import Engine
from memci.errors import InvalidInputError, MemciError
from memci.messages import offerable_tools
from memci.server import _mcp_resources as resources
from memci.server._config import DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_MCP_SESSION
from memci.server._json import jsonable
from memci.server._listing import hits_page, page_json
from memci.server._mcp_stdio import checked_stdio
from memci.server._threads import ToolThreads

__all__ = [
    "DEFAULT_SESSION",
    "Caller",
    "CallerOf",
    "OpenSession",
    "ReaderOf",
    "build_server",
    "create_mcp_server",
    "engine_reader",
    "run_stdio",
]

DEFAULT_SESSION = DEFAULT_MCP_SESSION


@dataclass(frozen=True, slots=True)
class Caller:
    """Who makes an MCP request: their tenant, their connection's session and user."""

    tenant: str
    session: str = DEFAULT_SESSION
    user: str | None = None


CallerOf = Callable[[ServerRequestContext[Any]], Caller]
"""Says who makes a request (from its transport: the CLI's options, the HTTP request)."""
OpenSession = Callable[[Caller, str], Session]
"""Gets or makes a session of the caller's tenant by name."""
ReaderOf = Callable[[Caller], resources.SessionReader]
"""Reads the caller's tenant's sessions, for resources (never makes one)."""

_OWN = ("add", "build", "search")
_SESSION_ARG: dict[str, Any] = {
    "type": "string", "minLength": 1, "maxLength": 200,
    "description": "The memci session to work in (default: the connection's session, "
                   f"else {DEFAULT_SESSION!r}). Made on first use."}
_SESSION_ONLY: dict[str, Any] = {"type": "object", "properties": {"session": _SESSION_ARG}}

_ADD = types.Tool(
    name="add",
    description="Store messages in the memci session (OpenAI or Anthropic format). Pass "
                "'messages' (a list), or one message as 'role' and 'content'.",
    input_schema={"type": "object", "properties": {
        "messages": {"type": "array", "items": {"type": "object"},
                     "description": "Messages, e.g. {\"role\": \"user\", \"content\": \"hi\"}."},
        "role": {"type": "string", "enum": ["system", "user", "assistant"]},
        "content": {"type": "string"}},
        "additionalProperties": False},
)
_BUILD = types.Tool(
    name="build",
    description="Build the context memci would send to the model now: a provider-ready "
                "payload and its token figures, as JSON.",
    input_schema={"type": "object", "properties": {
        "format": {"type": "string", "enum": ["openai", "anthropic"], "default": "openai"},
        "budget": {"type": "integer", "minimum": 1, "maximum": 2**40,
                   "description": "Token budget (default: the session's)."},
        "recipe": {"type": "string", "enum": ["auto", "chat", "tool_loop"]}},
        "additionalProperties": False},
)
_SEARCH = types.Tool(
    name="search",
    description="Search the session's memory for what was said or found before.",
    input_schema={"type": "object", "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 4000},
        "k": {"type": "integer", "minimum": 1, "maximum": 100},
        "offset": {"type": "integer", "minimum": 0, "maximum": 99,
                   "description": "Skip this many of the best hits (a next_offset)."}},
        "required": ["query"], "additionalProperties": False},
)


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=error)


def _add(session: Session, args: Mapping[str, Any]) -> str:
    messages = args.get("messages")
    if messages is None:
        if "role" not in args:
            raise InvalidInputError("pass 'messages' (a list) or 'role' and 'content'")
        messages = [{"role": args["role"], "content": args.get("content", "")}]
    if not isinstance(messages, list):
        raise InvalidInputError("'messages' must be a list of messages")
    stored = session.add_many(messages)
    return json.dumps({"stored": [{"seq": m.seq, "role": m.role} for m in stored],
                       "messages": session.count()})


def _build(session: Session, args: Mapping[str, Any]) -> str:
    fmt = args.get("format", "openai")
    if fmt not in ("openai", "anthropic"):
        raise InvalidInputError("'format' must be 'openai' or 'anthropic'")
    context = session.build(budget=args.get("budget"), recipe=args.get("recipe", "auto"))
    stats = jsonable(context.stats)
    stats["saved_tokens"] = context.stats.saved_tokens
    payload = context.to_openai() if fmt == "openai" else context.to_anthropic()
    return json.dumps({"format": fmt, "payload": payload, "stats": stats},
                      ensure_ascii=False)


def _search(session: Session, args: Mapping[str, Any], budget: int) -> str:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("'query' must be a non-empty string")
    offset = int(args.get("offset", 0))
    hits = session.search(query, k=min(offset + int(args.get("k", 10)), 100))
    page, next_offset = hits_page(hits, offset=offset, budget=budget)
    return page_json({}, "hits", page, {"next_offset": next_offset}).decode("utf-8")


def _with_session(tool: types.Tool) -> types.Tool:
    """``tool`` with the optional ``session`` argument every tool here takes."""
    schema = dict(tool.input_schema)
    schema["properties"] = {**dict(schema.get("properties") or {}), "session": _SESSION_ARG}
    return tool.model_copy(update={"input_schema": schema})


def _tool_list(session: Session, *, combined: bool = False) -> list[types.Tool]:
    """What ``tools/list`` declares; ``combined``: also the tools working_state lists."""
    tools = [_ADD, _BUILD, _SEARCH]
    specs = session.tool_specs(every=True)  # an MCP client lists tools once
    for spec in specs if combined else offerable_tools(specs):
        if spec.name not in _OWN:
            tools.append(types.Tool(name=spec.name, description=spec.description,
                                    input_schema=dict(spec.parameters)))
    return [_with_session(t) for t in tools]


def _run(session: Session, name: str, args: Mapping[str, Any],
         budget: int) -> types.CallToolResult:
    if name == "add":
        return _text(_add(session, args))
    if name == "build":
        return _text(_build(session, args))
    if name == "search":
        return _text(_search(session, args, budget))
    result = session.call_tool(name, dict(args))
    return _text(result, error=result.startswith("error:"))


def _invalid(name: str, problem: str) -> types.CallToolResult:
    return _text(f"error: invalid arguments for {name}: {problem}", error=True)


def _listed(session: Session, name: str) -> types.Tool:
    """The tool ``name`` as ``tools/list`` declares it; else JSON-RPC invalid params.

    A working-state tool listed as ``working_state`` is declared by its own schema.
    """
    tools = _tool_list(session, combined=True)
    for tool in tools:
        if tool.name == name:
            return tool
    shown = name if len(name) <= 60 else name[:57] + "..."
    raise MCPError(code=types.INVALID_PARAMS,
                   message=f"Unknown tool: {shown!r}; the tools of session {session.name!r} "
                           f"are {', '.join(t.name for t in tools)}")


def _schema_problem(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """What in ``arguments`` breaks the JSON ``schema`` (None: nothing)."""
    error = best_match(Draft202012Validator(schema).iter_errors(arguments))
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "arguments"
    message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
    return f"{where}: {message}"


def build_server(
    open_session: OpenSession, caller_of: CallerOf, *, instructions: str,
    reader_of: ReaderOf, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> Server[Any]:
    """An MCP server whose calls go to the session each call names.

    ``caller_of(ctx)`` says who calls (tenant, the connection's session, user);
    ``open_session(caller, name)`` gets or makes session ``name`` for that caller, and
    ``reader_of(caller)`` reads the caller's sessions for resources without making any.
    All run in worker threads; a caller never reaches a tenant other than its own, since
    they are given only the caller's. ``max_response_bytes`` is the byte budget of a page
    of search hits and of a resource.
    """
    tool_threads = ToolThreads()

    def listing(caller: Caller) -> list[types.Tool]:
        return _tool_list(open_session(caller, caller.session))

    def call(caller: Caller, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            # The session first: the tools (and so the schema) are the session's.
            problem = _schema_problem(_SESSION_ONLY, arguments)
            if problem is not None:
                return _invalid(name, problem)
            target = open_session(caller, arguments.pop("session", caller.session))
            problem = _schema_problem(_listed(target, name).input_schema,
                                      {**arguments, "session": target.name})
            if problem is not None:
                return _invalid(name, problem)
            return _run(target, name, arguments, max_response_bytes)
        except MemciError as exc:
            return _text(f"error: {type(exc).__name__}: {exc}", error=True)

    async def list_tools(
        ctx: ServerRequestContext[Any], __: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = caller_of(ctx)
        return types.ListToolsResult(
            tools=await anyio.to_thread.run_sync(lambda: listing(caller)))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = caller_of(ctx)
        arguments = dict(params.arguments or {})
        return await tool_threads.run(lambda: call(caller, params.name, arguments))

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        reader = reader_of(caller_of(ctx))
        cursor = params.cursor if params is not None else None
        return await anyio.to_thread.run_sync(lambda: resources.list_resources(reader, cursor))

    async def list_templates(
        _: ServerRequestContext[Any], __: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=resources.TEMPLATES)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        reader = reader_of(caller_of(ctx))
        return await anyio.to_thread.run_sync(
            lambda: resources.read_resource(reader, str(params.uri), max_response_bytes))

    return Server("memci", version=memci.__version__, instructions=instructions,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource)


def create_mcp_server(engine: Engine, session: str = DEFAULT_SESSION, *,
                      tenant: str = "default", user: str | None = None) -> Server[Any]:
    """An MCP server over ``engine`` for one tenant; calls go to ``session`` by default.

    Each call may name another session of the tenant (its ``session`` argument); a
    session is made on first use.
    """
    fixed = Caller(tenant=tenant, session=session, user=user)
    engine.session(session, tenant=tenant, user=user)  # a bad name or tenant fails now

    def open_session(caller: Caller, name: str) -> Session:
        return engine.session(name, tenant=caller.tenant, user=caller.user)

    return build_server(
        open_session, lambda _: fixed, reader_of=partial(engine_reader, engine),
        instructions=f"memci keeps conversations: add messages, build the context to send, "
                     f"search what was said. Calls work in session {session!r} unless they "
                     "name another with 'session'.")


def engine_reader(engine: Engine, caller: Caller) -> resources.SessionReader:
    """The caller's tenant's sessions in ``engine``, read without making any."""

    def find(name: str) -> Session | None:
        if engine.store.session(caller.tenant, name) is None:
            return None
        return engine.session(name, tenant=caller.tenant)

    return resources.SessionReader(
        find=find, names=lambda: [r.name for r in engine.sessions(caller.tenant)])


def run_stdio(db: str | Path | None, session: str = DEFAULT_SESSION, *,
              tenant: str = "default", user: str | None = None) -> None:
    """Serve over MCP on standard input and output until the client leaves."""
    engine = Engine.open(db)
    try:
        server = create_mcp_server(engine, session, tenant=tenant, user=user)

        async def main() -> None:
            async with checked_stdio() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
    finally:
        engine.close()
