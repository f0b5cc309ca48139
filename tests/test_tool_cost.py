"""memci's own tools never cost more than they must (issue 22, item 2).

The schemas memci may offer are few and terse (``working_state`` carries the nine
working-state tools), each is offered only when it can act, the old names stay callable
with the same behaviour, and ``memci replay`` says when memci's additions cost more than
its views and archive saved. Tokens are counted with cl100k_base, as the builder counts
them for a model of that tokenizer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memci
from memci.messages._tools import OWN_TOOLS
from memci.replay import replay
from memci.report import render_report
from memci.workspace import WORKSPACE_TOOL_SPECS

ROOT = Path(__file__).resolve().parents[1]

SCHEMAS_BOUND = 950
"""Tokens of every schema memci may offer at once (917 on 2026-11-27; 1,925 before)."""
TOOL_LOOP_BOUND = 650
"""A tool loop's overhead: artifact_get, grep, working_state and the contract (626)."""

_LONG_OUTPUT = "".join(f"line {i}: collected test_mod_{i}.py PASSED in 0.{i:02d}s\n"
                       for i in range(80))
# An output whose view saves most of it: memci shapes the request even while it fits.
_HUGE_OUTPUT = _LONG_OUTPUT * 8
_WORDS = "the quarterly report needs figures for every region before friday " * 6


def _call(call_id: str, name: str = "run_tests") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _tool_turn(session: memci.Session, call_id: str, output: str) -> None:
    session.add({"role": "assistant", "content": None, "tool_calls": [_call(call_id)]})
    session.add({"role": "tool", "tool_call_id": call_id, "content": output})


def _offered(ctx: memci.Context) -> list[str]:
    return [t.name for t in ctx.tools if not t.agent]


def _contract(ctx: memci.Context) -> list[str]:
    return [m.content for m in ctx.messages if m.content.startswith("## Tool contract")]


def test_every_schema_offered_at_once_stays_under_the_bound(
    engine: memci.Engine, tmp_path: Path
) -> None:
    s = engine.session("all", tokenizer="cl100k_base", file_roots=[str(tmp_path)])
    for i in range(60):
        s.add({"role": "user", "content": f"question {i}: {_WORDS}"})
        s.add({"role": "assistant", "content": f"answer {i}: {_WORDS}"})
    s.add({"role": "user", "content": "run the tests"})
    _tool_turn(s, "c1", _LONG_OUTPUT)
    ctx = s.build(budget=8000)
    assert _offered(ctx) == ["recall_page", "search_memory", "artifact_get", "file_snippet",
                             "grep", "working_state"]
    assert ctx.stats.sections["tools"] <= SCHEMAS_BOUND
    sent = ctx.to_openai()["tools"]
    assert s.tokenizer.count(json.dumps(sent)) + 4 * len(sent) == ctx.stats.sections["tools"]


def test_a_tool_loop_pays_its_tools_and_contract_within_the_bound(
    engine: memci.Engine,
) -> None:
    s = engine.session("loop", tokenizer="cl100k_base")
    s.add({"role": "user", "content": "run the tests"})
    _tool_turn(s, "c1", _HUGE_OUTPUT)
    ctx = s.build()
    assert _offered(ctx) == ["artifact_get", "grep", "working_state"]
    assert len(_contract(ctx)) == 1
    assert ctx.stats.sections["tools"] + ctx.stats.sections["system"] <= TOOL_LOOP_BOUND


