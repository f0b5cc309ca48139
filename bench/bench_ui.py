"""The inspector's sessions list at many sessions: a page's cost at the start and at the end.

Run: python bench/bench_ui.py [--sessions 100000] [--repeat 15]

One SQLite store with ``--sessions`` sessions of one tenant (two messages each, one user per
ten sessions); requests go through the real app in process (FastAPI's TestClient, no
network), so what is timed is the route and the store. For a page of 50 sessions, each
with its message count and last activity:

- memci: ``GET /v1/ui/sessions?after=…&limit=50`` (keyset page; counts for the page in one
  statement), at the first page and at the last;
- the alternative an inspector would have without it: ``GET /v1/sessions?after=…&limit=50``
  then ``GET /v1/sessions/{sid}`` for each of the 50 (its message count), at the same two
  places;
- a search that matches nothing (``q``): one request reads at most 5,000 sessions.

Prints medians in ms and the ratios alternative / memci.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from fastapi.testclient import TestClient  # noqa: E402

import memci  # noqa: E402
from memci.messages import Message  # noqa: E402
from memci.server import KeyStore, ServerConfig, create_app  # noqa: E402
from memci.store.sqlite._driver import driver  # noqa: E402

PAGE = 50


def fill(engine: memci.Engine, sessions: int) -> None:
    store = engine.store
    batch = 2000
    for start in range(0, sessions, batch):
        with store.atomic():
            for i in range(start, min(start + batch, sessions)):
                record = store.ensure_session("acme", f"session-{i:06d}", f"user-{i // 10}", {})
                store.append(record, [Message.user(f"hello {i}"), Message.assistant("hi")])


def median_ms(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        run()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine = memci.Engine.open(Path(tmp) / "m.db", workers=0, synchronous="NORMAL")
        began = time.perf_counter()
        fill(engine, args.sessions)
        filled = time.perf_counter() - began
        key = KeyStore(engine.store).create("acme")[1]
        headers = {"Authorization": f"Bearer {key}"}
        ids = [r.id for r in engine.store.sessions("acme")]
        last = ids[-PAGE - 1]
        with TestClient(create_app(engine, ServerConfig())) as client:
            def memci_page(after: int) -> Callable[[], object]:
                def run() -> object:
                    page = client.get("/v1/ui/sessions", params={"after": after,
                                                                 "limit": PAGE},
                                      headers=headers).json()
                    assert len(page["sessions"]) == PAGE
                    return page
                return run

            def naive_page(after: int) -> Callable[[], object]:
                def run() -> object:
                    page = client.get("/v1/sessions", params={"after": after, "limit": PAGE},
                                      headers=headers).json()
                    counts = [client.get(f"/v1/sessions/{s['session']}",
                                         headers=headers).json()["messages"]
                              for s in page["sessions"]]
                    assert len(counts) == PAGE
                    return counts
                return run

            def search() -> object:
                return client.get("/v1/ui/sessions", params={"q": "no-such-name"},
                                  headers=headers).json()

            rows = [(where, median_ms(memci_page(after), args.repeat),
                     median_ms(naive_page(after), max(3, args.repeat // 3)))
                    for where, after in (("first page", 0), ("last page", last))]
            searched = median_ms(search, args.repeat)
        engine.close()
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, SQLite "
          f"{driver().sqlite_version} ({driver().__name__}), synchronous=NORMAL; "
          f"date {date.today().isoformat()}")
    print(f"{args.sessions:,} sessions (filled in {filled:.0f} s); a page of {PAGE} with "
          "message counts and last activity; medians")
    print("| page | memci /v1/ui/sessions ms | /v1/sessions + one GET per session ms | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for where, ours, theirs in rows:
        print(f"| {where} | {ours:.1f} | {theirs:.1f} | {theirs / ours:.1f}x |")
    print(f"search matching nothing (reads 5,000 sessions): {searched:.1f} ms")


if __name__ == "__main__":
    main()
