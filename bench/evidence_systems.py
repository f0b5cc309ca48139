"""The systems bench_evidence.py compares, each answering "what do I send now?".

Every system gets the same turns (OpenAI-style dicts), the same question (a user message
after the last turn) and the same budget, and returns a request ``{"messages": [...],
"tools": [...]}`` whose tokens the referee (``evidence_match.request_tokens``) counts.
Work an agent does once per message (counting its tokens, tokenizing it for BM25,
wrapping it as a langchain message) is done at ingest, in :class:`History`; the timed
``select`` is what runs when the question comes:

- ``window`` — sliding window: the question, then the newest turns that fit;
- ``trim_messages`` — langchain-core's ``trim_messages`` (strategy "last", start on a human
  message, keep a system message, token counter = the referee's per-message count);
- ``bm25`` — BM25 top-10 + newest: rank_bm25's ``BM25Okapi`` over the turns (English
  lowercase words, CJK character bigrams), the 10 best turns for the question that fit,
  then the newest turns that fit the rest, all in conversation order, then the question.
  The index is built inside the timed part (rank_bm25 has no incremental add), which
  counts against this baseline, never for it;
- ``memci`` — :class:`MemciConversation`: memci in its default configuration (paged,
  retrieval on, no embeddings, no LLM), with the tokenizer set to cl100k_base so its
  budget is counted as the referee counts, and ``build(budget=...)``. The conversation is
  fed once per budget into a SQLite file; each question then runs on a fresh copy of that
  file (add the question, build), so every question of a conversation sees the same state.
  ``feed="live"`` builds before every assistant turn while feeding, as an agent does;
  ``feed="bulk"`` only adds the turns (an imported history: the question's build catches
  up with the whole backlog).

Invariant: a baseline's request is within its budget as the referee counts it (the
question alone excepted, when it is larger than the budget).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import memci
from evidence_data import Conversation, Question, Turn
from evidence_match import message_tokens

__all__ = [
    "BASELINES",
    "History",
    "MemciConversation",
    "bm25_tokens",
    "question_message",
]

TOP_K = 10
_PRIMING = 3  # the referee's reply priming, part of every request's tokens
_BM25_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[0-9a-z]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def bm25_tokens(text: str) -> list[str]:
    """English lowercase words and CJK character bigrams (a lone character as itself)."""
    out: list[str] = []
    for match in _BM25_WORD.finditer(text.lower()):
        word = match.group()
        if _CJK.match(word) and len(word) > 1:
            out.extend(word[i:i + 2] for i in range(len(word) - 1))
        else:
            out.append(word)
    return out


def question_message(question: Question) -> dict[str, Any]:
    """The question as every baseline sends it."""
    return {"role": "user", "content": question.text}


@dataclass
class History:
    """One conversation as an agent holds it after ingest (per-message work done once)."""

    turns: Sequence[Turn]
    messages: list[dict[str, Any]] = field(init=False)
    tokens: list[int] = field(init=False)
    docs: list[list[str]] = field(init=False)
    langchain: list[Any] = field(init=False)

    def __post_init__(self) -> None:
        from langchain_core.messages import AIMessage, HumanMessage

        self.messages = [t.message() for t in self.turns]
        self.tokens = [message_tokens(m) for m in self.messages]
        self.docs = [bm25_tokens(t.text) for t in self.turns]
        self.langchain = [HumanMessage(t.text) if t.role == "user" else AIMessage(t.text)
                          for t in self.turns]


def _window(history: History, question: dict[str, Any], budget: int) -> dict[str, Any]:
    room = budget - _PRIMING - message_tokens(question)
    start = len(history.tokens)
    while start > 0 and history.tokens[start - 1] <= room:
        start -= 1
        room -= history.tokens[start]
    return {"messages": [*history.messages[start:], question]}


def _lc_count(messages: Sequence[Any]) -> int:
    # The referee's count of a langchain message: 4 tokens of framing and its text.
    return sum(message_tokens({"content": m.content if isinstance(m.content, str) else ""})
               for m in messages)


def _trim(history: History, question: dict[str, Any], budget: int) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage, convert_to_openai_messages, trim_messages

    kept = trim_messages([*history.langchain, HumanMessage(question["content"])],
                         max_tokens=budget - _PRIMING, token_counter=_lc_count,
                         strategy="last", start_on="human", include_system=True)
    # Turned back into dicts outside the time that counts (see Baseline.run).
    return {"langchain": kept, "convert": convert_to_openai_messages}


def _bm25(history: History, question: dict[str, Any], budget: int) -> dict[str, Any]:
    from rank_bm25 import BM25Okapi

    room = budget - _PRIMING - message_tokens(question)
    n = len(history.tokens)
    chosen: set[int] = set()
    words = bm25_tokens(question["content"])
    if n and words and any(history.docs):
        scores = BM25Okapi(history.docs).get_scores(words)
        ranked = sorted(range(n), key=lambda i: (-scores[i], -i))[:TOP_K]
        for i in ranked:
            if scores[i] > 0 and history.tokens[i] <= room:
                chosen.add(i)
                room -= history.tokens[i]
    for i in range(n - 1, -1, -1):
        if i in chosen:
            continue
        if history.tokens[i] > room:
            break
        chosen.add(i)
        room -= history.tokens[i]
    return {"messages": [*(history.messages[i] for i in sorted(chosen)), question]}


@dataclass(frozen=True)
class Baseline:
    """A stateless system: ``select`` is timed, turning its result into a request is not."""

    name: str
    select: Callable[[History, dict[str, Any], int], dict[str, Any]]

    def run(self, history: History, question: Question,
            budget: int) -> tuple[dict[str, Any], float]:
        asked = question_message(question)
        started = time.perf_counter()
        out = self.select(history, asked, budget)
        elapsed = (time.perf_counter() - started) * 1000
        if "langchain" in out:
            out = {"messages": out["convert"](out["langchain"])}
        return out, elapsed


BASELINES = (
    Baseline("window", _window),
    Baseline("trim_messages", _trim),
    Baseline("bm25", _bm25),
)


def _copy_store(source: Path, target: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        src = source.with_name(source.name + suffix)
        if src.exists():
            shutil.copyfile(src, target.with_name(target.name + suffix))
    artifacts = source.parent / f"{source.stem}-artifacts"
    if artifacts.exists():
        shutil.copytree(artifacts, target.parent / f"{target.stem}-artifacts")


def _remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    shutil.rmtree(path.parent / f"{path.stem}-artifacts", ignore_errors=True)


@contextmanager
def _embedder(spec: str | None) -> Iterator[None]:
    """``MEMCI_EMBEDDER`` set to ``spec`` while an engine opens (None: left unset)."""
    old = os.environ.pop("MEMCI_EMBEDDER", None)
    if spec is not None:
        os.environ["MEMCI_EMBEDDER"] = spec
    try:
        yield
    finally:
        os.environ.pop("MEMCI_EMBEDDER", None)
        if old is not None:
            os.environ["MEMCI_EMBEDDER"] = old


class MemciConversation:
    """One conversation fed into memci at one budget; each question asked on a copy.

    ``embedder``: a ``MEMCI_EMBEDDER`` value (dense retrieval beside keyword); None is the
    default configuration, keyword only.
    """

    SESSION = "conversation"

    def __init__(self, conversation: Conversation, budget: int, workdir: Path,
                 feed: str = "live", embedder: str | None = None) -> None:
        if feed not in ("live", "bulk"):
            raise ValueError(f"feed must be 'live' or 'bulk', not {feed!r}")
        self.budget = budget
        self.workdir = workdir
        self.embedder = embedder
        dense = "-dense" if embedder else ""
        self.base = (workdir
                     / f"{conversation.dataset}-{conversation.name}-{budget}-{feed}{dense}.db")
        _remove_store(self.base)
        self.feed_build_ms: list[float] = []
        started = time.perf_counter()
        # synchronous only changes when a write reaches the disk, not what is stored.
        with _embedder(embedder), memci.Engine.open(self.base, synchronous="NORMAL") as engine:
            session = engine.session(self.SESSION, tokenizer="cl100k_base")
            if feed == "bulk":
                session.add_many([_with_time(t) for t in conversation.turns])
            else:
                previous = None
                for turn in conversation.turns:
                    if turn.role == "assistant" and previous == "user":
                        t0 = time.perf_counter()
                        session.build(budget=budget)
                        self.feed_build_ms.append((time.perf_counter() - t0) * 1000)
                    session.add(_with_time(turn))
                    previous = turn.role
        self.feed_seconds = time.perf_counter() - started

    def ask(self, question: Question) -> tuple[dict[str, Any], float]:
        """The request memci builds for ``question``, and the build's milliseconds."""
        copy = self.workdir / "question.db"
        _remove_store(copy)
        _copy_store(self.base, copy)
        try:
            with _embedder(self.embedder), memci.Engine.open(copy) as engine:
                session = engine.session(self.SESSION)
                session.add({"role": "user", "content": question.text,
                             "created_at": question.asked_at})
                started = time.perf_counter()
                context = session.build(budget=self.budget)
                elapsed = (time.perf_counter() - started) * 1000
                return context.to_openai(), elapsed
        finally:
            _remove_store(copy)

    def close(self) -> None:
        """Remove the fed store."""
        _remove_store(self.base)


def _with_time(turn: Turn) -> dict[str, Any]:
    return {**turn.message(), "created_at": turn.created_at}
