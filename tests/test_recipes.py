"""Seed 004 in the build: artifacts, chat and tool-loop recipes, working state, soft trigger."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import memci

from .conftest import shared_data
from .test_engine import _call, assert_anthropic_valid, assert_openai_valid

POINTER = re.compile(r"artifact:([0-9a-f]{12,})")


def _loop(s: memci.Session, steps: int, *, start: int = 0, lines: int = 80) -> list[str]:
    outputs = []
    for i in range(start, start + steps):
        s.add({"role": "assistant", "content": f"step {i}: run the tests",
               "tool_calls": [_call(f"k{i}", args=json.dumps({"command": f"pytest -k t{i}"}))]})
        out = "\n".join(f"tests/test_{i}.py::case_{j} PASSED" for j in range(lines))
        out += f"\nFAILED tests/test_{i}.py::case_x - AssertionError\n1 failed, {lines} passed"
        s.add({"role": "tool", "tool_call_id": f"k{i}", "content": out})
        outputs.append(out)
    return outputs


def test_tool_loop_recipe_shows_newest_head_and_only_summaries_before(
    engine: memci.Engine,
) -> None:
    s = engine.session("s")
    s.set_system("You fix bugs.")
    s.add({"role": "user", "content": "Make the test suite pass."})
    outputs = _loop(s, 8)
    ctx = s.build()
    assert ctx.stats.recipe == "tool_loop"
    tools = [m for m in ctx.messages if m.role == "tool"]
    newest, older = tools[-1], tools[:-1]
    assert "case_0 PASSED" in newest.content and POINTER.search(newest.content)
    assert "· complete]" in newest.content or "--- output" in newest.content
    for m in older:
        assert "case_40 PASSED" not in m.content  # no older tool output replayed raw
        assert POINTER.search(m.content) and "1 failed" in m.content  # summary + pointer
    # recent steps only: at most 2 * 3 - 1 steps of the loop are shown
    assert 3 <= len(tools) <= 5
    assert next(m for m in ctx.messages if m.role == "user").content == (
        "Make the test suite pass.")
    # every pointer resolves to the exact original output
    for aid in POINTER.findall(" ".join(m.content for m in ctx.messages)):
        text = s.call_tool("artifact_get", {"id": aid, "offset": 0, "length": 16_000})
        assert text in outputs
    assert_openai_valid(ctx.to_openai()["messages"])
    assert_anthropic_valid(ctx.to_anthropic())


def test_chat_recipe_shows_tool_output_only_as_summary(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "Run the tests."})
    _loop(s, 2)
    s.add({"role": "assistant", "content": "One test fails in each run."})
    s.add({"role": "user", "content": "Why?"})
    ctx = s.build()
    assert ctx.stats.recipe == "chat"
    assert all("case_40 PASSED" not in m.content for m in ctx.messages)
    assert sum(1 for m in ctx.messages if m.role == "tool") == 2
    forced = s.build(recipe="tool_loop")
    assert forced.stats.recipe == "tool_loop"
    with pytest.raises(memci.ConfigError):
        s.build(recipe="other")


def test_recipe_sections_have_titles_and_follow_the_seed(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "Deploy the service."})
    _loop(s, 1, lines=400)  # an output memci's view saves most of: memci shapes the request
    answer = s.call_tool("pin_add", {"type": "constraint", "title": "Python version",
                                     "summary": "Deploy target runs Python 3.11 only",
                                     "source": "tool:k0"})
    assert not answer.startswith("error:"), answer
    assert s.call_tool("plan_add", {"text": "build the image"}).startswith("added plan")
    assert not s.call_tool("notebook_add", {"summary": "chose the slim base image",
                                            "source": "chat:1"}).startswith("error:")
    assert s.call_tool("pin_add", {"type": "fact", "title": "x", "summary": "y"}).startswith(
        "error:")  # a source is required
    loop = next(m.content for m in s.build(recipe="tool_loop").messages
                if m.content.startswith("## Working state"))
    assert loop.index("## Pins") < loop.index("## Plan") < loop.index("## Notebook")
    assert "Python 3.11 only" in loop and "build the image" in loop
    chat = next(m.content for m in s.build(recipe="chat").messages
                if m.content.startswith("## Working state"))
    assert "## Plan" not in chat and "## Pins" in chat
    contract = [m for m in s.build().messages if m.content.startswith("## Tool contract")]
    assert contract and "artifact_get" in contract[0].content


def test_notebook_gets_a_sourced_line_per_hidden_step_and_stays_bounded(
    engine: memci.Engine,
) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "Go."})
    for i in range(40):
        _loop(s, 1, start=i)
        s.build()
    state = s.export_state()
    assert any(n["source"].startswith("tool:k") for n in state["notebook"])
    notes = state["notebook"]
    limits = state["limits"]
    assert len(notes) <= limits["notebook_max"]
    assert all(n.get("source") for n in notes)
    assert len(s.work_state().pin_list()) <= limits["pins_max"]


def test_soft_trigger_archives_at_the_next_user_turn_only(engine: memci.Engine) -> None:
    s = engine.session("s", ctx_recent_max_tokens=300)
    for t in range(8):
        s.add({"role": "user", "content": f"question {t} " + "word " * 40})
        s.add({"role": "assistant", "content": f"answer {t} " + "word " * 40})
    s.add({"role": "user", "content": "question 8 needs a tool"})
    s.add({"role": "assistant", "content": None, "tool_calls": [_call("z1")]})
    s.add({"role": "tool", "tool_call_id": "z1", "content": "ok"})
    # in the middle of a tool chain: pending, but nothing is archived
    ctx = s.build()
    assert not ctx.stats.events and s.stats().archived == 0
    s.add({"role": "assistant", "content": "done"})
    s.add({"role": "user", "content": "question 9"})
    ctx = s.build()
    assert s.stats().archived == 7  # all but the newest three pages
    assert all(s.place_of_page(p) == "window" for p in (8, 9, 10))
    assert any("soft trigger" in e["reason"] for e in s.events())


def test_evicted_pages_fold_into_the_context_pool(engine: memci.Engine) -> None:
    s = engine.session("s", evict_unrecalled_rounds=3)
    for t in range(40):
        s.add({"role": "user", "content": f"Tell me about city {t}, its museums and food."})
        s.add({"role": "assistant", "content": f"City {t} has a harbour museum. " * 20})
        s.build(budget=3000)
    assert s.stats().evicted > 0
    pool = s.work_state().render_context_pool()
    assert "Page " in pool and "city" in pool.lower()
    ctx = s.build(budget=3000)
    state = next(m.content for m in ctx.messages if m.content.startswith("## Working state"))
    assert "## Context pool" in state


def test_chinese_session_gets_chinese_titles(engine: memci.Engine) -> None:
    s = engine.session("zh")
    for text in ("请帮我修复测试。", "好的，我先运行测试。"):
        s.add({"role": "user" if text.startswith("请") else "assistant", "content": text})
    s.add({"role": "user", "content": "还有一个问题：部署失败了。"})
    s.add({"role": "assistant", "content": None, "tool_calls": [_call("c1")]})
    # an output its view shows only in part: the artifact tools and their contract come
    s.add({"role": "tool", "tool_call_id": "c1",
           "content": "错误：找不到配置文件 /etc/app.yaml\n" + "部署日志：第 N 步失败。\n" * 400})
    s.call_tool("notebook_add", {"summary": "配置文件缺失", "source": "tool:c1"})
    texts = [m.content for m in s.build().messages]
    assert any(t.startswith("## 工作状态") for t in texts)
    assert any(t.startswith("## 工具约定") for t in texts)


def test_context_state_round_trip_and_rejection(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "x"})
    _loop(s, 2)
    s.call_tool("pin_add", {"type": "path", "title": "config", "summary": "at /etc/app.yaml",
                            "source": "file:/etc/app.yaml#L1"})
    state = s.export_state()
    other = engine.session("t")
    other.import_state(json.loads(json.dumps(state)))
    again = other.export_state()
    for key in ("pins", "plan", "notebook", "fastmemo", "limits"):
        assert again[key] == state[key]
    before = {k: v for k, v in other.export_state().items() if k != "exported_at"}
    bad: dict[str, Any] = {**state, "version": 999}
    with pytest.raises(memci.MemciError):
        other.import_state(bad)
    with pytest.raises(memci.MemciError):
        other.import_state({"pins": "not a list"})
    after = {k: v for k, v in other.export_state().items() if k != "exported_at"}
    assert after == before


def test_real_trace_artifacts_resolve_exactly(engine: memci.Engine) -> None:
    trace = json.loads(shared_data("traces", "pvlib__pvlib-python-1154.traj.json").read_text())
    s = engine.session("trace")
    stored: dict[str, str] = {}
    for m in trace["messages"]:
        if m["role"] not in ("system", "user", "assistant", "tool"):
            continue
        if m["role"] == "assistant":
            for aid in set(POINTER.findall(" ".join(x.content for x in s.build().messages))):
                stored.setdefault(aid, "")
        s.add(m)
    originals = {m.content for m in s.messages() if m.role == "tool"}
    assert stored
    for aid in stored:
        text = s.call_tool("artifact_get", {"id": aid, "offset": 0, "length": 16_000})
        assert any(o.startswith(text) for o in originals), aid
