"""Writing messages out: OpenAI Chat Completions and Anthropic Messages payloads.

Pure functions from memci messages to request-ready dicts. Metadata, store identity and
token counts never appear in what they return, nor do reasoning parts and Responses item
ids (only the Responses writer sends them back): an assistant message that holds nothing
else is left out.

OpenAI: one dict per message; an assistant's tool calls in ``tool_calls``; one ``tool``
message per result, right after the assistant message that made the call.

Anthropic: the system text is split out; tool results become ``tool_result`` blocks at
the front of the user message that follows the assistant's ``tool_use`` blocks;
consecutive messages of one role are merged so that user and assistant alternate; a
conversation that would open with the assistant gets a short user opener, because the
API requires the first message to be the user's. Empty and whitespace-only text blocks
(which the API rejects) are left out, and trailing whitespace is cut from a final
assistant message (which the API also rejects).

Both writers keep each provider's pairing rule even for a conversation that breaks it
(a cut that separated a call from its result, say), so the request is never refused:

- a tool result that answers no open call of the nearest assistant message (an orphan)
  is sent as user text, ``[result of tool call <id>]`` and its content;
- a tool call left unanswered when the conversation moves on gets a stand-in error
  result, :data:`MISSING_RESULT`. A call in the last assistant message is left open,
  since its result may still be on its way.

A conversation that keeps the rules (every call answered by tool messages right after
its assistant message) is written one message for one message by :func:`to_openai`, and
read back exactly by :func:`~memci.messages.coerce` from either output.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memci._dataclasses import dataclass, field
from memci.errors import InvalidToolArgumentsError
from memci.messages._model import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)

__all__ = ["ANTHROPIC_OPENER", "MISSING_RESULT", "to_anthropic", "to_openai",
           "to_openai_message"]

ANTHROPIC_OPENER = "[earlier messages omitted]"
MISSING_RESULT = "[no result was recorded for this tool call]"


def to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as OpenAI Chat Completions message dicts.

    Every ``tool`` message in the output answers a call of the nearest preceding
    assistant message, with only tool messages in between (see the module notes for how
    a conversation that breaks this is repaired).
    """
    out: list[dict[str, Any]] = []
    open_calls: dict[str, None] = {}  # calls of the nearest assistant, not yet answered
    orphans: list[str] = []

    def close_run() -> None:
        for call_id in open_calls:
            out.append({"role": "tool", "tool_call_id": call_id, "content": MISSING_RESULT})
        open_calls.clear()
        if orphans:
            out.append({"role": "user", "content": "\n\n".join(orphans)})
            orphans.clear()

    for message in messages:
        result = message.tool_result if message.role == "tool" else None
        if result is not None:
            if result.call_id in open_calls:
                del open_calls[result.call_id]
                out.append(to_openai_message(message))
            else:
                orphans.append(_orphan_text(result))
            continue
        if _only_reasoning(message):
            continue
        close_run()
        out.append(to_openai_message(message))
        open_calls.update((c.id, None) for c in message.tool_calls)
    if orphans:
        close_run()
    return out


def to_openai_message(message: Message) -> dict[str, Any]:
    """One message as an OpenAI Chat Completions message dict."""
    if message.role == "tool":
        result = message.tool_result
        assert result is not None, "a tool message carries a tool result"
        return {"role": "tool", "tool_call_id": result.call_id, "content": result.content}
    out: dict[str, Any] = {"role": message.role}
    # Empty text (a message's text cut away to fit its images) is not sent, as with Anthropic.
    visible = [p for p in message.parts if not isinstance(p, ToolCallPart | ReasoningPart)
               and not (isinstance(p, TextPart) and not p.text)]
    calls = message.tool_calls
    if len(visible) == 1 and isinstance(visible[0], TextPart):
        out["content"] = visible[0].text
    elif not visible:
        out["content"] = None if calls else ""
    else:
        out["content"] = [_openai_block(p) for p in visible]
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in calls
        ]
    if message.name is not None:
        out["name"] = message.name
    return out


def _only_reasoning(message: Message) -> bool:
    """An assistant message with reasoning and nothing a chat API could be sent."""
    return bool(message.parts) and all(isinstance(p, ReasoningPart) for p in message.parts)


