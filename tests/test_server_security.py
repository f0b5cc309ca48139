"""The server's security model: who sets what, what a tenant can reach, no 500 for bad input.

- settings: a request sets the session knobs, checked by name and type (400 naming the
  key); file roots and the message size come from the operator (server options, a
  tenant's key policy), and a request may only narrow them;
- isolation: two tenants with two keys against a real server on 127.0.0.1: neither reaches
  the other's artifacts or files, nor memci's own store, by any path it can name;
- hardening: deep bodies, dates and ints out of range, wrong types answer 4xx; and a
  schema-driven fuzz (schemathesis, fixed seed, bounded) finds no 5xx.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")

import httpx
from click.testing import CliRunner
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

import memci
from memci.cli import _server, main
from memci.server import KeyPolicy, KeyStore, ServerConfig, create_app
from memci.server._models import MessagesBody

from .test_server import LiveServer, auth

assert _server  # registers the keys commands

OUTPUT = "\n".join(f"line {i}: the secret build log of this tenant" for i in range(3000))


def _tool_turn(output: str, call: str = "c1") -> list[dict[str, Any]]:
    return [{"role": "user", "content": "run it"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": call, "content": output}]


def _run(http: httpx.Client | TestClient, sid: str, tool: str, **args: Any) -> str:
    r = http.post(f"/v1/sessions/{sid}/tools/{tool}", json=args)
    assert r.status_code in (200, 404), r.text
    return str(r.json()["result"]) if r.status_code == 200 else "error: " + r.text


@pytest.fixture
def roots(tmp_path: Path) -> dict[str, Path]:
    """Each tenant's own directory with a secret, a shared one, and memci's data folder."""
    made = {}
    for name in ("acme", "globex", "shared"):
        folder = tmp_path / "files" / name
        (folder / "sub").mkdir(parents=True)
        (folder / "secret.txt").write_text(f"{name} secret\n")
        (folder / "sub" / "notes.txt").write_text(f"{name} notes\n")
        made[name] = folder
    made["data"] = tmp_path / "data"
    made["data"].mkdir()
    return made


@pytest.fixture
def engine(roots: dict[str, Path]) -> Iterator[memci.Engine]:
    eng = memci.Engine.open(roots["data"] / "memci.db")
    yield eng
    eng.close()


@pytest.fixture
def keys(engine: memci.Engine, roots: dict[str, Path]) -> dict[str, str]:
    store = KeyStore(engine.store)
    return {
        "acme": store.create("acme", policy=KeyPolicy(file_roots=(str(roots["acme"]),)))[1],
        "globex": store.create("globex",
                               policy=KeyPolicy(file_roots=(str(roots["globex"]),)))[1],
        "plain": store.create("plain")[1],  # no policy: the server's defaults
    }


def _client(engine: memci.Engine, key: str, config: ServerConfig | None = None,
            keys: KeyStore | None = None) -> TestClient:
    client = TestClient(create_app(engine, config or ServerConfig(), keys=keys))
    client.headers.update(auth(key))
    return client


# -- 1. who sets what -----------------------------------------------------------------------


def test_a_request_cannot_widen_file_roots(engine: memci.Engine, keys: dict[str, str]) -> None:
    """The issue's attack: settings {"file_roots": ["/"]} then file_snippet /etc/passwd."""
    with _client(engine, keys["plain"]) as c:
        r = c.post("/v1/sessions/s/messages", json={
            "messages": _tool_turn("out"), "settings": {"file_roots": ["/"]}})
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "invalid_setting"
        assert "file_roots" in r.json()["error"]["message"]
        assert engine.store.session("plain", "s") is None  # nothing stored
        assert c.post("/v1/sessions/s/messages", json=_tool_turn("out")).status_code == 200
        # the tenant has no roots, so the file tools read nothing, whatever it names
        for path in ("/etc/passwd", "../../../../etc/passwd", "etc/passwd"):
            for tool, args in (("file_snippet", {"path": path}),
                               ("grep", {"target": path, "pattern": "root"})):
                text = _run(c, "s", tool, **args)
                assert text.startswith("error:") and "root:x" not in text, (tool, path, text)
    with _client(engine, keys["acme"]) as c:  # acme's own roots: "/" is not inside them
        r = c.post("/v1/sessions/s/messages", json={
            "messages": _tool_turn("out"), "settings": {"file_roots": ["/"]}})
        assert r.status_code == 400 and "outside the file roots" in r.json()["error"]["message"]


