r"""The wire form of a message: how memci writes one to JSON (store rows, JSONL export).

Written down once, here. ``to_wire`` / ``from_wire`` are exact inverses for every field of
:class:`~memci.messages.Message`, so an export and import is lossless.

Optional fields are written only when set (``item_id`` of a text or tool call part, a
reasoning part's ``encrypted_content`` and ``content``), so rows written before they
existed read back as they were.

Reading a part back is tolerant of what an older memci stored before it checked every
field: an ``is_error`` that is not a boolean is read as a flag (``"yes"``, ``"true"``,
``1`` are true), an image's ``media_type`` or ``detail`` that is not text as absent, tool
call arguments whose JSON escapes a lone surrogate (``"\ud800"``) with U+FFFD in its
place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, cast

from memci._jsonvalues import without_lone_surrogates
from memci.errors import InvalidMessageError, InvalidTimestampError
from memci.messages._model import (
    ROLES,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

__all__ = ["dumps_parts", "from_wire", "loads_parts", "part_from_wire", "part_to_wire",
           "to_wire"]


def part_to_wire(part: Part) -> dict[str, Any]:
    """One part as a JSON-ready dict with its ``kind``."""
    if isinstance(part, TextPart):
        return _with_item_id({"kind": "text", "text": part.text}, part.item_id)
    if isinstance(part, ImagePart):
        out: dict[str, Any] = {"kind": "image", "url": part.url}
        if part.media_type is not None:
            out["media_type"] = part.media_type
        if part.detail is not None:
            out["detail"] = part.detail
        return out
    if isinstance(part, ToolCallPart):
        return _with_item_id({"kind": "tool_call", "id": part.id, "name": part.name,
                              "arguments": part.arguments}, part.item_id)
    if isinstance(part, ReasoningPart):
        reasoning: dict[str, Any] = {"kind": "reasoning", "id": part.id,
                                     "summary": list(part.summary)}
        if part.encrypted_content is not None:
            reasoning["encrypted_content"] = part.encrypted_content
        if part.content:
            reasoning["content"] = list(part.content)
        return reasoning
    return {"kind": "tool_result", "call_id": part.call_id, "content": part.content,
            "is_error": part.is_error}


def part_from_wire(data: Mapping[str, Any]) -> Part:
    """Read one part back from :func:`part_to_wire`'s dict."""
    if type(data) is not dict and not isinstance(data, Mapping):  # a dict, checked first
        raise InvalidMessageError("a wire part must be a JSON object with a 'kind'")
    kind = data.get("kind")
    try:
        if kind == "text":
            return TextPart(data["text"], item_id=_text_or_none(data.get("item_id")))
        if kind == "image":
            return ImagePart(data["url"], _text_or_none(data.get("media_type")),
                             _text_or_none(data.get("detail")))
        if kind == "tool_call":
            arguments = data["arguments"]
            if isinstance(arguments, str):
                arguments = without_lone_surrogates(arguments)
            return ToolCallPart(data["id"], data["name"], arguments,
                                item_id=_text_or_none(data.get("item_id")))
        if kind == "reasoning":
            return ReasoningPart(data["id"], _texts(data.get("summary")),
                                 _text_or_none(data.get("encrypted_content")),
                                 _texts(data.get("content")))
        if kind == "tool_result":
            return ToolResultPart(data["call_id"], data["content"],
                                  _flag(data.get("is_error", False)))
    except KeyError as exc:
        raise InvalidMessageError(f"{kind} part is missing {exc}") from exc
    raise InvalidMessageError(f"unknown part kind {kind!r}")


def _with_item_id(out: dict[str, Any], item_id: str | None) -> dict[str, Any]:
    if item_id is not None:
        out["item_id"] = item_id
    return out


def _texts(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in cast(list[object], value) if isinstance(v, str))


def _flag(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1")
    return bool(value)


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def dumps_parts(parts: tuple[Part, ...]) -> str:
    """Parts as compact JSON text (the store's column)."""
    return json.dumps([part_to_wire(p) for p in parts], ensure_ascii=False,
                      separators=(",", ":"))


# json.loads's own scanner (the C one), called without that function's checks of its
# argument: reading a long session's messages calls it once a row (~half the time).
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _json(text: str) -> Any:
    """``json.loads(text)``: the same value, and the same error for text that is not JSON."""
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:  # nothing JSON at its start: json.loads says what is wrong
        return json.loads(text)
    if end != len(text):  # whitespace or more after the value
        return json.loads(text)
    return value


def loads_parts(text: str) -> tuple[Part, ...]:
    """Read parts back from :func:`dumps_parts`'s JSON text."""
    try:
        data = _json(text)
    except ValueError as exc:
        raise InvalidMessageError(f"stored parts are not valid JSON: {exc}") from exc
    if not isinstance(data, list):
        raise InvalidMessageError("stored parts must be a JSON list")
    return tuple([part_from_wire(p) for p in data])


def to_wire(message: Message) -> dict[str, Any]:
    """Write a message, with identity and metadata, as a JSON-ready dict."""
    out: dict[str, Any] = {"role": message.role,
                           "parts": [part_to_wire(p) for p in message.parts]}
    if message.name is not None:
        out["name"] = message.name
    if message.metadata:
        out["metadata"] = dict(message.metadata)
    if message.created_at is not None:
        out["created_at"] = message.created_at.isoformat()
    if message.seq is not None:
        out["seq"] = message.seq
    if message.tokens is not None:
        out["tokens"] = message.tokens
    return out


def from_wire(data: Mapping[str, Any], *, session: str | None = None) -> Message:
    """Read a message back from :func:`to_wire`'s dict; ``session`` is not in the wire."""
    if not isinstance(data, Mapping):
        raise InvalidMessageError("a wire message must be a JSON object")
    role = data.get("role")
    if role not in ROLES:
        raise InvalidMessageError(f"wire message has unknown role {role!r}")
    parts = data.get("parts")
    if not isinstance(parts, list):
        raise InvalidMessageError("wire message needs a 'parts' list")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidMessageError("wire message 'metadata' must be a JSON object")
    created = data.get("created_at")
    try:
        created_at = datetime.fromisoformat(created) if created else None
    except (TypeError, ValueError) as exc:
        raise InvalidTimestampError(
            f"wire message 'created_at' {created!r} is not an ISO 8601 date-time"
        ) from exc
    return Message(
        role=role,
        parts=tuple(part_from_wire(p) for p in parts),
        name=data.get("name"),
        metadata=MappingProxyType(dict(cast(Mapping[str, Any], metadata))),
        created_at=created_at,
        session=session,
        seq=data.get("seq"),
        tokens=data.get("tokens"),
    )
