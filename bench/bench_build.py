"""Ingest throughput, build() time against history length, and prefix reuse.

Run: python bench/bench_build.py [--quick] [--sizes N [N ...]]
     python bench/bench_build.py --prefix-json   (only the prefix reuse, as JSON: the docs quote it)

- ingest: ``add`` one at a time (synchronous=FULL: durable on return) and ``add_many``;
- build: the import's CPU per message (``add_many`` of 2,000 at a time), the first build()
  after importing 1k, 10k and 100k messages, then p50/p95/p99 of
  steady builds (each adds a user and an assistant message first, so every build opens a
  page and, with retrieval on, searches the history: the worst case for retrieval; wall
  time, and the p50 of the build thread's CPU time, which a shared machine moves less), 128k
  window, retrieval off and on, on synthetic text (every message matches every query: a
  ~40-word vocabulary) and on real text (LoCoMo and KdConv turns), then the CPU p50 of as
  many steady builds whose questions ask a kind of answer (when, where, how much, how
  long: each keyword match is read for one); langchain's ``trim_messages`` over the same
  history at the same budget in the same run;
- prefix: a long Chinese chat (every KdConv dialogue back to back, 600+ turns) replayed
  with an 8k budget; mean share of each request's tokens that is an exact prefix of the
  previous request, for memci's paged strategy and for a naive sliding window; and the
  LoCoMo English long chats (each conversation of ../shared/data/locomo, its dialogue
  only, one session each) at 8k with retrieval on (the default), replayed as ``memci
  replay`` does (a build before every assistant message), with the cost under prompt
  caching (cached input 50% off) against the full history's.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memci
from _histories import SHARED, agent_history, chinese_long_chat, percentile, real_chat
from memci.replay import ReplayResult, load_conversation, replay


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


#: Questions that ask a kind of answer (a time, a place, a price, a duration): a build with
#: retrieval reads each keyword match for one (memci.memory._answer).
ASKING = ("when did the parser cache test {r} fail?", "where is the config of step {r} read?",
          "how much memory did run {r} take?", "how long did build {r} take?",
          "第{r}次测试是什么时候失败的？", "第{r}步的配置文件在哪里？")


def _steady(s: memci.Session, rounds: int, question: Callable[[int], str]
            ) -> tuple[list[float], list[float]]:
    """Wall and CPU ms of ``rounds`` builds, each after a user's question and an answer."""
    times, cpu = [], []
    for r in range(rounds):
        s.add({"role": "user", "content": question(r)})
        s.add({"role": "assistant", "content": f"answer {r}: clear the cache first"})
        # CPU of this thread too: on a shared machine the wall time also counts the
        # time other processes held the cores.
        started = time.thread_time()
        times.append(s.build().stats.build_ms)
        cpu.append((time.thread_time() - started) * 1000)
    return times, cpu


def build_times(tmp: Path, n: int, rounds: int, *, retrieval: bool, text: str,
                budget: int = 96_000) -> dict[str, float]:
    """First and steady build() times after importing ``n`` messages (128k window).

    Steady builds first with questions that ask no kind of answer, then with
    :data:`ASKING`'s (``asking_cpu_p50_ms``).
    """
    history = agent_history(n) if text == "synthetic" else real_chat(n)
    with memci.Engine.open(tmp / f"build-{n}-{retrieval}-{text}.db",
                           synchronous="NORMAL") as eng:
        s = eng.session(f"b{n}", context_window=128_000, retrieval=retrieval)
        s.set_system("You are a coding agent." if text == "synthetic"
                     else "You are a helpful assistant.")
        started = time.thread_time()
        for i in range(0, len(history), 2000):
            s.add_many(history[i : i + 2000])
        # Per message: an import whose cost grows faster than the history shows here.
        import_cpu_ms = (time.thread_time() - started) * 1000 / len(history)
        ctx = s.build()  # the first build catches up on the whole import
        first = ctx.stats.build_ms
        times, cpu = _steady(s, rounds, lambda r: f"next question {r} about the parser cache")
        _, asking = _steady(s, rounds, lambda r: ASKING[r % len(ASKING)].format(r=r))
    items = 0
    if retrieval:  # the memory items the searches of the steady builds ranked
        with closing(sqlite3.connect(tmp / f"build-{n}-{retrieval}-{text}.db")) as db:
            items = db.execute("SELECT COUNT(*) FROM memory_items").fetchone()[0]
    return {"messages": len(history), "import_cpu_ms": import_cpu_ms,
            "first_build_ms": first, "items": items,
            "p50_ms": statistics.median(times), "p95_ms": percentile(times, 0.95),
            "p99_ms": percentile(times, 0.99), "cpu_p50_ms": statistics.median(cpu),
            "asking_cpu_p50_ms": statistics.median(asking), "budget": budget}


