"""The job table (:class:`~memci.store.JobStore`): ``memci_jobs``, both backends.

``memci_jobs`` (migration series ``jobs``). A claim is one write transaction that picks
the job and takes it, so two claimers never take the same job: SQLite serializes writers
across processes (``BEGIN IMMEDIATE``); PostgreSQL picks with ``SELECT … FOR UPDATE SKIP
LOCKED``, so a row another claimer has locked is skipped, not waited for, and workers on
several machines never queue behind each other. Outcomes are ``UPDATE … WHERE
lease_owner = ?``: a worker that lost its lease changes nothing. Idle workers find new
jobs by polling (see :class:`~memci.summarize.JobQueue`), and on PostgreSQL are woken
when any process submits one (:class:`~memci.store.postgres.PostgresJobStore`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memci._lazy import LazyLogger
from memci.store._jobs import Job, JobCounts, JobState, JobTally, NewJob
from memci.store._rows import JOB_COLUMNS, job_from_row, stored_json
from memci.store._sql._conn import Sql, Transactions

__all__ = ["SqlJobStore"]

logger = LazyLogger("memci.jobs")

_SELECT = f"SELECT {JOB_COLUMNS} FROM memci_jobs"


class SqlJobStore:
    """The jobs of one store."""

    def __init__(self, db: Transactions) -> None:
        db.ready("jobs")
        self._db = db

    def submit(self, jobs: Sequence[NewJob], *, at: datetime) -> list[Job]:
        """Add the jobs whose keys are new (one transaction); return each key's job."""
        stamp = at.isoformat()
        out: list[Job] = []
        with self._db.write() as sql:
            for job in jobs:
                sql.run("INSERT INTO memci_jobs (kind, key, payload, max_attempts, run_after,"
                        " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                        " ON CONFLICT (key) DO NOTHING",
                        (job.kind, job.key, job.payload, job.max_attempts, job.run_after,
                         stamp, stamp))
                row = sql.one(_SELECT + " WHERE key = ?", (job.key,))
                assert row is not None
                out.append(job_from_row(row))
        return out

    def get(self, key: str) -> Job | None:
        """The job under ``key``, or None."""
        with self._db.read() as sql:
            row = sql.one(_SELECT + " WHERE key = ?", (key,))
        return job_from_row(row) if row else None

    def results(self, keys: Iterable[str]) -> dict[str, Any]:
        """Decoded results of the done jobs among ``keys``."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        with self._db.read() as sql:
            rows = sql.all("SELECT key, result FROM memci_jobs WHERE state = 'done' AND "
                           + sql.dialect.in_array("key"), (sql.dialect.array(wanted),))
        return {str(k): stored_json(r, "job result") if r is not None else None
                for k, r in rows}

    def jobs(self, *, state: JobState | None = None, kind: str | None = None,
             limit: int = 100) -> list[Job]:
        """Jobs, newest first, optionally of one state and kind."""
        text, args = _SELECT + " WHERE TRUE", list[Any]()
        if state is not None:
            text += " AND state = ?"
            args.append(state)
        if kind is not None:
            text += " AND kind = ?"
            args.append(kind)
        with self._db.read() as sql:
            rows = sql.all(text + " ORDER BY id DESC LIMIT ?", [*args, limit])
        return [job_from_row(r) for r in rows]

    def counts(self, key_prefix: str = "") -> JobCounts:
        """How the jobs whose key starts with ``key_prefix`` stand."""
        where, args = "TRUE", list[Any]()
        if key_prefix:
            # A range on the unique key's index (LIKE would scan the table; PostgreSQL's
            # column is COLLATE "C": byte order, as SQLite's).
            where, args = "key >= ? AND key < ?", [key_prefix, key_prefix + "\U0010ffff"]
        with self._db.read() as sql:
            row = sql.one(
                "SELECT count(*) FILTER (WHERE state IN ('pending', 'running')),"
                " count(*) FILTER (WHERE state <> 'done' AND last_error IS NOT NULL),"
                f" count(*) FILTER (WHERE state = 'failed') FROM memci_jobs WHERE {where}",
                args)
            last = sql.value(
                f"SELECT last_error FROM memci_jobs WHERE {where} AND state <> 'done'"
                " AND last_error IS NOT NULL ORDER BY updated_at DESC, id DESC LIMIT 1", args)
        assert row is not None
        return JobCounts(int(row[0]), int(row[1]), int(row[2]), last)

    def tally(self) -> list[JobTally]:
        """Jobs by kind and state."""
        with self._db.read() as sql:
            rows = sql.all(
                f"SELECT kind, state, count(*), SUM({sql.dialect.greatest('attempts - 1', '0')}),"
                " count(*) FILTER (WHERE last_error IS NOT NULL) FROM memci_jobs"
                " GROUP BY kind, state")
        return [JobTally(str(r[0]), r[1], int(r[2]), int(r[3] or 0), int(r[4] or 0))
                for r in rows]

    def busy(self, kinds: Collection[str]) -> int:
        """How many jobs of ``kinds`` are pending or running."""
        if not kinds:
            return 0
        with self._db.read() as sql:
            where, args = sql.dialect.in_values("kind", kinds)
            found = sql.value("SELECT count(*) FROM memci_jobs WHERE state IN"
                              f" ('pending', 'running') AND {where}", args)
        return int(found or 0)

    def retry_failed(self, kind: str | None, *, run_after: float, at: datetime) -> int:
        """Put failed jobs (of ``kind``) back to pending with fresh attempts; how many."""
        text = ("UPDATE memci_jobs SET state = 'pending', attempts = 0, run_after = ?,"
                " updated_at = ? WHERE state = 'failed'")
        args: list[Any] = [run_after, at.isoformat()]
        if kind is not None:
            text += " AND kind = ?"
            args.append(kind)
        with self._db.write() as sql:
            return sql.run(text, args)

    def wait_for_new(self, timeout: float) -> bool:
        """False at once: this store is not told of other processes' jobs (they poll)."""
        return False

    def claim(
        self, kinds: Collection[str], owner: str, *, now: float, lease_seconds: float,
        at: datetime, newest_first: bool = False, ready_at: float | None = None,
    ) -> Job | None:
        """Take the next job of ``kinds`` for ``owner``, in one write transaction.

        Ready at ``ready_at`` (default ``now``); its lease runs from ``now``.

        A job whose lease expired in its last attempt fails for good on the way.
        """
        if not kinds:
            return None
        with self._db.write() as sql:
            while True:
                job = _next_ready(sql, kinds, now if ready_at is None else ready_at,
                                  newest_first)
                if job is None:
                    return None
                if job.state == "running" and job.attempts >= job.max_attempts:
                    sql.run("UPDATE memci_jobs SET state = 'failed', last_error = ?,"
                            " lease_owner = NULL, lease_expires = NULL, updated_at = ?"
                            " WHERE id = ?",
                            (f"lease expired: worker {job.lease_owner} stopped during attempt "
                             f"{job.attempts} of {job.max_attempts}", at.isoformat(), job.id))
                    continue
                expires = now + lease_seconds
                sql.run("UPDATE memci_jobs SET state = 'running', attempts = attempts + 1,"
                        " lease_owner = ?, lease_expires = ?, updated_at = ? WHERE id = ?",
                        (owner, expires, at.isoformat(), job.id))
                if job.state == "running":
                    logger.info("job %s: lease of %s expired; running it again",
                                job.key, job.lease_owner)
                return Job(
                    job.id, job.kind, job.key, job.payload, "running", job.attempts + 1,
                    job.max_attempts, job.last_error, None, owner, expires, job.run_after,
                    job.created_at, job.updated_at,
                )

    def renew(self, leases: Mapping[int, str], *, expires: float) -> None:
        """Extend the leases ``{job id: owner}`` still held to ``expires``."""
        if not leases:
            return
        with self._db.write() as sql:
            sql.many("UPDATE memci_jobs SET lease_expires = ? WHERE id = ?"
                     " AND state = 'running' AND lease_owner = ?",
                     [(expires, job_id, owner) for job_id, owner in leases.items()])

    def complete(self, job_id: int, owner: str, result: str, *, at: datetime) -> bool:
        """Mark the job done with ``result`` (JSON text); False when ``owner`` lost it."""
        with self._db.write() as sql:
            return sql.run("UPDATE memci_jobs SET state = 'done', result = ?,"
                           " lease_owner = NULL, lease_expires = NULL, updated_at = ?"
                           " WHERE id = ? AND state = 'running' AND lease_owner = ?",
                           (result, at.isoformat(), job_id, owner)) == 1

    def fail(
        self, job_id: int, owner: str, *, error: str, final: bool, run_after: float,
        at: datetime,
    ) -> bool:
        """Record a failed attempt (``final``: failed for good); False when ``owner`` lost it."""
        with self._db.write() as sql:
            return sql.run("UPDATE memci_jobs SET state = ?, last_error = ?, run_after = ?,"
                           " lease_owner = NULL, lease_expires = NULL, updated_at = ?"
                           " WHERE id = ? AND state = 'running' AND lease_owner = ?",
                           ("failed" if final else "pending", error, run_after,
                            at.isoformat(), job_id, owner)) == 1


def _next_ready(sql: Sql, kinds: Collection[str], now: float, newest_first: bool) -> Job | None:
    """The job a claim takes next: one whose lease expired, else the next ready one.

    Its row is locked for the claim where rows are (rows other claimers hold are skipped).
    """
    where, args = sql.dialect.in_values("kind", kinds)
    lock = sql.dialect.skip_locked
    order = "id DESC" if newest_first else "run_after, id"
    row = sql.one(f"{_SELECT} WHERE state = 'running' AND lease_expires < ? AND {where}"
                  f" ORDER BY lease_expires LIMIT 1{lock}", (now, *args))
    if row is None:
        row = sql.one(f"{_SELECT} WHERE state = 'pending' AND run_after <= ? AND {where}"
                      f" ORDER BY {order} LIMIT 1{lock}", (now, *args))
    return None if row is None else job_from_row(row)
