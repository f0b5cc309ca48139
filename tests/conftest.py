"""Shared fixtures: a real SQLite store in a temporary directory, a fake model server on
127.0.0.1, and the shared data."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import settings

import memci
from memci.store import SQLiteStore
from tests.fakellm import FakeLLM

# Property tests draw the same cases on every run ("ci", the default), so a red run is
# the code's doing; HYPOTHESIS_PROFILE=explore draws new ones on each run.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
EXAMPLE_TRACE = ROOT / "examples" / "agent_trace.json"
SQLITE_STEP = 100  # SQLite's progress handler runs every this many steps


@contextmanager
def sqlite_steps(store: SQLiteStore) -> Iterator[list[int]]:
    """Counts (in units of :data:`SQLITE_STEP`) the steps SQLite runs within the block.

    Work measured this way, not timed, holds on a busy machine.
    """
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    store._conn.set_progress_handler(tick, SQLITE_STEP)
    try:
        yield steps
    finally:
        store._conn.set_progress_handler(None, SQLITE_STEP)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memci.db"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A bare store (no engine) in a temporary directory."""
    s = SQLiteStore(tmp_path / "memci.db")
    yield s
    s.close()


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    """An OpenAI-/Anthropic-compatible model server on 127.0.0.1 that must not fail."""
    with FakeLLM() as server:
        yield server
        assert not server.server_errors


@pytest.fixture
def engine(db_path: Path) -> Iterator[memci.Engine]:
    eng = memci.Engine.open(db_path)
    yield eng
    eng.close()


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test when that folder is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not present: {path}")
    return path
