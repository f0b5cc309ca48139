"""Faults with real processes: concurrent appenders, and SIGKILL in the middle of ingest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import memci

pytestmark = pytest.mark.slow

SRC = str(Path(__file__).resolve().parents[1] / "src")

APPENDER = textwrap.dedent("""
    import sys, memci
    db, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    eng = memci.Engine.open(db)
    s = eng.session("shared")
    for i in range(n):
        if i % 10 == 0:
            s.add_many([{"role": "user", "content": f"{tag}-{i}"},
                        {"role": "assistant", "content": f"{tag}-{i}-reply"}])
        else:
            s.add({"role": "user", "content": f"{tag}-{i}"})
        print(f"ack {tag}-{i}", flush=True)
    eng.close()
""")


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-c", APPENDER, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def test_two_processes_append_without_loss_or_duplicates(db_path: Path) -> None:
    memci.Engine.open(db_path).close()
    n = 150
    procs = [_spawn(str(db_path), tag, str(n)) for tag in ("a", "b")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    with memci.Engine.open(db_path) as eng:
        log = eng.session("shared").messages()
    assert [m.seq for m in log] == list(range(1, len(log) + 1))  # gap-free, ordered
    users = [m.content for m in log if m.role == "user"]
    for tag in ("a", "b"):
        mine = [c for c in users if c.startswith(f"{tag}-")]
        assert mine == [f"{tag}-{i}" for i in range(n)]  # each once, in its order
    # a batch stays contiguous even with another process appending
    for i, m in enumerate(log):
        if m.role == "assistant":
            assert log[i - 1].content + "-reply" == m.content


def test_sigkill_mid_ingest_loses_nothing_acknowledged(db_path: Path) -> None:
    memci.Engine.open(db_path).close()
    proc = _spawn(str(db_path), "k", "100000")
    acked: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while len(acked) < 300 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith("ack "):
            acked.append(line.split()[1])
    proc.send_signal(signal.SIGKILL)
    # whatever it printed before dying was acknowledged too
    rest, _ = proc.communicate(timeout=30)
    acked += [ln.split()[1] for ln in rest.splitlines() if ln.startswith("ack ")]
    assert proc.returncode == -signal.SIGKILL
    assert len(acked) >= 300
    with memci.Engine.open(db_path) as eng:
        log = eng.session("shared").messages()
    stored = {m.content for m in log if m.role == "user"}
    missing = [a for a in acked if a not in stored]
    assert missing == []
    assert [m.seq for m in log] == list(range(1, len(log) + 1))
