"""Artifacts' rows (:class:`~memci.store.ArtifactRows`), both backends.

Tables of the ``workspace`` series: ``workspace_blobs`` (one per content; ``content`` holds
an inline output, NULL when the output is large and kept outside its row: in a file
beside a SQLite store, in ``artifact_contents`` in PostgreSQL) and ``workspace_artifacts``
(one per call; ``seq`` is never given twice: SQLite's ``AUTOINCREMENT``, PostgreSQL's
identity column). An inline output is stored as the dialect keeps text that may hold
U+0000 (:meth:`~memci.store._sql.Dialect.utf8_in`: PostgreSQL's ``bytea``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from memci.errors import UnknownSessionError
from memci.store._artifacts import Artifact, Blob
from memci.store._rows import ARTIFACT_SELECT, artifact_from_row, summary_json
from memci.store._sql._conn import Transactions

__all__ = ["SqlArtifactRows"]


class SqlArtifactRows:
    """Blobs and links of one store."""

    def __init__(self, db: Transactions) -> None:
        db.ready("workspace")
        self._db = db

    def blob(self, artifact_id: str) -> Blob | None:
        """The blob with this id, or None."""
        with self._db.read() as sql:
            row = sql.one("SELECT id, sha256, bytes, chars, lines, content FROM"
                          " workspace_blobs WHERE id = ?", (artifact_id,))
        if row is None:
            return None
        return Blob(id=str(row[0]), sha256=str(row[1]), size=int(row[2]), chars=int(row[3]),
                    lines=int(row[4]), content=self._db.dialect.utf8_out(row[5]))

    def blob_id(self, sha256: str) -> str | None:
        """The id of the blob whose content has this SHA-256, or None."""
        with self._db.read() as sql:
            found = sql.value("SELECT id FROM workspace_blobs WHERE sha256 = ?", (sha256,))
        return None if found is None else str(found)

    def exists(self, artifact_id: str) -> bool:
        """Whether a blob has this id."""
        with self._db.read() as sql:
            return sql.one("SELECT 1 FROM workspace_blobs WHERE id = ?",
                           (artifact_id,)) is not None

    def add_blob(self, blob: Blob, *, created_at: datetime) -> None:
        """Store a new blob."""
        with self._db.write() as sql:
            sql.run("INSERT INTO workspace_blobs (id, sha256, bytes, chars, lines, content,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (blob.id, blob.sha256, blob.size, blob.chars, blob.lines,
                     sql.dialect.utf8_in(blob.content), created_at.isoformat()))

    def link(
        self, artifact_id: str, *, session_id: int, call_id: str | None,
        tool_name: str | None, arguments: str | None, exit_code: int | None,
        is_error: bool, summary: Sequence[str], owner: str, created_at: datetime,
    ) -> Artifact:
        """Link a stored blob to one tool call of a session; return the artifact."""
        with self._db.write() as sql:
            if sql.one("SELECT 1 FROM sessions WHERE id = ?", (session_id,)) is None:
                raise UnknownSessionError(f"no session with id {session_id} in the store "
                                          f"{self._db.location}: create the session first")
            seq = sql.value(
                "INSERT INTO workspace_artifacts (artifact_id, session_id, call_id, tool_name,"
                " arguments, exit_code, is_error, summary, owner, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq",
                (artifact_id, session_id, call_id, tool_name, arguments, exit_code,
                 int(is_error), summary_json(summary), owner, created_at.isoformat()))
            found = sql.one(ARTIFACT_SELECT + " WHERE a.seq = ?", (seq,))
        assert found is not None
        return artifact_from_row(found)

    def set_summary(self, seq: int, summary: Sequence[str]) -> None:
        """Replace the summary of the link ``seq``."""
        with self._db.write() as sql:
            sql.run("UPDATE workspace_artifacts SET summary = ? WHERE seq = ?",
                    (summary_json(summary), seq))

    def file_ids(self) -> set[str]:
        """Ids of every blob whose content is kept outside its row."""
        with self._db.read() as sql:
            return {str(r[0]) for r in sql.all(
                "SELECT id FROM workspace_blobs WHERE content IS NULL")}

    def latest(self, artifact_id: str) -> Artifact | None:
        """The blob as linked to its latest call, or None."""
        with self._db.read() as sql:
            row = sql.one(ARTIFACT_SELECT + " WHERE b.id = ? ORDER BY a.seq DESC LIMIT 1",
                          (artifact_id,))
        return None if row is None else artifact_from_row(row)

    def calls(self, artifact_id: str) -> list[Artifact]:
        """Every link of the blob, oldest first."""
        with self._db.read() as sql:
            rows = sql.all(ARTIFACT_SELECT + " WHERE b.id = ? ORDER BY a.seq", (artifact_id,))
        return [artifact_from_row(r) for r in rows]

    def for_call(self, session_id: int, call_id: str) -> Artifact | None:
        """The latest link of the call ``call_id`` of the session, or None."""
        with self._db.read() as sql:
            row = sql.one(ARTIFACT_SELECT + " WHERE a.session_id = ? AND a.call_id = ?"
                          " ORDER BY a.seq DESC LIMIT 1", (session_id, call_id))
        return None if row is None else artifact_from_row(row)

    def for_calls(self, session_id: int, call_ids: Collection[str]) -> dict[str, Artifact]:
        """The latest link of each of the calls ``call_ids`` of the session, by call id.

        One statement for any number of calls (a window's tool results); a call with no
        link is left out.
        """
        if not call_ids:
            return {}
        with self._db.read() as sql:
            rows = sql.all(ARTIFACT_SELECT + " WHERE a.session_id = ? AND "
                           + sql.dialect.in_array("a.call_id") + " ORDER BY a.seq",
                           (session_id, sql.dialect.array(call_ids)))
        # In link order: a later link of a call replaces an earlier one.
        return {str(a.call_id): a for a in map(artifact_from_row, rows)}

    def for_session(self, session_id: int) -> list[Artifact]:
        """Every link of the session, oldest first."""
        with self._db.read() as sql:
            rows = sql.all(ARTIFACT_SELECT + " WHERE a.session_id = ? ORDER BY a.seq",
                           (session_id,))
        return [artifact_from_row(r) for r in rows]
