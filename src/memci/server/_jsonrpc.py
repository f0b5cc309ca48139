"""What a JSON-RPC message must be before the MCP SDK sees it, on both transports.

MCP speaks JSON-RPC 2.0, and every message that cannot be one is answered with the error
the JSON-RPC specification names, over stdio (``memci mcp``) and HTTP (``/mcp``) alike:

- text that is not JSON: ``-32700`` (parse error);
- JSON that is not a request, a notification or a response: ``-32600`` (invalid request)
  — not an object (a batch included: MCP 2025-11-25 has none), no ``"jsonrpc": "2.0"``,
  a ``method`` that is not a string, an ``id`` that is not a string or an integer,
  ``params`` that are not structured, a response without exactly one of ``result`` and
  ``error``;
- ``params`` that are an array: ``-32602`` (invalid params; MCP's params are objects).

Unknown methods (``-32601``) and the params of known ones (``-32602``) are the SDK's to
answer, after this check. The answer's ``id`` is the message's when it has a valid one,
else null (JSON-RPC 2.0, section 5). :func:`check_message` decides; it does no I/O, so
both transports share it: stdio writes the answer as a line
(:mod:`memci.server._mcp_stdio`), HTTP as a 400 whose body is the answer
(:mod:`memci.server._mcp_http`).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from pydantic import ValidationError

__all__ = ["check_message", "error_message"]


def error_message(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    """A JSON-RPC error answer (``id`` null unless the message had a valid one)."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def check_message(raw: bytes | str) -> dict[str, Any] | None:
    """The error answer to ``raw`` when it is no JSON-RPC message; None when it is one."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        detail = f": {exc}" if isinstance(exc, ValueError) else ": nested too deep"
        return error_message(types.PARSE_ERROR, f"Parse error: the message is not JSON{detail}")
    return _check_value(value)


def _valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _check_value(value: object) -> dict[str, Any] | None:
    if isinstance(value, list):
        return error_message(types.INVALID_REQUEST,
                             "Invalid Request: batches are not supported; send one JSON-RPC "
                             "message (an object) at a time")
    if not isinstance(value, dict):
        return error_message(types.INVALID_REQUEST,
                             "Invalid Request: a JSON-RPC message is an object, not "
                             f"{type(value).__name__}")
    request_id = value.get("id") if _valid_id(value.get("id")) else None
    problem = _problem(value)
    if problem is not None:
        code, message = problem
        return error_message(code, message, request_id)
    try:
        types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())[1:]) or "message"
        return error_message(types.INVALID_REQUEST,
                             f"Invalid Request: {where}: {first.get('msg', 'invalid')}",
                             request_id)
    return None


def _problem(message: dict[str, Any]) -> tuple[int, str] | None:
    """What makes ``message`` no JSON-RPC 2.0 message (code and text), or None."""
    invalid = types.INVALID_REQUEST
    if message.get("jsonrpc") != "2.0":
        return invalid, 'Invalid Request: "jsonrpc" must be "2.0"'
    # An error answer may say null: the peer could not tell which request it answers.
    null_allowed = "error" in message and "method" not in message
    if "id" in message and not (_valid_id(message["id"])
                                or (null_allowed and message["id"] is None)):
        return invalid, 'Invalid Request: "id" must be a string or an integer'
    if "method" in message:
        if not isinstance(message["method"], str):
            return invalid, 'Invalid Request: "method" must be a string'
        params = message.get("params")
        if isinstance(params, list):
            return types.INVALID_PARAMS, 'Invalid params: "params" must be an object'
        if params is not None and not isinstance(params, dict):
            return invalid, 'Invalid Request: "params" must be an object'
        return None
    if "id" not in message or ("result" in message) == ("error" in message):
        return invalid, ('Invalid Request: a message has a "method" (a request or a '
                         'notification), or an "id" and one of "result" and "error" (a '
                         "response)")
    return None
