"""Large tool outputs as files in a folder (:class:`~memci.store.OutputContents`).

The SQLite store's default, beside the database; or a folder every server mounts, for
several servers on one PostgreSQL store that keep outputs out of the database. A content
is ``<folder>/<first two hex digits>/<id>.txt``, written before the transaction that
stores its rows (``in_transaction`` is False): to a temporary file, fsynced, renamed to
its name, and the folder fsynced. Invariants:

- a file under its name is complete (the rename is atomic);
- a file no row names (its transaction failed, or a crash came first) is harmless: the
  next write of the same content reuses it, and :meth:`ArtifactFolder.sweep` removes it
  once it is old;
- reading checks that the file holds the size recorded.
"""

from __future__ import annotations

import errno
import hashlib
import os
import tempfile
import time
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import BinaryIO

from memci.errors import StoreError, StoreFullError
from memci.store import OutputContents, Store

__all__ = ["ArtifactFolder", "contents_for"]

_CHUNK = 1 << 18  # bytes per step when hashing a file


def _file_sha(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class ArtifactFolder:
    """Large tool outputs as files under ``folder``."""

    in_transaction = False

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.location = f"the folder {self.folder}"

    def path(self, artifact_id: str) -> Path:
        """Where the content of ``artifact_id`` is (or would be)."""
        return self.folder / artifact_id[:2] / f"{artifact_id}.txt"

    def write(self, artifact_id: str, chunks: Iterable[bytes], size: int, sha256: str) -> None:
        """Write the file of ``artifact_id``: complete under its name, or absent."""
        path = self.path(artifact_id)
        try:
            if path.is_file() and path.stat().st_size == size and _file_sha(path) == sha256:
                # Left by a write whose row never committed: reuse it, and make it young
                # so a sweep spares it until the row that names it commits.
                os.utime(path)
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{artifact_id}.", suffix=".tmp",
                                       dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    for piece in chunks:
                        handle.write(piece)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            _fsync_dir(path.parent)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreFullError(
                    f"cannot write artifact file {path}: the disk is full: nothing of this "
                    "call was stored; free disk space and retry") from exc
            raise StoreError(
                f"cannot write artifact file {path}: {exc}; nothing of this call was stored: "
                f"check that {self.folder} is a writable folder with free space") from exc

    def open(self, artifact_id: str, size: int) -> BinaryIO:
        """The file of ``artifact_id``, opened for reading (checked to hold ``size`` bytes)."""
        path = self.path(artifact_id)
        try:
            handle = path.open("rb")
        except OSError as exc:
            raise StoreError(
                f"artifact artifact:{artifact_id} is recorded but its file {path} cannot be "
                f"read: {exc}; restore the folder {self.folder} from a backup") from exc
        if os.fstat(handle.fileno()).st_size != size:
            handle.close()
            raise StoreError(f"artifact file {path} does not have the {size} bytes recorded")
        return handle

    def sweep(self, named: Collection[str], *, older_than: float) -> int:
        """Remove files no row names (and temporary files), older than ``older_than``."""
        if not self.folder.is_dir():
            return 0
        cutoff = time.time() - older_than
        removed = 0
        for folder in self.folder.iterdir():
            if not folder.is_dir():
                continue
            for path in folder.iterdir():
                name = path.name
                temporary = name.startswith(".") and name.endswith(".tmp")
                if not temporary and not (name.endswith(".txt") and name[:-4] not in named):
                    continue
                try:
                    if path.stat().st_mtime < cutoff:
                        path.unlink()
                        removed += 1
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    raise StoreError(f"cannot remove unused artifact file {path}: {exc}") from exc
        return removed


def contents_for(store: Store, folder: str | Path | None = None) -> OutputContents:
    """Where ``store``'s large tool outputs go.

    ``folder`` when given, else the store's own contents (a PostgreSQL database), else
    ``<name>-artifacts/`` beside a SQLite file.
    """
    if folder is not None:
        return ArtifactFolder(folder)
    if store.output_contents is not None:
        return store.output_contents
    db = Path(store.location)
    return ArtifactFolder(db.parent / f"{db.stem}-artifacts")
