"""PostgreSQL: an idle worker is woken by a job any process submits (LISTEN/NOTIFY).

The worker polls once a minute here, so only the notification can make it run a job
submitted by another process within the bound (generous: a loaded CI machine).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from memci.store import open_store
from memci.summarize import JobQueue
from tests import pg


@pytest.fixture
def url() -> str:
    return pg.fresh_database()


def _submit_elsewhere(url: str, key: str) -> None:
    """Submit a ``ping`` job from another process."""
    code = textwrap.dedent(f"""
        from memci.store import open_store
        from memci.summarize import JobQueue
        store = open_store({url!r})
        JobQueue(store).submit("ping", {key!r}, {{}})
        store.close()
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_job_another_process_submits_wakes_an_idle_worker(url: str) -> None:
    ran: list[str] = []
    done = threading.Event()

    def ping(job: object) -> str:
        ran.append(str(getattr(job, "key", "")))
        done.set()
        return "pong"

    store = open_store(url)
    queue = JobQueue(store, poll_interval=60.0)
    queue.register("ping", ping)
    queue.start_workers(1)
    try:
        time.sleep(3.0)  # the worker found nothing and waits (its listener is listening)
        _submit_elsewhere(url, "first")
        assert done.wait(30.0), "the worker was not woken"
        done.clear()
        time.sleep(2.0)
        _submit_elsewhere(url, "second")
        assert done.wait(30.0), "the worker was not woken a second time"
    finally:
        assert queue.stop(timeout=30.0)
        store.close()
    assert ran == ["first", "second"]
