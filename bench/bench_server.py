"""The server under load on loopback: throughput, latency, SIGKILL safety, proxy overhead.

Run: python bench/bench_server.py [--duration 60] [--clients 50] [--write FILE]

- load: ``memci serve`` as a subprocess on a temporary store; ``--clients`` threads, one
  session each, for ``--duration`` seconds: add a message every request, build the
  context every third, search every fifth. Reports requests/s
  and p50/p95 per operation, errors, and checks that every acknowledged message is in
  the store with gap-free seqs;
- kill: the same load on a restarted server, SIGKILL after a few seconds, restart:
  counts acknowledged messages and how many of them are missing (must be 0);
- proxy: the overhead of ``/v1/chat/completions`` through memci against calling the
  upstream directly (tests/fakellm.py on loopback, answering at once), one client in
  sequence, p50/p95 each; and the proxy's requests/s with 8 clients.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

import httpx  # noqa: E402
from tests.fakellm import FakeLLM  # noqa: E402

import memci  # noqa: E402
from memci.server import KeyStore  # noqa: E402
from memci.store.sqlite._driver import driver  # noqa: E402

MEMCI = [sys.executable, "-c", "from memci.cli import _server, main; main()"]


class Serve:
    """``memci serve`` in a subprocess on a free port."""

    def __init__(self, db: Path, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
        self.proc = subprocess.Popen([*MEMCI, "serve", "--port", "0", "--db", str(db), *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        assert self.proc.stderr is not None
        for line in iter(self.proc.stderr.readline, b""):
            found = re.search(rb"listening on (http://\S+)", line)
            if found:
                self.url = found.group(1).decode()
                threading.Thread(target=lambda: [None for _ in self.proc.stderr or ()],
                                 daemon=True).start()
                return
        raise RuntimeError("memci serve did not start")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=30)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def load(url: str, key: str, clients: int, seconds: float, acked: dict[int, list[Any]],
         *, tolerate_errors: bool = False) -> dict[str, Any]:
    lat: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def run(n: int) -> None:
        sid = f"bench-{n}"
        mine = acked.setdefault(n, [])
        with httpx.Client(base_url=url, timeout=60,
                          headers={"Authorization": f"Bearer {key}"}) as http:
            i = len(mine)
            while not stop.is_set():
                i += 1
                text = f"{sid} message {i}: " + "the quick brown fox " * (i % 9)
                try:
                    t = time.perf_counter()
                    r = http.post(f"/v1/sessions/{sid}/messages",
                                  json={"role": "user" if i % 2 else "assistant", "content": text})
                    took = time.perf_counter() - t
                    if r.status_code != 200:
                        raise RuntimeError(f"add {r.status_code} {r.text[:100]}")
                    mine.append((r.json()["messages"][0]["seq"], text))
                    with lock:
                        lat["add"].append(took)
                    if i % 3 == 0:
                        t = time.perf_counter()
                        r = http.post(f"/v1/sessions/{sid}/context", json={"budget": 4000})
                        took = time.perf_counter() - t
                        if r.status_code != 200:
                            raise RuntimeError(f"context {r.status_code} {r.text[:100]}")
                        with lock:
                            lat["context"].append(took)
                    if i % 5 == 0:
                        t = time.perf_counter()
                        r = http.get(f"/v1/sessions/{sid}/search",
                                     params={"q": f"fox message {i // 2}", "k": 5})
                        took = time.perf_counter() - t
                        if r.status_code != 200:
                            raise RuntimeError(f"search {r.status_code} {r.text[:100]}")
                        with lock:
                            lat["search"].append(took)
                except (httpx.HTTPError, RuntimeError) as exc:
                    if not tolerate_errors:
                        with lock:
                            errors.append(repr(exc))
                    return

    threads = [threading.Thread(target=run, args=(n,)) for n in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    stop.wait(seconds)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    total = sum(len(v) for v in lat.values())
    return {"seconds": elapsed, "requests": total, "rps": total / elapsed, "errors": errors,
            "ops": {op: {"n": len(v), "p50": pct(v, 0.5), "p95": pct(v, 0.95)}
                    for op, v in lat.items()}}


def missing(db: Path, acked: dict[int, list[Any]]) -> tuple[int, int, bool]:
    """(acknowledged, missing, seqs gap-free) over every bench session."""
    count = lost = 0
    gap_free = True
    with memci.Engine.open(db) as engine:
        for n, items in acked.items():
            messages = engine.session(f"bench-{n}", tenant="bench").messages()
            gap_free &= [m.seq for m in messages] == list(range(1, len(messages) + 1))
            by_seq = {m.seq: m.content for m in messages}
            count += len(items)
            lost += sum(1 for seq, text in items if by_seq.get(seq) != text)
    return count, lost, gap_free


def proxy_overhead(tmp: Path, requests: int) -> dict[str, Any]:
    db = tmp / "proxy.db"
    with memci.Engine.open(db) as engine:
        _, key = KeyStore(engine.store).create("bench")
    with FakeLLM() as fake:
        server = Serve(db, "--upstream-base-url", fake.openai_base_url)
        try:
            history = [{"role": "system", "content": "You are a helpful assistant."}]
            direct: list[float] = []
            via: list[float] = []
            with httpx.Client(timeout=60) as http:
                for i in range(requests):  # direct: the client sends its whole history
                    history.append({"role": "user", "content": f"question {i}: " + "why " * 20})
                    t = time.perf_counter()
                    r = http.post(fake.openai_base_url + "/chat/completions",
                                  json={"model": "m", "messages": history})
                    direct.append(time.perf_counter() - t)
                    history.append(r.json()["choices"][0]["message"])
                headers = {"Authorization": f"Bearer {key}", "X-Memci-Session": "proxy"}
                for i in range(requests):  # through memci: only the new message
                    new = {"role": "user", "content": f"question {i}: " + "why " * 20}
                    t = time.perf_counter()
                    r = http.post(server.url + "/v1/chat/completions", headers=headers,
                                  json={"model": "m", "messages": [new]})
                    via.append(time.perf_counter() - t)
                    assert r.status_code == 200, r.text
            done = [0]
            stop = threading.Event()

            def client(n: int) -> None:
                with httpx.Client(timeout=60, headers={
                        "Authorization": f"Bearer {key}", "X-Memci-Session": f"p{n}"}) as h:
                    while not stop.is_set():
                        r = h.post(server.url + "/v1/chat/completions", json={
                            "model": "m", "messages": [{"role": "user", "content": "hello"}]})
                        assert r.status_code == 200
                        done[0] += 1

            threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            stop.wait(10)
            stop.set()
            for t in threads:
                t.join()
            rps = done[0] / (time.perf_counter() - t0)
        finally:
            server.stop()
    return {"direct_p50": pct(direct, 0.5), "direct_p95": pct(direct, 0.95),
            "proxy_p50": pct(via, 0.5), "proxy_p95": pct(via, 0.95),
            "overhead_p50": pct(via, 0.5) - pct(direct, 0.5), "rps_8_clients": rps,
            "requests": requests}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--proxy-requests", type=int, default=200)
    parser.add_argument("--synchronous", default="FULL", choices=["FULL", "NORMAL"])
    parser.add_argument("--write", type=Path, default=None, help="write the markdown here")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="memci-bench-server-") as tmp_name:
        tmp = Path(tmp_name)
        db = tmp / "load.db"
        with memci.Engine.open(db) as engine:
            _, key = KeyStore(engine.store).create("bench")
        acked: dict[int, list[Any]] = {}
        server = Serve(db, "--synchronous", args.synchronous)
        try:
            results["load"] = load(server.url, key, args.clients, args.duration, acked)
        finally:
            server.stop()
        count, lost, gaps = missing(db, acked)
        results["load"].update(acknowledged=count, lost=lost, gap_free=gaps)
        print(json.dumps(results["load"], indent=1, default=str)[:2000], flush=True)

        server = Serve(db, "--synchronous", args.synchronous)
        before = sum(len(v) for v in acked.values())
        killer = threading.Timer(5.0, server.stop, kwargs={"sig": signal.SIGKILL})
        killer.start()
        load(server.url, key, args.clients, 30.0, acked, tolerate_errors=True)
        killer.join()
        restarted = Serve(db)
        restarted.stop()
        count, lost, gaps = missing(db, acked)
        results["kill"] = {"acknowledged_total": count, "acknowledged_in_kill_run":
                           count - before, "lost": lost, "gap_free": gaps}
        print(json.dumps(results["kill"]), flush=True)

        results["proxy"] = proxy_overhead(tmp, args.proxy_requests)
        print(json.dumps(results["proxy"]), flush=True)
    text = report(results, args)
    print(text)
    if args.write:
        args.write.write_text(text, encoding="utf-8")


def report(r: dict[str, Any], args: argparse.Namespace) -> str:
    load_ = r["load"]
    rows = "\n".join(
        f"| {op} | {v['n']:,} | {v['p50']:.1f} | {v['p95']:.1f} |"
        for op, v in sorted(load_["ops"].items()))
    kill = r["kill"]
    proxy = r["proxy"]
    command = "python bench/bench_server.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()
        if v is not None and k != "write")
    return f"""## Server (`memci serve`) on loopback

