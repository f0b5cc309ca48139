"""The OpenAI Responses API form: its items read in, and memci messages written as them.

Reading (for :func:`memci.messages.coerce_many`, which reads every other form too):

- a ``message`` item is a message; an assistant's keeps its item id (``msg_…``) on its
  text parts (user, system and developer items are read as chat messages are);
- a ``function_call`` is a call of the assistant: ``call_id`` is the call's id, the
  item's own ``id`` (``fc_…``) its ``item_id``;
- a ``function_call_output`` is a tool message answering ``call_id``;
- a ``reasoning`` item is a :class:`~memci.messages.ReasoningPart`;
- the model's built-in tool calls (``web_search_call``, ``file_search_call``,
  ``mcp_call``, any ``*_call``; ``mcp_list_tools``, ``mcp_approval_request``) are kept
  verbatim in the assistant message's ``metadata["responses_items"]`` and never sent
  back, nor is a reasoning item whose following item was one of them.

:class:`Turns` collects a batch: the items of one assistant turn (what the model said
between two inputs: reasoning, messages, calls) continue one assistant message, their
parts in item order, so that its calls pair with the results that follow.

Writing, :func:`to_responses` gives ``(instructions, input)``: the system messages joined
into the instructions; a user message as a ``message`` item of ``input_text`` and
``input_image``; an assistant message as its items in part order; a tool result as a
``function_call_output``. Assistant messages in a row are one turn, written as the one
message a batch would have made: a turn stored item by item (``session.add(item)`` for
each item of ``response.output``) goes back as the same items as one stored whole, its
reasoning and ids included, its calls open together. Pairing is repaired as the chat
writer repairs it: a result that answers no open call is user text, a call left
unanswered when the conversation moves on gets :data:`~memci.messages.MISSING_RESULT`.
Reasoning goes back only where the API takes it, since it pairs a reasoning item with the
item after it by their ids:

- a reasoning item is sent right before the part that followed it, and only when that
  part (a text or a call) carries its item id; otherwise it is left out;
- item ids are sent only after a reasoning item that was sent (up to the next one): an
  ``fc_…`` or ``msg_…`` id sent without its reasoning item is refused by the API;
- an assistant's text with its id is an output message (``output_text``, ``id``,
  ``status``), as the API returned it; without one, the plain form
  ``{"type": "message", "role": "assistant", "content": text}``, which the API and the
  SDK's types accept (an ``output_text`` message needs an ``id`` in the SDK's types, and
  a made-up id is refused by the API).

Pure: no SDK import, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, cast

from memci._dataclasses import replace
from memci._records import NamedTuple
from memci.errors import InvalidMessageError
from memci.messages._model import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from memci.messages._write import MISSING_RESULT, _orphan_text

__all__ = ["ASIDE_KEY", "TurnItem", "Turns", "item_kind", "read_output", "read_turn_item",
           "reasoning_item", "response_output", "to_responses", "with_item_id"]

# Where an assistant message keeps the Responses items memci does not model.
ASIDE_KEY = "responses_items"
_TURN_KINDS = frozenset({"function_call", "reasoning"})
_OUTPUT_BLOCKS = frozenset({"output_text", "refusal"})
_SUPPORTED = ("message, function_call, function_call_output and reasoning items (and "
              "keeps the model's built-in tool calls, such as web_search_call, aside)")


# -- reading -----------------------------------------------------------------------------


class TurnItem(NamedTuple):
    """What one item of the assistant's turn adds to it: parts, or an item kept aside."""

    parts: tuple[Part, ...] = ()
    aside: Mapping[str, Any] | None = None


def response_output(data: Mapping[str, Any]) -> list[Any] | None:
    """The ``output`` items of a Responses ``Response``; None when ``data`` is not one."""
    if data.get("object") != "response":
        return None
    output = data.get("output")
    if not isinstance(output, list):
        raise InvalidMessageError("a Response needs an 'output' list of items")
    if not output:
        raise InvalidMessageError(
            f"the response (status {data.get('status')!r}) has no output items: nothing to add")
    return output


