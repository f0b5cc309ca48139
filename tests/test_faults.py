"""Faults with real processes and real files.

Concurrent appenders and SIGKILL in the middle of ingest; a full disk (SQLite's own size
limit, a small tmpfs, a file size limit), a damaged database file: every failure is a
:class:`~memci.StoreError` that names the file and what to do, nothing of the failing call
is stored, and nothing acknowledged before it is lost.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import memci
from memci.server import KeyStore, ServerConfig, create_app
from memci.store.sqlite._driver import errors as driver_errors

pytestmark = pytest.mark.slow

SRC = str(Path(__file__).resolve().parents[1] / "src")

APPENDER = textwrap.dedent("""
    import sys, memci
    db, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    eng = memci.Engine.open(db)
    s = eng.session("shared")
    for i in range(n):
        if i % 10 == 0:
            s.add_many([{"role": "user", "content": f"{tag}-{i}"},
                        {"role": "assistant", "content": f"{tag}-{i}-reply"}])
        else:
            s.add({"role": "user", "content": f"{tag}-{i}"})
        print(f"ack {tag}-{i}", flush=True)
    eng.close()
""")


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-c", APPENDER, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_two_processes_append_without_loss_or_duplicates(db_path: Path) -> None:
    memci.Engine.open(db_path).close()
    n = 150
    procs = [_spawn(str(db_path), tag, str(n)) for tag in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with memci.Engine.open(db_path) as eng:
        log = eng.session("shared").messages()
    assert [m.seq for m in log] == list(range(1, len(log) + 1))  # gap-free, ordered
    users = [m.content for m in log if m.role == "user"]
    for tag in ("a", "b"):
        mine = [c for c in users if c.startswith(f"{tag}-")]
        assert mine == [f"{tag}-{i}" for i in range(n)]  # each once, in its order
    # a batch stays contiguous even with another process appending
    for i, m in enumerate(log):
        if m.role == "assistant":
            assert log[i - 1].content + "-reply" == m.content


def test_sigkill_mid_ingest_loses_nothing_acknowledged(db_path: Path) -> None:
    memci.Engine.open(db_path).close()
    proc = _spawn(str(db_path), "k", "100000")
    acked: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while len(acked) < 300 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("ack "):
            acked.append(line.split()[1])
    proc.send_signal(signal.SIGKILL)
    # whatever it printed before dying was acknowledged too
    rest, _ = proc.communicate(timeout=30)
    acked += [ln.split()[1] for ln in rest.splitlines() if ln.startswith("ack ")]
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= 300
    with memci.Engine.open(db_path) as eng:
        log = eng.session("shared").messages()
    stored = {m.content for m in log if m.role == "user"}
    missing = [a for a in acked if a not in stored]
    assert missing == []
    assert [m.seq for m in log] == list(range(1, len(log) + 1))


# -- a full disk -----------------------------------------------------------------------------


def _limit_pages(engine: memci.Engine, extra: int) -> None:
    """Let the database grow by ``extra`` pages only: SQLite's SQLITE_FULL, as on a full disk."""
    with engine.store.read() as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages + extra}")


def _unlimit_pages(engine: memci.Engine) -> None:
    with engine.store.read() as db:
        db.execute("PRAGMA max_page_count = 1073741823")


