"""Durable jobs on a real SQLite file: idempotency, retries, leases, exactly-once effects.

The crash test kills a real worker process with SIGKILL while it holds jobs, and checks
that every job's effect is committed exactly once after a second worker finishes. Failed
jobs are visible: a real ``memci worker`` process against a fake model answering 500
reports them, and so do stats, ``memci stats``, ``memci inspect`` and REST stats.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import memci
from memci.errors import ConfigError, InvalidInputError
from memci.llm import OpenAIChatClient
from memci.messages import Message, ToolCallPart
from memci.server import KeyStore, ServerConfig, create_app
from memci.store import SQLiteStore
from memci.store.sqlite._driver import connect
from memci.summarize import (
    SUMMARIZE_TEXT,
    ExtractiveSummarizer,
    Job,
    JobCounts,
    JobQueue,
    LLMSummarizer,
    PageSummary,
    RunReport,
    SummaryJobs,
    job_counts,
    page_key,
    register_summary_handlers,
    run_worker,
)
from tests.fakellm import FakeLLM

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store(db_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(db_path)
    yield s
    s.close()


@pytest.fixture
def queue(store: SQLiteStore) -> Iterator[JobQueue]:
    q = JobQueue(store, backoff=0.0, lease_seconds=5.0, poll_interval=0.05)
    yield q
    q.stop()


def effects_table(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS effects (key TEXT NOT NULL, value TEXT)")


def record_effect(store: SQLiteStore, job: Job, result: Any) -> None:
    # Runs inside the store's atomic() block that marks the job done: this write joins it.
    with store.write() as db:
        db.execute("INSERT INTO effects (key, value) VALUES (?, ?)",
                   (job.key, json.dumps(result)))


def effect_counts(path: Path) -> dict[str, int]:
    with connect(path) as db:
        return dict(db.execute("SELECT key, COUNT(*) FROM effects GROUP BY key").fetchall())


# -- submitting and reading ------------------------------------------------------------------


def test_submit_is_idempotent(queue: JobQueue) -> None:
    first = queue.submit("echo", "k1", {"n": 1})
    again = queue.submit("echo", "k1", {"n": 2})
    assert again.id == first.id and again.payload == {"n": 1}
    assert first.state == "pending" and first.attempts == 0
    assert queue.stats()["total"] == 1


def test_result_is_read_once_done(queue: JobQueue) -> None:
    queue.register("double", lambda job: {"value": job.payload["n"] * 2})
    queue.submit("double", "d1", {"n": 21})
    assert queue.result("d1") is None and queue.result("missing") is None
    assert queue.run_pending() == 1
    assert queue.result("d1") == {"value": 42}
    assert queue.results(["d1", "missing"]) == {"d1": {"value": 42}}
    job = queue.get("d1")
    assert job is not None and job.state == "done" and job.attempts == 1
    assert job.lease_owner is None and job.last_error is None
    assert queue.run_pending() == 0  # done jobs never run again


def test_jobs_survive_reopening_the_store(db_path: Path) -> None:
    with JobQueue(SQLiteStore(db_path)) as q:
        q.submit("later", "x", {"a": [1, "二"]})
        q.store.close()
    store = SQLiteStore(db_path)
    q = JobQueue(store)
    q.register("later", lambda job: list(job.payload["a"]))
    assert q.run_pending() == 1 and q.result("x") == [1, "二"]
    assert store.schema_version("jobs") == 1
    store.close()


def test_bad_submissions_are_refused(queue: JobQueue) -> None:
    with pytest.raises(InvalidInputError):
        queue.submit("", "k")
    with pytest.raises(InvalidInputError):
        queue.submit("kind", "")
    with pytest.raises(InvalidInputError, match="JSON"):
        queue.submit("kind", "k", {"x": object()})
    with pytest.raises(ConfigError):
        queue.submit("kind", "k", max_attempts=0)
    with pytest.raises(ConfigError):
        queue.start_workers(1)  # no handler registered
    assert queue.stats()["total"] == 0


# -- failures and retries --------------------------------------------------------------------


def test_retries_then_failed_with_the_error_recorded(queue: JobQueue) -> None:
    calls: list[int] = []

    def broken(job: Job) -> None:
        calls.append(job.attempts)
        raise RuntimeError(f"endpoint down (attempt {job.attempts})")

    queue.register("broken", broken)
    queue.submit("broken", "b1", max_attempts=3)
    queue.run_pending()
    job = queue.get("b1")
    assert job is not None and job.state == "failed" and job.attempts == 3
    assert job.last_error == "RuntimeError: endpoint down (attempt 3)"
    assert calls == [1, 2, 3] and queue.result("b1") is None
    stats = queue.stats()
    assert (stats["failed"], stats["retried"], stats["with_errors"]) == (1, 2, 1)
    assert stats["by_kind"]["broken"]["failed"] == 1
    assert queue.retry_failed() == 1
    job = queue.get("b1")
    assert job is not None and job.state == "pending" and job.attempts == 0


def test_a_retry_waits_for_its_backoff(store: SQLiteStore) -> None:
    q = JobQueue(store, backoff=30.0)
    outcomes = iter([RuntimeError("flaky"), None])

    def flaky(job: Job) -> str:
        error = next(outcomes)
        if error:
            raise error
        return "ok"

    q.register("flaky", flaky)
    q.submit("flaky", "f1")
    assert q.run_pending() == 1
    job = q.get("f1")
    assert job is not None and job.state == "pending" and job.last_error == "RuntimeError: flaky"
    assert job.run_after > time.time() + 10  # 30 s doubling, with jitter: at least 15 s
    assert q.run_pending() == 0
    with store.write() as db:
        db.execute("UPDATE memci_jobs SET run_after = 0 WHERE key = 'f1'")
    assert q.run_pending() == 1 and q.result("f1") == "ok"
    done = q.get("f1")
    assert done is not None and done.attempts == 2 and done.last_error == "RuntimeError: flaky"


def test_a_callers_mistake_fails_at_once(queue: JobQueue) -> None:
    def picky(job: Job) -> None:
        raise InvalidInputError("payload has no 'text'")

    queue.register("picky", picky)
    queue.submit("picky", "p1", max_attempts=5)
    queue.run_pending()
    job = queue.get("p1")
    assert job is not None and job.state == "failed" and job.attempts == 1


def test_a_result_that_is_not_json_is_a_failure(queue: JobQueue) -> None:
    queue.register("odd", lambda job: {1, 2})
    queue.submit("odd", "o1", max_attempts=1)
    queue.run_pending()
    job = queue.get("o1")
    assert job is not None and job.state == "failed" and "TypeError" in (job.last_error or "")


# -- effects: one transaction with "done" ----------------------------------------------------


def test_effect_commits_with_done_or_not_at_all(queue: JobQueue, db_path: Path) -> None:
    with queue.store.write() as db:
        effects_table(db)
    fail_first = iter([True, False])

    def effect(store: SQLiteStore, job: Job, result: Any) -> None:
        record_effect(store, job, result)
        if next(fail_first):
            raise RuntimeError("disk full halfway")

    queue.register("eff", lambda job: "value", effect=effect)
    queue.submit("eff", "e1")
    queue.run_pending()
    assert effect_counts(db_path) == {"e1": 1}  # the failed attempt left nothing behind
    job = queue.get("e1")
    assert job is not None and job.state == "done" and job.attempts == 2


def test_a_worker_that_lost_its_lease_commits_nothing(queue: JobQueue, db_path: Path) -> None:
    with queue.store.write() as db:
        effects_table(db)

    def slow(job: Job) -> str:
        # While this worker computes, its lease expires and another worker takes the job.
        with connect(db_path) as other:
            other.execute("UPDATE memci_jobs SET lease_owner = 'host:999:other'"
                          " WHERE id = ?", (job.id,))
        return "late"

    queue.register("slow", slow, effect=record_effect)
    queue.submit("slow", "s1")
    queue.run_pending()
    job = queue.get("s1")
    assert job is not None and job.state == "running" and job.lease_owner == "host:999:other"
    assert effect_counts(db_path) == {} and queue.result("s1") is None


# -- leases ----------------------------------------------------------------------------------


def abandon(store: SQLiteStore, key: str, *, attempts: int) -> None:
    """Leave the job as a worker that died mid-run leaves it: running, lease in the past."""
    with store.write() as db:
        db.execute(
            "UPDATE memci_jobs SET state = 'running', attempts = ?, lease_owner = ?,"
            " lease_expires = ? WHERE key = ?",
            (attempts, "deadhost:4242:gone:w0", time.time() - 1, key),
        )


def test_an_expired_lease_runs_the_job_again(queue: JobQueue, store: SQLiteStore) -> None:
    queue.register("work", lambda job: "finished")
    queue.submit("work", "w1", max_attempts=3)
    abandon(store, "w1", attempts=1)
    assert queue.run_pending() == 1
    job = queue.get("w1")
    assert job is not None and job.state == "done" and job.attempts == 2
    assert queue.result("w1") == "finished"


def test_a_live_lease_is_left_alone(queue: JobQueue, store: SQLiteStore) -> None:
    queue.register("work", lambda job: "finished")
    queue.submit("work", "w1")
    abandon(store, "w1", attempts=1)
    with store.write() as db:
        db.execute("UPDATE memci_jobs SET lease_expires = ? WHERE key = 'w1'",
                   (time.time() + 60,))
    assert queue.run_pending() == 0


def test_expired_on_its_last_attempt_fails(queue: JobQueue, store: SQLiteStore) -> None:
    queue.register("work", lambda job: "finished")
    queue.submit("work", "w1", max_attempts=2)
    abandon(store, "w1", attempts=2)
    assert queue.run_pending() == 0
    job = queue.get("w1")
    assert job is not None and job.state == "failed"
    assert "lease expired" in (job.last_error or "") and "deadhost" in (job.last_error or "")


def test_leases_are_renewed_while_a_handler_runs(store: SQLiteStore) -> None:
    q = JobQueue(store, lease_seconds=0.3)
    seen: list[float] = []

    def long_job(job: Job) -> str:
        for _ in range(6):
            time.sleep(0.1)
            now = q.get(job.key)
            assert now is not None and now.lease_expires is not None
            seen.append(now.lease_expires)
        return "ok"

    q.register("long", long_job)
    q.submit("long", "l1")
    assert q.run_pending() == 1 and q.result("l1") == "ok"
    assert seen[-1] > seen[0]  # renewed while running, so nobody else took it
    job = q.get("l1")
    assert job is not None and job.attempts == 1


# -- worker threads --------------------------------------------------------------------------


def test_worker_threads_process_a_batch(queue: JobQueue, db_path: Path) -> None:
    with queue.store.write() as db:
        effects_table(db)
    threads: set[str] = set()

    def handler(job: Job) -> int:
        threads.add(threading.current_thread().name)
        time.sleep(0.01)
        return int(job.payload["n"]) ** 2

    queue.register("square", handler, effect=record_effect)
    for n in range(60):
        queue.submit("square", f"sq{n}", {"n": n})
    queue.start_workers(4)
    assert queue.wait_idle(timeout=30)
    assert queue.stop()
    assert effect_counts(db_path) == {f"sq{n}": 1 for n in range(60)}
    assert queue.results([f"sq{n}" for n in range(60)]) == {f"sq{n}": n * n for n in range(60)}
    assert len(threads) > 1 and queue.stats()["done"] == 60


def test_workers_wake_for_new_work_and_stop(queue: JobQueue) -> None:
    queue.register("echo", lambda job: job.key)
    queue.start_workers(2)
    with pytest.raises(ConfigError):
        queue.start_workers(1)
    time.sleep(0.1)
    queue.submit("echo", "late")
    assert queue.wait_idle(timeout=60) and queue.result("late") == "late"
    assert queue.stop() and not queue.running


# -- summaries as jobs -----------------------------------------------------------------------

PAGE = [
    Message.user("Why does migration 0007_invoice_total fail on staging?"),
    Message.assistant("Let me run it.", ToolCallPart("c1", "bash", '{"command": "migrate"}')),
    Message.tool("c1", "<returncode>1</returncode><output>KeyError: 'total_cents'</output>"),
]


def test_build_gets_the_stand_in_until_the_model_summary_is_done(
    queue: JobQueue, db_path: Path
) -> None:
    with FakeLLM() as fake, OpenAIChatClient("m", base_url=fake.base_url) as client:
        fake.reply("Title: Migration 0007 fails\n1. Asks why 0007 fails\n2. Runs migrate\n"
                   "3. KeyError total_cents")
        register_summary_handlers(queue, LLMSummarizer(client, strict=True))
        jobs = SummaryJobs(queue)
        key = jobs.submit_page(PAGE, session="s1")
        assert jobs.submit_page(PAGE, session="s1") == key == page_key(PAGE, session="s1")
        before = jobs.page(PAGE, session="s1")
        assert before.source == "extractive"
        assert before == PageSummary(ExtractiveSummarizer().page_title(PAGE),
                                     tuple(ExtractiveSummarizer().summarize_page(PAGE)),
                                     "extractive")
        queue.start_workers(1)
        assert queue.wait_idle(timeout=60)
        after = jobs.page(PAGE, session="s1")
        assert after == PageSummary("Migration 0007 fails", (
            "Asks why 0007 fails", "Runs migrate", "KeyError total_cents"), "llm")
        assert jobs.pages([PAGE, PAGE[:1]], session="s1")[0] == after
        assert fake.count == 1


def test_a_failing_model_fails_the_job_and_the_stand_in_stays(queue: JobQueue) -> None:
    with FakeLLM() as fake, OpenAIChatClient("m", base_url=fake.base_url,
                                             max_retries=0) as client:
        fake.server_error(500, times=10)
        register_summary_handlers(queue, LLMSummarizer(client, strict=True))
        jobs = SummaryJobs(queue, max_attempts=2)
        key = jobs.submit_page(PAGE)
        queue.run_pending()
        job = queue.get(key)
        assert job is not None and job.state == "failed" and "500" in (job.last_error or "")
        assert jobs.page(PAGE).source == "extractive"


def test_summary_handlers_without_a_model(queue: JobQueue) -> None:
    register_summary_handlers(queue, ExtractiveSummarizer())
    queue.submit(SUMMARIZE_TEXT, "t1", {"texts": ["One fact: port 8080.", "Two."],
                                        "max_tokens": 50})
    queue.submit(SUMMARIZE_TEXT, "t2", {"texts": "not a list", "max_tokens": 5})
    queue.run_pending()
    assert queue.result("t1") == {"text": "One fact: port 8080.\nTwo.", "source": "extractive"}
    bad = queue.get("t2")
    assert bad is not None and bad.state == "failed" and bad.attempts == 1


def test_run_worker_once_with_default_handlers(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("MEMCI_LLM_PROVIDER", "MEMCI_LLM_BASE_URL", "MEMCI_LLM_API_KEY",
                 "MEMCI_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    store = SQLiteStore(db_path)
    queue = JobQueue(store)
    key = SummaryJobs(queue).submit_page(PAGE)
    report = run_worker(db_path, once=True)
    assert (report.ran, report.succeeded, report.failed) == (1, 1, 0)
    stored = PageSummary.from_json(queue.result(key), len(PAGE))
    extractive = ExtractiveSummarizer()
    assert stored == PageSummary(extractive.page_title(PAGE),
                                 tuple(extractive.summarize_page(PAGE)), "extractive")
    store.close()


def test_run_worker_until_stopped(db_path: Path) -> None:
    stop = threading.Event()

    def setup(q: JobQueue) -> None:
        q.register("echo", lambda job: job.payload["v"])

    store = SQLiteStore(db_path)
    q = JobQueue(store)
    for i in range(5):
        q.submit("echo", f"e{i}", {"v": i})
    runner = threading.Thread(target=lambda: ran.append(
        run_worker(db_path, poll_interval=0.05, workers=2, setup=setup, stop=stop).ran))
    ran: list[int] = []
    runner.start()
    deadline = time.monotonic() + 60
    while q.stats()["done"] < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    runner.join(60)
    assert ran == [5] and q.results([f"e{i}" for i in range(5)]) == {f"e{i}": i for i in range(5)}
    store.close()


# -- a real crash ----------------------------------------------------------------------------

WORKER = textwrap.dedent("""
    import json, sys, time
    from memci.summarize import JobQueue, run_worker

    def setup(queue: JobQueue) -> None:
        def handler(job):
            time.sleep(float(job.payload["sleep"]))
            return {"n": job.payload["n"], "square": job.payload["n"] ** 2}

        def effect(store, job, result):
            with store.write() as db:
                db.execute("INSERT INTO effects (key, value) VALUES (?, ?)",
                           (job.key, json.dumps(result)))

        queue.register("square", handler, effect=effect)

    run_worker(sys.argv[1], workers=int(sys.argv[2]), lease_seconds=float(sys.argv[3]),
               poll_interval=0.05, setup=setup)
