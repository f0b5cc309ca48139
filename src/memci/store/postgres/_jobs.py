"""The job table in PostgreSQL (:class:`~memci.store.JobStore`).

``memci_jobs`` (migration series ``jobs``). A claim is one write transaction that picks
the job with ``SELECT … FOR UPDATE SKIP LOCKED`` and takes it: a row another claimer has
locked is skipped, not waited for, so workers on several machines never run one job twice
and never queue behind each other. Outcomes are ``UPDATE … WHERE lease_owner = %s``: a
worker that lost its lease changes nothing. Idle workers find new jobs by polling (every
``poll_interval`` seconds, see :class:`~memci.summarize.JobQueue`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memci.store._jobs import Job, JobCounts, JobState, JobTally, NewJob
from memci.store._rows import JOB_COLUMNS, job_from_row, stored_json
from memci.store.postgres._db import Database

__all__ = ["PostgresJobStore"]

logger = logging.getLogger("memci.jobs")

class PostgresJobStore:
    """The jobs of one PostgreSQL store."""

    def __init__(self, store: Database) -> None:
        self._store = store

    def submit(self, jobs: Sequence[NewJob], *, at: datetime) -> list[Job]:
        """Add the jobs whose keys are new (one transaction); return each key's job."""
        stamp = at.isoformat()
        out: list[Job] = []
        with self._store.write() as db:
            for job in jobs:
                db.execute(
                    "INSERT INTO memci_jobs (kind, key, payload, max_attempts, run_after,"
                    " created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (key) DO NOTHING",
                    (job.kind, job.key, job.payload, job.max_attempts, job.run_after, stamp,
                     stamp))
                row = db.execute(f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE key = %s",
                                 (job.key,)).fetchone()
                assert row is not None
                out.append(job_from_row(row))
        return out

    def get(self, key: str) -> Job | None:
        """The job under ``key``, or None."""
        with self._store.read() as db:
            row = db.execute(f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE key = %s",
                             (key,)).fetchone()
        return job_from_row(row) if row else None

    def results(self, keys: Iterable[str]) -> dict[str, Any]:
        """Decoded results of the done jobs among ``keys``."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        with self._store.read() as db:
            rows = db.execute("SELECT key, result FROM memci_jobs WHERE state = 'done'"
                              " AND key = ANY(%s)", (wanted,)).fetchall()
        return {str(k): stored_json(r, "job result") if r is not None else None
                for k, r in rows}

    def jobs(self, *, state: JobState | None = None, kind: str | None = None,
             limit: int = 100) -> list[Job]:
        """Jobs, newest first, optionally of one state and kind."""
        sql = f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE TRUE"
        args: list[Any] = []
        if state is not None:
            sql += " AND state = %s"
            args.append(state)
        if kind is not None:
            sql += " AND kind = %s"
            args.append(kind)
        with self._store.read() as db:
            rows = db.execute(sql + " ORDER BY id DESC LIMIT %s", [*args, limit]).fetchall()
        return [job_from_row(r) for r in rows]

    def counts(self, key_prefix: str = "") -> JobCounts:
        """How the jobs whose key starts with ``key_prefix`` stand."""
        where, args = "TRUE", list[Any]()
        if key_prefix:
            # A range on the unique key's index (byte order: the column is COLLATE "C").
            where, args = "key >= %s AND key < %s", [key_prefix, key_prefix + "\U0010ffff"]
        with self._store.read() as db:
            row = db.execute(
                "SELECT count(*) FILTER (WHERE state IN ('pending', 'running')),"
                " count(*) FILTER (WHERE state <> 'done' AND last_error IS NOT NULL),"
                f" count(*) FILTER (WHERE state = 'failed') FROM memci_jobs WHERE {where}",
                args).fetchone()
            last = db.execute(
                f"SELECT last_error FROM memci_jobs WHERE {where} AND state <> 'done'"
                " AND last_error IS NOT NULL ORDER BY updated_at DESC, id DESC LIMIT 1",
                args).fetchone()
        assert row is not None
        return JobCounts(int(row[0]), int(row[1]), int(row[2]), last[0] if last else None)

    def tally(self) -> list[JobTally]:
        """Jobs by kind and state."""
        with self._store.read() as db:
            rows = db.execute(
                "SELECT kind, state, count(*), SUM(GREATEST(attempts - 1, 0)),"
                " count(*) FILTER (WHERE last_error IS NOT NULL) FROM memci_jobs"
                " GROUP BY kind, state").fetchall()
        return [JobTally(str(r[0]), r[1], int(r[2]), int(r[3] or 0), int(r[4] or 0))
                for r in rows]

    def busy(self, kinds: Collection[str]) -> int:
        """How many jobs of ``kinds`` are pending or running."""
        if not kinds:
            return 0
        with self._store.read() as db:
            row = db.execute(
                "SELECT count(*) FROM memci_jobs WHERE state IN ('pending', 'running')"
                " AND kind = ANY(%s)", (list(kinds),)).fetchone()
        return int(row[0]) if row else 0

    def retry_failed(self, kind: str | None, *, run_after: float, at: datetime) -> int:
        """Put failed jobs (of ``kind``) back to pending with fresh attempts; how many."""
        sql = ("UPDATE memci_jobs SET state = 'pending', attempts = 0, run_after = %s,"
               " updated_at = %s WHERE state = 'failed'")
        args: list[Any] = [run_after, at.isoformat()]
        if kind is not None:
            sql += " AND kind = %s"
            args.append(kind)
        with self._store.write() as db:
            return int(db.execute(sql, args).rowcount)

    def claim(
        self, kinds: Collection[str], owner: str, *, now: float, lease_seconds: float,
        at: datetime, newest_first: bool = False,
    ) -> Job | None:
        """Take the next ready job of ``kinds`` for ``owner``, skipping jobs others hold."""
        if not kinds:
            return None
        wanted = list(kinds)
        order = "id DESC" if newest_first else "run_after, id"
        with self._store.write() as db:
            while True:
                row = db.execute(
                    f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE state = 'running'"
                    " AND lease_expires < %s AND kind = ANY(%s)"
                    " ORDER BY lease_expires LIMIT 1 FOR UPDATE SKIP LOCKED", (now, wanted),
                ).fetchone() or db.execute(
                    f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE state = 'pending'"
                    " AND run_after <= %s AND kind = ANY(%s)"
                    f" ORDER BY {order} LIMIT 1 FOR UPDATE SKIP LOCKED", (now, wanted),
                ).fetchone()
                if row is None:
                    return None
                job = job_from_row(row)
                if job.state == "running" and job.attempts >= job.max_attempts:
                    db.execute(
                        "UPDATE memci_jobs SET state = 'failed', last_error = %s,"
                        " lease_owner = NULL, lease_expires = NULL, updated_at = %s"
                        " WHERE id = %s",
                        (f"lease expired: worker {job.lease_owner} stopped during attempt "
                         f"{job.attempts} of {job.max_attempts}", at.isoformat(), job.id))
                    continue
                expires = now + lease_seconds
                db.execute(
                    "UPDATE memci_jobs SET state = 'running', attempts = attempts + 1,"
                    " lease_owner = %s, lease_expires = %s, updated_at = %s WHERE id = %s",
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
        with self._store.write() as db, db.cursor() as cursor:
            cursor.executemany(
                "UPDATE memci_jobs SET lease_expires = %s WHERE id = %s"
                " AND state = 'running' AND lease_owner = %s",
                [(expires, job_id, owner) for job_id, owner in leases.items()])

    def complete(self, job_id: int, owner: str, result: str, *, at: datetime) -> bool:
        """Mark the job done with ``result`` (JSON text); False when ``owner`` lost it."""
        with self._store.write() as db:
            updated = db.execute(
                "UPDATE memci_jobs SET state = 'done', result = %s, lease_owner = NULL,"
                " lease_expires = NULL, updated_at = %s WHERE id = %s"
                " AND state = 'running' AND lease_owner = %s",
                (result, at.isoformat(), job_id, owner)).rowcount
        return updated == 1

    def fail(
        self, job_id: int, owner: str, *, error: str, final: bool, run_after: float,
        at: datetime,
    ) -> bool:
        """Record a failed attempt (``final``: failed for good); False when ``owner`` lost it."""
        with self._store.write() as db:
            updated = db.execute(
                "UPDATE memci_jobs SET state = %s, last_error = %s, run_after = %s,"
                " lease_owner = NULL, lease_expires = NULL, updated_at = %s"
                " WHERE id = %s AND state = 'running' AND lease_owner = %s",
                ("failed" if final else "pending", error, run_after, at.isoformat(), job_id,
                 owner)).rowcount
        return updated == 1
