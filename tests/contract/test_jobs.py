"""Contract: jobs, claims under a lease, and outcomes fenced by it (JobStore)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from memci.store import Job, JobCounts, JobStore, NewJob
from tests.contract.conftest import Store

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW = 1_000_000.0


def new(key: str, *, kind: str = "work", run_after: float = NOW - 10, attempts: int = 3,
        payload: str = "{}") -> NewJob:
    return NewJob(kind=kind, key=key, payload=payload, max_attempts=attempts,
                  run_after=run_after)


def claim(jobs: JobStore, owner: str = "w1", *, now: float = NOW,
          kinds: tuple[str, ...] = ("work",)) -> Job | None:
    return jobs.claim(kinds, owner, now=now, lease_seconds=30.0, at=AT)


def test_newest_first_claims_take_the_ready_job_submitted_last(jobs: JobStore) -> None:
    jobs.submit([new("old", run_after=NOW - 5), new("new", run_after=NOW - 1),
                 new("future", run_after=NOW + 60)], at=AT)
    first = jobs.claim(("work",), "w1", now=NOW, lease_seconds=30.0, at=AT, newest_first=True)
    assert first is not None and first.key == "new"
    second = jobs.claim(("work",), "w2", now=NOW, lease_seconds=30.0, at=AT,
                        newest_first=True)
    assert second is not None and second.key == "old"
    assert jobs.claim(("work",), "w3", now=NOW, lease_seconds=30.0, at=AT,
                      newest_first=True) is None  # "future" is not ready


def test_submitting_a_key_again_keeps_its_job(jobs: JobStore) -> None:
    (made,) = jobs.submit([new("a", payload='{"n": 1, "text": "摘要"}')], at=AT)
    assert (made.kind, made.key, made.state, made.attempts) == ("work", "a", "pending", 0)
    assert dict(made.payload) == {"n": 1, "text": "摘要"} and made.created_at == AT
    again = jobs.submit([new("a", kind="other", payload='{"n": 2}'), new("b")], at=AT)
    assert again[0] == made and again[1].key == "b" and again[1].id != made.id
    assert jobs.get("a") == made and jobs.get("zzz") is None


def test_claims_take_the_readiest_job_of_their_kinds(jobs: JobStore) -> None:
    jobs.submit([new("late", run_after=NOW - 1), new("early", run_after=NOW - 5),
                 new("future", run_after=NOW + 60), new("elsewhere", kind="other")], at=AT)
    first = claim(jobs)
    assert first is not None and first.key == "early"
    assert first.state == "running" and first.attempts == 1 and first.lease_owner == "w1"
    assert first.lease_expires == pytest.approx(NOW + 30.0)
    second = claim(jobs, "w2")
    assert second is not None and second.key == "late"
    assert claim(jobs, "w3") is None  # "future" is not ready, "elsewhere" not this kind
    assert jobs.busy(["work"]) == 3 and jobs.busy(["other"]) == 1 and jobs.busy([]) == 0
    assert claim(jobs, kinds=()) is None


def test_an_expired_lease_is_taken_over_first(jobs: JobStore) -> None:
    jobs.submit([new("held"), new("waiting", run_after=NOW - 1)], at=AT)
    held = claim(jobs, "dead-worker")  # its lease ends at NOW + 30
    assert held is not None and held.key == "held"
    again = claim(jobs, "w2", now=NOW + 100)
    assert again is not None and again.key == "held" and again.attempts == 2
    assert not jobs.complete(held.id, "dead-worker", '"late"', at=AT)  # fenced
    assert jobs.complete(again.id, "w2", '"on time"', at=AT)
    assert jobs.results(["held", "waiting"]) == {"held": "on time"}


def test_a_lease_expired_on_its_last_attempt_fails_the_job(jobs: JobStore) -> None:
    jobs.submit([new("once", attempts=1), new("next", run_after=NOW - 1)], at=AT)
    gone = claim(jobs, "dead-worker")
    assert gone is not None and gone.key == "once"
    taken = claim(jobs, "w2", now=NOW + 100)
    assert taken is not None and taken.key == "next"
    failed = jobs.get("once")
    assert failed is not None and failed.state == "failed"
    assert failed.last_error is not None and "dead-worker" in failed.last_error


def test_outcomes_are_fenced_by_the_lease(jobs: JobStore) -> None:
    jobs.submit([new("a"), new("b", run_after=NOW - 1)], at=AT)
    a, b = claim(jobs, "w1"), claim(jobs, "w2")
    assert a is not None and b is not None
    assert not jobs.complete(a.id, "w2", "1", at=AT)
    assert not jobs.fail(a.id, "w2", error="x", final=True, run_after=NOW, at=AT)
    jobs.renew({a.id: "w1", b.id: "not-w2"}, expires=NOW + 500)
    after = jobs.get("a"), jobs.get("b")
    assert after[0] is not None and after[0].lease_expires == pytest.approx(NOW + 500)
    assert after[1] is not None and after[1].lease_expires == pytest.approx(NOW + 30)
    assert jobs.complete(a.id, "w1", '{"ok": true}', at=AT)
    done = jobs.get("a")
    assert done is not None and done.state == "done" and done.result == {"ok": True}
    assert done.lease_owner is None and not jobs.complete(a.id, "w1", "2", at=AT)


def test_failures_are_retried_then_given_up_and_counted(jobs: JobStore) -> None:
    jobs.submit([new("session:1:a", attempts=2), new("session:2:b", run_after=NOW + 60)],
                at=AT)
    first = claim(jobs)
    assert first is not None and first.key == "session:1:a"
    assert jobs.fail(first.id, "w1", error="RuntimeError: boom", final=False,
                     run_after=NOW + 5, at=AT)
    waiting = jobs.get("session:1:a")
    assert waiting is not None and waiting.state == "pending"
    assert waiting.run_after == pytest.approx(NOW + 5) and waiting.lease_owner is None
    assert jobs.counts("session:1:") == JobCounts(1, 1, 0, "RuntimeError: boom")
    again = claim(jobs, now=NOW + 6)
    assert again is not None and again.key == "session:1:a" and again.attempts == 2
    jobs.fail(again.id, "w1", error="RuntimeError: boom again", final=True, run_after=NOW,
              at=datetime(2026, 3, 1, 13, 0, tzinfo=UTC))
    assert jobs.counts("session:1:") == JobCounts(0, 1, 1, "RuntimeError: boom again")
    assert jobs.counts() == JobCounts(1, 1, 1, "RuntimeError: boom again")
    assert jobs.counts("session:9:") == JobCounts()
    tally = {(t.kind, t.state): (t.count, t.retried, t.with_errors) for t in jobs.tally()}
    assert tally == {("work", "failed"): (1, 1, 1), ("work", "pending"): (1, 0, 0)}
    assert [j.key for j in jobs.jobs(state="failed")] == ["session:1:a"]
    assert [j.key for j in jobs.jobs()] == ["session:2:b", "session:1:a"]  # newest first
    assert jobs.jobs(kind="other") == [] and len(jobs.jobs(limit=1)) == 1
    assert jobs.retry_failed("other", run_after=NOW, at=AT) == 0
    assert jobs.retry_failed(None, run_after=NOW, at=AT) == 1
    back = jobs.get("session:1:a")
    assert back is not None and back.state == "pending" and back.attempts == 0


def test_done_commits_with_the_callers_transaction_or_not_at_all(
    store: Store, jobs: JobStore,
) -> None:
    jobs.submit([new("a")], at=AT)
    job = claim(jobs)
    assert job is not None
    with pytest.raises(RuntimeError), store.atomic():
        assert jobs.complete(job.id, "w1", '"value"', at=AT)
        raise RuntimeError("the effect failed")
    still = jobs.get("a")
    assert still is not None and still.state == "running" and jobs.results(["a"]) == {}


def test_two_claimers_never_get_the_same_job(
    store: Store, jobs: JobStore, reopen: Callable[[], Store],
) -> None:
    jobs.submit([new(f"j{i}") for i in range(60)], at=AT)
    handles: list[JobStore] = [jobs, reopen().jobs, reopen().jobs]
    taken: list[list[str]] = [[] for _ in range(6)]
    start = threading.Barrier(6)

    def worker(n: int) -> None:
        part = handles[n % len(handles)]
        start.wait(60)
        while (job := claim(part, f"w{n}")) is not None:
            taken[n].append(job.key)
            time.sleep(0.001)  # the job's work: the others claim meanwhile

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    every = [key for keys in taken for key in keys]
    assert sorted(every) == sorted(f"j{i}" for i in range(60))  # each once, none lost
    assert sum(1 for keys in taken if keys) > 1