@pytest.mark.parametrize(("settings", "named"), [
    ({"tenant": "globex"}, "tenant"),
    ({"user": "someone"}, "user"),
    ({"name": "other"}, "name"),
    ({"nonsense": 1}, "nonsense"),
    ({"file_roots": 5}, "file_roots"),
    ({"file_roots": "/tmp"}, "file_roots"),
    ({"file_roots": [5]}, "file_roots"),
    ({"model": 5}, "model"),
    ({"model": "x" * 5000}, "model"),
    ({"model": "\ud800"}, "model"),
    ({"context_window": "big"}, "context_window"),
    ({"context_window": True}, "context_window"),
    ({"context_window": 2**70}, "context_window"),
    ({"reserve_ratio": 1.5}, "reserve_ratio"),
    ({"tokenizer": "nope"}, "tokenizer"),
    ({"tools": 5}, "tools"),
    ({"tools": ["rm_rf"]}, "tools"),
    ({"retrieval": "yes"}, "retrieval"),
    ({"max_message_bytes": 2**70}, "max_message_bytes"),
    ({"max_message_bytes": 11 * 1024 * 1024}, "max_message_bytes"),  # over the operator's
    ("not an object", "settings"),
])
def test_bad_settings_are_400_naming_the_key(engine: memci.Engine, keys: dict[str, str],
                                             settings: Any, named: str) -> None:
    with _client(engine, keys["acme"]) as c:
        r = c.post("/v1/sessions/bad/messages", content=json.dumps({  # \ud800 escaped
            "messages": [{"role": "user", "content": "hi"}], "settings": settings}))
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == "invalid_setting"
        assert named in r.json()["error"]["message"]
    assert engine.store.session("acme", "bad") is None


def test_request_settings_apply_and_host_settings_only_narrow(
        engine: memci.Engine, keys: dict[str, str], roots: dict[str, Path]) -> None:
    acme = roots["acme"]
    with _client(engine, keys["acme"]) as c:
        r = c.post("/v1/sessions/n/messages", json={
            "messages": _tool_turn("out"),
            "settings": {"model": "gpt-4o-mini", "strategy": "oldest", "context_window": 9000,
                         "file_roots": [str(acme / "sub")], "max_message_bytes": 4096}})
        assert r.status_code == 200, r.text
        session = engine.session("n", tenant="acme")
        assert session.settings.strategy == "oldest" and session.settings.context_window == 9000
        assert session.settings.file_roots == (os.path.realpath(acme / "sub"),)
        assert session.settings.max_message_bytes == 4096
        assert "acme notes" in _run(c, "n", "file_snippet", path="notes.txt")
        assert _run(c, "n", "file_snippet", path=str(acme / "secret.txt")).startswith("error:")
        assert _run(c, "n", "file_snippet", path="../secret.txt").startswith("error:")
        r = c.post("/v1/sessions/n/messages", json={"role": "user", "content": "x" * 5000})
        assert r.status_code == 400 and r.json()["error"]["code"] == "message_too_large"
        # a session that names no roots gets all of the tenant's
        c.post("/v1/sessions/all/messages", json=_tool_turn("out"))
        assert "acme secret" in _run(c, "all", "file_snippet", path="secret.txt")
        # a relative or dotted root that resolves outside is refused
        for root in (str(acme / ".." / "globex"), str(acme / "sub" / ".." / ".."), "sub", "."):
            r = c.post("/v1/sessions/m/messages", json={
                "messages": _tool_turn("out"), "settings": {"file_roots": [root]}})
            assert r.status_code == 400, root


