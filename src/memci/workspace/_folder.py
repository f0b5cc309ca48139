"""Large tool outputs as files in a folder (:class:`~memci.store.OutputContents`).

The SQLite store's default, beside the database; or a folder every server mounts, for
several servers on one PostgreSQL store that keep outputs out of the database. A content
is ``<folder>/<first two hex digits>/<id>.txt``, written before the transaction that
stores its rows (``in_transaction`` is False): to a temporary file, fsynced, renamed to
its name, and the folder fsynced. Invariants:

- a file under its name is complete (the rename is atomic);
- a writer *holds* the file it wrote or reused (a shared ``flock``) until it releases it,
  once the transaction that names it ended; its process dying releases it too;
- a file is removed (:meth:`ArtifactFolder.discard`, :meth:`ArtifactFolder.sweep`) only
  under an exclusive lock, taken without waiting, and only when no row names it once the
  lock is held: so never while a writer holds it, and a writer that reuses a file checks,
  once it holds it, that it is still the file under that name (else writes it again);
- a file no row names and no writer holds (its transaction failed, its process died) is
  removed by the next discard or sweep, at once; a temporary file of a write that never
  finished, once it is old;
- reading checks that the file holds the size recorded.

Where the system has no ``flock`` (Windows), nothing is held and sweeps remove unnamed
files only once they are older than the age given.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Collection, Iterable
from typing import BinaryIO

from memci._lazy import pathlib
from memci.errors import StoreError, StoreFullError
from memci.store import OutputContents, Store

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    _LOCKS = False
else:
    _LOCKS = True

__all__ = ["ArtifactFolder", "contents_for"]

_CHUNK = 1 << 18  # bytes per step when hashing a file


def _file_sha(handle: BinaryIO) -> str:
    import hashlib  # with OpenSSL's: loaded by the first file hashed, not by an import

    digest = hashlib.sha256()
    while block := handle.read(_CHUNK):
        digest.update(block)
    return digest.hexdigest()


def _fsync_dir(folder: pathlib.Path) -> None:
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


def _hold(fd: int) -> None:
    """Hold the file open as ``fd``: a shared lock, waited for while a remover has it."""
    if _LOCKS:
        fcntl.flock(fd, fcntl.LOCK_SH)


def _take(fd: int) -> bool:
    """The exclusive lock on the file open as ``fd`` if no one holds it (never waits)."""
    if not _LOCKS:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _same_file(fd: int, path: pathlib.Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (not removed, not replaced)."""
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


