"""Erasures of one tenant against the writes of another: how long does an add wait?

Run from the repository root::

    python bench/bench_erase.py                  # a ~200 MB SQLite store
    python bench/bench_erase.py --sessions 300   # ~500 MB

One SQLite store is built (``--sessions`` users of one session each, ``--messages``
messages a session, text drawn from a 60,000-word Zipf vocabulary, so the search index is
of a realistic size), then copied, once for each way of scrubbing:

- ``incremental``: this memci. An erasure that removed nothing scrubs nothing; a session's
  search entries go ahead of its deletion in short transactions; the scrub empties the
  write-ahead log (every deletion already zeroed what it freed).
- ``full``: the alternative, what memci did before: every erasure (also of a user with
  nothing stored) is followed by a full rewrite of the store (``engine.scrub(full=True)``:
  FTS5 ``optimize`` of every search index, ``VACUUM``).

In each, one thread of another tenant adds a message after another (each add durable, its
session asked of the engine each time, as the REST server's threads do over one engine),
while the main thread erases: 5 users who
own nothing, 5 users of one message, then one user of ``--messages`` messages. Printed per
way: how long each kind of erasure took, the other tenant's adds during the erasures
(count, adds/s, p50, p99 and the longest wait) and, for comparison, the same before any
erasure; then the ratios full / incremental.

What zeroing costs the other writes: ``--ingest-rounds`` rounds of adding 900 messages to
6 sessions one at a time, building every second add, on a new store with every write
zeroing what it frees (``PRAGMA secure_delete``, this memci) and without (before), the two
alternating so the machine's noise falls on both; the medians and their ratio.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

import memci  # noqa: E402

COMMAND = "python bench/bench_erase.py"


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    syllables = ("ka to ri mu se lo pa ne shi ra ve qu zo di an el or us").split()
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
             for _ in range(60_000)]
    return words, [1 / (i + 1) for i in range(len(words))]


def build(path: Path, sessions: int, messages: int) -> None:
    """The store: ``sessions`` users with one session of ``messages`` messages each."""
    rng = random.Random(3)
    words, weights = _vocabulary(rng)
    with memci.Engine.open(path, synchronous="NORMAL", workers=0) as engine:
        for n in range(sessions):
            session = engine.session(f"s{n}", user=f"u{n}")
            batch = [{"role": "user" if i % 2 == 0 else "assistant",
                      "content": " ".join(rng.choices(words, weights, k=rng.randint(20, 300)))}
                     for i in range(messages)]
            for start in range(0, messages, 50):
                session.add_many(batch[start:start + 50])
        for n in range(5):
            engine.session(f"one{n}", user=f"one{n}").add(
                {"role": "user", "content": f"a single message of user one{n}"})
        engine.scrub(full=True)  # a settled store: both ways start from the same file


@dataclass
class Phase:
    """The other tenant's adds while one phase ran."""

    seconds: float = 0.0
    waits: list[float] = field(default_factory=list)

    def line(self) -> str:
        if not self.waits:
            return "no add finished"
        ordered = sorted(self.waits)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (f"{len(ordered)} adds, {len(ordered) / max(self.seconds, 1e-9):.0f}/s, "
                f"p50 {statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
                f"longest {ordered[-1] * 1000:.0f} ms")


@dataclass
class Run:
    """One way of scrubbing: erasure times and the other tenant's adds."""

    quiet: Phase = field(default_factory=Phase)
    erasing: Phase = field(default_factory=Phase)
    erasures: dict[str, list[float]] = field(default_factory=dict)


class Adder:
    """Another tenant adding a message after another, each add's wait recorded."""

    def __init__(self, engine: memci.Engine) -> None:
        self.engine = engine
        self.done: list[tuple[float, float]] = []  # (started, finished)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            started = time.monotonic()
            # As a server's request does: the session asked of the engine each time.
            session = self.engine.session("busy", user="someone", tenant="other")
            session.add({"role": "user", "content": f"another tenant's message {n}"})
            self.done.append((started, time.monotonic()))
            n += 1

    def __enter__(self) -> Adder:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def phase(self, start: float, end: float) -> Phase:
        """The adds that finished between ``start`` and ``end``, with their waits."""
        return Phase(end - start, [f - s for s, f in self.done if start <= f <= end])


