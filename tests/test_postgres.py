"""The PostgreSQL backend through the engine: opening by URL, servers sharing one database.

Every test runs on a real PostgreSQL (tests/pg.py starts one); the storage protocols
themselves are checked by the contract suite (tests/contract), on both backends.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import memci
from memci.errors import ConfigError, MissingExtraError, StoreError
from memci.memory import MessageIndex, get_analyzer
from memci.server import KeyStore
from memci.store import Scope, open_store
from memci.text._terms import PORTER, TRIGRAM, terms
from tests import pg

TEXTS = [
    "The quick brown foxes jumped over the lazy dogs' kennels, running swiftly.",
    "Relational databases: normalization, generalizations and hopefulness; café naïve "
    "résumé Ærøskøbing ŒUVRE straße İstanbul ﬁne",
    "我们明天去杭州旅游，顺便看看西湖。Python 3.12 的 asyncio 很好用！",
    "snake_case CamelCase e-mail x86_64 v1.2.3 don't ain't 'quoted' 42nd 1st",
    "caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated "
    "troubled sized hopping tanned falling hissing fizzed failing filing happy sky "
    "relational conditional rational valenci hesitanci digitizer conformabli radicalli "
    "differentli vileli analogousli vietnamization predication operator feudalism "
    "decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate "
    "formative formalize electriciti electrical hopeful goodness revival allowance "
    "inference airliner gyroscopic adjustable defensible irritant replacement adjustment "
    "dependent adoption homologou communism activate angulariti homologous effective "
    "bowdlerize probate rate cease controll roll generously",
    # Combining marks inside, before and between tokens; separators that are not spaces.
    "cafe\u0301 \u0301abc x\u0301\u0301y \u0301 a\u0301-b \u00e9\u0301t\u00c9 tab\there"
    "\u00a0nbsp\u2028ls \u3000ideo emoji\U0001f600word \ue000pua\ue001 \U000e0001tag",
]


@pytest.fixture
def url() -> str:
    return pg.fresh_database()


def _fts5_terms(spec: str, text: str) -> list[str]:
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '{spec}')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.execute("INSERT INTO t (x) VALUES (?)", (text,))
    return [r[0] for r in db.execute("SELECT term FROM v ORDER BY offset")]


@pytest.mark.parametrize("spec", [PORTER, TRIGRAM])
def test_terms_are_cut_as_sqlite_fts5_cuts_them(spec: str) -> None:
    analyzer = get_analyzer("bigram")
    for text in TEXTS:
        document = analyzer.document(text) if spec == PORTER else text
        assert terms(spec, document) == _fts5_terms(spec, document), text


def test_an_engine_opens_a_postgresql_url_and_a_second_server_sees_the_same_session(
    url: str, tmp_path: Path,
) -> None:
    one = memci.Engine.open(url, workers=0)
    two = memci.Engine.open(url, workers=0)
    try:
        a = one.session("chat", user="u1", context_window=2000)
        a.add({"role": "user", "content": "我们明天去杭州旅游"})
        a.add({"role": "assistant", "content": "好的，西湖很美。"})
        for i in range(30):
            a.add({"role": "user", "content": f"question {i} about the red kayak " * 5})
            a.add({"role": "assistant", "content": f"answer {i}: paddle harder " * 5})
        b = two.session("chat", user="u1")
        assert [m.content for m in b.messages()] == [m.content for m in a.messages()]
        built_b = b.build()
        built_a = a.build()
        assert [m.content for m in built_a.messages] == [m.content for m in built_b.messages]
        hits = b.search("杭州", k=3)
        assert hits and "杭州" in hits[0].message.content
        assert b.search("kayak", k=3)
    finally:
        one.close()
        two.close()
    assert not any(tmp_path.iterdir())  # nothing on this machine's disk


def test_a_large_tool_output_is_in_the_database_and_every_server_reads_it(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    output = "".join(f"line {i}: {'数据' if i % 7 else 'data'} {'x' * 60}\n" for i in range(40000))
    one = memci.Engine.open(url, workers=0)
    two = memci.Engine.open(url, workers=0)
    try:
        assert one.workspace.artifacts.files_dir is None
        a = one.session("tools")
        a.add({"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
        a.add({"role": "tool", "tool_call_id": "c1", "content": output})
        b = two.session("tools")
        assert b.messages()[1].content == output
        record = two.store.session("default", "tools")
        assert record is not None
        (artifact,) = two.workspace.artifacts.for_session(record.id)
        assert artifact.stored == "file" and artifact.size > 1 << 20  # several parts
        got = b.call_tool("artifact_get", {"id": artifact.id, "offset": 1_000_000,
                                           "length": 500})
        assert output[1_000_000:1_000_500] in got
        assert two.workspace.artifacts.read_lines(artifact.id, 39999, 2) == "".join(
            output.splitlines(keepends=True)[39998:40000])
    finally:
        one.close()
        two.close()
    assert list(tmp_path.iterdir()) == []  # no artifacts folder on this server's disk


def test_memci_db_names_the_store(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCI_DB", url)
    engine = memci.Engine.open(workers=0)
    try:
        assert engine.store.location.startswith("postgresql://")
        engine.session("env").add({"role": "user", "content": "hi"})
    finally:
        engine.close()
    again = open_store(url)
    try:
        found = again.session("default", "env")
        assert found is not None and again.last_seq(found) == 1
    finally:
        again.close()


def test_sqlite_urls_and_unknown_schemes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///rel.db")
    store.close()
    assert (tmp_path / "rel.db").is_file()
    store = open_store(f"sqlite:///{tmp_path}/abs.db")
    store.close()
    assert (tmp_path / "abs.db").is_file()
    with pytest.raises(ConfigError, match=r"mysql://.*postgresql://"):
        memci.Engine.open("mysql://u@h/db")


def test_a_missing_extra_names_the_install_command() -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "import memci\n"
            "try:\n    memci.Engine.open('postgresql://u@127.0.0.1:1/x')\n"
            "except memci.errors.MissingExtraError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "pip install 'memci[postgres]'" in out
    assert issubclass(MissingExtraError, memci.MemciError)


def test_an_unreachable_server_is_a_store_error_that_says_what_to_check() -> None:
    with pytest.raises(StoreError, match=r"cannot be reached.*check that it runs"):
        open_store("postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=2")
    with pytest.raises(StoreError) as raised:
        open_store("postgresql://nobody:secret@127.0.0.1:1/none?connect_timeout=2")
    assert "secret" not in str(raised.value)


def test_servers_starting_at_once_migrate_once(url: str) -> None:
    stores: list[object] = []
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def open_one() -> None:
        start.wait()
        try:
            stores.append(open_store(url))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(stores) == 4
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT component, version, count(*) FROM memci_migrations"
                            " GROUP BY component, version HAVING count(*) > 1").fetchall()
    assert rows == []
    for store in stores:
        store.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("analyzer", ["bigram", "trigram"])
def test_a_message_with_a_nul_character_is_kept_exactly(url: str, analyzer: str) -> None:
    # PostgreSQL's text cannot hold U+0000: the log keeps it (in JSON), the index cuts at it
    engine = memci.Engine.open(url, workers=0)
    try:
        session = engine.session("nul")
        session.add({"role": "user", "content": "zeppelin\x00 hangar"})
        assert [m.content for m in session.messages()] == ["zeppelin\x00 hangar"]
        index = MessageIndex(engine.store, analyzer=analyzer, embedder=None)
        index.sync()
        assert index.search("zeppelin", k=1)
    finally:
        engine.close()


def test_pg_url_in_the_environment_is_never_read_at_import() -> None:
    env = {**os.environ, "MEMCI_DB": "postgresql://nobody@127.0.0.1:1/x"}
    subprocess.run([sys.executable, "-c", "import memci, memci.store, memci.server"],
                   env=env, check=True, timeout=60)


def _fill(engine: memci.Engine) -> memci.Session:
    """A session with archived pages, a large tool output, a pin; a key and a memory item."""
    session = engine.session("moved", user="u1", context_window=1500)
    session.add({"role": "system", "content": "You are terse."})
    for i in range(20):
        session.add({"role": "user", "content": f"question {i} about the lighthouse 灯塔 " * 4})
        session.add({"role": "assistant", "content": f"answer {i}: the keeper sleeps " * 4})
        if i % 4 == 0:
            session.build()
    session.add({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
    session.add({"role": "tool", "tool_call_id": "c1", "content": "output line\n" * 20000})
    session.call_tool("pin_add", {"text": "the keeper is Ann", "source": "user"})
    engine.memory.remember(Scope.user_scope("u1"), "u1 prefers tea", "preference")
    KeyStore(engine.store).create("acme")
    session.build()
    return session


def _same(one: memci.Engine, two: memci.Engine) -> None:
    a, b = one.session("moved"), two.session("moved")
    assert [(m.seq, m.role, m.content, m.created_at) for m in a.messages()] == [
        (m.seq, m.role, m.content, m.created_at) for m in b.messages()]
    assert [(e.kind, e.page, e.last_page) for e in one.store.context.events(
        one.store.session("default", "moved"))] == [(e.kind, e.page, e.last_page) for e in
                                                    two.store.context.events(
                                                        two.store.session("default", "moved"))]
    assert [m.content for m in a.build().messages] == [m.content for m in b.build().messages]
    assert [h.message.seq for h in b.search("灯塔 keeper", k=5)] == [
        h.message.seq for h in a.search("灯塔 keeper", k=5)]
    assert b.call_tool("pin_list", {}) == a.call_tool("pin_list", {})
    assert KeyStore(two.store).tenant_of("nope") is None
    scope = Scope.user_scope("u1")
    assert two.memory.recall("tea", scope=scope)
    assert [h.message.content for h in two.memory.recall("tea", scope=scope)] == [
        h.message.content for h in one.memory.recall("tea", scope=scope)]


def test_migrate_copies_a_store_from_sqlite_to_postgresql_and_back(
    url: str, tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from memci.cli import main

    source = tmp_path / "source.db"
    with memci.Engine.open(source, workers=0) as engine:
        _fill(engine)
        gone = engine.session("gone", user="u9")
        for text in ("one", "two", "three"):
            gone.add({"role": "user", "content": text})
        gone.retract(3)  # the audit log and the highest seq given go along
    result = CliRunner().invoke(main, ["migrate", "--from", str(source), "--to", url])
    assert result.exit_code == 0, result.output
    assert "every table's count verified" in result.output
    back = tmp_path / "back.db"
    result = CliRunner().invoke(main, ["migrate", "--from", url, "--to", str(back)])
    assert result.exit_code == 0, result.output
    with memci.Engine.open(source, workers=0) as one, memci.Engine.open(url, workers=0) as two, \
            memci.Engine.open(back, workers=0) as three:
        _same(one, two)
        _same(one, three)
        assert three.workspace.artifacts.files_dir is not None  # outputs are files again
        assert any(three.workspace.artifacts.files_dir.rglob("*.txt"))
        assert [(e.action, e.counts) for e in two.erasures()] == [
            (e.action, e.counts) for e in one.erasures()] != []
        assert [(e.action, e.counts) for e in three.erasures()] == [
            (e.action, e.counts) for e in one.erasures()]
        assert two.session("gone", user="u9").add({"role": "user", "content": "4"}).seq == 4
        moved = two.session("moved")
        moved.add({"role": "user", "content": "after the move"})  # ids go on after the copy
        assert moved.messages()[-1].seq == one.session("moved").count() + 1
    # a store that holds data is never a target: nothing is merged
    result = CliRunner().invoke(main, ["migrate", "--from", str(source), "--to", url])
    assert result.exit_code != 0 and "already holds" in result.output


def test_export_and_import_work_across_backends(url: str, tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "a.db", workers=0) as engine:
        session = _fill(engine)
        path = tmp_path / "moved.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            session.export_jsonl(fh)
        original = [(m.role, m.content) for m in session.messages()]
    with memci.Engine.open(url, workers=0) as engine, path.open(encoding="utf-8") as fh:
        imported = engine.import_jsonl(fh, name="copy")
        assert [(m.role, m.content) for m in imported.messages()] == original


def _dead_rows(url: str, table: str) -> int | None:
    """Dead row versions left in ``table``'s pages (pgstattuple); None without it."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
        except psycopg.Error:
            return None
        row = conn.execute("SELECT dead_tuple_count FROM pgstattuple(%s)", (table,)).fetchone()
    return int(row[0]) if row else None


