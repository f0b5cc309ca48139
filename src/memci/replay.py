"""Replaying a recorded conversation or agent trace through a session, with honest figures.

A replay feeds the messages one at a time and builds the context before every assistant
message, as an agent would before calling its model, and records what memci would have
sent against what the agent sent without memci. Files are read by :mod:`memci.traces`
(the formats agents write; :func:`load_conversation` here).

The figures, and what keeps them honest:

- **full history** (the baseline) is the request of an agent that sends its whole
  conversation every time: the conversation's own messages up to that point, plus the
  agent's own tool schemas when the file records them — never memci's tools or memci's
  system text — counted with the session's tokenizer, the one that counts memci's
  request. It depends on the file and the model only: two replays with different
  strategies or budgets report the same baseline;
- **memci** is what memci's context costs, plus the agent's tool schemas (the agent
  sends them beside memci's context); saved = full history − memci;
- **with prompt caching**: providers bill input that repeats the start of the previous
  request at a discount (OpenAI: 50% off; Anthropic cache reads: 90% off). memci's cached
  part is the prefix identical to its previous request (``prefix_tokens``); the full
  history's is the whole previous request, since it only grows. Cost is counted in
  input-token equivalents (a cached token costs ``1 − discount``), the same for both;
  output is the same for both and left out. The cache is taken as ideal (every repeated
  prefix hits; no minimum length, no expiry, no write premium), for both alike;
- **memci's own additions** (``own_tokens``): its tool schemas, the tool contract and
  the working state, which the full history never carries; what its views and archive
  saved on the conversation itself is the rest of the difference (``own_saved`` = full
  history − memci + own). When the additions cost more than that — exactly when memci's
  request is the bigger — the request, and the totals, carry a note saying so;
- **evidence**: for a file that labels the turns answering its questions (LoCoMo,
  LongMemEval), the request built to answer each question is checked for them by
  :mod:`memci.evidence` (verbatim, and close), the rules ``bench/bench_evidence.py``
  measures with.

A result names the session it stored into and the tokenizer that counted both sides; when
the model's own tokenizer is not available here, :func:`tokenizer_note` says what counted
instead. Nothing is stored unless every message of the file can be: all are checked first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memci._dataclasses import dataclass, field
from memci._models import model_info
from memci.engine import Engine, Session
from memci.errors import InvalidFileError, MemciError
from memci.evidence import EvidenceHeld, RequestText
from memci.messages import coerce
from memci.tokens import Tokenizer, count_messages
from memci.traces import Question, Trace, read_trace

__all__ = ["CACHED_DISCOUNTS", "ReplayResult", "Request", "cached_discount",
           "load_conversation", "own_note", "replay", "session_name", "tokenizer_note",
           "tool_tokens"]

CACHED_DISCOUNTS: Mapping[str, float] = {"openai": 0.5, "anthropic": 0.9}
"""The share of the input price taken off cached input, per provider (published prices:
OpenAI's cached input at half price, Anthropic's cache reads at a tenth)."""


def cached_discount(model: str | None) -> float:
    """The cached-input discount of ``model``'s provider (OpenAI's when unknown)."""
    return CACHED_DISCOUNTS.get(model_info(model).provider, CACHED_DISCOUNTS["openai"])


def session_name(engine: Engine, stem: str, tenant: str = "default") -> str:
    """The first free name ``replay:STEM``, ``replay:STEM:2``, … in ``engine``'s store."""
    base = f"replay:{stem}"
    name, number = base, 1
    while engine.store.session(tenant, name) is not None:
        number += 1
        name = f"{base}:{number}"
    return name


def tokenizer_note(session: Session) -> str | None:
    """What counted in place of the model's own tokenizer, when that one is missing here."""
    model = session.settings.model
    wanted = model_info(model).encoding if model else "estimate"
    used = session.settings.tokenizer
    if wanted in ("estimate", used):
        return None
    return (f"{model} counts with {wanted}, which is not available here (tiktoken and its "
            f"encoding file are needed offline): both sides were counted with {used}"
            + (" (calibrated to cl100k_base)" if used == "estimate" else ""))


def tool_tokens(tokenizer: Tokenizer, tools: Sequence[Mapping[str, Any]]) -> int:
    """Tokens of tool schemas in a request, counted as memci counts its own tools."""
    if not tools:
        return 0
    return tokenizer.count(json.dumps(list(tools))) + 4 * len(tools)


