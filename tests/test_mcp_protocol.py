"""MCP's wire rules on both transports: JSON-RPC errors, and where a request may come from.

- every message that is no JSON-RPC 2.0 request gets the error JSON-RPC names (parse
  error, invalid request, method not found, invalid params), over stdio (``memci mcp``,
  driven line by line in a subprocess) and over HTTP (``/mcp`` of a real ``memci serve``),
  from one table, so the two transports cannot drift apart;
- a browser page's ``Origin`` is checked with API keys too (403), on ``/mcp`` and the REST
  API alike, and ``/mcp`` answers only the hosts it serves (421): what the operator allows
  with ``--allowed-origin`` / ``--allowed-host`` (or the environment) passes; without
  keys every route answers only the hosts it serves.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp", reason="needs memci[mcp]")
pytest.importorskip("fastapi", reason="needs memci[server]")

from fastapi.testclient import TestClient

import memci
from memci.errors import ConfigError
from memci.server import KeyStore, ServerConfig, create_app

from .test_server import MEMCI, ROOT, ServeProcess, auth, subprocess_env

PARSE, INVALID_REQUEST, NO_METHOD, INVALID_PARAMS = -32700, -32600, -32601, -32602

INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "wire-test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

# (the raw message, the id its answer carries, the JSON-RPC error code; None: a result)
WIRE: list[tuple[str, Any, int | None]] = [
    ("this is not json", None, PARSE),
    ('{"jsonrpc": "2.0", "id": 1, "method": "ping"', None, PARSE),
    ('[{"jsonrpc": "2.0", "id": 2, "method": "ping"}]', None, INVALID_REQUEST),
    ("42", None, INVALID_REQUEST),
    ('{"id": 3, "method": "ping"}', 3, INVALID_REQUEST),
    ('{"jsonrpc": "1.0", "id": 4, "method": "ping"}', 4, INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": 5, "method": 7}', 5, INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', None, INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": 6, "method": "ping", "params": "x"}', 6, INVALID_REQUEST),
    ('{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": [1]}', 7, INVALID_PARAMS),
    ('{"jsonrpc": "2.0", "id": 8, "method": "no/such/method"}', 8, NO_METHOD),
    ('{"jsonrpc": "2.0", "id": 9, "method": "tools/call", '
     '"params": {"name": "no_such_tool", "arguments": {}}}', 9, INVALID_PARAMS),
    ('{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"arguments": {}}}',
     10, INVALID_PARAMS),
    ('{"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {"cursor": 5}}',
     11, INVALID_PARAMS),
    ('{"jsonrpc": "2.0", "id": 12, "method": "ping"}', 12, None),
]


def _check(answer: dict[str, Any], request_id: Any, code: int | None, sent: str) -> None:
    assert answer["jsonrpc"] == "2.0", (sent, answer)
    assert answer["id"] == request_id, (sent, answer)
    if code is None:
        assert "result" in answer, (sent, answer)
    else:
        assert answer["error"]["code"] == code, (sent, answer)
        assert answer["error"]["message"], (sent, answer)


class _Stdio:
    """``memci mcp`` in a subprocess, one JSON-RPC line written or read at a time."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [*MEMCI, "mcp", "--db", str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env=subprocess_env(), cwd=str(ROOT), text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + "\n")
        self.proc.stdin.flush()

    def answer(self) -> dict[str, Any]:
        # Generous: the process may wait for a busy machine, never this long.
        return dict(json.loads(self.lines.get(timeout=60)))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def test_stdio_answers_every_message_that_is_no_request_with_its_jsonrpc_error(
        tmp_path: Path) -> None:
    stdio = _Stdio(tmp_path / "wire.db")
    try:
        stdio.send(json.dumps(INITIALIZE))
        assert stdio.answer()["id"] == "init"
        stdio.send(json.dumps(INITIALIZED))
        for raw, request_id, code in WIRE:
            stdio.send(raw)
            _check(stdio.answer(), request_id, code, raw)  # one answer, none left waiting
        stdio.send("")  # a blank line is no message: no answer, and the next one still is
        stdio.send('{"jsonrpc": "2.0", "id": "last", "method": "ping"}')
        assert stdio.answer() == {"jsonrpc": "2.0", "id": "last", "result": {}}
    finally:
        stdio.close()


