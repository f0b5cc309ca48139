"""A search of a time window in SQLite reads the window, not the session's whole history.

The work is counted in SQLite's virtual machine steps (a progress handler), never timed:
a day of a session searched in a history ten times longer costs about the same.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memci.memory import get_analyzer
from memci.messages import Message
from memci.store import SearchDoc, SearchFilter, SessionRecord, SQLiteStore
from memci.store._search import Candidate

from .conftest import sqlite_steps

DAY = datetime(2026, 6, 1, tzinfo=UTC)


def _store(path: Path, old: int) -> tuple[SQLiteStore, SessionRecord]:
    """``old`` messages a year before :data:`DAY` (each naming the lantern), then a day's."""
    store = SQLiteStore(path)
    session = store.ensure_session("agent", "s", "u", {})
    start = DAY - timedelta(days=365)
    turns = [(start + timedelta(minutes=i), f"the lantern by the harbor, note {i}")
             for i in range(old)]
    turns += [(DAY + timedelta(hours=i), text) for i, text in enumerate(
        ("the lantern is lit tonight", "groceries: milk and bread",
         "a harbor lantern, brass and glass", "nothing here"))]
    stored = store.append(session, [Message("user", Message.user(text).parts, tokens=1,
                                            created_at=at) for at, text in turns])
    search = store.search(get_analyzer("bigram"))
    for page, message in enumerate(stored, 1):
        assert message.seq is not None and message.created_at is not None
        search.add(SearchDoc(session.id, message.seq, "user", page,
                             message.created_at.timestamp(), message.content, ""))
    return store, session


def _search_day(store: SQLiteStore, session: SessionRecord, day: datetime, *,
                warm: bool = True) -> tuple[list[Candidate], int]:
    """The hits of "lantern" on ``day``, and the steps the search ran (``warm``: the second
    search: what the first counted is kept)."""
    search = store.search(get_analyzer("bigram"))
    where = SearchFilter(sessions=[session.id], start=day.timestamp(),
                         end=(day + timedelta(days=1)).timestamp())
    if warm:
        search.keyword(get_analyzer("bigram").query("lantern"), k=10, where=where,
                       context_weight=0.5)
    with sqlite_steps(store) as steps:
        found = search.keyword(get_analyzer("bigram").query("lantern"), k=10, where=where,
                               context_weight=0.5)
    return found, steps[0]


_Stored = tuple[SQLiteStore, SessionRecord]
_Histories = tuple[_Stored, _Stored]


@pytest.fixture
def histories(tmp_path: Path) -> Iterator[_Histories]:
    """A history of 200 messages before :data:`DAY` and one ten times longer."""
    short, long = _store(tmp_path / "short.db", 200), _store(tmp_path / "long.db", 2_000)
    try:
        yield short, long
    finally:
        short[0].close()
        long[0].close()


def test_a_day_costs_the_same_in_a_history_ten_times_longer(histories: _Histories) -> None:
    (short, s1), (long, s2) = histories
    few, few_steps = _search_day(short, s1, DAY)
    many, many_steps = _search_day(long, s2, DAY)
    # the same hits: the day's two lantern messages
    assert sorted(c.seq for c in few) == [201, 203]
    assert sorted(c.seq for c in many) == [2_001, 2_003]
    # Ten times the history outside the day: before, every lantern of it was ranked.
    assert many_steps < few_steps * 2 + 20, (few_steps, many_steps)


def test_an_empty_day_reads_no_match(histories: _Histories) -> None:
    (short, s1), (long, s2) = histories
    _, day_steps = _search_day(short, s1, DAY)
    found, steps = _search_day(long, s2, DAY + timedelta(days=3))
    assert found == []
    # no more than a day with matches in a history a tenth as long
    assert steps <= day_steps, (steps, day_steps)


def test_the_first_search_of_a_day_counts_its_terms_in_the_day(histories: _Histories) -> None:
    (short, s1), (long, s2) = histories
    few, few_steps = _search_day(short, s1, DAY, warm=False)
    many, many_steps = _search_day(long, s2, DAY, warm=False)
    assert sorted(c.seq for c in few) == [201, 203]
    assert sorted(c.seq for c in many) == [2_001, 2_003]
    # Whether a term is rare in a day is known without counting it in the whole history.
    assert many_steps < few_steps * 2 + 20, (few_steps, many_steps)
