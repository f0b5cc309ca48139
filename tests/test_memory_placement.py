"""Where memory sits in a request: each page's block stays with its page, so a turn extends.

A long real chat (LoCoMo, ../shared/data/locomo) is built turn by turn at 8k, retrieval on,
as an agent runs it. Every request whose build archived nothing must start with the
previous request exactly (the rendered messages, byte for byte), every page's memory block
must read the same for as long as its page is in the window, no memory line may show twice
in one request, and every request must be valid for OpenAI chat and Anthropic messages.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import memci
from memci.context._recipes import TITLES
from memci.replay import load_conversation

from .conftest import shared_data
from .test_messages_props import check_anthropic_rules, check_openai_rules

TITLE = TITLES["en"].retrieval


def _dialogue(name: str) -> list[dict[str, Any]]:
    trace = load_conversation(shared_data("locomo", f"{name}.json"), format="locomo")
    first_question = min((q.message for q in trace.questions), default=len(trace.messages))
    return [dict(m) for m in trace.messages[:first_question]]


def _is_memory(message: memci.Message) -> bool:
    return message.seq is None and message.content.startswith(TITLE)


def _blocks(ctx: memci.Context) -> dict[int, str]:
    """Each memory block placed with its page, by the seq of the message it follows.

    The request's last message is left out: it may be the tail a question's request
    closes with, which only that request carries.
    """
    out: dict[int, str] = {}
    for before, message in zip(ctx.messages, ctx.messages[1:-1], strict=False):
        if _is_memory(message) and not _is_memory(before):
            assert before.seq is not None and before.role == "user"
            out[before.seq] = message.content
    return out


def _rendered(ctx: memci.Context) -> list[str]:
    return [json.dumps(m, sort_keys=True, ensure_ascii=False)
            for m in ctx.to_openai()["messages"]]


def _memory_lines(ctx: memci.Context) -> list[str]:
    return [line for m in ctx.messages if _is_memory(m)
            for line in m.content.splitlines() if line.startswith("- [")]


def _shared(previous: list[str], rendered: list[str]) -> int:
    """How many messages of ``previous`` start ``rendered``."""
    n = 0
    while n < min(len(previous), len(rendered)) and previous[n] == rendered[n]:
        n += 1
    return n


def test_a_long_chat_built_turn_by_turn_extends_its_previous_request(
    engine: memci.Engine,
) -> None:
    s = engine.session("locomo-26")
    previous: list[str] = []
    tail = False  # the previous request closed with memory only it carries
    blocks: dict[int, str] = {}
    paged = False  # some of the chat has left the window
    extended = asked = 0
    for message in _dialogue("26"):
        if message["role"] == "assistant" and s.messages():
            ctx = s.build(budget=8000)
            rendered = _rendered(ctx)
            archived = any(e.startswith("archive") for e in ctx.stats.events)
            if previous and not archived and "shaped" not in ctx.stats.events:
                # The request repeats the previous one, all of it but the memory tail a
                # question's request closes with, byte for byte.
                shared = _shared(previous, rendered)
                assert shared >= len(previous) - tail, "the request rewrote its start"
                extended += paged and shared == len(previous)
            paged = paged or archived
            now = _blocks(ctx)
            for seq, text in now.items():
                assert blocks.get(seq, text) == text, f"the block after message {seq} changed"
            repeated = [line for line, n in Counter(_memory_lines(ctx)).items() if n > 1]
            assert not repeated, repeated
            body = ctx.to_anthropic()
            check_anthropic_rules(body.get("system"), body["messages"])
            check_openai_rules(ctx.to_openai()["messages"])
            assert ctx.stats.total_tokens <= 8000
            tail = bool(ctx.messages) and _is_memory(ctx.messages[-1])
            asked += tail
            previous, blocks = rendered, now
        s.add(message)
    # Once the chat has passed the budget, most requests extend the last one exactly, and
    # the questions among its turns are answered with memory.
    assert extended > 50 and asked > 30


def test_a_page_block_leaves_with_its_page(engine: memci.Engine) -> None:
    s = engine.session("locomo-30")
    placed: dict[int, str] = {}
    gone = 0
    for message in _dialogue("30"):
        if message["role"] == "assistant" and s.messages():
            ctx = s.build(budget=8000)
            shown = {m.seq for m in ctx.messages if m.seq is not None}
            now = _blocks(ctx)
            # A block is shown exactly when its page's opener is: never without it.
            assert set(now) <= shown
            gone += sum(1 for seq in placed if seq not in shown and seq not in now)
            placed = now
        s.add(message)
    assert gone > 0  # pages with blocks were archived, and their blocks went with them


def _kayak_chat(s: memci.Session, pages: int, budget: int) -> None:
    for i in range(pages):
        s.add({"role": "user", "content": f"Day {i}: we paddled the red kayak to cove{i}."})
        s.build(budget=budget)
        s.add({"role": "assistant", "content": "Noted. " + "Trains run late. " * 12})


def test_a_block_stays_with_its_opener_through_a_tool_loop_and_not_past_a_retract(
    engine: memci.Engine,
) -> None:
    s = engine.session("kayak")
    _kayak_chat(s, 60, 3000)
    question = s.add({"role": "user", "content": "Where did we paddle the red kayak?"})
    asked = s.build(budget=3000)
    block = _blocks(asked).get(question.seq)
    assert block is not None and "cove" in block
    # A tool loop on the page: its block stays right after the question, unchanged.
    s.add({"role": "assistant", "content": None, "tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "map", "arguments": "{}"}}]})
    s.add({"role": "tool", "tool_call_id": "t1", "content": "map: cove12 is north"})
    step = s.build(budget=3000)
    assert _blocks(step)[question.seq] == block
    body = step.to_anthropic()
    check_anthropic_rules(body.get("system"), body["messages"])
    # Retracted, the question takes its block with it: a remark in its place shows none.
    for seq in sorted((m.seq for m in s.messages() if m.seq >= question.seq), reverse=True):
        s.retract(seq)
    s.add({"role": "user", "content": "Thanks, that was a lovely day out."})
    remark = s.build(budget=3000)
    assert not [m for m in remark.messages if _is_memory(m)]
