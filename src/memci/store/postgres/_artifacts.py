"""Large tool outputs in PostgreSQL (:class:`~memci.store.OutputContents`), in the database.

Artifacts' rows are :class:`~memci.store._sql.SqlArtifactRows`'s (``workspace_blobs``,
``workspace_artifacts``; an inline output is ``bytea`` here). A large output lives in
``artifact_contents`` (``postgres`` series), in parts of
:data:`PART_BYTES`, written in the transaction that stores its blob's row: every server
reads it from the database, none keeps it on its own disk only, and a write that rolls
back leaves nothing behind (:class:`PostgresOutputContents`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Collection, Iterable
from typing import Any, BinaryIO, cast

from memci.errors import StoreError
from memci.store.postgres._db import Database

__all__ = ["PART_BYTES", "PostgresOutputContents"]

PART_BYTES = 1 << 20
"""Bytes per stored part of a large output: a range read fetches only the parts it spans."""


class PostgresOutputContents:
    """Large tool outputs in ``artifact_contents`` (:class:`~memci.store.OutputContents`)."""

    in_transaction = True

    def __init__(self, store: Database) -> None:
        self._store = store
        self.location = f"the database {store.location}"

    def write(self, artifact_id: str, chunks: Iterable[bytes], size: int, sha256: str) -> None:
        """Store the content in parts of :data:`PART_BYTES`, in the caller's transaction."""
        buffer = bytearray()
        part = 0
        written = 0
        with self._store.write() as db:
            db.execute("DELETE FROM artifact_contents WHERE artifact_id = %s", (artifact_id,))

            def flush(data: bytes) -> None:
                nonlocal part, written
                db.execute("INSERT INTO artifact_contents (artifact_id, part, data)"
                           " VALUES (%s, %s, %s)", (artifact_id, part, data))
                part += 1
                written += len(data)

            for chunk in chunks:
                buffer += chunk
                while len(buffer) >= PART_BYTES:
                    flush(bytes(buffer[:PART_BYTES]))
                    del buffer[:PART_BYTES]
            if buffer or not part:
                flush(bytes(buffer))
            if written != size:
                raise StoreError(f"artifact {artifact_id}: {written} bytes given, {size} "
                                 "expected; nothing was stored")

    def open(self, artifact_id: str, size: int) -> BinaryIO:
        """A seekable reader that fetches the parts a read spans."""
        with self._store.read() as db:
            row = db.execute("SELECT count(*), COALESCE(SUM(octet_length(data)), 0)"
                             " FROM artifact_contents WHERE artifact_id = %s",
                             (artifact_id,)).fetchone()
        parts, stored = (int(row[0]), int(row[1])) if row else (0, 0)
        if parts == 0:
            raise StoreError(f"artifact artifact:{artifact_id} is recorded but its content is "
                             f"not in {self.location}: the store is damaged; restore it from "
                             "a backup")
        if stored != size:
            raise StoreError(f"artifact artifact:{artifact_id} has {stored} bytes in "
                             f"{self.location}, not the {size} recorded")
        reader = io.BufferedReader(_Parts(self._store, artifact_id, size),
                                   buffer_size=PART_BYTES)
        return cast(BinaryIO, reader)

    def release(self, artifact_id: str) -> None:
        """Nothing is held: a content is written with the rows that name it."""

    def discard(self, artifact_id: str, named: Callable[[str], bool]) -> bool:
        """Delete the content's parts if no blob row names it any more.

        A deletion removes a blob's parts with its row, in one transaction
        (:mod:`memci.store.postgres._erase`), and a failed transaction takes what it wrote
        with it, so this finds none left as a rule; a blob stored again since (the same
        output, by another process) keeps its parts.
        """
        with self._store.write() as db:
            deleted = db.execute(
                "DELETE FROM artifact_contents WHERE artifact_id = %s AND NOT EXISTS"
                " (SELECT 1 FROM workspace_blobs WHERE id = %s)",
                (artifact_id, artifact_id)).rowcount
        return bool(deleted)

    def sweep(
        self, named: Callable[[], Collection[str]], is_named: Callable[[str], bool], *,
        older_than: float,
    ) -> int:
        """Nothing to sweep: a content is written with the rows that name it."""
        return 0


class _Parts(io.RawIOBase):
    """The bytes of one stored content, read part by part (the last part read is kept)."""

    def __init__(self, store: Database, artifact_id: str, size: int) -> None:
        super().__init__()
        self._store = store
        self._id = artifact_id
        self._size = size
        self._pos = 0
        self._cached: tuple[int, bytes] | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _part(self, number: int) -> bytes:
        if self._cached is not None and self._cached[0] == number:
            return self._cached[1]
        with self._store.read() as db:
            row = db.execute("SELECT data FROM artifact_contents WHERE artifact_id = %s"
                             " AND part = %s", (self._id, number)).fetchone()
        data = bytes(row[0]) if row else b""
        self._cached = (number, data)
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._pos >= self._size or not len(view):
            return 0
        number, within = divmod(self._pos, PART_BYTES)
        data = self._part(number)[within:within + len(view)]
        view[:len(data)] = data
        self._pos += len(data)
        return len(data)