def test_scrub_vacuums_and_says_when_an_older_snapshot_keeps_deleted_rows(url: str) -> None:
    import psycopg

    with memci.Engine.open(url, workers=0) as engine:
        s = engine.session("s", user="alice")
        for i in range(20):
            s.add({"role": "user", "content": f"QZXMARK secret {i}"})
        reader = psycopg.connect(url)  # another server's long read: it holds a snapshot
        try:
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            assert reader.execute("SELECT count(*) FROM messages").fetchone() == (20,)
            engine.erase_user("alice")
            # The old snapshot may still see the deleted rows: VACUUM cannot remove them.
            assert engine.scrub() is False
            assert reader.execute("SELECT count(*) FROM messages").fetchone() == (20,)
            assert _dead_rows(url, "messages") in (None, 20)
            reader.execute("COMMIT")
            assert engine.scrub() is True
            assert _dead_rows(url, "messages") in (None, 0)
        finally:
            reader.close()
        with engine.store.read() as db:
            assert db.execute("SELECT count(*) FROM messages").fetchone() == (0,)


def test_scrub_waits_for_a_short_older_transaction_and_finishes(url: str) -> None:
    """A request or a worker's job that began before the deletion ends soon: wait for it."""
    import psycopg

    with memci.Engine.open(url, workers=0) as engine:
        s = engine.session("s", user="alice")
        for i in range(20):
            s.add({"role": "user", "content": f"QZXMARK secret {i}"})
        reader = psycopg.connect(url)  # another server's request, still running
        try:
            reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            assert reader.execute("SELECT count(*) FROM messages").fetchone() == (20,)
            ends = threading.Timer(0.3, reader.execute, ("COMMIT",))
            ends.start()
            erasure = engine.delete_session("s")
            ends.join()
            assert erasure.scrubbed is not None
            assert _dead_rows(url, "messages") in (None, 0)
        finally:
            reader.close()


