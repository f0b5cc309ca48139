"""The paged context (seed 000): pages, archiving in batches, contents page, recall, eviction."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

import memci

from .test_engine import _call, assert_anthropic_valid, assert_openai_valid


def _chat(session: memci.Session, turns: int, *, start: int = 0, words: int = 30) -> None:
    for t in range(start, start + turns):
        question = f"Question {t}: tell me about topic {t}. " + "detail " * words
        answer = f"Answer {t}: topic {t} is covered. " + "fact " * words
        session.add_many([{"role": "user", "content": question},
                          {"role": "assistant", "content": answer}])


def _contents(ctx: memci.Context) -> str:
    for m in ctx.messages:
        if m.role == "system" and m.content.startswith("## Contents page"):
            return m.content
    return ""


def _listed(ctx: memci.Context) -> list[int]:
    return [int(n) for n in re.findall(r"^\[Page (\d+)\]", _contents(ctx), re.M)]


def test_pages_are_interactions(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.set_system("sys")
    s.add({"role": "user", "content": "one"})
    s.add({"role": "assistant", "content": None, "tool_calls": [_call("c1")]})
    s.add({"role": "tool", "tool_call_id": "c1", "content": "out"})
    s.add({"role": "assistant", "content": "done"})
    s.add({"role": "user", "content": "two"})
    assert [s.page_of(q) for q in range(1, 7)] == [0, 1, 1, 1, 1, 2]
    assert s.stats().pages == 2


def test_archiving_happens_in_batches_and_keeps_prefix(engine: memci.Engine) -> None:
    s = engine.session("s", contents_max_tokens=100_000, evict_unrecalled_rounds=0,
                       retrieval=False)
    s.set_system("You are a patient tutor.")
    events_at: list[int] = []
    shares: list[float] = []
    previous: list[Any] | None = None
    for t in range(120):
        _chat(s, 1, start=t)
        ctx = s.build(budget=3000)
        assert ctx.stats.total_tokens <= 3000
        if ctx.stats.events:
            events_at.append(t)
        elif previous is not None:
            # between two archive events a request starts with exactly the previous one
            # (less its retrieval block, the one part placed last and not carried on)
            assert [m.content for m in ctx.messages[: len(previous)]] == previous
        previous = [m.content for m in ctx.messages
                    if not m.content.startswith("## Retrieved memory")]
        if t:
            shares.append(ctx.stats.prefix_tokens / ctx.stats.total_tokens)
    assert 2 <= len(events_at) <= 40
    assert min(b - a for a, b in itertools.pairwise(events_at)) > 1
    assert sum(shares) / len(shares) > 0.8
    assert s.stats().archived > 0


def test_contents_page_lists_archived_pages_with_stable_text(engine: memci.Engine) -> None:
    s = engine.session("s", evict_unrecalled_rounds=0, retrieval=False)
    _chat(s, 40)
    ctx = s.build(budget=2500)
    text = _contents(ctx)
    assert text, "no contents page"
    assert "recall_page" in text and "recalls: 0" in text
    listed = _listed(ctx)
    assert listed == sorted(listed) and listed[-1] >= 20
    first = listed[0]
    assert f"[Page {first}] messages {2 * first - 1}-{2 * first} · recalls: 0" in text
    assert re.search(rf"^  - user: Question {first - 1}", text, re.M)
    assert "ago" not in text
    again = s.build(budget=2500)
    assert _contents(again) == text


def test_recall_brings_a_page_back_in_full(engine: memci.Engine) -> None:
    s = engine.session("s", evict_unrecalled_rounds=0, retrieval=False)
    _chat(s, 40)
    ctx = s.build(budget=2500)
    page = _listed(ctx)[0]
    assert s.tools()[0]["function"]["name"] == "recall_page"
    assert s.tools("anthropic")[0]["name"] == "recall_page"
    answer = s.call_tool("recall_page", {"index": page})
    assert f"Page {page}" in answer and "next request" in answer
    ctx = s.build(budget=2500)
    stored = [m for m in s.messages() if s.page_of(m.seq or 0) == page]
    shown = [m for m in ctx.messages if m.seq is not None and s.page_of(m.seq) == page]
    assert shown == stored  # byte-identical to the store
    assert page not in _listed(ctx)  # one place only: it is in the window now
    assert s.stats().recalled == 1
    assert s.call_tool("recall_page", {"index": page}).startswith(f"Page {page} is already")
    assert s.call_tool("recall_page", {"index": 999}).startswith("error:")
    assert s.call_tool("recall_page", '{"index": "x"}').startswith("error:")
    # an evicted page can be recalled too
    evicted = next(p for p in range(1, page) if s.place_of_page(p) == "evicted")
    assert s.call_tool("recall_page", {"index": evicted}).startswith(f"Page {evicted} (")
    # it ages out again at the next archive event, and the contents page shows the recall
    for t in range(40, 80):
        _chat(s, 1, start=t)
        ctx = s.build(budget=2500)
        if page in _listed(ctx):
            break
    assert page in _listed(ctx)
    assert re.search(rf"\[Page {page}\] .*recalls: 1, last recall: round 40", _contents(ctx))


def test_eviction_rules_are_recorded(engine: memci.Engine) -> None:
    s = engine.session("s", evict_unrecalled_rounds=10, evict_unchanged_rounds=5,
                       retrieval=False)
    _chat(s, 30, words=100)
    s.build(budget=6000)
    assert s.call_tool("recall_page", {"index": 2}).startswith("Page 2 (")
    for t in range(30, 60):
        _chat(s, 1, start=t, words=100)
        s.build(budget=6000)
    reasons = {e["reason"] for e in s.events() if e["kind"] == "evict"}
    assert "never recalled in 10 rounds" in reasons
    assert "recall count unchanged for 5 rounds" in reasons
    assert s.place_of_page(1) == "evicted" and s.place_of_page(2) == "evicted"
    for e in s.events():
        assert set(e) == {"round", "kind", "page", "reason", "at"}


def test_lru_eviction_when_contents_page_is_full(engine: memci.Engine) -> None:
    s = engine.session("s", contents_max_tokens=300, evict_unrecalled_rounds=0,
                       retrieval=False)
    for t in range(80):  # built every turn: pages listed earlier make room for newer ones
        _chat(s, 1, start=t)
        ctx = s.build(budget=3000)
    assert s.tokenizer.count(_contents(ctx)) <= 330
    assert any(e["reason"].startswith("lru") for e in s.events())
    listed = _listed(ctx)
    assert listed and listed[-1] > 10  # the newest archived pages stay listed


def test_current_page_opener_stays_in_long_tool_loop(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "Fix the failing build. Keep the public API unchanged."})
    for i in range(200):
        s.add({"role": "assistant", "content": f"step {i}", "tool_calls": [_call(f"k{i}")]})
        s.add({"role": "tool", "tool_call_id": f"k{i}", "content": f"output {i}\n" * 40})
        ctx = s.build(budget=4000)
        assert ctx.stats.total_tokens <= 4000
        chat = [m for m in ctx.messages if m.role != "system"]
        assert chat[0].content.startswith("Fix the failing build")
        newest = chat[-1].tool_result
        assert newest is not None and newest.call_id == f"k{i}"
        assert "output" in chat[-1].content
        assert_openai_valid(ctx.to_openai()["messages"])


@pytest.mark.parametrize("strategy", ["oldest", "sliding_window", "summarize", "paged"])
def test_strategies_keep_system_and_fit(engine: memci.Engine, strategy: str) -> None:
    s = engine.session(f"s-{strategy}", strategy=strategy, max_messages=10)
    s.set_system("SYSTEM PROMPT")
    _chat(s, 60)
    ctx = s.build(budget=2000)
    assert ctx.messages[0].content == "SYSTEM PROMPT"
    assert ctx.stats.total_tokens <= 2000
    assert ctx.stats.strategy == strategy
    assert ctx.messages[-1].content.startswith("Answer 59")
    if strategy == "sliding_window":
        assert len([m for m in ctx.messages if m.seq is not None]) <= 11
    if strategy == "summarize":
        assert ctx.messages[1].content.startswith("## Summary of the earlier conversation")


def test_tool_schema_tokens_come_out_of_the_budget(engine: memci.Engine) -> None:
    quiet = engine.session("quiet")
    _chat(quiet, 5)
    ctx = quiet.build(budget=5000)
    # the whole chat is in the window: no tool could act, none is offered or counted
    assert ctx.stats.sections["tools"] == 0 and "tools" not in ctx.to_openai()
    s = engine.session("s", tools=("recall_page", "search_memory"))
    _chat(s, 5)
    ctx = s.build(budget=5000)
    assert ctx.stats.sections["tools"] > 0
    assert ctx.stats.total_tokens >= ctx.stats.sections["tools"]
    assert set(ctx.stats.shares) >= {"recent", "contents", "retrieval", "state"}
    assert "tools" in ctx.to_openai() and "tools" in ctx.to_anthropic()


def test_request_size_guard_in_bytes(engine: memci.Engine) -> None:
    s = engine.session("s", max_request_bytes=6000, strategy="oldest")
    for i in range(50):
        s.add({"role": "user", "content": "数据" * 200 + str(i)})
    ctx = s.build()
    assert 0 < ctx.stats.request_bytes <= 6000


def test_state_survives_close_and_reopen(db_path: Path) -> None:
    with memci.Engine.open(db_path) as eng:
        s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False)
        _chat(s, 50)
        s.build(budget=2500)
        s.call_tool("recall_page", {"index": 4})
        before = s.build(budget=2500)
        stats = s.stats()
    with memci.Engine.open(db_path) as eng:
        s = eng.session("s")
        after = s.build(budget=2500)
        assert [m.content for m in after.messages] == [m.content for m in before.messages]
        st = s.stats()
        assert (st.archived, st.recalled, st.evicted) == (
            stats.archived, stats.recalled, stats.evicted)


def test_a_reopened_store_counts_its_contents_entries_no_more(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An entry's count is saved with its page row: a fresh engine's first build sums the
    # page from them, counting at most its last block, never the page whole.
    import memci.tokens

    with memci.Engine.open(db_path) as eng:
        s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False)
        _chat(s, 60)
        before = s.build(budget=2500)
    counted: list[str] = []
    count = memci.tokens.estimate_tokens

    def counting(text: str) -> int:
        counted.append(text)
        return count(text)

    # What the estimate counts, messages included (count_message counts through it).
    monkeypatch.setattr(memci.tokens, "estimate_tokens", counting)
    with memci.Engine.open(db_path) as eng:
        after = eng.session("s").build(budget=2500)
    monkeypatch.undo()
    page = next(m for m in after.messages if m.content.startswith("## Contents page"))
    assert page.content == _contents(before) and len(_listed(after)) >= 3
    assert sum("[Page " in text for text in counted) <= 1, counted
    assert page.tokens == memci.tokens.get_tokenizer("estimate").count_message(page) > 0


@pytest.mark.parametrize("name", ["estimate", "cl100k_base"])
@pytest.mark.parametrize("language", ["en", "zh"])
def test_a_contents_page_counts_as_the_sum_of_its_blocks(name: str, language: str) -> None:
    # Entries whose lines end in spaces, punctuation, newlines' neighbours or CJK, with
    # and without the line of unlisted pages: the summed count is the page's own.
    import random

    from memci.context._contents import ContentsPage
    from memci.context._model import ContentsEntry
    from memci.tokens import available, get_tokenizer

    if not available(name):
        pytest.skip(f"{name} is not on this machine")
    tokenizer = get_tokenizer(name)
    rng = random.Random(7)
    pieces = ["user: hello", "assistant: done.", "tool: exit 0  ", "  indented", "x/y",
              "ends with a dot.", "问题：故宫几点开门？", "回答。", "'s", "42", "--", "¿qué?",
              "trailing\t", "🙂", "a\u3000", ""]
    for _ in range(300):
        page = ContentsPage(tokenizer)
        listed = {}
        for number in sorted(rng.sample(range(1, 40), rng.randint(1, 6))):
            lines = tuple("".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
                          for _ in range(rng.randint(1, 4)))
            listed[number] = ContentsEntry(number, number * 3, number * 3 + 2, lines,
                                           archived_round=number,
                                           recall_count=rng.randint(0, 2))
        rendered = page.render(listed, (), rng.choice([max(listed) + 1, 45]), language)
        assert rendered is not None
        assert rendered.tokens == tokenizer.count_message(rendered), rendered.content


def test_chinese_conversation_gets_chinese_contents_page(engine: memci.Engine) -> None:
    s = engine.session("zh", evict_unrecalled_rounds=0, retrieval=False)
    for t in range(40):
        s.add_many([
            {"role": "user", "content": f"第{t}个问题：请介绍一下故宫的历史和开放时间。" * 3},
            {"role": "assistant", "content": f"第{t}个回答：故宫始建于明朝永乐四年。" * 3}])
    ctx = s.build(budget=2500)
    text = next(m.content for m in ctx.messages if m.content.startswith("## 目录页"))
    assert "召回次数: 0" in text and "recall_page" in text


def test_every_message_in_exactly_one_place(engine: memci.Engine) -> None:
    s = engine.session("s", evict_unrecalled_rounds=15, contents_max_tokens=600)
    for t in range(70):
        s.add({"role": "user", "content": f"q{t} " + "w " * (10 + t % 7 * 20)})
        if t % 3 == 0:
            s.add({"role": "assistant", "content": None, "tool_calls": [_call(f"c{t}")]})
            s.add({"role": "tool", "tool_call_id": f"c{t}", "content": "r " * 50})
        s.add({"role": "assistant", "content": f"a{t} " + "v " * 30})
        if t % 11 == 5:
            s.call_tool("recall_page", {"index": max(1, t - 20)})
        ctx = s.build(budget=2000)
        assert_openai_valid(ctx.to_openai()["messages"])
        assert_anthropic_valid(ctx.to_anthropic())
        listed = set(_listed(ctx))
        in_window = {s.page_of(m.seq) for m in ctx.messages if m.seq and m.role != "system"}
        for page in range(1, s.stats().pages + 1):
            place = s.place_of_page(page)
            assert place in ("window", "contents", "evicted")
            assert (place == "contents") == (page in listed)
            assert (page in in_window) <= (place == "window")
