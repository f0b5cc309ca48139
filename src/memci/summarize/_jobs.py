"""Durable background jobs in the store: submitted once, run by workers, effective once.

A job is kept by the store's job part (``store.jobs``, a :class:`~memci.store.JobStore`):
a ``kind`` that names its handler, an idempotency ``key`` (unique: submitting a key again
is the same job), a JSON ``payload``, a ``state`` (pending → running → done | failed), its
attempts and limit, the last error, the JSON ``result``, and a lease (owner, expiry)
while a worker holds it.

Invariants:

- **each job takes effect once**: the worker writes the result, runs the handler's
  ``effect`` (if any) and marks the job done in ONE transaction (``store.atomic()``),
  fenced by its lease (the update matches only while this worker still owns the job).
  A crash before that commit leaves the job running with a lease that expires, so it
  runs again; a crash after it never re-runs it. Consumers read results, never a
  handler's side effects;
- a job whose worker vanished (killed, machine lost) is picked up again once its lease
  expires; live workers renew their leases while a handler runs;
- a failed attempt is recorded (``last_error``) and retried after an exponential backoff
  until ``max_attempts``, then the job is ``failed``; an
  :class:`~memci.errors.InvalidInputError` from a handler fails it at once (retrying a
  caller's mistake cannot help);
- reading a result is one indexed SELECT and never waits on a worker;
- failures are visible: a queue counts what its workers ran and how each attempt ended
  (:attr:`JobQueue.report`, what ``memci worker`` prints), and :func:`job_counts` counts
  the jobs whose latest attempt failed (retrying or given up) with the newest error —
  what stats, ``memci inspect`` and REST stats show.

Workers run as threads in this process (:meth:`JobQueue.start_workers`) or in another
process (:func:`run_worker`, behind ``memci worker``). Leases use wall-clock time, so
every process sharing a store must have a sane clock.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Self

from memci import _trace
from memci._dataclasses import dataclass
from memci.errors import ConfigError, InvalidInputError, StoreError
from memci.store import JOB_STATES, Job, JobCounts, JobState, NewJob, Store

__all__ = [
    "JOB_STATES",
    "Effect",
    "Handler",
    "Job",
    "JobCounts",
    "JobQueue",
    "JobState",
    "RunReport",
    "job_counts",
]

logger = logging.getLogger("memci.jobs")

_MAX_ERROR = 4000
# Seconds a listener waits for a notification before it looks at ``stop`` again.
_LISTEN_WAIT = 1.0
# Seconds between an idle worker's polls while it is told of new jobs (PostgreSQL).
_LISTENING_POLL = 5.0


@dataclass(frozen=True, slots=True)
class RunReport:
    """What a queue's workers ran, and how each attempt ended.

    ``failed`` counts failed attempts: ``retrying`` of them will be tried again,
    ``gave_up`` were the jobs' last (or a caller's mistake). ``lost`` counts results
    dropped because another worker had taken the job. ``last_error`` is the newest
    failure, as ``"ExceptionType: message"``.
    """

    ran: int = 0
    succeeded: int = 0
    failed: int = 0
    retrying: int = 0
    gave_up: int = 0
    lost: int = 0
    last_error: str | None = None

    def describe(self) -> str:
        """One line: ``ran 3 jobs: 1 succeeded, 2 failed (2 will be retried, 0 gave up)``."""
        text = f"ran {self.ran} job{'s' if self.ran != 1 else ''}: {self.succeeded} succeeded"
        text += f", {self.failed} failed"
        if self.failed:
            text += f" ({self.retrying} will be retried, {self.gave_up} gave up)"
        if self.lost:
            text += f", {self.lost} taken over by another worker"
        return text


def job_counts(store: Store, *, key_prefix: str = "") -> JobCounts:
    """Count the jobs whose key starts with ``key_prefix`` (all: ``""``); never waits.

    Reads the job table whether or not this process runs a queue (zero counts when no
    job was ever submitted to the store).
    """
    if store.schema_version("jobs") == 0:
        return JobCounts()  # and no job table is made by asking
    return store.jobs.counts(key_prefix)


#: Computes a job's result (JSON-ready) from the job; runs outside any transaction.
Handler = Callable[[Job], Any]
#: Applies a result: ``effect(store, job, result)`` runs inside ``store.atomic()``, the
#: transaction that marks the job done; it writes through ``store`` (the store the worker
#: runs on), so its writes commit with "done" or not at all.
Effect = Callable[[Store, Job, Any], None]


class _LeaseLost(Exception):
    """The job is no longer this worker's: another worker took it after the lease expired."""