def _openai_block(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    assert isinstance(part, ImagePart), "only text and images go in OpenAI content"
    image: dict[str, Any] = {"url": part.url}
    if part.detail is not None:
        image["detail"] = part.detail
    return {"type": "image_url", "image_url": image}


@dataclass
class _Turn:
    role: str
    blocks: list[dict[str, Any]] = field(default_factory=list)


def to_anthropic(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:  # noqa: C901 - one pass that pairs calls, merges turns and closes them
    """Messages as Anthropic Messages ``(system, messages)``; system is None when empty.

    The messages start with the user, alternate strictly, answer every ``tool_use`` of an
    assistant message (but the last) with ``tool_result`` blocks at the front of the next
    user message, and hold no empty text.
    """
    system_texts: list[str] = []
    turns: list[_Turn] = []
    open_calls: dict[str, None] = {}  # tool_use ids of the last assistant turn, unanswered

    def close_user_turn(turn: _Turn) -> None:
        for call_id in open_calls:
            turn.blocks.append({"type": "tool_result", "tool_use_id": call_id,
                                "content": MISSING_RESULT, "is_error": True})
        open_calls.clear()

    for message in messages:
        if message.role == "system":
            if message.content.strip():
                system_texts.append(message.content)
            continue
        if message.role == "assistant":
            blocks = [b for p in message.parts if (b := _anthropic_block(p)) is not None]
            if not blocks:
                continue
            if not turns or turns[-1].role != "assistant":
                if turns:
                    close_user_turn(turns[-1])
                turns.append(_Turn("assistant"))
            turns[-1].blocks.extend(blocks)
            open_calls.update((c.id, None) for c in message.tool_calls)
            continue
        result = message.tool_result if message.role == "tool" else None
        if result is not None:
            if result.call_id in open_calls:
                del open_calls[result.call_id]
                blocks = [_tool_result_block(result)]
            else:
                blocks = [{"type": "text", "text": _orphan_text(result)}]
        else:
            blocks = [b for p in message.parts if (b := _anthropic_block(p)) is not None]
        if not blocks:
            continue
        if not turns or turns[-1].role != "user":
            turns.append(_Turn("user"))
        turns[-1].blocks.extend(blocks)
    if turns and turns[-1].role == "user":
        close_user_turn(turns[-1])
    if turns and turns[0].role == "assistant":
        turns.insert(0, _Turn("user", [{"type": "text", "text": ANTHROPIC_OPENER}]))
    if turns and turns[-1].role == "assistant":
        last = turns[-1].blocks[-1]
        if last["type"] == "text":
            # The API refuses a final assistant message that ends in whitespace.
            last["text"] = last["text"].rstrip()
    out: list[dict[str, Any]] = []
    for turn in turns:
        if turn.role == "user":
            # The API wants tool results before any other block of a user message.
            turn.blocks.sort(key=lambda b: b["type"] != "tool_result")
        content: Any = turn.blocks
        if len(turn.blocks) == 1 and turn.blocks[0]["type"] == "text":
            content = turn.blocks[0]["text"]
        out.append({"role": turn.role, "content": content})
    return ("\n\n".join(system_texts) or None), out


def _anthropic_block(part: Part) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text.strip() else None
    if isinstance(part, ImagePart):
        return {"type": "image", "source": _anthropic_image_source(part)}
    if isinstance(part, ToolCallPart):
        try:
            arguments = json.loads(part.arguments)
        except ValueError as exc:
            raise InvalidToolArgumentsError(
                f"arguments of tool call {part.name!r} are not valid JSON: {exc}"
            ) from exc
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": arguments}
    if isinstance(part, ReasoningPart):
        return None  # OpenAI's reasoning: only the Responses API takes it back
    return _tool_result_block(part)


def _anthropic_image_source(part: ImagePart) -> dict[str, Any]:
    if part.url.startswith("data:") and ";base64," in part.url:
        header, data = part.url.split(";base64,", 1)
        # The URI's own media type wins, so that reading the block back gives the same URL.
        media = header[5:] or part.media_type or "application/octet-stream"
        return {"type": "base64", "media_type": media, "data": data}
    return {"type": "url", "url": part.url}


def _tool_result_block(result: ToolResultPart) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.call_id}
    # ``content`` is optional; a blank one would be an (invalid) whitespace-only text.
    if result.content.strip():
        block["content"] = result.content
    if result.is_error:
        block["is_error"] = True
    return block


def _orphan_text(result: ToolResultPart) -> str:
    what = "error from" if result.is_error else "result of"
    head = f"[{what} tool call {result.call_id}]"
    return f"{head}\n{result.content}" if result.content else head
