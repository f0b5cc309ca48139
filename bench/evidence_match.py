"""What a request holds (memci's referee), and how many tokens it costs (cl100k_base).

Whether an evidence turn is in a request — **strict** (verbatim) or **fuzzy** (60% of its
content words close together in one message) — is decided by :mod:`memci.evidence`, the
rules ``memci replay`` reports with too, so the bench and the product judge alike.
:func:`request_text` prepares a request given as an OpenAI payload for it.

- **tokens sent**: cl100k_base (tiktoken) over the whole request as OpenAI bills it: per
  message 4 tokens of framing, its text, its ``name`` (+1), each tool call's name and
  arguments (+10), plus 3 for the reply priming, plus the JSON of the ``tools`` list.

Counts are cached by text, so counting the same message twice costs one encode.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import memci
from memci.evidence import RequestText

__all__ = [
    "count_text",
    "message_text",
    "message_tokens",
    "request_text",
    "request_tokens",
]


def message_text(message: Mapping[str, Any]) -> str:
    """The text of an OpenAI chat message (string content or text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, Mapping) and p.get("type") in ("text", "input_text"))
    return ""


@lru_cache(maxsize=200_000)
def count_text(text: str) -> int:
    """cl100k_base tokens of ``text``."""
    return memci.tokens.get_tokenizer("cl100k_base").count(text)


def message_tokens(message: Mapping[str, Any]) -> int:
    """Tokens of one OpenAI chat message, framing included (see the module docstring)."""
    total = 4 + count_text(message_text(message))
    name = message.get("name")
    if name:
        total += count_text(str(name)) + 1
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        total += 10 + count_text(str(function.get("name", "")))
        total += count_text(str(function.get("arguments", "")))
    return total


def request_tokens(payload: Mapping[str, Any]) -> int:
    """Tokens of a whole ``{"messages": [...], "tools": [...]}`` request."""
    total = 3 + sum(message_tokens(m) for m in payload["messages"])
    tools = payload.get("tools")
    if tools:
        total += count_text(json.dumps(tools, ensure_ascii=False))
    return total


def request_text(payload: Mapping[str, Any], question: str | None = None) -> RequestText:
    """A ``{"messages": [...]}`` request prepared for the referee (the question left out)."""
    return RequestText([message_text(m) for m in payload["messages"]], question)