def _answers(response: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an HTTP answer (a JSON body or an event stream)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in response.text.splitlines()
                if line.startswith("data:") and line[5:].strip()]
    return [response.json()]


@pytest.fixture
def keyed(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "keyed.db"
    with memci.Engine.open(db, workers=0) as engine:
        return db, KeyStore(engine.store).create("acme")[1]


@pytest.fixture
def mcp_http(keyed: tuple[Path, str]) -> Iterator[tuple[httpx.Client, dict[str, str]]]:
    """An initialized MCP connection to a real ``memci serve``: the client, its headers."""
    db, key = keyed
    with ServeProcess(db) as server, httpx.Client(base_url=server.url, timeout=60, headers={
            **auth(key), "Accept": "application/json, text/event-stream"}) as http:
        opened = http.post("/mcp", json=INITIALIZE)
        assert opened.status_code == 200, opened.text
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"],
                   "MCP-Protocol-Version": "2025-11-25"}
        assert http.post("/mcp", json=INITIALIZED, headers=session).status_code == 202
        yield http, session


def test_http_answers_every_message_that_is_no_request_with_its_jsonrpc_error(
        mcp_http: tuple[httpx.Client, dict[str, str]]) -> None:
    http, session = mcp_http
    for raw, request_id, code in WIRE:
        response = http.post("/mcp", content=raw.encode(),
                             headers={**session, "Content-Type": "application/json"})
        # No request, so no stream: a 400 whose body is the error (Streamable HTTP).
        ours = code in (PARSE, INVALID_REQUEST) or (code == INVALID_PARAMS and request_id == 7)
        assert response.status_code == (400 if ours else 200), (raw, response.text)
        (answer,) = _answers(response)
        _check(answer, request_id, code, raw)