def _fill(session: memci.Session, acked: list[str], size: int = 2000) -> memci.StoreError:
    """Add messages until the store refuses one; return the error."""
    for i in range(100_000):
        text = f"message {i} " + "lorem ipsum " * (size // 12)
        try:
            session.add({"role": "user", "content": text})
        except memci.StoreError as exc:
            return exc
        acked.append(text)
    raise AssertionError("the store never filled up")


def test_a_full_store_raises_store_full_error_and_loses_nothing(db_path: Path) -> None:
    engine = memci.Engine.open(db_path)
    try:
        session = engine.session("s")
        _limit_pages(engine, 20)
        acked: list[str] = []
        error = _fill(session, acked)
        # not "OperationalError: cannot rollback - no transaction is active"
        assert isinstance(error, memci.StoreFullError), repr(error)
        assert "full" in str(error) and str(db_path) in str(error)
        assert isinstance(error.__cause__, driver_errors())
        count = session.count()
        assert count == len(acked)
        # a batch is refused whole, and the session keeps working while the disk is full
        with pytest.raises(memci.StoreFullError):
            session.add_many([{"role": "user", "content": "x " * 5000},
                              {"role": "assistant", "content": "y " * 5000}])
        assert session.count() == count
        session.build()
        assert [m.content for m in session.messages()] == acked
        _unlimit_pages(engine)
        session.add({"role": "user", "content": "after the disk was freed"})
    finally:
        engine.close()
    with memci.Engine.open(db_path) as again:
        log = again.session("s").messages()
    assert [m.content for m in log] == [*acked, "after the disk was freed"]
    assert [m.seq for m in log] == list(range(1, len(log) + 1))


def test_a_full_store_is_503_store_full_over_rest(engine: memci.Engine) -> None:
    key = KeyStore(engine.store).create("acme")[1]
    with TestClient(create_app(engine, ServerConfig())) as client:
        client.headers["Authorization"] = f"Bearer {key}"
        assert client.post("/v1/sessions/s/messages",
                           json={"role": "user", "content": "first"}).status_code == 200
        _limit_pages(engine, 2)
        answers = [client.post("/v1/sessions/s/messages",
                               json={"role": "user", "content": f"{i} " + "x " * 3000})
                   for i in range(40)]
        refused = [r for r in answers if r.status_code != 200]
        assert refused, "the store never filled up"
        assert {r.status_code for r in refused} == {503}
        assert refused[0].json()["error"]["code"] == "store_full"
        assert "disk is full" in refused[0].json()["error"]["message"]
        stored = 1 + sum(r.status_code == 200 for r in answers)
        assert client.get("/v1/sessions/s/stats").json()["messages"] == stored


@contextmanager
def _tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of ``size`` at ``folder`` (needs root and mount(8)); else the test skips."""
    folder.mkdir()
    if not shutil.which("mount") or os.geteuid() != 0:
        pytest.skip("a small tmpfs needs root and mount(8); the SQLite size limit and "
                    "RLIMIT_FSIZE tests cover the same paths without them")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _remount(folder: Path, how: str) -> None:
    """Make the file system at ``folder`` read-only (``ro``) or writable again (``rw``)."""
    subprocess.run(["mount", "-o", f"remount,{how}", str(folder)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 2 MiB tmpfs (needs root and mount(8)); skipped where it cannot be made."""
    with _tmpfs(tmp_path / "small", "2m") as folder:
        yield folder


def test_a_full_filesystem_loses_nothing_acknowledged(small_disk: Path) -> None:
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * 700_000)
    db = small_disk / "memci.db"
    acked: list[str] = []
    engine = memci.Engine.open(db)
    error: memci.StoreError | None = None
    try:
        session = engine.session("s")
        for i in range(10_000):
            # tool outputs too, so the artifact files fill the disk as well as the database
            call = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "cat",
                                                                 "arguments": "{}"}}]}
            batch = [{"role": "user", "content": f"turn {i} " + "words " * 300}, call,
                     {"role": "tool", "tool_call_id": f"c{i}",
                      "content": f"output {i}\n" + "line of output\n" * 6000}]
            try:
                session.add_many(batch)
            except memci.StoreError as exc:
                error = exc
                break
            acked.append(batch[0]["content"])
        assert isinstance(error, memci.StoreFullError), repr(error)
        assert acked, "the disk filled up before anything was stored"
    finally:
        try:
            engine.close()
        except memci.StoreError:
            pass  # closing may not checkpoint on a full disk: the WAL keeps everything
    filler.unlink()
    with memci.Engine.open(db) as again:
        session = again.session("s")
        users = [m.content for m in session.messages() if m.role == "user"]
        assert users == acked
        outputs = [m for m in session.messages() if m.role == "tool"]
        assert all(m.content.startswith("output ") and m.content.count("\n") == 6001
                   for m in outputs)
        session.add({"role": "user", "content": "room again"})


# -- a deletion that committed is reported as committed -----------------------------------


