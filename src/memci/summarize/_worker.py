"""Running jobs in a process of their own: what ``memci worker`` calls.

:func:`run_worker` opens the store, registers handlers (the summary kinds, answered by the
model from ``MEMCI_LLM_*`` when one is configured, else extractively; or whatever a
``setup`` function registers), and runs jobs: once (every job ready now, then return) or
until SIGTERM / SIGINT or ``stop`` is set. It returns a :class:`RunReport`: how many jobs
ran, succeeded and failed, and the last error — a run whose every job failed says so. A
worker killed outright loses nothing: its jobs' leases expire and another worker runs them
again.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from memci.llm import LLMClient
from memci.store import open_store
from memci.summarize._jobs import JobQueue, RunReport
from memci.summarize._tasks import default_summarizer, register_summary_handlers

__all__ = ["run_worker"]


def run_worker(
    db_path: str | Path,
    *,
    once: bool = False,
    poll_interval: float = 1.0,
    workers: int = 1,
    lease_seconds: float = 60.0,
    setup: Callable[[JobQueue], None] | None = None,
    client: LLMClient | None = None,
    stop: threading.Event | None = None,
) -> RunReport:
    """Run background jobs of the store at ``db_path``; return what ran and how it ended.

    ``once``: run every job ready now in this thread, then return. Otherwise start
    ``workers`` threads that poll every ``poll_interval`` seconds until ``stop`` is set
    or the process gets SIGTERM or SIGINT (handled only when called from the main
    thread); the jobs in hand are finished first. ``setup(queue)`` replaces the default
    handlers; ``client`` replaces the model configured in the environment.
    """
    store = open_store(db_path)
    try:
        queue = JobQueue(store, lease_seconds=lease_seconds, poll_interval=poll_interval,
                         newest_first=True)
        if setup is not None:
            setup(queue)
        else:
            register_summary_handlers(queue, default_summarizer(client))
        if once:
            queue.run_pending(ready_at=time.time())  # the jobs ready now, each once
            return queue.report
        done = stop or threading.Event()
        restore = _on_signals(done)
        try:
            queue.start_workers(workers)
            while not done.wait(min(poll_interval, 0.5)):
                pass
        finally:
            queue.stop(timeout=None)
            restore()
        return queue.report
    finally:
        store.close()


def _on_signals(done: threading.Event) -> Callable[[], None]:
    """Make SIGTERM and SIGINT set ``done``; return what puts the old handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handle(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
