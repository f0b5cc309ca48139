"""Artifacts: content addressing, storage with the message, exact reads, summaries, rendering.

Large outputs: stored once, read in ranges, never read whole for a build, added in
bounded memory. Failures: a file that cannot be written stores nothing; a refused output
leaves no file; a file without a row (a writer killed before its commit) is reused, or
removed by the next sweep (when an engine opens, erases or scrubs), never while its
writer holds it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memci
from memci.errors import InvalidInputError, StoreError
from memci.store import ROW_HEAD_CHARS, SessionRecord, SQLiteStore
from memci.workspace import (
    ArtifactNotFoundError,
    ArtifactStore,
    parse_artifact_ref,
    parse_exit_code,
    pointer,
    render_tool_result,
    slice_lines,
    summarize_tool_output,
)
from memci.workspace._artifacts import _decode_range, _line_range
from memci.workspace._text import count_lines
from tests import pg
from tests.conftest import shared_data

TRACES = ("django__django-11815", "django__django-11964", "pvlib__pvlib-python-1154")


@pytest.fixture
def session(store: SQLiteStore) -> SessionRecord:
    return store.ensure_session("default", "s1", "u1", {})


@pytest.fixture
def arts(store: SQLiteStore, tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(store, tmp_path / "artifacts", inline_max_bytes=1024)


def _blob_rows(store: SQLiteStore) -> list[tuple[str, str | None]]:
    with store.read() as db:
        return [(str(r[0]), r[1]) for r in db.execute(
            "SELECT id, content FROM workspace_blobs ORDER BY id")]


# -- content addressing and storage ------------------------------------------------------


def test_identical_output_stored_once_and_linked_to_each_call(
    arts: ArtifactStore, store: SQLiteStore, session: SessionRecord
) -> None:
    text = "<returncode>0</returncode>\n<output>\nok\n</output>\n"
    a = arts.put(text, session=session, tool_name="bash", call_id="c1",
                 arguments='{"command": "true"}')
    b = arts.put(text, session=session, tool_name="bash", call_id="c2",
                 arguments='{"command": "true"}', owner="dog")
    assert a.id == b.id == hashlib.sha256(text.encode()).hexdigest()[:12]
    assert a.seq != b.seq
    assert len(_blob_rows(store)) == 1
    assert [x.call_id for x in arts.calls(a.id)] == ["c1", "c2"]
    found = arts.for_call(session, "c2")
    assert found is not None and found.owner == "dog" and found.id == a.id
    assert arts.for_call(session, "nope") is None
    other = arts.put("different", session=session, tool_name="bash", call_id="c3")
    assert other.id != a.id
    assert len(_blob_rows(store)) == 2
    assert [x.call_id for x in arts.for_session(session)] == ["c1", "c2", "c3"]


def test_metadata_is_kept(arts: ArtifactStore, session: SessionRecord) -> None:
    a = arts.put("exit code 3\nboom", session=session, tool_name="sh", call_id="k",
                 arguments={"command": "boom"}, owner="main", is_error=True)
    got = arts.get(a.id)
    assert got.tool_name == "sh" and got.call_id == "k" and got.is_error
    assert json.loads(got.arguments or "") == {"command": "boom"}
    assert got.exit_code == 3
    assert got.session_id == session.id
    assert got.created_at.tzinfo is not None
    assert got.pointer == f"artifact:{a.id}" == pointer(a.id)


def test_large_output_goes_to_a_file_small_one_inline(
    arts: ArtifactStore, store: SQLiteStore, session: SessionRecord, tmp_path: Path
) -> None:
    small = arts.put("a" * 1024, session=session, tool_name="t", call_id="1")
    large_text = "长输出 line\n" * 400
    large = arts.put(large_text, session=session, tool_name="t", call_id="2")
    assert small.stored == "inline" and large.stored == "file"
    rows = dict(_blob_rows(store))
    assert rows[small.id] == "a" * 1024
    assert rows[large.id] is None
    path = tmp_path / "artifacts" / large.id[:2] / f"{large.id}.txt"
    assert path.read_bytes() == large_text.encode("utf-8")
    assert not list((tmp_path / "artifacts").rglob("*.tmp"))
    assert arts.read(large.id) == large_text
    assert large.size == len(large_text.encode()) and large.chars == len(large_text)
    assert large.lines == 400


def test_survives_reopening_the_store(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    sess = store.ensure_session("t", "s", None, {})
    arts = ArtifactStore(store, tmp_path / "files", inline_max_bytes=10)
    a = arts.put("0123456789 and more", session=sess, tool_name="t", call_id="1")
    store.close()
    store2 = SQLiteStore(tmp_path / "m.db")
    try:
        arts2 = ArtifactStore(store2, tmp_path / "files", inline_max_bytes=10)
        assert arts2.read(a.id, 11) == "and more"
        assert arts2.get(a.id).summary == a.summary
    finally:
        store2.close()


def test_file_write_failure_stores_no_row(store: SQLiteStore, session: SessionRecord,
                                          tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    arts = ArtifactStore(store, blocker, inline_max_bytes=4)
    with pytest.raises(StoreError):
        arts.put("more than four bytes", session=session, tool_name="t", call_id="1")
    assert _blob_rows(store) == []
    assert arts.for_session(session) == []


def test_unknown_or_malformed_id_is_a_typed_error(arts: ArtifactStore) -> None:
    with pytest.raises(ArtifactNotFoundError, match="no artifact"):
        arts.get("0123456789ab")
    with pytest.raises(ArtifactNotFoundError):
        arts.read("artifact:0123456789ab")
    with pytest.raises(ArtifactNotFoundError, match="not an artifact id"):
        arts.get("../../etc/passwd")
    assert issubclass(ArtifactNotFoundError, InvalidInputError)
    assert parse_artifact_ref("artifact:ABCDEF012345") == "abcdef012345"
    assert not arts.exists("0123456789ab")


def test_surrogates_are_refused(arts: ArtifactStore, session: SessionRecord) -> None:
    with pytest.raises(InvalidInputError):
        arts.put("bad \ud800", session=session, tool_name="t", call_id="1")


# -- exact reads -------------------------------------------------------------------------

MIXED = "第一行：错误\r\nsecond line 😀\n\n第四行 tab\there\nlast line without newline"


@pytest.mark.parametrize("inline_max", [0, 10_000])
def test_reads_are_exact_with_offset_length_and_lines(
    store: SQLiteStore, session: SessionRecord, tmp_path: Path, inline_max: int
) -> None:
    arts = ArtifactStore(store, tmp_path / "a", inline_max_bytes=inline_max)
    a = arts.put(MIXED, session=session, tool_name="t", call_id="x")
    assert arts.read(a.id) == MIXED
    assert arts.read(a.id, 3, 5) == MIXED[3:8]
    assert arts.read(a.id, 0, 0) == ""
    assert arts.read(a.id, len(MIXED) + 5, 3) == ""
    lines = MIXED.split("\n")
    assert arts.read_lines(a.id, 1, 1) == lines[0] + "\n"
    assert arts.read_lines(a.id, 2, 2) == lines[1] + "\n" + lines[2] + "\n"
    assert arts.read_lines(a.id, 5, 10) == lines[4]
    assert arts.read_lines(a.id, 6, 1) == ""
    assert arts.read_lines(a.id, 4) == "\n".join(lines[3:])
    assert a.lines == 5
    with pytest.raises(InvalidInputError):
        arts.read(a.id, -1)
    with pytest.raises(InvalidInputError):
        arts.read_lines(a.id, 0, 1)


@settings(max_examples=60, deadline=None)
@given(text=st.text(min_size=0, max_size=300), offset=st.integers(0, 320),
       length=st.integers(0, 320))
def test_read_matches_python_slicing(tmp_path_factory: pytest.TempPathFactory, text: str,
                                     offset: int, length: int) -> None:
    text = text.encode("utf-8", "replace").decode("utf-8")
    folder = tmp_path_factory.mktemp("h")
    store = SQLiteStore(folder / "m.db")
    try:
        sess = store.ensure_session("t", "s", None, {})
        arts = ArtifactStore(store, folder / "a", inline_max_bytes=50)
        a = arts.put(text, session=sess, tool_name="t", call_id="1")
        assert arts.read(a.id, offset, length) == text[offset:offset + length]
        assert a.chars == len(text)
    finally:
        store.close()


# -- exit codes and summaries ------------------------------------------------------------


@pytest.mark.parametrize(("text", "code"), [
    ("<returncode>2</returncode>\n<output>\nx\n</output>", 2),
    ("<returncode>-9</returncode>", -9),
    ("exit code 1\nTraceback ...", 1),
    ("some output\nExit status: 127", 127),
    ("done\nreturncode=0", 0),
    ("Process finished with exit code 3", 3),
    ("[Command finished with exit code 0]", 0),
    ("exited with code 4", 4),
    ("执行完毕\n退出码：5", 5),
    ("plain output with no code", None),
    ("l1\nl2\nl3\nthe docs mention exit code 7 here\nl5\nl6\nl7\nl8", None),
])
def test_exit_code_parsing(text: str, code: int | None) -> None:
    assert parse_exit_code(text) == code


def _trace_tool_outputs() -> list[tuple[str, str, str | None]]:
    out = []
    for name in TRACES:
        data = json.loads(shared_data("traces", f"{name}.traj.json").read_text())
        args = {}
        for m in data["messages"]:
            for call in m.get("tool_calls") or []:
                args[call["id"]] = call["function"]["arguments"]
        for m in data["messages"]:
            if m["role"] == "tool":
                out.append((m["content"], m["tool_call_id"], args.get(m["tool_call_id"])))
    return out


def test_summaries_of_real_tool_outputs() -> None:
    outputs = _trace_tool_outputs()
    assert len(outputs) > 200
    tracebacks = 0
    for content, _, arguments in outputs:
        lines = summarize_tool_output(content, tool_name="bash", arguments=arguments)
        assert 1 <= len(lines) <= 6
        assert all(line and "\n" not in line and len(line) <= 200 for line in lines)
        code = int(content.split("<returncode>")[1].split("<")[0])
        assert lines[0].startswith(f"exit code {code}")
        if "Traceback (most recent call last)" in content:
            tail = content[content.rfind("Traceback (most recent call last)"):]
            exception = next(ln for ln in tail.split("\n")[1:]
                             if re.match(r"(?:[a-z_]\w*\.)*[A-Z]\w*(:|$)", ln))
            error_line = next(ln for ln in lines if ln.startswith("error: "))
            assert exception.strip()[:60] in error_line
            tracebacks += 1
        assert summarize_tool_output(content, tool_name="bash", arguments=arguments) == lines
    assert tracebacks >= 5


def test_summaries_are_fast() -> None:
    content = "\n".join(
        f"src/pkg/module_{i}.py:{i}: something happened 错误：文件 {i}" if i % 25 == 0
        else f"ordinary output line number {i} with some words in it" for i in range(200))
    content = (content * 2)[:10 * 1024]
    best = min(_timed(content) for _ in range(15))
    # bounded work per call (10x slack for a loaded machine); figures: bench_summaries.py
    assert best < 0.01, f"summary of 10 KB took {best * 1000:.2f} ms"


def _timed(content: str) -> float:
    start = time.perf_counter()
    summarize_tool_output(content, tool_name="bash")
    return time.perf_counter() - start


def test_summary_pytest_failure() -> None:
    out = "\n".join([
        "============================= test session starts ==============================",
        "collected 12 items", "", "tests/test_a.py ..F.........", "",
        "=================================== FAILURES ===================================",
        "E       AssertionError: assert 1 == 2", "",
        "FAILED tests/test_a.py::test_three - AssertionError: assert 1 == 2",
        "========================= 1 failed, 11 passed in 0.12s =========================",
    ])
    lines = summarize_tool_output(out, tool_name="bash")
    assert lines[0] == "10 lines, 626 chars" or lines[0].endswith("chars")
    assert "tests: 1 failed, 11 passed" in lines
    error = next(ln for ln in lines if ln.startswith("error:"))
    assert "FAILED tests/test_a.py::test_three" in error
    assert any(ln.startswith("paths:") and "tests/test_a.py" in ln for ln in lines)


def test_summary_unittest_and_grep() -> None:
    unit = "...\n----------------------------------------------------------------------\n" \
           "Ran 3 tests in 0.001s\n\nFAILED (failures=1)"
    assert "tests: 3 run, FAILED (failures=1)" in summarize_tool_output(unit)
    hits = "src/a.py:3:def main():\nsrc/b.py:9:    main()\nsrc/b.py:12:main()\n"
    lines = summarize_tool_output(hits, tool_name="bash",
                                  arguments='{"command": "grep -rn main src"}')
    assert "matches: 3 lines in 2 files" in lines
    assert summarize_tool_output("", tool_name="grep", arguments={"command": "grep x"}) == [
        "no output"]


def test_summary_is_cjk_aware() -> None:
    out = ("开始处理…\n————————\n读取配置：config.yaml\n错误：找不到文件 data/输入.csv\n"
           "处理失败，退出\n")
    lines = summarize_tool_output(out)
    assert 1 <= len(lines) <= 6
    error = next(ln for ln in lines if ln.startswith("error:"))
    assert "处理失败" in error or "错误：找不到文件" in error
    assert lines[[ln.split(":")[0] for ln in lines].index("first")] == "first: 开始处理…"
    assert any("config.yaml" in ln for ln in lines if ln.startswith("paths:"))


def test_summary_lines_dedupe_paths_and_cut_long_lines() -> None:
    out = ("error: x in /a/b/c.py\n" * 3) + "y" * 5000 + "\n/a/b/c.py /a/b/c.py ./d.py\n"
    lines = summarize_tool_output(out)
    paths = next(ln for ln in lines if ln.startswith("paths:"))
    assert paths.count("/a/b/c.py") == 1 and "./d.py" in paths
    assert all(len(ln) <= 200 for ln in lines)


def test_summarizer_seam_is_used_and_clamped(store: SQLiteStore, session: SessionRecord,
                                             tmp_path: Path) -> None:
    def fancy(content: str, *, tool_name: str | None = None,
              arguments: object = None) -> list[str]:
        return [f"line {i}" for i in range(10)]

    arts = ArtifactStore(store, tmp_path / "a", summarize=fancy)  # type: ignore[arg-type]
    a = arts.put("x", session=session, tool_name="t", call_id="1")
    assert a.summary == tuple(f"line {i}" for i in range(6))
    b = arts.set_summary(a, ["an LLM summary"])
    assert b.summary == ("an LLM summary",)
    assert arts.get(a.id).summary == ("an LLM summary",)


# -- rendering ---------------------------------------------------------------------------


def test_render_tool_result_head_at_line_boundary(arts: ArtifactStore,
                                                  session: SessionRecord) -> None:
    text = "".join(f"line {i:03d} 第{i}行\n" for i in range(1, 101))
    a = arts.put(text, session=session, tool_name="bash", call_id="c9")
    shown = arts.render_tool_result(a, head_chars=100)
    assert shown.startswith(f"[tool result · bash · call c9 · artifact:{a.id}]")
    for line in a.summary:
        assert line in shown
    head = shown.split("---\n", 1)[1].split("\n--- cut")[0]
    assert text.startswith(head + "\n")
    assert len(head) <= 100
    assert "artifact_get" in shown and f"artifact:{a.id}" in shown
    assert head.count("\n") == 6  # 7 whole lines of 13 characters fit in 100, not 8
    assert "lines 8-100" in shown
    assert f"offset={len(head) + 1}," in shown

    bare = arts.render_tool_result(a.id, head_chars=0)
    assert bare == "\n".join([f"[tool result · bash · call c9 · artifact:{a.id}]", *a.summary])

    whole = arts.render_tool_result(a, head_chars=10_000)
    assert "output (complete)" in whole and "cut" not in whole.split("---")[-1]
    assert render_tool_result(a, head_chars=100, head=text) == shown


def test_render_cuts_mid_line_when_the_first_line_is_too_long(
    arts: ArtifactStore, session: SessionRecord
) -> None:
    a = arts.put("x" * 500 + "\nend\n", session=session, tool_name=None, call_id=None)
    shown = arts.render_tool_result(a, head_chars=50)
    assert "x" * 50 + " …" in shown
    assert "from mid-line" in shown
    assert shown.startswith(f"[tool result · artifact:{a.id}]")


def test_unknown_session_is_refused(arts: ArtifactStore) -> None:
    from memci.errors import UnknownSessionError

    with pytest.raises(UnknownSessionError):
        arts.put("x", session=999, tool_name="t", call_id="1")


# -- stored with the message, or not at all ---------------------------------------------------


def _call(call_id: str, name: str = "run") -> dict[str, object]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}]}


def _output(lines: int, tag: str = "") -> str:
    return "".join(f"{tag}line {i}: compiled src/pkg/module_{i % 7}.py ok\n" for i in range(lines))


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


@pytest.mark.parametrize("batch", [False, True])
def test_an_artifact_file_that_cannot_be_written_stores_nothing_and_the_retry_works(
    engine: memci.Engine, batch: bool
) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "run it"})
    if not batch:
        s.add(_call("c1"))
    output = _output(5000)
    folder = engine.workspace.artifacts.files_dir
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the artifacts folder should be")
    result = {"role": "tool", "tool_call_id": "c1", "content": output}
    attempt = [_call("c1"), result] if batch else [result]
    before = s.count()
    with pytest.raises(memci.StoreError, match="cannot write artifact file") as info:
        s.add_many(attempt)
    assert str(folder) in str(info.value)
    assert s.count() == before  # the message was not stored without its output
    assert [m.role for m in s.messages()] == ["user", *([] if batch else ["assistant"])]
    s.build()  # the session keeps working
    folder.unlink()
    stored = s.add_many(attempt)[-1]  # the retry: no OrphanToolResultError
    assert stored.seq == before + len(attempt)
    assert s.messages()[-1].content == output
    pointer = s.artifacts.get(s.engine.workspace.artifacts.for_call(s.record, "c1").id)
    assert s.call_tool("artifact_get", {"id": pointer.id, "offset": 0, "length": 60}) == \
        output[:60]


def test_a_file_without_a_row_is_reused_then_swept(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "go"})
    arts = engine.workspace.artifacts
    output = _output(5000)
    # Prepared outside a writing() block and never linked: a file no row names, not held.
    arts.prepare(output)
    left = _files(arts.files_dir)
    assert len(left) == 1 and left[0].read_text() == output
    # The same output, now answering a real call, reuses the file.
    s.add(_call("c1"))
    s.add({"role": "tool", "tool_call_id": "c1", "content": output})
    assert _files(arts.files_dir) == left
    assert arts.sweep() == 0  # named by a row now
    # An unnamed file goes at once (no one holds it); a temporary file once it is old.
    arts.prepare(_output(5000, "other "))
    orphan = next(p for p in _files(arts.files_dir) if p not in left)
    crashed = orphan.parent / f".{orphan.stem}.x1y2.tmp"
    crashed.write_text("half a file")
    assert arts.sweep() == 1 and crashed.exists()
    old = time.time() - 7200
    os.utime(crashed, (old, old))
    assert arts.sweep() == 1
    assert _files(arts.files_dir) == left
    assert s.messages()[-1].content == output


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str | None]:
    """A store whose large outputs are files: SQLite's beside it, PostgreSQL's in a folder."""
    if request.param == "sqlite":
        return str(tmp_path / "memci.db"), None
    return pg.fresh_database(), str(tmp_path / "shared-artifacts")


def test_a_refused_tool_output_leaves_no_file(where: tuple[str, str | None]) -> None:
    db, folder = where
    with memci.Engine.open(db, artifacts_dir=folder, workers=0) as engine:
        s = engine.session("s")
        s.add({"role": "user", "content": "go"})
        files = engine.workspace.artifacts.files_dir
        assert files is not None
        # A result for a call never made is refused before its output is written.
        for i in range(20):
            with pytest.raises(memci.OrphanToolResultError):
                s.add({"role": "tool", "tool_call_id": f"nobody{i}",
                       "content": _output(20_000, f"run {i} ")})
        assert _files(files) == []
        # Refused after its file was written (the session was deleted by another engine
        # meanwhile): the file goes with the transaction.
        with memci.Engine.open(db, artifacts_dir=folder, workers=0) as other:
            other.delete_session("s")
        with pytest.raises(memci.UnknownSessionError):
            s.add_many([_call("c1"), {"role": "tool", "tool_call_id": "c1",
                                      "content": _output(20_000, "late ")}])
        assert _files(files) == []


def test_a_deletion_never_removes_a_file_another_writer_holds(
    where: tuple[str, str | None],
) -> None:
    db, folder = where
    output = _output(20_000, "shared ")
    with memci.Engine.open(db, artifacts_dir=folder, workers=0) as engine:
        arts = engine.workspace.artifacts
        first = engine.session("first")
        first.add_many([_call("c1"), {"role": "tool", "tool_call_id": "c1", "content": output}])
        # The deletion of its only link committed; its file is to be removed after.
        removed = engine.store.eraser.delete_session(first.record)
        assert len(removed.files) == 1
        second = engine.session("second")
        second.add(_call("c2"))
        with arts.writing():
            # Another call stores the same output now: its file is there, and held.
            prepared = arts.prepare(output)
            assert arts.remove_files(removed.files) == 0
            with engine.store.atomic():
                linked = arts.link(prepared, session=second.record, call_id="c2")
        assert arts.read(linked.id, 0, 40) == output[:40]
        assert arts.sweep() == 0


KILLED_WRITER = """
import sys, memci
db, folder, mark = sys.argv[1], sys.argv[2] or None, sys.argv[3]
engine = memci.Engine.open(db, artifacts_dir=folder, workers=0)
s = engine.session("s", user="alice")
s.add({"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]})
print("ready", flush=True)
sys.stdin.readline()  # the parent now holds the store's write lock
# Writes and holds the output's file, then waits for the lock to store its row: killed.
s.add({"role": "tool", "tool_call_id": "c1", "content": (mark + " output line\\n") * 20_000})
"""


@contextmanager
def _writers_blocked(db: str) -> Iterator[None]:
    """Hold what an append of session "s" must take: SQLite's write lock, or the row lock."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as conn:
            conn.execute("SELECT 1 FROM sessions WHERE name = 's' FOR UPDATE")
            yield
            conn.rollback()
        return
    from memci.store.sqlite._driver import connect

    lock = connect(Path(db), isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        lock.execute("ROLLBACK")
        lock.close()


@pytest.mark.parametrize("after", ["open", "erase", "scrub"])
def test_a_file_left_by_a_killed_writer_goes_with_the_next_sweep(
    where: tuple[str, str | None], after: str, tmp_path: Path,
) -> None:
    db, folder = where
    mark = "QZXKILLED"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")
           + os.pathsep + os.environ.get("PYTHONPATH", "")}
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, db, folder or "", mark],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "ready"
        with memci.Engine.open(db, artifacts_dir=folder, workers=0) as engine, \
                memci.Engine.open(db, artifacts_dir=folder, workers=0) as third:
            files = engine.workspace.artifacts.files_dir
            assert files is not None
            with _writers_blocked(db):
                child.stdin.write("go\n")
                child.stdin.flush()
                deadline = time.monotonic() + 60
                while not [p for p in _files(files) if p.suffix == ".txt"]:
                    assert time.monotonic() < deadline and child.poll() is None
                    time.sleep(0.05)
                # Held by its writer, whose row may commit yet: no sweep takes it.
                assert third.workspace.artifacts.sweep() == 0
                assert len(_files(files)) == 1
                child.send_signal(signal.SIGKILL)
                child.wait(timeout=60)
            assert engine.session("s").count() == 1  # the row never committed
            if after == "open":
                memci.Engine.open(db, artifacts_dir=folder, workers=0).close()
            elif after == "erase":
                engine.erase_user("alice")
            else:
                engine.scrub()
            assert _files(files) == []
    finally:
        child.kill()
        child.communicate(timeout=60)  # and closes its pipes


# -- large outputs: stored once, read in ranges, never whole for a build -----------------------


def _database_bytes(engine: memci.Engine) -> int:
    with engine.store.read() as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in engine.store.path.parent.glob("memci.db*"))


