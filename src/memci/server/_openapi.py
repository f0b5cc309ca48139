"""What the OpenAPI document (``/openapi.json``) says beyond what FastAPI derives.

Bodies that routes read by hand (:func:`~memci.server._bodies.read_json`) are described
with :func:`json_body`; the message and context bodies carry the JSON schemas of
:mod:`memci.server._models`, whose shared definitions :func:`openapi_of` adds to the
document's components. Every route lists the error answers of :data:`ERRORS`, and none
lists FastAPI's 422: failed validation answers 400 (see :mod:`memci.server._app`).
"""

from __future__ import annotations

from copy import deepcopy
from functools import cache
from typing import Any

from fastapi import FastAPI
from pydantic import TypeAdapter

from memci.server._models import ContextRequest, ErrorAnswer, MessagesBody

__all__ = ["ERRORS", "body_schema", "json_body", "openapi_of"]

_REF = "#/components/schemas/{model}"

ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorAnswer, "description": what} for status, what in (
        (400, "Bad input: the message says what to fix; nothing was stored."),
        (401, "No API key, or an unknown or revoked one."),
        (404, "Unknown session, tool, artifact or route."),
        (409, "The session belongs to another user (owner_conflict); nothing was stored."),
        (413, "The body is over the server's limit."),
        (503, "The store cannot be written."))}
"""The error answers every route under ``/v1`` documents."""


@cache
def _schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON schemas of the message and context bodies, with their shared definitions."""
    messages = TypeAdapter(MessagesBody).json_schema(ref_template=_REF)
    context = ContextRequest.model_json_schema(ref_template=_REF)
    defs = {**messages.pop("$defs", {}), **context.pop("$defs", {})}
    return {"messages": messages, "context": context}, defs


def body_schema(name: str) -> dict[str, Any]:
    """The JSON schema of the ``"messages"`` or ``"context"`` body (a copy of its own)."""
    return deepcopy(_schemas()[0][name])


def json_body(description: str, schema: dict[str, Any] | None = None,
              required: bool = False) -> dict[str, Any]:
    """OpenAPI for a JSON body read by hand (any JSON value unless a schema is given)."""
    return {"requestBody": {"required": required, "description": description,
                            "content": {"application/json": {"schema": schema or {}}}}}


def openapi_of(app: FastAPI) -> dict[str, Any]:
    """``app``'s OpenAPI document, made once: FastAPI's, with the bodies' definitions."""
    if app.openapi_schema is None:
        schema = FastAPI.openapi(app)
        schema.setdefault("components", {}).setdefault("schemas", {}).update(
            deepcopy(_schemas()[1]))
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                # Failed validation answers 400 (see _app), never FastAPI's 422.
                operation.get("responses", {}).pop("422", None)
        for unused in ("HTTPValidationError", "ValidationError"):
            schema["components"]["schemas"].pop(unused, None)
        app.openapi_schema = schema
    return app.openapi_schema
