"""Shrinking text to a token budget while keeping both its ends.

The head says what a text is, the tail says how it ended (an exit code, a traceback, a
final answer), so a cut takes from the middle and says how much it took.
"""

from __future__ import annotations

from dataclasses import replace

from memci.messages import Message, TextPart, ToolCallPart, ToolResultPart
from memci.tokens import Tokenizer

__all__ = ["cut_middle", "shrink_message"]

_MARK = "\n[… {n} characters cut …]\n"


def cut_middle(text: str, max_tokens: int, tokenizer: Tokenizer, *, head_share: float = 0.6) -> str:
    """``text`` cut in the middle so that it counts at most ``max_tokens``."""
    if max_tokens <= 0:
        return ""
    if tokenizer.count(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    best = ""
    # Binary search on how many characters to keep; counting is the cost, so O(log n).
    while lo <= hi:
        keep = (lo + hi) // 2
        head = int(keep * head_share)
        tail = keep - head
        candidate = text[:head] + _MARK.format(n=len(text) - keep) + (text[-tail:] if tail else "")
        if tokenizer.count(candidate) <= max_tokens:
            best, lo = candidate, keep + 1
        else:
            hi = keep - 1
    return best


def shrink_message(message: Message, max_tokens: int, tokenizer: Tokenizer) -> Message:
    """``message`` with its longest text cut so that it counts at most ``max_tokens``.

    Tool call ids, names and the pairing of calls and results are never changed; only
    text and tool result content are cut. The result is a view: the store is untouched.
    """
    overhead = tokenizer.count_message(message) - sum(
        tokenizer.count(_text_of(p)) for p in message.parts
    )
    room = max(0, max_tokens - overhead)
    texts = [tokenizer.count(_text_of(p)) for p in message.parts]
    fixed = sum(t for p, t in zip(message.parts, texts, strict=True) if not _cuttable(p))
    room -= fixed
    cuttable = [i for i, p in enumerate(message.parts) if _cuttable(p)]
    if not cuttable:
        return message
    share = max(0, room) // len(cuttable)
    parts = list(message.parts)
    for i in cuttable:
        part = parts[i]
        if isinstance(part, TextPart):
            parts[i] = replace(part, text=cut_middle(part.text, share, tokenizer))
        elif isinstance(part, ToolResultPart):
            parts[i] = replace(part, content=cut_middle(part.content, share, tokenizer))
    shrunk = replace(message, parts=tuple(parts))
    return replace(shrunk, tokens=tokenizer.count_message(shrunk))


def _cuttable(part: object) -> bool:
    return isinstance(part, TextPart | ToolResultPart)


def _text_of(part: object) -> str:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolResultPart):
        return part.content
    if isinstance(part, ToolCallPart):
        return part.name + part.arguments
    return ""
