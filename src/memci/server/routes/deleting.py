"""Deleting (docs/deleting.md): a message, a session's messages, a session, a user.

Every deletion stays within the key's tenant and is recorded in the tenant's audit log
(``GET /v1/erasures``: ids and counts, never content) with who asked (the key's
fingerprint, :data:`~memci.server.routes._common.Actor`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse

import memci
from memci.server._errors import ApiError
from memci.server._json import message_json
from memci.server._listing import messages_json
from memci.server._openapi import EVERY_REQUEST, WITH_KEY, error_responses
from memci.server.routes._common import BIGGEST, Actor, Sid, State, Tenant

__all__ = ["router"]

router = APIRouter(tags=["deleting"], responses=error_responses(*EVERY_REQUEST, *WITH_KEY, 400))


def _erasure_json(erasure: memci.Erasure) -> dict[str, Any]:
    # "scrub": "pending" — the deletion is committed; its bytes leave the files with
    # the next scrub (docs/deleting.md).
    scrubbed = erasure.scrubbed
    return {"id": erasure.id, "at": erasure.at.isoformat(), "actor": erasure.actor,
            "action": erasure.action, "user_sha256": erasure.user,
            "sessions": len(erasure.sessions), "counts": dict(erasure.counts),
            "scrub": "pending" if scrubbed is None else "done",
            "scrubbed": None if scrubbed is None else scrubbed.isoformat()}


# "last" before "{seq}": the newest message has its own route.
@router.delete("/v1/sessions/{sid}/messages/last",
               summary="Delete the newest message (a cancelled turn)",
               responses=error_responses(404))
def pop_message(sid: Sid, tenant: Tenant, actor: Actor, server: State) -> JSONResponse:
    message = server.hub.get(tenant, sid).pop(actor=actor)
    return JSONResponse({"session": sid, "removed": [message_json(message)]})


@router.delete("/v1/sessions/{sid}/messages/{seq}",
               summary="Delete one message (and the results of its tool calls)",
               responses=error_responses(404))
def retract_message(
    sid: Sid, tenant: Tenant, actor: Actor, server: State,
    seq: Annotated[int, Path(ge=1, le=BIGGEST, description="The message's seq.")],
) -> JSONResponse:
    removed = server.hub.get(tenant, sid).retract(seq, actor=actor)
    return JSONResponse({"session": sid,
                         "removed": messages_json(removed, server.config.max_response_bytes)})


@router.delete("/v1/sessions/{sid}/messages",
               summary="Delete every message of the session (it stays, empty)",
               responses=error_responses(404))
def clear_session(sid: Sid, tenant: Tenant, actor: Actor, server: State) -> JSONResponse:
    removed = server.hub.get(tenant, sid).clear(actor=actor)
    return JSONResponse({"session": sid, "removed": removed})


@router.delete("/v1/sessions/{sid}", summary="Delete the session and everything of it",
               responses=error_responses(404))
def delete_session(sid: Sid, tenant: Tenant, actor: Actor, server: State) -> JSONResponse:
    if not server.hub.exists(tenant, sid):
        raise ApiError(404, "unknown_session", f"no session {sid!r}")
    erasure = server.hub.delete(tenant, sid, actor=actor)
    return JSONResponse({"session": sid, "erasure": _erasure_json(erasure)})


@router.delete("/v1/users/{user}",
               summary="Erase everything of a user of the key's tenant; leave no trace")
def erase_user(
    tenant: Tenant, actor: Actor, server: State,
    user: Annotated[str, Path(min_length=1, max_length=200, description="The user.")],
) -> JSONResponse:
    erasure = server.hub.erase_user(tenant, user, actor=actor)
    return JSONResponse({"user": user, "erasure": _erasure_json(erasure)})


@router.get("/v1/erasures",
            summary="The tenant's audit log of deletions (ids and counts, no content)")
def erasures(
    tenant: Tenant, server: State,
    limit: Annotated[int, Query(ge=1, le=10_000, description="At most this many.")] = 100,
) -> JSONResponse:
    return JSONResponse({"erasures": [_erasure_json(e)
                                      for e in server.engine.erasures(tenant, limit=limit)]})
