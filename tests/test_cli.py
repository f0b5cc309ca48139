"""The memci command: replay, export / import, help on every command, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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


# -- honest figures: the baseline is the conversation's own, caching on both sides --------


def _trace_with_tools(tmp_path: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    """The example trace as a request log with the agent's own bash tool, and without."""
    messages = json.loads(EXAMPLE_TRACE.read_text())["messages"]
    bash = {"type": "function", "function": {
        "name": "bash", "description": "Run a bash command in the repository and return "
        "its exit code and output.", "parameters": {
            "type": "object", "properties": {"command": {"type": "string",
                                                         "description": "The command."}},
            "required": ["command"]}}}
    # One file name for both: memci's context names the session, which is named after it.
    (tmp_path / "tools").mkdir()
    (tmp_path / "plain").mkdir()
    with_tools = tmp_path / "tools" / "trace.json"
    with_tools.write_text(json.dumps({"model": "gpt-4o", "tools": [bash],
                                      "messages": messages}))
    without = tmp_path / "plain" / "trace.json"
    without.write_text(json.dumps({"messages": messages}))
    return with_tools, without, [bash]


def _rows(path: Path, *args: str) -> dict[str, Any]:
    result = _run("replay", str(path), "--json", *args)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


@pytest.mark.parametrize("trace", ["example", "with_tools"])
def test_baseline_is_the_same_whatever_the_strategy_or_budget(
    tmp_path: Path, trace: str,
) -> None:
    path = EXAMPLE_TRACE if trace == "example" else _trace_with_tools(tmp_path)[0]
    runs = [_rows(path, *args) for args in (
        ("--budget", "600"), ("--budget", "4000"), ("--budget", "1500", "--strategy", "oldest"),
        ("--strategy", "sliding_window", "--max-messages", "6"),
        ("--budget", "2000", "--strategy", "summarize"))]
    baselines = [[r["full_tokens"] for r in run["requests"]] for run in runs]
    assert all(b == baselines[0] for b in baselines), baselines
    sent = [[r["memci_tokens"] for r in run["requests"]] for run in runs]
    assert len({tuple(s) for s in sent}) > 1  # the strategies did differ
    for run in runs:
        totals = run["totals"]
        assert totals["saved_tokens"] == totals["full_tokens"] - totals["memci_tokens"]


def test_baseline_is_the_conversations_own_messages_and_tools(tmp_path: Path) -> None:
    from memci.messages import coerce
    from memci.replay import tool_tokens
    from memci.tokens import available, get_tokenizer

    with_tools, _, tools = _trace_with_tools(tmp_path)
    messages = json.loads(EXAMPLE_TRACE.read_text())["messages"]
    for model, encoding in (("gpt-4-turbo", "cl100k_base"), (None, "estimate")):
        if not available(encoding):  # no tiktoken, or its encoding is not on disk here
            continue
        tok = get_tokenizer(encoding)
        data = _rows(with_tools, "--budget", "1500", *(("--model", model) if model else ()))
        schemas = tool_tokens(tok, tools)
        assert data["tools_tokens"] == schemas > 0
        for row in data["requests"]:
            own = sum(tok.count_message(m) for raw in messages[:row["seq"] - 1]
                      for m in coerce(raw))
            assert row["full_tokens"] == own + schemas + 3  # + the reply's header
    # memci's own tool schemas (~300 tokens) are memci's cost, not the agent's; while the
    # whole history fits, memci offers none, so the first request costs what it holds.
    first = _rows(EXAMPLE_TRACE, "--budget", "4000")["requests"][0]
    assert first["memci_tokens"] <= first["full_tokens"]


def test_the_agents_tools_count_on_both_sides(tmp_path: Path) -> None:
    with_tools, without, _ = _trace_with_tools(tmp_path)
    a, b = _rows(with_tools, "--budget", "1500"), _rows(without, "--budget", "1500")
    extra = a["tools_tokens"]
    assert b["tools_tokens"] == 0 and isinstance(extra, int) and extra > 0
    for x, y in zip(a["requests"], b["requests"], strict=True):
        assert x["full_tokens"] - y["full_tokens"] == extra
        assert x["memci_tokens"] - y["memci_tokens"] == extra
    assert a["totals"]["saved_tokens"] == b["totals"]["saved_tokens"]