def run(path: Path, way: str, big_user: str, quiet: float) -> Run:
    out = Run()
    with memci.Engine.open(path, workers=0) as engine, Adder(engine) as adder:

        def erase(user: str, kind: str) -> None:
            started = time.monotonic()
            engine.erase_user(user)
            if way == "full":
                engine.scrub(full=True)
            out.erasures.setdefault(kind, []).append(time.monotonic() - started)

        time.sleep(1.0)  # the adder warms up
        start = time.monotonic()
        time.sleep(quiet)
        out.quiet = adder.phase(start, time.monotonic())
        start = time.monotonic()
        for n in range(5):
            erase(f"nobody{n}", "user who owns nothing")
        for n in range(5):
            erase(f"one{n}", "user of one message")
        erase(big_user, "user of one large session")
        out.erasing = adder.phase(start, time.monotonic())
    return out


def ingest(folder: Path, zeroing: bool) -> float:
    """Seconds to add 900 messages to 6 sessions, building after every second one."""
    rng = random.Random(5)
    words, weights = _vocabulary(rng)
    path = folder / f"ingest-{zeroing}.db"
    with memci.Engine.open(path, workers=0) as engine:
        with engine.store.read() as db:
            db.execute(f"PRAGMA secure_delete = {'ON' if zeroing else 'OFF'}")
        started = time.monotonic()
        for n in range(6):
            session = engine.session(f"s{n}", user=f"u{n}", context_window=4_000)
            for i in range(150):
                session.add({"role": "user" if i % 2 == 0 else "assistant",
                             "content": " ".join(rng.choices(words, weights,
                                                             k=rng.randint(20, 300)))})
                if i % 2:
                    session.build()
        took = time.monotonic() - started
    for extra in folder.glob(f"ingest-{zeroing}*"):
        shutil.rmtree(extra) if extra.is_dir() else extra.unlink()
    return took


def report(runs: dict[str, Run], args: argparse.Namespace, size_mb: float) -> str:
    lines = [f"store: {size_mb:.0f} MB, {args.sessions} sessions of {args.messages} messages;"
             f" command: {COMMAND} --sessions {args.sessions} --messages {args.messages}", ""]
    for way, result in runs.items():
        lines.append(f"{way}:")
        lines.append(f"  adds before any erasure: {result.quiet.line()}")
        lines.append(f"  adds during the erasures: {result.erasing.line()}")
        for kind, times in result.erasures.items():
            lines.append(f"  erasing a {kind}: {', '.join(f'{t:.2f}' for t in times)} s")
    full, inc = runs["full"].erasing, runs["incremental"].erasing
    if full.waits and inc.waits:
        lines += ["", "full / incremental, adds during the erasures:",
                  f"  longest wait {max(full.waits) / max(inc.waits):.1f}x, "
                  f"p99 {_p99(full.waits) / _p99(inc.waits):.1f}x, adds/s "
                  f"{(len(full.waits) / full.seconds) / (len(inc.waits) / inc.seconds):.2f}x"]
    return "\n".join(lines)


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=120, help="users (one session each)")
    parser.add_argument("--messages", type=int, default=300, help="messages per session")
    parser.add_argument("--quiet", type=float, default=5.0,
                        help="seconds of adds measured before the erasures")
    parser.add_argument("--ingest-rounds", type=int, default=3,
                        help="rounds of the ingest with and without zeroing (0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memci-bench-erase-") as tmp:
        if args.ingest_rounds:
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(args.ingest_rounds):
                for zeroing in (True, False):
                    times[zeroing].append(ingest(Path(tmp), zeroing))
            on, off = statistics.median(times[True]), statistics.median(times[False])
            print(f"ingest (900 adds, 450 builds), median of {args.ingest_rounds}: zeroing "
                  f"{on:.2f} s, not zeroing {off:.2f} s: {on / off:.3f}x", flush=True)
        base = Path(tmp) / "base.db"
        started = time.monotonic()
        build(base, args.sessions, args.messages)
        size_mb = base.stat().st_size / 1e6
        print(f"built {size_mb:.0f} MB in {time.monotonic() - started:.0f} s", flush=True)
        runs: dict[str, Run] = {}
        for way in ("incremental", "full"):
            copy = Path(tmp) / f"{way}.db"
            shutil.copy(base, copy)
            runs[way] = run(copy, way, big_user="u7", quiet=args.quiet)
            for extra in Path(tmp).glob(f"{way}*"):
                shutil.rmtree(extra) if extra.is_dir() else extra.unlink()
            print(f"{way} done", flush=True)
    print(report(runs, args, size_mb))


if __name__ == "__main__":
    main()
