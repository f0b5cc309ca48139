"""OpenAI chat messages: a list, JSONL, or an object with ``messages``.

Shapes: a JSON list (or JSONL) of ``{role, content, tool_calls?, tool_call_id?}``
messages; an object with a ``messages`` list and optionally ``system`` and ``tools``
(a request log, mini-swe-agent's ``*.traj.json``, memci's examples); a list (or JSONL) of
such objects, one conversation each (fine-tuning files). Legacy ``function_call`` and
``function`` messages are read as tool calls and results. Entries whose role is not a
chat role (``exit`` in mini-swe-agent traces) are left out with a note. Items of the
Responses API (``function_call``, ``function_call_output``, as the OpenAI Agents SDK keeps
a session) are read too.
"""

from __future__ import annotations

from typing import Any

from memci.traces._format import Format, dicts, mapping
from memci.traces._transcript import Transcript

__all__ = ["OPENAI"]


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    del strict  # the last format tried: any list of messages will do
    top = mapping(data)
    if top is not None:
        return [top] if isinstance(top.get("messages"), list) else None
    items = dicts(data)
    if items and all(isinstance(i.get("messages"), list) for i in items):
        return list(items)
    if any("role" in i or i.get("type") == "function_call_output" for i in items):
        return [data]
    return None


def _read(record: Any, out: Transcript) -> None:
    top = mapping(record)
    raw: Any = record
    if top is not None:
        raw = top.get("messages")
        out.system(top.get("system"), origin="system")
        out.add_tools(top.get("tools") or top.get("functions"))
    for number, item in enumerate(raw if isinstance(raw, list) else [], start=1):
        message = mapping(item)
        if message is None:
            out.skip(f"message {number}", "not a message object, skipped")
        else:
            out.openai(message, origin=f"message {number}")


OPENAI = Format(
    "openai", "OpenAI chat messages: a list or JSONL of {role, content, tool_calls} (or "
    "Responses items), or {messages: [...], tools?} (mini-swe-agent .traj.json)",
    _conversations, _read)