def test_tools_are_offered_only_when_they_can_act(engine: memci.Engine, tmp_path: Path) -> None:
    chat = engine.session("chat", tokenizer="cl100k_base")
    chat.add({"role": "user", "content": "hello"})
    ctx = chat.build()
    assert _offered(ctx) == [] and _contract(ctx) == [] and ctx.stats.sections["tools"] == 0

    # The history sent as stored: nothing to read back, nothing to take notes of.
    tiny = engine.session("tiny", tokenizer="cl100k_base")
    tiny.add({"role": "user", "content": "is it sunny?"})
    _tool_turn(tiny, "c1", "sunny")
    _tool_turn(tiny, "c2", _LONG_OUTPUT)
    ctx = tiny.build()
    assert _offered(ctx) == [] and _contract(ctx) == []
    assert ctx.messages[-1].content == _LONG_OUTPUT

    # File roots make the file tools act; still nothing of an output to read back.
    files = engine.session("files", tokenizer="cl100k_base", file_roots=[str(tmp_path)])
    files.add({"role": "user", "content": "look at the code"})
    ctx = files.build()
    assert _offered(ctx) == ["file_snippet", "grep"] and _contract(ctx) == []

    # Outputs whose views save most of them: memci shapes the request, and artifact_get,
    # grep, the contract and working_state come.
    _tool_turn(tiny, "c3", _HUGE_OUTPUT)
    ctx = tiny.build()
    assert _offered(ctx) == ["artifact_get", "grep", "working_state"]
    assert len(_contract(ctx)) == 1


def test_history_shown_by_views_is_not_out_of_the_window(engine: memci.Engine) -> None:
    """Views cost less than their outputs; the messages are in the window all the same."""
    s = engine.session("views", tokenizer="cl100k_base")
    s.add({"role": "user", "content": "run the tests twice"})
    _tool_turn(s, "c1", _HUGE_OUTPUT)
    _tool_turn(s, "c2", _HUGE_OUTPUT.replace("PASSED", "FAILED"))
    ctx = s.build()
    assert "artifact_get" in _offered(ctx)  # shown by views
    assert len([m for m in ctx.messages if m.seq is not None]) == len(s.messages())
    assert "recall_page" not in _offered(ctx) and "search_memory" not in _offered(ctx)


_STEPS: list[tuple[str, dict[str, Any]]] = [
    ("pin_add", {"type": "path", "title": "config", "summary": "the config is /etc/app.yaml",
                 "source": "tool:c1", "ttl": "2h"}),
    ("pin_add", {"type": "fact", "title": "no source", "summary": "x"}),  # refused
    ("pin_update", {"id": 1, "summary": "the config is /srv/app.yaml"}),
    ("plan_add", {"text": "fix the deploy"}),
    ("plan_add", {"text": "t" * 301}),  # over the plan's limit: refused
    ("plan_done", {"id": 1}),
    ("plan_done", {"id": "one"}),  # refused
    ("plan_add", {"text": "write the changelog"}),
    ("plan_remove", {"id": 2}),
    ("notebook_add", {"summary": "the deploy failed on a missing config", "source": "tool:c1"}),
    ("notebook_add", {"summary": "n" * 401}),  # over the note's limit: refused
    ("plan_list", {}),
    ("pin_remove", {"ids": [1]}),
    ("pin_remove", {"ids": [7]}),  # no such pin: refused
    ("pin_list", {}),
    ("plan_add", {"text": "x", "ids": [1]}),  # an argument of another action: refused
]


def test_the_old_names_and_working_state_behave_the_same(
    engine: memci.Engine, tmp_path: Path
) -> None:
    other = memci.Engine.open(tmp_path / "other.db")
    by_name, combined = engine.session("s"), other.session("s")  # same name, same errors
    for name, args in _STEPS:
        answer = by_name.call_tool(name, args)
        assert combined.call_tool("working_state", {"action": name, **args}) == answer
    assert by_name.work_state().render_plan() == combined.work_state().render_plan()
    assert by_name.work_state().render_notebook() == combined.work_state().render_notebook()
    assert [p.id for p in by_name.work_state().pin_list()] == [
        p.id for p in combined.work_state().pin_list()] == []
    assert "error:" in by_name.call_tool("plan_add", {"text": "x", "ids": [1]})
    assert combined.call_tool("working_state", {"action": "pin_erase"}).startswith(
        "error: 'action' must be one of 'pin_add'")
    assert combined.call_tool("working_state", {}).startswith("error:")
    other.close()


