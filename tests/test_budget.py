"""Budget allocator profiles (seed 002) and the priority ranker."""

from __future__ import annotations

import pytest

import memci
from memci.context._budget import PRIORITIES, BudgetAllocator, PriorityRanker, Section


def test_profiles_follow_seed_002() -> None:
    alloc = BudgetAllocator()
    short = alloc.allocate(10_000, turns=5, has_retrieval=False)
    assert short["recent"] == 5_500 and sum(short.values()) == 10_000
    long = alloc.allocate(10_000, turns=40, has_retrieval=False)
    assert long["recent"] < short["recent"] and long["contents"] > short["contents"]
    rag = alloc.allocate(10_000, turns=40, has_retrieval=True)
    assert (rag["retrieval"], rag["recent"]) == (4_500, 4_000)


def test_profiles_are_configurable_and_checked() -> None:
    alloc = BudgetAllocator().with_shares("short", recent=0.7, contents=0.1, retrieval=0.1,
                                          state=0.1)
    assert alloc.allocate(1_000, turns=1, has_retrieval=False)["recent"] == 700
    with pytest.raises(memci.ConfigError):
        BudgetAllocator().with_shares("short", recent=0.9, contents=0.9)


def test_ranker_trims_lowest_priority_first() -> None:
    assert PRIORITIES[0] == "system" and PRIORITIES[-1] == "preferences"
    ranker = PriorityRanker()
    keep = ranker.rank_and_truncate([
        Section("system", "system", 100, required=True),
        Section("recent", "recent", 500),
        Section("rag", "retrieval", 300),
        Section("pages", "episodic", 200),
        Section("prefs", "preferences", 100),
    ], budget=850)
    assert keep == {"system": 100, "recent": 500, "rag": 250, "pages": 0, "prefs": 0}
    with pytest.raises(memci.ConfigError):
        PriorityRanker(("system",))


def test_a_big_newest_page_takes_from_the_lowest_priorities(engine: memci.Engine) -> None:
    s = engine.session("s")
    for t in range(30):
        s.add({"role": "user", "content": f"q{t} " + "word " * 60})
        s.add({"role": "assistant", "content": f"a{t} " + "word " * 60})
    s.add({"role": "user", "content": "a long task " + "detail " * 1500})
    ctx = s.build(budget=6000)
    assert ctx.stats.total_tokens <= 6000
    assert ctx.segment("recent")[-1].content.startswith("a long task")  # whole, first
    assert ctx.stats.sections["recent"] >= ctx.segment("recent")[-1].tokens
    # nothing was retrieved for it: the retrieval share went to the working state
    assert ctx.stats.shares["retrieval"] == 0
