"""memci's own tools in a session, and what they keep: working state and artifacts.

A tool call runs in the server's tool threads (:mod:`memci.server._threads`), never on
the event loop, so a slow one (a grep at its deadline) cannot hold the other routes. A
tool the session does not offer answers 404, as does an artifact it cannot read.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from memci.server._bodies import read_json
from memci.server._errors import ApiError
from memci.server._openapi import EVERY_REQUEST, WITH_KEY, error_responses, json_body
from memci.server.routes._common import BIGGEST, Sid, State, Tenant, offered
from memci.tools._builtin import (
    FILE_TOOLS,
    RECALL_PAGE,
    SEARCH_MEMORY,
    WORKING_STATE,
    WORKSPACE_TOOLS,
)
from memci.workspace import parse_artifact_ref

__all__ = ["router"]

router = APIRouter(tags=["tools"], responses=error_responses(*EVERY_REQUEST, *WITH_KEY, 400, 404))

_TOOL_NAMES = [RECALL_PAGE.spec.name, SEARCH_MEMORY.spec.name, *FILE_TOOLS,
               WORKING_STATE.spec.name, *WORKSPACE_TOOLS]


@router.get("/v1/sessions/{sid}/tools", summary="memci's tools in this session")
def list_tools(
    sid: Sid, tenant: Tenant, server: State,
    format: Annotated[Literal["openai", "anthropic"], Query(
        description="Schema format.")] = "openai",
    every: Annotated[bool, Query(
        description="All the tools the session can run, not only those offered to the "
                    "model now.")] = False,
) -> JSONResponse:
    session = server.hub.get(tenant, sid)
    return JSONResponse({"session": sid, "tools": session.tools(format, every=every)})


# Named apart from its function: "call_tool" is the operation id the OpenAPI document
# keeps, and memci.integrations defines the public function call_tool.
@router.post("/v1/sessions/{sid}/tools/{name}", name="call_tool",
             summary="Run one of memci's tools (JSON arguments)",
             openapi_extra=json_body("The tool's arguments as a JSON object.",
                                     {"type": "object"}))
async def call_session_tool(
    request: Request, sid: Sid, tenant: Tenant, server: State,
    name: Annotated[str, Path(max_length=100, description="The tool's name.",
                              json_schema_extra={"enum": _TOOL_NAMES})],
) -> JSONResponse:
    arguments = await read_json(request)
    if arguments is not None and not isinstance(arguments, dict):
        raise ApiError(400, "invalid_arguments", "the tool's arguments must be a JSON object")

    def run() -> str:
        session = server.hub.get(tenant, sid)
        names = offered(session, every=True)
        if name not in names:
            raise ApiError(404, "unknown_tool",
                           f"{name!r} is not a tool of this session; its tools: "
                           f"{', '.join(names) or 'none'}")
        return session.call_tool(name, arguments or {})

    result = await server.tool_threads.run(run)
    return JSONResponse({"session": sid, "tool": name, "result": result,
                         "is_error": result.startswith("error:")})


@router.get("/v1/sessions/{sid}/state",
            summary="Working state: pins and plan (when the session offers them)")
def working_state(sid: Sid, tenant: Tenant, server: State) -> JSONResponse:
    session = server.hub.get(tenant, sid)
    names = offered(session, every=True)
    state: dict[str, Any] = {"session": sid}
    for key, tool in (("pins", "pin_list"), ("plan", "plan_list")):
        state[key] = session.call_tool(tool, {}) if tool in names else None
    state["tools"] = [n for n in names if n.startswith(("pin_", "plan_", "notebook_"))]
    return JSONResponse(state)


@router.get("/v1/sessions/{sid}/artifacts/{artifact_id}",
            summary="Read a stored tool output (artifact) by id")
def get_artifact(
    sid: Sid, tenant: Tenant, server: State,
    artifact_id: Annotated[str, Path(max_length=80,
                                     description="The id in `artifact:<id>`.")],
    offset: Annotated[int, Query(ge=0, le=BIGGEST, description="First character.")] = 0,
    length: Annotated[int, Query(ge=1, le=1_000_000, description="Characters.")] = 4000,
) -> JSONResponse:
    session = server.hub.get(tenant, sid)
    if "artifact_get" not in offered(session, every=True):
        raise ApiError(404, "not_offered", "this session offers no artifact_get tool")
    text = session.call_tool("artifact_get",
                             {"id": artifact_id, "offset": offset, "length": length})
    if text.startswith("error:"):
        raise ApiError(404, "unknown_artifact", text.removeprefix("error:").strip())
    end = offset + len(text)
    chars = session.artifacts.get(parse_artifact_ref(artifact_id)).chars
    return JSONResponse({"session": sid, "id": artifact_id, "offset": offset, "text": text,
                         "next_offset": end if end < chars else None})
