"""Which of the messages a proxy client sent are new: the overlap rule (pure, no I/O).

Some clients send only their new messages each turn, others their whole history (or a
window of it). memci stores each message once, so it compares what was sent with the
tail of the session's *client-visible log*: the stored log as the client saw it, that is
without system messages, without the rounds in which memci ran its own tools (marked
``internal`` in the ``memci_proxy`` metadata), and without memci's own tool calls in a
message that also called the client's tools. Two messages are the same when their role,
text, tool call ids and answered call id are equal (:func:`message_key`).

The rule: among the ends ``e`` of the sent list, take the one where the longest run of
sent messages ending at ``e`` equals the end of the visible log (the largest ``e`` on a
tie); what comes after ``e`` is new. With no overlap at all, everything sent is new.
So a whole-history client matches its full history, a client that keeps a window of it
matches that window, a new-messages-only client matches nothing (all new), and a client
retrying a turn whose reply was lost (the log ends with the very message it resends)
stores nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memci.messages import Message

__all__ = ["PROXY_META", "Key", "message_key", "new_start", "visible_key"]

PROXY_META = "memci_proxy"

Key = tuple[str, str, tuple[str, ...], str | None]


def message_key(message: Message) -> Key:
    """Role, text, tool call ids and answered call id: what makes two messages the same."""
    result = message.tool_result
    return (message.role, message.content, tuple(c.id for c in message.tool_calls),
            result.call_id if result is not None else None)


def proxy_meta(message: Message) -> Mapping[str, Any]:
    """The proxy's notes on a stored message (empty when it has none)."""
    meta = message.metadata.get(PROXY_META)
    return meta if isinstance(meta, Mapping) else {}


def visible_key(message: Message) -> Key | None:
    """The key of a stored message as the client saw it; None when it never saw it."""
    if message.role == "system":
        return None
    meta = proxy_meta(message)
    if meta.get("internal"):
        return None
    hidden = set(meta.get("internal_calls") or ())
    text = meta.get("client_text")
    result = message.tool_result
    return (message.role, text if isinstance(text, str) else message.content,
            tuple(c.id for c in message.tool_calls if c.id not in hidden),
            result.call_id if result is not None else None)


def _common_suffix(a: Sequence[Key], b: Sequence[Key], b_end: int) -> int:
    n = 0
    while n < len(a) and n < b_end and a[-1 - n] == b[b_end - 1 - n]:
        n += 1
    return n


def new_start(visible: Sequence[Key], sent: Sequence[Key]) -> int:
    """The index in ``sent`` where the new messages start (see the module's rule)."""
    best_run, best_end = 0, 0
    for end in range(len(sent), 0, -1):
        if best_run >= end:
            break  # no shorter prefix can hold a longer run
        run = _common_suffix(visible, sent, end)
        if run > best_run:
            best_run, best_end = run, end
    return best_end
