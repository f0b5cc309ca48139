"""What tracing costs: build() with no tracer provider against an SDK provider, same run.

Run: python bench/bench_otel.py [--quick]

Two sessions over two SQLite files get the same real conversation (LoCoMo and KdConv
turns, ../shared/data), then the same rounds: each round adds a user and an assistant
message to both and builds both, one with no tracer provider (OpenTelemetry's default
proxy: memci makes no span) and one with the SDK's ``TracerProvider`` exporting every
span to an ``InMemorySpanExporter`` through a ``SimpleSpanProcessor`` (the costliest
wiring: the span is exported inside the call). Which goes first alternates by round, so
drift on the machine falls on both alike. build() time is measured around the call
(``perf_counter``), add() likewise. Also: the cost of one untraced ``_trace.span()``
call (the hook at every traced point), the least of five ``timeit`` runs.

Switching the global provider back and forth inside one process is done the way
OpenTelemetry's own test utilities do it (resetting the API's globals).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

import memci
from _histories import percentile, real_chat
from memci import _trace


def _untraced() -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


def _traced(provider: TracerProvider) -> None:
    _untraced()
    trace.set_tracer_provider(provider)


def run(tmp: Path, messages: int, rounds: int, budget: int) -> dict[str, float]:
    history = real_chat(messages)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    times: dict[str, list[float]] = {"off": [], "on": []}
    adds: dict[str, list[float]] = {"off": [], "on": []}
    with memci.Engine.open(tmp / "off.db", synchronous="NORMAL") as off_engine, \
            memci.Engine.open(tmp / "on.db", synchronous="NORMAL") as on_engine:
        sessions = {"off": off_engine.session("s", context_window=128_000),
                    "on": on_engine.session("s", context_window=128_000)}
        for session in sessions.values():
            session.set_system("You are a helpful assistant.")
            session.add_many(history)
            session.build(budget=budget)  # the first build catches up on the import
        for r in range(rounds):
            for mode in (("off", "on") if r % 2 == 0 else ("on", "off")):
                if mode == "on":
                    _traced(provider)
                else:
                    _untraced()
                session = sessions[mode]
                started = time.perf_counter()
                session.add({"role": "user", "content": f"next question {r} about the trip"})
                session.add({"role": "assistant", "content": f"answer {r}: take the train"})
                adds[mode].append((time.perf_counter() - started) * 1000 / 2)
                started = time.perf_counter()
                session.build(budget=budget)
                times[mode].append((time.perf_counter() - started) * 1000)
        _untraced()
    provider.shutdown()
    spans = exporter.get_finished_spans()
    # the least of five runs: the hook's own cost, with the least of the machine's noise
    untraced = min(timeit.repeat(lambda: _trace.span("memci.build"), number=100_000,
                                 repeat=5)) / 100_000
    return {
        "messages": len(history), "rounds": rounds, "budget": budget,
        "build_p50_off": statistics.median(times["off"]),
        "build_p50_on": statistics.median(times["on"]),
        "build_p95_off": percentile(times["off"], 0.95),
        "build_p95_on": percentile(times["on"], 0.95),
        "add_p50_off": statistics.median(adds["off"]),
        "add_p50_on": statistics.median(adds["on"]),
        "spans": len(spans),
        "build_spans": sum(1 for s in spans if s.name == "memci.build"),
        "untraced_span_ns": untraced * 1e9,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        r = run(Path(d), 2_000 if args.quick else 10_000, 40 if args.quick else 300,
                budget=96_000)
    print(f"{r['messages']:.0f} real messages, {r['rounds']:.0f} rounds, budget {r['budget']:.0f}; "
          f"{r['spans']:.0f} spans exported ({r['build_spans']:.0f} builds)")
    print("| | no tracer provider | SDK provider, in-memory exporter | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for label, key in (("build p50 ms", "build_p50"), ("build p95 ms", "build_p95"),
                       ("add p50 ms", "add_p50")):
        off, on = r[f"{key}_off"], r[f"{key}_on"]
        print(f"| {label} | {off:.2f} | {on:.2f} | {on / off:.3f} |")
    print(f"one untraced _trace.span() call: {r['untraced_span_ns']:.0f} ns")


if __name__ == "__main__":
    main()