def test_scrub_by_a_user_who_may_not_vacuum_says_so(url: str) -> None:
    import psycopg

    from memci.store.postgres import PostgresStore

    owner = PostgresStore(url)
    owner.close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS memci_rw")
        conn.execute("CREATE ROLE memci_rw LOGIN PASSWORD 'rw'")
        # Rows and the schema (opening a store checks its migrations), not the tables.
        conn.execute("GRANT USAGE, CREATE ON SCHEMA public TO memci_rw")
        conn.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public"
                     " TO memci_rw")
    parts = url.split("://", 1)[1].split("@", 1)
    store = PostgresStore(f"postgresql://memci_rw:rw@{parts[-1]}")
    try:
        with pytest.raises(StoreError, match=r"the deletion is committed.*owner"):
            store.eraser.scrub()
    finally:
        store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP OWNED BY memci_rw")
            conn.execute("DROP ROLE memci_rw")


def _rw_url(url: str) -> str:
    """A role that may read and write memci's rows but vacuum none of its tables."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS memci_rw")
        conn.execute("CREATE ROLE memci_rw LOGIN PASSWORD 'rw'")
        # Rows and the schema (opening a store checks its migrations), not the tables.
        conn.execute("GRANT USAGE, CREATE ON SCHEMA public TO memci_rw")
        conn.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public"
                     " TO memci_rw")
        conn.execute("GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO memci_rw")
    return f"postgresql://memci_rw:rw@{url.split('://', 1)[1].split('@', 1)[-1]}"


def _drop_rw(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP OWNED BY memci_rw")
        conn.execute("DROP ROLE memci_rw")


def test_a_committed_deletion_is_reported_when_its_scrub_fails(url: str) -> None:
    pytest.importorskip("fastapi", reason="needs memci[server]")
    from fastapi.testclient import TestClient

    from memci.server import ServerConfig, create_app

    with memci.Engine.open(url, workers=0) as owner:
        for u in range(3):
            owner.session(f"s{u}", user=f"u{u}").add({"role": "user", "content": f"QZX {u}"})
        key = KeyStore(owner.store).create("default")[1]
    try:
        with memci.Engine.open(_rw_url(url), workers=0) as engine:
            # Committed, though the scrub after it fails (the role may not vacuum).
            erasure = engine.delete_session("s0")
            assert erasure.counts["sessions"] == 1 and erasure.scrubbed is None
            assert engine.store.session("default", "s0") is None
            erased = engine.erase_user("u1")
            assert erased.counts["messages"] == 1 and erased.scrubbed is None
            with TestClient(create_app(engine, ServerConfig())) as client:
                client.headers["Authorization"] = f"Bearer {key}"
                answer = client.delete("/v1/sessions/s2")
                assert answer.status_code == 200, answer.text
                assert answer.json()["erasure"]["scrub"] == "pending"
            with pytest.raises(StoreError, match="the deletion is committed"):
                engine.scrub()  # asked for, it says why
            assert [e.scrubbed for e in engine.erasures()] == [None, None, None]
        with memci.Engine.open(url, workers=0) as owner:
            assert owner.sessions() == []
            assert owner.scrub() is True  # the owner's scrub covers what was pending
            assert all(e.scrubbed is not None for e in owner.erasures())
    finally:
        _drop_rw(url)


def _relation_files(url: str) -> list[Path]:
    """The files of every table, TOAST table and index of the database's schema."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")  # what is in shared buffers reaches the files
        folder = Path(str(conn.execute("SHOW data_directory").fetchone()[0]))
        rows = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c WHERE c.relkind IN"
            " ('r', 't', 'i') AND (c.relnamespace = current_schema()::regnamespace OR"
            " c.oid IN (SELECT reltoastrelid FROM pg_class WHERE relnamespace ="
            " current_schema()::regnamespace) OR c.oid IN (SELECT i.indexrelid FROM"
            " pg_index i JOIN pg_class t ON t.oid = i.indrelid WHERE t.relnamespace ="
            " 'pg_toast'::regnamespace AND t.oid IN (SELECT reltoastrelid FROM pg_class"
            " WHERE relnamespace = current_schema()::regnamespace)))").fetchall()
    if not folder.is_dir():
        pytest.skip("the PostgreSQL server's files are not on this machine")
    return [folder / str(r[0]) for r in rows if r[0]]


