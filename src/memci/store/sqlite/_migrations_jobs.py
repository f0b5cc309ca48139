"""The ``jobs`` migration series of the SQLite store: the durable job table.

``memci_jobs`` holds one row per job: a ``kind`` naming its handler, an idempotency
``key`` (UNIQUE), a JSON ``payload``, a ``state`` (pending → running → done | failed), its
attempts and limit, the last error, the JSON ``result``, and a lease (owner, expiry in
Unix seconds) while a worker holds it. Never edit a released migration: add the next.
"""

from __future__ import annotations

from memci.store._sql import Migration

__all__ = ["JOBS_MIGRATIONS"]

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
