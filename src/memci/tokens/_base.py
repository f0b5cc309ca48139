"""The tokenizer protocol every counter in memci follows.

``count(text)`` counts the tokens of a text; ``count_message(message)`` counts a whole
message as a provider would bill it: its text, tool call names and arguments, tool
results, plus the per-message overhead of the provider's chat format.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from memci.messages import Message

__all__ = ["Tokenizer"]


@runtime_checkable
class Tokenizer(Protocol):
    """Counts tokens; ``name`` is what :func:`memci.tokens.get_tokenizer` was given."""

    name: str

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens of ``message`` including the provider's per-message overhead."""
        ...
