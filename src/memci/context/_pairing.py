"""Tool calls and results kept paired as both providers require, for one request.

OpenAI wants every tool message right after the assistant message that made its call;
Anthropic wants every tool_use answered by a tool_result in the next user message. A
window cut from a log can break that, and so can a conversation: a result that came late
(after the user spoke again), a call whose result never came. This module repairs the
window it is given, never the store:

- a call is followed by its results; one that came late is moved up to it;
- a call with no result in the window gets a stand-in error result,
  :data:`~memci.messages.MISSING_RESULT` (docs/messages.md): the call stays in the
  request, so the model sees it was made and that nothing came back, and can make it again;
- a result whose call is not in the window is left out (its page is on the contents page).

A window that keeps the rules comes back unchanged. :class:`Pairing` checks the windows of
one log build after build: the part a window shares with the last window found paired is
not walked again.
"""

from __future__ import annotations

import operator
from bisect import bisect_left
from collections import defaultdict

from memci._dataclasses import replace
from memci.messages import MISSING_RESULT, Message
from memci.tokens import Tokenizer

__all__ = ["Pairing", "pair_tool_calls", "stand_in_result"]


def stand_in_result(call_id: str, tokenizer: Tokenizer) -> Message:
    """The error result a request carries for a call whose result is not there."""
    message = Message.tool(call_id, MISSING_RESULT, is_error=True)
    return replace(message, tokens=tokenizer.count_message(message))


class Pairing:
    """:func:`pair_tool_calls` for the successive windows of one log.

    A build's window mostly repeats the last one: the same message objects (a stored
    message never changes), then what is new. A window found paired is kept; the next is
    checked from the last place both share where no call is open, and comes back as it is
    when that rest keeps the rules.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._call_ids: dict[int, tuple[str, ...]] = {}
        self._last: list[Message] = []  # the last window found paired

    def __call__(self, window: list[Message]) -> list[Message]:
        """``window`` with each call followed by its result (see :func:`pair_tool_calls`)."""
        last = self._last
        same = list(map(operator.is_, window, last))  # the shared start, compared in C
        start = same.index(False) if False in same else len(same)
        # In a paired window no call is open before a message that is not a tool result:
        # the check resumes at such a place with nothing open.
        while 0 < start < len(last) and last[start].role == "tool":
            start -= 1
        rest = window[start:]
        if _paired(rest, [_calls(m, self._call_ids) if m.role == "assistant" else ()
                          for m in rest]):
            self._last = list(window)
            return window
        return pair_tool_calls(window, self.tokenizer, self._call_ids)


def pair_tool_calls(
    window: list[Message], tokenizer: Tokenizer, call_ids: dict[int, tuple[str, ...]]
) -> list[Message]:
    """Each tool call with its result right after it (or a stand-in), each result only there.

    ``call_ids`` caches the call ids of stored assistant messages by seq (a stored
    message never changes).
    """
    calls_of = [_calls(m, call_ids) if m.role == "assistant" else () for m in window]
    if _paired(window, calls_of):
        return window  # the common case: nothing to move, nothing to stand in
    # Where each call id is called and answered, so a late result is found in O(log n).
    called: dict[str, list[int]] = defaultdict(list)
    answered: dict[str, list[int]] = defaultdict(list)
    for i, message in enumerate(window):
        for call_id in calls_of[i]:
            called[call_id].append(i)
        result = message.tool_result if message.role == "tool" else None
        if result is not None:
            answered[result.call_id].append(i)
    used: set[int] = set()
    out: list[Message] = []
    i, n = 0, len(window)
    while i < n:
        message = window[i]
        calls = calls_of[i]
        i += 1
        if message.role == "tool":
            continue  # moved up to its call, or a result whose call is not right before it
        out.append(message)
        if not calls:
            continue
        results: list[Message] = []
        seen: set[str] = set()
        while i < n and window[i].role == "tool":
            result = window[i].tool_result
            if (i not in used and result is not None and result.call_id in calls
                    and result.call_id not in seen):
                seen.add(result.call_id)
                used.add(i)
                results.append(window[i])
            i += 1
        for call_id in calls:
            if call_id in seen:
                continue
            seen.add(call_id)
            late = _late_result(call_id, i, called, answered, used)
            if late is not None:
                used.add(late)
                results.append(window[late])
            else:
                results.append(stand_in_result(call_id, tokenizer))
        out.extend(results)
    return out


def _calls(message: Message, cache: dict[int, tuple[str, ...]]) -> tuple[str, ...]:
    seq = message.seq
    found = cache.get(seq) if seq is not None else None
    if found is None:
        found = tuple(dict.fromkeys(c.id for c in message.tool_calls))
        if seq is not None:
            cache[seq] = found
    return found


def _paired(window: list[Message], calls_of: list[tuple[str, ...]]) -> bool:
    """Whether every call is answered right after it, and every result answers one there."""
    open_calls: set[str] = set()
    for message, calls in zip(window, calls_of, strict=True):
        if message.role == "tool":
            result = message.tool_result
            if result is None or result.call_id not in open_calls:
                return False
            open_calls.discard(result.call_id)
            continue
        if open_calls:
            return False
        open_calls = set(calls)
    return not open_calls


def _late_result(
    call_id: str, after: int, called: dict[str, list[int]], answered: dict[str, list[int]],
    used: set[int],
) -> int | None:
    """The first unused result for ``call_id`` after ``after``, before the id is called again."""
    calls = called[call_id]
    k = bisect_left(calls, after)
    again = calls[k] if k < len(calls) else None  # a later call with the same id
    results = answered.get(call_id, [])
    for j in results[bisect_left(results, after):]:
        if again is not None and j > again:
            return None
        if j not in used:
            return j
    return None
