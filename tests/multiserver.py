"""Several ``memci serve`` processes on one store, driven by many clients round-robin.

Used by tests/test_multi_server.py (a short run in CI) and bench/bench_servers.py (the full
60 s run whose figures go into docs/benchmarks.md). :func:`run` starts ``servers``
processes on one store, spreads ``clients`` over them round-robin (each request of a
client goes to the next server), two clients per session so appends and builds of one
session race on different servers, optionally SIGKILLs one server mid-run (its clients
go on with the others), then checks the store:

- every acknowledged message is stored exactly once, at the seq it was acknowledged
  with; seqs are 1..n without a gap (``lost``, ``duplicated``, ``gap_free``);
- no page was archived by two events (``double_archived``);
- every surviving server answers the same context for every session (``differing``).

Every client writes texts no other request writes, so a request cut by the kill and
stored without an answer is never retried under the same text (it is stored, not
acknowledged, and counted in ``unacknowledged``).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

import memci
from memci.server import KeyStore
from tests import pg

ROOT = Path(__file__).resolve().parents[1]
MEMCI = [sys.executable, "-c", "from memci.cli import _server, main; main()"]
TENANT = "multi"


class Server:
    """``memci serve --db STORE`` in a subprocess on a free port."""

    def __init__(self, db: str, *args: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                          env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen([*MEMCI, "serve", "--port", "0", "--db", db, *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     env=env)
        assert self.proc.stderr is not None
        lines: list[bytes] = []
        deadline = time.monotonic() + 60
        for line in iter(self.proc.stderr.readline, b""):
            lines.append(line)
            found = re.search(rb"listening on (http://\S+)", line)
            if found:
                self.url = found.group(1).decode()
                self._drain = threading.Thread(target=_drain, args=(self.proc.stderr,),
                                               daemon=True)
                self._drain.start()
                return
            if time.monotonic() > deadline:
                break
        self.stop()
        self.proc.stderr.close()
        raise RuntimeError("memci serve did not start:\n" + b"".join(lines).decode())

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._drain.join(timeout=30)

    def stop(self) -> int | None:
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        drain = getattr(self, "_drain", None)
        if drain is not None:
            drain.join(timeout=30)
        return self.proc.returncode


def _drain(stream: Any) -> None:
    """Read a server's log until it ends (so it never blocks on a full pipe), then close."""
    for _ in stream:
        pass
    stream.close()


@dataclass
class Result:
    """What a run measured and what the checks found."""

    servers: int
    clients: int
    seconds: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    failovers: int = 0
    acknowledged: int = 0
    unacknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    gap_free: bool = True
    double_archived: int = 0
    archive_events: int = 0
    compared: int = 0
    differing: list[str] = field(default_factory=list)
    difference: str = ""  # how the first differing session's answers differ (a diff)
    killed: bool = False
    # CPU ms during the load, of the servers, of the database (PostgreSQL: its processes;
    # SQLite's work is in the servers'), and of the clients (this process)
    server_cpu: float = 0.0
    database_cpu: float = 0.0
    client_cpu: float = 0.0

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, op: str, q: float) -> float:
        values = sorted(self.latencies.get(op, []))
        if not values:
            return float("nan")
        return values[min(len(values) - 1, int(q * len(values)))] * 1000


def session_of(client: int) -> str:
    return f"multi-{client // 2}"


def run(db: str, *, servers: int, clients: int, seconds: float, kill_after: float | None,
        budget: int = 1500, serve_args: tuple[str, ...] = ()) -> Result:
    """Drive ``servers`` servers on ``db`` for ``seconds``; kill one at ``kill_after`` s."""
    with memci.Engine.open(db, workers=0) as engine:
        _, key = KeyStore(engine.store).create(TENANT)
    procs = [Server(db, *serve_args) for _ in range(servers)]
    result = Result(servers=servers, clients=clients)
    acked: dict[int, list[tuple[int, str]]] = defaultdict(list)
    lock = threading.Lock()
    stop = threading.Event()
    down: set[int] = set()
    killing: set[int] = set()  # marked before the signal, so its errors are expected

    def client(n: int) -> None:
        sid = session_of(n)
        turn = n
        i = 0
        https = [httpx.Client(base_url=p.url, timeout=60,
                              headers={"Authorization": f"Bearer {key}"}) for p in procs]
        try:
            while not stop.is_set():
                turn += 1
                which = turn % servers
                if which in down:
                    continue
                http = https[which]
                i += 1
                text = f"client {n} message {i}: " + "the quick brown fox " * (i % 9)
                try:
                    t = time.perf_counter()
                    r = http.post(f"/v1/sessions/{sid}/messages",
                                  json={"role": "user" if i % 2 else "assistant",
                                        "content": text})
                    took = time.perf_counter() - t
                    if r.status_code != 200:
                        raise RuntimeError(f"add {r.status_code} {r.text[:200]}")
                    seq = int(r.json()["messages"][0]["seq"])
                    with lock:
                        acked[n].append((seq, text))
                        result.latencies["add"].append(took)
                    if i % 3 == 0:
                        t = time.perf_counter()
                        r = http.post(f"/v1/sessions/{sid}/context", json={"budget": budget})
                        took = time.perf_counter() - t
                        if r.status_code != 200:
                            raise RuntimeError(f"context {r.status_code} {r.text[:200]}")
                        with lock:
                            result.latencies["context"].append(took)
                    if i % 5 == 0:
                        t = time.perf_counter()
                        r = http.get(f"/v1/sessions/{sid}/search",
                                     params={"q": f"fox message {i // 2}", "k": 5})
                        took = time.perf_counter() - t
                        if r.status_code != 200:
                            raise RuntimeError(f"search {r.status_code} {r.text[:200]}")
                        with lock:
                            result.latencies["search"].append(took)
                except httpx.TransportError as exc:
                    # The server died under this request: go on with the next one (the
                    # message may be stored unacknowledged; it is never sent again).
                    if which not in killing:
                        with lock:
                            result.errors.append(f"server {which}: {exc!r}")
                        return
                    with lock:
                        down.add(which)
                        result.failovers += 1
                except (httpx.HTTPError, RuntimeError) as exc:
                    with lock:
                        result.errors.append(f"server {which}: {exc!r}")
                    return
        finally:
            for h in https:
                h.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    postmaster = [pg.postmaster_pid(db)] if db.startswith("postgresql") else []
    killed_cpu = 0.0
    killer: threading.Timer | None = None
    if kill_after is not None and servers > 1:
        def kill() -> None:
            nonlocal killed_cpu
            killing.add(servers - 1)
            killed_cpu = pg.cpu_ms([procs[-1].proc.pid])  # its CPU until now: gone after
            procs[-1].kill()
            result.killed = True

        killer = threading.Timer(kill_after, kill)
    server_cpu = pg.cpu_ms([p.proc.pid for p in procs])
    database_cpu = pg.cpu_ms(postmaster, with_children=True)
    client_cpu = time.process_time()
    started = time.perf_counter()
    try:
        for t in threads:
            t.start()
        if killer is not None:
            killer.start()
        stop.wait(seconds)
        stop.set()
        for t in threads:
            t.join(timeout=120)
        result.seconds = time.perf_counter() - started
        result.client_cpu = (time.process_time() - client_cpu) * 1000
        result.server_cpu = pg.cpu_ms([p.proc.pid for p in procs]) + killed_cpu - server_cpu
        result.database_cpu = pg.cpu_ms(postmaster, with_children=True) - database_cpu
        if killer is not None:
            killer.cancel()
        _compare_contexts(procs, key, clients, budget, result)
    finally:
        for p in procs:
            p.stop()
    _check_store(db, acked, clients, result)
    return result


