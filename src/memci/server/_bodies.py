"""Request bodies: held to the server's size limit before any handler runs, read as JSON.

:class:`BodyLimit` wraps the whole app (the REST API, the proxies and ``/mcp``): a body
larger than ``max_body_bytes`` answers 413 before any handler runs. :func:`read_json` is
how a route reads a body by hand: any content type, no NaN or Infinity, and no nesting
deeper than :data:`MAX_DEPTH` (no handler ever recurses through a body that deep).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as ASGIMessage

from memci.server._errors import ApiError, error_body

__all__ = ["MAX_DEPTH", "BodyLimit", "read_body", "read_json", "receive_again"]

MAX_DEPTH = 128  # nesting of a JSON body; far deeper than any message


class BodyLimit:
    """ASGI middleware: refuse a request body over ``max_bytes`` with a JSON 413.

    A declared ``Content-Length`` over the limit is refused before reading; otherwise
    the body is read up to the limit and replayed to the app, so a chunked upload is
    held to the same limit.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, receive_again([message], receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body: ASGIMessage = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, receive_again([body], receive), send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(
            error_body("payload_too_large",
                       f"the request body is over the server's limit of {self.max_bytes} bytes"),
            status_code=413, headers={"Connection": "close"})
        await response(scope, receive, send)


def receive_again(messages: list[ASGIMessage], receive: Receive) -> Receive:
    """A ``receive`` that gives ``messages`` first, then whatever ``receive`` gives."""
    pending = list(messages)

    async def replayed() -> ASGIMessage:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed


async def read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The whole body of an ASGI request, and a ``receive`` that gives it again."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), receive_again([message], receive)
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    whole: ASGIMessage = {"type": "http.request", "body": body, "more_body": False}
    return body, receive_again([whole], receive)


_TOO_DEEP = object()


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


async def read_json(request: Request) -> Any:
    """The request body as JSON, whatever its content type says (None when empty).

    Refused with 400: text that is not JSON (NaN and Infinity included), and nesting
    deeper than :data:`MAX_DEPTH`.
    """
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        body = json.loads(raw, parse_constant=_not_json)
    except RecursionError:
        body = _TOO_DEEP
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"the body is not valid JSON: {exc}") from exc
    if body is _TOO_DEEP or _deeper_than(body, MAX_DEPTH):
        raise ApiError(400, "too_deep",
                       f"the body nests arrays and objects more than {MAX_DEPTH} deep")
    return body


def _deeper_than(value: Any, limit: int) -> bool:
    """True when ``value`` nests lists and dicts more than ``limit`` deep (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
