"""Long-term memory in the session: search, the retrieval segment, search_memory, documents."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

import memci
from memci.context._builder import REPLY_PRIMING
from memci.context._retrieval import AROUND_TURNS, HELD_TOKENS
from tests.sqlitetrace import statements


def _fill(s: memci.Session, turns: int, start: int = 0) -> None:
    for t in range(start, start + turns):
        s.add({"role": "user", "content": f"Let us talk about topic {t}: weather and trains."})
        s.add({"role": "assistant", "content": f"Topic {t} noted; trains run on time."})


def test_session_search_finds_evicted_pages_in_english_and_chinese(
    engine: memci.Engine,
) -> None:
    s = engine.session("s", evict_unrecalled_rounds=3, retrieval=False)
    s.add({"role": "user", "content": "My cat is called Mochi and she is nine years old."})
    s.add({"role": "assistant", "content": "Mochi is a lovely name."})
    s.add({"role": "user", "content": "我住在杭州，最喜欢西湖。"})
    s.add({"role": "assistant", "content": "杭州很美。"})
    for t in range(80):
        _fill(s, 1, start=t)
        s.build(budget=1500)
    assert s.place_of_page(1) == "evicted"
    hits = s.search("what is my cat called", k=5)
    assert hits and "Mochi" in hits[0].message.content and hits[0].page == 1
    assert "keyword" in hits[0].retrievers and hits[0].score > 0
    zh = s.search("西湖", k=3)
    assert zh and "西湖" in zh[0].message.content and zh[0].page == 2
    with pytest.raises(memci.ConfigError):
        s.search("x", scope="galaxy")


def test_user_scope_searches_the_users_other_sessions(engine: memci.Engine) -> None:
    a = engine.session("a", user="u1")
    a.add({"role": "user", "content": "I prefer window seats on long flights."})
    b = engine.session("b", user="u1")
    b.add({"role": "user", "content": "Book me a flight to Osaka."})
    other = engine.session("c", user="u2")
    other.add({"role": "user", "content": "I prefer aisle seats."})
    assert not any("window" in h.message.content for h in b.search("seats", k=5))
    found = b.search("seats preference", k=5, scope="user")
    assert any("window seats" in h.message.content for h in found)
    assert not any("aisle" in h.message.content for h in found)


def test_retrieval_segment_is_last_titled_and_stable_within_a_page(
    engine: memci.Engine,
) -> None:
    s = engine.session("s", user="u1")
    s.add({"role": "user", "content": "The staging database password rotates every Friday."})
    s.add({"role": "assistant", "content": "Noted: rotation on Fridays."})
    for t in range(60):
        s.add({"role": "user", "content": f"Topic {t}: " + "trains and weather " * 30})
        s.add({"role": "assistant", "content": f"Noted topic {t}. " + "ok " * 30})
    s.add({"role": "user", "content": "When does the staging database password rotate?"})
    ctx = s.build(budget=6000)
    memory = ctx.segment("retrieval")
    assert memory == ctx.messages[-len(memory):]
    assert all(m.role == "user" and m.content.startswith("## Retrieved memory") for m in memory)
    assert "Friday" in memory[0].content  # the best line stays with the question's page
    assert ctx.stats.sections["retrieval"] > 0
    assert ctx.stats.total_tokens <= 6000
    # a tool loop on the same page keeps the page's block where it was, after the question
    s.add({"role": "assistant", "content": None, "tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "cal", "arguments": "{}"}}]})
    s.add({"role": "tool", "tool_call_id": "t1", "content": "calendar: Friday 18:00"})
    again = s.build(budget=6000)
    at = [m.content for m in again.messages].index(memory[0].content)
    assert again.messages[at - 1].content.startswith("When does the staging")
    assert again.messages[at + 1].tool_calls
    payload = again.to_anthropic()["messages"]
    assert payload[-1]["role"] == "user"  # merged after the tool result, as the API wants


def test_a_time_in_the_question_counts_from_when_it_was_asked(engine: memci.Engine) -> None:
    # A replayed conversation keeps its dates: "yesterday" is the day before the question,
    # not before the wall clock.
    old = engine.session("old", user="u1")
    for day, text in (("2024-02-01", "Dinner at Golden Lotus: the best dinner, what a dinner."),
                      ("2024-03-10", "We had dinner at Osteria Lupa.")):
        old.add({"role": "user", "content": text, "created_at": f"{day}T19:00:00+00:00"})
        old.add({"role": "assistant", "content": "Lovely.",
                 "created_at": f"{day}T19:01:00+00:00"})
    asked = datetime(2024, 3, 11, 20, 0, tzinfo=UTC)
    now = engine.session("now", user="u1")
    now.add({"role": "user", "content": "Where did we have dinner yesterday?",
             "created_at": asked.isoformat()})
    block = _memory(now.build(budget=4000))
    assert "Osteria Lupa" in block
    assert "Golden Lotus" not in block or block.index("Osteria") < block.index("Golden Lotus")
    hits = now.search("where did we have dinner yesterday?", k=2, scope="user", now=asked)
    assert "Osteria Lupa" in hits[0].message.content and "time" in hits[0].retrievers
    by_wall_clock = now.search("where did we have dinner yesterday?", k=2, scope="user")
    assert "Golden Lotus" in by_wall_clock[0].message.content  # no message from yesterday
    with pytest.raises(memci.ConfigError):
        now.search("dinner", now="yesterday")  # type: ignore[arg-type]


def test_search_memory_tool(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "Remember that the invoice total was 53.97 EUR.",
           "created_at": "2026-11-01T10:00:00Z"})
    s.add({"role": "assistant", "content": "Noted."})
    _fill(s, 5)
    # the whole chat fits the window: not offered to the model, yet it can be called
    assert "search_memory" not in {t["function"]["name"] for t in s.tools()}
    assert "search_memory" in {t["function"]["name"] for t in s.tools(every=True)}
    answer = s.call_tool("search_memory", {"query": "invoice total", "k": 3})
    assert "53.97" in answer and "page 1" in answer
    none = s.call_tool("search_memory", {"query": "invoice total", "since": "2026-11-05"})
    assert "53.97" not in none
    assert s.call_tool("search_memory", {"query": ""}).startswith("error:")
    assert s.call_tool("search_memory", {"query": "x", "since": "soon"}).startswith("error:")


def test_index_path_and_cli_index(engine: memci.Engine, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Deploy\n\nRun ops/deploy.sh with --canary first.\n")
    (docs / "tool.py").write_text('def rotate(key: str) -> str:\n    """Rotate a key."""\n'
                                  "    return key[::-1]\n")
    s = engine.session("s")
    report = s.index_path(docs)
    assert report.files_indexed == 2
    assert s.index_path(docs).files_unchanged == 2  # incremental
    from memci.memory import DocIndex

    hits = DocIndex(engine.store).search_docs("rotate a key", k=3)
    assert hits and hits[0].path.endswith("tool.py")


def test_archived_pages_become_memory_and_user_facts_pass_the_judge(
    engine: memci.Engine,
) -> None:
    s = engine.session("a", user="u7", retrieval=False)
    s.add({"role": "user", "content": "I prefer window seats and I am vegetarian."})
    s.add({"role": "assistant", "content": "Noted."})
    for t in range(40):
        s.add({"role": "user", "content": f"Topic {t}: " + "trains and weather " * 20})
        s.add({"role": "assistant", "content": "ok " * 20})
        s.build(budget=2000)
    assert s.place_of_page(1) != "window"
    other = engine.session("b", user="u7")
    found = other.search("window seats", k=5, scope="user")
    items = [h.item for h in found if h.item is not None]
    prefs = [i for i in items if i.kind == "preference"]
    assert prefs and "window seats" in prefs[0].text and prefs[0].scope == "user"
    assert "a#p1" in (prefs[0].source or "") and "prefer" in (prefs[0].source or "")  # why
    assert any(i.kind == "episodic" and i.page == 1 for i in items)


def test_a_page_archived_with_no_room_on_the_contents_page_still_becomes_memory(
    engine: memci.Engine,
) -> None:
    # Archived pages the contents page has no room to list go to the context pool; their
    # messages were loaded all the same, and the user's facts in them must reach long-term
    # memory like those of a listed page (they were dropped).
    s = engine.session("a", user="u8", retrieval=False, contents_max_tokens=60)
    s.add({"role": "user", "content": "I prefer aisle seats and I am allergic to peanuts."})
    s.add({"role": "assistant", "content": "Noted."})
    place = "window"
    for t in range(40):
        s.add({"role": "user", "content": f"Topic {t}: " + "boats and tides " * 20})
        s.add({"role": "assistant", "content": "ok " * 20})
        s.build(budget=2000)
        place = s.place_of_page(1)
        if place != "window":
            break
    assert place == "evicted"  # archived, not listed: no room on the contents page
    found = engine.session("b", user="u8").search("aisle seats", k=5, scope="user")
    prefs = [h.item for h in found if h.item is not None and h.item.kind == "preference"]
    assert prefs and "aisle seats" in prefs[0].text and "a#p1" in (prefs[0].source or "")


def test_query_about_the_docs_brings_document_chunks(engine: memci.Engine, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deploy.md").write_text("# Deploy\n\nRun ops/deploy.sh with --canary first, "
                                    "then watch the error rate for ten minutes.\n")
    s = engine.session("s")
    s.index_path(docs)
    s.add({"role": "user", "content": "According to the docs, how do I deploy with canary?"})
    last = s.build().messages[-1]
    assert last.content.startswith("## Retrieved memory")
    assert "[document · " in last.content and "deploy.sh" in last.content


def test_what_the_window_holds_is_not_searched_and_what_a_build_archives_is(
    engine: memci.Engine,
) -> None:
    # Memory is gathered without what the window holds (a memory line would only repeat
    # it); a page the same build then archives is gathered again, so its facts are in the
    # request in one place or the other.
    s = engine.session("s")
    s.add({"role": "user", "content": "My locker code at the climbing gym is 7391."})
    s.add({"role": "assistant", "content": "Noted, locker code 7391."})
    question = {"role": "user", "content": "What is my locker code at the gym?"}
    short = engine.session("short")
    short.add({"role": "user", "content": "My locker code at the climbing gym is 7391."})
    short.add({"role": "assistant", "content": "Noted, locker code 7391."})
    short.add(question)
    ctx = short.build(budget=2000)  # everything fits: the window holds the fact
    window = [m for m in ctx.messages if "7391" in m.content]
    assert len(window) == 2 and not any(m.content.startswith("## ") for m in window)
    for t in range(20):  # pages the question's build must archive, none built before
        s.add({"role": "user", "content": f"Topic {t}: " + "trains and weather " * 40})
        s.add({"role": "assistant", "content": f"Topic {t} noted."})
    s.add(question)
    ctx = s.build(budget=2000)
    assert s.place_of_page(1) != "window"  # archived by this very build
    memory = [m.content for m in ctx.messages if "Retrieved memory" in m.content]
    assert memory and "7391" in memory[0]


def test_memory_comes_from_outside_the_window_when_the_window_matches_better(
    engine: memci.Engine,
) -> None:
    # The window's own messages are left out inside the search, not after it: when more
    # of them match the question better than the search's depth, what left the window is
    # still found.
    s = engine.session("s")
    s.add({"role": "user", "content": "Mom says the ferry to the island leaves at noon on "
                                      "Sundays; remember it for the trip."})
    s.add({"role": "assistant", "content": "Noted."})
    for t in range(60):
        s.add({"role": "user", "content": f"Topic {t}: " + "trains and weather " * 30})
        s.add({"role": "assistant", "content": f"Topic {t} noted."})
        s.build(budget=8000)
    for t in range(150):
        s.add({"role": "user", "content": f"ferry ferry ferry {t}"})
        s.add({"role": "assistant", "content": "ok"})
        s.build(budget=8000)
    s.add({"role": "user", "content": "When does the ferry leave?"})
    ctx = s.build(budget=8000)
    assert s.place_of_page(1) != "window"
    window = [m.content for m in ctx.messages if m.content.startswith("ferry ferry ferry")]
    assert len(window) > 120  # more than the search's depth match better, in the window
    memory = [m.content for m in ctx.messages if "Retrieved memory" in m.content]
    assert memory and "noon on Sundays" in memory[0]


def test_a_build_that_gathers_again_is_repeated_by_the_next(engine: memci.Engine) -> None:
    # The first build after a long import archives most of it and gathers memory again
    # (what it archived was in the window when it first gathered); the next build, with
    # nothing new, must plan the page as that one did and send the same request.
    s = engine.session("chat", user="u1", context_window=2000)
    s.add({"role": "user", "content": "我们明天去杭州旅游"})
    s.add({"role": "assistant", "content": "好的，西湖很美。"})
    for i in range(30):
        s.add({"role": "user", "content": f"question {i} about the red kayak " * 5})
        s.add({"role": "assistant", "content": f"answer {i}: paddle harder " * 5})
    first = s.build()
    assert any(e.startswith("archive") for e in first.stats.events)
    again = s.build()
    assert [m.content for m in again.messages] == [m.content for m in first.messages]
    assert again.stats.prefix_tokens == again.stats.total_tokens - REPLY_PRIMING


def test_memory_lines_never_show_the_same_text_twice(engine: memci.Engine) -> None:
    # Messages whose lines would show the same text (their first 600 characters, spaces
    # and case aside) are listed once: the rest of a text is never in its line.
    s = engine.session("s")
    report = "Deploy log for the canary release: " + "step ok; " * 80
    s.add({"role": "user", "content": report + "tail one"})
    s.add({"role": "assistant", "content": "Noted."})
    s.add({"role": "user", "content": report.upper().replace(" ", "   ") + "tail two"})
    s.add({"role": "assistant", "content": "Noted."})
    s.add({"role": "user", "content": "The canary release owner is Priya."})
    s.add({"role": "assistant", "content": "Noted."})
    for t in range(30):  # the window moves past them
        s.add({"role": "user", "content": f"Topic {t}: " + "trains and weather " * 40})
        s.add({"role": "assistant", "content": f"Topic {t} noted."})
    s.add({"role": "user", "content": "What did the canary release deploy log say?"})
    ctx = s.build(budget=4000)
    memory = _memory(ctx)  # the page's block and the rest: no line repeats across them
    assert "Priya" in memory
    assert memory.casefold().count("deploy log for the canary release") == 1


def test_a_memory_line_shows_the_squeezed_head_of_its_text() -> None:
    # A line's text is " ".join(text.split())[:limit], read from the text's head only.
    import random

    from memci.context._retrieval import _squeezed

    rng = random.Random(3)
    pieces = ["a", "bb", " ", "\n", "\t  ", "word", "长文本", "  " * 40]
    for _ in range(5_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 500)))
        for limit in (1, 7, 60, 600):
            assert _squeezed(text, limit) == " ".join(text.split())[:limit]


def _kayak_history(pages: int) -> list[dict[str, str]]:
    """A long chat in which every page names one cove the red kayak went to."""
    history: list[dict[str, str]] = []
    for i in range(pages):
        history.append({"role": "user", "content": f"Day {i}: we paddled the red kayak to "
                                                   f"cove{i}. " + "Weather and trains. " * 12})
        history.append({"role": "assistant", "content": "Noted. " + "Trains run late. " * 12})
    return history


def _memory(ctx: memci.Context) -> str:
    """The memory a question's request closes with: its page's block, then the rest."""
    return "\n".join(m.content for m in ctx.segment("retrieval"))


def _coves(ctx: memci.Context) -> set[str]:
    return {w.strip(".") for m in ctx.messages for w in m.content.split()
            if w.startswith("cove")}


@pytest.mark.parametrize("budget", [2000, 4000, 8000])
def test_an_imported_history_holds_what_one_built_turn_by_turn_holds(
    engine: memci.Engine, budget: int,
) -> None:
    # The first build after an import archives most of it; its page's memory used to be
    # sized by the gather before that archive, which could search nothing (all of it was
    # in the window): the page was planned without memory and its requests sent ~60% of
    # the budget, the facts archived left out.
    history = _kayak_history(60)
    question = {"role": "user", "content": "Where did we paddle the red kayak?"}
    live = engine.session("live")
    for message in history:
        if message["role"] == "assistant":
            live.build(budget=budget)
        live.add(message)
    live.add(question)
    turn_by_turn = live.build(budget=budget)
    imported = engine.session("imported")
    imported.add_many(history)
    imported.add(question)
    at_once = imported.build(budget=budget)
    assert at_once.stats.total_tokens >= 0.9 * budget  # the history is far larger
    assert len(_coves(at_once)) >= len(_coves(turn_by_turn)) > 0
    again = imported.build(budget=budget)  # the page's next request is planned alike
    assert [m.content for m in again.messages[:-1]] == [m.content for m in at_once.messages[:-1]]
    assert again.messages[-1].content.startswith(at_once.messages[-1].content)


@pytest.mark.parametrize("budget", [2000, 4000, 8000])
def test_memory_takes_the_room_its_matches_need_wherever_the_window_sits(
    engine: memci.Engine, budget: int,
) -> None:
    # Memory used to hold room for three lines and take what the window left: a chat
    # built turn by turn keeps its window near the high watermark, so a question whose
    # answers were all archived got a fifth to a half of memory's share, and fewer
    # lines than the same chat imported at once (its window archived down to the low
    # watermark). Its matches now take the room they need, up to memory's share.
    live = engine.session("live")
    for message in _kayak_history(80):
        if message["role"] == "assistant":
            live.build(budget=budget)
        live.add(message)
    live.add({"role": "user", "content": "Where did we paddle the red kayak?"})
    ctx = live.build(budget=budget)
    memory = _memory(ctx)
    assert memory.startswith("## Retrieved memory") and memory.count("\n- [") >= 10
    held = min(ctx.stats.shares["retrieval"], HELD_TOKENS)
    assert ctx.stats.sections["retrieval"] >= 0.9 * held
    assert ctx.stats.total_tokens <= budget


def test_a_question_with_few_matches_leaves_the_room_to_the_window(
    engine: memci.Engine,
) -> None:
    # Memory takes what its matches need: two matches (and the message after them, which
    # holds them as its context), however much room the window leaves; the turns around
    # them fill only what is left after the window is planned, and nothing else does.
    s = engine.session("s")
    s.add({"role": "user", "content": "The harbour ferry leaves at noon on Sundays."})
    s.add({"role": "assistant", "content": "Noted: the harbour ferry, Sundays at noon."})
    for message in _kayak_history(80):
        if message["role"] == "assistant":
            s.build(budget=4000)
        s.add(message)
    s.add({"role": "user", "content": "When does the harbour ferry leave?"})
    ctx = s.build(budget=4000)
    memory = _memory(ctx)
    lines = [line for line in memory.splitlines() if line.startswith("- [")]
    matches = [line for line in lines if "harbour ferry" in line]
    assert 0 < len(matches) <= 3 and "noon" in lines[0]
    assert lines[:len(matches)] == matches  # the turns around them come after them
    seqs = [int(line.split("/", 1)[1].split("]", 1)[0]) for line in lines]
    # messages 1 and 2 matched, and 3, which holds them as its context
    assert all(seq <= 3 + AROUND_TURNS for seq in seqs)
    assert ctx.stats.sections["retrieval"] < 0.2 * 4000


def _dated_days(days: int) -> list[dict[str, str]]:
    """A chat held every other day, each day's talk a page about its own trip."""
    history: list[dict[str, str]] = []
    for i in range(days):
        day = f"{date(2024, 1, 1) + timedelta(days=2 * i)}"
        history.append({"role": "user", "content": f"Day {i}: we paddled the red kayak to "
                        f"cove{i}. " + "Weather and trains. " * 12,
                        "created_at": f"{day}T19:00:00+00:00"})
        history.append({"role": "assistant", "content": "Noted. " + "Trains run late. " * 12,
                        "created_at": f"{day}T19:01:00+00:00"})
    return history


