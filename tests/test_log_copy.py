"""Opening a session reads the copy of its index the store keeps, then only the rows after it.

Each test compares a session opened from the copy with the same session opened from its
rows (the copy made unreadable): the index, its sums and the request built must be the
same, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import gc
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

import memci
from memci.context._log import LogIndex
from memci.context._log_copy import LogCopy, decode_copy, encode_copy
from memci.store import LOG_INDEX_KEY

PAGES = 1100  # four messages a page: past the 4,096 indexed messages that make a copy


def _history(pages: int, start: int = 0) -> list[dict[str, Any]]:
    """Pages of a question, a tool call, its output (some long enough to be hidden), an answer."""
    out: list[dict[str, Any]] = []
    for i in range(start, start + pages):
        call = f"call_{i}"
        out += [{"role": "user", "content": f"question {i}: why does step {i % 7} fail?"},
                {"role": "assistant", "content": "", "tool_calls": [{
                    "id": call, "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "make"}'}}]},
                {"role": "tool", "tool_call_id": call,
                 "content": f"run {i}\n" + "error: it failed here\n" * (1 + (i % 5) * 40)},
                {"role": "assistant", "content": f"answer {i}: clear the cache."}]
    return out


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "m.db")
    else:
        from tests import pg

        yield pg.fresh_database()


def _state(session: memci.Session) -> tuple[Any, ...]:
    """What a session derived from its log: the index, its sums, the system prompt."""
    log = session._log
    system = log.system.content if log.system is not None else None
    return (log.index.seqs, log.index.roles, log.index.tokens, log.index.page_starts,
            log.index.cum, log.held, log.raw_total, log.has_tool_results, log.hides_output,
            log.last_seq, system, len(log.branches))


def _opened(location: str) -> tuple[memci.Engine, memci.Session, list[int]]:
    """A fresh engine's session, and the ``after`` of every planning-row read it made."""
    engine = memci.Engine.open(location)
    reads: list[int] = []
    store = engine.store
    read_columns = store.log_columns

    def log_columns(record: Any, *, after: int = 0) -> Any:
        reads.append(after)
        return read_columns(record, after=after)

    store.log_columns = log_columns  # type: ignore[method-assign]
    return engine, engine.session("long"), reads


def _from_rows(location: str) -> tuple[memci.Engine, memci.Session]:
    """A fresh engine's session opened from its rows: the copy is made unreadable first."""
    engine = memci.Engine.open(location)
    record = engine.store.session("default", "long")
    assert record is not None
    engine.store.context.put(record, LOG_INDEX_KEY, None)
    return engine, engine.session("long")


def _make(location: str) -> int:
    """A long session with a system prompt and a short tail after its copy; its last seq."""
    with memci.Engine.open(location) as engine:
        session = engine.session("long")
        session.set_system("You are a coding agent.")
        session.add_many(_history(PAGES))
        session.add_many(_history(2, start=PAGES))  # after the copy: read as rows
        return session._log.last_seq


def test_a_long_session_opens_from_its_copy(location: str) -> None:
    last = _make(location)
    engine, session, reads = _opened(location)
    with engine:
        # Only the tail after the copy is read as rows, never the log from its start.
        assert reads and min(reads) >= last - 8, reads
        copied = _state(session)
    engine, session = _from_rows(location)
    with engine:
        assert _state(session) == copied


def _long_containers(n: int) -> set[int]:
    """The ids of the collector's containers holding ``n`` items or more."""
    gc.collect()
    return {id(o) for o in gc.get_objects()
            if isinstance(o, list | tuple | dict | set) and len(o) >= n}


def test_an_opened_log_gives_the_collector_nothing_as_long_as_it(tmp_path: Path) -> None:
    # A list of every message's seq (or role, tokens, sums) is walked by each collection
    # while it is young: ~9 ms of a fresh process's first build at 100k messages. The
    # index's columns (and the branches' seqs) are arrays and bytes: no such list.
    db = str(tmp_path / "m.db")
    _make(db)
    for from_copy in (True, False):
        before = _long_containers(PAGES * 4)
        engine, session = _opened(db)[:2] if from_copy else _from_rows(db)
        with engine:
            index = session._log.index
            assert len(index) >= PAGES * 4
            assert _long_containers(PAGES * 4) - before == set()


