"""Module-level shortcuts to one shared extractive summarizer (what ``build`` calls).

The summarizer is made on first use, not at import, and is safe to share between threads
(it keeps no state between calls).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from memci.messages import Message
from memci.summarize._extractive import ExtractiveSummarizer

__all__ = ["handoff", "page_title", "summarize_entry", "summarize_page", "summarize_text"]

_lock = threading.Lock()
_shared: ExtractiveSummarizer | None = None


def _summarizer() -> ExtractiveSummarizer:
    global _shared
    if _shared is None:
        with _lock:
            if _shared is None:
                _shared = ExtractiveSummarizer()
    return _shared


def summarize_entry(message: Message) -> str:
    """Write one contents-page line for ``message`` (extractive)."""
    return _summarizer().summarize_entry(message)


def summarize_page(messages: Sequence[Message]) -> list[str]:
    """Write one line per message of a page (extractive)."""
    return _summarizer().summarize_page(messages)


def page_title(messages: Sequence[Message]) -> str:
    """Return a page's title (extractive)."""
    return _summarizer().page_title(messages)


def summarize_text(texts: Sequence[str], max_tokens: int) -> str:
    """Summarize ``texts`` within ``max_tokens`` (extractive)."""
    return _summarizer().summarize_text(texts, max_tokens)


def handoff(messages: Sequence[Message], max_tokens: int) -> str:
    """Write a handoff note within ``max_tokens`` (extractive)."""
    return _summarizer().handoff(messages, max_tokens)