def item_kind(data: Mapping[str, Any]) -> str | None:
    """The Responses item type ``data`` is read as; None for a message read as chat is.

    A ``message`` item is a Responses item only when it is the assistant's and holds
    Responses content (text or ``output_text`` / ``refusal`` blocks): an Anthropic SDK
    message is typed ``message`` too.
    """
    kind = data.get("type")
    if not isinstance(kind, str):
        return None
    if kind == "message":
        if data.get("role") == "assistant" and _is_output_content(data.get("content")):
            return kind
        return None
    known = kind in _TURN_KINDS or kind == "function_call_output" or _is_builtin_call(kind)
    if "role" in data:
        if known:
            raise InvalidMessageError(
                f"a {kind} item has no 'role' (this one has {_brief(data['role'])}): remove the "
                "role, or send a message")
        return None  # a chat or Anthropic message that carries a type of its own
    if known:
        return kind
    if kind == "item_reference":
        raise InvalidMessageError(
            "an item_reference points into OpenAI's stored conversation, which memci "
            "cannot read: pass the item itself")
    raise InvalidMessageError(
        f"unsupported OpenAI Responses item type {kind!r}: memci reads {_SUPPORTED}")


def _is_output_content(content: object) -> bool:
    if isinstance(content, str):
        return True
    if not isinstance(content, list):
        return False
    return all(isinstance(b, Mapping) and cast(Mapping[str, Any], b).get("type")
               in _OUTPUT_BLOCKS for b in cast(list[object], content))


def _is_builtin_call(kind: str) -> bool:
    """A tool call the model made and its platform ran (or the caller answers apart)."""
    return (kind.endswith("_call") and kind != "function_call") or kind in (
        "mcp_list_tools", "mcp_approval_request")


def read_turn_item(data: Mapping[str, Any], kind: str) -> TurnItem:
    """A ``function_call``, ``reasoning`` or built-in call item as what it adds to a turn."""
    if kind == "function_call":
        return TurnItem((_read_call(data),))
    if kind == "reasoning":
        return TurnItem((_read_reasoning(data),))
    return TurnItem(aside=data)


def _read_call(data: Mapping[str, Any]) -> ToolCallPart:
    call_id, name, arguments = data.get("call_id"), data.get("name"), data.get("arguments")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidMessageError(
            "a function_call item needs a non-empty 'call_id' string (the id its "
            "function_call_output answers)")
    if not isinstance(name, str) or not name:
        raise InvalidMessageError("a function_call item needs a non-empty 'name' string")
    if arguments is None or arguments == "":
        arguments = "{}"
    if not isinstance(arguments, str):
        raise InvalidMessageError(
            f"a function_call item's 'arguments' must be JSON text of an object (a string), "
            f"got {type(arguments).__name__}")
    return ToolCallPart(call_id, name, arguments, item_id=_item_id(data, "function_call"))


def _read_reasoning(data: Mapping[str, Any]) -> ReasoningPart:
    reasoning_id = data.get("id")
    if not isinstance(reasoning_id, str) or not reasoning_id:
        raise InvalidMessageError(
            "a reasoning item needs its non-empty 'id' string (rs_...): pass the item as "
            "the API returned it")
    encrypted = data.get("encrypted_content")
    if encrypted is not None and not isinstance(encrypted, str):
        raise InvalidMessageError(
            f"a reasoning item's 'encrypted_content' must be a string or null, got "
            f"{type(encrypted).__name__}")
    return ReasoningPart(reasoning_id, _texts(data.get("summary"), "summary", "summary_text"),
                         encrypted, _texts(data.get("content"), "content", "reasoning_text"))


