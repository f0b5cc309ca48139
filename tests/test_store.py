"""The SQLite write-back log: order, durability, transactions, migrations, export."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import memci
from memci.store import CORE_MIGRATIONS, SQLiteStore
from memci.store.sqlite._driver import connect


def test_every_message_is_stored_in_order_with_tokens(engine: memci.Engine) -> None:
    s = engine.session("s1", user="u1")
    s.set_system("be brief")
    first = s.add({"role": "user", "content": "hello", "metadata": {"k": "v"}})
    second = s.add({"role": "assistant", "content": "hi there"})
    assert (first.seq, second.seq) == (2, 3)
    assert first.session == "s1" and first.tokens and first.tokens > 0
    assert first.metadata == {"k": "v"}
    log = s.messages()
    assert [m.seq for m in log] == [1, 2, 3]
    assert [m.role for m in log] == ["system", "user", "assistant"]
    assert log[1].content == "hello" and log[1].metadata == {"k": "v"}
    assert all(m.created_at is not None and m.created_at.tzinfo for m in log)


def test_created_at_is_kept(engine: memci.Engine) -> None:
    s = engine.session("s1")
    m = s.add({"role": "user", "content": "x", "created_at": "2025-03-01T08:00:00Z"})
    assert m.created_at is not None and m.created_at.isoformat() == "2025-03-01T08:00:00+00:00"
    assert s.messages()[0].created_at == m.created_at


def test_store_survives_reopen(db_path: Path) -> None:
    with memci.Engine.open(db_path) as eng:
        eng.session("s", user="u", tenant="acme", model="gpt-4o-mini").add(
            {"role": "user", "content": "persist me"})
    with memci.Engine.open(db_path) as eng:
        s = eng.session("s", tenant="acme")
        assert [m.content for m in s.messages()] == ["persist me"]
        assert s.user == "u" and s.tenant == "acme"
        assert s.settings.model == "gpt-4o-mini"


def test_sessions_belong_to_tenant(engine: memci.Engine) -> None:
    a = engine.session("same", tenant="a", user="ua")
    b = engine.session("same", tenant="b", user="ub")
    a.add({"role": "user", "content": "from a"})
    assert b.messages() == []
    assert {r.tenant for r in engine.sessions()} == {"a", "b"}


def test_add_many_is_all_or_nothing(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "before"})
    batch = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "two"},
        {"role": "wizard", "content": "bad"},
    ]
    with pytest.raises(memci.UnknownRoleError):
        s.add_many(batch)
    assert [m.content for m in s.messages()] == ["before"]
    # an orphan tool result is found inside the store transaction: also nothing stored
    with pytest.raises(memci.OrphanToolResultError):
        s.add_many([{"role": "user", "content": "x"},
                    {"role": "tool", "tool_call_id": "nope", "content": "r"}])
    assert [m.content for m in s.messages()] == ["before"]
    stored = s.add_many([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    assert [m.seq for m in stored] == [2, 3]


def test_tool_results_must_answer_an_open_call(engine: memci.Engine) -> None:
    s = engine.session("s")
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    s.add_many([
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "a b c"},
    ])
    with pytest.raises(memci.OrphanToolResultError, match="c1"):
        s.add({"role": "tool", "tool_call_id": "c1", "content": "again"})
    # the same id may be reused by a later call (some agents number calls per turn)
    s.add({"role": "assistant", "content": None, "tool_calls": [call]})
    s.add({"role": "tool", "tool_call_id": "c1", "content": "fresh"})
    assert len(s.messages()) == 5


def test_wal_and_migrations_recorded(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    db = connect(db_path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    versions = [r[0] for r in db.execute(
        "SELECT version FROM memci_migrations WHERE component = 'core' ORDER BY 1")]
    assert versions == [m.version for m in CORE_MIGRATIONS]
    db.close()


def _read_calls() -> int:
    """The read system calls this process has made (Linux's ``/proc/self/io``)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("syscr:"):
            return int(line.split()[1])
    raise AssertionError("/proc/self/io has no syscr")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io")
def test_pages_read_once_stay_in_the_connections_cache(db_path: Path) -> None:
    # ~5 MB of messages (2.5 times SQLite's default page cache), each within its page:
    # a value that overflows its page is read past the cache. No workers: another
    # connection's write would make this one drop its cache.
    with memci.Engine.open(db_path, workers=0) as eng:
        s = eng.session("big", retrieval=False)
        s.add_many([{"role": "user" if i % 2 == 0 else "assistant",
                     "content": f"{i} " + "word " * 150} for i in range(6_000)])
        s.messages()
        before = _read_calls()
        assert len(s.messages()) == 6_000
        reads = _read_calls() - before
    assert reads < 100  # SQLite's default cache: most pages read again


def test_newer_schema_is_refused(db_path: Path) -> None:
    SQLiteStore(db_path).close()
    db = connect(db_path)
    db.execute("INSERT INTO memci_migrations VALUES ('core', 999, 'future', '2030-01-01')")
    db.commit()
    db.close()
    with pytest.raises(memci.StoreError, match="upgrade memci"):
        SQLiteStore(db_path)


def test_export_import_is_lossless(engine: memci.Engine) -> None:
    s = engine.session("orig", user="u9", tenant="t1", model="claude-sonnet-4")
    s.set_system("系统提示")
    s.add_many([
        {"role": "user", "content": [{"type": "text", "text": "看这张图"},
                                     {"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
         "metadata": {"source": "app", "n": [1, 2]}, "created_at": "2024-01-02T03:04:05+08:00"},
        {"role": "assistant", "content": "calling", "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
            {"id": "t2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "r1"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2",
                                      "content": "boom", "is_error": True}]},
        {"role": "assistant", "content": "done", "name": "bot"},
    ])
    buf = io.StringIO()
    count = s.export_jsonl(buf)
    assert count == 6
    copy = engine.import_jsonl(io.StringIO(buf.getvalue()), name="copy")
    assert copy.tenant == "t1" and copy.user == "u9"
    assert copy.settings.model == "claude-sonnet-4"
    original, imported = s.messages(), copy.messages()
    assert [m.without_identity() for m in imported] == [m.without_identity() for m in original]
    assert [(m.seq, m.created_at, m.tokens) for m in imported] == [
        (m.seq, m.created_at, m.tokens) for m in original]
    with pytest.raises(memci.InvalidFileError, match="already exists"):
        engine.import_jsonl(io.StringIO(buf.getvalue()), name="copy")
    assert len(copy.messages()) == 6


def test_import_rejects_bad_files_without_storing(engine: memci.Engine) -> None:
    with pytest.raises(memci.InvalidFileError):
        engine.import_jsonl(io.StringIO("not json\n"))
    header = '{"format": "memci.session.v1", "session": "x"}\n'
    good = '{"role": "user", "parts": [{"kind": "text", "text": "ok"}]}\n'
    bad = '{"role": "user", "parts": [{"kind": "video"}]}\n'
    with pytest.raises(memci.InvalidFileError, match="line 3"):
        engine.import_jsonl(io.StringIO(header + good + bad))
    assert engine.store.session("default", "x") is None


def test_a_part_first_used_in_a_rolled_back_transaction_works_after(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    record = store.ensure_session("t", "s", None, {})
    with pytest.raises(RuntimeError), store.atomic():
        store.work.put_meta(record.id, "round", 1)  # the part applies its series here
        raise RuntimeError("the transaction rolls back, and the series with it")
    assert store.schema_version("workspace") == 0
    store.work.put_meta(record.id, "round", 2)  # applied again, not taken as done
    assert store.work.meta(record.id, "round") == 2
    assert store.schema_version("workspace") == 1
    store.close()


def test_parts_are_made_once_and_on_first_use(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    assert store.schema_version("jobs") == 0 and store.schema_version("server") == 0
    assert store.jobs is store.jobs and store.keys is store.keys
    assert store.schema_version("jobs") == 1 and store.schema_version("server") == 2
    other = store.another()
    assert other is not store and other.path == store.path and other.jobs is not store.jobs
    other.close()
    store.close()


def test_a_search_index_too_new_for_this_sqlite_says_which_sqlite_to_use(
    db_path: Path,
) -> None:
    """A store that deleted securely in its search index (SQLite 3.42+), opened by an older one."""
    import os
    import sqlite3
    import subprocess
    import sys

    from memci.store.sqlite._driver import driver
    from memci.store.sqlite._fts import SECURE_DELETE_SINCE

    def version(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split(".")[:3])

    if version(driver().sqlite_version) < SECURE_DELETE_SINCE or version(
            sqlite3.sqlite_version) >= SECURE_DELETE_SINCE:
        pytest.skip("needs a SQLite of 3.42+ in use and an older one in the standard library")
    with memci.Engine.open(db_path) as engine:
        s = engine.session("s")
        s.add({"role": "user", "content": "hello there"})
        s.add({"role": "user", "content": "gone soon"})
        s.pop()  # a secure delete: the index's format is now SQLite 3.42's
    code = ("import memci, sys\n"
            "try:\n"
            "    with memci.Engine.open(sys.argv[1]) as e:\n"
            "        e.session('s').search('hello')\n"
            "except memci.StoreError as exc:\n"
            "    print(exc)\n")
    env = {**os.environ, "MEMCI_SQLITE_DRIVER": "sqlite3"}
    done = subprocess.run([sys.executable, "-c", code, str(db_path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "needs SQLite 3.42 or later" in done.stdout
    assert f"runs SQLite {sqlite3.sqlite_version}" in done.stdout


def test_a_sqlite_older_than_memci_needs_is_refused_before_the_file_is_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shared statements need SQLite 3.35 (RETURNING): an older one is named, at open."""
    from memci.store.sqlite._dialect import MIN_SQLITE
    from memci.store.sqlite._driver import driver

    need = ".".join(map(str, MIN_SQLITE))
    older = f"{MIN_SQLITE[0]}.{MIN_SQLITE[1] - 1}.9"
    # The driver in use reports the SQLite it links: here, one just too old.
    monkeypatch.setattr(driver(), "sqlite_version", older)
    where = tmp_path / "old" / "memci.db"
    with pytest.raises(memci.StoreError) as caught:
        SQLiteStore(where)
    message = str(caught.value)
    assert f"needs SQLite {need} or later" in message and f"runs SQLite {older}" in message
    assert str(where) in message and "MEMCI_SQLITE_DRIVER=pysqlite3" in message
    assert not where.parent.exists()  # refused before anything was made
    monkeypatch.setattr(driver(), "sqlite_version", need)
    SQLiteStore(where).close()  # the oldest one it runs on opens


def test_the_docs_name_the_oldest_sqlite_memci_runs_on() -> None:
    from memci.store.sqlite._dialect import MIN_SQLITE

    docs = (Path(__file__).resolve().parents[1] / "docs" / "store.md").read_text()
    assert f"SQLite {'.'.join(map(str, MIN_SQLITE))} or later" in docs