def test_the_python_api_checks_every_setting(engine: memci.Engine) -> None:
    for settings in ({"file_roots": 5}, {"file_roots": "/"}, {"model": 5},
                     {"context_window": True}, {"tokenizer": "nope"}, {"tools": [1]},
                     {"max_message_bytes": 2**70}, {"reserve_ratio": float("nan")},
                     {"provider": None, "language": ["en"]}):
        with pytest.raises(memci.ConfigError):
            engine.session("py", **settings)
        assert engine.store.session("default", "py") is None  # nothing saved
    with pytest.raises(memci.InvalidInputError):
        engine.session("py", user=5)  # type: ignore[arg-type]
    session = engine.session("py", file_roots=[Path("/tmp")], model="gpt-4o")
    assert session.settings.file_roots == ("/tmp",)  # a Path is fine, saved as text
    assert engine.store.session("default", "py").settings["file_roots"] == ["/tmp"]


def test_the_python_api_refuses_out_of_range_search_and_time_words(engine: memci.Engine) -> None:
    from datetime import UTC, datetime

    session = engine.session("q")
    session.add({"role": "user", "content": "hello there"})
    for k in (0, 2**70, "3"):
        with pytest.raises(memci.ConfigError):
            session.search("hello", k=k)  # type: ignore[arg-type]
    for now in (datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, tzinfo=UTC)):
        for q in ("yesterday", "9999999 days ago", "99999 years ago", "last year"):
            assert isinstance(session.search(q, now=now), list)


def test_saved_settings_of_older_versions_load_and_are_narrowed(
        engine: memci.Engine, keys: dict[str, str], roots: dict[str, Path]) -> None:
    """A store written before this fix (bad types, or the attack's roots) still opens."""
    engine.session("old", tenant="plain").add({"role": "user", "content": "hi"})
    engine.session("old", tenant="acme").add({"role": "user", "content": "hi"})
    with sqlite3.connect(roots["data"] / "memci.db") as db:
        db.execute("UPDATE sessions SET settings = ? WHERE name = 'old'", (json.dumps(
            {"file_roots": ["/"], "tools": [1], "context_window": True, "model": 7}),))
    db.close()
    engine.close()
    with memci.Engine.open(roots["data"] / "memci.db") as eng:
        assert eng.session("old", tenant="plain").settings.file_roots == ("/",)  # embedded
        with _client(eng, keys["plain"]) as c:
            assert c.get("/v1/sessions/old").status_code == 200
            assert eng.session("old", tenant="plain").settings.file_roots == ()
            c.post("/v1/sessions/old/messages", json=_tool_turn("out", "c9"))
            assert _run(c, "old", "file_snippet", path="/etc/passwd").startswith("error:")
        with _client(eng, keys["acme"]) as c:
            settings = c.post("/v1/sessions/old/context", json={}).status_code
            assert settings == 200
            assert eng.session("old", tenant="acme").settings.file_roots == (
                os.path.realpath(roots["acme"]),)


def test_server_options_and_key_policies(engine: memci.Engine, roots: dict[str, Path]) -> None:
    store = KeyStore(engine.store, cache_seconds=0)
    default = store.create("default-tenant")[1]
    config = ServerConfig(file_roots=(str(roots["shared"]),), max_message_bytes=2048)
    with _client(engine, default, config, keys=store) as c:
        c.post("/v1/sessions/s/messages", json=_tool_turn("out"))
        assert "shared secret" in _run(c, "s", "file_snippet", path="secret.txt")
        r = c.post("/v1/sessions/s/messages", json={"role": "user", "content": "y" * 3000})
        assert r.status_code == 400
        # the operator gives the tenant its own policy: it applies to open sessions
        store.set_policy("default-tenant", KeyPolicy(file_roots=(str(roots["globex"]),),
                                                     max_message_bytes=8192))
        assert "globex secret" in _run(c, "s", "file_snippet", path="secret.txt")
        assert c.post("/v1/sessions/s/messages",
                      json={"role": "user", "content": "y" * 3000}).status_code == 200
        store.set_policy("default-tenant", KeyPolicy(file_roots=()))
        assert _run(c, "s", "file_snippet", path="secret.txt").startswith("error:")
    # a new key of a tenant takes its policy; a different one is refused
    record, _ = store.create("default-tenant")
    assert record.policy == KeyPolicy(file_roots=())
    with pytest.raises(memci.ConfigError, match="memci keys policy"):
        store.create("default-tenant", policy=KeyPolicy(max_message_bytes=1))


