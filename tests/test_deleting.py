"""Deleting: retract / pop / clear a session, delete a session, erase a user (issue 15).

Every test runs on both backends (``where``: a SQLite file, or an empty PostgreSQL
database, see tests/pg.py). The erasure tests look for marker strings that only the
erased user's data holds: in the raw bytes of the SQLite store's files (database,
write-ahead log, artifact files), and in every row of every table of the PostgreSQL
database (what PostgreSQL can promise about its files is in docs/deleting.md).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import memci
from memci.memory import Scope
from tests import pg

#: Where a test's store is: a SQLite file, or the URL of a PostgreSQL database.
Where = Path | str

MARK = "QZXMARK"  # only the erased user's text holds it
CN_MARK = "紫菱秘记"  # also in Chinese
OTHER = "KEEPMARK"  # only the other user's text holds it


def _call(cid: str, command: str = "ls") -> dict[str, Any]:
    return {"id": cid, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def _turn(s: memci.Session, i: int, mark: str, *, big: bool = False) -> None:
    """A user question, a tool call and its output (large: kept in a file), an answer."""
    chinese = CN_MARK if mark == MARK else ""
    s.add({"role": "user", "content": f"question {i} about {mark}{i} {chinese}"})
    s.add({"role": "assistant", "content": "", "tool_calls": [_call(f"c{i}", f"grep {mark}")]})
    body = (f"{mark}-output-{i} " * (9000 if big else 20)).strip()
    s.add({"role": "tool", "tool_call_id": f"c{i}", "content": body})
    s.add({"role": "assistant", "content": f"answer {i}: {mark}{i} is done"})


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, db_path: Path) -> Where:
    """The store of the test: a SQLite file, or an empty PostgreSQL database."""
    return db_path if request.param == "sqlite" else pg.fresh_database()


def _files(db: Path) -> list[Path]:
    folder = db.parent
    return [p for p in folder.rglob("*") if p.is_file()]


def _text(value: Any) -> str:
    if isinstance(value, bytes | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def _rows(where: Where, table: str) -> list[tuple[Any, ...]]:
    """Every row of ``table``, as stored."""
    if isinstance(where, Path):
        db = sqlite3.connect(where)
        try:
            return db.execute(f"SELECT * FROM {table}").fetchall()
        finally:
            db.close()
    import psycopg

    with psycopg.connect(where) as conn:
        return conn.execute(f"SELECT * FROM {table}").fetchall()


def _holding(where: Where, marker: str) -> list[str]:
    """What holds ``marker``: files (SQLite: their raw bytes), or tables (PostgreSQL).

    A PostgreSQL table holds it when any value of any row does, in any case (keyword
    rows keep terms as the analyzer cut them, in lower case); binary values as UTF-8.
    """
    if isinstance(where, Path):
        needle = marker.encode("utf-8")
        return sorted(str(p.relative_to(where.parent)) for p in _files(where)
                      if needle in p.read_bytes())
    import psycopg

    with psycopg.connect(where) as conn:
        tables = [str(r[0]) for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
    found = marker.lower()
    return sorted(t for t in tables if any(found in _text(v).lower()
                                           for row in _rows(where, t) for v in row))


def _fill(engine: memci.Engine, name: str, user: str, mark: str) -> memci.Session:
    s = engine.session(name, user=user, context_window=2_000, reserve_ratio=0.25)
    s.set_system(f"You help {user}.")
    for i in range(12):
        _turn(s, i, mark, big=i == 3)
        s.build()  # archives pages: contents entries, episodes, pool, notes
    state = s.work_state()
    state.pin_add("fact", f"pin {mark}", f"pinned {mark} summary", source="chat:2")
    state.notebook_add(f"note about {mark}")
    engine.memory.remember(Scope.user_scope(user), f"{user} prefers {mark} tea", "preference")
    s.call_tool("search_memory", {"query": f"{mark}3"})
    return s


# -- erase_user --------------------------------------------------------------------------


def test_erase_user_leaves_no_byte_of_the_user_and_keeps_the_others(where: Where) -> None:
    engine = memci.Engine.open(where)
    _fill(engine, "a1", "alice", MARK)
    _fill(engine, "a2", "alice", MARK)
    bob = _fill(engine, "b1", "bob", OTHER)
    # A tool output alice and bob both got: bob keeps it.
    for s in (engine.session("a1"), bob):
        s.add({"role": "user", "content": "shared?"})
        s.add({"role": "assistant", "content": "", "tool_calls": [_call("shared")]})
        s.add({"role": "tool", "tool_call_id": "shared", "content": "SHAREDOUT " * 10_000})
    bob_messages = [(m.seq, m.content) for m in bob.messages()]
    bob_pages = bob.pages()
    assert _holding(where, MARK) and _holding(where, CN_MARK)
    if isinstance(where, str):
        # The scan sees every kind of table the user's text is in, derived ones included.
        held = _holding(where, MARK)
        assert {"messages", "pages", "session_state", "workspace_items", "workspace_events",
                "workspace_blobs", "workspace_artifacts", "artifact_contents",
                "memory_items"} <= set(held)
        assert any(t.startswith("memory_fts_") for t in held)
        assert any(t.startswith("memory_items_fts_") for t in held)

    erasure = engine.erase_user("alice", actor="test")

    assert erasure.action == "erase_user" and erasure.counts["sessions"] == 2
    assert erasure.counts["messages"] > 90 and erasure.counts["items"] >= 1
    # Not one byte of alice's text in the database, its WAL or the artifact files ...
    assert _holding(where, MARK) == []
    assert _holding(where, CN_MARK) == []
    # ... nor her id: the audit log keeps its SHA-256.
    assert _holding(where, "alice") == []
    assert {r.name for r in engine.sessions()} == {"b1"}
    # Bob is untouched: his messages, pages, search, memory and the shared output.
    assert [(m.seq, m.content) for m in bob.messages()] == bob_messages
    assert bob.pages() == bob_pages
    assert _holding(where, OTHER) and _holding(where, "SHAREDOUT")
    assert any(h.message.seq for h in bob.search(f"{OTHER}5"))
    assert bob.build().stats.total_tokens > 0
    shared = engine.workspace.artifacts.for_call(bob.record, "shared")
    assert shared is not None
    assert "SHAREDOUT" in bob.call_tool("artifact_get", {"id": shared.id, "length": 50})
    # Alice's search finds nothing of her, in a new session or over the tenant.
    fresh = engine.session("a3", user="alice")
    assert fresh.search(MARK, scope="user") == []
    assert all(MARK not in h.message.content for h in bob.search(MARK, scope="tenant"))
    engine.close()
    assert _holding(where, MARK) == []


def test_erase_user_is_recorded_without_content(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        _fill(engine, "a1", "alice", MARK)
        engine.erase_user("alice", actor="ops@corp")
        (logged,) = [e for e in engine.erasures() if e.action == "erase_user"]
        assert logged.actor == "ops@corp" and logged.tenant == "default"
        assert logged.user is not None and len(logged.user) == 64
    text = json.dumps([[_text(v) for v in row] for row in _rows(where, "memci_erasures")],
                      ensure_ascii=False)
    assert MARK not in text and "alice" not in text and "question" not in text


def test_erase_user_of_another_tenant_is_untouched(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        s = engine.session("x", user="alice", tenant="t2")
        s.add({"role": "user", "content": f"t2 {OTHER}"})
        engine.erase_user("alice", tenant="default")
        assert [m.content for m in engine.session("x", tenant="t2").messages()] == [
            f"t2 {OTHER}"]


def test_a_session_never_changes_hands_so_erasing_its_owner_reaches_it(where: Where) -> None:
    with memci.Engine.open(where) as engine, memci.Engine.open(where) as elsewhere:
        s = engine.session("chat", user="alice")
        s.add({"role": "user", "content": f"alice writes {MARK} {CN_MARK}"})
        # Written or read as bob, by this engine or another one: refused, nothing changed.
        for asking in (engine, elsewhere):
            with pytest.raises(memci.OwnerConflictError, match="another user") as refused:
                asking.session("chat", user="bob")
            assert "alice" not in str(refused.value)  # bob is not told whose it is
        assert engine.session("chat").user == "alice"
        assert [r.user for r in engine.sessions()] == ["alice"]
        # A session made without a user takes the first one given, and keeps it.
        loose = engine.session("loose")
        loose.add({"role": "user", "content": f"carol writes {OTHER}"})
        assert engine.session("loose", user="carol").user == "carol"
        with pytest.raises(memci.OwnerConflictError):
            engine.session("loose", user="dave")
        erasure = engine.erase_user("alice")
        assert erasure.counts["sessions"] == 1 and erasure.counts["messages"] == 1
    # No table (PostgreSQL) and no byte of the files (SQLite) holds her text or her id.
    assert _holding(where, MARK) == [] and _holding(where, CN_MARK) == []
    assert _holding(where, "alice") == []
    assert _holding(where, OTHER)


def _scrub_marks(where: Where) -> object:
    """What changes when the store is scrubbed: the database file's bytes (a checkpoint or
    a rewrite changes them), or how often PostgreSQL vacuumed its tables."""
    if isinstance(where, Path):
        return hashlib.sha256(where.read_bytes()).hexdigest()
    import psycopg

    with psycopg.connect(where) as conn:
        row = conn.execute("SELECT sum(vacuum_count) FROM pg_stat_user_tables").fetchone()
    return row[0] if row else None


def test_erasing_a_user_who_owns_nothing_scrubs_nothing(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        _fill(engine, "b1", "bob", OTHER)
        engine.scrub()
        before = _scrub_marks(where)
        erasures = [engine.erase_user("nobody") for _ in range(3)]
        assert _scrub_marks(where) == before
        # Recorded, with nothing counted and nothing to scrub.
        assert all(e.counts == {} and e.scrubbed == e.at for e in erasures)
        assert engine.erasures()[-3:] == erasures


def test_an_erasure_is_scrub_pending_until_a_scrub_covers_it(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        s = engine.session("s", user="alice")
        for i in range(3):
            s.add({"role": "user", "content": f"q{i} {MARK}"})
        s.retract(2)  # retract, pop and clear do not scrub
        (retract,) = engine.erasures()
        assert retract.scrubbed is None
        assert engine.scrub() is True
        (retract,) = engine.erasures()
        assert retract.scrubbed is not None and retract.scrubbed >= retract.at
        erasure = engine.delete_session("s")  # scrubs, and says so
        assert erasure.scrubbed is not None
        assert engine.erasures()[-1] == erasure
        kept = engine.session("kept", user="bob")
        kept.add({"role": "user", "content": OTHER})
        assert engine.delete_session("kept", scrub=False).scrubbed is None
        assert [e.scrubbed is None for e in engine.erasures()] == [False, False, True]


def test_another_tenants_adds_go_on_while_a_large_user_is_erased(db_path: Path) -> None:
    """SQLite: one writer at a time, so an erasure must not hold the store for long.

    (PostgreSQL's deletions lock only the erased sessions' rows, and VACUUM blocks no
    writer.) The bound is generous: no add waits a quarter of the erasure.
    """
    words = [f"w{i}" for i in range(4000)]
    with memci.Engine.open(db_path, workers=0) as engine:
        big = engine.session("big", user="alice")
        for start in range(0, 2000, 200):
            big.add_many([{"role": "user" if i % 2 == 0 else "assistant",
                           "content": f"{MARK} " + " ".join(words[(i * 37 + k * 11) % 4000]
                                                         for k in range(40))}
                          for i in range(start, start + 200)])
        waits: list[tuple[float, float]] = []
        stop = threading.Event()

        def add_all_along() -> None:
            while not stop.is_set():
                began = time.monotonic()
                # As a server's request does: the session asked of the engine each time.
                other = engine.session("other", user="bob", tenant="t2")
                other.add({"role": "user", "content": "still here"})
                waits.append((began, time.monotonic()))

        adder = threading.Thread(target=add_all_along)
        adder.start()
        try:
            time.sleep(0.2)
            began = time.monotonic()
            erasure = engine.erase_user("alice")
            ended = time.monotonic()
            time.sleep(0.2)
        finally:
            stop.set()
            adder.join(timeout=120)
        during = [done - start for start, done in waits if done >= began and start <= ended]
        assert len(during) >= 3
        assert max(during) < (ended - began) / 4
        assert erasure.counts["messages"] == 2000 and erasure.scrubbed is not None
    assert _holding(db_path, MARK) == []


# -- delete_session ----------------------------------------------------------------------


def test_delete_session_frees_the_name_and_stops_old_handles(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        s = _fill(engine, "chat", "alice", MARK)
        kept = _fill(engine, "other", "alice", OTHER)
        erasure = engine.delete_session("chat")
        assert erasure.counts["messages"] == 49 and erasure.counts["sessions"] == 1
        assert _holding(where, f"{MARK}7") == []
        with pytest.raises(memci.UnknownSessionError):
            s.add({"role": "user", "content": "late"})
        with pytest.raises(memci.UnknownSessionError):
            engine.delete_session("chat")
        again = engine.session("chat", user="alice")
        assert again.count() == 0 and again.messages() == []
        assert kept.count() == 49
        # The other session's cached retrieval quoted the deleted one: it is gathered again.
        kept.add({"role": "user", "content": f"what about {MARK}5?"})
        assert MARK + "5-output" not in json.dumps(kept.build().to_openai())


# -- retract and pop ---------------------------------------------------------------------


def test_pop_removes_a_cancelled_turn_and_seqs_go_on(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        s = engine.session("s")
        s.add({"role": "user", "content": "first"})
        s.add({"role": "assistant", "content": "reply"})
        s.add({"role": "user", "content": f"cancelled {MARK}"})
        popped = s.pop()
        assert popped.content == f"cancelled {MARK}" and popped.seq == 3
        assert s.count() == 2 and [m.seq for m in s.messages()] == [1, 2]
        assert MARK not in json.dumps(s.build().to_openai())
        assert s.search(MARK) == []
        assert s.add({"role": "user", "content": "again"}).seq == 4
        assert s.stats().messages == 3


def test_retracting_a_call_takes_its_results(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        s = engine.session("s")
        s.add({"role": "user", "content": "run it"})
        s.add({"role": "assistant", "content": "", "tool_calls": [_call("c1")]})
        s.add({"role": "tool", "tool_call_id": "c1", "content": f"{MARK} output"})
        s.add({"role": "assistant", "content": "done"})
        removed = s.retract(2)
        assert [m.seq for m in removed] == [2, 3]
        assert [m.seq for m in s.messages()] == [1, 4]
        payload = json.dumps(s.build().to_openai())
        assert MARK not in payload and '"tool"' not in payload
        assert engine.workspace.artifacts.for_call(s.record, "c1") is None


def test_retract_inside_an_archived_page_rebuilds_the_contents(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        s = engine.session("s", context_window=1_500, reserve_ratio=0.25)
        for i in range(30):
            s.add({"role": "user", "content": (f"{MARK} secret. " if i == 2 else "")
                   + f"topic {i} " + ("words " * 30)})
            s.add({"role": "assistant", "content": f"reply {i} " + ("more " * 30)})
            s.build()
        assert s.place_of_page(3) in ("contents", "evicted")
        pages = s.stats().pages
        seq = next(m.seq for m in s.messages() if MARK in m.content)
        assert seq is not None
        s.retract(seq)
        # At once, before any build: no saved page row of the session holds it.
        rows = [engine.store.context.page_rows(s.record, state=state)
                for state in ("archived", "recalled", "evicted")]
        assert rows[2] and MARK not in str(rows)
        ctx = s.build()
        assert MARK not in json.dumps(ctx.to_openai())
        assert s.stats().pages == pages - 1
        # No saved contents entry, pool line or page row holds it (in any place).
        saved = [engine.store.context.page_rows(s.record, state=state)
                 for state in ("archived", "recalled", "evicted")]
        assert MARK not in str(saved) and MARK not in json.dumps(s.export_state())
        assert s.search(MARK) == [] and s.search(MARK, scope="user") == []
        for page in s.pages():
            assert page.first_seq != seq
        recalled = s.call_tool("recall_page", {"index": 3})
        assert not recalled.startswith("error") and MARK not in recalled


def test_another_engine_sees_the_deletion(where: Where) -> None:
    with memci.Engine.open(where) as one, memci.Engine.open(where) as two:
        a = one.session("s")
        for i in range(4):
            a.add({"role": "user", "content": f"q{i} {MARK}{i}"})
            a.add({"role": "assistant", "content": f"a{i}"})
        b = two.session("s")
        assert b.count() == 8
        b.build()
        a.retract(3)
        a.pop()
        assert b.count() == 6
        assert f"{MARK}1" not in json.dumps(b.build().to_openai())
        assert b.add({"role": "user", "content": "next"}).seq == 9
        assert a.count() == 7
        # A session deleted by the other engine: its name starts a new one here.
        one.delete_session("s")
        fresh = two.session("s")
        assert fresh is not b and fresh.count() == 0
        with pytest.raises(memci.UnknownSessionError):
            b.build()


def test_another_process_sees_the_deletion(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        s = engine.session("s")
        for i in range(3):
            s.add({"role": "user", "content": f"q{i} {MARK}{i}"})
            s.add({"role": "assistant", "content": f"a{i}"})
        s.build()
        code = ("import memci, sys\n"
                "with memci.Engine.open(sys.argv[1]) as e:\n"
                "    e.session('s').retract(3)\n")
        subprocess.run([sys.executable, "-c", code, str(where)], check=True, timeout=120)
        assert s.count() == 5
        assert f"{MARK}1" not in json.dumps(s.build().to_openai())


def test_clear_empties_the_session_and_keeps_it(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        s = _fill(engine, "s", "alice", MARK)
        assert s.clear() == 49
        assert s.count() == 0 and s.messages() == [] and s.pages() == []
        assert s.work_state().pin_list() == []
        assert s.build().messages == []
        # Nothing of the session is found; the user's own memory (a preference) stays.
        assert [h.message.content for h in s.search(MARK)] == [f"alice prefers {MARK} tea"]
        assert s.add({"role": "user", "content": "fresh"}).seq == 50
        assert engine.session("s", user="alice").user == "alice"


# -- bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize("seq", [0, -1, True, "3", 3.0, None])
def test_retract_refuses_what_is_not_a_seq(where: Where, seq: Any) -> None:
    with memci.Engine.open(where) as engine:
        s = engine.session("s")
        s.add({"role": "user", "content": "keep"})
        with pytest.raises(memci.UnknownMessageError, match="positive int"):
            s.retract(seq)
        assert s.count() == 1


def test_unknown_targets_raise_typed_errors_and_delete_nothing(where: Where) -> None:
    with memci.Engine.open(where) as engine:
        s = engine.session("s", user="u")
        s.add({"role": "user", "content": "keep"})
        with pytest.raises(memci.UnknownMessageError, match="no message with seq 7"):
            s.retract(7)
        empty = engine.session("empty")
        with pytest.raises(memci.UnknownMessageError, match="no message to pop"):
            empty.pop()
        with pytest.raises(memci.UnknownSessionError, match="no session 'nope'"):
            engine.delete_session("nope")
        for bad in ("", None, 5, "x" * 201):
            with pytest.raises(memci.InvalidInputError):
                engine.erase_user(bad)
            with pytest.raises(memci.InvalidInputError):
                engine.delete_session(bad)
        with pytest.raises(memci.InvalidInputError, match="actor"):
            s.pop(actor="")
        with pytest.raises(memci.ConfigError):
            engine.erasures(limit=0)
        assert s.count() == 1 and engine.erasures() == []
        assert engine.erase_user("nobody").counts == {}