def _fed(s: memci.Session, history: list[dict[str, str]], feed: str) -> memci.Session:
    """``s`` with ``history`` imported, or added turn by turn with a build (4k) before each
    answer."""
    if feed == "imported":
        s.add_many(history)
    else:
        for message in history:
            if message["role"] == "assistant":
                s.build(budget=4000)
            s.add(message)
    return s


@pytest.mark.parametrize("feed", ["turn by turn", "imported"])
def test_the_room_few_matches_leave_holds_the_turns_around_them(
    engine: memci.Engine, feed: str,
) -> None:
    # A question with few matches, after pages whose matches held room for many, left a
    # third of the request unused (the window had archived down to its low watermark, and
    # memory had nothing more to show). The turns around its matches fill that room: here
    # the answer is the turn before the match ("mark the fourteenth ..." names no word of
    # the question). Turns of another day's talk are not around it, nor is unrelated text.
    history = [*_dated_days(12),
               {"role": "user", "content": "Mark the fourteenth of August in red, please.",
                "created_at": "2024-01-24T09:00:00+00:00"},
               {"role": "assistant", "content": "Done: your daughter's birthday is marked.",
                "created_at": "2024-01-24T09:01:00+00:00"},
               {"role": "user", "content": "And buy candles on the way home.",
                "created_at": "2024-01-24T09:02:00+00:00"},
               {"role": "assistant", "content": "Candles are on the list.",
                "created_at": "2024-01-24T09:03:00+00:00"},
               *_dated_days(40)[12:]]
    s = _fed(engine.session("s"), history, feed)
    s.add({"role": "user", "content": "When is my daughter's birthday?",
           "created_at": "2024-06-01T10:00:00+00:00"})
    ctx = s.build(budget=4000)
    memory = _memory(ctx)
    sent = "\n".join(m.content for m in ctx.messages)
    assert "Done: your daughter's birthday is marked." in memory
    assert "Mark the fourteenth of August in red, please." in memory  # the turn before
    assert "Candles are on the list." in memory  # two turns after, the same talk
    assert "cove11." not in sent  # the day before: another talk, left out
    assert memory.index("birthday is marked") < memory.index("fourteenth of August")
    assert ctx.stats.total_tokens <= 4000