def test_a_full_scrub_leaves_no_byte_of_the_erased_user_in_any_table_file(url: str) -> None:
    from tests.test_deleting import CN_MARK, MARK, OTHER, _fill

    with memci.Engine.open(url, workers=0) as engine:
        _fill(engine, "a1", "alice", MARK)
        _fill(engine, "b1", "bob", OTHER)
        engine.erase_user("alice")
        engine.scrub()
        files = _relation_files(url)
        # VACUUM reuses the space of the removed rows, but their bytes stay in it.
        assert any(MARK.encode() in p.read_bytes() for p in files if p.exists())
        assert engine.scrub(full=True) is True
        files = _relation_files(url)
        for needle in (MARK, CN_MARK, "alice"):
            held = [p.name for p in files if p.exists() and needle.encode() in p.read_bytes()]
            assert held == [], needle
        assert any(OTHER.encode() in p.read_bytes() for p in files if p.exists())
        assert engine.erasures()[-1].scrubbed is not None


def test_the_scrub_covers_every_table_memci_makes(url: str) -> None:
    """Every table of the schema once every part was used is one the scrub vacuums."""
    import psycopg

    from memci.store.postgres._erase import memci_tables

    with memci.Engine.open(url, workers=0) as engine:
        s = engine.session("s", user="alice")
        s.add({"role": "user", "content": "hello"})
        KeyStore(engine.store).create("default")
        store = engine.store
        for name in ("bigram", "trigram"):
            analyzer = get_analyzer(name)
            store.search(analyzer), store.items(analyzer), store.docs(analyzer)
        try:
            store.vectors("scrub:test")
        except MissingExtraError:
            pass  # no pgvector: no vector tables either
        store.jobs.counts()
        with store.read() as db:
            covered = set(memci_tables(db))
    with psycopg.connect(url) as conn:
        every = {str(r[0]) for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}
    assert every - covered == set()
    assert {"messages", "memory_fts_bigram", "memory_items_fts_trigram",
            "doc_chunks_fts_bigram", "memci_erasures", "artifact_contents"} <= covered



