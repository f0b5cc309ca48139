"""The server's limits (docs/server.md, "Limits"): what one client can make it hold.

- session objects: a server that opened many sessions holds a bounded number of idle ones;
- response size: every list the server answers with stops at a byte budget and says where
  to continue;
- slow clients and connection caps: a real ``memci serve`` with many slow sockets still
  answers its health check and an authenticated add.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

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