def _compare_contexts(procs: list[Server], key: str, clients: int, budget: int,
                      result: Result) -> None:
    """Every surviving server answers the same context for every session."""
    alive = [p for p in procs if p.alive]
    https = [httpx.Client(base_url=p.url, timeout=120,
                          headers={"Authorization": f"Bearer {key}"}) for p in alive]
    try:
        for sid in sorted({session_of(n) for n in range(clients)}):
            # The first build may still commit (archive); after it, any server must agree.
            https[0].post(f"/v1/sessions/{sid}/context", json={"budget": budget})
            answers = []
            for http in https:
                r = http.post(f"/v1/sessions/{sid}/context", json={"budget": budget})
                answers.append(r.json().get("payload") if r.status_code == 200 else r.text)
            result.compared += 1
            other = next((a for a in answers[1:] if a != answers[0]), None)
            if other is not None:
                result.differing.append(sid)
                result.difference = result.difference or _diff(answers[0], other)
    finally:
        for h in https:
            h.close()


def _diff(first: Any, second: Any) -> str:
    """The lines in which two answers differ (a unified diff of their JSON, cut short)."""
    lines = [json.dumps(a, indent=1, ensure_ascii=False, sort_keys=True).splitlines()
             for a in (first, second)]
    return "\n".join(list(difflib.unified_diff(*lines, lineterm="", n=1))[:60])


def _check_store(db: str, acked: dict[int, list[tuple[int, str]]], clients: int,
                 result: Result) -> None:
    with memci.Engine.open(db, workers=0) as engine:
        by_session: dict[str, list[int]] = defaultdict(list)
        for n in range(clients):
            by_session[session_of(n)].append(n)
        for sid, members in by_session.items():
            record = engine.store.session(TENANT, sid)
            messages = engine.store.messages(record) if record is not None else []
            seqs = [m.seq for m in messages]
            result.gap_free &= seqs == list(range(1, len(messages) + 1))
            texts = Counter(m.content for m in messages)
            by_seq = {m.seq: m.content for m in messages}
            mine = [item for n in members for item in acked.get(n, [])]
            result.acknowledged += len(mine)
            result.lost += sum(1 for seq, text in mine if by_seq.get(seq) != text)
            result.duplicated += sum(1 for _, text in mine if texts[text] > 1)
            result.unacknowledged += len(messages) - len(mine)
            if record is None:
                continue
            covered: Counter[int] = Counter()
            for event in engine.store.context.events(record, limit=1_000_000):
                if event.kind == "archive":
                    result.archive_events += 1
                    covered.update(range(event.page, max(event.last_page, event.page) + 1))
            result.double_archived += sum(1 for c in covered.values() if c > 1)


def describe(result: Result) -> dict[str, Any]:
    """The figures of a run, for printing and the benchmark table."""
    return {
        "servers": result.servers, "clients": result.clients,
        "seconds": round(result.seconds, 1), "requests": result.requests,
        "rps": round(result.rps, 1),
        "ops": {op: {"n": len(v), "p50": round(result.percentile(op, 0.5), 1),
                     "p95": round(result.percentile(op, 0.95), 1)}
                for op, v in sorted(result.latencies.items())},
        "errors": result.errors[:5], "killed": result.killed, "failovers": result.failovers,
        "acknowledged": result.acknowledged, "unacknowledged": result.unacknowledged,
        "lost": result.lost, "duplicated": result.duplicated, "gap_free": result.gap_free,
        "archive_events": result.archive_events, "double_archived": result.double_archived,
        "compared": result.compared, "differing": result.differing,
        "difference": result.difference,
        "cpu_ms": {"server": round(result.server_cpu), "database": round(result.database_cpu),
                   "client": round(result.client_cpu)},
    }