""")


def spawn_worker(script: Path, db: Path, workers: int, lease: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    return subprocess.Popen([sys.executable, str(script), str(db), str(workers), str(lease)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def states(db: Path) -> dict[str, int]:
    with connect(db) as conn:
        return dict(conn.execute("SELECT state, COUNT(*) FROM memci_jobs GROUP BY state"))


@pytest.mark.slow
def test_sigkill_of_a_worker_process_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    store = SQLiteStore(db)
    queue = JobQueue(store)
    with store.write() as conn:
        effects_table(conn)
    total = 40
    for n in range(total):
        queue.submit("square", f"j{n}", {"n": n, "sleep": 0.15})

    first = spawn_worker(script, db, workers=3, lease=1.0)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = states(db)
            if now.get("done", 0) >= 6 and now.get("running", 0) >= 2:
                break
            time.sleep(0.01)
        else:
            pytest.fail(f"the worker made no progress: {states(db)}")
        first.send_signal(signal.SIGKILL)
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate(timeout=10)  # reap it and close its pipe
    at_kill = states(db)
    assert at_kill.get("running", 0) >= 1  # jobs were in flight when it died
    killed_owner = {j.lease_owner for j in queue.jobs(state="running")}
    assert all(owner and f":{first.pid}:" in owner for owner in killed_owner)

    second = spawn_worker(script, db, workers=3, lease=1.0)
    try:
        deadline = time.monotonic() + 60
        while states(db).get("done", 0) < total and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=30)
    assert second.returncode == 0, err.decode()
    assert states(db) == {"done": total}
    counts = effect_counts(db)
    assert counts == {f"j{n}": 1 for n in range(total)}  # every effect exactly once
    rerun = [j for j in queue.jobs(limit=total) if j.attempts > 1]
    assert len(rerun) == at_kill["running"]  # exactly the ones the dead worker held
    assert all(queue.result(f"j{n}") == {"n": n, "square": n * n} for n in range(total))
    store.close()


def test_submit_many_is_one_transaction(queue: JobQueue) -> None:
    queue.submit("echo", "a")
    made = queue.submit_many([("echo", "a", {"x": 1}), ("echo", "b", {"x": 2})])
    assert [j.key for j in made] == ["a", "b"] and made[0].payload == {}
    with pytest.raises(InvalidInputError):
        queue.submit_many([("echo", "c", None), ("echo", "", None)])
    assert queue.get("c") is None and queue.stats()["total"] == 2
    keys = SummaryJobs(queue).submit_pages([PAGE, PAGE[:1]], session="s")
    assert keys == [page_key(PAGE, session="s"), page_key(PAGE[:1], session="s")]
    assert queue.stats()["by_kind"]["summarize_page"]["pending"] == 2


# -- failures are visible ----------------------------------------------------------------------

LLM_ENV = ("MEMCI_LLM_PROVIDER", "MEMCI_LLM_BASE_URL", "MEMCI_LLM_API_KEY", "MEMCI_LLM_MODEL")


def test_a_queue_reports_what_ran_and_how_it_ended(queue: JobQueue) -> None:
    outcomes = {"ok": lambda job: 1, "flaky": lambda job: 1 / 0,
                "bad": lambda job: (_ for _ in ()).throw(InvalidInputError("bad payload"))}
    for kind, handler in outcomes.items():
        queue.register(kind, handler)
    queue.submit("ok", "k1")
    queue.submit("flaky", "k2", max_attempts=2)
    queue.submit("bad", "k3")
    assert queue.run_pending() == 4  # the flaky one twice (no backoff here)
    report = queue.report
    assert report == RunReport(ran=4, succeeded=1, failed=3, retrying=1, gave_up=2,
                               last_error="ZeroDivisionError: division by zero")
    assert report.describe() == "ran 4 jobs: 1 succeeded, 3 failed (1 will be retried, 2 gave up)"
    assert job_counts(queue.store) == JobCounts(pending=0, failed=2, gave_up=2,
                                                last_error=report.last_error)
    stats = queue.stats()
    assert stats["failing"] == 2 and stats["last_error"] == report.last_error


def test_job_counts_of_a_store_without_jobs(store: SQLiteStore) -> None:
    assert job_counts(store) == JobCounts()


def test_job_counts_never_wait_on_a_writer(queue: JobQueue, db_path: Path) -> None:
    queue.submit("work", "session:1:a")
    reader = SQLiteStore(db_path)  # another process's store: its job part is made on reading
    counted: list[JobCounts] = []
    with connect(db_path, isolation_level=None) as writer:
        writer.execute("BEGIN IMMEDIATE")  # a worker's write transaction, held
        thread = threading.Thread(target=lambda: counted.append(
            job_counts(reader, key_prefix="session:1:")))
        thread.start()
        thread.join(20)  # a reader that waited on the writer would wait its 60 s
        answered_while_held = not thread.is_alive()
        writer.execute("ROLLBACK")
    thread.join()
    reader.close()
    assert answered_while_held and counted == [JobCounts(pending=1)]


def _chat(session: memci.Session, turns: int) -> None:
    for t in range(turns):
        session.add({"role": "user", "content": f"Question {t} about the harbour museum. " * 6})
        session.add({"role": "assistant", "content": f"Answer {t}: it opens at nine. " * 6})


def _memci(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memci.cli", *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=ROOT)


def test_failed_jobs_are_visible_everywhere(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's case: `memci worker --once` said "ran 33 jobs", stats said jobs_failed: 0."""
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    db = tmp_path / "m.db"
    env = {k: v for k, v in os.environ.items() if k not in LLM_ENV}
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    with FakeLLM() as fake:
        fake.status(500, retry_after=0, times=100_000)  # every attempt of every job
        # The agent's process submits page summaries; `memci worker` runs them.
        client = OpenAIChatClient("fake-model", api_key="k", base_url=fake.openai_base_url)
        with client, memci.Engine.open(db, llm=client, workers=0) as eng:
            s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False)
            _chat(s, 30)
            s.build(budget=3000)
            assert eng.jobs is not None
            submitted = eng.jobs.stats()["pending"]
        assert submitted >= 3
        worker = _memci("worker", "--once", "--db", str(db), env={
            **env, "MEMCI_LLM_PROVIDER": "openai", "MEMCI_LLM_BASE_URL": fake.openai_base_url,
            "MEMCI_LLM_API_KEY": "k", "MEMCI_LLM_MODEL": "fake-model"})
    assert worker.returncode == 1, worker.stderr
    n = submitted
    assert (f"ran {n} jobs: 0 succeeded, {n} failed ({n} will be retried, 0 gave up)"
            in worker.stderr)
    assert "last error: LLMHTTPError:" in worker.stderr and "HTTP 500" in worker.stderr

    # memci stats and memci inspect (no model configured in their environment)
    stats = json.loads(_memci("stats", "s", "--db", str(db), "--json", env=env).stdout)
    assert stats["stats"]["jobs_failed"] == n and stats["stats"]["jobs_pending"] == n
    assert "HTTP 500" in stats["stats"]["jobs_last_error"]
    shown = _memci("stats", "s", "--db", str(db), env=env).stdout
    assert re.search(rf"jobs failed\s.*\b{n}\b", shown) and "HTTP 500" in shown
    inspected = json.loads(_memci("inspect", "s", "--db", str(db), "--json", env=env).stdout)
    assert inspected["jobs"]["jobs_failed"] == n
    assert "HTTP 500" in inspected["jobs"]["jobs_last_error"]

    # the Python API and REST stats, from an engine with no model either
    with memci.Engine.open(db, workers=0) as eng:
        session = eng.session("s")
        assert session.stats().jobs_failed == n and session.stats().jobs_gave_up == 0
        key = KeyStore(eng.store).create("default")[1]
        with TestClient(create_app(eng, ServerConfig())) as http:
            http.headers["Authorization"] = f"Bearer {key}"
            body = http.get("/v1/sessions/s/stats").json()
        assert body["jobs_failed"] == n and "HTTP 500" in body["jobs_last_error"]
        # given up for good: counted apart, still failed
        with eng.store.write() as conn:
            conn.execute("UPDATE memci_jobs SET state = 'failed'")
        assert (session.stats().jobs_failed, session.stats().jobs_gave_up) == (n, n)
        assert session.stats().jobs_pending == 0


def test_run_pending_as_of_a_time_runs_each_ready_job_once(queue: JobQueue) -> None:
    """`memci worker --once`: a job that fails and is due again at once (no backoff, a slow
    machine) waits for the next call: one call runs the jobs ready when it began, once."""
    tried: list[str] = []

    def failing(job: Job) -> Any:
        tried.append(job.key)
        raise RuntimeError("the model answered 500")

    queue.register("flaky", failing)
    for key in ("a", "b", "c"):
        queue.submit("flaky", key, max_attempts=5)
    assert queue.run_pending(ready_at=time.time()) == 3
    assert sorted(tried) == ["a", "b", "c"]
    assert queue.run_pending(ready_at=time.time()) == 3  # the next call: second attempts
    assert len(tried) == 6