@pytest.mark.parametrize("feed", ["turn by turn", "imported"])
def test_many_short_matches_leave_their_tokens_to_the_turns_around_them(
    engine: memci.Engine, feed: str,
) -> None:
    # Forty short matches are as many as a page gathers at 4k, but their lines take half
    # of memory's share: the turns around them fill the rest (bounded by the matches'
    # count, none were read). The answer is the turn before the best match.
    history: list[dict[str, str]] = [
        {"role": "user", "content": "Mark the fourteenth of August in red, please.",
         "created_at": "2023-12-01T09:00:00+00:00"},
        {"role": "assistant", "content": "Done: your kayak trip is marked.",
         "created_at": "2023-12-01T09:01:00+00:00"}]
    for i in range(60):
        day = f"{date(2024, 1, 1) + timedelta(days=i)}"
        history += [{"role": "user", "content": f"Kayak {i}.",
                     "created_at": f"{day}T19:00:00+00:00"},
                    {"role": "assistant", "content": "Fine.",
                     "created_at": f"{day}T19:01:00+00:00"}]
    history += [{**m, "content": m["content"].replace("we paddled the red kayak to", "at")}
                for m in _dated_days(140)[120:]]
    s = _fed(engine.session("s"), history, feed)
    s.add({"role": "user", "content": "When is my kayak trip?",
           "created_at": "2024-09-01T10:00:00+00:00"})
    ctx = s.build(budget=4000)
    memory = _memory(ctx)
    assert "Done: your kayak trip is marked." in memory
    assert "Mark the fourteenth of August in red, please." in memory  # the turn before
    assert ctx.stats.total_tokens <= 4000