@dataclass(frozen=True, slots=True)
class Request:
    """One build during a replay: what memci sends against the whole history.

    ``prefix_tokens`` is the start of memci's request that repeats its previous request
    (what a prompt cache reuses); ``full_cached_tokens`` the same for the full history.
    """

    number: int
    seq: int
    memci_tokens: int
    full_tokens: int
    build_ms: float
    prefix_tokens: int
    events: tuple[str, ...] = ()
    full_cached_tokens: int = 0
    segments: dict[str, int] = field(default_factory=dict[str, int])
    """Tokens of each segment of memci's request (``ctx.segments``; ``tools`` beside)."""
    evidence: EvidenceHeld | None = None
    """For a request that answers a question with labelled evidence: what it holds of it."""
    own_tokens: int = 0
    """memci's own additions: its tool schemas, the tool contract and the working state."""

    @property
    def own_saved(self) -> int:
        """What memci's views and archive saved of the conversation in this request."""
        return self.full_tokens - self.memci_tokens + self.own_tokens

    @property
    def own_note(self) -> str | None:
        """The note when memci's additions cost more than its views and archive saved."""
        return own_note(self.own_tokens, self.own_saved)


def own_note(own: int, saved: int) -> str | None:
    """The note when ``own`` additions cost more than the ``saved`` tokens (else None)."""
    if own <= saved:
        return None
    if saved <= 0:
        return (f"memci's tools and working state cost {own:,} tokens here, and its views "
                "and archive saved none")
    return (f"memci's tools and working state cost {own:,} tokens here, more than the "
            f"{saved:,} its views and archive saved")


def _cost(tokens: int, cached: int, discount: float) -> float:
    return tokens - discount * cached


