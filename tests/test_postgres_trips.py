"""PostgreSQL: round trips per operation, keyword search in the database, postings upgrade.

Round trips are counted on psycopg's connection (every time it waits for the server, on
the thread under test): a batch of messages goes in a few, whatever its size; a search and
a steady build in a bounded number. Keyword search ranks in the database from postings
and finds what SQLite finds; a store made before the postings gets them when opened.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

import memci
from tests import pg

WORDS = ("harbor lighthouse deploy build parser cache config painting lake museum "
         "杭州 西湖 旅游 明天 看看 博物馆 故宫 长城").split()


@pytest.fixture
def url() -> str:
    return pg.fresh_database()


class _Trips:
    """Round trips psycopg makes on one thread while counting."""

    def __init__(self) -> None:
        self.count = 0
        self.thread = threading.get_ident()

    def wrap(self, gen: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
        """``gen``, counted once if it touches the socket at all."""
        return pg.counted_trip(gen, self._trip)

    def _trip(self) -> None:
        self.count += 1


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``with trips() as t``: ``t.count`` is the round trips of the block's thread."""
    current: list[_Trips] = []
    wait = psycopg.Connection.wait

    def counted(self: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
        if current and current[0].thread == threading.get_ident():
            gen = current[0].wrap(gen)
        return wait(self, gen, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "wait", counted)

    @contextmanager
    def counting() -> Iterator[_Trips]:
        current.append(_Trips())
        try:
            yield current[0]
        finally:
            current.clear()

    return counting


def _text(i: int) -> str:
    """A message of a few words, different for every ``i`` (some words common, some rare)."""
    picked = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(1 + i % 5)]
    return f"message {i}: " + " ".join(picked) + (" zeppelin" if i % 97 == 5 else "")


def _history(n: int, start: int = 0) -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": _text(i)}
            for i in range(start, start + n)]


def test_a_batch_of_messages_goes_in_a_few_round_trips_whatever_its_size(
    url: str, trips: Any,
) -> None:
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        session.add_many(_history(10))
        with trips() as ten:
            session.add_many(_history(10, 10))
        with trips() as hundred:
            session.add_many(_history(100, 20))
        with trips() as one:
            session.add({"role": "user", "content": "one more"})
        assert len(session.messages()) == 121
    # Before: a statement (a round trip) per message, its search entry and its terms.
    assert hundred.count <= ten.count + 4, (ten.count, hundred.count)
    assert hundred.count <= 20, hundred.count
    assert one.count <= 16, one.count


def test_a_search_and_a_steady_build_take_a_bounded_number_of_round_trips(
    url: str, trips: Any,
) -> None:
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s", context_window=128_000)
        for start in range(0, 1000, 250):
            session.add_many(_history(250, start))
        session.build(budget=4000)
        session.search("lake", k=5)  # the first one makes the memory items' tables
        with trips() as search:
            hits = session.search("zeppelin harbor", k=5)
        session.add({"role": "user", "content": "and the zeppelin?"})
        session.add({"role": "assistant", "content": "it flies over the harbor"})
        with trips() as build:
            session.build(budget=4000)
    assert hits and "zeppelin" in str(hits[0].message.content)
    # Before: 23 and 48 (a pool check before every read, a statement to start a snapshot).
    assert search.count <= 16, search.count
    assert build.count <= 36, build.count


def _tool_turns(n: int) -> list[dict[str, Any]]:
    """``n`` pages of a question, a tool call, its output and an answer."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        call = {"id": f"call_{i}", "type": "function",
                "function": {"name": "bash", "arguments": f'{{"cmd": "ls d{i}"}}'}}
        out += [{"role": "user", "content": _text(i)},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"call_{i}", "content": f"f{i}.txt\n" * 9},
                {"role": "assistant", "content": _text(i + 1)}]
    return out


def test_a_first_build_reads_its_tool_outputs_links_at_once(url: str, trips: Any) -> None:
    with memci.Engine.open(url, workers=0) as engine:
        engine.session("s", context_window=128_000).add_many(_tool_turns(80))
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s", context_window=128_000)
        with trips() as build:
            ctx = session.build()
    assert sum(1 for m in ctx.to_openai()["messages"] if m["role"] == "tool") == 80
    # Before: a round trip per tool output in the window, for the link to its call.
    assert build.count <= 40, build.count


def _searches(engine: memci.Engine, queries: list[str]) -> list[list[int | None]]:
    session = engine.session("s")
    session.add_many(_history(600))
    return [[h.message.seq for h in session.search(q, k=8)] for q in queries]


QUERIES = ["zeppelin", "harbor lighthouse", "message 42", "杭州 旅游", "西湖", "湖",
           "parser cache config", "deploy the build", "博物馆 zeppelin lake"]


def test_keyword_search_in_the_database_finds_what_sqlite_finds(
    url: str, tmp_path: Path,
) -> None:
    with memci.Engine.open(tmp_path / "s.db", workers=0) as engine:
        lite = _searches(engine, QUERIES)
    with memci.Engine.open(url, workers=0) as engine:
        post = _searches(engine, QUERIES)
    assert all(lite), lite
    assert post == lite


def test_a_store_made_before_the_postings_gets_them_when_opened(url: str) -> None:
    with memci.Engine.open(url, workers=0) as engine:
        before = _searches(engine, QUERIES)
    # What memci before the postings left: keyword tables of tsvectors, no postings.
    with psycopg.connect(url, autocommit=True) as conn:
        made = [str(r[0]) for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename LIKE '%\\_postings'").fetchall()]
        assert "memory_fts_bigram_postings" in made
        for table in made:
            conn.execute(f"DROP TABLE {table}")
    with memci.Engine.open(url, workers=0) as engine:
        session = engine.session("s")
        after = [[h.message.seq for h in session.search(q, k=8)] for q in QUERIES]
        session.add({"role": "user", "content": "a dirigible this time"})
        newest = session.search("dirigible", k=1)
    assert after == before
    assert newest and newest[0].message.content == "a dirigible this time"