def test_matches_that_fill_their_tokens_leave_no_room_for_turns_around_them(
    engine: memci.Engine,
) -> None:
    # The turns around the matches only fill what the matches' lines leave of
    # AROUND_TOKENS: a question matching every day's talk (80 long matches at 8k) reads
    # and shows none of them (reading them made a steady build a third slower). It reads
    # the log as a question matching nothing does.
    reads: dict[str, list[str]] = {}
    for name, question in (("kayak", "Where did we paddle the red kayak?"),
                           ("none", "Where did we leave the blue canoe?")):
        s = engine.session(name)
        s.add_many(_dated_days(300))
        s.add({"role": "user", "content": question,
               "created_at": "2024-09-01T10:00:00+00:00"})
        with statements(engine) as ran:
            ctx = s.build(budget=8000)
        reads[name] = [re.sub(r"session_id = \d+", "", text) for text in ran
                       if re.search(r"FROM messages WHERE session_id = \d+ AND seq >", text)]
        if name == "kayak":
            lines = [line for line in _memory(ctx).splitlines() if line.startswith("- [")]
            assert len(lines) >= 5
            assert all("kayak" in line for line in lines), lines
    assert reads["kayak"] == reads["none"]


def _garden_and_hiking(s: memci.Session) -> memci.Session:
    """Many pages on the garden and on hikes, then the talk of one hike (imported)."""
    history: list[dict[str, str]] = []
    for t in range(40):
        told = (f"Year {t}: I planted tomatoes in the garden in spring." if t % 2 else
                f"Day {t}: we went hiking near a lake, my sister came.")
        history.append({"role": "user", "content": told + " Weather and trains." * 10})
        history.append({"role": "assistant", "content": "Noted. " + "Trains run late. " * 10})
    history.append({"role": "user", "content": "My sister and I went hiking by the lake in "
                                               "the mountains last week, it was wonderful."})
    history.append({"role": "assistant", "content": "Hiking in the mountains by the lake with "
                                                    "your sister sounds wonderful!"})
    s.add_many(history)
    s.build(budget=4000)
    return s


