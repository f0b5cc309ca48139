"""The server's limits (docs/server.md, "Limits"): what one client can make it hold.

- session objects: a server that opened many sessions holds a bounded number of idle ones;
- response size: every list the server answers with stops at a byte budget and says where
  to continue;
- slow clients and connection caps: a real ``memci serve`` with many slow sockets still
  answers its health check and an authenticated add.
"""

from __future__ import annotations

import gc
import json
import re
import resource
import socket
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")

import httpx
from fastapi.testclient import TestClient

import memci
from memci._session import Session
from memci._sessioncache import WARM_SESSIONS
from memci.memory._index import _SESSIONS_KEPT
from memci.server import KeyStore, ServerConfig, create_app

from .test_server import ServeProcess, auth


@pytest.fixture
def acme(engine: memci.Engine) -> str:
    return KeyStore(engine.store).create("acme")[1]


@pytest.fixture
def client(engine: memci.Engine, acme: str) -> Iterator[TestClient]:
    with TestClient(create_app(engine, ServerConfig())) as c:
        c.headers.update(auth(acme))
        yield c


def _live_sessions(engine: memci.Engine) -> list[Session]:
    """The session objects of ``engine`` alive in this process."""
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, Session) and o.engine is engine]


# -- session objects ----------------------------------------------------------------------


def test_the_server_holds_a_bounded_number_of_idle_sessions(
        client: TestClient, engine: memci.Engine) -> None:
    opened = WARM_SESSIONS + 200
    for n in range(opened):
        assert client.post(f"/v1/sessions/s{n}/messages",
                           json={"role": "user", "content": f"note {n}"}).status_code == 200
        assert client.get(f"/v1/sessions/s{n}").status_code == 200
    assert len(_live_sessions(engine)) <= WARM_SESSIONS
    # nor does the search index remember tool calls of every session it ever indexed
    assert len(engine.memory.messages._own.calls) <= _SESSIONS_KEPT
    # the sessions let go of are whole in the store and open again on the next request
    r = client.get("/v1/sessions/s0/messages")
    assert [m["content"] for m in r.json()["messages"]] == ["note 0"]
    assert client.post("/v1/sessions/s0/messages",
                       json={"role": "assistant", "content": "noted"}).json()[
        "messages"][0]["seq"] == 2
    assert len(_live_sessions(engine)) <= WARM_SESSIONS


def test_a_session_in_use_is_one_object_however_many_others_open(
        engine: memci.Engine) -> None:
    held = engine.session("held")
    for n in range(WARM_SESSIONS + 50):
        engine.session(f"other-{n}")
    assert engine.session("held") is held  # its lock still serializes this process
    assert len(_live_sessions(engine)) <= WARM_SESSIONS + 1


# -- response size: pages by bytes ---------------------------------------------------------

BUDGET = 64 * 1024  # the smallest budget the server takes


@pytest.fixture
def small(engine: memci.Engine, acme: str) -> Iterator[TestClient]:
    """A server whose pages stop at 64 KiB."""
    with TestClient(create_app(engine, ServerConfig(max_response_bytes=BUDGET))) as c:
        c.headers.update(auth(acme))
        yield c


def _heavy(n: int, size: int = 30_000) -> dict[str, Any]:
    """A message whose metadata is ``size`` bytes."""
    return {"role": "user" if n % 2 == 0 else "assistant", "content": f"turn {n} about otters",
            "metadata": {"blob": "m" * size}}


def test_reading_messages_comes_in_pages_that_stop_at_the_byte_budget(
        small: TestClient) -> None:
    for n in range(40):
        assert small.post("/v1/sessions/big/messages", json=_heavy(n)).status_code == 200
    seen: list[int] = []
    after: int | None = 0
    while after is not None:
        r = small.get("/v1/sessions/big/messages", params={"after": after, "limit": 10_000})
        assert r.status_code == 200
        assert len(r.content) <= BUDGET + 1024  # a page holds what fits (and its frame)
        page = r.json()
        assert page["messages"], page
        seen += [m["seq"] for m in page["messages"]]
        after = page["next_after"]
    assert seen == list(range(1, 41))  # every message once, in order, nothing lost
    # one message larger than the budget comes alone, and the page after it goes on
    small.post("/v1/sessions/big/messages", json=_heavy(40, size=3 * BUDGET))
    small.post("/v1/sessions/big/messages", json=_heavy(41, size=10))
    alone = small.get("/v1/sessions/big/messages", params={"after": 40}).json()
    assert [m["seq"] for m in alone["messages"]] == [41] and alone["next_after"] == 41
    rest = small.get("/v1/sessions/big/messages", params={"after": 41}).json()
    assert [m["seq"] for m in rest["messages"]] == [42] and rest["next_after"] is None


