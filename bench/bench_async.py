"""What the async API costs and what it carries: overhead per call, 50 sessions at once.

Run: python bench/bench_async.py [--quick]

- overhead: the same steady turn (add a user message, build, add the reply) on two
  sessions with the same 1,000-message history, one through ``Session``, one through
  ``AsyncSession``, round by round (which goes first alternates); the wall time of
  ``build()`` (and of ``add``) as the caller sees it, p50 and p95, and the median of the
  per-round differences: the hop to a worker thread and back. And that hop alone, on a
  call that does nothing.
- throughput: 50 sessions (each with a 200-message history) in one process, one task per
  session running turns (add, build, add) as fast as it can for a fixed time, on one
  ``AsyncEngine``; against the same 50 sessions driven one turn after another by one
  thread on ``Engine``. Builds per second, build latency p50 / p95 under that load, and
  the event loop's worst lag (a 10 ms ticker) while it ran.

Both use the default settings (retrieval on, ``synchronous=FULL``: every add durable).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memci
from _histories import agent_history, percentile


def _turn(r: int) -> tuple[dict[str, str], dict[str, str]]:
    return ({"role": "user", "content": f"next question {r} about the parser cache"},
            {"role": "assistant", "content": f"answer {r}: clear the cache first"})


def _prepare(path: Path, names: list[str], history: int) -> None:
    with memci.Engine.open(path, workers=0) as engine:
        for name in names:
            s = engine.session(name)
            s.set_system("You are a coding agent.")
            s.add_many(agent_history(history))
            s.build()  # the first build catches up on the import: not what is measured


def overhead(tmp: Path, rounds: int) -> dict[str, float]:
    """Wall time of build() and add() per call, sync against async, same history.

    Each round runs one turn on each session, the sync one first on even rounds and the
    async one first on odd ones, so drift in the machine's load falls on both; the
    overhead is the median of the per-round differences. ``hop``: a call that does
    nothing (``AsyncSession.run`` of a no-op against the no-op itself), the bare cost.
    """
    _prepare(tmp / "sync.db", ["o"], 1000)
    _prepare(tmp / "async.db", ["o"], 1000)
    times: dict[str, list[float]] = {k: [] for k in (
        "sync_build", "async_build", "sync_add", "async_add", "sync_hop", "async_hop")}
    engine = memci.Engine.open(tmp / "sync.db", workers=0)
    s = engine.session("o")

    def sync_turn(r: int) -> None:
        user, reply = _turn(r)
        t = time.perf_counter()
        s.add(user)
        times["sync_add"].append(time.perf_counter() - t)
        t = time.perf_counter()
        s.build()
        times["sync_build"].append(time.perf_counter() - t)
        s.add(reply)

    async def async_turn(a: memci.AsyncSession, r: int) -> None:
        user, reply = _turn(r)
        t = time.perf_counter()
        await a.add(user)
        times["async_add"].append(time.perf_counter() - t)
        t = time.perf_counter()
        await a.build()
        times["async_build"].append(time.perf_counter() - t)
        await a.add(reply)

    def noop(_: memci.Session) -> None:
        return None

    async def run() -> None:
        async with await memci.AsyncEngine.open(tmp / "async.db", workers=0) as aengine:
            a = await aengine.session("o")
            for r in range(rounds):
                if r % 2 == 0:
                    sync_turn(r)
                    await async_turn(a, r)
                else:
                    await async_turn(a, r)
                    sync_turn(r)
            for _ in range(rounds * 5):
                t = time.perf_counter()
                noop(s)
                times["sync_hop"].append(time.perf_counter() - t)
                t = time.perf_counter()
                await a.run(noop)
                times["async_hop"].append(time.perf_counter() - t)

    try:
        asyncio.run(run())
    finally:
        engine.close()
    out: dict[str, float] = {"rounds": rounds}
    for key, values in times.items():
        out[f"{key}_p50_ms"] = statistics.median(values) * 1000
        out[f"{key}_p95_ms"] = percentile(values, 0.95) * 1000
    for what in ("build", "add", "hop"):
        pairs = zip(times[f"async_{what}"], times[f"sync_{what}"], strict=True)
        out[f"{what}_overhead_ms"] = statistics.median(a - b for a, b in pairs) * 1000
    return out


def throughput(tmp: Path, sessions: int, seconds: float) -> dict[str, Any]:
    """Builds per second with ``sessions`` sessions at once, async and one-by-one sync."""
    names = [f"s{i}" for i in range(sessions)]
    _prepare(tmp / "tp-async.db", names, 200)
    _prepare(tmp / "tp-sync.db", names, 200)
    out: dict[str, Any] = {"sessions": sessions, "seconds": seconds}

    builds: list[float] = []
    lag = 0.0

    async def one(engine: memci.AsyncEngine, name: str, stop: float) -> None:
        s = await engine.session(name)
        r = 0
        while time.perf_counter() < stop:
            user, reply = _turn(r)
            await s.add(user)
            t = time.perf_counter()
            await s.build()
            builds.append(time.perf_counter() - t)
            await s.add(reply)
            r += 1

    async def ticker() -> None:
        nonlocal lag
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.01)
            lag = max(lag, time.perf_counter() - t - 0.01)

    async def run() -> float:
        async with await memci.AsyncEngine.open(tmp / "tp-async.db", workers=0) as engine:
            tick = asyncio.create_task(ticker())
            started = time.perf_counter()
            await asyncio.gather(*(one(engine, n, started + seconds) for n in names))
            elapsed = time.perf_counter() - started
            tick.cancel()
            return elapsed

    elapsed = asyncio.run(run())
    out["async_builds_per_s"] = len(builds) / elapsed
    out["async_build_p50_ms"] = statistics.median(builds) * 1000
    out["async_build_p95_ms"] = percentile(builds, 0.95) * 1000
    out["async_loop_max_lag_ms"] = lag * 1000

    sync_builds: list[float] = []
    with memci.Engine.open(tmp / "tp-sync.db", workers=0) as engine:
        opened = [engine.session(n) for n in names]
        started = time.perf_counter()
        r = 0
        while time.perf_counter() < started + seconds:
            for s in opened:  # one turn of each session, round after round
                user, reply = _turn(r)
                s.add(user)
                t = time.perf_counter()
                s.build()
                sync_builds.append(time.perf_counter() - t)
                s.add(reply)
            r += 1
        elapsed = time.perf_counter() - started
    out["sync_builds_per_s"] = len(sync_builds) / elapsed
    out["sync_build_p50_ms"] = statistics.median(sync_builds) * 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    args = parser.parse_args()
    rounds, seconds = (50, 3.0) if args.quick else (400, 30.0)
    with tempfile.TemporaryDirectory() as home:
        tmp = Path(home)
        o = overhead(tmp, rounds)
        print(f"overhead ({o['rounds']} rounds, 1,000-message history):")
        for what in ("build", "add", "hop"):
            print(f"  {what}: sync p50 {o[f'sync_{what}_p50_ms']:.3f} ms "
                  f"p95 {o[f'sync_{what}_p95_ms']:.3f} ms | async p50 "
                  f"{o[f'async_{what}_p50_ms']:.3f} ms p95 {o[f'async_{what}_p95_ms']:.3f} ms"
                  f" | overhead p50 {o[f'{what}_overhead_ms']:+.3f} ms")
        t = throughput(tmp, 50, seconds)
        print(f"throughput ({t['sessions']} sessions, {t['seconds']:.0f} s each way):")
        print(f"  async, {t['sessions']} at once: {t['async_builds_per_s']:.0f} builds/s, "
              f"build p50 {t['async_build_p50_ms']:.1f} ms p95 {t['async_build_p95_ms']:.1f} "
              f"ms, loop max lag {t['async_loop_max_lag_ms']:.1f} ms")
        print(f"  sync, one after another: {t['sync_builds_per_s']:.0f} builds/s, "
              f"build p50 {t['sync_build_p50_ms']:.1f} ms")


if __name__ == "__main__":
    main()
