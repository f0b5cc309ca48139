"""``memci migrate``: progress that tells the truth, and a source no live process writes to.

Real stores (SQLite files, an embedded PostgreSQL) and real processes: a ``memci serve``
holding the source open, idle, is what the copy must notice; stopped, it is gone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import memci
from memci.cli import main
from tests import pg
from tests.multiserver import Server


def _fill(db: str) -> None:
    with memci.Engine.open(db, workers=0) as engine:
        session = engine.session("s1", user="u1")
        session.add({"role": "user", "content": "Run the tests."})
        session.add({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "bash", "arguments": '{"cmd": "pytest"}'}}]})
        session.add({"role": "tool", "tool_call_id": "c1", "content": "1 passed\n" * 50})
        session.add({"role": "assistant", "content": "All green."})


def _migrate(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["migrate", *args])
    return result.exit_code, result.output


def test_progress_counts_each_table_as_it_is(tmp_path: Path) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    _fill(str(source))
    code, output = _migrate("--from", str(source), "--to", str(target))
    assert code == 0, output
    bars = dict(re.findall(r"^(\w+)\s+\S*━+\S*\s+(\d+/\d+)", output, re.MULTILINE))
    assert bars["sessions"] == "1/1" and bars["messages"] == "4/4"
    # empty tables copy nothing: 0/0, never a made-up 1/1
    assert bars["memci_jobs"] == "0/0" and bars["server_api_keys"] == "0/0"
    assert bars["workspace_blobs"] == "1/1"  # the tool output: SQLite to SQLite as well
    assert "every table's count verified" in output


def test_a_source_a_running_server_holds_is_refused_unless_forced(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    _fill(str(source))
    server = Server(str(source), "--no-auth")  # idle, but it holds the store open
    try:
        code, output = _migrate("--from", str(source), "--to", str(tmp_path / "t1.db"))
        assert code == 2, output
        assert "open in another process" in output and "--force" in output
        with memci.Engine.open(tmp_path / "t1.db", workers=0) as empty:
            assert empty.sessions() == []  # nothing copied
        code, output = _migrate("--from", str(source), "--to", str(tmp_path / "t2.db"),
                                "--force")
        assert code == 0, output
        assert "warning" in output and "not copied" in output
    finally:
        server.stop()
    code, output = _migrate("--from", str(source), "--to", str(tmp_path / "t3.db"))
    assert code == 0, output


def test_other_writers_names_a_process_only_while_it_has_the_store_open(
        tmp_path: Path) -> None:
    from memci.store import other_writers

    source = tmp_path / "source.db"
    _fill(str(source))
    assert other_writers(str(source)) == []
    server = Server(str(source), "--no-auth")
    try:
        assert other_writers(str(source)) != []
        assert other_writers(f"sqlite:///{source}") != []
    finally:
        server.stop()
    assert other_writers(str(source)) == []


def test_a_postgresql_source_with_another_client_is_refused(tmp_path: Path) -> None:
    from memci.store import other_writers

    url = pg.fresh_database()
    _fill(url)
    assert other_writers(url) == []
    server = Server(url, "--no-auth")
    try:
        found = other_writers(url)
        assert found and all(line.startswith("pid ") for line in found)
        code, output = _migrate("--from", url, "--to", str(tmp_path / "t.db"))
        assert code == 2 and "open in another process" in output, output
    finally:
        server.stop()
    code, output = _migrate("--from", url, "--to", str(tmp_path / "t.db"))
    assert code == 0, output


@pytest.mark.parametrize("where", ["sqlite:///{tmp}/x.db", "{tmp}/missing.db"])
def test_a_store_nobody_opened_has_no_other_writer(tmp_path: Path, where: str) -> None:
    from memci.store import other_writers

    assert other_writers(where.format(tmp=tmp_path)) == []
