"""Replaying a recorded conversation or agent trace through a session.

A replay feeds the messages one at a time and builds the context before every assistant
message, as an agent would before calling its model, and records what memci would have
sent against what the full history costs.

Accepted files: a JSON list of messages, JSONL (one message a line), or a JSON object
with a ``messages`` list (and optionally a ``system`` string), such as the
mini-swe-agent ``*.traj.json`` traces. Entries whose role is not a chat role (``exit``
in those traces) are skipped and reported.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from memci.engine import Session
from memci.errors import InvalidFileError, MemciError

__all__ = ["Conversation", "ReplayResult", "Request", "load_conversation", "replay"]

_CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class Conversation:
    """The chat messages of a file, and notes on what was skipped."""

    messages: list[dict[str, Any]]
    skipped: list[str]


@dataclass(frozen=True, slots=True)
class Request:
    """One build during a replay: what memci sends against the whole history."""

    number: int
    seq: int
    memci_tokens: int
    full_tokens: int
    build_ms: float
    prefix_tokens: int
    events: tuple[str, ...] = ()


@dataclass(slots=True)
class ReplayResult:
    """Every request of a replay, with totals."""

    requests: list[Request] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    messages: int = 0

    @property
    def memci_tokens(self) -> int:
        """Tokens memci sent over all requests."""
        return sum(r.memci_tokens for r in self.requests)

    @property
    def full_tokens(self) -> int:
        """Tokens the full history would have cost over all requests."""
        return sum(r.full_tokens for r in self.requests)

    @property
    def saved_tokens(self) -> int:
        """Tokens saved against sending the full history every time."""
        return self.full_tokens - self.memci_tokens

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON-ready dict."""
        return {
            "messages": self.messages,
            "skipped": self.skipped,
            "requests": [
                {"request": r.number, "seq": r.seq, "memci_tokens": r.memci_tokens,
                 "full_tokens": r.full_tokens, "build_ms": round(r.build_ms, 3),
                 "prefix_tokens": r.prefix_tokens, "events": list(r.events)}
                for r in self.requests
            ],
            "totals": {"requests": len(self.requests), "memci_tokens": self.memci_tokens,
                       "full_tokens": self.full_tokens, "saved_tokens": self.saved_tokens},
        }


def load_conversation(path: Path) -> Conversation:
    """Read a conversation file; raise :class:`InvalidFileError` saying what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise InvalidFileError(f"{path} is not UTF-8 text: {exc}") from exc
    data: Any
    try:
        data = json.loads(text)
    except ValueError:
        data = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line))
            except ValueError as exc:
                raise InvalidFileError(
                    f"{path} is neither JSON nor JSONL (line {number}: {exc})"
                ) from exc
    raw: list[Any]
    system: Any = None
    if isinstance(data, dict):
        data = cast(dict[str, Any], data)
        if not isinstance(data.get("messages"), list):
            raise InvalidFileError(f"{path}: a JSON object must have a 'messages' list")
        raw, system = data["messages"], data.get("system")
    elif isinstance(data, list):
        raw = data
    else:
        raise InvalidFileError(f"{path}: expected a list of messages or an object with one")
    messages: list[dict[str, Any]] = []
    skipped: list[str] = []
    if isinstance(system, str) and system:
        messages.append({"role": "system", "content": system})
    for number, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise InvalidFileError(f"{path}: message {number} is not an object")
        role = cast(dict[str, Any], item).get("role")
        if role not in _CHAT_ROLES:
            skipped.append(f"message {number}: role {role!r} is not a chat role, skipped")
            continue
        messages.append(cast(dict[str, Any], item))
    return Conversation(messages, skipped)


def replay(
    session: Session,
    messages: Sequence[dict[str, Any]],
    *,
    budget: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> ReplayResult:
    """Feed ``messages`` into ``session``, building before every assistant message."""
    result = ReplayResult()
    for number, message in enumerate(messages, start=1):
        if message.get("role") == "assistant" and result.messages:
            ctx = session.build(budget=budget)
            result.requests.append(Request(
                number=len(result.requests) + 1, seq=number,
                memci_tokens=ctx.stats.total_tokens, full_tokens=ctx.stats.full_tokens,
                build_ms=ctx.stats.build_ms, prefix_tokens=ctx.stats.prefix_tokens,
                events=ctx.stats.events,
            ))
        try:
            session.add(message)
        except MemciError as exc:
            raise InvalidFileError(f"message {number}: {exc}") from exc
        result.messages += 1
        if progress is not None:
            progress(number)
    return result