@pytest.mark.parametrize("where", ["data", "files"])
def test_no_root_may_reach_the_store_or_another_tenant(
        engine: memci.Engine, roots: dict[str, Path], where: str) -> None:
    store = KeyStore(engine.store)
    store.create("acme", policy=KeyPolicy(file_roots=(str(roots["acme"]),)))
    guarded = [engine.store.path, Path(engine.workspace.artifacts.files_dir)]
    wide = (roots["data"] if where == "data" else roots["acme"]).parent  # holds it
    with pytest.raises(memci.ConfigError):
        create_app(engine, ServerConfig(file_roots=(str(wide),)))
    with pytest.raises(memci.ConfigError):
        store.create("globex", policy=KeyPolicy(file_roots=(str(wide),)), guarded=guarded)
    with pytest.raises(memci.ConfigError):
        create_app(engine, ServerConfig(file_roots=(str(roots["acme"] / "sub"),)))
    # a policy that breaks the rules anyway (written by hand) is dropped at run time
    key = store.create("rogue")[1]
    with engine.store.write() as db:
        db.execute("UPDATE server_api_keys SET policy = ? WHERE tenant = 'rogue'",
                   (json.dumps({"file_roots": [str(roots["data"])]}),))
    with _client(engine, key) as c:
        c.post("/v1/sessions/r/messages", json=_tool_turn(OUTPUT))
        assert engine.session("r", tenant="rogue").settings.file_roots == ()
        assert _run(c, "r", "file_snippet", path="memci.db").startswith("error:")


def test_keys_commands_set_show_and_refuse_policies(tmp_path: Path,
                                                    roots: dict[str, Path]) -> None:
    db = str(roots["data"] / "k.db")
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(main, ["keys", *args, "--db", db])

    result = run("create", "acme", "--file-root", str(roots["acme"]))
    assert result.exit_code == 0 and str(roots["acme"]) in result.output
    result = run("create", "globex", "--file-root", str(roots["acme"] / "sub"))
    assert result.exit_code == 2 and "tenant 'acme'" in result.output
    result = run("create", "globex", "--file-root", str(roots["data"]))
    assert result.exit_code == 2 and "memci's own file" in result.output
    assert run("create", "globex").exit_code == 0
    result = run("policy", "globex", "--file-root", str(roots["globex"]),
                 "--max-message-bytes", "4096")
    assert result.exit_code == 0 and "4096" in result.output
    assert str(roots["globex"]) in run("policy", "globex").output
    listed = json.loads(run("list", "--json").output)
    assert {k["tenant"]: k["policy"] for k in listed}["globex"] == {
        "file_roots": [str(roots["globex"])], "max_message_bytes": 4096}
    assert "server defaults" in run("policy", "globex", "--reset").output
    assert run("policy", "nobody").exit_code == 2


# -- 2. what a tenant can reach (a real server, two tenants, two keys) -------------------------


