"""What a model call returns (:class:`Completion`) and what a client is (:class:`LLMClient`).

Both are plain values and a structural protocol, so a summarizer or judge can take any
object with a matching ``complete`` method: the two HTTP clients of this package, or a
scripted stand-in in a test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from memci._dataclasses import dataclass, field
from memci.messages import Message

__all__ = ["Completion", "LLMClient"]


@dataclass(frozen=True, slots=True)
class Completion:
    """One model reply.

    ``input_tokens`` counts every prompt token the endpoint reports (for Anthropic:
    uncached plus cache-read plus cache-write); both counts are None when the endpoint
    sent no usage. ``stop_reason`` is the endpoint's own word (``stop``, ``length``,
    ``end_turn``, ``max_tokens`` …). ``raw`` is the decoded JSON reply, as sent.
    """

    text: str
    model: str
    input_tokens: int | None
    output_tokens: int | None
    raw: Mapping[str, Any] = field(repr=False, compare=False)
    stop_reason: str | None = None


@runtime_checkable
class LLMClient(Protocol):
    """Anything that can answer a conversation with one :class:`Completion`."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        max_tokens: int = 512,
        temperature: float | None = None,
    ) -> Completion:
        """Send ``messages`` (after ``system``) and return the model's reply."""
        ...
