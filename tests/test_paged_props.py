"""Invariants of every build, as properties over random conversations with tool calls.

For any conversation, budget and sequence of recalls: every build is within budget by the
session's tokenizer; tool calls and results stay paired and ordered for OpenAI and
Anthropic; every stored message is in exactly one place (window, listed archived page,
evicted page); a recalled page is byte-identical to what was stored; the state survives
close and reopen.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memci

from .test_engine import assert_anthropic_valid, assert_openai_valid

WORDS = st.sampled_from(["alpha", "beta", "数据", "查询", "path/to/file.py", "42", "error:",
                         "the", "cache", "索引"])


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """Steps: ("msg", message dict) to add, ("build", budget), ("recall", page)."""
    steps: list[tuple[str, Any]] = []
    call = 0
    for turn in range(draw(st.integers(1, 24))):
        text = " ".join(draw(st.lists(WORDS, min_size=1, max_size=60)))
        steps.append(("msg", {"role": "user", "content": f"u{turn} {text}"}))
        for _ in range(draw(st.integers(0, 3))):
            ids = [f"c{call + k}" for k in range(draw(st.integers(1, 3)))]
            call += len(ids)
            steps.append(("msg", {"role": "assistant", "content": draw(st.sampled_from(
                [None, "checking"])), "tool_calls": [
                {"id": i, "type": "function",
                 "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}} for i in ids]}))
            for i in ids:
                body = " ".join(draw(st.lists(WORDS, min_size=1, max_size=150)))
                steps.append(("msg", {"role": "tool", "tool_call_id": i, "content": body}))
        steps.append(("msg", {"role": "assistant", "content": f"a{turn} " + text[:200]}))
        if draw(st.booleans()):
            steps.append(("build", draw(st.integers(300, 3000))))
        if draw(st.integers(0, 4)) == 0:
            steps.append(("recall", draw(st.integers(1, turn + 1))))
    steps.append(("build", draw(st.integers(300, 3000))))
    return steps


def _listed(ctx: memci.Context) -> set[int]:
    text = next((m.content for m in ctx.messages if m.role == "system"
                 and m.content.startswith(("## Contents page", "## 目录页"))), "")
    return {int(n) for n in re.findall(r"^\[Page (\d+)\]", text, re.M)}


def _check(s: memci.Session, ctx: memci.Context, budget: int) -> None:
    counted = sum(s.tokenizer.count_message(m) for m in ctx.messages)
    counted += ctx.stats.sections["tools"] + 3
    assert counted == ctx.stats.total_tokens
    # Within budget, unless the current page's opening message alone does not fit.
    assert ctx.stats.total_tokens <= budget or any(
        "characters cut" in m.content for m in ctx.messages)
    assert_openai_valid(ctx.to_openai()["messages"])
    assert_anthropic_valid(ctx.to_anthropic())
    stored = {m.seq: m for m in s.messages()}
    listed = _listed(ctx)
    window_pages = set()
    for m in ctx.messages:
        if m.seq is None:
            continue
        page = s.page_of(m.seq)
        window_pages.add(page)
        original = stored[m.seq]
        if m.role == "tool" and m.content != original.content:
            # tool output is shown as stored (the whole history fits), or as its artifact's
            # view, whose pointer gives it back exactly
            (aid,) = re.findall(r"artifact:([0-9a-f]{12,})", m.content.split("\n")[0])
            exact = s.call_tool("artifact_get", {"id": aid, "offset": 0,
                                                 "length": len(original.content)})
            assert exact == original.content[:16_000]
        elif page != s.stats().pages and "characters cut" not in m.content:
            if m.tool_calls == original.tool_calls:
                assert m == original  # recalled and active pages are the stored messages
    for page in range(1, s.stats().pages + 1):
        place = s.place_of_page(page)
        assert place in ("window", "contents", "evicted")
        assert (page in listed) == (place == "contents")
        assert (page in window_pages) <= (place == "window")


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=conversations())
def test_paged_invariants(steps: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "p.db"
        last_budget = 1000
        with memci.Engine.open(db, synchronous="NORMAL") as eng:
            s = eng.session("p", evict_unrecalled_rounds=6, evict_unchanged_rounds=4,
                            contents_max_tokens=400)
            s.set_system("system prompt")
            for kind, value in steps:
                if kind == "msg":
                    s.add(value)
                elif kind == "build":
                    last_budget = value
                    _check(s, s.build(budget=value), value)
                else:
                    answer = s.call_tool("recall_page", {"index": value})
                    assert answer.startswith(("Page", "error:"))
            before = [m.content for m in s.build(budget=last_budget).messages]
        with memci.Engine.open(db, synchronous="NORMAL") as eng:
            s = eng.session("p")
            ctx = s.build(budget=last_budget)
            assert [m.content for m in ctx.messages] == before
            _check(s, ctx, last_budget)
