"""The MCP server of ``memci mcp``: one session's tools for an MCP client.

Built on the official MCP SDK's low-level server, so the tool list follows the session
(``session.tools()`` changes with its strategy and features). Offered tools:

- ``add`` — store messages (``messages``: a list in OpenAI or Anthropic format, or one
  ``role`` and ``content``); answers the stored seqs;
- ``build`` — the context to send now (``format``, ``budget``, ``recipe``), as JSON;
- ``search`` — search the session's memory (``query``, ``k``);
- every tool of ``session.tools()`` (``recall_page``, pins, plan, ``artifact_get`` …),
  run with ``session.call_tool``.

Blocking store work runs in worker threads, never on the event loop; tool calls in their
own few (:mod:`memci.server._threads`), so a long grep never holds up the other requests.
Bad input is a tool error (``isError``) whose text says what to fix; nothing is stored then.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

import memci
from memci._session import Session
from memci.engine import Engine
from memci.errors import InvalidInputError, MemciError
from memci.server._json import hit_json, jsonable
from memci.server._threads import ToolThreads

__all__ = ["create_mcp_server", "run_stdio"]

_ADD = types.Tool(
    name="add",
    description="Store messages in the memci session (OpenAI or Anthropic format). Pass "
                "'messages' (a list), or one message as 'role' and 'content'.",
    input_schema={"type": "object", "properties": {
        "messages": {"type": "array", "items": {"type": "object"},
                     "description": "Messages, e.g. {\"role\": \"user\", \"content\": \"hi\"}."},
        "role": {"type": "string", "enum": ["system", "user", "assistant"]},
        "content": {"type": "string"}}},
)
_BUILD = types.Tool(
    name="build",
    description="Build the context memci would send to the model now: a provider-ready "
                "payload and its token figures, as JSON.",
    input_schema={"type": "object", "properties": {
        "format": {"type": "string", "enum": ["openai", "anthropic"], "default": "openai"},
        "budget": {"type": "integer", "minimum": 1,
                   "description": "Token budget (default: the session's)."},
        "recipe": {"type": "string", "enum": ["auto", "chat", "tool_loop"]}},
        "additionalProperties": False},
)
_SEARCH = types.Tool(
    name="search",
    description="Search the session's memory for what was said or found before.",
    input_schema={"type": "object", "properties": {
        "query": {"type": "string"}, "k": {"type": "integer", "minimum": 1, "maximum": 100}},
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


def _search(session: Session, args: Mapping[str, Any]) -> str:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError("'query' must be a non-empty string")
    hits = session.search(query, k=int(args.get("k", 10)))
    return json.dumps({"hits": [hit_json(h) for h in hits]}, ensure_ascii=False)


def create_mcp_server(engine: Engine, session: str, *, tenant: str = "default",
                      user: str | None = None) -> Server[Any]:
    """An MCP server for the session ``session`` of ``engine`` (made if it is new)."""
    target = engine.session(session, tenant=tenant, user=user)
    tool_threads = ToolThreads()

    def own_tools() -> list[types.Tool]:
        tools = [_ADD, _BUILD, _SEARCH]
        for spec in target.tool_specs(every=True):
            if spec.name not in ("add", "build", "search"):
                tools.append(types.Tool(name=spec.name, description=spec.description,
                                        input_schema=dict(spec.parameters)))
        return tools

    def call(name: str, args: Mapping[str, Any]) -> types.CallToolResult:
        try:
            if name == "add":
                return _text(_add(target, args))
            if name == "build":
                return _text(_build(target, args))
            if name == "search":
                return _text(_search(target, args))
            if name not in {s.name for s in target.tool_specs(every=True)}:
                return _text(f"error: {name!r} is not one of memci's tools here", error=True)
            result = target.call_tool(name, dict(args))
            return _text(result, error=result.startswith("error:"))
        except MemciError as exc:
            return _text(f"error: {type(exc).__name__}: {exc}", error=True)

    async def list_tools(
        _: ServerRequestContext[Any], __: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await anyio.to_thread.run_sync(own_tools))

    async def call_tool(
        _: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        return await tool_threads.run(lambda: call(params.name, arguments))

    return Server(
        "memci", version=memci.__version__,
        instructions=f"memci keeps the conversation of session {session!r}: add messages, "
                     "build the context to send, search what was said.",
        on_list_tools=list_tools, on_call_tool=call_tool,
    )


def run_stdio(db: str | Path | None, session: str, *, tenant: str = "default",
              user: str | None = None) -> None:
    """Serve ``session`` over MCP on standard input and output until the client leaves."""
    engine = Engine.open(db)
    try:
        server = create_mcp_server(engine, session, tenant=tenant, user=user)

        async def main() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(main)
    finally:
        engine.close()