def _fill_disk(folder: Path, leave: int) -> Path:
    """Fill the file system of ``folder`` with one file, then free ``leave`` bytes of it."""
    filler = folder / "filler"
    with filler.open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    os.truncate(filler, filler.stat().st_size - leave)
    return filler


def test_a_deletion_committed_on_a_full_disk_is_reported_with_its_scrub_pending(
    tmp_path: Path,
) -> None:
    with _tmpfs(tmp_path / "disk", "16m") as disk:
        engine = memci.Engine.open(disk / "memci.db", workers=0)
        try:
            key = KeyStore(engine.store).create("acme")[1]
            for u in range(6):
                s = engine.session(f"s{u}", user=f"u{u}", tenant="acme")
                s.add_many([{"role": "user", "content": f"QZXU{u}MARK {i} " + "lorem " * 80}
                            for i in range(80)])
            # A file an older memci wrote (its deletions did not zero what they freed):
            # its first scrub rewrites it whole, which takes free space of its size.
            with engine.store.write() as db:
                db.execute("PRAGMA user_version = 0")
            with engine.store.read() as db:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            filler = _fill_disk(disk, leave=800_000)
            with TestClient(create_app(engine, ServerConfig())) as client:
                client.headers["Authorization"] = f"Bearer {key}"
                answer = client.delete("/v1/sessions/s0")
                assert answer.status_code == 200, answer.text  # not 503 store_full
                assert answer.json()["erasure"]["scrub"] == "pending"
                assert client.get("/v1/sessions/s0").status_code == 404
                erased = engine.erase_user("u1", tenant="acme")
                assert erased.counts["messages"] == 80 and erased.scrubbed is None
                log = client.get("/v1/erasures").json()["erasures"]
                assert [(e["action"], e["scrub"]) for e in log] == [
                    ("delete_session", "pending"), ("erase_user", "pending")]
                filler.unlink()
                assert engine.scrub() is True  # the pending scrub, once there is room
                log = client.get("/v1/erasures").json()["erasures"]
                assert [e["scrub"] for e in log] == ["done", "done"]
                assert all(e["scrubbed"] >= e["at"] for e in log)
        finally:
            engine.close()
        for gone in (b"QZXU0MARK", b"QZXU1MARK"):
            assert [p.name for p in disk.iterdir() if gone in p.read_bytes()] == []
        assert any(b"QZXU2MARK" in p.read_bytes() for p in disk.iterdir())


def test_a_committed_retract_or_clear_is_reported_when_its_files_cannot_go(
    tmp_path: Path,
) -> None:
    with _tmpfs(tmp_path / "artifacts", "8m") as folder, memci.Engine.open(
            tmp_path / "memci.db", artifacts_dir=folder, workers=0) as engine:
        key = KeyStore(engine.store).create("acme")[1]
        s = engine.session("s", user="alice", tenant="acme")
        for i in range(3):
            call = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "cat",
                                                                 "arguments": "{}"}}]}
            s.add_many([call, {"role": "tool", "tool_call_id": f"c{i}",
                               "content": f"output {i}\n" + "line of output\n" * 6000}])
        files = sorted(p for p in folder.rglob("*.txt"))
        assert len(files) == 3
        _remount(folder, "ro")  # the files of deleted outputs cannot be removed now
        try:
            assert [m.seq for m in s.retract(1)] == [1, 2]
            with TestClient(create_app(engine, ServerConfig())) as client:
                client.headers["Authorization"] = f"Bearer {key}"
                answer = client.delete("/v1/sessions/s/messages/last")
                assert answer.status_code == 200, answer.text
                assert [m["seq"] for m in answer.json()["removed"]] == [6]
            assert s.clear() == 3
            assert s.count() == 0
            assert [e.scrubbed for e in engine.erasures()] == [None, None, None]
            assert sorted(p for p in folder.rglob("*.txt")) == files
        finally:
            _remount(folder, "rw")
        assert engine.scrub() is True  # the sweep takes the files no row names
        assert list(folder.rglob("*.txt")) == []
        assert all(e.scrubbed is not None for e in engine.erasures())


