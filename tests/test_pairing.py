"""A tool call whose result never arrives stays in the request with a stand-in (issue 15).

docs/messages.md promises it: the call is not dropped from what the model sees; it gets
the error result ``MISSING_RESULT`` right after it, and a result that came late (after
the user spoke again) is moved up to its call. Each payload is sent through the official
SDKs to the local fake server, which refuses a request that breaks the providers'
pairing rules, in every strategy; the store keeps the log as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

import memci
from memci.messages import MISSING_RESULT
from tests.fakellm import FakeLLM

STRATEGIES = [("paged", {}), ("oldest", {}), ("sliding_window", {"max_messages": 20}),
              ("summarize", {})]


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def _call(cid: str, name: str = "bash") -> dict[str, Any]:
    return {"id": cid, "type": "function",
            "function": {"name": name, "arguments": json.dumps({"command": "ls"})}}


def _send_everywhere(ctx: memci.Context, fake: FakeLLM) -> None:
    """Send the context in each API's form to a server that keeps the pairing rules."""
    with openai.OpenAI(base_url=fake.openai_base_url, api_key="k", max_retries=0) as client:
        client.chat.completions.create(model="m", **ctx.to_openai())
        client.responses.create(model="m", **ctx.to_responses())
    with anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key="k",
                             max_retries=0) as claude:
        claude.messages.create(model="m", max_tokens=100, **ctx.to_anthropic())


def _results(payload: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in payload["messages"] if m["role"] == "tool"}


@pytest.mark.parametrize(("strategy", "extra"), STRATEGIES)
def test_a_call_never_answered_keeps_its_place_with_a_stand_in(
    engine: memci.Engine, fake: FakeLLM, strategy: str, extra: dict[str, Any]
) -> None:
    s = engine.session("s", strategy=strategy, **extra)
    s.add({"role": "user", "content": "list the files"})
    s.add({"role": "assistant", "content": "on it", "tool_calls": [_call("a1"), _call("a2")]})
    s.add({"role": "tool", "tool_call_id": "a1", "content": "README.md"})
    s.add({"role": "user", "content": "never mind, what is 2 + 2?"})  # a2 never answered
    ctx = s.build()
    chat = ctx.to_openai()["messages"]
    calls = [m for m in chat if m.get("tool_calls")]
    assert [c["id"] for c in calls[0]["tool_calls"]] == ["a1", "a2"]
    assert _results(ctx.to_openai())["a2"] == MISSING_RESULT
    claude = ctx.to_anthropic()["messages"]
    blocks = [b for m in claude if isinstance(m["content"], list) for b in m["content"]]
    assert {"type": "tool_result", "tool_use_id": "a2", "content": MISSING_RESULT,
            "is_error": True} in blocks
    outputs = {i["call_id"]: i["output"] for i in ctx.to_responses()["input"]
               if i.get("type") == "function_call_output"}
    assert outputs["a2"] == MISSING_RESULT
    _send_everywhere(ctx, fake)
    assert fake.count == 3
    assert len(s.messages()) == 4  # the stand-in is in the request only, never stored


@pytest.mark.parametrize(("strategy", "extra"), STRATEGIES)
def test_a_call_pending_at_build_time_is_sent_with_a_stand_in(
    engine: memci.Engine, fake: FakeLLM, strategy: str, extra: dict[str, Any]
) -> None:
    s = engine.session("s", strategy=strategy, **extra)
    s.add({"role": "user", "content": "list the files"})
    s.add({"role": "assistant", "content": "", "tool_calls": [_call("p1")]})
    ctx = s.build()
    chat = ctx.to_openai()["messages"]
    assert chat[-2]["tool_calls"][0]["id"] == "p1"
    assert chat[-1] == {"role": "tool", "tool_call_id": "p1", "content": MISSING_RESULT}
    _send_everywhere(ctx, fake)


@pytest.mark.parametrize(("strategy", "extra"), STRATEGIES)
def test_a_late_result_is_moved_up_to_its_call(
    engine: memci.Engine, fake: FakeLLM, strategy: str, extra: dict[str, Any]
) -> None:
    s = engine.session("s", strategy=strategy, **extra)
    s.add({"role": "user", "content": "list the files"})
    s.add({"role": "assistant", "content": "", "tool_calls": [_call("l1")]})
    s.add({"role": "user", "content": "hurry up"})
    s.add({"role": "tool", "tool_call_id": "l1", "content": "README.md"})
    ctx = s.build()
    chat = ctx.to_openai()["messages"]
    roles = [m["role"] for m in chat if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "user"]
    assert "README.md" in _results(ctx.to_openai())["l1"]
    assert MISSING_RESULT not in json.dumps(chat)
    _send_everywhere(ctx, fake)
    assert [m.role for m in s.messages()] == ["user", "assistant", "user", "tool"]


