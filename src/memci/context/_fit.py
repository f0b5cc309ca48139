"""What fits: the newest messages within a budget, and text shrunk keeping both its ends.

:func:`newest_that_fit` chooses where a window starts: a cut may fall before any message
except a tool message (its result must stay with the assistant message that called it),
so what is kept never splits a tool call from its results; it reads only roles and token
counts. When even the newest messages do not fit, their text shrinks: the head says what
a text is, the tail says how it ended (an exit code, a traceback, a final answer), so a
cut takes from the middle and says how much it took.
"""

from __future__ import annotations

from collections.abc import Sequence

from memci._dataclasses import replace
from memci.context._log import TOOL
from memci.messages import Message, TextPart, ToolCallPart, ToolResultPart
from memci.tokens import Tokenizer

__all__ = ["CUT_FLOOR", "cut_middle", "fit_messages", "floor_tokens", "newest_that_fit",
           "shrink_message"]

_MARK = "\n[… {n} characters cut …]\n"
CUT_FLOOR = 64  # tokens a cut message keeps at least (its text's head, tail and the marker)


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
    cuttable = [i for i, p in enumerate(message.parts) if _cuttable(p)]
    if not cuttable:
        return message
    share = 0  # no room: every text goes, and nothing needs counting to know it
    if max_tokens > 0:
        texts = [tokenizer.count(_text_of(p)) for p in message.parts]
        overhead = tokenizer.count_message(message) - sum(texts)
        fixed = sum(t for p, t in zip(message.parts, texts, strict=True) if not _cuttable(p))
        share = max(0, max(0, max_tokens - overhead) - fixed) // len(cuttable)
    parts = list(message.parts)
    for i in cuttable:
        part = parts[i]
        if isinstance(part, TextPart):
            parts[i] = replace(part, text=cut_middle(part.text, share, tokenizer))
        elif isinstance(part, ToolResultPart):
            parts[i] = replace(part, content=cut_middle(part.content, share, tokenizer))
    shrunk = replace(message, parts=tuple(parts))
    return replace(shrunk, tokens=tokenizer.count_message(shrunk))


def floor_tokens(message: Message, tokenizer: Tokenizer) -> int:
    """Tokens ``message`` keeps at least when cut by :func:`fit_messages`.

    Its text goes down to ``CUT_FLOOR`` tokens; images, tool calls and the message's
    framing are never cut, so they count whole.
    """
    tokens = message.tokens if message.tokens is not None else tokenizer.count_message(message)
    if tokens <= CUT_FLOOR:
        return tokens
    fixed = shrink_message(message, 0, tokenizer).tokens or 0
    return min(tokens, max(CUT_FLOOR, fixed))


def fit_messages(messages: Sequence[Message], room: int, tokenizer: Tokenizer) -> list[Message]:
    """``messages``, the largest cut first, so that together they count at most ``room``.

    Each keeps at least its :func:`floor_tokens`: when ``room`` is below the sum of those
    floors the result counts that sum, and the caller (who checked the budget against
    it) decides. Messages that fit whole are returned unchanged.
    """
    sizes = [m.tokens or 0 for m in messages]
    if sum(sizes) <= room:
        return list(messages)
    floors = [floor_tokens(m, tokenizer) for m in messages]
    # The highest level such that every message cut to max(its floor, level) fits.
    lo, hi = 0, max(sizes)
    while lo < hi:
        level = (lo + hi + 1) // 2
        if sum(min(s, max(f, level)) for s, f in zip(sizes, floors, strict=True)) <= room:
            lo = level
        else:
            hi = level - 1
    return [m if s <= max(f, lo) else shrink_message(m, max(f, lo), tokenizer)
            for m, s, f in zip(messages, sizes, floors, strict=True)]


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


def newest_that_fit(
    roles: bytearray, tokens: Sequence[int], budget: int, *, max_messages: int = 0,
    lo: int = 0,
) -> int:
    """The first index of the longest clean suffix of ``[lo, n)`` within budget.

    Returns ``len(roles)`` when not even the newest clean unit fits.
    """
    n = len(roles)
    best = n
    total = 0
    for i in range(n - 1, lo - 1, -1):
        total += tokens[i]
        if total > budget or (max_messages and n - i > max_messages):
            break
        if roles[i] != TOOL:
            best = i
    return best
