"""What the store keeps of background jobs, and the leases that make each run once.

A job has a ``kind`` (its handler), an idempotency ``key`` (unique in the store), a JSON
payload, a state (pending → running → done | failed), its attempts and their limit, the
last error, the JSON result, and a lease (owner, expiry) while a worker holds it. Times
that order work (``run_after``, ``lease_expires``) are Unix seconds, given by the caller.

Invariants every backend keeps:

- :meth:`JobStore.submit` of a key already stored keeps that job as it is;
- :meth:`JobStore.claim` hands a job to one claimer only: two claimers, in any processes,
  never get the same job while its lease runs (the claim is one transaction that reads
  and takes the job);
- a claim takes first a running job whose lease expired (a vanished worker's), then the
  pending job that has been ready longest (``run_after``, then id), or with
  ``newest_first`` the ready job submitted last; a running job whose lease expired on its
  last attempt is failed instead, with the reason;
- :meth:`JobStore.complete`, :meth:`JobStore.fail` and :meth:`JobStore.renew` are fenced
  by the lease: they change the job only while ``owner`` still holds it;
- every method is one transaction of its own or joins the store's open ``atomic()``
  block (so a job is marked done in the transaction that applies its effect).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

from memci._dataclasses import dataclass
from memci._records import NamedTuple

__all__ = ["JOB_STATES", "Job", "JobCounts", "JobState", "JobStore", "JobTally", "NewJob"]

JobState = Literal["pending", "running", "done", "failed"]
JOB_STATES: tuple[JobState, ...] = ("pending", "running", "done", "failed")


class Job(NamedTuple):
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


class NewJob(NamedTuple):
    """A job to submit: ``payload`` is a JSON object's text; ready from ``run_after``."""

    kind: str
    key: str
    payload: str
    max_attempts: int
    run_after: float


class JobCounts(NamedTuple):
    """Jobs of one scope by how they stand.

    ``pending``: waiting or running. ``failed``: not done, and their latest attempt
    failed (waiting for a retry, or given up). ``gave_up``: of those, failed for good.
    ``last_error``: the newest failure's text, or None.
    """

    pending: int = 0
    failed: int = 0
    gave_up: int = 0
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class JobTally:
    """Jobs of one kind in one state: how many, attempts past the first, with an error."""

    kind: str
    state: JobState
    count: int
    retried: int
    with_errors: int


class JobStore(Protocol):
    """The job table: submit, read, claim under a lease, and record outcomes."""

    def submit(self, jobs: Sequence[NewJob], *, at: datetime) -> list[Job]:
        """Add the jobs whose keys are new (all in one transaction); return each key's job."""
        ...

    def get(self, key: str) -> Job | None:
        """The job under ``key``, or None."""
        ...

    def results(self, keys: Iterable[str]) -> dict[str, Any]:
        """Decoded results of the done jobs among ``keys``."""
        ...

    def jobs(self, *, state: JobState | None = None, kind: str | None = None,
             limit: int = 100) -> list[Job]:
        """Jobs, newest first, optionally of one state and kind."""
        ...

    def counts(self, key_prefix: str = "") -> JobCounts:
        """How the jobs whose key starts with ``key_prefix`` stand."""
        ...

    def tally(self) -> list[JobTally]:
        """Jobs by kind and state."""
        ...

    def busy(self, kinds: Collection[str]) -> int:
        """How many jobs of ``kinds`` are pending or running."""
        ...

    def retry_failed(self, kind: str | None, *, run_after: float, at: datetime) -> int:
        """Put failed jobs (of ``kind``) back to pending with fresh attempts; how many."""
        ...

    def claim(
        self, kinds: Collection[str], owner: str, *, now: float, lease_seconds: float,
        at: datetime, newest_first: bool = False, ready_at: float | None = None,
    ) -> Job | None:
        """Take the next job of ``kinds`` for ``owner`` (see the module's order).

        Ready at ``ready_at`` (default ``now``); its lease runs from ``now``.
        """
        ...

    def renew(self, leases: Mapping[int, str], *, expires: float) -> None:
        """Extend the leases ``{job id: owner}`` still held to ``expires``."""
        ...

    def complete(self, job_id: int, owner: str, result: str, *, at: datetime) -> bool:
        """Mark the job done with ``result`` (JSON text); False when ``owner`` lost it."""
        ...

    def fail(
        self, job_id: int, owner: str, *, error: str, final: bool, run_after: float,
        at: datetime,
    ) -> bool:
        """Record a failed attempt (``final``: the job failed for good); False when lost."""
        ...

    def wait_for_new(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for jobs any process submits; True when some were.

        False at once where the store cannot be told (SQLite): then workers poll.
        """
        ...