def test_cost_with_prompt_caching_on_both_sides(tmp_path: Path) -> None:
    with_tools, _, _ = _trace_with_tools(tmp_path)
    data = _rows(with_tools, "--budget", "1500")
    rows, cost = data["requests"], data["cost"]
    assert cost["cached_discount"] == 0.5
    for i, row in enumerate(rows):
        # The full history only grows: all of the previous request is cached.
        previous = rows[i - 1]["full_tokens"] - 3 if i else 0
        assert row["full_cached_tokens"] == previous
        assert row["full_cost_cached"] == row["full_tokens"] - 0.5 * previous
        # memci's cached part is the prefix it repeats (its and the agent's tools first).
        assert 0 <= row["prefix_tokens"] <= row["memci_tokens"]
        assert row["memci_cost_cached"] == row["memci_tokens"] - 0.5 * row["prefix_tokens"]
    assert rows[1]["prefix_tokens"] >= data["tools_tokens"]
    memci, full = cost["memci"], cost["full"]
    assert memci["cost_cached"] == pytest.approx(sum(r["memci_cost_cached"] for r in rows))
    assert full["cost_cached"] == pytest.approx(sum(r["full_cost_cached"] for r in rows))
    assert cost["ratio_cached"] == pytest.approx(memci["cost_cached"] / full["cost_cached"],
                                                 abs=1e-4)
    # The discount is the provider's, or the one given; dollars when a price is given.
    claude = _rows(with_tools, "--budget", "1500", "--model", "claude-sonnet-4-20250514")
    assert claude["cost"]["cached_discount"] == 0.9
    given = _rows(with_tools, "--budget", "1500", "--cached-discount", "0.75",
                  "--price", "2.5")
    assert given["cost"]["cached_discount"] == 0.75
    assert given["cost"]["full"]["usd"] == pytest.approx(
        full["tokens"] * 2.5 / 1e6)
    text = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["replay", str(with_tools), "--budget", "1500", "--price", "2.5"]).output
    assert "cost with cache (token equivalents)" in text and "USD with cache" in text
    assert f"{full['cost_cached']:,.0f}" in text and f"{memci['cost_cached']:,.0f}" in text
    assert "with prompt caching (50% off cached input)" in text


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


@pytest.mark.parametrize("columns", [40, 80, 160])
def test_ids_in_tables_are_never_cut(tmp_path: Path, columns: int) -> None:
    """Whatever the terminal's width, an id a later command needs is printed whole."""
    from memci.server import KeyPolicy, KeyStore

    db = str(tmp_path / "k.db")
    name = "replay:a-rather-long-session-name-for-the-search-table:2"
    with memci.Engine.open(db, workers=0) as engine:
        keys = KeyStore(engine.store)
        made = [keys.create("acme-production-tenant", label="the key of the nightly "
                            "batch jobs on the analytics cluster")[0],
                keys.create("b", policy=KeyPolicy(max_message_bytes=4096))[0]]
        for session in (name, "other"):
            s = engine.session(session, user="u1")
            s.add({"role": "user", "content": "the deploy failed at the migration step"})
        engine.delete_session("other")
    runner = CliRunner(env={"COLUMNS": str(columns)})
    listed = runner.invoke(main, ["keys", "list", "--db", db]).stdout
    for record in made:
        assert record.key_id in listed, listed
    assert "acme-production-tenant" in listed
    found = runner.invoke(main, ["search", name, "migration", "--scope", "user", "--db",
                                 db]).stdout
    assert name in found, found
    erasures = runner.invoke(main, ["erasures", "--db", db]).stdout
    assert "default" in erasures, erasures
    for printed in (listed, found, erasures):  # other cells fold: nothing is cut short
        assert "…" not in printed, printed
