"""``memci mcp`` over stdio, driven by the official MCP SDK's client in a subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="needs memci[mcp]")

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

import memci
import memci.cli
import memci.server

from .test_server import ROOT, subprocess_env


def _command() -> list[str]:
    """``python -m memci mcp`` once memci.cli loads the server commands; else an equivalent."""
    cli_source = Path(memci.cli.__file__).read_text(encoding="utf-8")
    if "_server" in cli_source:
        return ["-m", "memci"]
    return ["-c", "from memci.cli import _server, main; main()"]


def _text(result: types.CallToolResult | MCPError) -> str:
    assert isinstance(result, types.CallToolResult), result
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


async def _session(db: Path, *calls: tuple[str, dict[str, Any]]
                   ) -> tuple[list[str], list[types.CallToolResult | MCPError]]:
    """Each call's result, or the JSON-RPC error it was answered with."""
    params = StdioServerParameters(
        command=sys.executable,
        args=[*_command(), "mcp", "--session", "notes", "--db", str(db), "--user", "u1"],
        env=subprocess_env(), cwd=str(ROOT))
    results: list[types.CallToolResult | MCPError] = []
    async with Client(params, cache=None, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        for name, args in calls:
            try:
                results.append(await client.call_tool(name, args))
            except MCPError as exc:
                results.append(exc)
    return [t.name for t in listed.tools], results


def test_mcp_over_stdio_lists_tools_adds_and_builds(tmp_path: Path) -> None:
    db = tmp_path / "mcp.db"
    names, results = anyio.run(
        _session, db,
        ("add", {"messages": [{"role": "system", "content": "Keep notes."},
                              {"role": "user", "content": "remember: the key is under the mat"}]}),
        ("add", {"role": "assistant", "content": "noted"}),
        ("build", {"format": "anthropic", "budget": 3000}),
        ("recall_page", {"index": 1}),
        ("add", {"messages": [{"role": "wizard", "content": "x"}]}),
        ("no_such_tool", {}),
    )
    assert {"add", "build", "recall_page"} <= set(names)
    added, one, built, recalled, bad, unknown = results
    assert isinstance(added, types.CallToolResult) and not added.is_error
    assert [s["seq"] for s in json.loads(_text(added))["stored"]] == [1, 2]
    assert json.loads(_text(one))["messages"] == 3
    payload = json.loads(_text(built))
    assert payload["format"] == "anthropic" and payload["payload"]["system"] == "Keep notes."
    assert payload["payload"]["messages"][0]["content"] == "remember: the key is under the mat"
    assert payload["stats"]["budget"] == 3000
    assert _text(recalled) and not recalled.is_error  # type: ignore[union-attr]
    assert "wizard" in _text(bad) and bad.is_error  # type: ignore[union-attr]
    # a tool the session does not list: invalid params (MCP 2025-11-25, "Error Handling")
    assert isinstance(unknown, MCPError) and unknown.code == types.INVALID_PARAMS
    assert "no_such_tool" in unknown.message
    with memci.Engine.open(db) as engine:
        session = engine.session("notes")
        assert session.user == "u1"
        assert [m.content for m in session.messages()] == [
            "Keep notes.", "remember: the key is under the mat", "noted"]


def test_mcp_lists_working_state_once_and_still_runs_the_nine(tmp_path: Path) -> None:
    """A client sends every listed schema to its model: the nine go out as one."""
    names, results = anyio.run(
        _session, tmp_path / "w.db",
        ("working_state", {"action": "plan_add", "text": "ship it"}),
        ("plan_add", {"text": "tag it"}),
        ("plan_list", {}),
        ("plan_add", {"text": 5}),  # checked against plan_add's own schema
        ("working_state", {"action": "plan_erase"}))
    assert "working_state" in names
    assert not set(names) & {"pin_add", "pin_remove", "pin_update", "pin_list", "plan_add",
                             "plan_done", "plan_remove", "plan_list", "notebook_add"}
    combined, by_name, listed, bad, unknown_action = results
    assert _text(combined) == "added plan item 1" and _text(by_name) == "added plan item 2"
    assert "ship it" in _text(listed) and "tag it" in _text(listed)
    assert bad.is_error and "text" in _text(bad)  # type: ignore[union-attr]
    assert unknown_action.is_error and "plan_erase" in _text(unknown_action)  # type: ignore[union-attr]


def test_mcp_search_tool(tmp_path: Path) -> None:
    names, (_, found) = anyio.run(
        _session, tmp_path / "s.db",
        ("add", {"messages": [{"role": "user", "content": "my cat is called Mochi"},
                              {"role": "assistant", "content": "cute"}]}),
        ("search", {"query": "cat name", "k": 3}))
    assert "search" in names
    assert "Mochi" in _text(found) and not found.is_error  # type: ignore[union-attr]
    assert json.loads(_text(found))["next_offset"] is None  # all hits fit in one page


_WRONG = {"integer": "abc", "number": "abc", "string": 12345, "boolean": "yes",
          "array": "not a list", "object": 5}


def _breaking(tool: types.Tool) -> list[tuple[str, dict[str, Any]]]:
    """Arguments that break ``tool``'s declared schema, each named by what it breaks."""
    schema = tool.input_schema
    required = {name: _valid(schema["properties"][name]) for name in schema.get("required", ())}
    cases: list[tuple[str, dict[str, Any]]] = []
    if schema.get("additionalProperties") is False:
        cases.append(("zz_unknown", {**required, "zz_unknown": 1}))
    for name, rule in schema["properties"].items():
        kind = rule.get("type")
        if isinstance(kind, str) and kind in _WRONG:
            cases.append((name, {**required, name: _WRONG[kind]}))
        if "maximum" in rule:
            cases.append((name, {**required, name: rule["maximum"] + 1}))
        if "minimum" in rule:
            cases.append((name, {**required, name: rule["minimum"] - 1}))
        if "enum" in rule:
            cases.append((name, {**required, name: "not-one-of-them"}))
    return cases


def _valid(rule: dict[str, Any]) -> Any:
    if "enum" in rule:
        return rule["enum"][0]
    return {"integer": 1, "number": 1, "string": "x", "boolean": True, "array": [],
            "object": {}}[rule["type"]]


def test_every_tool_checks_its_arguments_against_its_declared_schema(tmp_path: Path) -> None:
    async def probe() -> list[tuple[str, str, types.CallToolResult | MCPError]]:
        params = StdioServerParameters(
            command=sys.executable, args=[*_command(), "mcp", "--db", str(tmp_path / "v.db")],
            env=subprocess_env(), cwd=str(ROOT))
        answers: list[tuple[str, str, types.CallToolResult | MCPError]] = []
        async with Client(params, cache=None, read_timeout_seconds=60) as client:
            for tool in (await client.list_tools()).tools:
                for broken, arguments in _breaking(tool):
                    try:
                        answers.append((tool.name, broken, await client.call_tool(
                            tool.name, arguments)))
                    except MCPError as exc:
                        answers.append((tool.name, broken, exc))
        return answers

    answers = anyio.run(probe)
    tools = {name for name, _, _ in answers}
    assert {"add", "build", "search", "recall_page", "search_memory"} <= tools
    for name, broken, answer in answers:
        # a tool error the model can read and act on: never a JSON-RPC error, never code 0
        assert isinstance(answer, types.CallToolResult), (name, broken, answer)
        assert answer.is_error, (name, broken)
        text = _text(answer)
        assert text.startswith(f"error: invalid arguments for {name}:"), text
        assert broken in text, (name, broken, text)
    # the finding itself: search's k
    about_k = " | ".join(_text(a) for n, b, a in answers if (n, b) == ("search", "k"))
    assert "k: 'abc' is not of type 'integer'" in about_k
    assert "k: 101 is greater than the maximum of 100" in about_k
    with memci.Engine.open(tmp_path / "v.db") as engine:  # nothing was stored
        assert all(engine.session(r.name).messages() == [] for r in engine.sessions())


async def _bare(db: Path, *calls: tuple[str, dict[str, Any]]
                ) -> tuple[list[types.Tool], list[types.CallToolResult]]:
    """``memci mcp`` with no --session: only the store and the tenant are given."""
    params = StdioServerParameters(
        command=sys.executable, args=[*_command(), "mcp", "--db", str(db), "--tenant", "t1"],
        env=subprocess_env(), cwd=str(ROOT))
    async with Client(params, cache=None, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        results = [await client.call_tool(name, args) for name, args in calls]
    return listed.tools, results


def test_mcp_over_stdio_starts_without_a_session_and_takes_one_per_call(
    tmp_path: Path
) -> None:
    db = tmp_path / "bare.db"
    tools, results = anyio.run(
        _bare, db,
        ("add", {"role": "user", "content": "into the default session"}),
        ("add", {"messages": [{"role": "user", "content": "about tomatoes"}],
                 "session": "garden"}),
        ("search", {"query": "tomatoes", "session": "garden"}),
        ("search", {"query": "tomatoes"}),
        ("build", {"session": "garden"}),
        ("recall_page", {"index": 1, "session": "garden"}),
        ("add", {"role": "user", "content": "x", "session": ""}),
        ("add", {"role": "user", "content": "x", "session": ["a"]}),
        ("add", {"role": "user", "content": "x", "session": "y" * 201}),
    )
    assert all(t.input_schema["properties"]["session"]["type"] == "string" for t in tools)
    default, garden, found, not_found, built, recalled, *bad = results
    assert not default.is_error and not garden.is_error
    assert "tomatoes" in _text(found) and "tomatoes" not in _text(not_found)
    assert json.loads(_text(built))["payload"]["messages"][-1]["content"] == "about tomatoes"
    assert not recalled.is_error
    for refused in bad:
        assert refused.is_error and "session" in _text(refused)
    with memci.Engine.open(db, workers=0) as engine:
        assert {r.name for r in engine.sessions("t1")} == {
            memci.server.DEFAULT_MCP_SESSION, "garden"}
        assert memci.server.DEFAULT_MCP_SESSION == "default"
        assert [m.content for m in engine.session("default", tenant="t1").messages()] == [
            "into the default session"]
        assert [m.content for m in engine.session("garden", tenant="t1").messages()] == [
            "about tomatoes"]
