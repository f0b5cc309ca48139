"""Anthropic Messages: ``{system, messages, tools}`` with content blocks, or Claude Code logs.

Shapes: an object with a ``messages`` list (or such a list under another key, as
:func:`~memci.traces._format.message_list` finds it) of ``{role, content}`` whose content is a
string or blocks (``text``, ``image``, ``tool_use`` in assistant messages, ``tool_result``
in user messages), ``system`` as text or blocks and ``tools`` with ``input_schema``; a
list (or JSONL) of such messages; a Claude Code session log (JSONL lines ``{type: user |
assistant, message: {role, content}, timestamp}``, where the blocks of one response are
written one line each and are read back as one message; side chains and summary lines are
left out). Thinking blocks are left out: earlier turns' thinking is not sent back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memci.traces._format import Format, dicts, mapping, message_list
from memci.traces._transcript import Call, Transcript, text_of

__all__ = ["ANTHROPIC"]

_DISTINCT = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return dicts(message.get("content"))


def _looks_anthropic(messages: list[Mapping[str, Any]]) -> bool:
    for message in messages:
        for block in _blocks(message):
            kind = block.get("type")
            if (isinstance(kind, str) and kind in _DISTINCT) or (
                    kind == "image" and "source" in block):
                return True
    return False


def _holder(top: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[Any]] | None:
    """The object that holds the messages, and the messages: ``messages`` or nested."""
    if isinstance(top.get("messages"), list):
        return top, top["messages"]
    return message_list(top)


def _claude_code(items: list[Mapping[str, Any]]) -> bool:
    return any(i.get("type") in ("user", "assistant") and mapping(i.get("message"))
               for i in items[:50])


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    top = mapping(data)
    if top is not None:
        found = _holder(top)
        if found is None:
            return None
        holder, messages = found
        tools = dicts(holder.get("tools"))
        if (not strict or _looks_anthropic(dicts(messages))
                or isinstance(holder.get("system"), list)
                or any("input_schema" in t for t in tools)):
            return [top]
        return None
    items = dicts(data)
    if _claude_code(items):
        return [data]
    if any("role" in i for i in items) and (not strict or _looks_anthropic(items)):
        return [data]
    return None


class _Reader:
    """Reads messages in order; holds back an assistant response logged over many lines."""

    def __init__(self, out: Transcript) -> None:
        self.out = out
        self.pending: dict[str, Any] | None = None

    def message(self, message: Mapping[str, Any], origin: str, created: object = None,
                response: object = None) -> None:
        role = message.get("role")
        if role == "assistant":
            blocks = _blocks(message) if isinstance(message.get("content"), list) else [
                {"type": "text", "text": text_of(message.get("content"))}]
            if self.pending is not None and response and self.pending["id"] == response:
                self.pending["blocks"].extend(blocks)
                return
            self.flush()
            self.pending = {"id": response, "blocks": list(blocks), "origin": origin,
                            "created": created}
            return
        self.flush()
        if role == "user":
            content = message.get("content")
            if not isinstance(content, list):
                self.out.user(content, origin=origin, created_at=created)
                return
            rest: list[Any] = []
            for block in dicts(content):
                if block.get("type") == "tool_result":
                    call_id = block.get("tool_use_id")
                    self.out.result(block.get("content"), origin=origin,
                                    call_id=call_id if isinstance(call_id, str) else None,
                                    created_at=created, is_error=bool(block.get("is_error")))
                else:
                    rest.append(block)
            if rest:
                self.out.user(rest, origin=origin, created_at=created)
        elif role == "system":
            self.out.system(message.get("content"), origin=origin, created_at=created)
        else:
            self.out.skip(origin, f"role {role!r} is not a chat role, skipped")

    def flush(self) -> None:
        if self.pending is None:
            return
        pending, self.pending = self.pending, None
        calls, content = [], []
        for block in pending["blocks"]:
            if block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                call_id = block.get("id")
                calls.append(Call(block["name"], block.get("input"),
                                  call_id if isinstance(call_id, str) else None))
            elif block.get("type") not in ("server_tool_use",) and not str(
                    block.get("type", "")).endswith("_tool_result"):
                content.append(block)
        self.out.assistant(content, calls, origin=pending["origin"],
                           created_at=pending["created"])


def _read(record: Any, out: Transcript) -> None:
    reader = _Reader(out)
    top = mapping(record)
    raw: Any = record
    if top is not None:
        holder, raw = _holder(top) or (top, None)
        out.system(holder.get("system"), origin="system")
        out.add_tools(holder.get("tools"))
    for number, item in enumerate(raw if isinstance(raw, list) else [], start=1):
        origin = f"message {number}"
        entry = mapping(item)
        if entry is None:
            out.skip(origin, "not a message object, skipped")
            continue
        inner = mapping(entry.get("message"))
        if inner is None and "role" in entry:
            reader.message(entry, origin, entry.get("created_at"))
        elif inner is not None and entry.get("isSidechain"):
            out.skip(origin, "a side chain (a sub-agent's own conversation), skipped")
        elif inner is not None and entry.get("type") in ("user", "assistant"):
            reader.message(inner, origin, entry.get("timestamp"), inner.get("id"))
        else:
            out.skip(origin, f"a {entry.get('type', 'non-message')!s} entry, skipped")
    reader.flush()


ANTHROPIC = Format(
    "anthropic", "Anthropic messages: {system, messages: [{role, content: [text | tool_use | "
    "tool_result blocks]}], tools}, or a Claude Code session log (JSONL)",
    _conversations, _read)