def test_a_large_output_is_stored_once(engine: memci.Engine, tmp_path: Path) -> None:
    s = engine.session("s", max_message_bytes=64 * 1024 * 1024)
    s.add({"role": "user", "content": "build the project"})
    s.add(_call("c1", "make"))
    output = _output(40_000)  # about 2 MB
    before = _database_bytes(engine)
    stored = s.add({"role": "tool", "tool_call_id": "c1", "content": output})
    assert stored.content == output
    with engine.store.read() as db:
        parts, sha = db.execute("SELECT parts, output_sha256 FROM messages WHERE seq = ?",
                                (stored.seq,)).fetchone()
    assert len(parts) < 2 * ROW_HEAD_CHARS  # the head only (escaped as JSON)
    assert sha == hashlib.sha256(output.encode()).hexdigest()
    files = _files(engine.workspace.artifacts.files_dir)
    assert [f.read_text() for f in files] == [output]
    assert _database_bytes(engine) - before < len(output) // 10
    # Whole wherever the log is read: messages, export, search hits point to it, reopen.
    assert s.messages()[-1].content == output
    out = io.StringIO()
    s.export_jsonl(out)
    assert json.loads(out.getvalue().splitlines()[-1])["parts"][0]["content"] == output
    assert s.search("module_3", k=3)
    engine.close()
    with memci.Engine.open(engine.store.path) as again:
        assert again.session("s").messages()[-1].content == output
        assert again.session("s").build().messages


