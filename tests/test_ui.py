"""The inspector's server side: its files and headers, its read-only routes, `memci ui`.

Routes run over the real app (TestClient) on a real SQLite store; `memci ui` runs as a
real process. The pages themselves are driven in Chromium by tests/test_ui_browser.py.
"""

from __future__ import annotations

import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")

import httpx
from click.testing import CliRunner
from fastapi.testclient import TestClient

import memci
from memci.cli import main
from memci.messages import to_openai
from memci.replay import replay
from memci.server import KeyStore, ServerConfig, create_app
from memci.server.routes import ui
from tests.test_server import subprocess_env

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "src" / "memci" / "server" / "ui"


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[memci.Engine]:
    engine = memci.Engine.open(tmp_path / "m.db", workers=0)
    yield engine
    engine.close()


@pytest.fixture
def keys(engine: memci.Engine) -> dict[str, str]:
    store = KeyStore(engine.store)
    return {"a": store.create("tenant-a")[1], "b": store.create("tenant-b")[1]}


@pytest.fixture
def client(engine: memci.Engine, keys: dict[str, str]) -> Iterator[TestClient]:
    with TestClient(create_app(engine, ServerConfig())) as c:
        yield c


def add(client: TestClient, key: str, sid: str, messages: list[dict[str, Any]],
        **envelope: Any) -> None:
    answer = client.post(f"/v1/sessions/{sid}/messages", headers=auth(key),
                         json={"messages": messages, **envelope})
    assert answer.status_code == 200, answer.text


def tool_turns(turns: int, first: int = 0) -> list[dict[str, Any]]:
    """Pages of a tool loop: a question, a call, a long result, an answer."""
    out: list[dict[str, Any]] = []
    for i in range(first, first + turns):
        out += [{"role": "user", "content": f"question {i} about the quarterly report " * 6},
                {"role": "assistant", "content": None, "tool_calls": [{
                    "id": f"call{i}", "type": "function",
                    "function": {"name": "run_sql", "arguments": '{"query": "select 1"}'}}]},
                {"role": "tool", "tool_call_id": f"call{i}",
                 "content": "\n".join(f"row {j} total {j * i}" for j in range(300))},
                {"role": "assistant", "content": f"answer {i}: the totals look right"}]
    return out


# -- the files ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "/index.html", "/app.js", "/style.css"])
def test_every_file_carries_a_strict_policy(client: TestClient, name: str) -> None:
    answer = client.get("/ui" + name)
    assert answer.status_code == 200
    policy = answer.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert answer.headers["x-content-type-options"] == "nosniff"


def test_no_file_outside_the_inspector_is_served(client: TestClient) -> None:
    for name in ("x.js", "..%2F_app.py", "%2E%2E%2F__init__.py", "ui.py"):
        answer = client.get("/ui/" + name)
        assert answer.status_code == 404, name
        assert answer.json()["error"]["code"] == "not_found"


def test_the_pages_hold_no_inline_script_and_reach_nothing_outside() -> None:
    html = (UI / "index.html").read_text()
    for tag in re.findall(r"<script\b[^>]*>", html):
        assert "src=" in tag, tag  # the policy would block an inline one anyway
    assert not re.search(r"\son[a-z]+\s*=", html)  # no inline handlers
    for name in ("index.html", "app.js", "style.css"):
        # The SVG namespace names a vocabulary; nothing is fetched from it.
        text = (UI / name).read_text().replace('"http://www.w3.org/2000/svg"', "")
        assert not re.search(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text, re.I), name
        assert "@import" not in text and "url(" not in text
    script = (UI / "app.js").read_text()
    for parser in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert parser not in script  # stored text is shown as text only


