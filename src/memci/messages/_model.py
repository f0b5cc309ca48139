"""The provider-neutral message: a role and a tuple of parts, as frozen values.

A :class:`Message` is a value. Its store identity (``session``, ``seq``), its ``tokens``
counted once at ingest and its ``created_at`` are set by the store; the content is never
changed after that. ``metadata`` is kept with the message and never sent to a model.

Parts are plain frozen dataclasses with a ``kind`` discriminator:

- :class:`TextPart` — text;
- :class:`ImagePart` — a reference to an image (URL or ``data:`` URI), never the pixels;
- :class:`ToolCallPart` — an assistant's call: id, name, arguments as JSON text of an object;
- :class:`ToolResultPart` — a tool's answer to a call id, with ``is_error``;
- :class:`ReasoningPart` — a reasoning model's reasoning item (OpenAI Responses), kept to
  be passed back to that API as it came, never shown as text.

A text or tool call part of an assistant message may carry ``item_id``: the id of the
OpenAI Responses item it came in (``msg_…``, ``fc_…``). It is identity, not content: the
Responses writer sends it only beside the reasoning item that item followed, and no other
writer sends it.

Invariants checked by :func:`memci.messages.validate` (which every reader runs): a tool
message carries exactly one tool result and nothing else; only assistant messages carry
tool calls, reasoning and item ids; tool calls have a non-empty id and name, unique within
the message, and arguments that are JSON text of an object; only user messages carry
images; text is valid Unicode.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from memci._dataclasses import dataclass, field, replace

__all__ = [
    "NO_METADATA",
    "ROLES",
    "ImagePart",
    "Message",
    "Part",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
]

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")

#: The metadata of a message with none: one read-only mapping shared by all of them.
NO_METADATA: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class TextPart:
    """Plain text; ``item_id`` is the Responses message item it came in, if any."""

    text: str
    kind: Literal["text"] = "text"
    item_id: str | None = None


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image by reference: an ``http(s)`` URL or a ``data:`` URI."""

    url: str
    media_type: str | None = None
    detail: str | None = None
    kind: Literal["image"] = "image"


@dataclass(frozen=True, slots=True)
class ToolCallPart:
    """One tool call made by the assistant; ``arguments`` is JSON text of an object.

    ``id`` is the call id a result answers (Responses ``call_id``); ``item_id`` the
    Responses ``function_call`` item's own id (``fc_…``), if it came in one.
    """

    id: str
    name: str
    arguments: str = "{}"
    kind: Literal["tool_call"] = "tool_call"
    item_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    """A tool's answer to the call ``call_id``."""

    call_id: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = "tool_result"


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    """A reasoning item of the OpenAI Responses API, kept to be passed back as it came.

    ``id`` is the item's id (``rs_…``), ``summary`` its summary texts, ``encrypted_content``
    the opaque reasoning that a stateless request (``store=false``) must send back, and
    ``content`` its reasoning texts when the model gave them. It is not the message's
    text: only the Responses writer sends it, right before the item that followed it.
    """

    id: str
    summary: tuple[str, ...] = ()
    encrypted_content: str | None = None
    content: tuple[str, ...] = ()
    kind: Literal["reasoning"] = "reasoning"


Part: TypeAlias = TextPart | ImagePart | ToolCallPart | ToolResultPart | ReasoningPart


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation, provider-neutral.

    ``content`` is the message's text: its text parts joined, or a tool result's content.
    """

    role: Role
    parts: tuple[Part, ...]
    name: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=lambda: NO_METADATA)
    created_at: datetime | None = None
    session: str | None = None
    seq: int | None = None
    tokens: int | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        """Make a system message."""
        return cls("system", (TextPart(text),))

    @classmethod
    def user(cls, text: str, *, name: str | None = None) -> Message:
        """Make a user message with one text part."""
        return cls("user", (TextPart(text),), name=name)

    @classmethod
    def assistant(cls, text: str = "", *calls: ToolCallPart) -> Message:
        """Make an assistant message with optional text and tool calls."""
        parts: tuple[Part, ...] = ((TextPart(text),) if text else ()) + calls
        return cls("assistant", parts)

    @classmethod
    def tool(cls, call_id: str, content: str, *, is_error: bool = False) -> Message:
        """Make a tool message answering ``call_id``."""
        return cls("tool", (ToolResultPart(call_id, content, is_error),))

    @property
    def content(self) -> str:
        """The message's text: text parts joined by blank lines, or the tool result."""
        texts = [p.text for p in self.parts if isinstance(p, TextPart)]
        if texts:
            return "\n\n".join(texts) if len(texts) > 1 else texts[0]
        for p in self.parts:
            if isinstance(p, ToolResultPart):
                return p.content
        return ""

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The tool calls this message makes (assistant messages only)."""
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))

    @property
    def tool_result(self) -> ToolResultPart | None:
        """The tool result this message carries (tool messages only)."""
        for p in self.parts:
            if isinstance(p, ToolResultPart):
                return p
        return None

    def with_identity(
        self, *, session: str, seq: int, tokens: int, created_at: datetime
    ) -> Message:
        """Return a copy carrying the store identity given at ingest."""
        return replace(self, session=session, seq=seq, tokens=tokens, created_at=created_at)

    def without_identity(self) -> Message:
        """Return a copy without store identity, token count and timestamp (for comparing)."""
        return replace(self, session=None, seq=None, tokens=None, created_at=None)
