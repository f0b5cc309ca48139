"""The contract suite's backends: every test here runs once per backend, unchanged.

A test reaches the store only through the storage protocols of :mod:`memci.store` (and
the log's ``ensure_session`` / ``append`` to have sessions and messages to point at),
with plain values: no SQL, no connection. A backend is added by adding its name to
:data:`BACKENDS` and opening it in :func:`_open` (the PostgreSQL issue adds "postgres").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memci.errors import MissingExtraError
from memci.memory import get_analyzer
from memci.store import (
    ArtifactRows,
    DocStore,
    ItemStore,
    JobStore,
    KeyRows,
    MessageSearch,
    SessionRecord,
    SQLiteStore,
    VectorStore,
    WorkStore,
)
from memci.text import Analyzer
from tests import pg

BACKENDS = ("sqlite", "postgres")

#: A store: its parts and the log's session and message methods (see the module's text).
Store = Any


def _open(backend: str, where: Path) -> Store:
    if backend == "sqlite":
        return SQLiteStore(where / "memci.db")
    if backend == "postgres":
        # One empty database per test (its URL kept beside the test's files), made on the
        # tests' own PostgreSQL server (see tests/pg.py).
        from memci.store.postgres import PostgresStore

        marker = where / "postgres.url"
        if not marker.exists():
            marker.write_text(pg.fresh_database())
        return PostgresStore(marker.read_text())
    raise AssertionError(f"unknown backend {backend!r}")  # pragma: no cover


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def reopen(backend: str, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Open another handle on the same database (its own connection), as another process."""
    opened: list[Store] = []

    def again() -> Store:
        opened.append(_open(backend, tmp_path))
        return opened[-1]

    yield again
    for store in opened:
        store.close()


@pytest.fixture
def store(backend: str, tmp_path: Path) -> Iterator[Store]:
    s = _open(backend, tmp_path)
    yield s
    s.close()


@pytest.fixture
def session(store: Store) -> SessionRecord:
    record: SessionRecord = store.ensure_session("t", "contract", "u", {})
    return record


@pytest.fixture
def analyzer() -> Analyzer:
    return get_analyzer("bigram")


@pytest.fixture
def work(store: Store) -> WorkStore:
    part: WorkStore = store.work
    return part


@pytest.fixture
def artifact_rows(store: Store) -> ArtifactRows:
    part: ArtifactRows = store.artifact_rows
    return part


@pytest.fixture
def jobs(store: Store) -> JobStore:
    part: JobStore = store.jobs
    return part


@pytest.fixture
def keys(store: Store) -> KeyRows:
    part: KeyRows = store.keys
    return part


@pytest.fixture
def search(store: Store, analyzer: Analyzer) -> MessageSearch:
    part: MessageSearch = store.search(analyzer)
    return part


@pytest.fixture
def items(store: Store, analyzer: Analyzer) -> ItemStore:
    part: ItemStore = store.items(analyzer)
    return part


@pytest.fixture
def docs(store: Store, analyzer: Analyzer) -> DocStore:
    part: DocStore = store.docs(analyzer)
    return part


@pytest.fixture
def vectors(store: Store) -> VectorStore:
    """The vectors of one embedder; skipped where the backend has no vector search."""
    try:
        part: VectorStore = store.vectors("contract:test")
    except MissingExtraError as exc:
        pytest.skip(f"no vector search here: {exc}")
    return part