@dataclass(slots=True)
class ReplayResult:
    """Every request of a replay, with totals; costs use ``cached_discount``."""

    requests: list[Request] = field(default_factory=list[Request])
    skipped: list[str] = field(default_factory=list[str])
    messages: int = 0
    format: str = ""
    tools_tokens: int = 0
    """Tokens of the agent's own tool schemas, in every request of both sides."""
    cached_discount: float = CACHED_DISCOUNTS["openai"]
    price: float | None = None
    """USD per million input tokens, when given: costs are also shown in dollars."""
    session: str = ""
    """The session the replay stored into (in ``store``, or in a temporary store)."""
    store: str | None = None
    tokenizer: str = "estimate"
    """The tokenizer that counted both sides, and why it is not the model's, if not."""
    tokenizer_note: str | None = None

    @property
    def mean_prefix_share(self) -> float:
        """The mean share of a request that repeats the previous one (0 without requests)."""
        shares = [min(1.0, r.prefix_tokens / r.memci_tokens) if r.memci_tokens else 0.0
                  for r in self.requests]
        return sum(shares) / len(shares) if shares else 0.0

    @property
    def provenance(self) -> str:
        """Where the replay is stored and what counted its tokens, in one line."""
        where = (f"session {self.session!r} in {self.store}" if self.store else
                 f"session {self.session!r} in a temporary store (--db PATH keeps it)")
        counted = f"tokens counted with {self.tokenizer}"
        if self.tokenizer_note:
            counted += f" (standing in: {self.tokenizer_note})"
        return f"{where}; {counted}"

    @property
    def answered(self) -> list[Request]:
        """The requests that answer a question with labelled evidence."""
        return [r for r in self.requests if r.evidence is not None]

    def evidence_totals(self) -> dict[str, Any] | None:
        """Questions, evidence turns, those held verbatim and closely, whole questions."""
        held = [r.evidence for r in self.requests if r.evidence is not None]
        if not held:
            return None
        turns = sum(len(e.evidence) for e in held)
        verbatim = sum(len(e.verbatim) for e in held)
        return {"questions": len(held), "turns": turns, "verbatim": verbatim,
                "close": sum(len(e.close) for e in held),
                "whole": sum(1 for e in held if e.whole), "share": _ratio(verbatim, turns)}

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

    @property
    def own_tokens(self) -> int:
        """memci's own additions over all requests (tool schemas, contract, working state)."""
        return sum(r.own_tokens for r in self.requests)

    @property
    def own_saved(self) -> int:
        """What memci's views and archive saved over all requests."""
        return sum(r.own_saved for r in self.requests)

    @property
    def own_note(self) -> str | None:
        """The totals' note when memci's additions cost more than they let it save."""
        return own_note(self.own_tokens, self.own_saved)

    @property
    def own_costlier(self) -> list[Request]:
        """The requests whose additions cost more than memci's views and archive saved."""
        return [r for r in self.requests if r.own_note is not None]

    def own_summary(self) -> str | None:
        """One line when memci's additions cost more than they saved: overall or where.

        Requests where they did are marked ``!`` in the tables (text and HTML).
        """
        costlier = len(self.own_costlier)
        if not costlier:
            return None
        marked = f"{costlier} of {len(self.requests)} requests (marked !)"
        if self.own_note is not None:
            return f"{self.own_note}, over all requests; so in {marked}"
        return (f"in {marked} memci's tools and working state cost more than its views and "
                f"archive saved; over all requests they cost {self.own_tokens:,} tokens and "
                f"saved {self.own_saved:,}")

    @property
    def memci_cached_tokens(self) -> int:
        """memci's tokens that repeat its previous request (billed at the discount)."""
        return sum(r.prefix_tokens for r in self.requests)

    @property
    def full_cached_tokens(self) -> int:
        """The full history's tokens that repeat its previous request."""
        return sum(r.full_cached_tokens for r in self.requests)

    def memci_cost(self, request: Request) -> float:
        """One memci request's cost with prompt caching, in input-token equivalents."""
        return _cost(request.memci_tokens, request.prefix_tokens, self.cached_discount)

    def full_cost(self, request: Request) -> float:
        """One full-history request's cost with prompt caching, in input-token equivalents."""
        return _cost(request.full_tokens, request.full_cached_tokens, self.cached_discount)

    @property
    def memci_cached_cost(self) -> float:
        """memci's cost over all requests with prompt caching (input-token equivalents)."""
        return sum(self.memci_cost(r) for r in self.requests)

    @property
    def full_cached_cost(self) -> float:
        """The full history's cost over all requests with prompt caching."""
        return sum(self.full_cost(r) for r in self.requests)

    def dollars(self, tokens: float) -> float | None:
        """``tokens`` (or token equivalents) in USD at :attr:`price`, if one was given."""
        return None if self.price is None else tokens * self.price / 1e6

    def to_json(self) -> dict[str, Any]:
        """The result as a JSON-ready dict."""
        d = self.cached_discount

        def side(tokens: int, cached: int, cost: float) -> dict[str, Any]:
            out: dict[str, Any] = {"tokens": tokens, "cached_tokens": cached,
                                   "cost_cached": round(cost, 1)}
            if self.price is not None:
                out["usd"] = round(tokens * self.price / 1e6, 8)
                out["usd_cached"] = round(cost * self.price / 1e6, 8)
            return out

        memci, full = self.memci_cached_cost, self.full_cached_cost
        return {
            "format": self.format,
            "session": self.session,
            "store": self.store,
            "tokenizer": self.tokenizer,
            "tokenizer_note": self.tokenizer_note,
            "messages": self.messages,
            "skipped": self.skipped,
            "tools_tokens": self.tools_tokens,
            "requests": [
                {"request": r.number, "seq": r.seq, "memci_tokens": r.memci_tokens,
                 "full_tokens": r.full_tokens, "build_ms": round(r.build_ms, 3),
                 "prefix_tokens": r.prefix_tokens,
                 "full_cached_tokens": r.full_cached_tokens,
                 "memci_cost_cached": round(self.memci_cost(r), 1),
                 "full_cost_cached": round(self.full_cost(r), 1),
                 "events": list(r.events), "segments": r.segments,
                 "own_tokens": r.own_tokens, "own_saved": r.own_saved,
                 "own_note": r.own_note,
                 **({"evidence": _evidence_json(r.evidence)} if r.evidence else {})}
                for r in self.requests
            ],
            "totals": {"requests": len(self.requests), "memci_tokens": self.memci_tokens,
                       "full_tokens": self.full_tokens, "saved_tokens": self.saved_tokens,
                       "saved_share": _ratio(self.saved_tokens, self.full_tokens),
                       "mean_prefix_share": round(self.mean_prefix_share, 4),
                       "own_tokens": self.own_tokens, "own_saved": self.own_saved,
                       "own_note": self.own_note,
                       "own_costlier_requests": len(self.own_costlier),
                       "own_summary": self.own_summary(),
                       **({"evidence": totals} if (totals := self.evidence_totals()) else {})},
            "cost": {
                "cached_discount": d, "price_per_million": self.price,
                "unit": "input-token equivalents (a cached token costs 1 - cached_discount)",
                "memci": side(self.memci_tokens, self.memci_cached_tokens, memci),
                "full": side(self.full_tokens, self.full_cached_tokens, full),
                "ratio": _ratio(self.memci_tokens, self.full_tokens),
                "ratio_cached": _ratio(memci, full),
                "saved_cached": round(full - memci, 1),
            },
        }


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _evidence_json(held: EvidenceHeld) -> dict[str, Any]:
    return {"question": held.question, "evidence": list(held.evidence),
            "verbatim": list(held.verbatim), "close": list(held.close),
            "share": round(held.share, 4)}


