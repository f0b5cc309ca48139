"""Ingest throughput, build() time against history length, and prefix reuse.

Run: python bench/bench_build.py [--quick]

- ingest: ``add`` one at a time (synchronous=FULL: durable on return) and ``add_many``;
- build: steady-state median of build() on sessions of 1k, 10k and 100k messages with a
  128k window (each iteration adds a user and an assistant message, then builds), for the
  paged machinery alone and with retrieval on (every build then opens a new page, so
  every build searches the whole history: the worst case for retrieval);
- prefix: a long Chinese chat (every KdConv dialogue back to back, 600+ turns) replayed
  with an 8k budget; mean share of each request's tokens that is an exact prefix of the
  previous request, for memci's paged strategy and for a naive sliding window.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memci
from _histories import agent_history, chinese_long_chat


def ingest(tmp: Path, n: int) -> dict[str, float]:
    history = agent_history(n)
    out: dict[str, float] = {}
    with memci.Engine.open(tmp / "ingest-one.db") as eng:
        s = eng.session("one")
        started = time.perf_counter()
        for m in history:
            s.add(m)
        out["add_per_s"] = len(history) / (time.perf_counter() - started)
    with memci.Engine.open(tmp / "ingest-many.db") as eng:
        s = eng.session("many")
        started = time.perf_counter()
        for i in range(0, len(history), 100):
            s.add_many(history[i : i + 100])
        out["add_many_per_s"] = len(history) / (time.perf_counter() - started)
    return out


def build_times(tmp: Path, n: int, rounds: int, *, retrieval: bool) -> dict[str, float]:
    history = agent_history(n)
    with memci.Engine.open(tmp / f"build-{n}-{retrieval}.db", synchronous="NORMAL") as eng:
        s = eng.session(f"b{n}", context_window=128_000, retrieval=retrieval)
        s.set_system("You are a coding agent.")
        for i in range(0, len(history), 2000):
            s.add_many(history[i : i + 2000])
        started = time.perf_counter()
        s.build()  # the first build archives the backlog once
        first = (time.perf_counter() - started) * 1000
        times = []
        for r in range(rounds):
            s.add({"role": "user", "content": f"next question {r} about the parser cache"})
            s.add({"role": "assistant", "content": f"answer {r}: clear the cache first"})
            times.append(s.build().stats.build_ms)
        times.sort()
        return {"messages": len(history), "first_build_ms": first,
                "median_ms": statistics.median(times),
                "p95_ms": times[int(len(times) * 0.95) - 1]}


def prefix_share(tmp: Path, strategy: str) -> dict[str, float]:
    chat = chinese_long_chat()
    with memci.Engine.open(tmp / f"prefix-{strategy}.db", synchronous="NORMAL") as eng:
        s = eng.session(f"p-{strategy}", strategy=strategy, retrieval=False)
        s.set_system("你是一位熟悉中国旅游景点的导游，回答要准确简洁。")
        shares, sent = [], []
        for m in chat:
            if m["role"] == "assistant":
                ctx = s.build(budget=8000)
                if sent:
                    shares.append(ctx.stats.prefix_tokens / ctx.stats.total_tokens)
                sent.append(ctx.stats.total_tokens)
            s.add(m)
        turns = sum(1 for m in chat if m["role"] == "user")
        return {"turns": turns, "requests": len(sent), "mean_prefix_share": statistics.mean(shares),
                "mean_tokens": statistics.mean(sent), "events": s.stats().archived}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rates = ingest(tmp, 500 if args.quick else 3000)
        print(f"ingest: add {rates['add_per_s']:.0f} msg/s (durable, synchronous=FULL), "
              f"add_many(100) {rates['add_many_per_s']:.0f} msg/s")
        for retrieval in (False, True):
            label = "with retrieval (a search per new page)" if retrieval else "paged"
            results = {n: build_times(tmp, n, 50 if args.quick else 200, retrieval=retrieval)
                       for n in sizes}
            for r in results.values():
                print(f"build ({label}), {r['messages']:>7,} messages, 128k window: "
                      f"median {r['median_ms']:.3f} ms, p95 {r['p95_ms']:.3f} ms "
                      f"(first build {r['first_build_ms']:.0f} ms)")
            big, small = results[sizes[-1]], results[sizes[0]]
            print(f"ratio {sizes[-1]:,} / {sizes[0]:,} ({label}): "
                  f"{big['median_ms'] / small['median_ms']:.2f}x")
        for strategy in ("paged", "oldest"):
            p = prefix_share(tmp, strategy)
            label = "memci paged" if strategy == "paged" else "naive sliding window (oldest)"
            print(f"prefix reuse, {p['turns']} turns, 8k budget, {label}: "
                  f"{100 * p['mean_prefix_share']:.1f}% of each request on average "
                  f"(mean {p['mean_tokens']:.0f} tokens/request, {p['events']} pages archived)")


if __name__ == "__main__":
    main()
