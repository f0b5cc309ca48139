"""The REST server: auth, every endpoint, error shape, body limit, keys, the serve command.

The auth, body-limit and concurrency tests run a real uvicorn server on 127.0.0.1 (in a
thread, or ``memci serve`` as a subprocess); the many small API-shape tests use FastAPI's
TestClient over the same app.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")
pytest.importorskip("uvicorn", reason="needs memci[server]")

import httpx
import uvicorn
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient

import memci
from memci.cli import _server, main
from memci.errors import MissingExtraError
from memci.server import KeyStore, ServerConfig, create_app
from memci.store.sqlite._driver import connect

ROOT = Path(__file__).resolve().parents[1]
assert _server  # registers serve, mcp and keys on memci.cli.main


# -- helpers shared with test_proxy.py and test_server_load.py ------------------------------


class LiveServer:
    """A real uvicorn server on 127.0.0.1 (a free port) in a thread; use with ``with``."""

    def __init__(self, app: FastAPI) -> None:
        self.server = uvicorn.Server(uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", ws="none", lifespan="on",
            access_log=False))
        self.thread = threading.Thread(target=self.server.run, name="uvicorn", daemon=True)
        self.url = ""

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                      env.get("PYTHONPATH")]))
    return env


MEMCI = [sys.executable, "-c", "from memci.cli import _server, main; main()"]


class ServeProcess:
    """``memci serve`` as a real subprocess on a free port; ``kill()`` sends SIGKILL.

    ``open_files`` limits the files the process may hold open (``ulimit -n``).
    """

    def __init__(self, db: Path, *args: str, open_files: int | None = None) -> None:
        self.db = db
        self.args = args
        self.open_files = open_files
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def _limit(self) -> None:
        assert self.open_files is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, self.open_files))

    def start(self) -> ServeProcess:
        # Started twice, the first process would outlive the test (nothing stops it).
        assert self.proc is None, "this server is already started"
        self.proc = subprocess.Popen(
            [*MEMCI, "serve", "--port", "0", "--db", str(self.db), *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=subprocess_env(),
            preexec_fn=self._limit if self.open_files is not None else None)
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        lines = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline().decode()
            lines.append(line)
            found = re.search(r"listening on (http://\S+)", line)
            if found:
                self.url = found.group(1)
                threading.Thread(target=self._drain, daemon=True).start()
                return self
            if not line and self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError("memci serve did not start:\n" + "".join(lines))

    def _drain(self) -> None:
        proc = self.proc
        if proc is not None and proc.stderr is not None:
            for _ in proc.stderr:
                pass

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self._reap()

    def stop(self) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self._reap()

    def _reap(self) -> int | None:
        proc = self.proc
        if proc is None:
            return None
        code = proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        self.proc = None
        return code

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture
def keys(engine: memci.Engine) -> dict[str, str]:
    store = KeyStore(engine.store)
    return {"acme": store.create("acme")[1], "globex": store.create("globex")[1]}


@pytest.fixture
def client(engine: memci.Engine, keys: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(create_app(engine, ServerConfig())) as c:
        c.headers.update(auth(keys["acme"]))
        yield c


@pytest.fixture
def live(engine: memci.Engine, keys: dict[str, str]) -> Iterator[LiveServer]:
    with LiveServer(create_app(engine, ServerConfig(max_body_bytes=4096))) as server:
        yield server


# -- auth (real server) -----------------------------------------------------------------------


def test_auth_on_a_real_server(live: LiveServer, keys: dict[str, str],
                               engine: memci.Engine) -> None:
    with httpx.Client(base_url=live.url, timeout=10) as http:
        assert http.get("/healthz").json()["status"] == "ok"
        for headers in ({}, auth("mk_not-a-key"), {"Authorization": "Basic abc"},
                        auth("plainly wrong")):
            r = http.post("/v1/sessions/s1/messages", headers=headers,
                          json={"role": "user", "content": "hi"})
            assert r.status_code == 401, headers
            assert r.json()["error"]["code"] == "unauthorized"
            assert r.headers["www-authenticate"].startswith('Bearer realm="memci"')
        assert engine.sessions() == []
        # acme makes s1; globex does not see it, and its own s1 is another session
        r = http.post("/v1/sessions/s1/messages", headers=auth(keys["acme"]),
                      json={"role": "user", "content": "secret of acme"})
        assert r.status_code == 200
        for path in ("/v1/sessions/s1", "/v1/sessions/s1/messages", "/v1/sessions/s1/stats"):
            r = http.get(path, headers=auth(keys["globex"]))
            assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_session"
        r = http.post("/v1/sessions/s1/context", headers=auth(keys["globex"]), json={})
        assert r.status_code == 404
        r = http.post("/v1/sessions/s1/messages", headers=auth(keys["globex"]),
                      json={"role": "user", "content": "globex here"})
        assert r.status_code == 200 and r.json()["messages"][0]["seq"] == 1
        r = http.get("/v1/sessions/s1/messages", headers=auth(keys["acme"]))
        assert [m["content"] for m in r.json()["messages"]] == ["secret of acme"]
        listed = http.get("/v1/sessions", headers=auth(keys["globex"])).json()["sessions"]
        assert [s["session"] for s in listed] == ["s1"]
        assert {(r.tenant, r.name) for r in engine.sessions()} == {("acme", "s1"),
                                                                   ("globex", "s1")}
        # a key revoked elsewhere (as by `memci keys revoke`) stops working (within a
        # second; the bound is for a loaded machine)
        (record,) = KeyStore(engine.store).keys("globex")
        KeyStore(engine.store).revoke(record.key_id)
        deadline = time.monotonic() + 30
        while http.get("/v1/sessions/s1", headers=auth(keys["globex"])).status_code != 401:
            assert time.monotonic() < deadline, "the revoked key still works"
            time.sleep(0.1)
        assert http.get("/v1/sessions/s1", headers=auth(keys["acme"])).status_code == 200


def test_body_limit_answers_413_and_stores_nothing(live: LiveServer, keys: dict[str, str],
                                                   engine: memci.Engine) -> None:
    big = {"role": "user", "content": "x" * 8000}
    with httpx.Client(base_url=live.url, timeout=10, headers=auth(keys["acme"])) as http:
        r = http.post("/v1/sessions/big/messages", json=big)
        assert r.status_code == 413
        assert r.json()["error"]["code"] == "payload_too_large"

        def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer
            yield b'{"role": "user", "content": "'
            for _ in range(10):
                yield b"y" * 1000
            yield b'"}'

        r = http.post("/v1/sessions/big/messages", content=chunks())
        assert r.status_code == 413
        r = http.post("/v1/sessions/big/messages", json={"role": "user", "content": "small"})
        assert r.status_code == 200
    assert [m.content for m in engine.session("big", tenant="acme").messages()] == ["small"]


def test_concurrent_adds_to_one_session_are_gap_free(live: LiveServer,
                                                     keys: dict[str, str]) -> None:
    acked: list[int] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        with httpx.Client(base_url=live.url, timeout=20, headers=auth(keys["acme"])) as http:
            for i in range(15):
                r = http.post("/v1/sessions/shared/messages",
                              json={"role": "user", "content": f"w{n} m{i}"})
                assert r.status_code == 200, r.text
                with lock:
                    acked.append(r.json()["messages"][0]["seq"])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(acked) == list(range(1, 121))


# -- endpoints (TestClient) -------------------------------------------------------------------


def test_healthz_and_openapi_list_the_stable_endpoints(client: TestClient) -> None:
    assert client.get("/healthz", headers={"Authorization": ""}).json()["status"] == "ok"
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    for path, method in [("/v1/sessions/{sid}/messages", "post"),
                         ("/v1/sessions/{sid}/context", "post"),
                         ("/v1/sessions/{sid}/search", "get"),
                         ("/v1/sessions/{sid}/tools/{name}", "post"),
                         ("/v1/sessions/{sid}", "get"), ("/healthz", "get"),
                         ("/v1/chat/completions", "post")]:
        assert method in paths[path], path
    assert {"memciApiKey", "memciApiKeyHeader"} <= set(schema["components"]["securitySchemes"])


#: Every operation of the OpenAPI document: clients generated from it name their methods
#: by these ids and group them by these tags, so moving a route keeps both.
OPERATIONS = {
    ("GET", "/healthz"): ("healthz_healthz_get", "server"),
    ("GET", "/v1/sessions"): ("list_sessions_v1_sessions_get", "sessions"),
    ("GET", "/v1/sessions/{sid}"): ("get_session_v1_sessions__sid__get", "sessions"),
    ("GET", "/v1/sessions/{sid}/stats"): ("get_stats_v1_sessions__sid__stats_get", "sessions"),
    ("POST", "/v1/sessions/{sid}/messages"): (
        "add_messages_v1_sessions__sid__messages_post", "messages"),
    ("GET", "/v1/sessions/{sid}/messages"): (
        "get_messages_v1_sessions__sid__messages_get", "messages"),
    ("POST", "/v1/sessions/{sid}/context"): (
        "build_context_v1_sessions__sid__context_post", "context"),
    ("GET", "/v1/sessions/{sid}/search"): ("search_v1_sessions__sid__search_get", "search"),
    ("GET", "/v1/sessions/{sid}/tools"): ("list_tools_v1_sessions__sid__tools_get", "tools"),
    ("POST", "/v1/sessions/{sid}/tools/{name}"): (
        "call_tool_v1_sessions__sid__tools__name__post", "tools"),
    ("GET", "/v1/sessions/{sid}/state"): ("working_state_v1_sessions__sid__state_get", "tools"),
    ("GET", "/v1/sessions/{sid}/artifacts/{artifact_id}"): (
        "get_artifact_v1_sessions__sid__artifacts__artifact_id__get", "tools"),
    ("DELETE", "/v1/sessions/{sid}"): ("delete_session_v1_sessions__sid__delete", "deleting"),
    ("DELETE", "/v1/sessions/{sid}/messages"): (
        "clear_session_v1_sessions__sid__messages_delete", "deleting"),
    ("DELETE", "/v1/sessions/{sid}/messages/last"): (
        "pop_message_v1_sessions__sid__messages_last_delete", "deleting"),
    ("DELETE", "/v1/sessions/{sid}/messages/{seq}"): (
        "retract_message_v1_sessions__sid__messages__seq__delete", "deleting"),
    ("DELETE", "/v1/users/{user}"): ("erase_user_v1_users__user__delete", "deleting"),
    ("GET", "/v1/erasures"): ("erasures_v1_erasures_get", "deleting"),
    ("POST", "/v1/chat/completions"): ("chat_completions_v1_chat_completions_post", "proxy"),
    ("POST", "/v1/messages"): ("messages_v1_messages_post", "proxy"),
    ("GET", "/v1/ui/sessions"): ("session_activity_v1_ui_sessions_get", "inspector"),
    ("GET", "/v1/sessions/{sid}/peek"): ("peek_context_v1_sessions__sid__peek_get", "inspector"),
    ("GET", "/v1/sessions/{sid}/pages"): ("list_pages_v1_sessions__sid__pages_get", "inspector"),
    ("GET", "/v1/sessions/{sid}/workstate"): (
        "work_state_v1_sessions__sid__workstate_get", "inspector"),
    ("GET", "/v1/sessions/{sid}/replay"): (
        "replay_session_v1_sessions__sid__replay_get", "inspector"),
}


def test_openapi_operation_ids_and_tags_are_stable(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    found = {(method.upper(), path): (op["operationId"], *op["tags"])
             for path, ops in paths.items() for method, op in ops.items()}
    assert found == OPERATIONS


def test_add_accepts_one_a_list_an_envelope_and_anthropic(client: TestClient,
                                                          engine: memci.Engine) -> None:
    r = client.post("/v1/sessions/c/messages", json={"role": "system", "content": "Be brief."})
    assert r.status_code == 200
    assert [(m["seq"], m["role"], m["content"]) for m in r.json()["messages"]] == [
        (1, "system", "Be brief.")]
    r = client.post("/v1/sessions/c/messages?user=u1", json=[
        {"role": "user", "content": "weather in Paris?", "metadata": {"k": "v"}},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}])
    assert [m["seq"] for m in r.json()["messages"]] == [2, 3, 4]
    assert r.json()["messages"][0]["metadata"] == {"k": "v"}
    r = client.post("/v1/sessions/c/messages", json={"user": "u1", "messages": [
        {"role": "assistant", "content": [
            {"type": "text", "text": "checking"},
            {"type": "tool_use", "id": "tu_1", "name": "weather", "input": {"city": "Rome"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu_1", "content": "rainy"},
            {"type": "text", "text": "and tomorrow?"}]}]})
    assert r.status_code == 200
    assert [(m["role"], m["content"]) for m in r.json()["messages"]] == [
        ("assistant", "checking"), ("tool", "rainy"), ("user", "and tomorrow?")]
    session = engine.session("c", tenant="acme")
    assert session.user == "u1" and session.count() == 7
    summary = client.get("/v1/sessions/c").json()
    assert summary["messages"] == 7 and summary["user"] == "u1"
    # nothing has left the window yet: memci offers no recall_page (it could not act)
    assert "recall_page" not in summary["tools"] and summary["stats"]["messages"] == 7
    got = client.get("/v1/sessions/c/messages", params={"after": 5}).json()["messages"]
    assert [m["seq"] for m in got] == [6, 7]


def test_envelope_settings_apply_and_bad_settings_are_400(client: TestClient,
                                                          engine: memci.Engine) -> None:
    r = client.post("/v1/sessions/set/messages", json={
        "messages": [{"role": "user", "content": "hi"}],
        "settings": {"strategy": "oldest", "context_window": 4000}})
    assert r.status_code == 200
    assert engine.session("set", tenant="acme").settings.strategy == "oldest"
    r = client.post("/v1/sessions/set2/messages", json={
        "messages": [{"role": "user", "content": "hi"}], "settings": {"nonsense": 1}})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_setting"


@pytest.mark.parametrize("body", [
    [{"role": "user", "content": "fine"}, {"role": "wizard", "content": "no"}],
    [{"role": "user", "content": "fine"}, {"role": "tool", "tool_call_id": "nope",
                                           "content": "orphan"}],
    [{"role": "user", "content": "fine"}, {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]}],
    "just a string",
    {"messages": "not a list", "user": 5},
])
def test_bad_input_is_400_and_stores_nothing(client: TestClient, engine: memci.Engine,
                                             body: Any) -> None:
    r = client.post("/v1/sessions/bad/messages", json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert set(error) == {"code", "message"} and error["message"]
    assert engine.store.session("acme", "bad") is None  # not even an empty session
    # the same on an existing session: the good message before the bad one is not kept
    client.post("/v1/sessions/exists/messages", json={"role": "user", "content": "first"})
    r = client.post("/v1/sessions/exists/messages", json=body)
    assert r.status_code == 400
    assert engine.session("exists", tenant="acme").count() == 1


def test_a_query_parameter_given_twice_is_400_and_stores_nothing(client: TestClient,
                                                                  engine: memci.Engine) -> None:
    # FastAPI keeps the last value of a repeated parameter: the first would be ignored.
    cases = [client.post("/v1/sessions/twice/messages?user=a&user=b",
                         json={"role": "user", "content": "hi"}),
             client.get("/v1/sessions/twice/search?q=hi&q=there"),
             client.get("/v1/sessions/twice/messages?after=0&limit=5&after=1")]
    for r in cases:
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "invalid_request"
        assert "more than once" in r.json()["error"]["message"]
    assert engine.store.session("acme", "twice") is None
    r = client.post("/v1/sessions/twice/messages?user=a", json={"role": "user", "content": "hi"})
    assert r.status_code == 200, r.text


def test_error_shape_for_routes_methods_and_json(client: TestClient) -> None:
    cases = [client.get("/v1/nothing/here"), client.put("/v1/sessions/x"),
             client.post("/v1/sessions/x/messages", content=b"{not json"),
             client.post("/v1/sessions/x/messages", content=b""),
             client.get("/v1/sessions/x/search")]
    assert [r.status_code for r in cases] == [404, 405, 400, 400, 400]
    for r in cases:
        assert set(r.json()) == {"error"} and set(r.json()["error"]) == {"code", "message"}
    assert cases[2].json()["error"]["code"] == "invalid_json"


def test_context_in_both_formats_with_stats(client: TestClient) -> None:
    client.post("/v1/sessions/ctx/messages", json=[
        {"role": "system", "content": "You help."}, {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi there"}, {"role": "user", "content": "and?"}])
    r = client.post("/v1/sessions/ctx/context", json={"format": "openai", "budget": 2000})
    assert r.status_code == 200
    data = r.json()
    assert data["payload"]["messages"][0] == {"role": "system", "content": "You help."}
    assert data["payload"]["messages"][-1]["content"] == "and?"
    assert data["stats"]["budget"] == 2000 and data["stats"]["total_tokens"] <= 2000
    assert {"sections", "build_ms", "saved_tokens", "full_tokens"} <= set(data["stats"])
    r = client.post("/v1/sessions/ctx/context", json={"format": "anthropic"})
    payload = r.json()["payload"]
    assert payload["system"] == "You help." and payload["messages"][0]["role"] == "user"
    assert "tools" not in payload  # the whole chat is in the window: no tool could act
    # no body at all is the default build; a body without a content type is read as JSON
    assert client.post("/v1/sessions/ctx/context").json()["format"] == "openai"
    r = client.post("/v1/sessions/ctx/context", content=b'{"format": "anthropic"}')
    assert r.json()["format"] == "anthropic"
    for bad in ({"format": "xml"}, {"budget": 0}, {"recipe": "soup"}, [1]):
        r = client.post("/v1/sessions/ctx/context", json=bad)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request", bad
    assert client.post("/v1/sessions/none/context", json={}).status_code == 404


def test_tools_list_call_unknown_and_bad_arguments(client: TestClient) -> None:
    client.post("/v1/sessions/t/messages", json={"role": "user", "content": "hi"})
    tools = client.get("/v1/sessions/t/tools").json()["tools"]
    assert "recall_page" not in [t["function"]["name"] for t in tools]  # nothing to recall
    tools = client.get("/v1/sessions/t/tools", params={"every": "true"}).json()["tools"]
    assert "recall_page" in [t["function"]["name"] for t in tools]
    anthropic = client.get("/v1/sessions/t/tools",
                           params={"format": "anthropic", "every": "true"}).json()
    assert "input_schema" in anthropic["tools"][0]
    r = client.post("/v1/sessions/t/tools/recall_page", json={"index": 1})
    assert r.status_code == 200 and r.json()["tool"] == "recall_page"
    assert isinstance(r.json()["result"], str) and r.json()["is_error"] is False
    r = client.post("/v1/sessions/t/tools/recall_page", json={"index": "first"})
    assert r.status_code == 200 and r.json()["is_error"] is True
    r = client.post("/v1/sessions/t/tools/rm_rf", json={})
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_tool"
    r = client.post("/v1/sessions/t/tools/recall_page", json=[1, 2])
    assert r.status_code == 400
    assert client.post("/v1/sessions/none/tools/recall_page", json={}).status_code == 404


def test_state_artifacts_and_stats(client: TestClient) -> None:
    client.post("/v1/sessions/w/messages", json={"role": "user", "content": "hi"})
    offered = [t["function"]["name"] for t in client.get(
        "/v1/sessions/w/tools", params={"every": "true"}).json()["tools"]]
    state = client.get("/v1/sessions/w/state").json()
    assert (state["pins"] is None) == ("pin_list" not in offered)
    assert (state["plan"] is None) == ("plan_list" not in offered)
    r = client.get("/v1/sessions/w/artifacts/abc123")
    if "artifact_get" in offered:
        assert r.status_code in (200, 404)
    else:
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_offered"
    stats = client.get("/v1/sessions/w/stats").json()
    assert stats["messages"] == 1 and {"builds", "archived", "recalled"} <= set(stats)


def test_working_state_and_artifacts_when_offered(client: TestClient) -> None:
    tools = ["recall_page", "pin_add", "pin_list", "plan_add", "plan_list", "notebook_add",
             "artifact_get"]
    # long enough that memci shows it by its view (the pointer), not as stored
    output = "\n".join(f"line {i}: ok" for i in range(2000))
    r = client.post("/v1/sessions/ws/messages", json={"settings": {"tools": tools}, "messages": [
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "run_tests",
                                                          "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output}]})
    assert r.status_code == 200, r.text
    payload = json.dumps(client.post("/v1/sessions/ws/context", json={}).json()["payload"])
    artifact = re.search(r"artifact:([0-9a-f]{12,})", payload)
    if artifact is None:
        pytest.skip("this memci puts no artifact pointer in the context")
    r = client.get(f"/v1/sessions/ws/artifacts/{artifact.group(1)}",
                   params={"offset": 0, "length": 20})
    assert r.status_code == 200 and r.json()["text"] == output[:20]
    r = client.get("/v1/sessions/ws/artifacts/deadbeef")
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_artifact"
    r = client.post("/v1/sessions/ws/tools/pin_add", json={
        "type": "path", "title": "deploy", "summary": "ops/deploy.sh", "source": "chat:1"})
    assert r.status_code == 200 and not r.json()["is_error"]
    client.post("/v1/sessions/ws/tools/plan_add", json={"text": "write the docs"})
    state = client.get("/v1/sessions/ws/state").json()
    assert "ops/deploy.sh" in state["pins"] and "write the docs" in state["plan"]
    assert {"pin_add", "plan_add", "notebook_add"} <= set(state["tools"])


def test_search_endpoint(client: TestClient, engine: memci.Engine) -> None:
    client.post("/v1/sessions/s/messages", json=[
        {"role": "user", "content": "my cat is called Mochi"},
        {"role": "assistant", "content": "nice name"},
        {"role": "user", "content": "the deploy script lives in ops/deploy.sh"}])
    r = client.get("/v1/sessions/s/search", params={"q": "cat name", "k": 2})
    assert r.status_code == 200
    hits = r.json()["hits"]
    assert 1 <= len(hits) <= 2
    assert any("Mochi" in h["message"]["content"] for h in hits)
    assert client.get("/v1/sessions/s/search", params={"q": "x", "k": 0}).status_code == 400
    client.post("/v1/sessions/s/messages", json={
        "role": "user", "content": "we had dinner at Osteria Lupa",
        "created_at": "2024-03-10T19:00:00+00:00"})
    asked = {"q": "where did we have dinner yesterday", "k": 1}
    r = client.get("/v1/sessions/s/search", params={**asked, "now": "2024-03-11T12:00:00Z"})
    assert r.status_code == 200 and "Osteria" in r.json()["hits"][0]["message"]["content"]
    assert "time" in r.json()["hits"][0]["retrievers"]
    r = client.get("/v1/sessions/s/search", params={**asked, "now": "not a date"})
    assert r.status_code == 400


def test_no_auth_mode_serves_the_default_tenant(engine: memci.Engine) -> None:
    with TestClient(create_app(engine, ServerConfig(auth=False)),
                    base_url="http://127.0.0.1") as c:
        assert c.post("/v1/sessions/n/messages",
                      json={"role": "user", "content": "hi"}).status_code == 200
    assert engine.store.session("default", "n") is not None


def test_missing_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch,
                                             engine: memci.Engine) -> None:
    monkeypatch.setitem(sys.modules, "fastapi", None)  # import fastapi -> ImportError
    with pytest.raises(MissingExtraError) as caught:
        create_app(engine)
    assert "pip install 'memci[server]'" in str(caught.value)
    assert "memci serve" in str(caught.value) and caught.value.extra == "server"


def test_config_resolves_explicit_over_environment() -> None:
    env = {"MEMCI_UPSTREAM_BASE_URL": "http://env", "MEMCI_SERVER_MAX_BODY_BYTES": "2048"}
    config = ServerConfig.resolve(env)
    assert config.upstream_base_url == "http://env" and config.max_body_bytes == 2048
    config = ServerConfig.resolve(env, upstream_base_url="http://arg", max_body_bytes=None)
    assert config.upstream_base_url == "http://arg" and config.max_body_bytes == 2048
    with pytest.raises(memci.ConfigError):
        ServerConfig.resolve({}, max_tool_rounds=0)


# -- keys and the commands -------------------------------------------------------------------


def test_keys_create_list_revoke_store_only_a_hash(tmp_path: Path) -> None:
    db = str(tmp_path / "k.db")
    runner = CliRunner()
    result = runner.invoke(main, ["keys", "create", "acme", "--label", "ci", "--db", db],
                           catch_exceptions=False)
    assert result.exit_code == 0
    key = result.output.strip().splitlines()[-1]
    assert re.fullmatch(r"mk_[A-Za-z0-9_-]{43}", key)
    with connect(db) as raw:  # every row of every table (pysqlite3 has no iterdump)
        tables = [r[0] for r in raw.execute("SELECT name FROM sqlite_master"
                                            " WHERE type = 'table'")]
        dump = "\n".join(str(row) for table in tables
                         for row in raw.execute(f'SELECT * FROM "{table}"'))
    raw.close()
    assert key not in dump and key[3:] not in dump
    listed = runner.invoke(main, ["keys", "list", "--db", db, "--json"]).output
    (entry,) = json.loads(listed)
    assert entry["tenant"] == "acme" and entry["label"] == "ci" and entry["revoked_at"] is None
    with memci.Engine.open(db) as eng:
        assert KeyStore(eng.store).tenant_of(key) == "acme"
    assert "key_" in runner.invoke(main, ["keys", "list", "--db", db]).output
    result = runner.invoke(main, ["keys", "revoke", entry["key_id"], "--db", db])
    assert result.exit_code == 0 and "revoked" in result.output
    with memci.Engine.open(db) as eng:
        assert KeyStore(eng.store).tenant_of(key) is None
    result = runner.invoke(main, ["keys", "revoke", "key_nope", "--db", db])
    assert result.exit_code == 2 and "memci keys list" in result.output


def test_serve_refuses_no_auth_on_a_public_host() -> None:
    result = CliRunner().invoke(main, ["serve", "--no-auth", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "loopback" in result.output


def test_serve_subprocess_answers_and_stops_on_sigterm(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    with memci.Engine.open(db) as eng:
        _, key = KeyStore(eng.store).create("acme")
    server = ServeProcess(db).start()
    try:
        with httpx.Client(base_url=server.url, timeout=10, headers=auth(key)) as http:
            assert http.get("/healthz").status_code == 200
            r = http.post("/v1/sessions/p/messages", json={"role": "user", "content": "hi"})
            assert r.status_code == 200
    finally:
        code = server.stop()
    assert code == 0
    with memci.Engine.open(db) as eng:
        assert [m.content for m in eng.session("p", tenant="acme").messages()] == ["hi"]


def test_unexpected_errors_are_json_500(engine: memci.Engine, keys: dict[str, str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(engine, ServerConfig())

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internals")

    with TestClient(app, raise_server_exceptions=False) as c:
        c.post("/v1/sessions/x/messages", json={"role": "user", "content": "hi"},
               headers=auth(keys["acme"]))
        monkeypatch.setattr(memci.Session, "stats", broken)
        r = c.get("/v1/sessions/x/stats", headers=auth(keys["acme"]))
    assert r.status_code == 500
    assert r.json() == {"error": {"code": "internal_error", "message": "internal server error"}}