Machine: {os.cpu_count()} cores (shared), Python {platform.python_version()}, SQLite
{driver().sqlite_version} ({driver().__name__}), synchronous={args.synchronous} (each answer
after its commit).
Date: {date.today():%Y-%m-%d}. Command: `{command}`.

### Load: {args.clients} clients, {args.clients} sessions, {load_['seconds']:.0f} s

Each client adds a message per request, builds the context (budget 4,000) every third
add and searches every fifth; one uvicorn worker, one SQLite store.

| operation | requests | p50 ms | p95 ms |
| --- | ---: | ---: | ---: |
{rows}

{load_['requests']:,} requests in {load_['seconds']:.1f} s: **{load_['rps']:.0f} requests/s**;
errors: {len(load_['errors'])}; acknowledged messages {load_['acknowledged']:,}, missing from
the store afterwards: **{load_['lost']}**; seqs gap-free: {load_['gap_free']}.
### SIGKILL under load

The same load on a restarted server, killed with SIGKILL after 5 s, then restarted:
{kill['acknowledged_in_kill_run']:,} messages acknowledged in that run
({kill['acknowledged_total']:,} in all), **{kill['lost']} lost**; seqs gap-free:
{kill['gap_free']}.

### Proxy overhead

`/v1/chat/completions` through memci (the client sends only its new message; memci
stores it, builds the context, calls the upstream, stores the reply) against the same
conversation sent whole to the upstream directly. Upstream: `tests/fakellm.py` on
loopback, answering at once; {proxy['requests']} requests in sequence each.

| path | p50 ms | p95 ms |
| --- | ---: | ---: |
| direct to the upstream | {proxy['direct_p50']:.1f} | {proxy['direct_p95']:.1f} |
| through the memci proxy | {proxy['proxy_p50']:.1f} | {proxy['proxy_p95']:.1f} |

Overhead per request (p50): **{proxy['overhead_p50']:.1f} ms** (two durable writes, one
build, one extra loopback hop). With 8 concurrent clients the proxy answers
{proxy['rps_8_clients']:.0f} requests/s.
"""


if __name__ == "__main__":
    main()
