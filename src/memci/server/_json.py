"""How memci's values are written in the server's JSON answers (written down once, here).

A stored message is its wire form (:func:`memci.messages.to_wire`: role, parts, seq,
tokens, created_at, metadata, name) plus ``content``, its text. Stats are their dataclass
fields; search hits carry the message, score, page, retrievers and session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from memci.messages import Message, to_wire

__all__ = ["hit_json", "jsonable", "message_json"]


def message_json(message: Message) -> dict[str, Any]:
    """A stored message as JSON: its wire form and its text as ``content``."""
    out = to_wire(message)
    out["content"] = message.content
    return out


def jsonable(value: Any) -> Any:
    """A dataclass, mapping or sequence of plain values as JSON-ready data."""
    if isinstance(value, Message):
        return message_json(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def hit_json(hit: Any) -> dict[str, Any]:
    """One search hit (``memci.memory.Hit`` or alike) as JSON."""
    message = getattr(hit, "message", None)
    out: dict[str, Any] = {
        "score": getattr(hit, "score", None),
        "page": getattr(hit, "page", None),
        "session": getattr(hit, "session", None),
        "retrievers": list(getattr(hit, "retrievers", ()) or ()),
        "kind": getattr(hit, "kind", "message"),
        "message": message_json(message) if isinstance(message, Message) else None,
    }
    return out
