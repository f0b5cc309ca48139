"""How wide a text is, and how to cut it to a width.

Two measures, each with its own name:

- :func:`width` counts display columns: 1 per character, ``wide`` (2 by default, as a
  terminal does) per East Asian wide or full-width character;
- :func:`line_width` counts columns of a line limit (a summary line, a contents-page
  line): a wide character takes :data:`CJK_WIDTH` (2.5) columns, so a line of 100 columns
  holds 100 Latin characters or 40 Chinese ones. :func:`fit_line` cuts a text to such
  a limit.

Everything here is pure and linear in the text's length.
"""

from __future__ import annotations

import unicodedata

from memci.text._script import is_cjk

__all__ = ["CJK_WIDTH", "fit_line", "is_wide", "line_width", "width"]

#: Columns one CJK character takes in a line limit.
CJK_WIDTH = 2.5


def is_wide(char: str) -> bool:
    """Whether ``char`` takes two columns on a terminal (East Asian wide or full-width)."""
    return char >= "\u1100" and unicodedata.east_asian_width(char) in ("W", "F")


def width(text: str, wide: float = 2.0) -> float:
    """Columns of ``text``: 1 per character, ``wide`` per wide (CJK, full-width) one."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if is_wide(ch)) * (wide - 1)


def line_width(text: str) -> float:
    """Columns of ``text`` in a line limit: 1 per character, :data:`CJK_WIDTH` per wide one."""
    return width(text, CJK_WIDTH)


def fit_line(text: str, limit: float, *, keep_from: int = 0) -> str:
    """Cut ``text`` to at most ``limit`` line columns, at a word boundary, ending in ``…``.

    ``keep_from`` is an index of something worth keeping (a number, a path): when it lies
    past the cut, the window starts shortly before it and opens with ``…``.
    """
    text = text.strip()
    if line_width(text) <= limit:
        return text
    if limit < 2:
        return ""
    if keep_from > 0 and line_width(text[:keep_from]) > limit * 0.6:
        start = max(0, keep_from - 12)
        space = text.rfind(" ", 0, keep_from)
        if space >= start:
            start = space + 1
        return "…" + fit_line(text[start:], limit - 1)
    budget = limit - 1  # the ellipsis
    cut = _cut_index(text, budget)
    head = text[:cut]
    if cut < len(text) and not is_cjk(text[cut - 1 : cut] or " ") and text[cut] != " ":
        space = head.rfind(" ")
        if space > len(head) * 0.5:
            head = head[:space]
    return head.rstrip(" ,，、;；:：-") + "…"


def _cut_index(text: str, budget: float) -> int:
    used = 0.0
    for i, char in enumerate(text):
        used += CJK_WIDTH if is_wide(char) else 1.0
        if used > budget:
            return i
    return len(text)
