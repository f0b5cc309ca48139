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
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")

from fastapi.testclient import TestClient

import memci
from memci._session import Session
from memci._sessioncache import WARM_SESSIONS
from memci.memory._index import _SESSIONS_KEPT
from memci.server import KeyStore, ServerConfig, create_app

from .test_server import auth


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
    small.post("/v1/sessions/tools/messages", json=[
        {"role": "user", "content": "list it"},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 20_000 + "END"}])
    built = small.post("/v1/sessions/tools/context", json={}).json()
    artifact = re.search(r"artifact:([0-9a-f]+)", json.dumps(built)).group(1)  # type: ignore[union-attr]
    text, offset = "", 0
    while offset is not None:
        page = small.get(f"/v1/sessions/tools/artifacts/{artifact}",
                         params={"offset": offset, "length": 8000}).json()
        text += page["text"]
        offset = page["next_offset"]
    assert text == "x" * 20_000 + "END"


def test_answers_to_writes_stay_within_the_budget_and_keep_every_seq(
        small: TestClient) -> None:
    r = small.post("/v1/sessions/w/messages", json=[_heavy(n) for n in range(6)])
    assert r.status_code == 200 and len(r.content) <= BUDGET + 1024
    stored = r.json()["messages"]
    assert [m["seq"] for m in stored] == [1, 2, 3, 4, 5, 6]
    assert stored[0]["metadata"]["blob"] and stored[-1] == {"seq": 6, "role": "assistant",
                                                             "omitted": True}
