"""OpenAI chat messages: a list, JSONL, or an object with ``messages``.

Shapes: a JSON list (or JSONL) of ``{role, content, tool_calls?, tool_call_id?}``
messages; an object with a ``messages`` list and optionally ``system`` and ``tools``
(a request log, mini-swe-agent's ``*.traj.json``, memci's examples), or with such a list
under another key (``conversation`` in LMSYS-Chat and WildChat, ``dialogue``, ``chat``,
…, down to three levels); a list (or JSONL) of such objects, one conversation each
(fine-tuning files, chat datasets). Legacy ``function_call`` and
``function`` messages are read as tool calls and results. Entries whose role is not a
chat role (``exit`` in mini-swe-agent traces) are left out with a note. Items of the
Responses API (``function_call``, ``function_call_output``, as the OpenAI Agents SDK keeps
a session) are read too.
"""

from __future__ import annotations

from typing import Any

from memci.traces._format import Format, dicts, mapping, message_list
from memci.traces._transcript import Transcript

__all__ = ["OPENAI"]


def _holds_messages(record: Any) -> bool:
    top = mapping(record)
    return top is not None and (isinstance(top.get("messages"), list)
                                or message_list(top) is not None)


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    del strict  # the last format tried: any list of messages will do
    if mapping(data) is not None:
        return [data] if _holds_messages(data) else None
    items = dicts(data)
    if items and all(_holds_messages(i) for i in items):
        return list(items)
    if any("role" in i or i.get("type") == "function_call_output" for i in items):
        return [data]
    return None


def _read(record: Any, out: Transcript) -> None:
    top = mapping(record)
    raw: Any = record
    if top is not None:
        found = (top, top["messages"]) if isinstance(top.get("messages"), list) else \
            message_list(top)
        holder, raw = found if found is not None else (top, None)
        out.system(holder.get("system"), origin="system")
        out.add_tools(holder.get("tools") or holder.get("functions"))
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
