"""Tool loops keep their memory (issue 13, item 4; seed 004's tool-loop recipe).

Replays a real agent trace (mini-swe-agent, ../shared/data/traces) message by message and
builds the request before every assistant message, as the agent would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memci
from memci.workspace import InvalidStateFileError

from .conftest import shared_data


def _trace(name: str) -> list[dict[str, Any]]:
    data = json.loads(shared_data("traces", name).read_text(encoding="utf-8"))
    out = []
    for m in data["messages"]:
        if m.get("role") not in ("system", "user", "assistant", "tool"):
            continue
        kept: dict[str, Any] = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("tool_calls"):
            kept["tool_calls"] = m["tool_calls"]
        if m["role"] == "tool":
            kept["tool_call_id"] = m["tool_call_id"]
        out.append(kept)
    return out


def _replay(session: memci.Session, messages: list[dict[str, Any]],
            budget: int) -> Iterator[tuple[int, memci.Context]]:
    for i, message in enumerate(messages):
        if message["role"] == "assistant" and i > 0:
            yield i, session.build(budget=budget)
        session.add(message)


def test_the_notebook_never_leaves_a_long_tool_loop(tmp_path: Path) -> None:
    messages = _trace("django__django-11964.traj.json")
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("t", tokenizer="cl100k_base")
        tokens: list[int] = []
        seen_notes = False
        for _, ctx in _replay(session, messages, 8000):
            assert ctx.stats.total_tokens <= 8000
            tokens.append(ctx.stats.total_tokens)
            notes = session.export_state()["notebook"]
            if notes:
                seen_notes = True
                state = ctx.segment("state")
                assert state and ("## Notebook" in state[0].content), ctx.stats.sections
        assert seen_notes
        # every step that left the window left a line: what was done, its outcome, pointer
        notes = [n for n in session.export_state()["notebook"] if not n["milestone"]]
        assert notes
        for note in notes:
            assert note["summary"].startswith("bash(") and "→" in note["summary"], note
            assert (note["artifact_ref"] or "").startswith("artifact:"), note
        # requests stay flat
        assert sum(tokens[-10:]) / 10 <= 1.3 * sum(tokens[9:19]) / 10


def _assistants_in(ctx: memci.Context, stored: list[dict[str, Any]], n: int) -> int:
    newest = [m for m in stored if m["role"] == "assistant"][-n:]
    ids = {c.id for m in ctx.messages for c in m.tool_calls}
    texts = {m.content for m in ctx.messages if m.role == "assistant"}
    return sum(1 for m in newest
               if (m.get("tool_calls") and m["tool_calls"][0]["id"] in ids)
               or m["content"] in texts)


def test_keep_rounds_keeps_more_rounds_while_they_fit(tmp_path: Path) -> None:
    messages = _trace("django__django-11815.traj.json")
    with memci.Engine.open(tmp_path / "m.db") as engine:
        default = engine.session("three", tokenizer="cl100k_base")
        more = engine.session("ten", tokenizer="cl100k_base", keep_rounds=10)
        kept_default = kept_more = 0
        for (i, ctx3), (_, ctx10) in zip(_replay(default, messages, 96000),
                                         _replay(more, messages, 96000), strict=True):
            if i < 30:
                continue
            assert _assistants_in(ctx10, messages[:i], 10) == 10  # they fit at 96k
            kept_default += _assistants_in(ctx3, messages[:i], 10)
            kept_more += 10
        assert kept_default < kept_more
        assert more.export_state()["recent_window_policy"]["keep_rounds"] == 10


def test_tool_loop_tokens_caps_the_steps_shown(tmp_path: Path) -> None:
    messages = _trace("django__django-11815.traj.json")
    with memci.Engine.open(tmp_path / "m.db") as engine:
        wide = engine.session("wide", tokenizer="cl100k_base", keep_rounds=40)
        capped = engine.session("capped", tokenizer="cl100k_base", keep_rounds=40,
                                tool_loop_tokens=3000)
        for (_, a), (_, b) in zip(_replay(wide, messages, 96000),
                                  _replay(capped, messages, 96000), strict=True):
            assert b.stats.sections["recent"] <= max(a.stats.sections["recent"], 3000 + 2000)
        assert b.stats.sections["recent"] < a.stats.sections["recent"]


def test_the_window_policy_travels_in_context_state_json(tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("s")
        state = session.export_state()
        assert state["recent_window_policy"] == {"keep_rounds": 3, "tool_loop_tokens": 0}
        state["recent_window_policy"] = {"keep_rounds": 7, "tool_loop_tokens": 5000}
        session.import_state(state)
        assert session.settings.keep_rounds == 7 and session.settings.tool_loop_tokens == 5000
        with memci.Engine.open(tmp_path / "m.db") as again:  # saved with the session
            assert again.session("s").settings.keep_rounds == 7
        for bad in ({"keep_rounds": 0}, {"keep_rounds": "3"}, {"tool_loop_tokens": -1}, [3]):
            state["recent_window_policy"] = bad
            with pytest.raises(InvalidStateFileError, match="recent_window_policy"):
                session.import_state(state)
        assert session.settings.keep_rounds == 7  # a refused import changes nothing
        with pytest.raises(memci.ConfigError):
            engine.session("s", keep_rounds=0)