def test_a_build_never_reads_a_large_output_whole(engine: memci.Engine) -> None:
    s = engine.session("s", max_message_bytes=64 * 1024 * 1024)
    s.add({"role": "user", "content": "show me the log"})
    s.add(_call("c1", "cat"))
    output = _output(200_000)  # about 10 MB
    s.add({"role": "tool", "tool_call_id": "c1", "content": output})
    for recipe in ("tool_loop", "chat"):
        tracemalloc.start()
        ctx = s.build(recipe=recipe)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < len(output) // 10, (recipe, peak)
        tool = next(m for m in ctx.messages if m.role == "tool")
        assert "artifact:" in tool.content and len(tool.content) < 20_000
    s.add({"role": "assistant", "content": "done"})
    s.add({"role": "user", "content": "and now?"})
    tracemalloc.start()
    s.build()
    assert tracemalloc.get_traced_memory()[1] < len(output) // 10
    tracemalloc.stop()


def test_adding_a_large_output_takes_bounded_memory(engine: memci.Engine) -> None:
    s = engine.session("s", max_message_bytes=64 * 1024 * 1024)
    s.add({"role": "user", "content": "go"})
    s.add(_call("c1", "cat"))
    output = _output(80_000, "路径 ")  # about 4 MB, not ASCII
    size = len(output.encode())
    # Storing it: hashed, summarized and written a block at a time, beside the output.
    tracemalloc.start()
    engine.workspace.artifacts.put(output, session=s.record, tool_name="cat", call_id="x")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < size // 2, peak / size
    # Adding it: the same, plus the message's own checks (before: twelve times its size).
    tracemalloc.start()
    s.add({"role": "tool", "tool_call_id": "c1", "content": output})
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 * size, peak / size


