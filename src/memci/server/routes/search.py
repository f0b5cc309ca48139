"""``GET …/search``: search a session's memory (or its user's, or its tenant's), a page at a time.

A time in the query ("yesterday") counts from ``now`` when given; a ``now`` that cannot
be compared with stored times is refused (400). Hits are cut to the server's byte budget
(:mod:`memci.server._listing`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response

from memci.server._errors import ApiError
from memci.server._listing import hits_page, page_response
from memci.server._openapi import EVERY_REQUEST, WITH_KEY, error_responses
from memci.server.routes._common import Sid, State, Tenant

__all__ = ["router"]

router = APIRouter(tags=["search"],
                   responses=error_responses(*EVERY_REQUEST, *WITH_KEY, 400, 404, 501))


def _moment(now: datetime | None) -> datetime | None:
    """``now`` of a search, refused (400) when it cannot be compared with stored times."""
    if now is None:
        return None
    try:
        return now.astimezone(UTC) if now.tzinfo is not None else now.replace(tzinfo=UTC)
    except (OverflowError, ValueError) as exc:
        raise ApiError(400, "invalid_request",
                       f"now: {now.isoformat()} is out of range; give a date-time between "
                       "0001-01-01 and 9999-12-31 in UTC") from exc


# Named apart from its function: "search" is the operation id the OpenAPI document keeps,
# and memci.memory defines the public function search.
@router.get("/v1/sessions/{sid}/search", name="search", summary="Search the session's memory")
def search_session(
    sid: Sid, tenant: Tenant, server: State,
    q: Annotated[str, Query(min_length=1, max_length=4000, description="What to look for.")],
    k: Annotated[int, Query(ge=1, le=100, description="How many hits.")] = 10,
    offset: Annotated[int, Query(ge=0, le=99, description=(
        "Skip this many of the best hits: the next_offset of the page before."))] = 0,
    scope: Annotated[Literal["session", "user", "tenant"], Query(
        description="Search this session, every session of its user, or every session "
                    "of the key's tenant.")] = "session",
    now: Annotated[datetime | None, Query(
        description="ISO 8601 date-time a time in q (\"yesterday\") counts from;"
                    " the server's clock by default.")] = None,
) -> Response:
    hits = server.hub.get(tenant, sid).search(q, k=min(offset + k, 100), scope=scope,
                                              now=_moment(now))
    page, next_offset = hits_page(hits, offset=offset, budget=server.config.max_response_bytes)
    return page_response({"session": sid, "query": q}, "hits", page,
                         {"next_offset": next_offset})
