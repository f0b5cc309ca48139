"""Never costlier than everything (issue 22, item 2): a history that fits is sent as stored.

While a request can carry the whole conversation, memci sends it as an agent without memci
would (tool outputs raw, none of memci's tools, no contract, no working state without
entries), so a replay costs what the full history costs, in tokens and with prompt
caching. memci starts shaping (views, its tools, the notebook) once that costs at most half
the whole history, or the history outgrows the budget, and from then on keeps shaping.
Checked on real traces: the example agent trace, a mini-swe-agent trace cut to lengths
that fit, and one sample of every trace format memci reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import memci
from memci.replay import load_conversation, replay

from .conftest import shared_data

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "tests" / "trace_samples"
BOUND = 1.05  # issue 22: at most 5% over the full history, tokens and cached cost


def _ratios(path: Path, *, cut: int | None = None, budget: int | None = None,
            tmp: Path) -> tuple[float, float, int]:
    trace = load_conversation(path)
    messages = trace.messages[:cut] if cut else trace.messages
    with memci.Engine.open(tmp / f"{path.stem}-{cut}-{budget}.db") as engine:
        result = replay(engine.session("r"), messages, tools=trace.tools, budget=budget)
    cost = result.to_json()["cost"]
    return cost["ratio"], cost["ratio_cached"], len(result.requests)


@pytest.mark.parametrize("budget", [None, 4000])
def test_the_example_trace_costs_what_its_history_costs(tmp_path: Path,
                                                        budget: int | None) -> None:
    tokens, cached, requests = _ratios(ROOT / "examples" / "agent_trace.json", budget=budget,
                                       tmp=tmp_path)
    assert requests == 13
    assert tokens <= BOUND and cached <= BOUND, (tokens, cached)


@pytest.mark.parametrize("cut", [16, 30, 60])
def test_a_real_agent_trace_cut_to_fit_is_never_costlier(tmp_path: Path, cut: int) -> None:
    path = shared_data("traces", "django__django-11815.traj.json")
    tokens, cached, _ = _ratios(path, cut=cut, tmp=tmp_path)
    assert tokens <= BOUND and cached <= BOUND, (tokens, cached)


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir()
                                          if p.name != "README.md"))
def test_every_trace_format_sample_is_never_costlier(tmp_path: Path, sample: str) -> None:
    tokens, cached, _ = _ratios(SAMPLES / sample, tmp=tmp_path)
    assert tokens <= BOUND and cached <= BOUND, (tokens, cached)


def _own(ctx: memci.Context) -> list[str]:
    return [t.name for t in ctx.tools if not t.agent]


def test_while_the_history_fits_each_request_extends_the_last(engine: memci.Engine) -> None:
    """Append-only, as the full history is: no view, no tool of memci, no block rewritten."""
    trace = json.loads((ROOT / "examples" / "agent_trace.json").read_text("utf-8"))
    s = engine.session("s")
    previous: list[dict[str, Any]] = []
    builds = 0
    for message in trace["messages"]:
        if message["role"] == "assistant" and s.messages():
            ctx = s.build(budget=4000)
            sent = ctx.to_openai()["messages"]
            assert sent[:len(previous)] == previous
            assert _own(ctx) == [] and not ctx.stats.events
            assert [seg.name for seg in ctx.segments] == ["system", "recent"]
            stored = [m for m in s.messages() if m.role != "system"]
            assert [m.content for m in ctx.messages[1:]] == [m.content for m in stored]
            if builds:
                assert ctx.stats.prefix_tokens == ctx.stats.total_tokens - _tail(ctx, previous)
            previous, builds = sent, builds + 1
        s.add(message)
    assert builds == 13


def _tail(ctx: memci.Context, previous: list[dict[str, Any]]) -> int:
    """Tokens of what a request adds after the previous one (and the reply's priming)."""
    return sum(m.tokens or 0 for m in ctx.messages[len(previous):]) + 3


_OUTPUT = "".join(f"tests/test_mod_{i}.py::case PASSED in 0.{i:02d}s\n" for i in range(600))


def _tool_turn(s: memci.Session, call_id: str, output: str) -> None:
    s.add({"role": "assistant", "content": None, "tool_calls": [{
        "id": call_id, "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
    s.add({"role": "tool", "tool_call_id": call_id, "content": output})


def test_memci_shapes_once_it_pays_and_keeps_shaping(tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "m.db") as engine:
        s = engine.session("s")
        s.add({"role": "user", "content": "run the tests"})
        _tool_turn(s, "c1", "3 passed")
        ctx = s.build()
        assert _own(ctx) == [] and ctx.messages[-1].content == "3 passed"
        _tool_turn(s, "c2", _OUTPUT)  # a view saves most of it
        ctx = s.build()
        assert ctx.stats.events == ("shaped",)
        assert "artifact_get" in _own(ctx) and ctx.messages[-1].content != _OUTPUT
        assert ctx.stats.total_tokens * 2 <= ctx.stats.full_tokens
        # Short turns would make the whole history cheap again: the form stays.
        for i in range(3):
            s.add({"role": "assistant", "content": f"reading the log, part {i}"})
            s.add({"role": "user", "content": "go on " * 400})
            again = s.build()
            assert "artifact_get" in _own(again) and not again.stats.events
    with memci.Engine.open(tmp_path / "m.db") as engine:  # another process: the same form
        assert "artifact_get" in _own(engine.session("s").build())


def test_the_working_state_comes_with_its_entries_only(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "deploy the service"})
    _tool_turn(s, "c1", "deployed to staging")
    assert all(not m.content.startswith("## Working state") for m in s.build().messages)
    s.call_tool("pin_add", {"type": "constraint", "title": "python",
                            "summary": "the target runs Python 3.11", "source": "tool:c1"})
    ctx = s.build()
    state = [m.content for m in ctx.messages if m.content.startswith("## Working state")]
    assert state and "Python 3.11" in state[0] and "## Pins" in state[0]
    assert ctx.messages[-1].content == "deployed to staging"  # the history still as stored


def test_a_soft_cap_on_the_chat_asks_for_shaping(engine: memci.Engine) -> None:
    s = engine.session("s", ctx_recent_max_tokens=300, retrieval=False)
    for t in range(8):
        s.add({"role": "user", "content": f"question {t} " + "word " * 40})
        s.add({"role": "assistant", "content": f"answer {t} " + "word " * 40})
    s.add({"role": "user", "content": "question 8"})
    ctx = s.build()
    assert any(e.startswith("archive") for e in ctx.stats.events)
    assert "recall_page" in _own(ctx)


def test_other_conversations_memory_comes_when_asked_for(engine: memci.Engine) -> None:
    """While it fits, memory of the user's other conversations is an addition: only asked."""
    earlier = engine.session("earlier", user="u")
    for i in range(6):
        earlier.add({"role": "user", "content": f"My flight {i} to Osaka needs a window seat."})
        earlier.add({"role": "assistant", "content": f"Window seat noted for flight {i}."})
    s = engine.session("now", user="u")
    s.add({"role": "user", "content": "Book me a window seat on the Osaka flight."})
    ctx = s.build()
    assert ctx.segment("retrieval") == [] and ctx.stats.total_tokens == ctx.stats.full_tokens
    s.add({"role": "assistant", "content": "Which date?"})
    s.add({"role": "user", "content": "The same as last time, on the Osaka flight."})
    asked = s.build()
    assert "Osaka" in asked.segment("retrieval")[0].content
    assert asked.messages[:-1] == [*ctx.messages, *asked.messages[len(ctx.messages):-1]]


def test_pages_that_were_sent_whole_are_listed_when_they_leave(engine: memci.Engine) -> None:
    """The build that first leaves pages out lists every one: none is an unread backlog."""
    s = engine.session("s", retrieval=False)
    for turn in range(30):
        s.add({"role": "user", "content": f"Question {turn}: " + "tell me the details " * 40})
        ctx = s.build(budget=6000)
        s.add({"role": "assistant", "content": f"Answer {turn}: " + "it opens at nine " * 30})
    archived = [e for e in s.events() if e["kind"] == "archive"]
    assert archived and ctx.segment("contents")
    assert not [e for e in archived if e["reason"].startswith("backlog")]


@pytest.mark.parametrize("grown", [16_000, None])
@pytest.mark.parametrize(("chat", "history"), [("26.json", 4_700), ("41.json", 4_700),
                                               ("30.json", 3_000)])
def test_a_history_back_in_a_grown_budget_costs_what_it_costs(
        tmp_path: Path, chat: str, history: int, grown: int | None) -> None:
    """After builds at 900 tokens archived most of a real chat, a build whose budget holds
    the whole history again sends it at most 5% over its own tokens: no context pool that
    repeats the pages now back, no recall tools with nothing left to recall, no memory of
    the session's own pages (the blocks placed while they were out included)."""
    trace = load_conversation(shared_data("locomo", chat), format="locomo")
    with memci.Engine.open(tmp_path / "g.db") as engine:
        s = engine.session("g")
        for message in trace.messages:
            if message["role"] not in ("user", "assistant"):
                continue
            s.add(message)
            if message["role"] == "user":
                s.build(budget=900)
            if sum(m.tokens or 0 for m in s.messages()) >= history:
                break
        assert s.stats().archived > 10
        ctx = s.build(budget=grown)
        shown = {m.seq for m in ctx.messages if m.seq is not None}
        assert shown >= {m.seq for m in s.messages()}
        assert _own(ctx) == []
        assert ctx.stats.total_tokens <= BOUND * ctx.stats.full_tokens, ctx.stats.sections