def test_every_name_stays_listed_and_callable(engine: memci.Engine) -> None:
    s = engine.session("names")
    s.add({"role": "user", "content": "run the tests"})
    _tool_turn(s, "c1", _LONG_OUTPUT)
    assert s.tools() == []  # the history is sent as stored: nothing of memci's can act
    _tool_turn(s, "c2", _HUGE_OUTPUT)
    assert [t.name for t in s.build().tools] == ["artifact_get", "grep", "working_state"]
    listed = [t["function"]["name"] for t in s.tools(every=True)]
    assert listed == [n for n in OWN_TOOLS if n != "file_snippet"]  # no file roots
    offered = {t["function"]["name"] for t in s.tools()}
    assert "working_state" in offered
    assert not offered & {spec.name for spec in WORKSPACE_TOOL_SPECS}
    for spec in WORKSPACE_TOOL_SPECS:
        assert s.handles(spec.name)
    assert s.call_tool("plan_add", {"text": "ship it"}) == "added plan item 1"
    assert "ship it" in s.call_tool("working_state", {"action": "plan_list"})


def test_an_agent_tool_may_not_take_the_combined_name(engine: memci.Engine) -> None:
    s = engine.session("clash")
    s.add({"role": "user", "content": "hi"})
    mine = {"type": "function", "function": {
        "name": "working_state", "parameters": {"type": "object", "properties": {}}}}
    with pytest.raises(memci.ToolNameClashError, match="the agent's tool 'working_state'"):
        s.build(tools=[mine])


# -- replay's note -----------------------------------------------------------------------


# Offered in every request (not "auto"): they cost more than memci saves on a short trace.
_EVERY = ["recall_page", "search_memory", "artifact_get", "grep", "working_state"]


def test_replay_notes_additions_that_cost_more_than_they_saved(tmp_path: Path) -> None:
    trace = json.loads((ROOT / "examples" / "agent_trace.json").read_text("utf-8"))
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("r", tools=_EVERY)
        result = replay(session, trace["messages"], budget=4000)
        system = trace["messages"][0]
        assert system["role"] == "system"
        prompt = session.tokenizer.count_message(memci.Message.system(system["content"]))
    finally:
        engine.close()
    assert result.memci_tokens > result.full_tokens  # a short trace: views save little
    costlier = result.own_costlier
    assert costlier and all(r.memci_tokens > r.full_tokens for r in costlier)
    r = costlier[0]
    assert r.own_tokens == (r.segments["tools"] - result.tools_tokens  # memci's schemas
                            + r.segments["system"] - prompt  # the contract
                            + r.segments.get("state", 0))
    assert r.own_saved == r.full_tokens - r.memci_tokens + r.own_tokens
    # The history fits: it is sent as stored, so views saved nothing beside the tools.
    assert result.own_saved == 0
    note = result.own_note
    assert note == (f"memci's tools and working state cost {result.own_tokens:,} tokens here, "
                    "and its views and archive saved none")
    data = result.to_json()
    assert data["totals"]["own_note"] == note
    assert data["totals"]["own_costlier_requests"] == len(costlier)
    marked = [q for q in data["requests"] if q["own_note"]]
    assert [q["request"] for q in marked] == [q.number for q in costlier]
    page = render_report(result, source="agent_trace.json")
    assert 'id="own-note"' in page and "memci&#x27;s tools and working state cost" in page


def test_replay_says_nothing_when_memci_saves_more_than_it_adds(tmp_path: Path) -> None:
    messages: list[dict[str, Any]] = []
    for i in range(40):
        messages += [{"role": "user", "content": f"question {i}: {_WORDS}"},
                     {"role": "assistant", "content": f"answer {i}: {_WORDS}"}]
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        result = replay(engine.session("r"), messages, budget=2000)
    finally:
        engine.close()
    assert result.memci_tokens < result.full_tokens
    assert result.own_note is None and result.own_summary() is None
    assert result.own_tokens > 0  # recall_page and search_memory were offered, and paid for


def test_replay_text_output_carries_the_note() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memci", "replay", "examples/agent_trace.json", "--budget",
         "4000", "--tools", ",".join(_EVERY)],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=True).stdout
    assert "memci's tools and working state cost" in " ".join(out.split())
    assert " ! " in out  # the marked requests
