"""The tenant's sessions: list them, and read one's summary and stats.

Reads never create a session: an unknown one answers 404. The listing is cut to the
server's byte budget (:mod:`memci.server._listing`) and says where the next page starts.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from memci.server._json import jsonable
from memci.server._listing import page_response, sessions_page
from memci.server._openapi import EVERY_REQUEST, WITH_KEY, error_responses
from memci.server.routes._common import BIGGEST, Sid, State, Tenant, offered

__all__ = ["router"]

router = APIRouter(tags=["sessions"], responses=error_responses(*EVERY_REQUEST, *WITH_KEY, 400))


@router.get("/v1/sessions", summary="The tenant's sessions, oldest first, a page at a time")
def list_sessions(
    tenant: Tenant, server: State,
    after: Annotated[int, Query(ge=0, le=BIGGEST, description=(
        "Where to continue: the next_after of the page before."))] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000, description="At most this many.")] = 1000,
) -> Response:
    page, next_after = sessions_page(server.engine, tenant, after=after, limit=limit,
                                     budget=server.config.max_response_bytes)
    return page_response({}, "sessions", page, {"next_after": next_after})


@router.get("/v1/sessions/{sid}", summary="A session's state summary",
            responses=error_responses(404))
def get_session(sid: Sid, tenant: Tenant, server: State) -> JSONResponse:
    session = server.hub.get(tenant, sid)
    stats = session.stats()
    return JSONResponse({
        "session": session.name, "user": session.user,
        "created_at": session.record.created_at.isoformat(),
        "messages": session.count(), "pages": stats.pages,
        "settings": jsonable(session.record.settings),
        "stats": jsonable(stats), "tools": offered(session),
    })


@router.get("/v1/sessions/{sid}/stats", summary="A session's stats",
            responses=error_responses(404))
def get_stats(sid: Sid, tenant: Tenant, server: State) -> JSONResponse:
    session = server.hub.get(tenant, sid)
    return JSONResponse({"session": sid, **jsonable(session.stats())})
