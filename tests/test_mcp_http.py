"""MCP over Streamable HTTP at ``/mcp`` of a real ``memci serve``, driven by the official client.

Each test starts ``memci serve`` as a subprocess on a free port of 127.0.0.1 and talks to
it with the MCP SDK's ``Client`` over ``streamable_http_client`` (both the handshake-era
protocol, ``mode="legacy"``, and the SDK's default, ``mode="auto"``), with the API keys of
``memci keys``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="needs memci[mcp]")
pytest.importorskip("fastapi", reason="needs memci[server]")

import httpx2
import mcp_types as types
from fastapi.testclient import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import memci
from memci.server import KeyPolicy, KeyStore, ServerConfig, create_app

from .test_server import ROOT, ServeProcess, auth, subprocess_env

MODES = ["legacy", "auto"]


def _text(result: types.CallToolResult | MCPError) -> str:
    assert isinstance(result, types.CallToolResult), result
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


@asynccontextmanager
async def _client(url: str, key: str | None, *, session: str | None = None,
                  mode: str = "auto", path: str = "/mcp") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if session is not None:
        headers["X-Memci-Session"] = session
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(url + path, http_client=http),
                          mode=mode, read_timeout_seconds=60) as client:
            yield client


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServeProcess, dict[str, str]]]:
    db = tmp_path / "mcp-http.db"
    with memci.Engine.open(db, workers=0) as engine:
        store = KeyStore(engine.store)
        made = {"acme": store.create("acme")[1], "globex": store.create("globex")[1]}
        record, made["revoked"] = store.create("acme")
        store.revoke(record.key_id)
    with ServeProcess(db) as server:
        yield server, made


@pytest.mark.parametrize("mode", MODES)
def test_two_sessions_per_connection_and_per_call(
    served: tuple[ServeProcess, dict[str, str]], mode: str
) -> None:
    server, keys = served

    async def talk() -> tuple[list[types.Tool], list[types.CallToolResult]]:
        async with _client(server.url, keys["acme"], session="s1", mode=mode) as client:
            listed = (await client.list_tools()).tools
            results = [
                await client.call_tool("add", {"messages": [
                    {"role": "system", "content": "Keep notes."},
                    {"role": "user", "content": "the launch code is 4711"}]}),
                await client.call_tool("add", {"role": "user", "session": "s2",
                                               "content": "s2 talks about gardening"}),
                await client.call_tool("build", {"budget": 2000}),
                await client.call_tool("build", {"session": "s2", "format": "anthropic"}),
                await client.call_tool("search", {"query": "launch code"}),
                await client.call_tool("search", {"query": "launch code", "session": "s2"}),
                await client.call_tool("recall_page", {"index": 1, "session": "s2"}),
                await client.call_tool("add", {"role": "user", "content": "x", "session": 7}),
            ]
        return listed, results

    listed, results = anyio.run(talk)
    names = [t.name for t in listed]
    assert {"add", "build", "search", "recall_page", "search_memory"} <= set(names)
    for tool in listed:  # every tool takes the session per call
        assert tool.input_schema["properties"]["session"]["type"] == "string"
    added, added2, built, built2, found, found2, recalled, bad = results
    assert [s["seq"] for s in json.loads(_text(added))["stored"]] == [1, 2]
    assert json.loads(_text(added2))["stored"] == [{"seq": 1, "role": "user"}]
    s1 = json.loads(_text(built))["payload"]["messages"]
    assert s1[-1]["content"] == "the launch code is 4711"
    s2 = json.loads(_text(built2))["payload"]
    assert "system" not in s2 and s2["messages"][-1]["content"] == "s2 talks about gardening"
    assert "4711" in _text(found)
    assert "4711" not in _text(found2)
    assert not recalled.is_error
    assert bad.is_error and "session: 7 is not of type 'string'" in _text(bad)
    with memci.Engine.open(server.db, workers=0) as engine:
        assert [m.content for m in engine.session("s1", tenant="acme").messages()] == [
            "Keep notes.", "the launch code is 4711"]
        assert [m.content for m in engine.session("s2", tenant="acme").messages()] == [
            "s2 talks about gardening"]
        assert {r.name for r in engine.sessions("acme")} == {"s1", "s2"}


def test_without_a_session_calls_go_to_default(
    served: tuple[ServeProcess, dict[str, str]]
) -> None:
    server, keys = served

    async def talk() -> list[types.CallToolResult]:
        async with _client(server.url, keys["globex"]) as client:
            first = await client.call_tool("add", {"role": "user", "content": "to default"})
        # the connection's session and user in the URL, for clients that only take one
        async with _client(server.url, keys["globex"],
                           path="/mcp?session=from-url&user=ann") as client:
            second = await client.call_tool("add", {"role": "user", "content": "to from-url"})
        return [first, second]

    assert not any(r.is_error for r in anyio.run(talk))
    with memci.Engine.open(server.db, workers=0) as engine:
        assert [r.name for r in engine.sessions("globex")] == ["default", "from-url"]
        assert engine.session("default", tenant="globex").messages()[0].content == "to default"
        from_url = engine.session("from-url", tenant="globex")
        assert from_url.user == "ann"
        assert from_url.messages()[0].content == "to from-url"


def _refused_headers(case: str, keys: dict[str, str]) -> dict[str, str]:
    return {
        "none": {},
        "unknown": auth("mk_not-a-key"),
        "revoked": auth(keys["revoked"]),
        "not a key": auth("plainly wrong"),
        "empty bearer": {"Authorization": "Bearer"},
        "basic": {"Authorization": "Basic YWNtZTpwdw=="},
        "two keys": {**auth(keys["acme"]), "x-api-key": keys["globex"]},
        "revoked x-api-key": {"x-api-key": keys["revoked"]},
        # a credential the server cannot read is refused, not passed over for another
        "basic beside a key": {"Authorization": "Basic YWNtZTpwdw==",
                               "x-api-key": keys["acme"]},
        "empty bearer beside a key": {"Authorization": "Bearer", "x-api-key": keys["acme"]},
    }[case]


@pytest.mark.parametrize("case", ["none", "unknown", "revoked", "not a key", "empty bearer",
                                  "basic", "two keys", "revoked x-api-key",
                                  "basic beside a key", "empty bearer beside a key"])
def test_a_missing_bad_or_revoked_key_is_refused(
    served: tuple[ServeProcess, dict[str, str]], case: str
) -> None:
    server, keys = served
    sent = _refused_headers(case, keys)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=server.url, timeout=10) as http:
        answers = [http.post("/mcp", json=initialize, headers={**accept, **sent}),
                   http.get("/mcp", headers={"Accept": "text/event-stream", **sent}),
                   http.delete("/mcp", headers={"mcp-session-id": "x" * 32, **sent})]
    for r in answers:
        assert r.status_code == 401, (r.request.method, r.text)
        assert r.headers["www-authenticate"].startswith('Bearer realm="memci"')
        assert r.json()["error"]["code"] == "unauthorized"

    async def connect() -> None:
        async with httpx2.AsyncClient(headers=sent, timeout=30) as http, Client(
                streamable_http_client(f"{server.url}/mcp", http_client=http)) as client:
            await client.list_tools()

    with pytest.raises(BaseException) as refused:  # the SDK raises an ExceptionGroup
        anyio.run(connect)
    assert "MCPError" in repr(refused.value)
    with memci.Engine.open(server.db, workers=0) as engine:
        assert engine.sessions() == []


@pytest.mark.parametrize("mode", MODES)
def test_a_tenant_cannot_reach_another_tenants_session(
    served: tuple[ServeProcess, dict[str, str]], mode: str
) -> None:
    server, keys = served

    async def talk() -> tuple[types.CallToolResult, ...]:
        async with _client(server.url, keys["acme"], session="s1", mode=mode) as acme:
            await acme.call_tool("add", {"role": "user", "content": "acme secret quokka"})
        async with _client(server.url, keys["globex"], session="s1", mode=mode) as globex:
            return (await globex.call_tool("search", {"query": "acme secret quokka"}),
                    await globex.call_tool("search", {"query": "secret", "session": "s1"}),
                    await globex.call_tool("build", {}),
                    await globex.call_tool("add", {"role": "user", "content": "globex here"}))

    found, found2, built, added = anyio.run(talk)
    # A word, not a number: a build's stats hold floats whose digits may spell any number.
    assert "quokka" not in _text(found) and "quokka" not in _text(found2)
    assert "quokka" not in _text(built)
    assert json.loads(_text(added))["stored"] == [{"seq": 1, "role": "user"}]
    with memci.Engine.open(server.db, workers=0) as engine:
        assert [m.content for m in engine.session("s1", tenant="acme").messages()] == [
            "acme secret quokka"]
        assert [m.content for m in engine.session("s1", tenant="globex").messages()] == [
            "globex here"]


def test_an_mcp_connection_belongs_to_the_key_that_opened_it(
    served: tuple[ServeProcess, dict[str, str]]
) -> None:
    server, keys = served
    base = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=server.url, timeout=10) as http:
        opened = http.post("/mcp", headers={**base, **auth(keys["acme"])}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}})
        assert opened.status_code == 200, opened.text
        sid = opened.headers["mcp-session-id"]
        follow = {**base, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post("/mcp", headers={**follow, **auth(keys["acme"])},
                         json=note).status_code == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "add", "arguments": {"role": "user", "content": "via stolen id"}}}
        stolen = http.post("/mcp", headers={**follow, **auth(keys["globex"])}, json=call)
        assert stolen.status_code == 404
        no_key = http.post("/mcp", headers=follow, json=call)
        assert no_key.status_code == 401
    with memci.Engine.open(server.db, workers=0) as engine:
        assert engine.sessions() == []


_INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"}}}
_ACCEPT = {"Accept": "application/json, text/event-stream"}


def _open_session(http: httpx.Client, key: str) -> httpx.Response:
    """``initialize`` in the handshake-era protocol: a new MCP session of ``key``."""
    return http.post("/mcp", json=_INITIALIZE, headers={**_ACCEPT, **auth(key)})


def _session_id(http: httpx.Client, key: str) -> str:
    opened = _open_session(http, key)
    assert opened.status_code == 200, opened.text
    sid = opened.headers["mcp-session-id"]
    assert http.post("/mcp", headers={**_ACCEPT, **auth(key), "mcp-session-id": sid},
                     json={"jsonrpc": "2.0", "method": "notifications/initialized"}
                     ).status_code == 202
    return sid


def _alive(http: httpx.Client, key: str, sid: str) -> bool:
    """True while the session answers a ping (an ended one is 404)."""
    r = http.post("/mcp", headers={**_ACCEPT, **auth(key), "mcp-session-id": sid},
                  json={"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert r.status_code in (200, 404), r.text
    return r.status_code == 200


def test_mcp_sessions_are_capped_per_key_and_tenant_and_others_are_unaffected(
        tmp_path: Path) -> None:
    db = tmp_path / "caps.db"
    with memci.Engine.open(db, workers=0) as engine:
        store = KeyStore(engine.store)
        keys = {name: store.create(tenant)[1] for name, tenant in (
            ("acme", "acme"), ("acme2", "acme"), ("globex", "globex"), ("busy", "initech"))}
    caps = ("--mcp-sessions-per-key", "3", "--mcp-sessions-per-tenant", "5",
            "--mcp-sessions", "20")
    with ServeProcess(db, *caps) as server, httpx.Client(base_url=server.url,
                                                         timeout=30) as http:
        # one key opens many and deletes none: it only ever ends its own oldest idle ones
        mine = [_session_id(http, keys["acme"]) for _ in range(10)]
        assert [_alive(http, keys["acme"], sid) for sid in mine] == [False] * 7 + [True] * 3
        # the tenant's other key: the tenant holds 5, the new ones all open
        theirs = [_session_id(http, keys["acme2"]) for _ in range(3)]
        assert all(_alive(http, keys["acme2"], sid) for sid in theirs)
        assert sum(_alive(http, keys["acme"], sid) for sid in mine) == 2
        # another tenant opens as many as its caps allow, untouched by acme's
        globex = [_session_id(http, keys["globex"]) for _ in range(3)]
        assert all(_alive(http, keys["globex"], sid) for sid in globex)
        # sessions in use (an open event stream each) are never ended to make room: the
        # next one is refused, saying why
        held = [_session_id(http, keys["busy"]) for _ in range(3)]
        with contextlib.ExitStack() as streams:
            for sid in held:
                stream = streams.enter_context(http.stream("GET", "/mcp", headers={
                    "Accept": "text/event-stream", **auth(keys["busy"]), "mcp-session-id": sid}))
                assert stream.status_code == 200
            refused = _open_session(http, keys["busy"])
            assert refused.status_code == 429, refused.text
            assert refused.json()["error"]["code"] == "too_many_mcp_sessions"
            assert "every one is in use" in refused.json()["error"]["message"]
            assert _open_session(http, keys["globex"]).status_code == 200


def test_an_event_stream_ends_when_its_key_is_revoked(tmp_path: Path) -> None:
    db = tmp_path / "revoke.db"
    with memci.Engine.open(db, workers=0) as engine:
        record, key = KeyStore(engine.store).create("acme")
    with ServeProcess(db) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        sid = _session_id(http, key)
        ended = threading.Event()

        def listen() -> None:
            with httpx.Client(base_url=server.url, timeout=httpx.Timeout(10, read=None)) as c:
                with c.stream("GET", "/mcp", headers={
                        "Accept": "text/event-stream", **auth(key), "mcp-session-id": sid}) as r:
                    assert r.status_code == 200
                    for _ in r.iter_bytes():
                        pass
            ended.set()

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        assert not ended.wait(3)  # the stream stays open while the key is good
        with memci.Engine.open(db, workers=0) as engine:  # as `memci keys revoke` does
            KeyStore(engine.store).revoke(record.key_id)
        assert ended.wait(60), "the event stream of a revoked key is still open"
        listener.join(10)


def test_mcp_sessions_keep_the_operators_file_roots(tmp_path: Path) -> None:
    shared, own = tmp_path / "shared", tmp_path / "own"
    for folder in (shared, own):
        folder.mkdir()
        (folder / "notes.txt").write_text(f"secret of {folder.name}\n")
    db = tmp_path / "roots.db"
    with memci.Engine.open(db, workers=0) as engine:
        store = KeyStore(engine.store)
        acme = store.create("acme", policy=KeyPolicy(file_roots=(str(own),)))[1]
        globex = store.create("globex", policy=KeyPolicy(file_roots=()))[1]

    async def talk(url: str, key: str) -> tuple[list[str], types.CallToolResult | MCPError,
                                                types.CallToolResult | MCPError]:
        async with _client(url, key) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            answers: list[types.CallToolResult | MCPError] = []
            for path in (own / "notes.txt", shared / "notes.txt"):
                try:
                    answers.append(await client.call_tool("file_snippet", {"path": str(path)}))
                except MCPError as exc:  # a tool the session does not list
                    answers.append(exc)
        return names, *answers

    with ServeProcess(db, "--file-root", str(shared)) as server:
        names, inside, outside = anyio.run(talk, server.url, acme)
        assert "file_snippet" in names
        assert "secret of own" in _text(inside)
        assert "secret of shared" not in _text(outside) and outside.is_error  # type: ignore[union-attr]
        names, inside, _ = anyio.run(talk, server.url, globex)
        assert "file_snippet" not in names
        assert isinstance(inside, MCPError) and inside.code == types.INVALID_PARAMS


def test_no_auth_mcp_refuses_a_foreign_host(tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "n.db", workers=0) as engine, TestClient(
        create_app(engine, ServerConfig(auth=False)), base_url="http://127.0.0.1:8080"
    ) as http:
        initialize: dict[str, Any] = {
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}
        base = {"Accept": "application/json, text/event-stream"}
        assert http.post("/mcp", headers=base, json=initialize).status_code == 200
        rebound = http.post("/mcp", headers={**base, "Host": "evil.example:8080"},
                            json=initialize)
        assert rebound.status_code in (403, 421)
        assert engine.sessions() == []


def test_without_the_mcp_extra_mcp_answers_501(tmp_path: Path) -> None:
    script = f"""
import sys
sys.modules["mcp"] = None  # as if memci[mcp] were not installed
import memci
from fastapi.testclient import TestClient
from memci.server import ServerConfig, create_app
with memci.Engine.open({str(tmp_path / "x.db")!r}) as engine, TestClient(
        create_app(engine, ServerConfig(auth=False)), base_url="http://127.0.0.1") as http:
    answer = http.post("/mcp", json={{}})
    assert http.get("/healthz").status_code == 200
print(answer.status_code, answer.json()["error"]["code"], "memci[mcp]" in answer.text)
"""
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", script], capture_output=True,
                          text=True, env=subprocess_env(), cwd=str(ROOT), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["501", "missing_extra", "True"]


def test_the_example_runs_offline() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "mcp_http_client.py")],
                          capture_output=True, text=True, env=subprocess_env(), cwd=str(ROOT),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "found in groceries: ['Buy oat milk.']" in done.stdout
    assert "Book the night train to Vienna on Friday." in done.stdout
