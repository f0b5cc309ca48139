"""A damaged value in a stored row is a ``StoreCorruptError`` on every path that reads it.

A value memci never writes — text that is not UTF-8, a blob or JSON that is not where
memci keeps text or JSON, a role that is none — is damage to the store, not the caller's
mistake and not an unavailable store: each read path (the log, a build, a search, the
session's row, the context's pages and state, the working state, jobs) raises
:class:`~memci.StoreCorruptError` saying what is damaged and what to do, on both backends,
and the REST server answers 503 ``store_corrupt``. An empty or foreign file where a store
should be is refused the same way, naming the file; a path with nothing there is a new
store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import memci
from memci.server import KeyStore, ServerConfig, create_app
from tests import pg

Where = Path | str


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, db_path: Path) -> Where:
    """The store of the test: a SQLite file, or an empty PostgreSQL database."""
    return db_path if request.param == "sqlite" else pg.fresh_database()


def _fill(where: Where) -> None:
    """A session with pages (one archived), its state, working state and search index."""
    with memci.Engine.open(where) as engine:
        s = engine.session("s", user="u", context_window=3_000, reserve_ratio=0.25)
        for i in range(40):
            s.add({"role": "user", "content": f"question {i} about the harbor crane"})
            s.add({"role": "assistant", "content": f"answer {i}: the crane lifts {i} tons " * 6})
            s.build()
        s.search("crane")


def _damage(where: Where, sql: str) -> None:
    """Run ``sql`` on the store behind memci's back (``?`` is the session's id)."""
    if isinstance(where, Path):
        db = sqlite3.connect(where)
        try:
            sid = db.execute("SELECT id FROM sessions WHERE name = 's'").fetchone()[0]
            assert db.execute(sql, (sid,) * sql.count("?")).rowcount > 0, sql
            db.commit()
        finally:
            db.close()
        return
    import psycopg

    with psycopg.connect(where) as conn:
        sid = conn.execute("SELECT id FROM sessions WHERE name = 's'").fetchone()
        assert sid is not None
        query = sql.replace("?", "%s")
        assert conn.execute(query, (sid[0],) * sql.count("?")).rowcount > 0, sql


def _session(engine: memci.Engine) -> memci.Session:
    return engine.session("s", user="u")


# (what is damaged, SQL that damages it, what reads it)
READS: list[tuple[str, str, Callable[[memci.Engine], Any]]] = [
    ("parts that are not JSON", "UPDATE messages SET parts = 'not json' WHERE session_id = ?"
     " AND seq = 3", lambda e: _session(e).messages()),
    ("parts that are not JSON (a build)", "UPDATE messages SET parts = '{\"a\": 1}'"
     " WHERE session_id = ? AND seq = (SELECT MAX(seq) FROM messages WHERE session_id = ?)",
     lambda e: _session(e).build()),
    ("parts that are not JSON (a search)", "UPDATE messages SET parts = '[1, 2'"
     " WHERE session_id = ? AND seq = 5", lambda e: _session(e).search("question 2")),
    ("a role that is none", "UPDATE messages SET role = 'robot' WHERE session_id = ?"
     " AND seq = 2", lambda e: _session(e).messages()),
    ("session settings", "UPDATE sessions SET settings = 'garbage' WHERE id = ?",
     lambda e: e.session("s")),
    ("a page's lines", "UPDATE pages SET lines = '{' WHERE session_id = ?"
     " AND state = 'archived'",
     lambda e: _session(e).build()),
    ("a session's saved state", "UPDATE session_state SET value = 'x{' WHERE session_id = ?",
     lambda e: _session(e).build()),
    ("a working-state item", "UPDATE workspace_items SET data = 'x' WHERE session_id = ?",
     lambda e: _session(e).build()),
]


@pytest.mark.parametrize(("what", "sql", "read"), READS, ids=[r[0] for r in READS])
def test_a_damaged_value_is_a_store_corrupt_error_on_both_backends(
    where: Where, what: str, sql: str, read: Callable[[memci.Engine], Any],
) -> None:
    _fill(where)
    _damage(where, sql)
    with memci.Engine.open(where) as engine, pytest.raises(memci.StoreCorruptError) as info:
        read(engine)
    message = str(info.value)
    assert "damaged" in message and "backup" in message, message


SQLITE_ONLY = [
    # PostgreSQL keeps text in its own encoding and types its columns: neither can happen.
    ("text that is not UTF-8", "UPDATE messages SET parts = CAST(x'5b80ff5d' AS TEXT)"
     " WHERE session_id = ? AND seq = 4"),
    ("a blob where text belongs", "UPDATE messages SET parts = x'5b5d' WHERE session_id = ?"
     " AND seq = 4"),
    ("a blob of a role", "UPDATE messages SET role = x'75736572' WHERE session_id = ?"
     " AND seq = 4"),
    ("metadata that is not UTF-8", "UPDATE messages SET metadata = CAST(x'80' AS TEXT)"
     " WHERE session_id = ? AND seq = 4"),
]


@pytest.mark.parametrize(("what", "sql"), SQLITE_ONLY, ids=[r[0] for r in SQLITE_ONLY])
def test_undecodable_text_in_sqlite_is_a_store_corrupt_error_on_every_read(
    db_path: Path, what: str, sql: str,
) -> None:
    _fill(db_path)
    _damage(db_path, sql)
    reads: list[Callable[[memci.Session], Any]] = [
        lambda s: s.messages(), lambda s: s.build(), lambda s: s.search("question 1")]
    with memci.Engine.open(db_path) as engine:
        for read in reads:
            with pytest.raises(memci.StoreCorruptError) as info:
                read(_session(engine))
            assert "damaged" in str(info.value)


def test_a_damaged_row_is_503_store_corrupt_over_rest(where: Where) -> None:
    _fill(where)
    _damage(where, "UPDATE messages SET parts = 'not json' WHERE session_id = ? AND seq = 3")
    with memci.Engine.open(where) as engine:
        key = KeyStore(engine.store).create("default")[1]
        with TestClient(create_app(engine, ServerConfig())) as client:
            client.headers["Authorization"] = f"Bearer {key}"
            answer = client.get("/v1/sessions/s/messages")
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "store_corrupt"


def _foreign_sqlite(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (body TEXT)")
    db.execute("INSERT INTO notes VALUES ('not memci')")
    db.commit()
    db.close()


def _empty_sqlite(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = WAL")  # a valid SQLite file with nothing in it
    db.close()


@pytest.mark.parametrize(("made", "says"), [
    (lambda p: p.touch(), "empty (0 bytes)"),
    (lambda p: p.write_text("a text file, not a database\n" * 200), "not a memci store"),
    (_foreign_sqlite, "its tables: notes"),
    (_empty_sqlite, "it has no tables"),
], ids=["0 bytes", "text", "another program's database", "an empty database"])
def test_a_file_that_is_not_a_memci_store_is_refused_and_left_as_it_was(
    tmp_path: Path, made: Callable[[Path], None], says: str,
) -> None:
    path = tmp_path / "memci.db"
    made(path)
    before = path.read_bytes()
    with pytest.raises(memci.StoreCorruptError) as info:
        memci.Engine.open(path)
    message = str(info.value)
    assert str(path) in message and says in message and "backup" in message, message
    assert path.read_bytes() == before  # nothing written into it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memci.db"]  # and nothing beside


def test_a_path_with_nothing_there_is_a_new_store(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "memci.db"
    with memci.Engine.open(path) as engine:
        engine.session("s").add({"role": "user", "content": "hello"})
    with memci.Engine.open(path) as engine:
        assert [m.content for m in engine.session("s").messages()] == ["hello"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["memci.db"]


OPENER = """
import sys, memci
path, tag = sys.argv[1], sys.argv[2]
with memci.Engine.open(path) as engine:
    engine.session(tag).add({"role": "user", "content": tag})
print("ok")
"""


def test_processes_making_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    # A new store is made beside its path and linked in place: a process opening the
    # same path meanwhile never finds an empty file (which it would now refuse).
    import os
    import subprocess
    import sys

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for attempt in range(3):
        path = tmp_path / f"race-{attempt}" / "memci.db"
        procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(path), f"p{i}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env) for i in range(4)]
        results = [p.communicate(timeout=120) for p in procs]
        assert all(out.strip() == "ok" for out, _ in results), results
        with memci.Engine.open(path) as engine:
            assert sorted(s.name for s in engine.sessions()) == ["p0", "p1", "p2", "p3"]