def test_a_page_of_messages_costs_about_its_budget_in_memory(
        engine: memci.Engine, acme: str) -> None:
    budget = 1024 * 1024
    with TestClient(create_app(engine, ServerConfig(max_response_bytes=budget))) as c:
        c.headers.update(auth(acme))
        for n in range(20):  # 20 MiB of metadata in all
            c.post("/v1/sessions/huge/messages", json=_heavy(n, size=1024 * 1024))
        tracemalloc.start()
        try:
            r = c.get("/v1/sessions/huge/messages", params={"limit": 10_000})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert r.status_code == 200 and r.json()["next_after"] is not None
    assert peak < 12 * budget, f"one page took {peak / 2**20:.0f} MiB"  # not the 20 MiB read


def test_sessions_search_hits_and_artifacts_say_where_to_continue(
        small: TestClient) -> None:
    for name in ("a", "b", "c", "d", "e"):
        small.post(f"/v1/sessions/{name}/messages", json={"role": "user", "content": name})
    names: list[str] = []
    after: int | None = 0
    while after is not None:
        page = small.get("/v1/sessions", params={"after": after, "limit": 2}).json()
        names += [s["session"] for s in page["sessions"]]
        after = page["next_after"]
    assert names == ["a", "b", "c", "d", "e"]
    # search hits carry their messages (and metadata): a page stops at the budget too
    for n in range(12):
        small.post("/v1/sessions/otters/messages", json=_heavy(n))
    found: list[int] = []
    offset: int | None = 0
    while offset is not None:
        r = small.get("/v1/sessions/otters/search",
                      params={"q": "otters", "k": 12 - offset, "offset": offset})
        assert len(r.content) <= BUDGET + 1024
        page = r.json()
        found += [h["message"]["seq"] for h in page["hits"]]
        offset = page["next_offset"]
    assert sorted(found) == list(range(1, 13))
    # a stored tool output is read a range at a time; the answer says where the next starts
    # (long enough that the context shows it by its view, with its pointer)
    output = "".join(f"line {i}: ok\n" for i in range(3000)) + "END"
    small.post("/v1/sessions/tools/messages", json=[
        {"role": "user", "content": "list it"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": output}])
    built = small.post("/v1/sessions/tools/context", json={}).json()
    artifact = re.search(r"artifact:([0-9a-f]+)", json.dumps(built)).group(1)  # type: ignore[union-attr]
    text, offset = "", 0
    while offset is not None:
        page = small.get(f"/v1/sessions/tools/artifacts/{artifact}",
                         params={"offset": offset, "length": 8000}).json()
        text += page["text"]
        offset = page["next_offset"]
    assert text == output


def test_answers_to_writes_stay_within_the_budget_and_keep_every_seq(
        small: TestClient) -> None:
    r = small.post("/v1/sessions/w/messages", json=[_heavy(n) for n in range(6)])
    assert r.status_code == 200 and len(r.content) <= BUDGET + 1024
    stored = r.json()["messages"]
    assert [m["seq"] for m in stored] == [1, 2, 3, 4, 5, 6]
    assert stored[0]["metadata"]["blob"] and stored[-1] == {"seq": 6, "role": "assistant",
                                                             "omitted": True}


# -- slow clients and connection caps (a real memci serve) ---------------------------------


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _slow_sockets(url: str, count: int, opening: bytes) -> list[socket.socket]:
    """``count`` connections that send ``opening`` and then nothing more."""
    held = []
    for _ in range(count):
        sock = socket.create_connection(_address(url), timeout=30)
        held.append(sock)
        try:
            sock.sendall(opening)
        except OSError:  # already closed by the server to make room: as a client sees it
            pass
    return held


def _closed_by_server(sock: socket.socket) -> bytes:
    """What the server sent before it closed ``sock`` (waits up to 60 s for the close)."""
    sock.settimeout(60)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except ConnectionResetError:
        pass
    return received


@pytest.fixture
def many_files() -> None:
    """Let this process hold 1,500 sockets (skip where the hard limit forbids it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1500:
        if hard != resource.RLIM_INFINITY and hard < 1500:
            pytest.skip(f"the open-file limit ({hard}) is below 1,500")
        resource.setrlimit(resource.RLIMIT_NOFILE, (1500, hard))


@pytest.mark.slow
@pytest.mark.usefixtures("many_files")
def test_slow_sockets_do_not_keep_out_the_health_check_or_an_add(tmp_path: Path) -> None:
    db = tmp_path / "slow.db"
    with memci.Engine.open(db, workers=0) as engine:
        key = KeyStore(engine.store).create("acme")[1]
    # a common default of `ulimit -n`: 1,100 slow sockets used to take every descriptor
    with ServeProcess(db, open_files=1024) as server:
        held = _slow_sockets(server.url, 1100, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        try:
            with httpx.Client(base_url=server.url, timeout=30) as http:
                assert http.get("/healthz").json()["status"] == "ok"
                r = http.post("/v1/sessions/s/messages", headers=auth(key),
                              json={"role": "user", "content": "still here"})
                assert r.status_code == 200, r.text
        finally:
            for sock in held:
                sock.close()
    with memci.Engine.open(db, workers=0) as engine:
        assert [m.content for m in engine.session("s", tenant="acme").messages()] == [
            "still here"]


@pytest.mark.slow
def test_headers_and_bodies_that_do_not_arrive_in_time_are_cut_off(tmp_path: Path) -> None:
    db = tmp_path / "timeouts.db"
    with ServeProcess(db, "--no-auth", "--header-timeout", "1", "--body-timeout", "1") as server:
        (headers,) = _slow_sockets(server.url, 1, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        (body,) = _slow_sockets(server.url, 1, (
            b"POST /v1/sessions/cut/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"role\": "))
        with headers, body:
            assert _closed_by_server(headers) == b""
            assert _closed_by_server(body) == b""
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert http.get("/healthz").status_code == 200
            assert http.get("/v1/sessions/cut").status_code == 404  # nothing stored
        # a body that keeps arriving, if slowly, is not cut off
        with socket.create_connection(_address(server.url), timeout=30) as steady:
            message = b'{"role": "user", "content": "' + b"x" * 2000 + b'"}'
            steady.sendall(b"POST /v1/sessions/steady/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           b"Content-Type: application/json\r\nConnection: close\r\n"
                           b"Content-Length: " + str(len(message)).encode() + b"\r\n\r\n")
            for start in range(0, len(message), 500):
                steady.sendall(message[start:start + 500])
                time.sleep(0.2)
            assert _closed_by_server(steady).startswith(b"HTTP/1.1 200")


@pytest.mark.slow
def test_a_client_address_at_its_cap_of_busy_connections_is_told_so(tmp_path: Path) -> None:
    db = tmp_path / "cap.db"
    with ServeProcess(db, "--no-auth", "--max-connections-per-client", "3",
                      "--body-timeout", "120") as server:
        # idle connections make room for a newcomer
        idle = _slow_sockets(server.url, 3, b"")
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert http.get("/healthz").status_code == 200
        for sock in idle:
            sock.close()
        # connections in the middle of a request (a body on its way) are not closed
        busy = _slow_sockets(server.url, 3, (
            b"POST /v1/sessions/b/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"))
        try:
            time.sleep(0.5)  # the server has read their headers
            (late,) = _slow_sockets(server.url, 1, b"")
            with late:
                answer = _closed_by_server(late)
            assert answer.startswith(b"HTTP/1.1 503"), answer
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == (
                "too_many_connections")
        finally:
            for sock in busy:
                sock.close()
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert http.get("/healthz").status_code == 200
