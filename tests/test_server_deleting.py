"""Deleting over REST and the CLI: the same operations, tenant-checked, typed errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")

from click.testing import CliRunner
from fastapi.testclient import TestClient

import memci
from memci.cli import main
from memci.server import KeyStore, ServerConfig, create_app

MARK = "QZXMARK"


@pytest.fixture
def engine(db_path: Path) -> Iterator[memci.Engine]:
    with memci.Engine.open(db_path, workers=0) as e:
        yield e


@pytest.fixture
def keys(engine: memci.Engine) -> dict[str, str]:
    store = KeyStore(engine.store)
    return {"acme": store.create("acme")[1], "globex": store.create("globex")[1]}


@pytest.fixture
def client(engine: memci.Engine) -> Iterator[TestClient]:
    with TestClient(create_app(engine, ServerConfig())) as c:
        yield c


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _add(client: TestClient, key: str, sid: str, user: str, *texts: str) -> None:
    body = {"user": user, "messages": [{"role": "user", "content": t} for t in texts]}
    answer = client.post(f"/v1/sessions/{sid}/messages", json=body, headers=_auth(key))
    assert answer.status_code == 200, answer.text


def test_rest_retract_pop_clear_delete(client: TestClient, keys: dict[str, str]) -> None:
    acme = _auth(keys["acme"])
    _add(client, keys["acme"], "s", "u1", "one", f"two {MARK}", "three", "four")
    answer = client.delete("/v1/sessions/s/messages/2", headers=acme)
    assert answer.status_code == 200
    assert [m["seq"] for m in answer.json()["removed"]] == [2]
    answer = client.delete("/v1/sessions/s/messages/last", headers=acme)
    assert [m["content"] for m in answer.json()["removed"]] == ["four"]
    listed = client.get("/v1/sessions/s/messages", headers=acme).json()["messages"]
    assert [m["seq"] for m in listed] == [1, 3]
    assert client.delete("/v1/sessions/s/messages/2", headers=acme).json()["error"][
        "code"] == "unknown_message"
    assert client.delete("/v1/sessions/s/messages/0", headers=acme).status_code == 400
    answer = client.delete("/v1/sessions/s/messages", headers=acme)
    assert answer.json() == {"session": "s", "removed": 2}
    assert client.get("/v1/sessions/s", headers=acme).json()["messages"] == 0
    answer = client.delete("/v1/sessions/s", headers=acme)
    assert answer.status_code == 200 and answer.json()["erasure"]["counts"]["sessions"] == 1
    assert client.get("/v1/sessions/s", headers=acme).status_code == 404
    assert client.delete("/v1/sessions/s", headers=acme).status_code == 404
    log = client.get("/v1/erasures", headers=acme).json()["erasures"]
    assert [e["action"] for e in log] == ["retract", "retract", "clear", "delete_session"]
    assert all(e["actor"].startswith("rest:key-") for e in log)
    assert keys["acme"] not in str(log)


def test_rest_deleting_stays_in_the_keys_tenant(
    client: TestClient, keys: dict[str, str], engine: memci.Engine,
) -> None:
    _add(client, keys["acme"], "s", "u1", f"acme {MARK}")
    _add(client, keys["globex"], "s", "u1", "globex text")
    globex = _auth(keys["globex"])
    # globex deletes its own "s" and erases its own u1: acme's are untouched.
    assert client.delete("/v1/sessions/s/messages/1", headers=globex).status_code == 200
    assert client.delete("/v1/users/u1", headers=globex).status_code == 200
    assert client.get("/v1/sessions/s", headers=globex).status_code == 404
    acme = client.get("/v1/sessions/s/messages", headers=_auth(keys["acme"])).json()
    assert [m["content"] for m in acme["messages"]] == [f"acme {MARK}"]
    assert [e.action for e in engine.erasures("acme")] == []
    assert client.get("/v1/erasures", headers=_auth(keys["acme"])).json() == {"erasures": []}
    assert client.delete("/v1/users/u1").status_code == 401  # no key, no deletion
    assert client.delete("/v1/sessions/s", headers=_auth("mk_wrong")).status_code == 401
    assert engine.session("s", tenant="acme").count() == 1


def test_rest_erase_user(client: TestClient, keys: dict[str, str]) -> None:
    acme = _auth(keys["acme"])
    _add(client, keys["acme"], "a", "alice", f"alice {MARK}")
    _add(client, keys["acme"], "b", "bob", "bob text")
    answer = client.delete("/v1/users/alice", headers=acme)
    assert answer.status_code == 200
    erasure = answer.json()["erasure"]
    assert erasure["action"] == "erase_user" and erasure["counts"]["messages"] == 1
    assert "alice" not in str(erasure)
    sessions = client.get("/v1/sessions", headers=acme).json()["sessions"]
    assert [s["session"] for s in sessions] == ["b"]
    # Adding to the erased user's session name starts a new, empty session.
    _add(client, keys["acme"], "a", "alice", "new")
    assert client.get("/v1/sessions/a", headers=acme).json()["messages"] == 1


# -- the CLI -----------------------------------------------------------------------------


def _cli(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.output


def test_cli_deletes_with_confirmation(db_path: Path) -> None:
    with memci.Engine.open(db_path, workers=0) as engine:
        for name, user in (("s1", "alice"), ("s2", "alice"), ("s3", "bob")):
            s = engine.session(name, user=user)
            for i in range(3):
                s.add({"role": "user", "content": f"{name} {i} {MARK if user == 'alice' else ''}"})
    db = str(db_path)
    code, out = _cli("retract", "s1", "--last", "--db", db, stdin="n\n")
    assert code == 1 and "Aborted" in out  # answered no: nothing deleted
    code, out = _cli("retract", "s1", "2", "--db", db, "--yes")
    assert code == 0 and "seq 2" in out
    code, _ = _cli("retract", "s1", "--db", db, "--yes")
    assert code == 2  # neither SEQ nor --last
    code, out = _cli("retract", "s1", "9", "--db", db, "--yes")
    assert code == 2 and "UnknownMessageError" in out
    code, out = _cli("clear", "s1", "--db", db, stdin="y\n")
    assert code == 0 and "deleted 2 messages" in out
    code, out = _cli("delete", "nope", "--db", db, "--yes")
    assert code == 2 and "no session 'nope'" in out
    code, out = _cli("delete", "s1", "--db", db, "--yes")
    assert code == 0
    code, out = _cli("erase-user", "alice", "--db", db, "--yes")
    assert code == 0 and "erased user 'alice'" in out
    code, out = _cli("erasures", "--db", db, "--json")
    assert code == 0
    assert [line.split('"action": "')[1].split('"')[0] for line in out.splitlines()] == [
        "retract", "clear", "delete_session", "erase_user"]
    assert "alice" not in out and MARK not in out
    with memci.Engine.open(db_path, workers=0) as engine:
        assert [r.name for r in engine.sessions()] == ["s3"]
        assert engine.session("s3").count() == 3
    assert MARK.encode() not in db_path.read_bytes()


def _mcp_search(client: TestClient, key: str, sid: str, user: str) -> str:
    """One MCP ``search`` (read only) in session ``sid`` as ``user``; the tool's answer."""
    base = {"Accept": "application/json, text/event-stream", **_auth(key),
            "X-Memci-Session": sid, "X-Memci-User": user}
    opened = client.post("/mcp", headers=base, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
    assert opened.status_code == 200, opened.text
    follow = {**base, "mcp-session-id": opened.headers["mcp-session-id"],
              "mcp-protocol-version": "2025-06-18"}
    client.post("/mcp", headers=follow,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    answer = client.post("/mcp", headers=follow, json={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": MARK}}})
    return answer.text


def test_no_entry_point_hands_a_session_to_another_user(
    engine: memci.Engine, keys: dict[str, str],
) -> None:
    pytest.importorskip("mcp", reason="needs memci[mcp]")
    config = ServerConfig(upstream_base_url="http://127.0.0.1:9/v1")
    acme = _auth(keys["acme"])
    # /mcp answers loopback names and addresses only (DNS rebinding): not "testserver".
    with TestClient(create_app(engine, config), base_url="http://127.0.0.1") as client:
        _add(client, keys["acme"], "s", "alice", f"alice {MARK}")
        message = {"role": "user", "content": "bob was here"}
        refused = [
            client.post("/v1/sessions/s/messages", headers=acme,
                        json={"user": "bob", "messages": [message]}),
            client.post("/v1/sessions/s/messages?user=bob", headers=acme, json=message),
            client.post("/v1/chat/completions", json={"model": "m", "messages": [message]},
                        headers={**acme, "X-Memci-Session": "s", "X-Memci-User": "bob"}),
        ]
        for answer in refused:
            assert answer.status_code == 409, answer.text
            assert answer.json()["error"]["code"] == "owner_conflict"
        assert "OwnerConflictError" in _mcp_search(client, keys["acme"], "s", "bob")
        assert client.get("/v1/sessions/s", headers=acme).json()["user"] == "alice"
        answer = client.delete("/v1/users/alice", headers=acme)
        assert answer.json()["erasure"]["counts"] == {"sessions": 1, "messages": 1,
                                                       "index": 1}
        assert client.get("/v1/sessions/s", headers=acme).status_code == 404


def test_refused_tool_outputs_leave_no_file(
    client: TestClient, keys: dict[str, str], engine: memci.Engine,
) -> None:
    acme = _auth(keys["acme"])
    _add(client, keys["acme"], "s", "u1", "run the build")
    output = "".join(f"line {i} of a long build log\n" for i in range(40_000))  # ~1 MiB
    for i in range(10):
        answer = client.post("/v1/sessions/s/messages", headers=acme, json={
            "role": "tool", "tool_call_id": f"never-made-{i}", "content": f"{i} {output}"})
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == "orphan_tool_result"
    folder = engine.workspace.artifacts.files_dir
    assert folder is not None
    assert not folder.exists() or not [p for p in folder.rglob("*") if p.is_file()]

