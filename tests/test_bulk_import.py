"""A bulk write is paged when it is written: the first build after it plans only its newest pages.

``add_many`` of several pages (an import, a history synced at once) archives, in the
writing process, what the next build would have: the first build after it (another
engine, another process) archives nothing and makes the request it would have made had
it caught up itself. A writer killed while
importing leaves a store whose every page has one place and whose next build works.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memci
from tests.sqlitetrace import statements

WINDOW = 6_000  # small, so a few dozen pages pass it


def _history(pages: int) -> list[dict[str, Any]]:
    """Pages of a question, a tool call, its output and an answer, each page its own words."""
    out: list[dict[str, Any]] = []
    for i in range(pages):
        call = f"call_{i}"
        out += [{"role": "user", "content": f"question {i}: why does module m{i} fail " * 6},
                {"role": "assistant", "content": "", "tool_calls": [{
                    "id": call, "type": "function",
                    "function": {"name": "bash", "arguments": f'{{"cmd": "make m{i}"}}'}}]},
                {"role": "tool", "tool_call_id": call,
                 "content": f"run {i}\n" + f"error: m{i}.c line {i} failed\n" * 40},
                {"role": "assistant", "content": f"answer {i}: clear cache c{i}. " * 8}]
    return out


def _first_build(db: Path) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A new engine's first build of the session: its request and what it moved."""
    with memci.Engine.open(db) as engine:
        ctx = engine.session("imp", context_window=WINDOW).build()
        return ctx.to_openai(), ctx.stats.events


def test_the_first_build_after_a_bulk_import_archives_nothing(tmp_path: Path) -> None:
    history = _history(120)
    with memci.Engine.open(tmp_path / "bulk.db") as engine:
        engine.session("imp", context_window=WINDOW).add_many(history)
    # The same history written a page at a time, never built: its first build catches up.
    with memci.Engine.open(tmp_path / "pages.db") as engine:
        session = engine.session("imp", context_window=WINDOW)
        for i in range(0, len(history), 4):
            session.add_many(history[i:i + 4])
    request, events = _first_build(tmp_path / "bulk.db")
    caught_up, caught_up_events = _first_build(tmp_path / "pages.db")
    assert any(e.startswith("archive") for e in caught_up_events)  # the check has work
    assert events == ()
    assert request == caught_up


def test_a_bulk_write_under_the_budget_but_over_the_room_is_paged_when_written(
        tmp_path: Path) -> None:
    # A build archives once its window passes the room the budget leaves it (after the
    # system prompt, memci's tools, the contents page): a window under the budget but
    # over that room was left to the first build (1,006 pages of a 100k-message chat).
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("imp", context_window=WINDOW)
        session.set_system("You are a build engineer. " * 400)  # ~half the budget
        # 14 pages whose window (the tool outputs as their views) is ~3,300 tokens: under
        # the budget (4,500), over its low watermark and over the room the prompt leaves.
        session.add_many(_history(14))
        written = [p.place for p in session.pages()]
    assert written.count("window") < len(written)  # paged when written ...
    _, events = _first_build(tmp_path / "m.db")
    assert events == ()  # ... so the first build has nothing to catch up on


def test_a_bulk_write_that_fits_the_window_is_left_as_it_is(tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("imp", context_window=WINDOW)
        session.add_many(_history(3))
        assert [p.place for p in session.pages()] == ["window"] * 3
    _, events = _first_build(tmp_path / "m.db")
    assert events == ()


def _chat(first: int, pages: int) -> list[dict[str, Any]]:
    """Pages of a question and its answer (no tool call), each page its own words."""
    out: list[dict[str, Any]] = []
    for i in range(first, first + pages):
        out += [{"role": "user", "content": f"question {i} about module m{i} " * 6},
                {"role": "assistant", "content": f"answer {i}: clear cache c{i}. " * 6}]
    return out


def test_batches_the_whole_request_still_holds_plan_nothing(tmp_path: Path) -> None:
    # Before any plan, a batch settles past the budget's low watermark. A plan whose
    # request carries the whole history finds no high watermark, so every later batch
    # the whole request still held ran a build's load and plan (a memory search) for
    # nothing: at a 128k window, every batch of an import from ~58k to ~96k tokens.
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("imp", context_window=WINDOW)
        planned: list[bool] = []
        whole: list[bool] = []
        with statements(engine) as ran:
            for batch in range(30):
                ran.clear()
                session.add_many(_chat(4 * batch, 4))
                planned.append(any("memory_items" in text for text in ran))
                whole.append(all(p.place == "window" for p in session.pages()))
    first = planned.index(True)  # the first batch past the low watermark plans ...
    assert whole[first]  # ... a request that carries the whole history
    assert not whole[-1]  # the batches went on until pages had to leave the window
    held = [planned[i] for i in range(first + 1, len(whole)) if whole[i]]
    assert held and not any(held)  # the batches the whole request held planned nothing
    _, events = _first_build(tmp_path / "m.db")
    assert events == ()  # and the batch that passed it was paged when written


def test_messages_and_pages_after_a_bulk_import_in_batches(tmp_path: Path) -> None:
    history = _history(90)
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("imp", context_window=WINDOW)
        for i in range(0, len(history), 120):
            session.add_many(history[i:i + 120])
        places = [p.place for p in session.pages()]
        assert session.count() == len(history)  # nothing lost
    assert places[-1] == "window" and "window" not in places[:40]
    assert set(places) <= {"window", "contents", "evicted"}
    request, events = _first_build(tmp_path / "m.db")
    assert events == ()
    assert request["messages"][-1]["content"].startswith("answer 89:")


def test_a_bulk_write_the_budget_cannot_page_is_stored_and_the_build_says_why(
    tmp_path: Path,
) -> None:
    # A system prompt larger than the window: no build can keep the budget.
    history = [{"role": "system", "content": "follow rule r. " * 3000}, *_history(30)]
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("imp", context_window=WINDOW)
        stored = session.add_many(history)  # stored, though it could not be paged
        assert len(stored) == len(history) == session.count()
        with pytest.raises(memci.BudgetTooSmallError):
            session.build()


_IMPORTER = """
import json, sys
import memci
history = json.loads(open(sys.argv[2]).read())
with memci.Engine.open(sys.argv[1]) as engine:
    session = engine.session("imp", context_window=int(sys.argv[3]))
    for i in range(0, len(history), 40):
        session.add_many(history[i:i + 40])
        print(i + 40, flush=True)
"""


def test_an_import_killed_midway_leaves_a_consistent_store(tmp_path: Path) -> None:
    history = _history(400)
    source = tmp_path / "history.json"
    source.write_text(json.dumps(history))
    db = tmp_path / "m.db"
    child = subprocess.Popen([sys.executable, "-c", _IMPORTER, str(db), str(source),
                              str(WINDOW)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    done = 0
    while done < 200:  # batches done, a few of them paged, then killed inside the next
        done = int(child.stdout.readline())
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    child.stdout.close()
    with memci.Engine.open(db) as engine:
        session = engine.session("imp", context_window=WINDOW)
        count = session.count()
        assert count >= done and count % 40 == 0  # whole batches, all or nothing
        assert [m.content for m in session.messages()][-1] == history[count - 1]["content"]
        places = [p.place for p in session.pages()]
        assert set(places) <= {"window", "contents", "evicted"}
        assert places[-1] == "window"
        ctx = session.build()
        assert ctx.stats.total_tokens <= ctx.stats.budget
        assert ctx.to_openai()["messages"][-1]["content"] == history[count - 1]["content"]