def test_stand_ins_are_counted_in_the_budget(engine: memci.Engine, fake: FakeLLM) -> None:
    s = engine.session("s", strategy="oldest")
    for i in range(40):
        s.add({"role": "user", "content": f"step {i}: run the tools"})
        s.add({"role": "assistant", "content": "",
               "tool_calls": [_call(f"c{i}_{j}") for j in range(6)]})  # none answered
    for budget in (300, 600, 1200):
        ctx = s.build(budget=budget)
        stand_ins = [r for r in _results(ctx.to_openai()).values() if r == MISSING_RESULT]
        assert stand_ins, budget
        counted = sum(s.tokenizer.count_message(m) for m in ctx.messages)
        assert counted <= budget
        assert ctx.stats.total_tokens <= budget
        _send_everywhere(ctx, fake)


def test_windows_checked_one_after_another_are_paired_as_if_each_were_the_first() -> None:
    """:class:`Pairing` skips what a window shares with the last paired one: never a fault.

    Windows are cut from one pool of message objects (as a build's window shares the
    messages of the last), at random starts and ends, with answered, unanswered and late
    calls, some in the middle of a call's results; each must come out as a fresh
    ``pair_tool_calls`` makes it.
    """
    import random

    from memci.context._pairing import Pairing, pair_tool_calls
    from memci.messages import Message, ToolCallPart
    from memci.tokens import get_tokenizer

    rng = random.Random(7)
    tokenizer = get_tokenizer("estimate")
    pool: list[Message] = []
    late: list[Message] = []
    for i in range(400):
        roll = rng.random()
        if roll < 0.4:
            pool.append(Message.user(f"q{i}"))
            pool.extend(late)
            late = []
        else:
            ids = [f"c{i}_{j}" for j in range(rng.choice((1, 1, 2)))]
            pool.append(Message.assistant("", *(ToolCallPart(c, "bash", "{}") for c in ids)))
            for c in ids:
                fate = rng.random()
                result = Message.tool(c, f"out {c}")
                if fate < 0.97:  # most are answered: most windows are paired
                    pool.append(result)
                elif fate < 0.985:
                    late.append(result)
    pairing = Pairing(tokenizer)
    start, end = 0, 20
    repaired = 0
    for _ in range(2_000):
        roll = rng.random()
        if roll < 0.5:
            end = min(len(pool), end + rng.randint(1, 3))  # the chat goes on
        elif roll < 0.7:
            start = min(end - 1, start + rng.randint(1, 5))  # pages leave the window
        elif roll < 0.85:
            end = max(start + 1, end - rng.randint(1, 3))  # a cut of the newest
        else:
            start, end = sorted(rng.sample(range(len(pool) + 1), 2))
        start = max(start, end - 24)  # a window of a few rounds
        window = pool[start:end]
        fresh = pair_tool_calls(list(window), tokenizer, {})
        assert pairing(list(window)) == fresh
        repaired += fresh != window
    assert 200 < repaired < 1_800  # windows of both kinds were checked


def test_a_build_of_a_history_that_fits_checks_only_what_is_new(
    engine: memci.Engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A tool loop that one request carries whole: a build pairs the whole log and the
    # window, two lists; each is checked from where it left the last of its own kind, so
    # a build after two more messages looks at a few messages, not the whole log twice.
    from memci.context import _pairing

    s = engine.session("fits", context_window=128_000)
    for i in range(150):
        s.add_many([{"role": "user", "content": f"step {i}"},
                    {"role": "assistant", "content": "", "tool_calls": [_call(f"c{i}")]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i}"}])
    s.build()
    s.add({"role": "user", "content": "one more"})
    s.build()
    checked: list[int] = []
    real = _pairing._paired

    def counting(window: list[Any], calls_of: list[Any]) -> bool:
        checked.append(len(window))
        return real(window, calls_of)

    monkeypatch.setattr(_pairing, "_paired", counting)
    s.add({"role": "assistant", "content": "done"})
    s.add({"role": "user", "content": "and again"})
    ctx = s.build()
    assert sum(m.role == "tool" for m in ctx.messages) == 150  # the whole history
    assert checked and sum(checked) < 60, checked  # 450+ messages a list before
