"""The job table in SQLite (:class:`~memci.store.JobStore`).

``memci_jobs`` (migration series ``jobs``). A claim is one ``BEGIN IMMEDIATE`` write
transaction that reads and takes the job: SQLite serializes writers across processes, so
two claimers never take the same job. Outcomes are ``UPDATE … WHERE lease_owner = ?``:
a worker that lost its lease changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from memci.store._jobs import Job, JobCounts, JobState, JobTally, NewJob
from memci.store._rows import JOB_COLUMNS, job_from_row, stored_json
from memci.store.sqlite._db import Database
from memci.store.sqlite._migrations_jobs import JOBS_MIGRATIONS

__all__ = ["SQLiteJobStore"]

logger = logging.getLogger("memci.jobs")

def _marks(values: Collection[Any]) -> str:
    return ", ".join("?" * len(values))


class SQLiteJobStore:
    """The jobs of one SQLite store."""

    def __init__(self, store: Database) -> None:
        store.migrate("jobs", JOBS_MIGRATIONS)
        self._store = store

    def submit(self, jobs: Sequence[NewJob], *, at: datetime) -> list[Job]:
        """Add the jobs whose keys are new (one transaction); return each key's job."""
        stamp = at.isoformat()
        out: list[Job] = []
        with self._store.write() as db:
            for job in jobs:
                db.execute(
                    "INSERT INTO memci_jobs (kind, key, payload, max_attempts, run_after,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (key) DO NOTHING",
                    (job.kind, job.key, job.payload, job.max_attempts, job.run_after, stamp,
                     stamp),
                )
                row = db.execute(f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE key = ?",
                                 (job.key,)).fetchone()
                out.append(job_from_row(row))
        return out

    def get(self, key: str) -> Job | None:
        """The job under ``key``, or None."""
        with self._store.read() as db:
            row = db.execute(f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE key = ?",
                             (key,)).fetchone()
        return job_from_row(row) if row else None

    def results(self, keys: Iterable[str]) -> dict[str, Any]:
        """Decoded results of the done jobs among ``keys``."""
        wanted = list(dict.fromkeys(keys))
        out: dict[str, Any] = {}
        with self._store.read() as db:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start:start + 500]
                for key, result in db.execute(
                    "SELECT key, result FROM memci_jobs WHERE state = 'done' AND key IN"
                    f" ({_marks(chunk)})", chunk,
                ):
                    out[key] = (stored_json(result, "job result") if result is not None
                                else None)
        return out

    def jobs(self, *, state: JobState | None = None, kind: str | None = None,
             limit: int = 100) -> list[Job]:
        """Jobs, newest first, optionally of one state and kind."""
        sql = f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE 1 = 1"
        args: list[Any] = []
        if state is not None:
            sql += " AND state = ?"
            args.append(state)
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        with self._store.read() as db:
            rows = db.execute(sql + " ORDER BY id DESC LIMIT ?", [*args, limit]).fetchall()
        return [job_from_row(r) for r in rows]

    def counts(self, key_prefix: str = "") -> JobCounts:
        """How the jobs whose key starts with ``key_prefix`` stand."""
        where, args = "1 = 1", list[Any]()
        if key_prefix:
            # A range on the unique key's index (LIKE would scan the table).
            where, args = "key >= ? AND key < ?", [key_prefix, key_prefix + "\U0010ffff"]
        with self._store.read() as db:
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

    def tally(self) -> list[JobTally]:
        """Jobs by kind and state."""
        with self._store.read() as db:
            rows = db.execute(
                "SELECT kind, state, COUNT(*), SUM(MAX(attempts - 1, 0)),"
                " SUM(last_error IS NOT NULL) FROM memci_jobs GROUP BY kind, state"
            ).fetchall()
        return [JobTally(str(r[0]), r[1], int(r[2]), int(r[3] or 0), int(r[4] or 0))
                for r in rows]

    def busy(self, kinds: Collection[str]) -> int:
        """How many jobs of ``kinds`` are pending or running."""
        if not kinds:
            return 0
        with self._store.read() as db:
            row = db.execute(
                "SELECT COUNT(*) FROM memci_jobs WHERE state IN ('pending', 'running')"
                f" AND kind IN ({_marks(kinds)})", tuple(kinds),
            ).fetchone()
        return int(row[0])

    def retry_failed(self, kind: str | None, *, run_after: float, at: datetime) -> int:
        """Put failed jobs (of ``kind``) back to pending with fresh attempts; how many."""
        sql = ("UPDATE memci_jobs SET state = 'pending', attempts = 0, run_after = ?,"
               " updated_at = ? WHERE state = 'failed'")
        args: list[Any] = [run_after, at.isoformat()]
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        with self._store.write() as db:
            return int(db.execute(sql, args).rowcount)

    def claim(
        self, kinds: Collection[str], owner: str, *, now: float, lease_seconds: float,
        at: datetime, newest_first: bool = False,
    ) -> Job | None:
        """Take the next ready job of ``kinds`` for ``owner``, in one write transaction."""
        if not kinds:
            return None
        marks, kinds = _marks(kinds), tuple(kinds)
        order = "id DESC" if newest_first else "run_after, id"
        with self._store.write() as db:
            while True:
                row = db.execute(
                    f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE state = 'running'"
                    f" AND lease_expires < ? AND kind IN ({marks})"
                    " ORDER BY lease_expires LIMIT 1", (now, *kinds),
                ).fetchone() or db.execute(
                    f"SELECT {JOB_COLUMNS} FROM memci_jobs WHERE state = 'pending'"
                    f" AND run_after <= ? AND kind IN ({marks})"
                    f" ORDER BY {order} LIMIT 1", (now, *kinds),
                ).fetchone()
                if row is None:
                    return None
                job = job_from_row(row)
                if job.state == "running" and job.attempts >= job.max_attempts:
                    db.execute(
                        "UPDATE memci_jobs SET state = 'failed', last_error = ?,"
                        " lease_owner = NULL, lease_expires = NULL, updated_at = ?"
                        " WHERE id = ?",
                        (f"lease expired: worker {job.lease_owner} stopped during attempt "
                         f"{job.attempts} of {job.max_attempts}", at.isoformat(), job.id),
                    )
                    continue
                expires = now + lease_seconds
                db.execute(
                    "UPDATE memci_jobs SET state = 'running', attempts = attempts + 1,"
                    " lease_owner = ?, lease_expires = ?, updated_at = ? WHERE id = ?",
                    (owner, expires, at.isoformat(), job.id),
                )
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
        with self._store.write() as db:
            for job_id, owner in leases.items():
                db.execute(
                    "UPDATE memci_jobs SET lease_expires = ? WHERE id = ?"
                    " AND state = 'running' AND lease_owner = ?", (expires, job_id, owner),
                )

    def complete(self, job_id: int, owner: str, result: str, *, at: datetime) -> bool:
        """Mark the job done with ``result`` (JSON text); False when ``owner`` lost it."""
        with self._store.write() as db:
            updated = db.execute(
                "UPDATE memci_jobs SET state = 'done', result = ?, lease_owner = NULL,"
                " lease_expires = NULL, updated_at = ? WHERE id = ?"
                " AND state = 'running' AND lease_owner = ?",
                (result, at.isoformat(), job_id, owner),
            ).rowcount
        return updated == 1

    def fail(
        self, job_id: int, owner: str, *, error: str, final: bool, run_after: float,
        at: datetime,
    ) -> bool:
        """Record a failed attempt (``final``: failed for good); False when ``owner`` lost it."""
        with self._store.write() as db:
            updated = db.execute(
                "UPDATE memci_jobs SET state = ?, last_error = ?, run_after = ?,"
                " lease_owner = NULL, lease_expires = NULL, updated_at = ?"
                " WHERE id = ? AND state = 'running' AND lease_owner = ?",
                ("failed" if final else "pending", error, run_after, at.isoformat(), job_id,
                 owner),
            ).rowcount
        return updated == 1
