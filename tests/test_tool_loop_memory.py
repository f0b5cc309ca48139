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


def _task(session: memci.Session, ask: str, topic: str, steps: int = 6) -> list[memci.Context]:
    """A tool loop on ``topic``: the task, then calls and results, a build after each."""
    session.add({"role": "user", "content": ask})
    built = [session.build()]
    for i in range(steps):
        session.add({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"{topic}{i}", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"cmd": f"grep -n {topic}"})}}]})
        session.add({"role": "tool", "tool_call_id": f"{topic}{i}",
                     "content": f"{topic}/core.py:{i}: def {topic}_parse(value): return value"})
        built.append(session.build())
    return built


def _others(ctx: memci.Context, own: str) -> list[str]:
    return [r.source for r in ctx.memory if r.session not in (None, own)]


@pytest.mark.parametrize("declared", [True, False])
def test_a_task_keeps_to_its_own_past_unless_it_asks_for_earlier_work(
        tmp_path: Path, declared: bool) -> None:
    """Other tasks' memory stays out of a tool loop (seed 004), whether or not the agent
    declares its tools; a task that refers to earlier work gets it."""
    tools = [{"type": "function", "function": {
        "name": "bash", "parameters": {"type": "object", "properties": {}}}}]
    with memci.Engine.open(tmp_path / "t.db") as engine:
        def session(name: str) -> memci.Session:
            return engine.session(name, user="u", tools=tools if declared else None)

        _task(session("astropy"), "fix the failing test in the parser of the table reader",
              "astropy")
        later = _task(session("pydicom"), "fix the failing test in the parser of the tag reader",
                      "pydicom")
        assert all(_others(ctx, "pydicom") == [] for ctx in later[1:])
        if declared:  # the agent says it is a tool loop from the first build on
            assert _others(later[0], "pydicom") == []
        again = _task(session("pydicom-2"), "fix the failing test in the parser again, as last"
                      " time: the table reader", "tables")
        assert any(_others(ctx, "pydicom-2") for ctx in again)