def test_two_tenants_reach_only_their_own_files_and_artifacts(
        engine: memci.Engine, keys: dict[str, str], roots: dict[str, Path]) -> None:
    acme, globex = roots["acme"], roots["globex"]
    (globex / "to-acme").symlink_to(acme / "secret.txt")
    (globex / "acme-dir").symlink_to(acme)
    with LiveServer(create_app(engine, ServerConfig())) as live, \
            httpx.Client(base_url=live.url, timeout=30, headers=auth(keys["acme"])) as a, \
            httpx.Client(base_url=live.url, timeout=30, headers=auth(keys["globex"])) as g:
        assert a.post("/v1/sessions/s/messages", json=_tool_turn(OUTPUT)).status_code == 200
        payload = json.dumps(a.post("/v1/sessions/s/context", json={}).json()["payload"])
        found = re.search(r"artifact:([0-9a-f]{12,})", payload)
        assert found, "acme's tool output is an artifact"
        art = found.group(1)
        assert a.get(f"/v1/sessions/s/artifacts/{art}").status_code == 200
        stored = list(Path(engine.workspace.artifacts.files_dir).rglob(f"{art}*"))
        assert stored, "the large output is a file beside the database"

        # globex: no session s (404), then its own session s: still no acme artifact
        assert g.get(f"/v1/sessions/s/artifacts/{art}").status_code == 404
        assert g.post("/v1/sessions/s/messages", json=_tool_turn("mine")).status_code == 200
        r = g.get(f"/v1/sessions/s/artifacts/{art}")
        assert r.status_code == 404 and "secret build log" not in r.text
        for tool, args in (("artifact_get", {"id": art}),
                           ("artifact_get", {"id": f"artifact:{art}"}),
                           ("grep", {"target": f"artifact:{art}", "pattern": "secret"})):
            text = _run(g, "s", tool, **args)
            assert text.startswith("error:") and "secret build log" not in text, (tool, text)
        # acme's other session does not see it either: artifacts belong to a session
        a.post("/v1/sessions/other/messages", json=_tool_turn("x", "c2"))
        assert a.get(f"/v1/sessions/other/artifacts/{art}").status_code == 404

        # every path globex can name that leads to acme's files or memci's own
        names = [str(acme / "secret.txt"), "../acme/secret.txt", "acme/secret.txt",
                 f"{globex}/../acme/secret.txt", "to-acme", "acme-dir/secret.txt",
                 str(roots["data"] / "memci.db"), "../../data/memci.db", "/etc/passwd",
                 *(str(p) for p in stored), "secret.txt\x00../acme/secret.txt",
                 "~/secret.txt", "//" + str(acme / "secret.txt"), "." * 300]
        for name in names:
            for tool, args in (("file_snippet", {"path": name}),
                               ("grep", {"target": name, "pattern": "secret|line|root"})):
                text = _run(g, "s", tool, **args)
                assert text.startswith("error:"), (tool, name, text)
                assert "acme secret" not in text and "secret build log" not in text
        assert "globex secret" in _run(g, "s", "file_snippet", path="secret.txt")
        assert "acme secret" in _run(a, "s", "file_snippet", path="secret.txt")


# -- 3. bad input is 4xx, never 500 ---------------------------------------------------------------


@pytest.fixture
def client(engine: memci.Engine, keys: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(create_app(engine, ServerConfig()), raise_server_exceptions=False) as c:
        c.headers.update(auth(keys["acme"]))
        c.post("/v1/sessions/s/messages", json=_tool_turn(OUTPUT))
        yield c


DEEP_LIST = "[" * 100_000 + "]" * 100_000
DEEP_META = ('{"role": "user", "content": "x", "metadata": ' + '{"a": ' * 500 + "1"
             + "}" * 500 + "}")


@pytest.mark.parametrize("path", [
    "/v1/sessions/s/messages", "/v1/sessions/s/context", "/v1/sessions/s/tools/recall_page",
    "/v1/chat/completions", "/v1/messages"])
@pytest.mark.parametrize("body", [DEEP_LIST, DEEP_META, '{"budget": NaN}', "[Infinity]"])
def test_deep_or_non_json_bodies_are_400(client: TestClient, path: str, body: str) -> None:
    r = client.post(path, content=body.encode(), headers={"X-Memci-Session": "s"})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] in ("too_deep", "invalid_json")
    assert client.get("/v1/sessions/s").json()["messages"] == 3