class ArtifactFolder:
    """Large tool outputs as files under ``folder``."""

    in_transaction = False

    def __init__(self, folder: str | pathlib.Path) -> None:
        self.folder = pathlib.Path(folder)
        self.location = f"the folder {self.folder}"
        # The files this process holds (open, with a shared lock), by artifact id.
        self._held: dict[str, list[int]] = {}
        self._held_lock = threading.Lock()

    def path(self, artifact_id: str) -> pathlib.Path:
        """Where the content of ``artifact_id`` is (or would be)."""
        return self.folder / artifact_id[:2] / f"{artifact_id}.txt"

    def write(self, artifact_id: str, chunks: Iterable[bytes], size: int, sha256: str) -> None:
        """Write the file of ``artifact_id`` (complete under its name) and hold it."""
        path = self.path(artifact_id)
        try:
            fd = self._reuse(path, size, sha256)
            if fd is None:
                fd = self._write_new(path, chunks)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise StoreFullError(
                    f"cannot write artifact file {path}: the disk is full: nothing of this "
                    "call was stored; free disk space and retry") from exc
            raise StoreError(
                f"cannot write artifact file {path}: {exc}; nothing of this call was stored: "
                f"check that {self.folder} is a writable folder with free space") from exc
        with self._held_lock:
            self._held.setdefault(artifact_id, []).append(fd)

    @staticmethod
    def _reuse(path: pathlib.Path, size: int, sha256: str) -> int | None:
        """The held file already under ``path`` with this content, or None.

        Left by a write whose row never committed, or being written by another writer
        now: holding it keeps it until the row that names it commits.
        """
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            _hold(fd)
            with os.fdopen(os.dup(fd), "rb") as handle:
                same = (_same_file(fd, path) and os.fstat(fd).st_size == size
                        and _file_sha(handle) == sha256)
        except BaseException:
            os.close(fd)
            raise
        if not same:
            os.close(fd)
            return None
        os.utime(path)  # young again: where nothing can be held, sweeps go by age
        return fd

    @staticmethod
    def _write_new(path: pathlib.Path, chunks: Iterable[bytes]) -> int:
        """Write ``chunks`` to a temporary file, hold it, rename it to ``path``."""
        import tempfile  # with shutil, random and the archives: only once an output is written

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        try:
            _hold(fd)
            with os.fdopen(os.dup(fd), "wb") as handle:
                for piece in chunks:
                    handle.write(piece)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            os.close(fd)
            pathlib.Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)
        return fd

    def release(self, artifact_id: str) -> None:
        """Let go of one hold this process took on the file of ``artifact_id``."""
        with self._held_lock:
            held = self._held.get(artifact_id)
            if not held:
                return
            fd = held.pop()
            if not held:
                del self._held[artifact_id]
        os.close(fd)

    def discard(self, artifact_id: str, named: Callable[[str], bool]) -> bool:
        """Remove the file unless a row names it or a writer holds it; whether it went."""
        return self._remove_free(self.path(artifact_id), artifact_id, named)

    def _remove_free(self, path: pathlib.Path, artifact_id: str,
                     named: Callable[[str], bool]) -> bool:
        """Remove ``path`` if no one holds it and no row names it once it is locked."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StoreError(f"cannot open unused artifact file {path}: {exc}") from exc
        try:
            # Asked only once it is locked: a writer that held it until its row committed
            # has let go of it by now, and its row is seen.
            if not _take(fd) or not _same_file(fd, path) or named(artifact_id):
                return False
            path.unlink()
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StoreError(f"cannot remove unused artifact file {path}: {exc}") from exc
        finally:
            os.close(fd)

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

    def sweep(
        self, named: Callable[[], Collection[str]], is_named: Callable[[str], bool], *,
        older_than: float,
    ) -> int:
        """Remove the files no row names and no writer holds; temporary ones once old.

        The rows' names are read when the first file is met: an engine sweeps when it
        opens, and a store whose outputs are all in the database is not read for it.
        """
        if not self.folder.is_dir():
            return 0
        cutoff = time.time() - older_than
        removed = 0
        known: Collection[str] | None = None
        for folder in self.folder.iterdir():
            if not folder.is_dir():
                continue
            for path in folder.iterdir():
                if known is None:
                    known = named()
                removed += self._sweep_one(path, known, is_named, cutoff)
        return removed

    def _sweep_one(
        self, path: pathlib.Path, named: Collection[str], is_named: Callable[[str], bool],
        cutoff: float,
    ) -> int:
        name = path.name
        if name.startswith(".") and name.endswith(".tmp"):
            # A write in progress holds its file only once it is made: by age, then.
            try:
                young = path.stat().st_mtime >= cutoff
            except FileNotFoundError:
                return 0
            return 0 if young else int(self._remove_free(path, "", lambda _: False))
        if not name.endswith(".txt") or name[:-4] in named:
            return 0
        if not _LOCKS:  # pragma: no cover - Windows: no holds, so go by age
            try:
                if path.stat().st_mtime >= cutoff:
                    return 0
            except FileNotFoundError:
                return 0
        return int(self._remove_free(path, name[:-4], is_named))


def contents_for(store: Store, folder: str | pathlib.Path | None = None) -> OutputContents:
    """Where ``store``'s large tool outputs go.

    ``folder`` when given, else the store's own contents (a PostgreSQL database), else
    ``<name>-artifacts/`` beside a SQLite file.
    """
    if folder is not None:
        return ArtifactFolder(folder)
    if store.output_contents is not None:
        return store.output_contents
    db = pathlib.Path(store.location)
    return ArtifactFolder(db.parent / f"{db.stem}-artifacts")
