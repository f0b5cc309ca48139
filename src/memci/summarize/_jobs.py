"""Durable background jobs in the store: submitted once, run by workers, effective once.

A job is a row of ``memci_jobs`` (migration series ``jobs``): a ``kind`` that names its
handler, an idempotency ``key`` (UNIQUE: submitting a key again is the same job), a JSON
``payload``, a ``state`` (pending → running → done | failed), its attempts and limit, the
last error, the JSON ``result``, and a lease (owner, expiry) while a worker holds it.

Invariants:

- **each job takes effect once**: the worker writes the result, runs the handler's
  ``effect`` (if any) and marks the job done in ONE transaction, fenced by its lease (the
  update matches only while this worker still owns the job). A crash before that commit
  leaves the job running with a lease that expires, so it runs again; a crash after it
  never re-runs it. Consumers read results, never a handler's side effects;
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
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType, TracebackType
from typing import Any, Literal, Self

from memci.errors import ConfigError, InvalidInputError, StoreError
from memci.store import Migration, SQLiteStore

__all__ = [
    "JOBS_MIGRATIONS",
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

JobState = Literal["pending", "running", "done", "failed"]
JOB_STATES: tuple[JobState, ...] = ("pending", "running", "done", "failed")

JOBS_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "job table",
        """
        CREATE TABLE memci_jobs (
            id            INTEGER PRIMARY KEY,
            kind          TEXT NOT NULL,
            key           TEXT NOT NULL UNIQUE,
            payload       TEXT NOT NULL,
            state         TEXT NOT NULL DEFAULT 'pending'
                          CHECK (state IN ('pending', 'running', 'done', 'failed')),
            attempts      INTEGER NOT NULL DEFAULT 0,
            max_attempts  INTEGER NOT NULL,
            last_error    TEXT,
            result        TEXT,
            lease_owner   TEXT,
            lease_expires REAL,
            run_after     REAL NOT NULL,
            created_at    TEXT NOT NULL,
            updated_at    TEXT NOT NULL
        );
        -- Workers look for ready pending jobs and for running jobs whose lease expired.
        CREATE INDEX memci_jobs_ready ON memci_jobs (state, run_after);
        CREATE INDEX memci_jobs_lease ON memci_jobs (state, lease_expires);
        """,
    ),
)

_COLUMNS = ("id, kind, key, payload, state, attempts, max_attempts, last_error, result,"
            " lease_owner, lease_expires, run_after, created_at, updated_at")
_MAX_ERROR = 4000


@dataclass(frozen=True, slots=True)
class Job:
    """One job as stored. ``payload`` and ``result`` are decoded JSON."""

    id: int
    kind: str
    key: str
    payload: Mapping[str, Any]
    state: JobState
    attempts: int
    max_attempts: int
    last_error: str | None
    result: Any
    lease_owner: str | None
    lease_expires: float | None
    run_after: float
    created_at: datetime
    updated_at: datetime


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


@dataclass(frozen=True, slots=True)
class JobCounts:
    """Jobs of one scope by how they stand (see :func:`job_counts`).

    ``pending``: waiting or running. ``failed``: not done, and their latest attempt
    failed (waiting for a retry, or given up). ``gave_up``: of those, failed for good.
    ``last_error``: the newest failure's text, or None.
    """

    pending: int = 0
    failed: int = 0
    gave_up: int = 0
    last_error: str | None = None


def job_counts(store: SQLiteStore, *, key_prefix: str = "") -> JobCounts:
    """Count the jobs whose key starts with ``key_prefix`` (all: ``""``); never waits.

    Reads the job table whether or not this process runs a queue (zero counts when no
    job was ever submitted to the store).
    """
    if store.schema_version("jobs") == 0:
        return JobCounts()
    where, args = "1 = 1", list[Any]()
    if key_prefix:
        # A range on the unique key's index (LIKE would scan the table).
        where, args = "key >= ? AND key < ?", [key_prefix, key_prefix + "\U0010ffff"]
    with store.read() as db:
        pending, failed, gave_up = db.execute(
            "SELECT COALESCE(SUM(state IN ('pending', 'running')), 0),"
            " COALESCE(SUM(state != 'done' AND last_error IS NOT NULL), 0),"
            f" COALESCE(SUM(state = 'failed'), 0) FROM memci_jobs WHERE {where}", args,
        ).fetchone()
        last = db.execute(
            f"SELECT last_error FROM memci_jobs WHERE {where} AND state != 'done'"
            " AND last_error IS NOT NULL ORDER BY updated_at DESC, id DESC LIMIT 1", args,
        ).fetchone()
    return JobCounts(int(pending), int(failed), int(gave_up), last[0] if last else None)


#: Computes a job's result (JSON-ready) from the job; runs outside any transaction.
Handler = Callable[[Job], Any]
#: Applies a result inside the transaction that marks the job done.
Effect = Callable[[sqlite3.Connection, Job, Any], None]


class _LeaseLost(Exception):
    """The job is no longer this worker's: another worker took it after the lease expired."""


