"""The summarizer protocol: one interface for every kind of summary memci makes.

- :meth:`Summarizer.summarize_entry` — one short line for one message: the per-entry line
  of the contents page (about 100 columns; a CJK character counts 2.5, so ~40 of them);
- :meth:`Summarizer.summarize_page` — one such line per message of a page, and
  :meth:`Summarizer.page_title` — the page's title;
- :meth:`Summarizer.summarize_text` — a rolling or compaction summary of many texts within
  a token budget (context pool, notebook and fastmemo compaction, the summarize strategy);
- :meth:`Summarizer.handoff` — a note that lets another agent take over a conversation.

Lines carry no role prefix ("User:"): whoever lays out the contents page adds it.
Implementations: :class:`~memci.summarize.ExtractiveSummarizer` (no model, deterministic,
used inside ``build``) and :class:`~memci.summarize.LLMSummarizer` (through a
:mod:`memci.llm` client, falling back to the extractive one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memci.messages import Message

__all__ = ["ENTRY_WIDTH", "TITLE_WIDTH", "Summarizer", "TokenCounter"]

#: Columns of one contents-page line (a CJK character counts 2.5).
ENTRY_WIDTH = 100
#: Columns of a page title.
TITLE_WIDTH = 60


@runtime_checkable
class TokenCounter(Protocol):
    """Anything that counts tokens (every :class:`memci.tokens.Tokenizer` does)."""

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        ...


@runtime_checkable
class Summarizer(Protocol):
    """What every summarizer answers."""

    def summarize_entry(self, message: Message) -> str:
        """One short line for one message."""
        ...

    def summarize_page(self, messages: Sequence[Message]) -> list[str]:
        """One line per message of a page, in order."""
        ...

    def page_title(self, messages: Sequence[Message]) -> str:
        """Return a title for a page: what it was about."""
        ...

    def summarize_text(self, texts: Sequence[str], max_tokens: int) -> str:
        """Summarize ``texts`` in at most ``max_tokens`` tokens."""
        ...

    def handoff(self, messages: Sequence[Message], max_tokens: int) -> str:
        """Write a handoff note of at most ``max_tokens`` tokens for another agent."""
        ...