def _texts(value: object, what: str, block: str) -> tuple[str, ...]:
    """The texts of a reasoning item's ``summary`` or ``content`` blocks."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidMessageError(
            f"a reasoning item's '{what}' must be a list of {block} parts, got "
            f"{type(value).__name__}")
    texts: list[str] = []
    for entry in cast(list[object], value):
        entry_map = cast(Mapping[str, Any], entry) if isinstance(entry, Mapping) else None
        text = entry_map.get("text") if entry_map is not None else None
        if entry_map is None or entry_map.get("type", block) != block or not isinstance(
                text, str):
            raise InvalidMessageError(
                f"each entry of a reasoning item's '{what}' must be "
                f"{{\"type\": \"{block}\", \"text\": ...}}, got {_brief(entry)}")
        texts.append(text)
    return tuple(texts)


def read_output(data: Mapping[str, Any]) -> ToolResultPart:
    """A ``function_call_output`` item as the tool result it carries."""
    call_id = data.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidMessageError(
            "a function_call_output item needs a non-empty 'call_id' string (the call_id "
            "of the function_call it answers)")
    if "output" not in data or data["output"] is None:
        raise InvalidMessageError(
            "a function_call_output item needs 'output' (a string, or a list of "
            "input_text parts)")
    output = data["output"]
    if isinstance(output, list):
        texts: list[str] = []
        for block in cast(list[object], output):
            block_map = cast(Mapping[str, Any], block) if isinstance(block, Mapping) else None
            text = block_map.get("text") if block_map is not None else None
            if block_map is None or block_map.get("type") not in ("input_text", "output_text") \
                    or not isinstance(text, str):
                raise InvalidMessageError(
                    "a function_call_output's 'output' may hold only text: a string, or "
                    f"input_text parts with a 'text' string; got {_brief(block)}")
            texts.append(text)
        output = "\n".join(texts)
    if not isinstance(output, str):
        raise InvalidMessageError(
            f"a function_call_output's 'output' must be a string, got "
            f"{type(output).__name__}")
    return ToolResultPart(call_id, output)


def with_item_id(parts: tuple[Part, ...], data: Mapping[str, Any]) -> tuple[Part, ...]:
    """The text parts of an assistant ``message`` item, each with the item's id."""
    item_id = _item_id(data, "message")
    if item_id is None:
        return parts
    return tuple(replace(p, item_id=item_id) if isinstance(p, TextPart) else p for p in parts)


def _item_id(data: Mapping[str, Any], what: str) -> str | None:
    item_id = data.get("id")
    if item_id is None or item_id == "":
        return None
    if not isinstance(item_id, str):
        raise InvalidMessageError(
            f"a {what} item's 'id' must be a string, got {type(item_id).__name__}")
    return item_id


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Turns:
    """The messages a batch reads, with the assistant's turn open to Responses items.

    A message read whole (any form but a Responses turn item) is added as it is; it
    leaves the turn open when it is the assistant's. An item of the assistant's turn
    continues the open turn's message, or starts one.
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._open = False

    def add(self, messages: Sequence[Message]) -> None:
        """Add messages read whole."""
        self.messages.extend(messages)
        self._open = bool(messages) and messages[-1].role == "assistant"

    def add_to_turn(self, item: TurnItem, metadata: Mapping[str, Any],
                    created_at: datetime | None) -> None:
        """Continue the assistant's turn with ``item`` (its metadata merged in)."""
        if not self._open:
            self.messages.append(Message("assistant", (), created_at=created_at))
            self._open = True
        last = self.messages[-1]
        parts = list(last.parts)
        merged = {**last.metadata, **metadata}
        if item.aside is not None:
            kept = merged.get(ASIDE_KEY)
            aside = list(cast(list[Any], kept)) if isinstance(kept, list | tuple) else []
            before = parts[-1] if parts else None
            if isinstance(before, ReasoningPart):
                # It can only be passed back with the item it came before.
                parts.pop()
                aside.append(reasoning_item(before))
            aside.append(dict(item.aside))
            merged[ASIDE_KEY] = aside
        parts.extend(item.parts)
        self.messages[-1] = replace(
            last, parts=tuple(parts), metadata=MappingProxyType(merged),
            created_at=last.created_at if last.created_at is not None else created_at)


# -- writing -----------------------------------------------------------------------------