class JobQueue:
    """The job table of one store, its handlers, and optional worker threads.

    ``lease_seconds`` is how long a claimed job stays a worker's without renewal (workers
    renew every third of it); ``backoff`` and ``max_backoff`` bound the wait before a
    retry (doubling per attempt, with jitter); ``poll_interval`` is how often idle workers
    look for work submitted by other processes (work submitted here wakes them at once).
    """

    def __init__(
        self,
        store: SQLiteStore,
        *,
        lease_seconds: float = 60.0,
        backoff: float = 2.0,
        max_backoff: float = 300.0,
        max_attempts: int = 5,
        poll_interval: float = 0.5,
    ) -> None:
        for name, value in (("lease_seconds", lease_seconds), ("poll_interval", poll_interval)):
            if not value > 0:
                raise ConfigError(f"{name} must be > 0 seconds, got {value!r}")
        if backoff < 0 or max_backoff < 0:
            raise ConfigError("backoff and max_backoff must be >= 0 seconds")
        _check_attempts(max_attempts)
        store.migrate("jobs", JOBS_MIGRATIONS)
        self.store = store
        self.lease_seconds = float(lease_seconds)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.max_attempts = max_attempts
        self.poll_interval = float(poll_interval)
        self._handlers: dict[str, tuple[Handler, Effect | None]] = {}
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._worker_store: SQLiteStore | None = None
        self._in_flight: dict[int, str] = {}
        self._in_flight_lock = threading.Lock()
        self._processed = 0
        self._report = RunReport()
        self._owner_prefix = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

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
        now = time.time()
        stamp = _stamp()
        with self.store.write() as db:
            db.execute(
                "INSERT INTO memci_jobs (kind, key, payload, max_attempts, run_after,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (key) DO NOTHING",
                (kind, key, text, attempts, now + max(0.0, delay), stamp, stamp),
            )
            row = db.execute(f"SELECT {_COLUMNS} FROM memci_jobs WHERE key = ?",
                             (key,)).fetchone()
        with self._wake:
            self._wake.notify_all()
        return _job(row)

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
        now, stamp = time.time(), _stamp()
        out: list[Job] = []
        with self.store.write() as db:
            for kind, key, text in rows:
                db.execute(
                    "INSERT INTO memci_jobs (kind, key, payload, max_attempts, run_after,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (key) DO NOTHING",
                    (kind, key, text, attempts, now, stamp, stamp),
                )
                row = db.execute(f"SELECT {_COLUMNS} FROM memci_jobs WHERE key = ?",
                                 (key,)).fetchone()
                out.append(_job(row))
        with self._wake:
            self._wake.notify_all()
        return out

    # -- reading -------------------------------------------------------------------------

    def get(self, key: str) -> Job | None:
        """Return the job under ``key``, or None."""
        with self.store.read() as db:
            row = db.execute(f"SELECT {_COLUMNS} FROM memci_jobs WHERE key = ?",
                             (key,)).fetchone()
        return _job(row) if row else None

    def result(self, key: str) -> Any | None:
        """Return the result of the job under ``key`` once it is done, else None; never wait."""
        with self.store.read() as db:
            row = db.execute("SELECT result FROM memci_jobs WHERE key = ? AND state = 'done'",
                             (key,)).fetchone()
        return json.loads(row[0]) if row and row[0] is not None else None

    def results(self, keys: Iterable[str]) -> dict[str, Any]:
        """Results of the done jobs among ``keys`` (missing keys: not done yet)."""
        wanted = list(dict.fromkeys(keys))
        out: dict[str, Any] = {}
        with self.store.read() as db:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start:start + 500]
                marks = ", ".join("?" * len(chunk))
                for key, result in db.execute(
                    f"SELECT key, result FROM memci_jobs WHERE state = 'done' AND key IN"
                    f" ({marks})", chunk,
                ):
                    out[key] = json.loads(result) if result is not None else None
        return out

    def jobs(
        self, *, state: JobState | None = None, kind: str | None = None, limit: int = 100
    ) -> list[Job]:
        """Jobs, newest first, optionally of one state and kind."""
        sql = f"SELECT {_COLUMNS} FROM memci_jobs WHERE 1 = 1"
        args: list[Any] = []
        if state is not None:
            sql += " AND state = ?"
            args.append(state)
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        with self.store.read() as db:
            rows = db.execute(sql + " ORDER BY id DESC LIMIT ?", [*args, limit]).fetchall()
        return [_job(r) for r in rows]

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
        with self.store.read() as db:
            rows = db.execute(
                "SELECT kind, state, COUNT(*), SUM(MAX(attempts - 1, 0)),"
                " SUM(last_error IS NOT NULL) FROM memci_jobs GROUP BY kind, state"
            ).fetchall()
        for kind, state, count, retried, errors in rows:
            out["total"] += count
            out[state] += count
            out["retried"] += int(retried or 0)
            out["with_errors"] += int(errors or 0)
            by_kind = out["by_kind"].setdefault(kind, dict.fromkeys(JOB_STATES, 0))
            by_kind[state] += count
        return out

    def retry_failed(self, kind: str | None = None) -> int:
        """Put failed jobs (of ``kind``) back to pending with fresh attempts; how many."""
        sql = ("UPDATE memci_jobs SET state = 'pending', attempts = 0, run_after = ?,"
               " updated_at = ? WHERE state = 'failed'")
        args: list[Any] = [time.time(), _stamp()]
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        with self.store.write() as db:
            count = db.execute(sql, args).rowcount
        with self._wake:
            self._wake.notify_all()
        return int(count)

    # -- running jobs --------------------------------------------------------------------

    def run_pending(self, *, max_jobs: int | None = None) -> int:
        """Run ready jobs in this thread until none is left (or ``max_jobs``); how many ran."""
        owner = f"{self._owner_prefix}:sync"
        done = 0
        stop = threading.Event()
        renewer = threading.Thread(target=self._renew_leases, args=(self.store, stop),
                                   name="memci-job-leases-sync", daemon=True)
        renewer.start()
        try:
            while max_jobs is None or done < max_jobs:
                job = self._claim(self.store, owner)
                if job is None:
                    break
                done += 1
                try:
                    self._execute(self.store, job, owner)
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
        path = self.store.path
        self._worker_store = self.store if str(path) == ":memory:" else SQLiteStore(
            path, synchronous="FULL")
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
        kinds = self.kinds
        if not kinds:
            return 0
        marks = ", ".join("?" * len(kinds))
        with self.store.read() as db:
            row = db.execute(
                f"SELECT COUNT(*) FROM memci_jobs WHERE state IN ('pending', 'running')"
                f" AND kind IN ({marks})", kinds,
            ).fetchone()
        return int(row[0])

    def _work(self, owner: str) -> None:
        store = self._worker_store or self.store
        while not self._stop.is_set():
            try:
                job = self._claim(store, owner)
            except StoreError as exc:
                logger.warning("job worker %s cannot claim: %s", owner, exc)
                job = None
            if job is None:
                with self._wake:
                    if not self._stop.is_set():
                        self._wake.wait(self.poll_interval)
                continue
            try:
                self._execute(store, job, owner)
            except StoreError as exc:
                # The outcome could not be written: the lease will expire and the job
                # runs again, which is safe because only a committed result counts.
                self._count("retrying", f"{type(exc).__name__}: {exc}")
                logger.warning("job %s: cannot record the outcome: %s", job.key, exc)

    def _renew_leases(self, store: SQLiteStore, stop: threading.Event) -> None:
        every = self.lease_seconds / 3
        while not stop.wait(every):
            with self._in_flight_lock:
                held = list(self._in_flight.items())
            if not held:
                continue
            try:
                with store.write() as db:
                    expires = time.time() + self.lease_seconds
                    for job_id, owner in held:
                        db.execute(
                            "UPDATE memci_jobs SET lease_expires = ? WHERE id = ?"
                            " AND state = 'running' AND lease_owner = ?",
                            (expires, job_id, owner),
                        )
            except StoreError as exc:
                logger.warning("cannot renew job leases: %s", exc)

    def _claim(self, store: SQLiteStore, owner: str) -> Job | None:
        kinds = self.kinds
        if not kinds:
            return None
        marks = ", ".join("?" * len(kinds))
        now = time.time()
        with store.write() as db:
            while True:
                row = db.execute(
                    f"SELECT {_COLUMNS} FROM memci_jobs WHERE state = 'running'"
                    f" AND lease_expires < ? AND kind IN ({marks})"
                    " ORDER BY lease_expires LIMIT 1", (now, *kinds),
                ).fetchone() or db.execute(
                    f"SELECT {_COLUMNS} FROM memci_jobs WHERE state = 'pending'"
                    f" AND run_after <= ? AND kind IN ({marks})"
                    " ORDER BY run_after, id LIMIT 1", (now, *kinds),
                ).fetchone()
                if row is None:
                    return None
                job = _job(row)
                if job.state == "running" and job.attempts >= job.max_attempts:
                    db.execute(
                        "UPDATE memci_jobs SET state = 'failed', last_error = ?,"
                        " lease_owner = NULL, lease_expires = NULL, updated_at = ?"
                        " WHERE id = ?",
                        (f"lease expired: worker {job.lease_owner} stopped during attempt "
                         f"{job.attempts} of {job.max_attempts}", _stamp(), job.id),
                    )
                    continue
                expires = now + self.lease_seconds
                db.execute(
                    "UPDATE memci_jobs SET state = 'running', attempts = attempts + 1,"
                    " lease_owner = ?, lease_expires = ?, updated_at = ? WHERE id = ?",
                    (owner, expires, _stamp(), job.id),
                )
                if job.state == "running":
                    logger.info("job %s: lease of %s expired; running it again",
                                job.key, job.lease_owner)
                return Job(
                    job.id, job.kind, job.key, job.payload, "running", job.attempts + 1,
                    job.max_attempts, job.last_error, None, owner, expires, job.run_after,
                    job.created_at, job.updated_at,
                )

    def _execute(self, store: SQLiteStore, job: Job, owner: str) -> None:
        handler, effect = self._handlers[job.kind]
        with self._in_flight_lock:
            self._in_flight[job.id] = owner
        try:
            try:
                result = handler(job)
                text = json.dumps(result, ensure_ascii=False, allow_nan=False)
            except Exception as exc:  # a handler is user code: record whatever it raised
                self._fail(store, job, owner, exc)
                return
            try:
                with store.write() as db:
                    updated = db.execute(
                        "UPDATE memci_jobs SET state = 'done', result = ?, lease_owner = NULL,"
                        " lease_expires = NULL, updated_at = ? WHERE id = ?"
                        " AND state = 'running' AND lease_owner = ?",
                        (text, _stamp(), job.id, owner),
                    ).rowcount
                    if updated != 1:
                        raise _LeaseLost
                    if effect is not None:
                        effect(db, job, result)
            except _LeaseLost:
                self._count("lost")
                logger.info("job %s: lease lost to another worker; result discarded", job.key)
            except StoreError:
                raise
            except Exception as exc:  # the effect failed: nothing was committed
                self._fail(store, job, owner, exc)
            else:
                self._count("done")
        finally:
            with self._in_flight_lock:
                self._in_flight.pop(job.id, None)
                self._processed += 1

    def _fail(self, store: SQLiteStore, job: Job, owner: str, exc: BaseException) -> None:
        error = f"{type(exc).__name__}: {exc}"[:_MAX_ERROR]
        final = job.attempts >= job.max_attempts or isinstance(exc, InvalidInputError)
        delay = 0.0 if final else self._backoff(job.attempts)
        with store.write() as db:
            db.execute(
                "UPDATE memci_jobs SET state = ?, last_error = ?, run_after = ?,"
                " lease_owner = NULL, lease_expires = NULL, updated_at = ?"
                " WHERE id = ? AND state = 'running' AND lease_owner = ?",
                ("failed" if final else "pending", error, time.time() + delay, _stamp(),
                 job.id, owner),
            )
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


def _job(row: tuple[Any, ...]) -> Job:
    return Job(
        id=int(row[0]), kind=str(row[1]), key=str(row[2]),
        payload=MappingProxyType(json.loads(row[3])), state=row[4], attempts=int(row[5]),
        max_attempts=int(row[6]), last_error=row[7],
        result=json.loads(row[8]) if row[8] is not None else None,
        lease_owner=row[9], lease_expires=row[10], run_after=float(row[11]),
        created_at=datetime.fromisoformat(row[12]), updated_at=datetime.fromisoformat(row[13]),
    )


def _stamp() -> str:
    return datetime.now(UTC).isoformat()
