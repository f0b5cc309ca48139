"""The model proxies: OpenAI chat completions and Anthropic messages, with memci's context.

The turn itself is :class:`~memci.server._proxy.ChatProxy`'s; these routes name the
session (``X-Memci-Session``, required) and the user (``X-Memci-User``) and pass the body
and the Anthropic headers on.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import Response

from memci.server._bodies import read_json
from memci.server._errors import ApiError
from memci.server._openapi import (
    EVERY_REQUEST,
    WITH_KEY,
    body_schema,
    errors_or_upstream,
    json_body,
)
from memci.server.routes._common import State, Tenant

__all__ = ["router"]

router = APIRouter(tags=["proxy"], responses={
    **errors_or_upstream(*EVERY_REQUEST, *WITH_KEY, 400, 409, 501, 502, 504),
    "default": {"description": "The upstream model's own error answer, passed through with "
                               "its status and body.",
                "content": {"application/json": {"schema": {"type": "object"}}}}})

_SESSION_HEADER: dict[str, Any] = {
    "name": "X-Memci-Session", "in": "header", "required": True,
    "description": "The memci session of this conversation (a 400 missing_session without "
                   "it).",
    "schema": {"type": "string", "minLength": 1, "maxLength": 200}}
_ANSWER: dict[int | str, dict[str, Any]] = {200: {
    "description": "The model's answer: JSON, or server-sent events with `stream: true`.",
    "content": {"application/json": {"schema": {"type": "object"}},
                "text/event-stream": {"schema": {"type": "string"}}}}}


def _documented(body: str, description: str) -> dict[str, Any]:
    """The operation's body and its required session header, as the document shows them."""
    return {**json_body(description, body_schema(body), required=True),
            "parameters": [_SESSION_HEADER]}


def proxy_session(session_name: Annotated[str | None, Header(
        alias="X-Memci-Session", include_in_schema=False)] = None) -> str:
    """The session named by ``X-Memci-Session``; 400 without one."""
    if not session_name:
        raise ApiError(400, "missing_session",
                       "send the memci session name in the 'X-Memci-Session' header")
    if len(session_name) > 200:
        raise ApiError(400, "invalid_request",
                       "X-Memci-Session must be a session name of at most 200 characters")
    return session_name


ProxySession = Annotated[str, Depends(proxy_session)]
ProxyUser = Annotated[str | None, Header(alias="X-Memci-User", min_length=1, max_length=200,
                                         description="The session's user.")]


@router.post("/v1/chat/completions",
             summary="OpenAI-compatible chat completions with memci's context",
             responses=_ANSWER, response_class=Response,
             openapi_extra=_documented("chat", "An OpenAI Chat Completions request."))
async def chat_completions(
    request: Request, tenant: Tenant, session_name: ProxySession, server: State,
    user: ProxyUser = None,
) -> Response:
    return await server.proxy.openai(tenant, session_name, user, await read_json(request))


@router.post("/v1/messages", summary="Anthropic-compatible messages with memci's context",
             responses=_ANSWER, response_class=Response,
             openapi_extra=_documented("anthropic", "An Anthropic Messages request."))
async def messages(
    request: Request, tenant: Tenant, session_name: ProxySession, server: State,
    user: ProxyUser = None,
    anthropic_version: Annotated[str | None, Header(
        alias="anthropic-version", description="Passed to the upstream.")] = None,
    anthropic_beta: Annotated[str | None, Header(
        alias="anthropic-beta", description="Passed to the upstream.")] = None,
) -> Response:
    return await server.proxy.anthropic(tenant, session_name, user, await read_json(request),
                                        anthropic_version, anthropic_beta)