def test_a_page_from_another_origin_is_refused_with_keys_too(keyed: tuple[Path, str]) -> None:
    db, key = keyed
    foreign = {"Origin": "https://evil.example"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    mcp_headers = {**auth(key), "Accept": "application/json, text/event-stream"}
    with ServeProcess(db, "--allowed-origin", "https://App.Example:443/") as server, \
            httpx.Client(base_url=server.url, timeout=60) as http:
        for method, path, body, headers in (
                ("POST", "/mcp", INITIALIZE, mcp_headers),
                ("GET", "/mcp", None, mcp_headers),
                ("POST", "/v1/sessions/s1/messages", [{"role": "user", "content": "hi"}],
                 auth(key)),
                ("GET", "/v1/sessions", None, auth(key)),
                ("GET", "/healthz", None, {})):
            refused = http.request(method, path, json=body, headers={**headers, **foreign})
            assert refused.status_code == 403, (method, path, refused.text)
            error = refused.json()["error"]
            assert error["code"] == "forbidden_origin" and "--allowed-origin" in error["message"]
        # the operator's origin (normalized), and loopback pages, may call
        for origin in ("https://app.example", "http://localhost:5173", "http://127.0.0.1"):
            opened = http.post("/mcp", json=INITIALIZE, headers={**mcp_headers,
                                                                 "Origin": origin})
            assert opened.status_code == 200, (origin, opened.text)
        # a foreign Origin is refused before a session is touched: nothing was stored
        listed = http.get("/v1/sessions", headers=auth(key)).json()
        assert [s for s in listed["sessions"] if s["name"] == "s1"] == []
        # and the same connection answers once the page is one the operator allows
        answered = http.post("/mcp", json=ping, headers={
            **mcp_headers, "Origin": "https://app.example",
            "Mcp-Session-Id": opened.headers["mcp-session-id"]})
        assert answered.status_code == 200


def test_mcp_answers_only_the_hosts_it_serves_with_keys_too(keyed: tuple[Path, str]) -> None:
    db, key = keyed
    mcp_headers = {**auth(key), "Accept": "application/json, text/event-stream"}
    with ServeProcess(db) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        rebound = http.post("/mcp", json=INITIALIZE,
                            headers={**mcp_headers, "Host": "rebound.example:8080"})
        assert rebound.status_code == 421, rebound.text
        assert rebound.json()["error"]["code"] == "misdirected_request"
        # a page cannot send a key it does not know: the REST API takes any name
        assert http.get("/v1/sessions", headers={**auth(key),
                                                 "Host": "rebound.example"}).status_code == 200
        for host in ("localhost:1", "127.0.0.1", "[::1]:8080", "10.0.0.7"):
            assert http.post("/mcp", json=INITIALIZE, headers={
                **mcp_headers, "Host": host}).status_code == 200, host
    with ServeProcess(db, "--allowed-host", "memci.example", "--allowed-host",
                      "Rebound.example:8080") as server, httpx.Client(base_url=server.url,
                                                                       timeout=60) as http:
        for host, status in (("rebound.example:8080", 200), ("memci.example:9", 200),
                             ("rebound.example:9", 421)):
            answer = http.post("/mcp", json=INITIALIZE, headers={**mcp_headers, "Host": host})
            assert answer.status_code == status, (host, answer.text)


def test_without_keys_every_route_answers_only_the_hosts_it_serves(tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "open.db", workers=0) as engine, TestClient(
            create_app(engine, ServerConfig(auth=False, allowed_hosts=("memci.example",))),
            base_url="http://127.0.0.1:8080") as http:
        assert http.post("/v1/sessions/s/messages",
                         json={"role": "user", "content": "private"}).status_code == 200
        # a page that rebinds its own name to the server reads nothing (GETs carry no Origin)
        for path in ("/v1/sessions", "/v1/sessions/s/messages", "/healthz"):
            rebound = http.get(path, headers={"Host": "rebound.example:8080"})
            assert rebound.status_code == 421, (path, rebound.text)
            assert "private" not in rebound.text
        assert http.get("/v1/sessions", headers={"Host": "memci.example"}).status_code == 200


def test_the_environment_names_allowed_origins_and_hosts() -> None:
    config = ServerConfig.resolve({
        "MEMCI_SERVER_ALLOWED_ORIGINS": "https://a.example, http://B.example:8080",
        "MEMCI_SERVER_ALLOWED_HOSTS": "memci.example,"})
    assert config.allowed_origins == ("https://a.example", "http://b.example:8080")
    assert config.allowed_hosts == ("memci.example",)
    explicit = ServerConfig.resolve({"MEMCI_SERVER_ALLOWED_HOSTS": "a.example"},
                                    allowed_hosts=("b.example",))
    assert explicit.allowed_hosts == ("b.example",)


@pytest.mark.parametrize(("field", "value"), [
    ("allowed_origins", "ftp://files.example"), ("allowed_origins", "https://a.example/app"),
    ("allowed_origins", "a.example"), ("allowed_hosts", "a.example/path"),
    ("allowed_hosts", "")])
def test_an_origin_or_host_that_is_none_is_refused_with_what_to_give(field: str,
                                                                     value: str) -> None:
    with pytest.raises(ConfigError, match=r"allowed (origin|host) .* is not"):
        ServerConfig(**{field: (value,)})


def test_serve_refuses_a_bad_allowed_origin_before_it_listens(tmp_path: Path) -> None:
    done = subprocess.run([*MEMCI, "serve", "--db", str(tmp_path / "x.db"), "--port", "0",
                           "--allowed-origin", "evil.example"], capture_output=True,
                          text=True, env=subprocess_env(), timeout=60)
    assert done.returncode != 0
    assert "scheme://host[:port]" in done.stderr and "listening" not in done.stderr


def test_a_401_at_mcp_says_the_server_takes_static_keys_not_oauth(
        keyed: tuple[Path, str]) -> None:
    db, _ = keyed
    with ServeProcess(db) as server, httpx.Client(base_url=server.url, timeout=60) as http:
        for headers in ({}, {"Authorization": "Bearer mk_unknown"}):
            refused = http.post("/mcp", json=INITIALIZE, headers={
                **headers, "Accept": "application/json, text/event-stream"})
            assert refused.status_code == 401
            challenge = refused.headers["www-authenticate"]
            # a generic client reads the challenge: no OAuth to discover, a key to send
            assert challenge.startswith('Bearer realm="memci"'), challenge
            assert "static API keys" in challenge and "not OAuth" in challenge
            assert "resource_metadata" not in challenge
            assert "memci keys create" in refused.json()["error"]["message"]
        assert http.get("/.well-known/oauth-protected-resource").status_code == 404
