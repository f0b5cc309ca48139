"""Load and faults on loopback: ``memci serve`` as a real subprocess, 50 concurrent clients.

- ~10 s of 50 clients adding and building on 50 sessions: no errors, every acknowledged
  message in the store afterwards, seqs gap-free;
- the server killed with SIGKILL under that load and restarted on the same store:
  nothing that was acknowledged (answered 2xx) is lost, seqs stay gap-free, and the
  sessions go on where they were.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")

import httpx

import memci
from memci.server import KeyStore

from .test_server import ServeProcess, auth

pytestmark = pytest.mark.slow

CLIENTS = 50


@dataclass
class Client:
    """One client thread's session and what the server acknowledged to it."""

    number: int
    acked: list[tuple[int, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    builds: int = 0

    @property
    def session(self) -> str:
        return f"load-{self.number}"


def drive(url: str, key: str, clients: list[Client], stop: threading.Event,
          *, expect_failure: bool = False) -> None:
    """Each client adds a message, and builds every third add, until ``stop``."""

    def run(client: Client) -> None:
        with httpx.Client(base_url=url, headers=auth(key), timeout=30) as http:
            n = len(client.acked)
            while not stop.is_set():
                n += 1
                role = "user" if n % 2 else "assistant"
                text = f"{client.session} message {n} " + "lorem ipsum " * (n % 7)
                try:
                    r = http.post(f"/v1/sessions/{client.session}/messages",
                                  json={"role": role, "content": text})
                    if r.status_code != 200:
                        client.errors.append(f"add {r.status_code}: {r.text[:200]}")
                        return
                    client.acked.append((r.json()["messages"][0]["seq"], text))
                    if n % 3 == 0:
                        r = http.post(f"/v1/sessions/{client.session}/context",
                                      json={"budget": 2000})
                        if r.status_code != 200:
                            client.errors.append(f"context {r.status_code}: {r.text[:200]}")
                            return
                        client.builds += 1
                except httpx.HTTPError as exc:
                    if not expect_failure:
                        client.errors.append(repr(exc))
                    return

    threads = [threading.Thread(target=run, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def check_store(db: Path, clients: list[Client]) -> int:
    """Every acknowledged message is stored at its seq; seqs are 1..n without a gap."""
    total = 0
    with memci.Engine.open(db) as engine:
        for client in clients:
            messages = engine.session(client.session, tenant="acme").messages()
            seqs = [m.seq for m in messages]
            assert seqs == list(range(1, len(messages) + 1)), client.session
            by_seq = {m.seq: m.content for m in messages}
            for seq, text in client.acked:
                assert by_seq.get(seq) == text, (client.session, seq)
            total += len(messages)
    return total


def test_fifty_clients_then_sigkill_and_restart_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "load.db"
    with memci.Engine.open(db) as engine:
        _, key = KeyStore(engine.store).create("acme")
    clients = [Client(n) for n in range(CLIENTS)]

    # 1. ~10 s of load: no errors, nothing lost
    server = ServeProcess(db).start()
    try:
        stop = threading.Event()
        timer = threading.Timer(10.0, stop.set)
        timer.start()
        drive(server.url, key, clients, stop)
        timer.cancel()
    finally:
        assert server.stop() == 0
    assert [e for c in clients for e in c.errors] == []
    assert sum(len(c.acked) for c in clients) > 200
    assert all(c.builds for c in clients)
    check_store(db, clients)

    # 2. SIGKILL under load, restart: everything acknowledged is still there
    server = ServeProcess(db).start()
    try:
        stop = threading.Event()
        before = sum(len(c.acked) for c in clients)
        loader = threading.Thread(target=drive, args=(server.url, key, clients, stop),
                                  kwargs={"expect_failure": True})
        loader.start()
        deadline = time.monotonic() + 30  # kill once the restarted server is under load
        while (sum(len(c.acked) for c in clients) < before + 3 * CLIENTS
               and time.monotonic() < deadline):
            time.sleep(0.05)
        time.sleep(0.5)
        server.kill()
        loader.join(timeout=60)
        stop.set()
        assert not loader.is_alive()
    finally:
        server.stop()
    assert sum(len(c.acked) for c in clients) > before  # the kill came under load
    assert [e for c in clients for e in c.errors] == []
    check_store(db, clients)

    # 3. the restarted server goes on where each session was
    with ServeProcess(db) as server, httpx.Client(base_url=server.url, headers=auth(key),
                                                  timeout=30) as http:
        for client in clients[:10]:
            r = http.get(f"/v1/sessions/{client.session}")
            count = r.json()["messages"]
            r = http.post(f"/v1/sessions/{client.session}/messages",
                          json={"role": "user", "content": "after the restart"})
            assert r.json()["messages"][0]["seq"] == count + 1
