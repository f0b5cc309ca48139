"""Indexed files and their chunks in PostgreSQL (:class:`~memci.store.DocStore`).

``doc_files`` and ``doc_chunks`` (migration series ``memory``); the derived keyword table
``doc_chunks_fts_<analyzer>`` (ref = chunk id, :class:`KeywordTable`) keeps ``body`` (the
chunk's text, weight A) and ``title`` (its title and symbol, weight B). A file's chunks,
their keyword rows and vectors are replaced in one transaction.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from memci.store._docs import DocChunk, DocFile
from memci.store.postgres._db import Connection, Database
from memci.store.postgres._keyword import KeywordTable
from memci.store.postgres._vectors import forget_vectors

if TYPE_CHECKING:
    from memci.text import Analyzer, Chunk, MatchQuery

__all__ = ["PostgresDocStore"]

_FILE = "SELECT id, path, kind, mtime_ns, size, sha256 FROM doc_files"


def _file(row: Sequence[Any]) -> DocFile:
    return DocFile(id=int(row[0]), path=str(row[1]), kind=str(row[2]), mtime_ns=int(row[3]),
                   size=int(row[4]), sha256=str(row[5]))


def _kind(kind: str | None) -> tuple[str, list[Any]]:
    if kind == "doc":
        return " AND c.kind IN ('markdown', 'text')", []
    if kind is not None:
        return " AND c.kind = %s", [kind]
    return "", []


class PostgresDocStore:
    """The indexed files of one PostgreSQL store, with the keyword text of one analyzer."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        self._store = store
        self.analyzer = analyzer
        self.table = KeywordTable(store, f"doc_chunks_fts_{analyzer.name}", analyzer.tokenize)

        def fill(db: Connection) -> None:
            for cid, file_id, title, text in db.execute(
                    "SELECT id, file_id, title, text FROM doc_chunks").fetchall():
                self._put(db, int(cid), int(file_id), title, text)

        store.derive(self.table.name, self.table.statements(), fill)

    def _put(self, db: Connection, chunk_id: int, file_id: int, title: str, text: str) -> None:
        a = self.analyzer
        self.table.put(db, chunk_id, file_id, (a.document(text), a.document(title)))

    def _delete_chunks(self, db: Connection, file_id: int) -> None:
        ids = [int(r[0]) for r in db.execute("SELECT id FROM doc_chunks WHERE file_id = %s",
                                             (file_id,)).fetchall()]
        self.table.delete(db, ids)
        forget_vectors(db, "chunk", ids)
        db.execute("DELETE FROM doc_chunks WHERE file_id = %s", (file_id,))

    # -- writing -------------------------------------------------------------------------

    def file(self, path: str) -> DocFile | None:
        """The indexed file at ``path``, or None."""
        with self._store.read() as db:
            row = db.execute(_FILE + " WHERE path = %s", (path,)).fetchone()
        return None if row is None else _file(row)

    def touch(self, file_id: int, *, mtime_ns: int, size: int) -> None:
        """Record a new modification time and size of a file whose content is unchanged."""
        with self._store.write() as db:
            db.execute("UPDATE doc_files SET mtime_ns = %s, size = %s WHERE id = %s",
                       (mtime_ns, size, file_id))

    def put_file(
        self, path: str, *, kind: str, mtime_ns: int, size: int, sha256: str,
        chunks: Sequence[Chunk], indexed: float,
    ) -> int:
        """Store the file at ``path`` with ``chunks`` in place of what it had; its id."""
        with self._store.write() as db:
            # Two servers indexing one path at once: the second waits, then replaces.
            row = db.execute(
                "INSERT INTO doc_files (path, kind, mtime_ns, size, sha256, indexed)"
                " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (path) DO UPDATE SET"
                " kind = EXCLUDED.kind, mtime_ns = EXCLUDED.mtime_ns, size = EXCLUDED.size,"
                " sha256 = EXCLUDED.sha256, indexed = EXCLUDED.indexed RETURNING id",
                (path, kind, mtime_ns, size, sha256, indexed)).fetchone()
            assert row is not None
            file_id = int(row[0])
            self._delete_chunks(db, file_id)
            for ordinal, chunk in enumerate(chunks):
                made = db.execute(
                    "INSERT INTO doc_chunks (file_id, ordinal, kind, title, symbol, start_line,"
                    " end_line, text) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                    (file_id, ordinal, chunk.kind, chunk.title, chunk.symbol, chunk.start_line,
                     chunk.end_line, chunk.text)).fetchone()
                assert made is not None
                self._put(db, int(made[0]), file_id,
                          f"{chunk.title} {chunk.symbol or ''}".strip(), chunk.text)
        return file_id

    def files_under(self, path: str, prefix: str) -> list[DocFile]:
        """Files at ``path`` or whose path starts with ``prefix``."""
        with self._store.read() as db:
            rows = db.execute(_FILE + " WHERE path = %s OR starts_with(path, %s)",
                              (path, prefix)).fetchall()
        return [_file(r) for r in rows]

    def remove(self, file_ids: Collection[int]) -> None:
        """Forget the files, their chunks, keyword text and vectors."""
        with self._store.write() as db:
            for file_id in file_ids:
                self._delete_chunks(db, file_id)
                db.execute("DELETE FROM doc_files WHERE id = %s", (file_id,))

    # -- reading -------------------------------------------------------------------------

    def chunks(self, chunk_ids: Sequence[int]) -> list[DocChunk]:
        """The chunks still stored, in the order asked."""
        with self._store.read() as db:
            rows = db.execute(
                "SELECT c.id, f.path, c.start_line, c.end_line, c.title, c.symbol, c.kind,"
                " c.text FROM doc_chunks c JOIN doc_files f ON f.id = c.file_id"
                " WHERE c.id = ANY(%s)", ([int(i) for i in chunk_ids],)).fetchall()
        found = {int(r[0]): DocChunk(int(r[0]), str(r[1]), int(r[2]), int(r[3]), r[4], r[5],
                                     r[6], r[7]) for r in rows}
        return [found[i] for i in chunk_ids if i in found]

    def keyword(self, plan: MatchQuery, *, kind: str | None, depth: int) -> list[int]:
        """Up to ``depth`` chunk ids matching ``plan`` (BM25; then its short terms)."""
        where, args = _kind(kind)
        found: list[int] = []
        with self._store.snapshot() as db:
            if plan.match is not None:
                found = [ref for _, ref in self.table.rank(
                    db, plan.match, (1.0, 2.0), join=" JOIN doc_chunks c ON c.id = k.ref",
                    where=where, args=args, limit=depth)]
            if plan.short_terms:
                likes = " OR ".join("strpos(lower(c.text), %s) > 0" for _ in plan.short_terms)
                extra = [int(r[0]) for r in db.execute(
                    f"SELECT c.id FROM doc_chunks c WHERE ({likes}){where} ORDER BY c.id LIMIT %s",
                    (*[s.lower() for s in plan.short_terms], *args, depth)).fetchall()]
                found = list(dict.fromkeys([*found, *extra]))
        return found

    def of_kind(self, kind: str) -> list[int]:
        """Ids of every chunk of ``kind``."""
        where, args = _kind(kind)
        with self._store.read() as db:
            return [int(r[0]) for r in db.execute(
                f"SELECT c.id FROM doc_chunks c WHERE true{where} ORDER BY c.id", args).fetchall()]

    def paths(self) -> list[str]:
        """Paths of every indexed file, sorted."""
        with self._store.read() as db:
            return [str(r[0]) for r in db.execute(
                "SELECT path FROM doc_files ORDER BY path").fetchall()]