def test_memory_closing_a_request_follows_how_much_its_turn_asks_of_it(
    engine: memci.Engine,
) -> None:
    # A remark that asks in passing about what the talk just held ("the lake, your sister,
    # the mountains... was it cold?") is answered by that talk: memory found for its words
    # (any old page about a lake or a sister) earns few tokens, and the next request drops
    # them. A question gets all the room the window leaves.
    chat = _garden_and_hiking(engine.session("chat", user="u1"))
    chat.add({"role": "user", "content": "Wow, the lake, the mountains and your sister, "
                                         "hiking sounds wonderful! Was it cold up there?"})
    passing = chat.build(budget=4000)
    asking = _garden_and_hiking(engine.session("ask", user="u2"))
    asking.add({"role": "user", "content": "When did I plant tomatoes in the garden?"})
    question = asking.build(budget=4000)
    assert "tomatoes" in _memory(question)
    assert question.stats.sections["retrieval"] >= 0.9 * question.stats.shares["retrieval"]
    assert passing.stats.sections["retrieval"] < 0.5 * question.stats.sections["retrieval"]


def test_a_build_that_shows_no_memory_counts_only_the_lines_its_room_could_hold(
    engine: memci.Engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An imported history whose last message is the assistant's: its first build gathers
    # memory for the page the last question opened (for the next ones) and holds room for
    # it, but shows none. Holding room counts memory lines up to that room only, not every
    # line found (each line counted is a pass of the tokenizer over up to 600 characters).
    from memci.context import _retrieval
    from memci.memory._gather import Retrieved

    earlier = engine.session("earlier", user="u", context_window=128_000)
    earlier.add_many([
        {"role": "user" if i % 2 == 0 else "assistant",
         "content": f"Note {i}: the parser cache keeps every config file it read, "
                    + "and the reload clears it before the next read of the files. " * 8}
        for i in range(160)])
    s = engine.session("now", user="u", context_window=128_000)
    s.add_many([{"role": "user", "content": "why does the parser cache keep the config?"},
                {"role": "assistant", "content": "Let me look at it."}])
    counted: set[str] = set()
    real = _retrieval.RetrievalSource._line

    def counting(self: _retrieval.RetrievalSource, item: Retrieved) -> tuple[str, int]:
        counted.add(item.text)
        return real(self, item)

    monkeypatch.setattr(_retrieval.RetrievalSource, "_line", counting)
    ctx = s.build()
    assert not _memory(ctx)  # the newest message is the assistant's: no memory is shown
    assert counted, "the build held no room for memory: the test no longer tests it"
    # ~95 tokens a line: HELD_TOKENS hold about 21 of the 80 found (all 80 were counted)
    assert len(counted) <= HELD_TOKENS // 90 + 1, len(counted)
