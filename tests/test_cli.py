"""The memci command: replay, export / import, help on every command, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import memci
from memci.cli import main

from .conftest import EXAMPLE_TRACE, ROOT, shared_data


def _run(*args: str) -> click.testing.Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_replay_example_prints_table_and_totals() -> None:
    result = _run("replay", str(EXAMPLE_TRACE), "--budget", "1500")
    assert result.exit_code == 0, result.output
    assert "memci replay" in result.output and "saved" in result.output


def test_replay_json_has_a_row_per_assistant_message() -> None:
    result = _run("replay", str(EXAMPLE_TRACE), "--budget", "1500", "--json")
    assert result.exit_code == 0
    data = json.loads(result.output)
    trace = json.loads(EXAMPLE_TRACE.read_text())["messages"]
    assistants = sum(1 for m in trace if m["role"] == "assistant")
    assert data["totals"]["requests"] == assistants
    for row in data["requests"]:
        assert row["memci_tokens"] <= 1500
        assert row["memci_tokens"] <= row["full_tokens"] or row["full_tokens"] < 1500
    assert data["totals"]["saved_tokens"] == (
        data["totals"]["full_tokens"] - data["totals"]["memci_tokens"])
    assert data["totals"]["saved_tokens"] > 0


def test_replay_real_trace_skips_exit_role() -> None:
    trace = shared_data("traces", "django__django-11815.traj.json")
    result = CliRunner().invoke(main, ["replay", str(trace), "--budget", "8000", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert any("'exit'" in note for note in data["skipped"])
    assert data["totals"]["requests"] > 20


def test_replay_keeps_session_in_db_when_asked(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    assert _run("replay", str(EXAMPLE_TRACE), "--db", str(db), "--json").exit_code == 0
    with memci.Engine.open(db) as eng:
        (record,) = eng.sessions()
        assert eng.session(record.name).count() == 27


def test_replay_bad_file_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"messages": [{"role": "user", "content": "x"}, {"role": "tool", '
                   '"tool_call_id": "zzz", "content": "y"}]}')
    result = CliRunner().invoke(main, ["replay", str(bad)])
    assert result.exit_code == 2
    assert "message 2" in result.output and "zzz" in result.output
    notjson = tmp_path / "notjson.json"
    notjson.write_text("{ nope")
    result = CliRunner().invoke(main, ["replay", str(notjson)])
    assert result.exit_code == 2 and "neither JSON nor JSONL" in result.output


def test_replay_reads_jsonl_and_lists(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(m) for m in msgs))
    (tmp_path / "b.json").write_text(json.dumps(msgs))
    for name in ("a.jsonl", "b.json"):
        data = json.loads(_run("replay", str(tmp_path / name), "--json").output)
        assert data["totals"]["requests"] == 1


def test_export_import_round_trip(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with memci.Engine.open(db) as eng:
        s = eng.session("chat", user="u")
        s.add_many([{"role": "user", "content": "你好"}, {"role": "assistant", "content": "hi"}])
    out = tmp_path / "chat.jsonl"
    assert _run("export", "chat", "--db", db, "-o", str(out)).exit_code == 0
    assert _run("import", str(out), "--as", "copy", "--db", db).exit_code == 0
    with memci.Engine.open(db) as eng:
        assert [m.content for m in eng.session("copy").messages()] == ["你好", "hi"]
    result = CliRunner().invoke(main, ["export", "nope", "--db", db])
    assert result.exit_code == 2


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    found = []
    for name, cmd in group.commands.items():
        found.append((f"{prefix}{name}", cmd))
        if isinstance(cmd, click.Group):
            found += _commands(cmd, f"{prefix}{name} ")
    return found


@pytest.mark.parametrize(("name", "command"), _commands(main))
def test_every_command_has_help_and_docs(name: str, command: click.Command) -> None:
    assert command.help and len(command.help) > 20, f"memci {name} has no help text"
    result = _run(*name.split(), "--help")
    assert result.exit_code == 0 and "Usage:" in result.output
    docs = (ROOT / "docs" / "cli.md").read_text()
    assert re.search(rf"^##+ `memci {re.escape(name)}", docs, re.M), f"memci {name} not in docs"
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"option {param.name} of memci {name} has no help"
