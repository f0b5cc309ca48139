"""Tool calls and results kept paired as both providers require, for one request.

OpenAI wants every tool message right after the assistant message that made its call;
Anthropic wants every tool_use answered by a tool_result in the next user message. A
window cut from a log can break that (a call whose result is not in it, a result whose
call is not); this module repairs the window it is given, never the store.
"""

from __future__ import annotations

from dataclasses import replace

from memci.messages import Message, ToolCallPart
from memci.tokens import Tokenizer

__all__ = ["pair_tool_calls"]


def pair_tool_calls(
    window: list[Message], tokenizer: Tokenizer, call_ids: dict[int, frozenset[str]]
) -> list[Message]:
    """Keep each tool call only with its result right after it, and each result only there.

    Both providers reject an unanswered call or a result that does not follow its call;
    what is dropped here is dropped from this request only, never from the store. Fast
    path: a window whose calls are all answered in place is returned as it is.
    """
    out: list[Message] = []
    i, n = 0, len(window)
    while i < n:
        message = window[i]
        i += 1
        role = message.role
        if role == "tool":
            continue  # a result whose call is not right before it
        if role != "assistant":
            out.append(message)
            continue
        seq = message.seq
        found = call_ids.get(seq) if seq is not None else None
        if found is None:
            found = frozenset(c.id for c in message.tool_calls)
            if seq is not None:
                call_ids[seq] = found  # a stored message never changes
        if not found:
            out.append(message)
            continue
        calls = set(found)
        results: list[Message] = []
        seen: set[str] = set()
        while i < n and window[i].role == "tool":
            result = window[i].tool_result
            if result is not None and result.call_id in calls - seen:
                seen.add(result.call_id)
                results.append(window[i])
            i += 1
        if seen != calls:
            parts = tuple(p for p in message.parts
                          if not (isinstance(p, ToolCallPart) and p.id not in seen))
            if not parts:
                continue
            message = replace(message, parts=parts)
            message = replace(message, tokens=tokenizer.count_message(message))
        out.append(message)
        out.extend(results)
    return out
