"""The tools a session offers the model.

They are recall_page, search_memory, the file and artifact tools, and the working-state
tools (pins, plan, notebook). The model is offered the working-state tools as one,
``working_state`` (cheaper than nine schemas); each of the nine stays callable by its own
name, and ``working_state`` with ``action`` set to a name runs exactly that tool: its
arguments are checked against that tool's own schema.

Each handler takes the session and the parsed arguments and answers with text for the
model; bad arguments come back as ``error: …`` (see :mod:`memci.tools._registry`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from memci.errors import MemciError
from memci.messages import ToolSpec, parse_timestamp
from memci.tools._file_specs import FILE_TOOL_SPECS
from memci.tools._host import ToolHost
from memci.tools._registry import Tool, ToolArgumentError, check_arguments, int_arg
from memci.workspace._tools import WORKING_STATE_SPEC, WORKSPACE_TOOL_SPECS, call_workspace_tool

__all__ = ["FILE_TOOLS", "RECALL_PAGE", "SEARCH_MEMORY", "WORKING_STATE", "WORKSPACE_TOOLS"]


def _recall_page(session: ToolHost, args: Mapping[str, Any]) -> str:
    page = int_arg(args, "index", minimum=1)
    return session.recall_page(page)


def _search_memory(session: ToolHost, args: Mapping[str, Any]) -> str:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolArgumentError("'query' must be a non-empty string")
    k = int_arg(args, "k", default=5, minimum=1)
    scope = args.get("scope", "session")
    if scope not in ("session", "user"):
        raise ToolArgumentError("'scope' must be 'session' or 'user'")
    since, until = (_date_arg(args, "since"), _date_arg(args, "until"))
    hits = session.search(query, k=min(k, 20) * (3 if since or until else 1), scope=scope)
    lines = []
    for hit in hits:
        at = hit.message.created_at
        if at is not None and ((since and at < since) or (until and at >= until)):
            continue
        when = at.strftime("%Y-%m-%d %H:%M") if at else "?"
        text = " ".join(hit.text.split())[:300]
        where = f"page {hit.page} · seq {hit.message.seq}" if hit.item is None else hit.source
        lines.append(f"- [{where} · {hit.message.role} · {when}] {text}")
        if len(lines) >= k:
            break
    if not lines:
        return f"no memory found for {query!r}"
    return f"{len(lines)} results for {query!r} (recall_page(index) shows a whole page):\n" + (
        "\n".join(lines))


def _date_arg(args: Mapping[str, Any], name: str) -> datetime | None:
    value = args.get(name)
    if value is None:
        return None
    try:
        return parse_timestamp(value)
    except MemciError as exc:
        raise ToolArgumentError(f"'{name}' must be an ISO 8601 date, e.g. 2026-11-01") from exc


SEARCH_MEMORY: Tool[ToolHost] = Tool(
    ToolSpec(
        "search_memory",
        "Search this conversation, archived pages too, or with scope user the user's other "
        "conversations; k results (default 5, at most 20), since/until ISO dates. Knows "
        "times like 'yesterday' or '上周'.",
        {"type": "object", "properties": {
            "query": {"type": "string"}, "k": {"type": "integer"},
            "scope": {"type": "string", "enum": ["session", "user"]},
            "since": {"type": "string"}, "until": {"type": "string"}},
         "required": ["query"], "additionalProperties": False},
    ),
    _search_memory,
)


RECALL_PAGE: Tool[ToolHost] = Tool(
    ToolSpec(
        "recall_page",
        "Bring page [Page N] of the contents page back into context, whole, from the next "
        "request on.",
        {"type": "object", "properties": {"index": {"type": "integer"}},
         "required": ["index"], "additionalProperties": False},
    ),
    _recall_page,
)


def _file_tool(session: ToolHost, name: str, args: Mapping[str, Any]) -> str:
    from memci.tools._files import call_file_tool  # with its confinement: when first called

    return call_file_tool(name, dict(args), roots=session.file_roots,
                          artifacts=session.artifacts).text


def _workspace_tool(session: ToolHost, name: str, args: Mapping[str, Any]) -> str:
    if name == "pin_add":
        session.record_round()  # a TTL in rounds counts from now
    result = call_workspace_tool(session.work_state(), name, dict(args))
    return result.text


def _named(
    run: Callable[[ToolHost, str, Mapping[str, Any]], str], name: str
) -> Callable[[ToolHost, Mapping[str, Any]], str]:
    return lambda session, args: run(session, name, args)


FILE_TOOLS: dict[str, Tool[ToolHost]] = {
    spec.name: Tool(spec, _named(_file_tool, spec.name)) for spec in FILE_TOOL_SPECS
}
WORKSPACE_TOOLS: dict[str, Tool[ToolHost]] = {
    spec.name: Tool(spec, _named(_workspace_tool, spec.name)) for spec in WORKSPACE_TOOL_SPECS
}


def _working_state(session: ToolHost, args: Mapping[str, Any]) -> str:
    rest = {k: v for k, v in args.items() if k != "action"}
    tool = WORKSPACE_TOOLS[args["action"]]  # the schema's enum: one of their names
    return tool.handler(session, check_arguments(tool.spec.parameters, rest))


WORKING_STATE: Tool[ToolHost] = Tool(WORKING_STATE_SPEC, _working_state)

