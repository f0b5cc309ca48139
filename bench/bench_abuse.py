"""How fast ``memci serve`` answers its health check while clients abuse it, against plain uvicorn.

Run from the repository root::

    python bench/bench_abuse.py                  # 40 probes per case
    python bench/bench_abuse.py --probes 100 --slow 1100 --greps 50

Each case starts a server as a subprocess on a temporary store (``--no-auth``) and times
``GET /healthz`` one probe after another (each with a 10 s timeout; a probe that times
out counts as a failure, not a figure):

- **idle**: nothing else runs (the baseline of the ratios);
- **greps**: ``--greps`` long ``grep`` tool calls in flight (each runs to its 2 s deadline;
  at most 8 at once, the rest queue);
- **slow sockets**: ``--slow`` sockets that send half a request line and then nothing, on
  a server limited to 1,024 open files (a common ``ulimit -n``). Run twice: ``memci
  serve`` (its read timeouts and connection caps), and the same app under plain uvicorn
  (what ``memci serve`` ran before).

It prints p50 / p95 / max per case in milliseconds, the failures, and each p50 against
the idle one.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

import httpx  # noqa: E402

MEMCI = [sys.executable, "-c", "from memci.cli import _server, main; main()"]
PLAIN_UVICORN = """
import sys, uvicorn, memci
from memci.server import ServerConfig, create_app
engine = memci.Engine.open(sys.argv[1])
app = create_app(engine, ServerConfig(auth=False, file_roots=(sys.argv[2],)))
uvicorn.run(app, host="127.0.0.1", port=0, log_level="info", access_log=False)
"""
SLOW_PATTERN = r"(?:a|b)*a(?:a|b){800}c"  # RE2 runs each line to the 2 s deadline
TOOL_TURN = [
    {"role": "user", "content": "look at big.txt"},
    {"role": "assistant", "content": None, "tool_calls": [{
        "id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "big.txt"},
]
OPEN_FILES = 1024


def _limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


@contextmanager
def server(command: list[str], *, limited: bool = False) -> Iterator[str]:
    """A server subprocess; yields its URL (from 'listening on' or uvicorn's own line)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, preexec_fn=_limit_open_files if limited else None)
    assert proc.stderr is not None
    try:
        for line in iter(proc.stderr.readline, b""):
            found = re.search(rb"(?:listening|running) on (http://[\d.]+:\d+)", line)
            if found:
                threading.Thread(target=lambda: [None for _ in proc.stderr or ()],
                                 daemon=True).start()
                yield found.group(1).decode()
                break
        else:
            raise RuntimeError("the server did not start")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()


def probe(url: str, count: int) -> tuple[list[float], int]:
    """Seconds of each answered ``/healthz`` and how many failed."""
    took, failed = [], 0
    with httpx.Client(base_url=url, timeout=10) as http:
        for _ in range(count):
            start = time.perf_counter()
            try:
                http.get("/healthz").raise_for_status()
                took.append(time.perf_counter() - start)
            except httpx.HTTPError:
                failed += 1
            time.sleep(0.02)
    return took, failed


def greps(url: str, count: int) -> Callable[[], None]:
    """Start ``count`` long greps (one session each); returns what waits for them."""
    with httpx.Client(base_url=url, timeout=60) as http:
        for n in range(count):
            http.post(f"/v1/sessions/g{n}/messages", json={"messages": TOOL_TURN})

    def one(n: int) -> None:
        with httpx.Client(base_url=url, timeout=600) as http:
            http.post(f"/v1/sessions/g{n}/tools/grep",
                      json={"target": "big.txt", "pattern": SLOW_PATTERN})

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    return lambda: [t.join() for t in threads]


def slow_sockets(url: str, count: int) -> list[socket.socket]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    held = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=10)
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        except OSError:
            pass
        held.append(sock)
    return held


def ms(values: list[float], q: float) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--probes", type=int, default=40)
    parser.add_argument("--greps", type=int, default=50)
    parser.add_argument("--slow", type=int, default=1100)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.slow + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.slow + 400), hard))
    work = Path(tempfile.mkdtemp(prefix="memci-abuse-"))
    tree = work / "files"
    tree.mkdir()
    rng = random.Random(7)
    ab = bytes(ord("a") + (b & 1) for b in range(256))
    (tree / "big.txt").write_text("".join(
        rng.randbytes(1_000_000).translate(ab).decode("ascii") + "\n" for _ in range(6)))
    serve = [*MEMCI, "serve", "--port", "0", "--no-auth", "--file-root", str(tree)]
    rows: list[tuple[str, list[float], int]] = []

    with server([*serve, "--db", str(work / "idle.db")]) as url:
        rows.append(("idle", *probe(url, args.probes)))
    with server([*serve, "--db", str(work / "greps.db")]) as url:
        wait = greps(url, args.greps)
        rows.append((f"{args.greps} long greps in flight", *probe(url, args.probes)))
        wait()
    for name, command in (
            ("memci serve", [*serve, "--db", str(work / "slow.db")]),
            ("plain uvicorn", [sys.executable, "-c", PLAIN_UVICORN, str(work / "plain.db"),
                               str(tree)])):
        with server(command, limited=True) as url:
            held = slow_sockets(url, args.slow)
            try:
                rows.append((f"{args.slow} slow sockets, ulimit -n {OPEN_FILES}: {name}",
                             *probe(url, args.probes)))
            finally:
                for sock in held:
                    sock.close()

    print(f"# {date.today()} · {platform.python_version()} · {os.cpu_count()} cores · "
          f"{args.probes} probes of GET /healthz per case (timeout 10 s)")
    print("| case | p50 ms | p95 ms | max ms | failed | p50 / idle p50 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    idle = sorted(rows[0][1])[len(rows[0][1]) // 2]
    for name, took, failed in rows:
        ratio = f"{sorted(took)[len(took) // 2] / idle:.1f}x" if took else "-"
        print(f"| {name} | {ms(took, 0.5)} | {ms(took, 0.95)} | {ms(took, 1.0)} | "
              f"{failed} of {args.probes} | {ratio} |")


if __name__ == "__main__":
    main()
