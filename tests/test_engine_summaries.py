"""Model summaries of archived pages through the engine: background, never blocking a build.

A real fake OpenAI-compatible server on 127.0.0.1 answers (tests/fakellm.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest

import memci
from memci.llm import OpenAIChatClient

from .fakellm import FakeLLM, RecordedRequest


def page_responder(request: RecordedRequest) -> str:
    """Answer a page-summary prompt with a title and one numbered line per message."""
    text = request.last_user_text or ""
    count = len(re.findall(r"^\[\d+\] ", text, re.M)) or 2
    return "Title: model title\n" + "\n".join(f"{i}. MODEL LINE {i}" for i in range(1, count + 1))


def _chat(s: memci.Session, start: int, turns: int) -> None:
    for t in range(start, start + turns):
        s.add({"role": "user", "content": f"Question {t} about the harbour museum. " * 6})
        s.add({"role": "assistant", "content": f"Answer {t}: it opens at nine. " * 6})


def _contents(ctx: memci.Context) -> str:
    return next((m.content for m in ctx.messages if m.content.startswith("## Contents")), "")


def test_model_lines_replace_stand_ins_at_the_next_archive_event(tmp_path: Path) -> None:
    with FakeLLM(responder=page_responder) as fake:
        client = OpenAIChatClient("fake-model", api_key="k", base_url=fake.openai_base_url)
        with client, memci.Engine.open(tmp_path / "m.db", llm=client, workers=1) as eng:
            s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False)
            _chat(s, 0, 30)
            first = s.build(budget=3000)
            assert "MODEL LINE" not in _contents(first)  # the stand-in, at once
            assert eng.jobs is not None
            deadline = time.monotonic() + 30
            while s.stats().jobs_pending and time.monotonic() < deadline:
                time.sleep(0.05)
            assert s.stats().jobs_pending == 0 and fake.count > 0
            # no archive event yet: the contents page does not change under the cache
            assert _contents(s.build(budget=3000)) == _contents(first)
            for t in range(30, 60):
                _chat(s, t, 1)
                ctx = s.build(budget=3000)
                if ctx.stats.events:
                    break
            assert "MODEL LINE 1" in _contents(ctx)


def test_build_never_waits_on_a_slow_model(tmp_path: Path) -> None:
    with FakeLLM(responder=page_responder, delay=20.0) as fake:
        client = OpenAIChatClient("fake-model", api_key="k", base_url=fake.openai_base_url)
        with client, memci.Engine.open(tmp_path / "m.db", llm=client, workers=2) as eng:
            s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False)
            _chat(s, 0, 40)
            for t in range(40, 50):
                _chat(s, t, 1)
                s.build(budget=3000)
            # The model answers after 20 s: the ten builds came back while every summary
            # job was still waiting for it (none done), so none waited for the model.
            assert eng.jobs is not None and eng.jobs.stats()["done"] == 0
            assert s.stats().jobs_pending > 0


def test_failed_summaries_are_counted(tmp_path: Path) -> None:
    with FakeLLM() as fake:
        fake.status(500, times=1000)
        client = OpenAIChatClient("fake-model", api_key="k", base_url=fake.openai_base_url,
                                  max_retries=0)
        with client, memci.Engine.open(tmp_path / "m.db", llm=client, workers=0) as eng:
            assert eng.jobs is not None
            s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False)
            _chat(s, 0, 30)
            s.build(budget=3000)
            for _ in range(10):
                eng.jobs.run_pending()
                with eng.store.write() as db:  # skip the backoff between attempts
                    db.execute("UPDATE memci_jobs SET run_after = 0"
                               " WHERE state = 'pending'")
            stats = s.stats()
            assert stats.jobs_failed > 0 and stats.jobs_pending == 0
            # the stand-in still serves
            assert "[Page " in _contents(s.build(budget=3000))


def test_no_model_means_no_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMCI_LLM_PROVIDER", "MEMCI_LLM_BASE_URL", "MEMCI_LLM_API_KEY",
                 "MEMCI_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    with memci.Engine.open(tmp_path / "m.db") as eng:
        assert eng.jobs is None
        s = eng.session("s")
        _chat(s, 0, 30)
        assert s.build(budget=3000).stats.total_tokens <= 3000
        assert s.stats().jobs_pending == 0


def test_summaries_keep_up_with_a_slow_model_and_a_page_a_turn(tmp_path: Path) -> None:
    # A 2 s model, a page every half second: four summaries at once (the default), the
    # newest page first, keep the backlog bounded, and model lines reach requests while
    # the chat goes on (before: one at a time, oldest first, none within the run).
    with FakeLLM(responder=page_responder, delay=2.0) as fake:
        client = OpenAIChatClient("fake-model", api_key="k", base_url=fake.openai_base_url)
        with client, memci.Engine.open(tmp_path / "m.db", llm=client) as eng:
            s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False)
            _chat(s, 0, 12)
            s.build(budget=3000)
            pending: list[int] = []
            reached = None
            started = time.monotonic()
            for t in range(12, 48):
                _chat(s, t, 1)
                ctx = s.build(budget=3000)
                pending.append(s.stats().jobs_pending)
                if reached is None and "MODEL LINE" in _contents(ctx):
                    reached = time.monotonic() - started
                time.sleep(0.5)
            archived = s.stats().archived
            assert reached is not None  # a model line reached a request during the chat
            assert max(pending) <= 24 < archived, (pending, archived)
            assert fake.count > 10


def test_the_number_of_summary_workers_is_configurable() -> None:
    from memci.engine import summary_workers

    assert summary_workers({}) == 4
    assert summary_workers({"MEMCI_LLM_WORKERS": "8"}) == 8
    assert summary_workers({"MEMCI_LLM_WORKERS": "0"}) == 0
    for bad in ("-1", "many", "65"):
        with pytest.raises(memci.ConfigError, match="MEMCI_LLM_WORKERS"):
            summary_workers({"MEMCI_LLM_WORKERS": bad})


def prose_responder(request: RecordedRequest) -> str:
    """A model that ignores the requested form and answers one plain sentence (the issue)."""
    return "The user and the assistant went over MODEL-PROSE harbour museum hours."


@pytest.mark.parametrize(("responder", "marker"), [(prose_responder, "MODEL-PROSE"),
                                                   (page_responder, "MODEL LINE")])
def test_a_slow_model_reaches_requests_without_an_archive_event(
        tmp_path: Path, responder: Callable[[RecordedRequest], str], marker: str) -> None:
    # The issue: a model answering a plain sentence failed every job, and a ready summary
    # (even a numbered one) waited for the next archive event, rare at a large budget. Now
    # a 2 s model's summary reaches the contents page during a chat with no archive event
    # after the first, and the page changes at most once every summary_swap_rounds (4)
    # rounds meanwhile.
    with FakeLLM(responder=responder, delay=2.0) as fake:
        client = OpenAIChatClient("fake-model", api_key="k", base_url=fake.openai_base_url)
        with client, memci.Engine.open(tmp_path / "m.db", llm=client) as eng:
            s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False)
            _chat(s, 0, 160)
            assert s.build(budget=16000).stats.events  # the one archive event
            contents: list[str] = []
            events: list[str] = []
            started = time.monotonic()
            reached = None
            turns = 0
            while reached is None and time.monotonic() - started < 300:
                turns += 1
                s.add({"role": "user", "content": f"Short question {turns}?"})
                ctx = s.build(budget=16000)
                s.add({"role": "assistant", "content": f"Short answer {turns}."})
                events += ctx.stats.events
                contents.append(_contents(ctx))
                if marker in contents[-1]:
                    reached = time.monotonic() - started
                time.sleep(0.25)
            stats = s.stats()
    assert reached is not None, (stats, fake.count)
    assert not events and stats.jobs_failed == 0
    changes = sum(a != b for a, b in pairwise(contents))
    assert changes <= 1 + turns // 4, (changes, turns)
    # a 2 s model and a build every quarter second: seconds in practice (see
    # docs/benchmarks-summaries.md); bounded here for a busy shared CI machine
    assert reached < 240
