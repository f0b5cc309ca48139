"""A session's stored log: add messages (this makes the session), read them a page at a time.

``POST`` takes one message, a list, or an envelope with the session's user and settings
(checked by key, :func:`~memci.server._policy.request_settings`); every message is read
and checked before anything is stored, and all are stored in one transaction or none.
The answer and the listing are cut to the server's byte budget
(:mod:`memci.server._listing`).
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from memci.errors import InvalidMessageError
from memci.server._bodies import read_json
from memci.server._listing import messages_json, messages_page, page_response
from memci.server._openapi import EVERY_REQUEST, WITH_KEY, body_schema, error_responses, json_body
from memci.server._policy import request_settings
from memci.server._sessions import read_messages
from memci.server.routes._common import BIGGEST, Sid, State, Tenant

__all__ = ["router"]

router = APIRouter(tags=["messages"], responses=error_responses(*EVERY_REQUEST, *WITH_KEY, 400))

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
        if user is not None and (not isinstance(user, str) or not 1 <= len(user) <= 200):
            raise InvalidMessageError("'user' must be a non-empty string of at most 200 "
                                      "characters")
        return ((items if isinstance(items, list) else [items]), user,
                request_settings(body.get("settings")))
    if isinstance(body, dict):
        return [body], None, {}
    raise InvalidMessageError(
        "the body must be a message (an object with a role), a list of messages, or "
        '{"messages": [...], "user": ..., "settings": {...}}')


@router.post("/v1/sessions/{sid}/messages",
             summary="Add one message or a list (OpenAI or Anthropic format)",
             openapi_extra=json_body(
                 "One message, a list of messages, or {\"messages\": [...], \"user\": "
                 "\"u1\", \"settings\": {...}}; messages in OpenAI or Anthropic format, "
                 "as for session.add. All are stored, or none.", body_schema("messages"),
                 required=True),
             responses=error_responses(409, 501))
async def add_messages(
    request: Request, sid: Sid, tenant: Tenant, server: State,
    user: Annotated[str | None, Query(min_length=1, max_length=200,
                                      description="The session's user.")] = None,
) -> JSONResponse:
    items, body_user, settings = _split_body(await read_json(request))
    hub = server.hub

    def store() -> list[Any]:
        messages = read_messages(items, new_session=not hub.exists(tenant, sid))
        session = hub.open(tenant, sid, user=body_user or user, settings=settings)
        return session.add_many(messages)

    stored = await anyio.to_thread.run_sync(store)
    return JSONResponse({"session": sid,
                         "messages": messages_json(stored, server.config.max_response_bytes)})


@router.get("/v1/sessions/{sid}/messages",
            summary="The stored log, in order (seq after `after`), a page at a time",
            responses=error_responses(404))
def get_messages(
    sid: Sid, tenant: Tenant, server: State,
    after: Annotated[int, Query(ge=0, le=BIGGEST,
                                description="Only messages with seq > after.")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000, description="At most this many.")] = 1000,
) -> Response:
    session = server.hub.get(tenant, sid)
    page, next_after = messages_page(server.engine, session.record, after=after, limit=limit,
                                     budget=server.config.max_response_bytes)
    return page_response({"session": sid}, "messages", page, {"next_after": next_after})
