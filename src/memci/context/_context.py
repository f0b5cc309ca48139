"""What a build returns: the messages to send, the tools, and the build's figures.

A :class:`Context` is a value made by ``session.build()``. ``to_openai()``,
``to_anthropic()`` and ``to_responses()`` give request-ready payloads; metadata and store
identity never appear in them. Its tools are the agent's own (given to the build), then
memci's; their names never repeat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memci._dataclasses import dataclass, field
from memci.memory import Retrieved
from memci.messages import Message, ToolSpec, to_anthropic, to_openai, to_responses

__all__ = ["SEGMENTS", "Context", "ContextStats", "Segment", "ToolSpec"]

SEGMENTS = ("system", "state", "contents", "recent", "retrieval")
"""Segment names, in the order a request holds them."""


@dataclass(frozen=True, slots=True)
class Segment:
    """A labelled run of a context's messages: ``messages[start:stop]`` (seed 000).

    ``system``: the system prompt and memci's tool contract; ``state``: the working state
    (fastmemo, context pool, pins, plan, notebook); ``contents``: the contents page of
    archived pages (or a strategy's rolling summary); ``recent``: the window of recent
    pages in full; ``retrieval``: long-term memory gathered for the current page.
    """

    name: str
    start: int
    stop: int
    tokens: int


@dataclass(frozen=True, slots=True)
class ContextStats:
    """Figures of one build.

    ``sections`` maps each section of the context to its tokens; ``shares`` maps each
    segment to the tokens the allocator gave it. ``full_tokens`` is what sending the
    whole history would have cost; ``prefix_tokens`` how many leading tokens are the same
    as in the previous build (what a provider's prompt cache can reuse).
    """

    total_tokens: int
    budget: int
    sections: Mapping[str, int]
    build_ms: float
    messages: int
    full_tokens: int
    strategy: str
    shares: Mapping[str, int] = field(default_factory=dict)
    prefix_tokens: int = 0
    request_bytes: int = 0
    events: tuple[str, ...] = ()
    recipe: str = "chat"

    @property
    def saved_tokens(self) -> int:
        """Tokens this build saved against sending the whole history."""
        return max(0, self.full_tokens - self.total_tokens)


@dataclass(frozen=True, slots=True)
class Context:
    """The answer to "what do I send now?": messages, tools, and figures.

    ``tools``: the agent's own tools (``ToolSpec.agent``) first, then memci's. ``memory``:
    what the retrieval segment shows, line by line (where each came from, its kind, its
    score and date).
    """

    messages: Sequence[Message]
    stats: ContextStats
    tools: Sequence[ToolSpec] = ()
    segments: Sequence[Segment] = ()
    memory: Sequence[Retrieved] = ()

    def segment(self, name: str) -> list[Message]:
        """The messages of segment ``name`` (empty when the context has none)."""
        return [m for seg in self.segments if seg.name == name
                for m in self.messages[seg.start:seg.stop]]

    def to_openai(self) -> dict[str, Any]:
        """``{"messages": [...], "tools": [...]}`` for ``chat.completions.create``.

        ``tools`` is left out when there are none (the API rejects an empty list).
        """
        out: dict[str, Any] = {"messages": to_openai(self.messages)}
        if self.tools:
            out["tools"] = [t.to_openai() for t in self.tools]
        return out

    def to_anthropic(self) -> dict[str, Any]:
        """``{"system": ..., "messages": [...], "tools": [...]}`` for ``messages.create``.

        ``system`` and ``tools`` are left out when empty.
        """
        system, messages = to_anthropic(self.messages)
        out: dict[str, Any] = {"messages": messages}
        if system is not None:
            out["system"] = system
        if self.tools:
            out["tools"] = [t.to_anthropic() for t in self.tools]
        return out

    def to_responses(self) -> dict[str, Any]:
        """``{"input": [...], "tools": [...], "instructions": ...}`` for ``responses.create``.

        The system messages are joined into ``instructions``; reasoning items go back
        right before the items they belong to (see :func:`memci.messages.to_responses`).
        ``instructions`` and ``tools`` are left out when empty.
        """
        instructions, items = to_responses(self.messages)
        out: dict[str, Any] = {"input": items}
        if instructions is not None:
            out["instructions"] = instructions
        if self.tools:
            out["tools"] = [t.to_responses() for t in self.tools]
        return out
