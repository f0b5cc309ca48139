"""``POST …/context``: build a session's context, a provider-ready payload and its figures.

The build runs in the server's thread pool; the body (all optional: budget, recipe,
format) is checked by :class:`~memci.server._models.ContextRequest`.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from memci.server._bodies import read_json
from memci.server._errors import ApiError, problems
from memci.server._json import jsonable
from memci.server._models import ContextRequest
from memci.server._openapi import EVERY_REQUEST, WITH_KEY, body_schema, error_responses, json_body
from memci.server.routes._common import Sid, State, Tenant

__all__ = ["router"]

router = APIRouter(tags=["context"],
                   responses=error_responses(*EVERY_REQUEST, *WITH_KEY, 400, 404, 501))


@router.post("/v1/sessions/{sid}/context",
             summary="Build the context: a provider-ready payload and its figures",
             openapi_extra=json_body("What to build (all optional).", body_schema("context")))
async def build_context(request: Request, sid: Sid, tenant: Tenant,
                        server: State) -> JSONResponse:
    try:
        asked = ContextRequest.model_validate(await read_json(request) or {})
    except ValidationError as exc:
        raise ApiError(400, "invalid_request", problems(exc.errors())) from exc

    def build() -> dict[str, Any]:
        session = server.hub.get(tenant, sid)
        context = session.build(budget=asked.budget, recipe=asked.recipe)
        payload = (context.to_openai() if asked.format == "openai"
                   else context.to_anthropic())
        stats = jsonable(context.stats)
        stats["saved_tokens"] = context.stats.saved_tokens
        return {"session": sid, "format": asked.format, "payload": payload, "stats": stats}

    return JSONResponse(await anyio.to_thread.run_sync(build))