def _held(question: Question | None, sent: Sequence[Any]) -> EvidenceHeld | None:
    """What the request of ``sent`` messages holds of ``question``'s evidence."""
    if question is None:
        return None
    request = RequestText([m.content for m in sent], question.text)
    return EvidenceHeld.check(request, question.text, question.evidence)


def load_conversation(
    path: Path, *, format: str | None = None, item: int | None = None,
) -> Trace:
    """Read a trace file (any format :mod:`memci.traces` knows, or ``format``)."""
    return read_trace(path, format=format, item=item)


def replay(
    session: Session,
    messages: Sequence[Mapping[str, Any]],
    *,
    budget: int | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
    origins: Sequence[str] | None = None,
    questions: Sequence[Question] = (),
    progress: Callable[[int], None] | None = None,
) -> ReplayResult:
    """Feed ``messages`` into ``session``, building before every assistant message.

    ``tools`` are the agent's own tool schemas (OpenAI form), counted on both sides;
    ``origins`` say where each message came from, for errors; ``questions`` (with their
    evidence) have the request that answers each checked. Every message is checked
    before the first is stored: a bad one raises :class:`InvalidFileError` naming it.
    """
    def where(number: int) -> str:
        return origins[number - 1] if origins and number <= len(origins) else \
            f"message {number}"

    limit = session.settings.max_message_bytes
    for number, message in enumerate(messages, start=1):
        try:
            coerce(message, max_bytes=limit)
        except MemciError as exc:
            raise InvalidFileError(f"{where(number)}: {exc}") from exc
    tokenizer = session.tokenizer
    # the question each assistant message answers (its message number, from 1)
    answers = {q.message + 2: q for q in questions if q.evidence}
    result = ReplayResult(tools_tokens=tool_tokens(tokenizer, tools), session=session.name,
                          tokenizer=session.settings.tokenizer,
                          tokenizer_note=tokenizer_note(session))
    priming = count_messages(tokenizer, ())  # once per request: the reply's header
    history = 0  # tokens of the conversation's own messages so far
    prompt = 0  # tokens of the system prompt (the head of memci's system segment)
    previous = 0  # the full history's previous request, less its reply header
    for number, message in enumerate(messages, start=1):
        if message.get("role") == "assistant" and result.messages:
            ctx = session.build(budget=budget)
            agent_tools = result.tools_tokens
            first = not result.requests
            result.requests.append(Request(
                number=len(result.requests) + 1, seq=number,
                memci_tokens=ctx.stats.total_tokens + agent_tools,
                full_tokens=agent_tools + history + priming,
                build_ms=ctx.stats.build_ms,
                # The agent's tools come first in its request and never change.
                prefix_tokens=ctx.stats.prefix_tokens + (0 if first else agent_tools),
                events=ctx.stats.events, full_cached_tokens=previous,
                segments={"tools": ctx.stats.sections.get("tools", 0) + agent_tools,
                          **{s.name: s.tokens for s in ctx.segments}},
                evidence=_held(answers.get(number), ctx.messages),
                own_tokens=_own_tokens(ctx.stats.sections, prompt),
            ))
            previous = agent_tools + history
        try:
            stored = session.add_many([message])
        except MemciError as exc:
            raise InvalidFileError(f"{where(number)}: {exc}") from exc
        counted = [m.tokens if m.tokens is not None else tokenizer.count_message(m)
                   for m in stored]
        history += sum(counted)
        prompt = next((n for m, n in zip(stored, counted, strict=True) if m.role == "system"),
                      prompt)
        result.messages += 1
        if progress is not None:
            progress(number)
    return result


def _own_tokens(sections: Mapping[str, int], prompt: int) -> int:
    """memci's additions in a request: its schemas, the contract and the working state.

    The contract is what the system segment holds beyond the conversation's own prompt.
    """
    contract = max(sections.get("system", 0) - prompt, 0)
    return sections.get("tools", 0) + contract + sections.get("state", 0)
