"""Worker threads for memci's own tool calls, apart from the shared pool.

A tool call can run for its whole deadline (a grep over a large file: 2 s). Tool calls run in
worker threads, never on the event loop, and at most :data:`TOOL_THREADS` at once under
their own limiter: however many arrive together, they queue among themselves, and the rest
of the server (health checks, adds, builds, which use anyio's shared pool of 40 threads)
keeps answering.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

__all__ = ["TOOL_THREADS", "ToolThreads"]

TOOL_THREADS = 8
T = TypeVar("T")


class ToolThreads:
    """Runs tool calls in at most ``total`` worker threads at a time."""

    def __init__(self, total: int = TOOL_THREADS) -> None:
        self.total = total
        self._limiter: anyio.CapacityLimiter | None = None

    async def run(self, call: Callable[[], T]) -> T:
        """``call()`` in a worker thread, once one of the tool threads is free."""
        if self._limiter is None:  # made inside an event loop, as anyio wants
            self._limiter = anyio.CapacityLimiter(self.total)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter)