@contextlib.contextmanager
def _in_flight(engine: memci.Engine, write: Callable[[], object]) -> Iterator[None]:
    """``write`` in a transaction of ``engine`` (another thread) left open until the block ends."""
    written, go = threading.Event(), threading.Event()

    def slow_writer() -> None:
        with engine.store.atomic():
            write()
            written.set()
            go.wait(30)

    writer = threading.Thread(target=slow_writer)
    writer.start()
    try:
        assert written.wait(30)
        yield
    finally:
        go.set()
        writer.join(30)


def test_memory_committed_after_a_newer_write_was_read_reaches_the_next_gather(
        url: str) -> None:
    """A doc numbered before the newest can commit after it: the caches must not keep missing it.

    Memory's caches (a gather, the preferences, who a name is) are keyed by its version;
    the newest doc number did not change when an older-numbered doc committed later, so a
    gather read while that write was in flight was answered from the cache for minutes.
    """
    with (memci.Engine.open(url, workers=0) as a, memci.Engine.open(url, workers=0) as b,
          memci.Engine.open(url, workers=0) as c):
        mine, other, asking = (e.session(n, user="u") for e, n in
                               ((a, "one"), (b, "two"), (c, "three")))
        other.add({"role": "user", "content": "hello"})
        asking.add({"role": "user", "content": "what about the zeppelin?"})

        def gathered() -> list[str]:
            found = c.gatherer.gather("which zeppelin do I like?", session=asking.record,
                                      scope="user")
            return [e.text for e in found.episodes]

        with _in_flight(a, lambda: mine.add(
                {"role": "user", "content": "my favourite zeppelin is the Hindenburg"})):
            other.add({"role": "user", "content": "a note about lunch"})  # numbered after
            assert "my favourite zeppelin is the Hindenburg" not in gathered()
        assert "my favourite zeppelin is the Hindenburg" in gathered()


