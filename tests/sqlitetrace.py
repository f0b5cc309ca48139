"""The SQL statements an engine's SQLite connection runs, for tests that count them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import memci


@contextmanager
def statements(engine: memci.Engine) -> Iterator[list[str]]:
    """Every SQL statement the engine's SQLite connection runs inside (FTS5's own aside)."""
    ran: list[str] = []
    conn = engine.store._conn  # type: ignore[attr-defined]
    conn.set_trace_callback(lambda text: None if text.lstrip().startswith("--")
                            else ran.append(text))
    try:
        yield ran
    finally:
        conn.set_trace_callback(None)