@pytest.mark.parametrize("text", [
    "".join(f"line {i}: ascii only\n" for i in range(100_000)),
    "".join(f"第 {i} 行：中文 😀\n" for i in range(80_000)),
])
def test_range_reads_of_a_large_file_are_exact(store: SQLiteStore, session: SessionRecord,
                                               tmp_path: Path, text: str) -> None:
    arts = ArtifactStore(store, tmp_path / "big", inline_max_bytes=1024)
    a = arts.put(text, session=session, tool_name="cat", call_id="1")
    assert a.stored == "file" and a.size > 1024 * 1024  # many chunks of the file
    for offset, length in ((0, 100), (1, 5), (len(text) // 2, 3000), (len(text) - 7, 100),
                           (len(text), 5), (len(text) + 10, 5)):
        assert arts.read(a.id, offset, length) == text[offset:offset + length]
    assert arts.read(a.id, len(text) - 50) == text[-50:]
    for start, count in ((1, 3), (1000, 10), (79_999, 5), (a.lines, 1), (a.lines + 1, 1)):
        assert arts.read_lines(a.id, start, count) == slice_lines(text, start, count)


@settings(max_examples=80, deadline=None)
@given(text=st.text(max_size=200), offset=st.integers(0, 220), length=st.integers(0, 220),
       start=st.integers(1, 30), count=st.one_of(st.none(), st.integers(1, 30)),
       chunk=st.integers(1, 9))
def test_streamed_reads_match_slicing(text: str, offset: int, length: int, start: int,
                                      count: int | None, chunk: int) -> None:
    text = text.encode("utf-8", "replace").decode("utf-8")
    data = text.encode()
    assert _decode_range(io.BytesIO(data), offset, length, chunk=chunk) == \
        text[offset:offset + length]
    assert _line_range(io.BytesIO(data), start, count, chunk=chunk) == \
        slice_lines(text, start, count)


def test_the_summary_of_a_large_output_sees_all_of_it() -> None:
    body = "".join(f"step {i}: ok\n" for i in range(100_000))
    text = ("starting the build\n" + body + "ERROR: bad key in src/late/config.yaml\n" + body
            + "----\nfinished in 12 s\n\n")
    lines = summarize_tool_output(text)
    assert lines[0] == f"{count_lines(text):,} lines, {len(text):,} chars"
    assert "error: ERROR: bad key in src/late/config.yaml" in lines
    assert "first: starting the build" in lines and "last: finished in 12 s" in lines
    assert "paths: src/late/config.yaml" in lines
    grep = summarize_tool_output("".join(f"src/a{i}.py:{i}: hit\n" for i in range(30_000)),
                                 tool_name="grep")
    assert "matches: 30000 lines in 30000 files" in grep


def test_a_huge_output_is_counted_from_samples(engine: memci.Engine) -> None:
    from memci.context._tool_views import COUNT_SAMPLES_OVER, count_tool_result

    s = engine.session("s")
    for text in (_output(60_000, "路径 "), _output(60_000) + "tail words " * 50_000):
        message = memci.Message.tool("c1", text)
        assert len(text) > COUNT_SAMPLES_OVER
        exact = s.tokenizer.count_message(message)
        assert abs(count_tool_result(s.tokenizer, message) - exact) < exact * 0.03
    small = memci.Message.tool("c1", _output(100))
    assert count_tool_result(s.tokenizer, small) == s.tokenizer.count_message(small)


def test_a_lost_artifact_file_is_a_store_error_naming_it(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "go"})
    s.add(_call("c1"))
    s.add({"role": "tool", "tool_call_id": "c1", "content": _output(5000)})
    (path,) = _files(engine.workspace.artifacts.files_dir)
    path.unlink()
    with pytest.raises(memci.StoreError, match="restore the folder") as info:
        s.messages()
    assert str(path) in str(info.value)
    with pytest.raises(memci.StoreError, match="restore the folder"):
        s.build(recipe="tool_loop")  # it would show the head of that file
