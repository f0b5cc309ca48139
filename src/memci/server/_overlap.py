"""Where the messages a proxy client sent belong: the overlap rule (pure, no I/O).

Some clients send only their new messages each turn, others their whole history (or a
window of it). memci stores each message once, so it compares what was sent with the
session's branch *as the client saw it* (the visible branch): the messages of the branch the
context follows (:mod:`memci.context._branches`) without system messages, without the
rounds in which memci ran its own tools (marked ``internal`` in the ``memci_proxy``
metadata), and without memci's own tool calls in a message that also called the client's
tools. Two messages are the same when their role, text (as the client was shown it), tool
call ids and answered call id are equal (:func:`message_key`).

A history that differs from the visible branch ``B`` is a branch or a retry, never an
append of the whole history. For the sent list ``S`` (:func:`placement`):

1. **History.** ``L`` = how many messages ``S`` and ``B`` have in common from their start.
   ``L = len(B)``: the client continues the branch and ``S[L:]`` is new. ``L < len(B)``,
   and ``L`` longer than the run of rule 2: the client's conversation leaves the branch
   after ``B[L-1]`` — a regenerated or lost reply (``S`` ends there: nothing is new), an
   edited message, a dropped reply — and ``S[L:]`` is new, continuing ``B[L-1]`` (a fork).
   A single message equal to ``B[0]`` forks only when ``B`` holds one user message (the
   first turn asked again) or the client is known to send its history: a client that sends
   only new messages and repeats its first one must not rewind the conversation.
2. **Tail.** Among the ends ``e`` of ``S``, the longest run of ``S`` ending at ``e`` that
   equals the end of ``B`` (the later ``e`` on a tie): ``S[e:]`` is new and continues the
   branch. So a window of the history, or a resend of the newest message, stores nothing
   twice.
3. **Window fork.** ``S`` starts with a run of at least two messages found inside ``B``
   but not at its end, longer than rule 2's run: a client that keeps a window regenerated or
   edited; ``S[r:]`` continues the run's last message.
4. **Restart.** Nothing in common, from a client known to send its history: it edited its
   first message, and ``S`` is a new branch from the conversation's start.
5. Otherwise everything sent is new and continues the branch.

A client is *known to send its history* when the newest reply on the branch answered a
request of two or more messages placed by rule 1 (the proxy marks that reply
``history``). The proxy reads only the ends of a long branch (:class:`BranchView`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memci._dataclasses import dataclass
from memci.messages import Message

__all__ = [
    "PROXY_META",
    "BranchView",
    "Key",
    "Placement",
    "Seen",
    "message_key",
    "new_start",
    "placement",
    "proxy_meta",
    "visible_key",
]

PROXY_META = "memci_proxy"

Key = tuple[str, str, tuple[str, ...], str | None]
Seen = tuple[Key, int]  # a visible message of the branch: its key and its seq


@dataclass(frozen=True, slots=True)
class Placement:
    """Where the sent messages go: ``sent[start:]`` is new.

    It continues the message ``after`` (a seq of the branch, or 0 for its start: a fork),
    or the branch's end when ``after`` is None. ``kind`` names the rule that placed it:
    ``history``, ``tail``, ``window``, ``restart`` or ``new``.
    """

    start: int
    after: int | None = None
    kind: str = "new"


@dataclass(frozen=True, slots=True)
class BranchView:
    """What the proxy read of the visible branch.

    ``head`` and ``tail``: its first ``len(sent) + 1`` and last ``2 * len(sent) + 16``
    visible messages (fewer when it is shorter); ``whole``: ``head`` is all of it (and so
    is ``tail``); ``history``: its newest reply answered a request that sent the client's
    history.
    """

    head: Sequence[Seen]
    tail: Sequence[Seen]
    whole: bool
    history: bool = False


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


def _tail_run(visible: Sequence[Key], sent: Sequence[Key]) -> tuple[int, int]:
    """Rule 2: the longest run of ``sent`` ending at ``e`` equal to the end of ``visible``."""
    best_run, best_end = 0, 0
    for end in range(len(sent), 0, -1):
        if best_run >= end:
            break  # no shorter prefix can hold a longer run
        run = _common_suffix(visible, sent, end)
        if run > best_run:
            best_run, best_end = run, end
    return best_run, best_end


def new_start(visible: Sequence[Key], sent: Sequence[Key]) -> int:
    """The index in ``sent`` where new messages start by rule 2 alone."""
    return _tail_run(visible, sent)[1]


def _common_start(a: Sequence[Key], b: Sequence[Key], b_start: int = 0) -> int:
    n = 0
    while n < len(a) and b_start + n < len(b) and a[n] == b[b_start + n]:
        n += 1
    return n


def _window_run(tail: Sequence[Key], sent: Sequence[Key]) -> tuple[int, int]:
    """Rule 3: the longest run starting ``sent`` found inside ``tail``, not at its end.

    Returns ``(run, position of its last message in tail)``; the later one on a tie.
    """
    best_run, best_last = 0, -1
    if not sent:
        return best_run, best_last
    for k in range(len(tail) - 1, -1, -1):
        if tail[k] != sent[0]:
            continue
        run = _common_start(sent, tail, k)
        if run > best_run and k + run < len(tail):
            best_run, best_last = run, k + run - 1
    return best_run, best_last


def placement(view: BranchView, sent: Sequence[Key]) -> Placement:
    """Where ``sent`` goes on the visible branch (see the module's rule)."""
    head, tail = view.head, view.tail
    head_keys = [k for k, _ in head]
    tail_keys = [k for k, _ in tail]
    common = _common_start(sent, head_keys)
    if view.whole and common == len(head_keys):
        return Placement(common, kind="history")
    run, end = _tail_run(tail_keys, sent)
    if common > run and (common >= 2 or len(sent) >= 2 or view.history or (
            view.whole and not any(k[0] == "user" for k in head_keys[common:]))):
        return Placement(common, head[common - 1][1], "history")
    window, last = _window_run(tail_keys, sent)
    if run >= 1 and run >= window:
        return Placement(end, kind="tail")
    if window >= 2:
        return Placement(window, tail[last][1], "window")
    if view.history and sent and common == 0 and head:
        return Placement(0, 0, "restart")
    return Placement(0)
