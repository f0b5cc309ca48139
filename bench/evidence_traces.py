"""The tool-loop part of bench_evidence.py: what each request of an agent's loop holds.

A trace (mini-swe-agent ``*.traj.json``: OpenAI chat messages, the last one with role
``exit``, which is skipped) is replayed message by message; before every assistant message
the system builds the request at the budget, and the referee records:

- tokens per request (``evidence_match.request_tokens``, tools included);
- the newest tool output visible: the request has a tool message answering the newest
  call whose text holds the start of the output (its first 80 characters, whitespace
  collapsed, without mini-swe-agent's ``<returncode>``/``<output>`` wrapper);
- the last assistant messages present (of the newest ``LAST_N`` stored): one is present
  when the request has an assistant message with the same tool call id, or its text;
- memci only: the working state (pins, plan, notebook, fastmemo) once it has entries:
  present (some entry's text, its first 40 characters, is in the request), whole (every
  entry's is), and the share of entries shown.

The baseline is the sliding window: the system message, then the newest messages that
fit, never starting on a tool result whose call was cut.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import memci
from evidence_match import message_text, message_tokens, request_tokens
from memci.evidence import collapse_spaces

__all__ = ["LAST_N", "TraceResult", "read_trace", "replay"]

LAST_N = 5
_WRAPPER = re.compile(r"</?(returncode|output)>")
_CHAT_ROLES = ("system", "user", "assistant", "tool")


def read_trace(path: Path) -> list[dict[str, Any]]:
    """The chat messages of a trace file, reduced to the keys a chat API takes."""
    data = json.loads(path.read_text(encoding="utf-8"))
    messages = data["messages"] if isinstance(data, dict) else data
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") not in _CHAT_ROLES:
            continue  # mini-swe-agent's last message, role "exit", is no chat message
        kept: dict[str, Any] = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("tool_calls"):
            kept["tool_calls"] = [{"id": c["id"], "type": "function",
                                   "function": {"name": c["function"]["name"],
                                                "arguments": c["function"]["arguments"]}}
                                  for c in m["tool_calls"]]
        if m["role"] == "tool":
            kept["tool_call_id"] = m["tool_call_id"]
        out.append(kept)
    return out


@dataclass
class TraceResult:
    """The figures of one trace, one system, one budget."""

    trace: str
    system: str
    budget: int
    tokens: list[int] = field(default_factory=list)
    build_ms: list[float] = field(default_factory=list)
    newest_seen: int = 0
    newest_asked: int = 0
    last_present: list[int] = field(default_factory=list)
    last_wanted: list[int] = field(default_factory=list)
    state_requests: int = 0
    state_whole: int = 0
    state_present: int = 0
    state_share: list[float] = field(default_factory=list)

    def growth(self) -> float | None:
        """Mean of the last 10 requests over the mean of requests 10-19."""
        if len(self.tokens) < 20:
            return None
        return statistics.mean(self.tokens[-10:]) / statistics.mean(self.tokens[9:19])


def _head(output: str) -> str:
    return collapse_spaces(_WRAPPER.sub(" ", output))[:80]


def _observe(result: TraceResult, payload: dict[str, Any], stored: Sequence[dict[str, Any]],
             texts: list[str]) -> None:
    result.tokens.append(request_tokens(payload))
    joined = [collapse_spaces(t) for t in texts]
    sent = payload["messages"]
    if stored and stored[-1]["role"] == "tool":
        result.newest_asked += 1
        newest = stored[-1]
        head = _head(message_text(newest))
        for m in sent:
            if m.get("role") == "tool" and m.get("tool_call_id") == newest["tool_call_id"]:
                if head in collapse_spaces(_WRAPPER.sub(" ", message_text(m))):
                    result.newest_seen += 1
                break
    wanted = [m for m in stored if m["role"] == "assistant"][-LAST_N:]
    sent_ids = {c["id"] for m in sent if m.get("role") == "assistant"
                for c in m.get("tool_calls") or ()}
    present = 0
    for m in wanted:
        ids = {c["id"] for c in m.get("tool_calls") or ()}
        text = collapse_spaces(message_text(m))
        if (ids and ids <= sent_ids) or (not ids and text and any(text in t for t in joined)):
            present += 1
    result.last_present.append(present)
    result.last_wanted.append(len(wanted))


def _window(history: Sequence[dict[str, Any]], tokens: Sequence[int],
            budget: int) -> dict[str, Any]:
    head = [i for i, m in enumerate(history) if m["role"] == "system"][:1]
    room = budget - 3 - sum(tokens[i] for i in head)
    start = len(history)
    while start > (head[0] + 1 if head else 0) and tokens[start - 1] <= room:
        start -= 1
        room -= tokens[start]
    while start < len(history) and history[start]["role"] == "tool":
        start += 1  # its call was cut: a tool result cannot open the window
    return {"messages": [*(history[i] for i in head), *history[start:]]}


def _state_texts(state: dict[str, Any]) -> list[str]:
    items = [*state.get("pins", []), *state.get("plan", []), *state.get("notebook", [])]
    for entries in (state.get("fastmemo") or {}).values():
        items.extend(entries)
    out = []
    for item in items:
        text = item.get("summary") or item.get("text") or item.get("title") or ""
        if text:
            out.append(collapse_spaces(str(text))[:40])
    return out


def replay(path: Path, budget: int, workdir: Path | None = None) -> list[TraceResult]:
    """Replay one trace at one budget through memci and the sliding window."""
    messages = read_trace(path)
    name = path.name.removesuffix(".json").removesuffix(".traj")
    ours = TraceResult(name, "memci", budget)
    window = TraceResult(name, "window", budget)
    tokens = [message_tokens(m) for m in messages]
    with tempfile.TemporaryDirectory(dir=workdir) as tmp, \
            memci.Engine.open(Path(tmp) / "trace.db") as engine:
        session = engine.session(name, tokenizer="cl100k_base")
        for i, message in enumerate(messages):
            if message["role"] == "assistant" and i > 0:
                stored = messages[:i]
                started = time.perf_counter()
                context = session.build(budget=budget)
                ours.build_ms.append((time.perf_counter() - started) * 1000)
                payload = context.to_openai()
                texts = [message_text(m) for m in payload["messages"]]
                _observe(ours, payload, stored, texts)
                shown = _state_texts(session.export_state())
                if shown:
                    ours.state_requests += 1
                    seen = sum(1 for s in shown if any(s in collapse_spaces(t) for t in texts))
                    ours.state_share.append(seen / len(shown))
                    ours.state_whole += seen == len(shown)
                    ours.state_present += seen > 0
                started = time.perf_counter()
                plain = _window(stored, tokens[:i], budget)
                window.build_ms.append((time.perf_counter() - started) * 1000)
                _observe(window, plain, stored, [message_text(m) for m in plain["messages"]])
            session.add(message)
    return [ours, window]
