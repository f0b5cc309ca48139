"""``/mcp``: MCP over Streamable HTTP (:mod:`memci.server._mcp_http`), or 501 without it.

The endpoint is the app's own (it holds the app's MCP sessions), so this router is made
per app, around the endpoint of its :class:`~memci.server._state.ServerState`. It is an
ASGI app of its own, out of the OpenAPI document: Starlette hands it the request's scope
as is, behind the same body limit as every route.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from starlette.routing import Route

from memci.errors import MissingExtraError
from memci.server._errors import classify, error_response

if TYPE_CHECKING:
    from memci.server._mcp_http import McpEndpoint

__all__ = ["mcp_router"]

_METHODS = ["GET", "POST", "DELETE"]


def mcp_router(endpoint: McpEndpoint | None) -> APIRouter:
    """The router of ``/mcp``: ``endpoint`` itself, or a 501 without ``memci[mcp]``."""
    router = APIRouter()
    if endpoint is not None:
        router.routes.append(Route("/mcp", endpoint, methods=_METHODS, include_in_schema=False))
    else:
        router.add_api_route("/mcp", mcp_missing, methods=_METHODS, include_in_schema=False)
    return router


def mcp_missing() -> JSONResponse:
    """What ``/mcp`` answers without ``memci[mcp]`` installed: 501, naming the extra."""
    return error_response(classify(MissingExtraError("mcp", "mcp", "MCP over HTTP (/mcp)")))
