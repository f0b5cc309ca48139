"""``GET /healthz``: the server answers (no key needed, no store read)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

import memci
from memci.server._openapi import EVERY_REQUEST, error_responses

__all__ = ["router"]

router = APIRouter(tags=["server"], responses=error_responses(*EVERY_REQUEST))


@router.get("/healthz", summary="Liveness: the server answers")
def healthz() -> JSONResponse:
    return JSONResponse({"status": "ok", "version": memci.__version__})
