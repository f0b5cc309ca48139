"""The model proxies: OpenAI chat completions and Anthropic messages, with memci's context.

The turn itself is :class:`~memci.server._proxy.ChatProxy`'s; these routes name the
session (``X-Memci-Session``, required) and the user (``X-Memci-User``) and pass the body
and the Anthropic headers on.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import Response

from memci.server._bodies import read_json
from memci.server._errors import ApiError
from memci.server.routes._common import State, Tenant

__all__ = ["router"]

router = APIRouter(tags=["proxy"])


def proxy_session(session_name: Annotated[str | None, Header(
        alias="X-Memci-Session", description="The memci session of this conversation.")
] = None) -> str:
    """The session named by ``X-Memci-Session``; 400 without one."""
    if not session_name:
        raise ApiError(400, "missing_session",
                       "send the memci session name in the 'X-Memci-Session' header")
    return session_name


ProxySession = Annotated[str, Depends(proxy_session)]
ProxyUser = Annotated[str | None, Header(alias="X-Memci-User",
                                         description="The session's user.")]


@router.post("/v1/chat/completions",
             summary="OpenAI-compatible chat completions with memci's context")
async def chat_completions(
    request: Request, tenant: Tenant, session_name: ProxySession, server: State,
    user: ProxyUser = None,
) -> Response:
    return await server.proxy.openai(tenant, session_name, user, await read_json(request))


@router.post("/v1/messages", summary="Anthropic-compatible messages with memci's context")
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