FILE_LIMIT = textwrap.dedent("""
    import resource, signal, sys
    import memci
    db, what = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    eng = memci.Engine.open(db)
    s = eng.session("s")
    s.add({"role": "user", "content": "before the limit"})
    s.add({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]})
    size = (eng.store.path.stat().st_size + 200_000) if what == "db" else 100_000
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    output = "".join(f"line {i} of a long output\\n" for i in range(20_000))
    try:
        if what == "db":
            for i in range(100_000):
                s.add({"role": "user", "content": f"{i} " + "x" * 5000})
        else:
            s.add({"role": "tool", "tool_call_id": "c1", "content": output})
        print("NOT REFUSED")
    except memci.StoreError as exc:
        print(type(exc).__name__, "|", exc)
    count = s.count()
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    stored = s.add({"role": "tool", "tool_call_id": "c1", "content": output})  # the retry
    assert s.messages()[-1].content == output and stored.seq == count + 1
    print("RETRY OK", count)
    eng.close()
""")


@pytest.mark.parametrize("what", ["db", "artifact"])
def test_a_file_size_limit_is_a_store_error_and_a_retry_works(tmp_path: Path,
                                                               what: str) -> None:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", FILE_LIMIT, str(tmp_path / "m.db"), what],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    refused, retried = done.stdout.strip().splitlines()[-2:]
    name, message = refused.split(" | ", 1)
    assert name in ("StoreError", "StoreFullError"), refused
    assert str(tmp_path) in message  # names the file (or the artifacts folder)
    assert retried.startswith("RETRY OK")
    with memci.Engine.open(tmp_path / "m.db") as eng:
        log = eng.session("s").messages()
    assert [m.seq for m in log] == list(range(1, len(log) + 1))
    assert log[-1].role == "tool" and log[-1].content.startswith("line 0 of")


# -- a damaged database file ------------------------------------------------------------------


def _real_store(path: Path) -> None:
    with memci.Engine.open(path) as eng:
        s = eng.session("s")
        s.add({"role": "user", "content": "go"})
        s.add({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]})
        s.add({"role": "tool", "tool_call_id": "c1", "content": "file\n" * 100})
        for i in range(60):
            s.add({"role": "user", "content": f"hello {i} " * 40})
            s.add({"role": "assistant", "content": f"reply {i} " * 30})
        s.build()


def _use(path: Path) -> None:
    with memci.Engine.open(path) as eng:
        s = eng.session("s")
        s.messages()
        s.build()
        s.search("hello 5")
        s.add({"role": "user", "content": "one more"})


@pytest.mark.parametrize("damage", ["garbage", "zeroed header", "truncated", "empty pages"])
def test_a_damaged_file_is_a_store_corrupt_error_naming_it(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "memci.db"
    _real_store(path)
    size = path.stat().st_size
    with path.open("r+b") as fh:
        if damage == "garbage":
            fh.write(random.Random(0).randbytes(size))
        elif damage == "zeroed header":
            fh.write(b"\0" * 100)
        elif damage == "truncated":
            fh.truncate(size // 2)
        else:
            fh.seek(4096)
            fh.write(b"\xff" * 8192)
    with pytest.raises(memci.StoreCorruptError) as info:
        _use(path)
    message = str(info.value)
    assert str(path) in message and ".recover" in message and "backup" in message
    assert isinstance(info.value.__cause__, driver_errors())


def test_a_damaged_page_anywhere_is_never_a_raw_sqlite_error(tmp_path: Path) -> None:
    """Every page of a real store, damaged in turn: open, read, build, search and add."""
    original = tmp_path / "memci.db"
    _real_store(original)
    pages = original.stat().st_size // 4096
    raw: list[str] = []
    refused = 0
    for page in range(pages):
        path = tmp_path / f"damaged-{page}.db"
        shutil.copy(original, path)
        with path.open("r+b") as fh:
            start = 100 if page == 0 else 0  # keep the header: damage the page itself
            fh.seek(page * 4096 + start)
            fh.write(random.Random(page).randbytes(4096 - start))
        try:
            _use(path)
        except memci.MemciError:
            refused += 1
        except (sqlite3.Error, *driver_errors()) as exc:
            raw.append(f"page {page}: {type(exc).__name__}: {exc}")
        path.unlink()
    assert raw == []
    assert refused > pages // 2  # most damage is found, and reported as memci's errors
