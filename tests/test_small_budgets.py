"""Small budgets, honestly (issue 13, item 5).

Never over the budget without saying so; no section header with nothing under it; a page
is not archived and evicted in one build; the newest message is always sent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import memci


def _turns(session: memci.Session, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        session.add({"role": "user", "content": f"question {i} about the alpaca farm, "
                                                f"barn {i} and the number {i * 7}"})
        session.add({"role": "assistant", "content": f"answer {i}: barn {i} holds "
                                                     f"{i * 11} alpacas. " * 3})


def _headers_with_nothing_under(text: str) -> list[str]:
    lines = text.split("\n")
    empty = []
    for i, line in enumerate(lines):
        if line.startswith("## "):
            rest = next((x for x in lines[i + 1:] if x.strip()), None)
            if rest is None or (rest.startswith("## ") and not line.startswith(
                    ("## Working state", "## 工作状态"))):
                empty.append(line)
    return empty


@pytest.mark.parametrize("budget", [250, 400, 700, 1000, 1600])
def test_small_budgets_hold_and_say_what_they_left_out(tmp_path: Path, budget: int) -> None:
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("s")
        session.set_system("Be brief.")
        for i in range(45):
            _turns(session, 1, start=i)
            session.add({"role": "user", "content": f"and barn {i}?"})
            ctx = session.build(budget=budget)
            assert ctx.stats.total_tokens <= budget
            # the newest message, never cut away (retrieved memory may follow it)
            assert ctx.segment("recent")[-1].content == f"and barn {i}?"
            for m in ctx.messages:
                if m.role == "system":
                    assert not _headers_with_nothing_under(m.content), m.content
            archived = {int(p) for e in ctx.stats.events
                        for p in re.findall(r"^archive page (\d+)$", e)}
            evicted = {int(p) for e in ctx.stats.events
                       for p in re.findall(r"^evict page (\d+)$", e)}
            assert not archived & evicted, ctx.stats.events
            contents = ctx.segment("contents")
            if ctx.stats.sections["contents"]:
                # the pages it does not list are named, so the model knows they exist
                assert contents and ("[Page " in contents[0].content
                                     or "not listed here" in contents[0].content)
        assert session.stats().archived > 0


def test_a_budget_below_the_system_prompt_and_newest_message_is_a_typed_error(
        tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("s")
        session.set_system("You are a careful assistant. " * 100)  # ~600 tokens
        session.add({"role": "user", "content": "hello"})
        with pytest.raises(memci.BudgetTooSmallError, match="raise the budget to at least"):
            session.build(budget=600)
        with pytest.raises(memci.ConfigError):  # a ConfigError: what the caller fixes
            session.build(budget=600)
        ctx = session.build(budget=800)
        assert ctx.stats.total_tokens <= 800 and ctx.segment("recent")[-1].content == "hello"


def test_the_range_line_of_unlisted_pages_is_in_chinese_for_a_chinese_chat(
        tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("s")
        for i in range(40):
            asked = f"第{i}个问题：羊驼农场的{i}号谷仓有多少只羊驼？"
            session.add({"role": "user", "content": asked})
            session.add({"role": "assistant", "content": f"{i}号谷仓有{i * 11}只羊驼。" * 3})
        ctx = session.build(budget=400)
        contents = ctx.segment("contents")
        assert contents and "未在此列出" in contents[0].content
        assert ctx.stats.total_tokens <= 400


_IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/a.png",
                                              "detail": "high"}}
_BIG_CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function",
     "function": {"name": "lookup", "arguments": '{"q": "' + "word " * 800 + '"}'}}]}
_PARALLEL = {"role": "assistant", "content": "x", "tool_calls": [
    {"id": f"p{i}", "type": "function",
     "function": {"name": "lookup", "arguments": '{"q": "' + "w " * 30 + '"}'}}
    for i in range(6)]}
# Newest messages whose parts cannot all be cut: images, tool calls, a call's pairing.
_ENDINGS = {
    "image": [{"role": "user", "content": "hi"},
              {"role": "user", "content": [{"type": "text", "text": "look"}, _IMAGE]}],
    "two images and text": [{"role": "user", "content": [
        _IMAGE, _IMAGE, {"type": "text", "text": "x " * 300}]}],
    "a large call and its result": [
        {"role": "user", "content": "go"}, _BIG_CALL,
        {"role": "tool", "tool_call_id": "c1", "content": "result " * 900}],
    "a large call not answered yet": [{"role": "user", "content": "go"}, _BIG_CALL],
    "parallel results": [{"role": "user", "content": "go"}, _PARALLEL, *[
        {"role": "tool", "tool_call_id": f"p{i}", "content": "out " * 200}
        for i in range(6)]],
    "an image opens the page, steps follow": [
        {"role": "user", "content": [{"type": "text", "text": "what is this?"}, _IMAGE]},
        {**_PARALLEL, "tool_calls": _PARALLEL["tool_calls"][:1]},
        {"role": "tool", "tool_call_id": "p0", "content": "out " * 200},
        *[{"role": "assistant", "content": f"step {i} " * 40} for i in range(6)]],
    "a long user turn": [{"role": "user", "content": "a"},
                         {"role": "assistant", "content": "b"},
                         {"role": "user", "content": "hello there " * 500}],
}


@pytest.mark.parametrize("strategy", ["paged", "oldest", "summarize"])
@pytest.mark.parametrize("ending", sorted(_ENDINGS))
def test_a_build_fits_its_budget_or_names_one_that_works(
        tmp_path: Path, strategy: str, ending: str) -> None:
    """Fits, or raises naming the least budget; that budget then builds, within itself."""
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("s", strategy=strategy)
        for message in _ENDINGS[ending]:
            session.add(message)
        for recipe in ("chat", "tool_loop"):
            raised = 0
            for budget in [*range(1, 1400, 23), 2000, 4000]:
                try:
                    ctx = session.build(recipe=recipe, budget=budget)
                except memci.BudgetTooSmallError as exc:
                    raised += 1
                    assert exc.budget == budget < exc.needed, (budget, exc.needed)
                    assert f"at least {exc.needed} " in str(exc)
                    ctx = session.build(recipe=recipe, budget=exc.needed)
                    budget = exc.needed
                assert ctx.stats.total_tokens <= budget, (recipe, budget, ctx.stats.sections)
                # What was cut leaves no empty text block for a provider to refuse.
                sent = json.dumps([ctx.to_openai(), ctx.to_anthropic()])
                assert '"text": ""' not in sent, sent[:300]
                assert ctx.messages[-1].role != "system" or ctx.stats.sections["retrieval"]
            assert raised  # these endings cannot fit the smallest budgets