class JobQueue:
    """The job table of one store, its handlers, and optional worker threads.

    ``lease_seconds`` is how long a claimed job stays a worker's without renewal (workers
    renew every third of it); ``backoff`` and ``max_backoff`` bound the wait before a
    retry (doubling per attempt, with jitter); ``poll_interval`` is how often idle workers
    look for work submitted by other processes (work submitted here wakes them at once;
    on PostgreSQL so does work submitted anywhere, ``NOTIFY``, and they poll every 5 s at
    most often, for retries whose wait ended).
    ``newest_first``: workers take the ready job submitted last (summaries: the page just
    archived is the one on the contents page), else the one ready longest.
    """

    def __init__(
        self,
        store: Store,
        *,
        lease_seconds: float = 60.0,
        backoff: float = 2.0,
        max_backoff: float = 300.0,
        max_attempts: int = 5,
        poll_interval: float = 0.5,
        newest_first: bool = False,
    ) -> None:
        for name, value in (("lease_seconds", lease_seconds), ("poll_interval", poll_interval)):
            if not value > 0:
                raise ConfigError(f"{name} must be > 0 seconds, got {value!r}")
        if backoff < 0 or max_backoff < 0:
            raise ConfigError("backoff and max_backoff must be >= 0 seconds")
        _check_attempts(max_attempts)
        store.jobs  # noqa: B018  (made now: the job table exists once a queue does)
        self.store = store
        self.lease_seconds = float(lease_seconds)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_attempts = max_attempts
        self.poll_interval = float(poll_interval)
        self.newest_first = newest_first
        self._handlers: dict[str, tuple[Handler, Effect | None]] = {}
        self._wake = threading.Condition()
        self._stop = threading.Event()
        #: Set while this queue is told of every process's new jobs (see _listen).
        self._listening = threading.Event()
        self._threads: list[threading.Thread] = []
        self._worker_store: Store | None = None
        self._in_flight: dict[int, str] = {}
        self._in_flight_lock = threading.Lock()
        self._processed = 0
        self._report = RunReport()
        self._owner_prefix = _owner_prefix()

    # -- registering and submitting ----------------------------------------------------------

    def register(self, kind: str, handler: Handler, *, effect: Effect | None = None) -> None:
        """Run ``handler`` for jobs of ``kind``; ``effect`` applies a result transactionally."""
        if not isinstance(kind, str) or not kind:
            raise InvalidInputError("a job kind must be a non-empty string")
        self._handlers[kind] = (handler, effect)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds this queue has handlers for (the only ones its workers claim)."""
        return tuple(self._handlers)

    def submit(
        self,
        kind: str,
        key: str,
        payload: Mapping[str, Any] | None = None,
        *,
        max_attempts: int | None = None,
        delay: float = 0.0,
    ) -> Job:
        """Add a job, or return the job already under ``key`` (whatever its state).

        ``payload`` must be JSON-ready; ``delay`` holds the job back that many seconds.
        """
        if not isinstance(kind, str) or not kind:
            raise InvalidInputError("a job kind must be a non-empty string")
        if not isinstance(key, str) or not key or len(key) > 1000:
            raise InvalidInputError("a job key must be a non-empty string (≤ 1000 chars)")
        attempts = self.max_attempts if max_attempts is None else max_attempts
        _check_attempts(attempts)
        try:
            text = json.dumps(dict(payload or {}), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"job payload must be a JSON object: {exc}") from exc
        new = NewJob(kind, key, text, attempts, time.time() + max(0.0, delay))
        (job,) = self.store.jobs.submit([new], at=_now())
        with self._wake:
            self._wake.notify_all()
        return job

    def submit_many(
        self,
        jobs: Iterable[tuple[str, str, Mapping[str, Any] | None]],
        *,
        max_attempts: int | None = None,
    ) -> list[Job]:
        """Submit ``(kind, key, payload)`` jobs in one transaction (all or none).

        Keys already submitted keep their job, as with :meth:`submit`.
        """
        attempts = self.max_attempts if max_attempts is None else max_attempts
        _check_attempts(attempts)
        rows = []
        for kind, key, payload in jobs:
            if not isinstance(kind, str) or not kind:
                raise InvalidInputError("a job kind must be a non-empty string")
            if not isinstance(key, str) or not key or len(key) > 1000:
                raise InvalidInputError("a job key must be a non-empty string (≤ 1000 chars)")
            try:
                text = json.dumps(dict(payload or {}), ensure_ascii=False, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"job payload must be a JSON object: {exc}") from exc
            rows.append((kind, key, text))
        now = time.time()
        out = self.store.jobs.submit(
            [NewJob(kind, key, text, attempts, now) for kind, key, text in rows], at=_now())
        with self._wake:
            self._wake.notify_all()
        return out

    # -- reading -------------------------------------------------------------------------

    def get(self, key: str) -> Job | None:
        """Return the job under ``key``, or None."""
        return self.store.jobs.get(key)

    def result(self, key: str) -> Any | None:
        """Return the result of the job under ``key`` once it is done, else None; never wait."""
        return self.store.jobs.results([key]).get(key)

    def results(self, keys: Iterable[str]) -> dict[str, Any]:
        """Results of the done jobs among ``keys`` (missing keys: not done yet)."""
        return self.store.jobs.results(keys)

    def jobs(
        self, *, state: JobState | None = None, kind: str | None = None, limit: int = 100
    ) -> list[Job]:
        """Jobs, newest first, optionally of one state and kind."""
        return self.store.jobs.jobs(state=state, kind=kind, limit=limit)

    def stats(self) -> dict[str, Any]:
        """Count jobs by state, retries, errors, failures and kind.

        Keys: ``total``, one per state, ``retried``, ``with_errors``, ``failing``,
        ``last_error``, ``by_kind``. ``retried`` sums attempts past the first;
        ``with_errors`` counts jobs that recorded an error (done after a retry, or
        failed); ``failing`` counts jobs not done whose
        latest attempt failed (waiting for a retry, or failed); ``last_error`` is the
        newest of their errors; ``by_kind`` maps kind → state → count.
        """
        counts = job_counts(self.store)
        out: dict[str, Any] = {"total": 0, **dict.fromkeys(JOB_STATES, 0), "retried": 0,
                               "with_errors": 0, "failing": counts.failed,
                               "last_error": counts.last_error, "by_kind": {}}
        for row in self.store.jobs.tally():
            out["total"] += row.count
            out[row.state] += row.count
            out["retried"] += row.retried
            out["with_errors"] += row.with_errors
            by_kind = out["by_kind"].setdefault(row.kind, dict.fromkeys(JOB_STATES, 0))
            by_kind[row.state] += row.count
        return out

    def retry_failed(self, kind: str | None = None) -> int:
        """Put failed jobs (of ``kind``) back to pending with fresh attempts; how many."""
        count = self.store.jobs.retry_failed(kind, run_after=time.time(), at=_now())
        with self._wake:
            self._wake.notify_all()
        return int(count)

    # -- running jobs --------------------------------------------------------------------

    def run_pending(self, *, max_jobs: int | None = None,
                    ready_at: float | None = None) -> int:
        """Run ready jobs in this thread until none is left (or ``max_jobs``); how many ran.

        ``ready_at`` (a time): only jobs ready then run, so a job that fails meanwhile
        and is due again (a short backoff, a slow machine) waits for the next call and
        each runs once at most (``memci worker --once``). Without it, retries due during
        the call run in it too.
        """
        owner = f"{self._owner_prefix}:sync"
        done = 0
        stop = threading.Event()
        renewer = threading.Thread(target=self._renew_leases, args=(self.store, stop),
                                   name="memci-job-leases-sync", daemon=True)
        renewer.start()
        try:
            while max_jobs is None or done < max_jobs:
                job = self._claim(self.store, owner, ready_at=ready_at)
                if job is None:
                    break
                done += 1
                try:
                    self._run_job(self.store, job, owner)
                except StoreError as exc:
                    self._count("retrying", f"{type(exc).__name__}: {exc}")
                    raise
        finally:
            stop.set()
            renewer.join()
        return done

    def start_workers(self, n: int = 1) -> None:
        """Start ``n`` worker threads (and one that renews their leases)."""
        if n < 1:
            raise ConfigError(f"the number of workers must be >= 1, got {n!r}")
        if self._threads:
            raise ConfigError("workers are already running; stop() them first")
        if not self._handlers:
            raise ConfigError("no handler is registered: register(kind, handler) first")
        self._stop.clear()
        # Workers write through their own connection, so a build reading results on the
        # main store never queues behind a worker's transaction in this process.
        self._worker_store = self.store.another()
        for i in range(n):
            thread = threading.Thread(
                target=self._work, args=(f"{self._owner_prefix}:w{i}",),
                name=f"memci-job-worker-{i}", daemon=True,
            )
            self._threads.append(thread)
        self._threads.append(threading.Thread(
            target=self._renew_leases, args=(self._worker_store, self._stop),
            name="memci-job-leases", daemon=True,
        ))
        self._threads.append(threading.Thread(
            target=self._listen, args=(self._worker_store,),
            name="memci-job-listener", daemon=True,
        ))
        for thread in self._threads:
            thread.start()

    def stop(self, *, timeout: float | None = 30.0) -> bool:
        """Stop the workers after their current job; True when every thread ended in time.

        A job still running when the timeout passes keeps its lease and is run again
        elsewhere once the lease expires.
        """
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        deadline = None if timeout is None else time.monotonic() + timeout
        ended = True
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            ended = ended and not thread.is_alive()
        self._threads = []
        if ended and self._worker_store is not None and self._worker_store is not self.store:
            self._worker_store.close()
        self._worker_store = None
        return ended

    @property
    def running(self) -> bool:
        """Whether worker threads are running."""
        return bool(self._threads)

    @property
    def processed(self) -> int:
        """Jobs this queue's workers have finished (done or failed attempts) so far."""
        return self._processed

    @property
    def report(self) -> RunReport:
        """What this queue's workers ran so far, and how each attempt ended."""
        with self._in_flight_lock:
            return self._report

    def _count(self, outcome: str, error: str | None = None) -> None:
        """Record one finished attempt: ``done``, ``retrying``, ``gave_up`` or ``lost``."""
        with self._in_flight_lock:
            r = self._report
            failed = outcome in ("retrying", "gave_up")
            self._report = RunReport(
                ran=r.ran + 1, succeeded=r.succeeded + (outcome == "done"),
                failed=r.failed + failed, retrying=r.retrying + (outcome == "retrying"),
                gave_up=r.gave_up + (outcome == "gave_up"), lost=r.lost + (outcome == "lost"),
                last_error=error if failed and error else r.last_error,
            )

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no job of this queue's kinds is pending or running; False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if self._busy() == 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(0.02, self.poll_interval))

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._threads:
            self.stop()

    # -- internals -------------------------------------------------------------------------

    def _busy(self) -> int:
        return self.store.jobs.busy(self.kinds)

    def _work(self, owner: str) -> None:
        store = self._worker_store or self.store
        while not self._stop.is_set():
            try:
                job = self._claim(store, owner)
            except StoreError as exc:
                logger.warning("job worker %s cannot claim: %s", owner, exc)
                job = None
            if job is None:
                # Told of new jobs (PostgreSQL), an idle worker polls only as a fallback:
                # for retries whose wait ended, and a notification a lost connection missed.
                idle = (max(self.poll_interval, _LISTENING_POLL) if self._listening.is_set()
                        else self.poll_interval)
                with self._wake:
                    if not self._stop.is_set():
                        self._wake.wait(idle)
                continue
            try:
                self._run_job(store, job, owner)
            except StoreError as exc:
                # The outcome could not be written: the lease will expire and the job
                # runs again, which is safe because only a committed result counts.
                self._count("retrying", f"{type(exc).__name__}: {exc}")
                logger.warning("job %s: cannot record the outcome: %s", job.key, exc)

    def _listen(self, store: Store) -> None:
        """Wake the idle workers whenever any process submits a job (where the store can tell).

        Ends at once on a store that cannot be told (SQLite), and when listening fails
        (the server is gone): the workers then poll every ``poll_interval``.
        """
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                heard = store.jobs.wait_for_new(_LISTEN_WAIT)
            except StoreError:
                heard = False
            if heard:
                self._listening.set()
                with self._wake:
                    self._wake.notify_all()
            elif time.monotonic() - started < _LISTEN_WAIT / 2:
                break
            else:
                self._listening.set()
        self._listening.clear()

    def _renew_leases(self, store: Store, stop: threading.Event) -> None:
        every = self.lease_seconds / 3
        while not stop.wait(every):
            with self._in_flight_lock:
                held = list(self._in_flight.items())
            if not held:
                continue
            try:
                store.jobs.renew(dict(held), expires=time.time() + self.lease_seconds)
            except StoreError as exc:
                logger.warning("cannot renew job leases: %s", exc)

    def _claim(self, store: Store, owner: str, *, ready_at: float | None = None) -> Job | None:
        return store.jobs.claim(self.kinds, owner, now=time.time(), ready_at=ready_at,
                                lease_seconds=self.lease_seconds, at=_now(),
                                newest_first=self.newest_first)

    def _run_job(self, store: Store, job: Job, owner: str) -> None:
        with _trace.span("memci.job", job.kind) as traced:
            outcome = self._attempt(store, job, owner)
            if traced is not None:
                _trace.describe_job(traced, job.kind, job.key, job.attempts, outcome)

    def _attempt(self, store: Store, job: Job, owner: str) -> str:
        """Run one attempt of ``job``; return how it ended (done, failed, lost)."""
        handler, effect = self._handlers[job.kind]
        with self._in_flight_lock:
            self._in_flight[job.id] = owner
        try:
            try:
                result = handler(job)
                text = json.dumps(result, ensure_ascii=False, allow_nan=False)
            except Exception as exc:  # a handler is user code: record whatever it raised
                self._fail(store, job, owner, exc)
                return "failed"
            try:
                with store.atomic():
                    if not store.jobs.complete(job.id, owner, text, at=_now()):
                        raise _LeaseLost
                    if effect is not None:
                        effect(store, job, result)
            except _LeaseLost:
                self._count("lost")
                logger.info("job %s: lease lost to another worker; result discarded", job.key)
                return "lost"
            except StoreError:
                raise
            except Exception as exc:  # the effect failed: nothing was committed
                self._fail(store, job, owner, exc)
                return "failed"
            else:
                self._count("done")
                return "done"
        finally:
            with self._in_flight_lock:
                self._in_flight.pop(job.id, None)
                self._processed += 1

    def _fail(self, store: Store, job: Job, owner: str, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"[:_MAX_ERROR]
        final = job.attempts >= job.max_attempts or isinstance(exc, InvalidInputError)
        delay = 0.0 if final else self._backoff(job.attempts)
        store.jobs.fail(job.id, owner, error=error, final=final,
                        run_after=time.time() + delay, at=_now())
        self._count("gave_up" if final else "retrying", error)
        logger.log(logging.WARNING if final else logging.INFO,
                   "job %s attempt %d of %d failed%s: %s", job.key, job.attempts,
                   job.max_attempts, "" if final else f"; retry in {delay:.1f}s", error)

    def _backoff(self, attempt: int) -> float:
        step = min(self.max_backoff, self.backoff * 2.0 ** max(0, attempt - 1))
        return step / 2 + random.uniform(0, step / 2)


def _check_attempts(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"max_attempts must be an integer >= 1, got {value!r}")


def _owner_prefix() -> str:
    """Who leases a job: host, process and a random tag (two queues of one process differ).

    socket and uuid are imported here: a queue is made per engine, not per import.
    """
    import socket
    import uuid

    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _now() -> datetime:
    return datetime.now(UTC)
