"""How errors leave the server: one JSON shape, one status per kind of error.

Every error answer is ``{"error": {"code": "...", "message": "..."}}``. memci's own errors
map by kind: the caller's mistakes (:class:`~memci.errors.InvalidInputError`) are 400, an
unknown session, message or tool 404, a session asked for as another user than its own 409
(``owner_conflict``), a missing optional part 501, a store that cannot be read or
written 503 (``store_full`` when the disk is full, ``store_corrupt`` when its file is
damaged, else ``store_unavailable``), an upstream model that fails 502; anything else is a
500 that says nothing internal. A request that fails validation is a 400
(``invalid_request``) whose message names the first few problems (:func:`problems`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starlette.responses import JSONResponse

from memci._lazy import LazyPattern
from memci.errors import (
    ConfigError,
    InvalidInputError,
    LLMError,
    MemciError,
    MissingExtraError,
    OwnerConflictError,
    StoreCorruptError,
    StoreError,
    StoreFullError,
    TokenizerUnavailableError,
    UnknownMessageError,
    UnknownSessionError,
    UnknownToolError,
)

__all__ = ["ApiError", "classify", "error_body", "error_response", "problems"]


_WORD_START = LazyPattern(r"(?<!^)(?=[A-Z])")  # a capital inside a name


class ApiError(Exception):
    """An answer other than 2xx, with its status, code, message and headers of its own."""

    def __init__(self, status: int, code: str, message: str,
                 headers: Mapping[str, str] | None = None) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})
        super().__init__(f"{status} {code}: {message}")


def error_body(code: str, message: str) -> dict[str, Any]:
    """The JSON body of every error answer."""
    return {"error": {"code": code, "message": message}}


def error_response(exc: ApiError) -> JSONResponse:
    """The HTTP answer of ``exc``, with its headers (a 401 without any asks for a key)."""
    headers = exc.headers
    if exc.status == 401 and "WWW-Authenticate" not in headers:
        headers = {**headers, "WWW-Authenticate": 'Bearer realm="memci"'}
    return JSONResponse(error_body(exc.code, exc.message), status_code=exc.status,
                        headers=headers or None)


def problems(errors: Sequence[Any]) -> str:
    """Validation errors (pydantic's) as one line: ``where: what`` for the first few."""
    found = []
    for error in list(errors)[:5]:
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        found.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(found) or "invalid request"


def _snake(name: str) -> str:
    name = name.removesuffix("Error") or name
    return _WORD_START.sub("_", name).lower()


def classify(exc: MemciError) -> ApiError:
    """The HTTP answer for one of memci's errors."""
    if isinstance(exc, UnknownSessionError):
        return ApiError(404, "unknown_session", str(exc))
    if isinstance(exc, UnknownMessageError):
        return ApiError(404, "unknown_message", str(exc))
    if isinstance(exc, UnknownToolError):
        return ApiError(404, "unknown_tool", str(exc))
    if isinstance(exc, OwnerConflictError):
        return ApiError(409, "owner_conflict", str(exc))
    if isinstance(exc, ConfigError | TokenizerUnavailableError):
        return ApiError(400, "invalid_setting", str(exc))
    if isinstance(exc, InvalidInputError):
        return ApiError(400, _snake(type(exc).__name__), str(exc))
    if isinstance(exc, MissingExtraError):
        return ApiError(501, "missing_extra", str(exc))
    if isinstance(exc, StoreFullError):
        return ApiError(503, "store_full", str(exc))
    if isinstance(exc, StoreCorruptError):
        return ApiError(503, "store_corrupt", str(exc))
    if isinstance(exc, StoreError):
        return ApiError(503, "store_unavailable", str(exc))
    if isinstance(exc, LLMError):
        return ApiError(502, "upstream_error", str(exc))
    return ApiError(500, _snake(type(exc).__name__), str(exc))
