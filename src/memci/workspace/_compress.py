"""The compression seam of the notebook and the fastmemo, and its default without an LLM.

A compressor takes entries (oldest first) and returns one text standing for all of them;
the notebook uses it to fold old entries into a milestone, the fastmemo to compact a
section. The default, :func:`extractive_compress`, keeps the start of every entry,
shortened so the whole stays short; an LLM summarizer can be passed instead (any
``Callable[[list[str]], str]``). Whatever it returns is cut to the configured limit.
"""

from __future__ import annotations

from collections.abc import Callable

from memci.workspace._text import shorten

__all__ = ["Compressor", "extractive_compress"]

Compressor = Callable[[list[str]], str]
"""Entries in (oldest first), one text out."""

_BUDGET_COLUMNS = 600
_MIN_COLUMNS = 40


def extractive_compress(texts: list[str]) -> str:
    """Return the entries' starts joined with `` | ``, each shortened to a share of 600 columns."""
    pieces = [" ".join(t.split()) for t in texts if t and not t.isspace()]
    if not pieces:
        return ""
    share = max(_BUDGET_COLUMNS // len(pieces), _MIN_COLUMNS)
    return " | ".join(shorten(p, share) for p in pieces)
