"""Choosing the newest messages that fit: the cut rules shared by every strategy.

A cut may fall before any message except a tool message (its result must stay with the
assistant message that called it), so what is kept never splits a tool call from its
results. The planner reads only roles and token counts: no message is loaded to plan.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["newest_that_fit"]


def newest_that_fit(
    roles: Sequence[str], tokens: Sequence[int], budget: int, *, max_messages: int = 0,
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
        if roles[i] != "tool":
            best = i
    return best