def _meanwhile(write: Callable[[], object]) -> threading.Thread:
    """``write`` started in another thread, given half a second to finish."""
    other = threading.Thread(target=write)
    other.start()
    other.join(0.5)
    return other


def test_two_servers_adding_notes_to_one_session_at_once_keep_both(url: str) -> None:
    """A working-state write reads, then writes what it changed: another server's waits.

    Both read the notebook's next id while neither had committed: the later write gave
    its note the earlier one's id and replaced it, though its caller was told it was
    noted.
    """
    with memci.Engine.open(url, workers=0) as a, memci.Engine.open(url, workers=0) as b:
        mine, theirs = a.session("one"), b.session("one")
        mine.add({"role": "user", "content": "start"})
        answers: list[str] = []
        with _in_flight(a, lambda: mine.work_state().notebook_add("noted by a, slowly")):
            other = _meanwhile(lambda: answers.append(
                theirs.call_tool("notebook_add", {"summary": "noted by b"})))
            assert other.is_alive()  # it waits for a's block to end
        other.join(30)
        assert answers and "note 2" in answers[0]
    with memci.Engine.open(url, workers=0) as fresh:
        notes = fresh.session("one").work_state().notebook_list()
    assert [(n.id, n.summary) for n in notes] == [(1, "noted by a, slowly"), (2, "noted by b")]


def test_two_servers_remembering_one_fact_at_once_keep_one_item(url: str) -> None:
    """A write finds what it merges, then adds: another server's waits for it to commit.

    Both found no such item while neither had committed, so the user had the fact
    twice (and two current items about one subject, each superseding only the older).
    """
    owner = Scope.user_scope("u", "t")
    with memci.Engine.open(url, workers=0) as a, memci.Engine.open(url, workers=0) as b:
        with _in_flight(a, lambda: a.memory.items.remember(
                owner, "likes green tea", "preference", subject="tea")):
            other = _meanwhile(lambda: b.memory.items.remember(
                owner, "Likes green tea.", "preference", subject="tea"))
        other.join(30)
        current = b.memory.items.preferences(owner)
    assert [(i.text, i.seen) for i in current] == [("likes green tea", 2)]


