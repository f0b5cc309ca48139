"""Reading a ``messages`` row back, whatever memci version wrote it.

Every stored row can be read (:func:`message_from_row`), also one an older memci wrote
before it checked every field: a ``tokens`` that is not a whole number is read as an
estimate from the size of its parts, a ``created_at`` outside what can be converted to UTC
as the nearest instant that can, an unreadable one as None, metadata that is not a JSON
object as text under ``"unreadable"``. A tool output kept whole in an artifact file has
only its head in the row (:data:`ROW_HEAD_CHARS`, :func:`row_head`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from memci.messages import Message, loads_parts

__all__ = ["ROW_HEAD_CHARS", "TOKENS_SQL", "message_from_row", "row_head"]

ROW_HEAD_CHARS = 20_000
"""Characters of a tool output kept in its message row when the whole is in a file.

As many as search indexes of one message, so indexes rebuilt from rows see the same text.
"""

def row_head(message: Message) -> Message:
    """``message`` as its row keeps it when its tool output is in a file: the head only."""
    result = message.tool_result
    assert result is not None
    return replace(message, parts=(replace(result, content=result.content[:ROW_HEAD_CHARS]),))


# A row's tokens, or (written by an older memci without checking) an estimate: about four
# characters of its parts a token. Python's _stored_tokens reads a row the same way.
TOKENS_SQL = ("CASE WHEN typeof(m.tokens) = 'integer' AND m.tokens >= 0 THEN m.tokens"
               " ELSE length(m.parts) / 4 END")


def message_from_row(session: str, row: Sequence[Any]) -> Message:
    """A ``messages`` row (seq, role, parts, name, metadata, created_at, tokens) as a Message.

    Reads every row any memci version wrote (see the module's invariants).
    """
    seq, role, parts, name, metadata, created_at, tokens = row
    return Message(
        role=role, parts=loads_parts(parts), name=name if isinstance(name, str) else None,
        metadata=_stored_metadata(metadata), created_at=_stored_instant(created_at),
        session=session, seq=int(seq), tokens=_stored_tokens(tokens, parts),
    )


def _stored_tokens(tokens: object, parts: object) -> int:
    if isinstance(tokens, int) and tokens >= 0:
        return tokens
    return len(parts) // 4 if isinstance(parts, str) else 0


def _stored_metadata(text: object) -> Mapping[str, Any]:
    if not text:
        return MappingProxyType({})
    try:
        value = json.loads(str(text))
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        return MappingProxyType({"unreadable": str(text)})
    return MappingProxyType(value)


def _stored_instant(text: object) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        return stamp.replace(tzinfo=UTC)
    try:
        stamp.astimezone(UTC)
    except OverflowError:
        # Older versions took instants just outside years 1-9999 in UTC: the nearest one.
        edge = datetime.min if stamp.year == 1 else datetime.max
        return edge.replace(tzinfo=UTC)
    return stamp
