"""Whether another process has a store open, and so may write to it while it is read.

``memci migrate`` copies a store in one read transaction: what another process commits
after it began is not in the copy. :func:`other_writers` finds those processes. It must be
asked before this process opens the store itself (for SQLite, closing any descriptor of a
file drops the process's own locks on it, so the check never touches a file this process
has open):

- SQLite (WAL mode, as memci runs it): every open connection holds a shared lock on the
  "dead man switch" byte of the ``-shm`` file for as long as it is open, idle or not; a
  write lock on that byte is refused while another process holds it. The lock is taken
  and released at once, never waited for. No ``-shm`` file: nobody has the store open.
- PostgreSQL: the other clients of the same database in ``pg_stat_activity``.
"""

from __future__ import annotations

import importlib
import os
from typing import cast

from memci._lazy import pathlib
from memci.store._open import is_postgres_url, sqlite_file

__all__ = ["other_writers"]

_DMS_BYTE = 128  # SQLite's unix VFS: (22 + 8) * 4 + 8, the dead man switch of the -shm


def other_writers(location: str) -> list[str]:
    """One line per other process that has the store at ``location`` open."""
    if is_postgres_url(location):
        module = importlib.import_module("memci.store.postgres._activity")
        return cast(list[str], module.other_clients(location))
    return _sqlite_openers(sqlite_file(location))


def _sqlite_openers(path: pathlib.Path) -> list[str]:
    try:
        import fcntl
    except ImportError:  # not a POSIX system: no way to tell
        return []
    shm = path.with_name(path.name + "-shm")
    try:
        fd = os.open(shm, os.O_RDWR)
    except FileNotFoundError:
        return []
    except OSError:
        return []  # not ours to lock (permissions): the copy's own read will tell
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _DMS_BYTE)
        except OSError:
            return [f"another process has {path} open (a memci server, a worker, an "
                    "agent)"]
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, _DMS_BYTE)
        return []
    finally:
        os.close(fd)
