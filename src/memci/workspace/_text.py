"""Small text helpers of the workspace: line counts, one-line shortening, times.

Lines are split on newlines only (a lone carriage return of a progress bar does not
start a line), so line numbers agree between artifacts, ``grep`` and ``file_snippet``.
Shortening counts East Asian wide and full-width characters as two columns, as a
terminal does (:func:`memci.text.width`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from memci.text import is_wide, width

__all__ = ["clip", "count_lines", "format_time", "shorten"]


def count_lines(text: str) -> int:
    """Lines of ``text``: one more than its newlines unless it ends with one (0 if empty)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def shorten(text: str, columns: int, *, ellipsis: str = "…") -> str:
    """``text`` on one line, cut to at most ``columns`` display columns with ``ellipsis``."""
    text = " ".join(text.split())
    if width(text) <= columns:
        return text
    room = max(columns - int(width(ellipsis)), 1)
    if text.isascii():
        cut = text[:room]
    else:
        used = 0
        end = 0
        for end, ch in enumerate(text):  # noqa: B007 - end is used after the loop
            used += 2 if is_wide(ch) else 1
            if used > room:
                break
        cut = text[:end]
    # Cut at a word boundary when one is near, so a shortened line does not end mid-word.
    space = cut.rfind(" ")
    if space > len(cut) * 2 // 3:
        cut = cut[:space]
    return cut.rstrip() + ellipsis


def format_time(moment: datetime) -> str:
    """Format an absolute UTC time to the minute, e.g. ``2025-06-01T12:00Z`` (stable in prompts)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def clip(text: str, max_chars: int, *, ellipsis: str = "…") -> str:
    """``text`` cut to at most ``max_chars`` characters, ending with ``ellipsis`` if cut."""
    if len(text) <= max_chars:
        return text
    return text[:max(max_chars - len(ellipsis), 0)].rstrip() + ellipsis
