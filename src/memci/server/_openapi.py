"""What the OpenAPI document (``/openapi.json``) says beyond what FastAPI derives.

Bodies that routes read by hand (:func:`~memci.server._bodies.read_json`) are described
with :func:`json_body`; the message, context and proxy bodies carry the JSON schemas of
:mod:`memci.server._models`, whose shared definitions :func:`openapi_of` adds to the
document's components. Every operation lists every status it can answer (:func:`errors`,
from :data:`ANSWERS`), each with the one error shape, and none lists FastAPI's 422:
failed validation answers 400 (see :mod:`memci.server._app`). The document is valid
OpenAPI 3.1 (``tests/test_openapi.py`` checks it with openapi-spec-validator and runs
schemathesis's default checks against a real ``memci serve``).
"""

from __future__ import annotations

from copy import deepcopy
from functools import cache
from typing import Any

from fastapi import FastAPI
from pydantic import TypeAdapter

from memci.server._models import (
    AnthropicRequest,
    ChatRequest,
    ContextRequest,
    ErrorAnswer,
    MessagesBody,
)

__all__ = ["ANSWERS", "EVERY_REQUEST", "WITH_KEY", "body_schema", "error_responses",
           "errors_or_upstream", "json_body", "openapi_of"]

_REF = "#/components/schemas/{model}"

ANSWERS: dict[int, str] = {
    400: "Bad input: the message says what to fix; nothing was stored.",
    401: "No API key, or an unknown or revoked one (the server takes static API keys, "
         "not OAuth).",
    403: "A browser page's Origin the operator does not allow (forbidden_origin).",
    404: "Unknown session, message, tool or artifact.",
    409: "The session belongs to another user (owner_conflict); nothing was stored.",
    413: "The body is over the server's limit.",
    421: "A Host the server does not answer to, without API keys (misdirected_request).",
    500: "An unexpected error (the answer says nothing internal).",
    501: "An optional part the request needs is not installed (missing_extra).",
    502: "The upstream model failed, could not be reached or sent an unreadable reply.",
    503: "The store cannot be read or written (or the proxy has no upstream model).",
    504: "The upstream model did not answer in time.",
}
"""What each error status means, for every operation that can answer it."""

EVERY_REQUEST = (403, 413, 421, 500)
"""What any request can be answered, before or outside its route (:mod:`._origins`)."""
WITH_KEY = (401, 503)
"""What a route that checks the API key can answer (the key store may be unreadable)."""


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI responses of ``statuses`` (from :data:`ANSWERS`), in the error shape."""
    return {status: {"model": ErrorAnswer, "description": ANSWERS[status]}
            for status in sorted(set(statuses))}


def errors_or_upstream(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Like :func:`errors`, for the proxies, whose upstream's errors pass through.

    Each status may be memci's error or the upstream model's own, with its body (any JSON
    object: OpenAI's or Anthropic's shape).
    """
    either = {"anyOf": [{"$ref": _REF.format(model="ErrorAnswer")}, {"type": "object"}]}
    return {status: {"description": f"{ANSWERS[status]} Or the upstream model's own error "
                                    "with this status, passed through.",
                     "content": {"application/json": {"schema": either}}}
            for status in sorted(set(statuses))}


@cache
def _schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """The JSON schemas of the bodies, with their shared definitions."""
    made = {"messages": TypeAdapter(MessagesBody).json_schema(ref_template=_REF),
            "context": ContextRequest.model_json_schema(ref_template=_REF),
            "chat": ChatRequest.model_json_schema(ref_template=_REF),
            "anthropic": AnthropicRequest.model_json_schema(ref_template=_REF)}
    defs: dict[str, Any] = {}
    for schema in made.values():
        defs.update(schema.pop("$defs", {}))
    return made, defs


def body_schema(name: str) -> dict[str, Any]:
    """The JSON schema of a body, a copy of its own.

    ``messages``, ``context``, ``chat`` (OpenAI chat completions) or ``anthropic``
    (Anthropic messages).
    """
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