def test_the_wheel_carries_the_inspector() -> None:
    # hatchling takes every file under src/memci into the wheel: nothing to list, but
    # nothing may be ignored by git either (a wheel is built from a clean checkout).
    listed = subprocess.run(["git", "ls-files", "src/memci/server/ui"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    ignored = subprocess.run(["git", "check-ignore", *map(str, UI.iterdir())], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    assert not ignored
    if listed:  # committed: every file the route serves is in git
        assert {Path(p).name for p in listed} >= {"index.html", "app.js", "style.css"}


# -- tenant scoping of every read the inspector adds ------------------------------------


@pytest.mark.parametrize("path", ["/peek", "/pages", "/workstate", "/replay"])
def test_another_tenants_session_is_not_found(client: TestClient, keys: dict[str, str],
                                              path: str) -> None:
    add(client, keys["a"], "private", tool_turns(2), user="alice")
    mine = client.get("/v1/sessions/private" + path, headers=auth(keys["a"]))
    assert mine.status_code == 200, mine.text
    theirs = client.get("/v1/sessions/private" + path, headers=auth(keys["b"]))
    assert theirs.status_code == 404
    assert theirs.json()["error"]["code"] == "unknown_session"
    assert client.get("/v1/sessions/private" + path).status_code == 401


def test_the_listing_shows_only_the_keys_tenant(client: TestClient,
                                                keys: dict[str, str]) -> None:
    add(client, keys["a"], "mine", [{"role": "user", "content": "hi"}], user="alice")
    add(client, keys["b"], "theirs", [{"role": "user", "content": "hi"}], user="alice")
    for key, name in ((keys["a"], "mine"), (keys["b"], "theirs")):
        for q in (None, "alice", "i"):
            answer = client.get("/v1/ui/sessions", params={"q": q} if q else {},
                                headers=auth(key))
            assert [s["session"] for s in answer.json()["sessions"]] == [name]
    assert client.get("/v1/ui/sessions").status_code == 401


def test_tenant_search_stays_in_the_tenant(client: TestClient, keys: dict[str, str]) -> None:
    add(client, keys["a"], "one", [{"role": "user", "content": "the zebra report"}])
    add(client, keys["a"], "two", [{"role": "user", "content": "zebra totals again"}])
    add(client, keys["b"], "other", [{"role": "user", "content": "zebra secrets"}])
    hits = client.get("/v1/sessions/one/search", params={"q": "zebra", "scope": "tenant"},
                      headers=auth(keys["a"])).json()["hits"]
    assert {h["session"] for h in hits} == {"one", "two"}
    assert all("secrets" not in h["message"]["content"] for h in hits)


# -- the sessions listing ------------------------------------------------------------------


def test_listing_counts_messages_and_last_activity(client: TestClient,
                                                   keys: dict[str, str]) -> None:
    add(client, keys["a"], "busy", tool_turns(3), user="u1")
    add(client, keys["a"], "quiet", [{"role": "user", "content": "one",
                                      "created_at": "2026-01-02T03:04:05+00:00"}])
    client.delete("/v1/sessions/busy/messages/last", headers=auth(keys["a"]))
    rows = {s["session"]: s for s in client.get(
        "/v1/ui/sessions", headers=auth(keys["a"])).json()["sessions"]}
    assert rows["busy"]["messages"] == 11 and rows["busy"]["user"] == "u1"
    assert rows["quiet"]["messages"] == 1
    assert rows["quiet"]["last_activity"].startswith("2026-01-02T03:04:05")
    newest = client.get("/v1/sessions/busy/messages", headers=auth(keys["a"])).json()
    assert rows["busy"]["last_activity"] == newest["messages"][-1]["created_at"]


def _walk(client: TestClient, key: str, limit: int, q: str | None = None) -> list[str]:
    seen: list[str] = []
    after: int | None = 0
    while after is not None:
        page = client.get("/v1/ui/sessions", params={"after": after, "limit": limit,
                                                     **({"q": q} if q else {})},
                          headers=auth(key)).json()
        seen += [s["session"] for s in page["sessions"]]
        after = page["next_after"]
    return seen


def test_paging_and_search_see_every_session_once(
    client: TestClient, keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"s{i:03d}" for i in range(23)]
    for i, name in enumerate(names):
        add(client, keys["a"], name, [{"role": "user", "content": "x"}],
            user="needle" if i in (2, 17, 22) else f"user{i}")
    assert _walk(client, keys["a"], 5) == names
    assert _walk(client, keys["a"], 50) == names
    # A search reads at most SCAN sessions per request: with a small SCAN it continues
    # over several requests, some of them finding nothing, and still finds each once.
    monkeypatch.setattr(ui, "SCAN", 4)
    assert _walk(client, keys["a"], 2, q="NEEDLE") == ["s002", "s017", "s022"]
    assert _walk(client, keys["a"], 5, q="s01") == [n for n in names if "s01" in n]


# -- the next request and the pages -----------------------------------------------------------


def test_peek_is_the_next_build_by_segment_and_changes_nothing(
    client: TestClient, keys: dict[str, str]
) -> None:
    h = auth(keys["a"])
    add(client, keys["a"], "loop", tool_turns(12),
        settings={"context_window": 2000})
    first = client.post("/v1/sessions/loop/context", headers=h, json={}).json()
    # Pages left the window (archived by the bulk add, or by this build): listed.
    assert first["stats"]["sections"]["contents"] > 0
    add(client, keys["a"], "loop", tool_turns(6, first=12))
    pages_before = client.get("/v1/sessions/loop/pages", headers=h).json()
    peeked = client.get("/v1/sessions/loop/peek", headers=h).json()
    again = client.get("/v1/sessions/loop/peek", headers=h).json()
    assert client.get("/v1/sessions/loop/pages", headers=h).json() == pages_before
    assert peeked["segments"] == again["segments"]
    built = client.post("/v1/sessions/loop/context", headers=h, json={}).json()
    sections = built["stats"]["sections"]
    for segment in peeked["segments"]:
        assert segment["tokens"] == sections[segment["name"]], segment["name"]
    assert peeked["stats"]["total_tokens"] == built["stats"]["total_tokens"]
    names = [s["name"] for s in peeked["segments"]]
    assert "contents" in names and "recent" in names
    assert "Contents page" in peeked["segments"][names.index("contents")]["messages"][0][
        "content"]
    assert 0 < peeked["stats"]["prefix_tokens"] <= peeked["stats"]["total_tokens"]
    # another budget: what the user picks
    small = client.get("/v1/sessions/loop/peek", params={"budget": 1500}, headers=h).json()
    assert small["stats"]["budget"] == 1500 and small["stats"]["total_tokens"] <= 1500


def test_pages_come_a_page_at_a_time_with_their_place(client: TestClient,
                                                      keys: dict[str, str]) -> None:
    h = auth(keys["a"])
    add(client, keys["a"], "long", tool_turns(30), settings={"context_window": 3000})
    client.post("/v1/sessions/long/context", headers=h, json={})
    seen: list[dict[str, Any]] = []
    after: int | None = 0
    while after is not None:
        page = client.get("/v1/sessions/long/pages", params={"after": after, "limit": 7},
                          headers=h).json()
        assert page["total"] == 30 and len(page["pages"]) <= 7
        seen += page["pages"]
        after = page["next_after"]
    assert [p["page"] for p in seen] == list(range(1, 31))
    places = {p["place"] for p in seen}
    assert "window" in places and places & {"contents", "evicted"}
    assert seen[-1]["detail"] == "current"


def test_workstate_shows_pins_plan_and_notebook(client: TestClient,
                                                keys: dict[str, str]) -> None:
    h = auth(keys["a"])
    add(client, keys["a"], "work", tool_turns(1))
    for tool, args in (("pin_add", {"type": "fact", "title": "schema",
                                    "summary": "orders(id, total)", "source": "tool:call0"}),
                       ("plan_add", {"text": "check the totals"}),
                       ("notebook_add", {"summary": "totals match the ledger"})):
        answer = client.post(f"/v1/sessions/work/tools/{tool}", headers=h, json=args)
        assert not answer.json()["is_error"], answer.text
    state = client.get("/v1/sessions/work/workstate", headers=h).json()
    assert "schema" in str(state["pins"])
    assert "check the totals" in str(state["plan"])
    assert "totals match the ledger" in str(state["notebook"])
    assert set(state["fastmemo"]) >= {"user", "task"}


def test_replay_gives_replays_figures_and_leaves_the_session_as_it_was(
    client: TestClient, keys: dict[str, str], engine: memci.Engine, tmp_path: Path
) -> None:
    h = auth(keys["a"])
    add(client, keys["a"], "r", [{"role": "system", "content": "Be brief."}, *tool_turns(8)],
        settings={"context_window": 3000})
    before = (client.get("/v1/sessions/r/pages", headers=h).json(),
              client.get("/v1/sessions/r/messages", headers=h).json())
    figures = client.get("/v1/sessions/r/replay", params={"budget": 2000}, headers=h).json()
    assert (client.get("/v1/sessions/r/pages", headers=h).json(),
            client.get("/v1/sessions/r/messages", headers=h).json()) == before
    assert "store" not in figures and figures["session"] == "r"
    # the same as memci replay over the same messages in a store of its own
    stored = engine.session("r", tenant="tenant-a")
    with memci.Engine.open(tmp_path / "own.db", workers=0) as own:
        expected = replay(own.session("r", **dict(stored.record.settings)),
                          to_openai(stored.branch()), budget=2000).to_json()
    assert figures["totals"] == expected["totals"]
    assert [(r["memci_tokens"], r["full_tokens"], r["prefix_tokens"])
            for r in figures["requests"]] == [
        (r["memci_tokens"], r["full_tokens"], r["prefix_tokens"]) for r in expected["requests"]]
    assert len(figures["requests"]) == 16  # one per assistant message


def test_replay_refuses_a_session_past_its_limit(
    client: TestClient, keys: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    add(client, keys["a"], "long", tool_turns(2))
    monkeypatch.setattr(ui, "REPLAY_MESSAGES", 7)
    answer = client.get("/v1/sessions/long/replay", headers=auth(keys["a"]))
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "replay_too_long" and "at most 7" in error["message"]
    assert "has 8" in error["message"]


# -- memci ui ---------------------------------------------------------------------------------


def test_ui_help_names_its_flags() -> None:
    text = CliRunner().invoke(main, ["ui", "--help"]).output
    for flag in ("--db", "--port", "--tenant", "--no-browser"):
        assert flag in text


def test_memci_ui_serves_the_local_store_without_a_key_and_opens_the_browser(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    with memci.Engine.open(db, workers=0) as engine:
        engine.session("local-chat", tenant="mine").add({"role": "user", "content": "hello"})
        engine.session("elsewhere", tenant="other").add({"role": "user", "content": "hi"})
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"  # what webbrowser runs: records the address
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(browser.stat().st_mode | stat.S_IEXEC)
    env = {**subprocess_env(), "BROWSER": str(browser), "DISPLAY": ""}
    proc = subprocess.Popen([sys.executable, "-m", "memci", "ui", "--db", str(db),
                             "--tenant", "mine"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        url = ""
        deadline = time.monotonic() + 60
        while not url and time.monotonic() < deadline:
            line = proc.stderr.readline()
            found = re.search(r"inspector is at (http://\S+)", line)
            url = found.group(1) if found else url
            assert line or proc.poll() is None, "memci ui exited"
        assert url.startswith("http://127.0.0.1:") and url.endswith("/ui")
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert opened.read_text().strip() == url
        base = url.removesuffix("/ui")
        sessions = httpx.get(base + "/v1/ui/sessions").json()["sessions"]  # no key
        assert [s["session"] for s in sessions] == ["local-chat"]
        assert httpx.get(url).headers["content-security-policy"].startswith("default-src")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == 0  # SIGTERM: a clean stop