def trim_times(n: int, rounds: int, *, text: str, budget: int = 96_000) -> dict[str, float]:
    """langchain's ``trim_messages`` over the same history, the same way, same budget."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.messages.utils import count_tokens_approximately, trim_messages

    history = agent_history(n) if text == "synthetic" else real_chat(n)
    kinds = {"user": HumanMessage, "assistant": AIMessage}
    messages: list[Any] = [SystemMessage("You are a helpful assistant.")]
    messages += [kinds[m["role"]](m["content"] or "") for m in history
                 if m["role"] in kinds]
    times = []
    for r in range(rounds):
        messages.append(HumanMessage(f"next question {r} about the parser cache"))
        messages.append(AIMessage(f"answer {r}: clear the cache first"))
        started = time.perf_counter()
        trim_messages(messages, max_tokens=budget, strategy="last",
                      token_counter=count_tokens_approximately, include_system=True,
                      start_on="human")
        times.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": statistics.median(times), "p95_ms": percentile(times, 0.95),
            "p99_ms": percentile(times, 0.99)}


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


def locomo_prefix(tmp: Path) -> dict[str, float]:
    """The LoCoMo long chats at 8k, retrieval on: prefix reuse and cost with caching."""
    results: list[ReplayResult] = []
    turns = 0
    for path in sorted((SHARED / "locomo").glob("*.json")):
        trace = load_conversation(path, format="locomo")
        dialogue = trace.messages[:min((q.message for q in trace.questions),
                                       default=len(trace.messages))]
        turns += sum(1 for m in dialogue if m["role"] == "user")
        with memci.Engine.open(tmp / f"locomo-{path.stem}.db", synchronous="NORMAL") as eng:
            results.append(replay(eng.session(path.stem), dialogue, budget=8000))
    # as the KdConv figure: every request but a session's first, which has nothing before it
    later = [r for result in results for r in result.requests[1:]]
    every = [r for result in results for r in result.requests]
    memci_cost = sum(result.memci_cached_cost for result in results)
    full_cost = sum(result.full_cached_cost for result in results)
    return {"turns": turns, "requests": len(every),
            "mean_prefix_share": statistics.mean(r.prefix_tokens / r.memci_tokens
                                                 for r in later),
            "mean_tokens": statistics.mean(r.memci_tokens for r in every),
            "mean_retrieval_tokens": statistics.mean(r.segments.get("retrieval", 0)
                                                     for r in every),
            "ratio": sum(r.memci_tokens for r in every) / sum(r.full_tokens for r in every),
            "ratio_cached": memci_cost / full_cost}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--prefix-json", action="store_true",
                        help="only the prefix reuse, as JSON (the figures the docs quote)")
    parser.add_argument("--sizes", type=int, nargs="+", metavar="N",
                        help="history lengths of the build table (default 1000 10000 100000;"
                             " --quick: 1000 10000)")
    args = parser.parse_args()
    if args.prefix_json:
        with tempfile.TemporaryDirectory() as d:
            figures = {s: prefix_share(Path(d), s) for s in ("paged", "oldest")}
            print(json.dumps({**figures, "locomo": locomo_prefix(Path(d))}))
        return
    sizes = args.sizes or ((1_000, 10_000) if args.quick else (1_000, 10_000, 100_000))
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rates = ingest(tmp, 500 if args.quick else 3000)
        print(f"ingest: add {rates['add_per_s']:.0f} msg/s (durable, synchronous=FULL), "
              f"add_many(100) {rates['add_many_per_s']:.0f} msg/s")
        rounds = 50 if args.quick else 200
        print("build() after importing N messages, 128k window (96k budget); steady builds "
              "add a user and an assistant message first")
        print("| text | retrieval | messages | import CPU ms / message | memory items |"
              " first build ms | p50 ms | p95 ms | p99 ms | CPU p50 ms |"
              " CPU p50 ms, questions asking when/where/how much/how long |"
              " langchain trim_messages p50 / p99 ms | p50 vs the first size |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
              "| ---: |")
        for text in ("synthetic", "real"):
            for retrieval in (False, True):
                base = 0.0
                for n in sizes:
                    r = build_times(tmp, n, rounds, retrieval=retrieval, text=text)
                    t = trim_times(n, min(rounds, 50), text=text)
                    base = base or r["p50_ms"]
                    print(f"| {text} | {'on' if retrieval else 'off'} | {r['messages']:,} | "
                          f"{r['import_cpu_ms']:.3f} | {r['items']:,} | "
                          f"{r['first_build_ms']:.0f} | {r['p50_ms']:.2f} | "
                          f"{r['p95_ms']:.2f} | {r['p99_ms']:.2f} | {r['cpu_p50_ms']:.2f} | "
                          f"{r['asking_cpu_p50_ms']:.2f} | "
                          f"{t['p50_ms']:.1f} / {t['p99_ms']:.1f} | "
                          f"{r['p50_ms'] / base:.2f}x |", flush=True)
        for strategy in ("paged", "oldest"):
            p = prefix_share(tmp, strategy)
            label = "memci paged" if strategy == "paged" else "naive sliding window (oldest)"
            print(f"prefix reuse, {p['turns']} turns, 8k budget, {label}: "
                  f"{100 * p['mean_prefix_share']:.1f}% of each request on average "
                  f"(mean {p['mean_tokens']:.0f} tokens/request, {p['events']} pages archived)")
        lo = locomo_prefix(tmp)
        print(f"prefix reuse, LoCoMo long chats ({lo['turns']} turns), 8k budget, retrieval "
              f"on: {100 * lo['mean_prefix_share']:.1f}% of each request on average (mean "
              f"{lo['mean_tokens']:.0f} tokens/request); memci / full history "
              f"{lo['ratio']:.2f}x, with caching {lo['ratio_cached']:.2f}x")


if __name__ == "__main__":
    main()