def _backend_pid(store: Any) -> int:
    with store.read() as db:
        row = db.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def test_reads_beside_run_on_a_connection_of_their_own_while_the_caller_reads(
        url: str) -> None:
    """A search's items ranking overlaps its messages': the server works on both at once."""
    from memci.store.postgres._store import BESIDE_THREADS, PostgresStore

    store = PostgresStore(url)
    go_on = threading.Event()
    traced: contextvars.ContextVar[str] = contextvars.ContextVar("traced", default="none")
    traced.set("the caller's span")

    def reads() -> tuple[int, bool, str, str]:
        with store.read() as db:
            row = db.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            # Run here, before beside() returns, this would wait out its timeout.
            return (int(row[0]), go_on.wait(10), traced.get(),
                    threading.current_thread().name)

    try:
        waiting = store.beside(reads)
        mine = _backend_pid(store)  # while the reads beside hold their connection
        go_on.set()
        theirs, overlapped, context, thread = waiting()
        assert overlapped and theirs != mine
        assert context == "the caller's span" and thread.startswith(BESIDE_THREADS)
    finally:
        store.close()


def test_reads_beside_a_write_run_here_on_its_connection(url: str) -> None:
    from memci.store.postgres import PostgresStore

    store = PostgresStore(url)
    here = threading.current_thread().name
    try:
        with store.atomic():
            mine = _backend_pid(store)  # the write's connection, bound to this thread
            waiting = store.beside(lambda: (_backend_pid(store),
                                            threading.current_thread().name))
            assert waiting() == (mine, here)
    finally:
        store.close()


def test_reads_beside_run_here_with_a_pool_of_two(url: str) -> None:
    from memci.store.postgres import PostgresStore

    store = PostgresStore(url, pool_size=2)  # a thread beside would leave the caller one
    try:
        assert store.beside(lambda: threading.current_thread().name)() == (
            threading.current_thread().name)
    finally:
        store.close()


def test_a_session_search_ranks_its_items_beside_its_messages(url: str) -> None:
    """Same hits as ranked one after the other; the items' statements on the other thread."""
    from memci.store.postgres._store import BESIDE_THREADS

    with memci.Engine.open(url, workers=0) as eng:
        s = eng.session("s", user="u")
        s.add_many([{"role": "user", "content": f"note {i}: the parser cache was cleared"}
                    for i in range(30)])
        eng.memory.remember(Scope.user_scope("u"), "the parser cache lives in /var/cache/parser")
        threads: list[str] = []
        ranked = eng.memory.items.ranked

        def ranked_where(*args: Any, **kwargs: Any) -> dict[str, list[int]]:
            threads.append(threading.current_thread().name)
            return ranked(*args, **kwargs)

        eng.memory.items.ranked = ranked_where  # type: ignore[method-assign]
        beside = [h.text for h in s.search("where does the parser cache live?", k=5)]
        assert threads and threads[0].startswith(BESIDE_THREADS)
        with eng.store.atomic():  # inside a write: ranked here, one after the other
            here = [h.text for h in s.search("where does the parser cache live?", k=5)]
        assert threads[1] == threading.current_thread().name
    assert beside == here and "the parser cache lives in /var/cache/parser" in beside


def test_a_search_beside_its_items_embeds_its_question_once(
    url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The items' ranking (on the store's thread) and the messages' ask at once: one request."""
    from tests.fakellm import FakeLLM

    question = "where does the parser cache live?"
    with FakeLLM() as fake:
        monkeypatch.setenv("MEMCI_EMBEDDER", "openai:tiny-embed")
        monkeypatch.setenv("MEMCI_EMBEDDER_BASE_URL", fake.openai_base_url)
        with memci.Engine.open(url, workers=0) as eng:
            s = eng.session("s", user="u")
            s.add_many([{"role": "user", "content": f"note {i}: the parser cache was cleared"}
                        for i in range(30)])
            eng.memory.remember(Scope.user_scope("u"), "the parser cache lives in /var/cache")
            eng.memory.items.embed_pending()
            eng.memory.messages.embed_pending()
            hits = s.search(question, k=5)
        asked = [r for r in fake.requests if r.json and r.json.get("input") == [question]]
    assert "dense" in {r for h in hits for r in h.retrievers}
    assert len(asked) == 1


def test_reads_beside_a_closed_store_fail_as_its_own_reads_do(url: str) -> None:
    from memci.store.postgres import PostgresStore

    store = PostgresStore(url)
    assert store.beside(lambda: _backend_pid(store))() > 0  # its threads started
    store.close()
    waiting = store.beside(lambda: _backend_pid(store))
    with pytest.raises(StoreError):
        waiting()
