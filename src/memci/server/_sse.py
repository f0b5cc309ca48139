"""Stream formats of the proxy: OpenAI chunks and Anthropic events (no I/O but reading).

- :class:`Chunks` assembles an OpenAI reply (choice 0) from its stream chunks;
- :func:`sse_data` reads the ``data`` of each server-sent event of an httpx response;
- :func:`drop_calls` takes memci's own tool calls out of a held chunk (renumbering the rest);
- :func:`as_chunks` turns a non-streamed completion into chunks (an upstream that ignores
  ``stream``);
- :func:`anthropic_events` writes a whole Anthropic message as its stream of events.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from memci._dataclasses import dataclass, field

__all__ = ["Chunks", "anthropic_events", "as_chunks", "drop_calls", "sse", "sse_data"]


@dataclass
class Chunks:
    """An OpenAI reply assembled from its stream chunks (choice 0)."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, str]] = field(default_factory=dict)

    def add(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            return
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                continue
            for key in ("content", "refusal"):
                if isinstance(delta.get(key), str):
                    self.text.append(delta[key])
            for call in delta.get("tool_calls") or ():
                if not isinstance(call, dict):
                    continue
                slot = self.calls.setdefault(int(call.get("index", 0)),
                                             {"id": "", "name": "", "arguments": ""})
                if call.get("id"):
                    slot["id"] = str(call["id"])
                function = call.get("function") or {}
                slot["name"] += str(function.get("name") or "")
                slot["arguments"] += str(function.get("arguments") or "")

    def message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if self.calls:
            out["tool_calls"] = [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"] or "{}"}}
                for _, c in sorted(self.calls.items())]
        return out


def sse(data: str) -> str:
    return f"data: {data}\n\n"


def drop_calls(data: str, drop: set[int], index_of: Mapping[int, int]) -> str:
    """A held stream chunk without memci's tool calls (the rest renumbered)."""
    try:
        chunk = json.loads(data)
    except ValueError:
        return data
    if not isinstance(chunk, dict):
        return data
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(delta, dict) or not delta.get("tool_calls"):
            continue
        kept = []
        for call in delta["tool_calls"]:
            position = int(call.get("index", 0))
            if position not in drop:
                kept.append({**call, "index": index_of[position]})
        if kept:
            delta["tool_calls"] = kept
        else:
            del delta["tool_calls"]
    return json.dumps(chunk, ensure_ascii=False)


async def sse_data(response: httpx.Response) -> AsyncIterator[str]:
    """The ``data`` of each server-sent event of ``response``."""
    lines: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if lines:
                yield "\n".join(lines)
                lines = []
            continue
        if line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))
    if lines:
        yield "\n".join(lines)


def as_chunks(data: Any) -> list[str]:
    """A non-streamed completion as stream chunks (for an upstream that ignores stream)."""
    if not isinstance(data, dict):
        return []
    base = {k: data[k] for k in ("id", "model", "created") if k in data}
    chunks = []
    for choice in data.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        message = dict(choice.get("message") or {})
        for i, call in enumerate(message.get("tool_calls") or ()):
            if isinstance(call, dict):
                call.setdefault("index", i)
        chunks.append({**base, "object": "chat.completion.chunk", "choices": [
            {"index": choice.get("index", 0), "delta": message,
             "finish_reason": choice.get("finish_reason")}]})
    return [json.dumps(c, ensure_ascii=False) for c in chunks]


def anthropic_events(message: Mapping[str, Any]) -> list[str]:
    """A whole Anthropic message as the events of its stream."""

    def event(kind: str, data: Mapping[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data}, ensure_ascii=False)}\n\n"

    usage = dict(message.get("usage") or {})
    start = {k: v for k, v in message.items() if k not in ("content", "stop_reason", "usage")}
    events = [event("message_start", {"message": {
        **start, "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": usage.get("input_tokens", 0), "output_tokens": 0}}})]
    for index, block in enumerate(message.get("content") or ()):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            events.append(event("content_block_start", {
                "index": index, "content_block": {"type": "text", "text": ""}}))
            events.append(event("content_block_delta", {
                "index": index, "delta": {"type": "text_delta", "text": block.get("text", "")}}))
        elif block.get("type") == "tool_use":
            events.append(event("content_block_start", {"index": index, "content_block": {
                **block, "input": {}}}))
            events.append(event("content_block_delta", {"index": index, "delta": {
                "type": "input_json_delta",
                "partial_json": json.dumps(block.get("input", {}), ensure_ascii=False)}}))
        else:
            events.append(event("content_block_start", {"index": index,
                                                        "content_block": block}))
        events.append(event("content_block_stop", {"index": index}))
    events.append(event("message_delta", {
        "delta": {"stop_reason": message.get("stop_reason"),
                  "stop_sequence": message.get("stop_sequence")},
        "usage": {"output_tokens": usage.get("output_tokens", 0)}}))
    events.append(event("message_stop", {}))
    return events