@pytest.mark.parametrize(("method", "path", "params"), [
    ("get", "/v1/sessions/s/search", {"q": "hi", "now": "0001-01-01T00:00:00+01:00"}),
    ("get", "/v1/sessions/s/search", {"q": "yesterday", "now": "9999-12-31T23:59:59-01:00"}),
    ("get", "/v1/sessions/s/search", {"q": "hi", "now": "10000-01-01T00:00:00"}),
    ("get", "/v1/sessions/s/search", {"q": "hi", "k": "ten"}),
    ("get", "/v1/sessions/s/search", {"q": "x" * 5000}),
    ("get", "/v1/sessions/s/messages", {"after": 2**70}),
    ("get", "/v1/sessions/s/messages", {"after": -1}),
    ("get", "/v1/sessions/s/messages", {"limit": "many"}),
    ("get", "/v1/sessions/s/artifacts/0123456789ab", {"offset": 2**70}),
    ("get", "/v1/sessions/s/tools", {"format": "xml"}),
    ("post", "/v1/sessions/s/context", {}),
    ("post", "/v1/sessions/s/messages", {"user": "u" * 300}),
])
def test_out_of_range_and_wrong_types_are_400(client: TestClient, method: str, path: str,
                                              params: dict[str, Any]) -> None:
    body = {"budget": 2**70} if path.endswith("/context") else (
        {"role": "user", "content": "hi"} if method == "post" else None)
    r = client.request(method.upper(), path, params=params, json=body)
    assert r.status_code == 400, r.text
    assert set(r.json()["error"]) == {"code", "message"}


@pytest.mark.parametrize("q", ["9999999 days ago", "99999 years ago", "last year", "上周"])
@pytest.mark.parametrize("now", ["0001-01-01T12:00:00+00:00", "9999-12-31T12:00:00+00:00",
                                 None])
def test_time_words_never_overflow(client: TestClient, q: str, now: str | None) -> None:
    params = {"q": q, **({"now": now} if now else {})}
    assert client.get("/v1/sessions/s/search", params=params).status_code == 200
    r = client.post("/v1/sessions/s/tools/search_memory", json={"query": q})
    assert r.status_code == 200 and isinstance(r.json()["result"], str)


def test_envelope_fields_and_user_are_checked(client: TestClient) -> None:
    r = client.post("/v1/sessions/e/messages", json={
        "messages": [{"role": "user", "content": "hi"}], "sessions": "typo"})
    assert r.status_code == 400 and "sessions" in r.json()["error"]["message"]
    r = client.post("/v1/sessions/e/messages", content=json.dumps({
        "messages": [{"role": "user", "content": "hi"}], "user": "\ud800"}))
    assert r.status_code == 400
    r = client.post("/v1/sessions/s/context", json={"format": "openai", "bugdet": 10})
    assert r.status_code == 400 and "bugdet" in r.json()["error"]["message"]


# -- the OpenAPI schema: real message bodies, and a bounded fuzz over it -------------------------


ACCEPTED_FORMS: list[Any] = [
    {"role": "user", "content": "hi"},
    {"role": "developer", "content": "be brief", "name": "ops"},
    {"role": "human", "content": [{"type": "text", "text": "hi"}, "plain string block"]},
    {"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
        {"type": "image_url", "image_url": "https://x/z.png"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBOR"}},
        {"type": "image", "source": {"type": "url", "url": "https://x/q.png"}}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "c2", "function": {"name": "g", "arguments": {"a": 1}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "ok", "is_error": False},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "ok"}]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        {"type": "text", "text": "checking"},
        {"type": "tool_use", "id": "tu_1", "name": "weather", "input": {"city": "Rome"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "tu_1", "content": "rainy", "is_error": False},
        {"type": "tool_result", "tool_use_id": "tu_2",
         "content": [{"type": "text", "text": "x"}]},
        {"type": "text", "text": "and tomorrow?"}]},
    {"role": "assistant", "content": "", "refusal": "I can't"},
    {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"},
                                      {"type": "output_text", "text": "t"}]},
    {"role": "user", "content": "dated", "created_at": "2026-01-02T03:04:05Z",
     "metadata": {"k": [1, {"v": None}]}},
    {"role": "user", "content": "epoch", "created_at": 1_700_000_000},
]


