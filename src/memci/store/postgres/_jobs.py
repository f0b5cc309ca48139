"""The PostgreSQL job table: the shared statements, and idle workers woken by NOTIFY.

A transaction that submits jobs (or puts failed ones back) ends with ``NOTIFY
memci_jobs``, which PostgreSQL delivers when it commits, to every connection listening
on any machine. :meth:`PostgresJobStore.wait_for_new` listens on a connection of its own
(one per store, made on first use, never a pooled one: a listening connection must stay
open) and returns when a notification arrives or the timeout passes; a connection that
fails is dropped and made again on the next wait (its waiter falls back to polling).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime

import psycopg

from memci.store._jobs import Job, NewJob
from memci.store._sql import SqlJobStore
from memci.store.postgres._db import Connection, Database

__all__ = ["CHANNEL", "PostgresJobStore"]

#: The channel a job's submission is announced on.
CHANNEL = "memci_jobs"


class PostgresJobStore(SqlJobStore):
    """The jobs of one PostgreSQL store; submissions wake listening workers everywhere."""

    def __init__(self, store: Database) -> None:
        super().__init__(store.sql)
        self._store = store
        self._listening: Connection | None = None
        self._lock = threading.Lock()

    def submit(self, jobs: Sequence[NewJob], *, at: datetime) -> list[Job]:
        """Add the jobs whose keys are new; listeners hear of it when it commits."""
        with self._db.write() as sql:
            made = super().submit(jobs, at=at)
            sql.run(f"NOTIFY {CHANNEL}")
        return made

    def retry_failed(self, kind: str | None, *, run_after: float, at: datetime) -> int:
        """Put failed jobs back to pending; listeners hear of it when it commits."""
        with self._db.write() as sql:
            count = super().retry_failed(kind, run_after=run_after, at=at)
            if count:
                sql.run(f"NOTIFY {CHANNEL}")
        return count

    def wait_for_new(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a submission; True when one was announced."""
        with self._lock:  # one waiter at a time on the listening connection
            try:
                conn = self._listen()
                heard = next(iter(conn.notifies(timeout=timeout, stop_after=1)), None)
            except psycopg.Error:
                self._drop()
                return False
            return heard is not None

    def _listen(self) -> Connection:
        if self._listening is None or self._listening.closed:
            conn: Connection = psycopg.connect(self._store.url, autocommit=True)
            conn.execute(f"LISTEN {CHANNEL}")
            self._listening = conn
        return self._listening

    def _drop(self) -> None:
        if self._listening is not None:
            self._listening.close()
            self._listening = None

    def close(self) -> None:
        """Close the listening connection (if one was made)."""
        with self._lock:
            self._drop()