def test_a_build_from_the_copy_sends_the_same_request(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _make(str(db))
    rows_db = tmp_path / "rows.db"
    shutil.copyfile(db, rows_db)
    engine, session, _ = _opened(str(db))
    with engine:
        session.add({"role": "user", "content": "where does step 3 fail?"})
        from_copy = session.build().to_openai()
    engine, session = _from_rows(str(rows_db))
    with engine:
        session.add({"role": "user", "content": "where does step 3 fail?"})
        assert session.build().to_openai() == from_copy


def test_a_copy_is_ignored_after_a_deletion(location: str) -> None:
    _make(location)
    with memci.Engine.open(location) as engine:
        session = engine.session("long")
        record = session._log.record
        before = engine.store.context.get(record, LOG_INDEX_KEY)
        session.retract(10)  # the log's epoch grows: the copy made before no longer holds
        # No copy holds the message's seq, role and tokens any more.
        after = decode_copy(engine.store.context.get(record, LOG_INDEX_KEY))
        assert after is None or 10 not in after.seqs
        engine.store.context.put(record, LOG_INDEX_KEY, before)
    engine, session, reads = _opened(location)
    with engine:
        assert 0 in reads
        assert 10 not in session._log.index.seqs
        opened = _state(session)
    engine, session = _from_rows(location)
    with engine:
        assert _state(session) == opened


def test_a_branched_log_opens_the_branch_it_follows(location: str) -> None:
    _make(location)
    with memci.Engine.open(location) as engine:
        session = engine.session("long")
        session.fork(20)
        session.add({"role": "user", "content": "ask it again"})
        session.add_many(_history(PAGES, start=PAGES + 2))  # a copy is not made of a branch
    engine, session, _ = _opened(location)
    with engine:
        assert session._log.off_branch
        opened = _state(session)
    engine, session = _from_rows(location)
    with engine:
        assert _state(session) == opened


@pytest.mark.parametrize("damage", [
    lambda v: {**v, "tokens": v["tokens"][:-8]},  # fewer tokens than seqs
    lambda v: {**v, "tokens": "not base64!"},
    lambda v: {**v, "tokens": v["tokens"][:-4]},  # not whole integers
    lambda v: {**v, "runs": [1]},
    lambda v: {**v, "runs": [1, 2]},  # fewer seqs than roles
    lambda v: {**v, "cum": v["tokens"]},  # one sum fewer than the seqs need
    lambda v: {**v, "page_starts": v["tokens"]},  # a page a message
    lambda v: {**v, "roles": "s" + v["roles"][1:]},  # a role no index holds
    lambda v: {**v, "format": 0},  # an older format
    lambda v: "text",
])
def test_a_damaged_copy_is_read_as_rows(tmp_path: Path, damage: Any) -> None:
    db = str(tmp_path / "m.db")
    _make(db)
    with memci.Engine.open(db) as engine:
        record = engine.store.session("default", "long")
        assert record is not None
        value = engine.store.context.get(record, LOG_INDEX_KEY)
        assert decode_copy(value) is not None
        engine.store.context.put(record, LOG_INDEX_KEY, damage(value))
    engine, session, reads = _opened(db)
    with engine:
        assert 0 in reads
        opened = _state(session)
    engine, session = _from_rows(db)
    with engine:
        assert _state(session) == opened


def test_a_copy_decodes_to_what_was_encoded() -> None:
    index = LogIndex()
    index.extend([2, 3, 4, 6, 7, 9, 10, 11, 12],
                 ["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "tool",
                  "assistant"], [5, 7, 300, 1, 2, 3, 70_000, 4, 5])
    copy = LogCopy(3, 12, 12, 1, 900, True, True, index.seqs, index.roles, index.tokens,
                   index.cum, index.page_starts)
    value = json.loads(json.dumps(encode_copy(copy)))
    assert decode_copy(value) == copy
    filled = LogIndex()
    filled.fill(*cast(LogCopy, decode_copy(value))[7:])
    assert (filled.seqs, filled.roles, filled.tokens, filled.cum, filled.page_starts) == (
        index.seqs, index.roles, index.tokens, index.cum, index.page_starts)
    assert filled.page_seqs(2) == (7, 12)