def test_the_schema_describes_every_accepted_message_form(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    body = schema["paths"]["/v1/sessions/{sid}/messages"]["post"]["requestBody"]
    described = json.dumps(body)
    assert "#/components/schemas/MessageIn" in described
    message = schema["components"]["schemas"]["MessageIn"]
    assert set(message["properties"]["role"]["enum"]) >= {"system", "user", "assistant",
                                                          "tool"}
    assert "settings" in schema["components"]["schemas"]["MessagesEnvelope"]["properties"]
    context = schema["paths"]["/v1/sessions/{sid}/context"]["post"]["requestBody"]
    assert "ContextRequest" in json.dumps(context)
    assert "422" not in json.dumps(schema["paths"])  # the server answers 400, never 422
    adapter = TypeAdapter(MessagesBody)
    for form in ACCEPTED_FORMS:  # the schema is never stricter than the reader
        adapter.validate_python(form)
        adapter.validate_python([form])
        adapter.validate_python({"messages": [form], "user": "u", "settings": {}})
        memci.messages.coerce(form)
    r = client.post("/v1/sessions/forms/messages", json=ACCEPTED_FORMS[:7])
    assert r.status_code == 200, r.text


def test_schema_driven_fuzz_finds_no_server_error(client: TestClient,
                                                  keys: dict[str, str]) -> None:
    """schemathesis over the OpenAPI schema: a fixed seed, 4 x 80 cases (~10-30 s)."""
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, Phase, given, settings
    from schemathesis import GenerationMode
    from schemathesis.checks import (
        content_type_conformance,
        ignored_auth,
        not_a_server_error,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = [not_a_server_error, status_code_conformance, content_type_conformance,
              response_schema_conformance, ignored_auth]
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    # The proxies answer 503 without an upstream; test_proxy.py covers them.
    schema = schema.exclude(tag="proxy")
    # Both of the schema's key schemes, with the same key (two different keys are a 401).
    headers = {**auth(keys["acme"]), "x-api-key": keys["acme"]}
    seen: dict[str, set[int]] = {}
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        for fixed in ({"sid": "s"}, None):  # the existing session, and any name
            strategy = schema.as_strategy(mode, headers=headers, path_parameters=fixed)

            @settings(max_examples=80, deadline=None,
                      phases=[Phase.generate], suppress_health_check=list(HealthCheck))
            @given(case=strategy)
            def fuzz(case: Any) -> None:
                response = case.call()
                seen.setdefault(f"{case.method} {case.path}", set()).add(response.status_code)
                case.validate_response(response, checks=checks)

            fuzz()
    # The fuzz got past authentication to every operation (which answers, valid or not,
    # depend on the versions of hypothesis and schemathesis that drew the cases).
    reached = {op for op, codes in seen.items() if codes - {401, 403}}
    assert {"POST /v1/sessions/{sid}/messages", "POST /v1/sessions/{sid}/context",
            "GET /v1/sessions/{sid}/search", "POST /v1/sessions/{sid}/tools/{name}"
            } <= reached, seen
    # And whatever it sent, the session it fuzzed still takes and answers valid requests.
    client.headers.update(headers)
    assert client.post("/v1/sessions/s/messages", json={
        "messages": [{"role": "user", "content": "still here?"}]}).status_code == 200
    r = client.post("/v1/sessions/s/context", json={"budget": 100_000})
    assert r.status_code == 200, r.text
    assert "still here?" in json.dumps(r.json()["payload"])
    assert client.get("/v1/sessions/s/search", params={"q": "still"}).status_code == 200
    r = client.post("/v1/sessions/s/tools/recall_page", json={"index": 1})
    assert r.status_code == 200, r.text