def to_responses(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Messages as a Responses request's ``(instructions, input)``; None when no system.

    Every ``function_call_output`` answers a ``function_call`` earlier in the input with
    only outputs between them, and every reasoning item is followed by the item it
    belongs to (see the module notes).
    """
    instructions: list[str] = []
    out: list[dict[str, Any]] = []
    open_calls: dict[str, None] = {}  # calls of the nearest assistant, not yet answered
    orphans: list[str] = []

    def close_run() -> None:
        for call_id in open_calls:
            out.append(_output_item(call_id, MISSING_RESULT))
        open_calls.clear()
        if orphans:
            out.append(_user_item([{"type": "input_text", "text": "\n\n".join(orphans)}]))
            orphans.clear()

    for message in _turns(messages):
        if message.role == "system":
            if message.content.strip():
                instructions.append(message.content)
            continue
        result = message.tool_result if message.role == "tool" else None
        if result is not None:
            if result.call_id in open_calls:
                del open_calls[result.call_id]
                out.append(_output_item(result.call_id, result.content))
            else:
                orphans.append(_orphan_text(result))
            continue
        items = (_assistant_items(message) if message.role == "assistant"
                 else _user_items(message))
        if not items:
            continue  # nothing the API would take (empty text, reasoning alone)
        close_run()
        out.extend(items)
        open_calls.update((c.id, None) for c in message.tool_calls)
    if orphans:
        close_run()
    return ("\n\n".join(instructions) or None), out


def _turns(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with each run of assistant messages joined into one (its parts in order).

    The API reads the input as one list of items: what the model said between two inputs
    is one turn however it was stored, and a reasoning item pairs with the item after it
    even when that item was stored as a message of its own.
    """
    out: list[Message] = []
    for message in messages:
        last = out[-1] if out else None
        if last is not None and last.role == message.role == "assistant":
            out[-1] = replace(last, parts=last.parts + message.parts)
        else:
            out.append(message)
    return out


def _user_items(message: Message) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            content.append({"type": "input_text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append({"type": "input_image", "image_url": part.url,
                            "detail": part.detail or "auto"})
    return [_user_item(content)] if content else []


def _user_item(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": content}


def _assistant_items(message: Message) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    parts = message.parts
    beside = False  # after a reasoning item that was sent: its items keep their ids
    texts: list[TextPart] = []

    def flush_texts() -> None:
        run: list[TextPart] = []
        for text in texts:
            if run and run[-1].item_id != text.item_id:
                items.extend(_text_items(run, beside))
                run = []
            run.append(text)
        if run:
            items.extend(_text_items(run, beside))
        texts.clear()

    for i, part in enumerate(parts):
        if isinstance(part, ReasoningPart):
            flush_texts()
            beside = _carries_item_id(parts[i + 1] if i + 1 < len(parts) else None)
            if beside:
                items.append(reasoning_item(part))
        elif isinstance(part, TextPart):
            if part.text:
                texts.append(part)
        elif isinstance(part, ToolCallPart):
            flush_texts()
            call: dict[str, Any] = {"type": "function_call", "call_id": part.id,
                                    "name": part.name, "arguments": part.arguments}
            if beside and part.item_id is not None:
                call["id"] = part.item_id
            items.append(call)
    flush_texts()
    return items


def _carries_item_id(part: Part | None) -> bool:
    """Whether ``part`` is written as an item with its id (so reasoning may precede it)."""
    if isinstance(part, TextPart):
        return bool(part.text) and part.item_id is not None
    return isinstance(part, ToolCallPart) and part.item_id is not None


def _text_items(run: list[TextPart], beside: bool) -> list[dict[str, Any]]:
    """Texts of one item: an output message with its id beside its reasoning, else plain."""
    item_id = run[0].item_id
    if beside and item_id is not None:
        return [{"type": "message", "role": "assistant", "id": item_id, "status": "completed",
                 "content": [{"type": "output_text", "text": t.text, "annotations": []}
                             for t in run]}]
    return [{"type": "message", "role": "assistant", "content": t.text} for t in run]


def reasoning_item(part: ReasoningPart) -> dict[str, Any]:
    """A reasoning part as the Responses item it came as."""
    item: dict[str, Any] = {"type": "reasoning", "id": part.id,
                            "summary": [{"type": "summary_text", "text": t}
                                        for t in part.summary]}
    if part.encrypted_content is not None:
        item["encrypted_content"] = part.encrypted_content
    if part.content:
        item["content"] = [{"type": "reasoning_text", "text": t} for t in part.content]
    return item


def _output_item(call_id: str, output: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}
