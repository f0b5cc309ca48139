"""Artifacts' rows in SQLite (:class:`~memci.store.ArtifactRows`).

Tables of the ``workspace`` series: ``workspace_blobs`` (one per content, ``content`` NULL
when it lives in a file) and ``workspace_artifacts`` (one per call; ``seq`` is
``AUTOINCREMENT``, so a link's number is never reused).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memci.errors import UnknownSessionError
from memci.store._artifacts import Artifact, Blob
from memci.store._rows import ARTIFACT_SELECT, artifact_from_row, summary_json
from memci.store.sqlite._db import Database
from memci.store.sqlite._migrations_workspace import WORKSPACE_MIGRATIONS

__all__ = ["SQLiteArtifactRows"]

class SQLiteArtifactRows:
    """Blobs and links of one SQLite store."""

    def __init__(self, store: Database) -> None:
        store.migrate("workspace", WORKSPACE_MIGRATIONS)
        self._store = store

    def blob(self, artifact_id: str) -> Blob | None:
        """The blob with this id, or None."""
        with self._store.read() as db:
            row = db.execute("SELECT id, sha256, bytes, chars, lines, content FROM"
                             " workspace_blobs WHERE id = ?", (artifact_id,)).fetchone()
        if row is None:
            return None
        return Blob(id=str(row[0]), sha256=str(row[1]), size=int(row[2]), chars=int(row[3]),
                    lines=int(row[4]), content=None if row[5] is None else str(row[5]))

    def blob_id(self, sha256: str) -> str | None:
        """The id of the blob whose content has this SHA-256, or None."""
        with self._store.read() as db:
            row = db.execute("SELECT id FROM workspace_blobs WHERE sha256 = ?",
                             (sha256,)).fetchone()
        return None if row is None else str(row[0])

    def exists(self, artifact_id: str) -> bool:
        """Whether a blob has this id."""
        with self._store.read() as db:
            return db.execute("SELECT 1 FROM workspace_blobs WHERE id = ?",
                              (artifact_id,)).fetchone() is not None

    def add_blob(self, blob: Blob, *, created_at: datetime) -> None:
        """Store a new blob."""
        with self._store.write() as db:
            db.execute(
                "INSERT INTO workspace_blobs (id, sha256, bytes, chars, lines, content,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (blob.id, blob.sha256, blob.size, blob.chars, blob.lines, blob.content,
                 created_at.isoformat()),
            )

    def link(
        self, artifact_id: str, *, session_id: int, call_id: str | None,
        tool_name: str | None, arguments: str | None, exit_code: int | None,
        is_error: bool, summary: Sequence[str], owner: str, created_at: datetime,
    ) -> Artifact:
        """Link a stored blob to one tool call of a session; return the artifact."""
        with self._store.write() as db:
            if db.execute("SELECT 1 FROM sessions WHERE id = ?",
                          (session_id,)).fetchone() is None:
                raise UnknownSessionError(f"no session with id {session_id} in the store "
                                          f"{self._store.path}: create the session first")
            cursor = db.execute(
                "INSERT INTO workspace_artifacts (artifact_id, session_id, call_id, tool_name,"
                " arguments, exit_code, is_error, summary, owner, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (artifact_id, session_id, call_id, tool_name, arguments, exit_code,
                 int(is_error), summary_json(summary), owner, created_at.isoformat()),
            )
            found = db.execute(ARTIFACT_SELECT + " WHERE a.seq = ?", (cursor.lastrowid,)).fetchone()
        return artifact_from_row(found)

    def set_summary(self, seq: int, summary: Sequence[str]) -> None:
        """Replace the summary of the link ``seq``."""
        with self._store.write() as db:
            db.execute("UPDATE workspace_artifacts SET summary = ? WHERE seq = ?",
                       (summary_json(summary), seq))

    def file_ids(self) -> set[str]:
        """Ids of every blob whose content is in a file."""
        with self._store.read() as db:
            return {str(r[0]) for r in db.execute(
                "SELECT id FROM workspace_blobs WHERE content IS NULL")}

    def latest(self, artifact_id: str) -> Artifact | None:
        """The blob as linked to its latest call, or None."""
        with self._store.read() as db:
            row = db.execute(ARTIFACT_SELECT + " WHERE b.id = ? ORDER BY a.seq DESC LIMIT 1",
                             (artifact_id,)).fetchone()
        return None if row is None else artifact_from_row(row)

    def calls(self, artifact_id: str) -> list[Artifact]:
        """Every link of the blob, oldest first."""
        with self._store.read() as db:
            rows = db.execute(ARTIFACT_SELECT + " WHERE b.id = ? ORDER BY a.seq",
                              (artifact_id,)).fetchall()
        return [artifact_from_row(r) for r in rows]

    def for_call(self, session_id: int, call_id: str) -> Artifact | None:
        """The latest link of the call ``call_id`` of the session, or None."""
        with self._store.read() as db:
            row = db.execute(
                ARTIFACT_SELECT + " WHERE a.session_id = ? AND a.call_id = ? ORDER BY a.seq DESC"
                " LIMIT 1", (session_id, call_id),
            ).fetchone()
        return None if row is None else artifact_from_row(row)

    def for_session(self, session_id: int) -> list[Artifact]:
        """Every link of the session, oldest first."""
        with self._store.read() as db:
            rows = db.execute(ARTIFACT_SELECT + " WHERE a.session_id = ? ORDER BY a.seq",
                              (session_id,)).fetchall()
        return [artifact_from_row(r) for r in rows]
