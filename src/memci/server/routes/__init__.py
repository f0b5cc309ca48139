"""The routes of ``memci serve``, one FastAPI router per resource.

==============  =================================================================
``health``      ``GET /healthz``
``sessions``    ``GET /v1/sessions``, ``GET /v1/sessions/{sid}``, ``…/stats``
``messages``    ``POST`` and ``GET /v1/sessions/{sid}/messages``
``context``     ``POST /v1/sessions/{sid}/context``
``search``      ``GET /v1/sessions/{sid}/search``
``tools``       memci's tools, the working state, artifacts
``deleting``    the ``DELETE`` routes and ``GET /v1/erasures``
``proxy``       ``POST /v1/chat/completions``, ``POST /v1/messages``
``ui``          the inspector: ``/ui`` and its reads (``/v1/ui/sessions``, ``…/peek`` …)
``mcp``         ``/mcp`` (made per app: :func:`~memci.server.routes.mcp.mcp_router`)
==============  =================================================================

A router holds no state: its routes read the app's
:class:`~memci.server._state.ServerState`, the caller's tenant and the shared parameter
types through the dependencies of :mod:`memci.server.routes._common`. A route function
carries no docstring, since FastAPI would publish it as the operation's description;
its ``summary`` says what it does. Its name is the operation id's first part, so it
stays as the OpenAPI document has it (``name=`` keeps it where the function is named
apart).
"""

from __future__ import annotations

from fastapi import APIRouter

from memci.server.routes import (
    context,
    deleting,
    health,
    messages,
    proxy,
    search,
    sessions,
    tools,
    ui,
)
from memci.server.routes.mcp import mcp_router

__all__ = ["ROUTERS", "mcp_router"]

ROUTERS: tuple[APIRouter, ...] = (
    health.router, sessions.router, messages.router, context.router, search.router,
    tools.router, deleting.router, proxy.router, ui.router,
)
"""Every router but ``/mcp``'s, in the order the app includes them."""
