"""Indexed files and their chunks in SQLite (:class:`~memci.store.DocStore`).

``doc_files`` and ``doc_chunks`` (migration series ``memory``); the derived FTS5 table
``doc_chunks_fts_<analyzer>`` (rowid = chunk id) keeps ``body`` (the chunk's text) and
``title`` (its title and symbol) with their copies, so a chunk's row can be deleted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from memci.store._docs import DocChunk, DocFile
from memci.store.sqlite._db import Database
from memci.store.sqlite._fts import ensure_fts, fts_name
from memci.store.sqlite._migrations_memory import MEMORY_MIGRATIONS
from memci.store.sqlite._vectors import forget_vectors

if TYPE_CHECKING:
    from memci.text import Analyzer, Chunk, MatchQuery

__all__ = ["SQLiteDocStore"]

_FILE = "SELECT id, path, kind, mtime_ns, size, sha256 FROM doc_files"


def _file(row: Sequence[Any]) -> DocFile:
    return DocFile(id=int(row[0]), path=str(row[1]), kind=str(row[2]), mtime_ns=int(row[3]),
                   size=int(row[4]), sha256=str(row[5]))


def _kind(kind: str | None) -> tuple[str, list[Any]]:
    if kind == "doc":
        return " AND c.kind IN ('markdown', 'text')", []
    if kind is not None:
        return " AND c.kind = ?", [kind]
    return "", []


class SQLiteDocStore:
    """The indexed files of one SQLite store, with the keyword text of one analyzer."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        store.migrate("memory", MEMORY_MIGRATIONS)
        self._store = store
        self.analyzer = analyzer
        self.table = fts_name("doc_chunks_fts", analyzer)
        with store.write() as db:
            if ensure_fts(db, "doc_chunks_fts", analyzer):
                for cid, title, text in db.execute(
                        "SELECT id, title, text FROM doc_chunks").fetchall():
                    self._add_fts(db, int(cid), title, text)

    def _add_fts(self, db: sqlite3.Connection, chunk_id: int, title: str, text: str) -> None:
        db.execute(f"INSERT INTO {self.table} (rowid, body, title) VALUES (?, ?, ?)",
                   (chunk_id, self.analyzer.document(text), self.analyzer.document(title)))

    def _delete_chunks(self, db: sqlite3.Connection, file_id: int) -> None:
        ids = [int(r[0]) for r in db.execute("SELECT id FROM doc_chunks WHERE file_id = ?",
                                             (file_id,))]
        db.executemany(f"DELETE FROM {self.table} WHERE rowid = ?", [(i,) for i in ids])
        forget_vectors(self._store, db, "chunk", ids)
        db.execute("DELETE FROM doc_chunks WHERE file_id = ?", (file_id,))

    # -- writing -------------------------------------------------------------------------

    def file(self, path: str) -> DocFile | None:
        """The indexed file at ``path``, or None."""
        with self._store.read() as db:
            row = db.execute(_FILE + " WHERE path = ?", (path,)).fetchone()
        return None if row is None else _file(row)

    def touch(self, file_id: int, *, mtime_ns: int, size: int) -> None:
        """Record a new modification time and size of a file whose content is unchanged."""
        with self._store.write() as db:
            db.execute("UPDATE doc_files SET mtime_ns = ?, size = ? WHERE id = ?",
                       (mtime_ns, size, file_id))

    def put_file(
        self, path: str, *, kind: str, mtime_ns: int, size: int, sha256: str,
        chunks: Sequence[Chunk], indexed: float,
    ) -> int:
        """Store the file at ``path`` with ``chunks`` in place of what it had; its id."""
        with self._store.write() as db:
            row = db.execute("SELECT id FROM doc_files WHERE path = ?", (path,)).fetchone()
            if row is not None:
                file_id = int(row[0])
                self._delete_chunks(db, file_id)
                db.execute("UPDATE doc_files SET kind = ?, mtime_ns = ?, size = ?, sha256 = ?,"
                           " indexed = ? WHERE id = ?",
                           (kind, mtime_ns, size, sha256, indexed, file_id))
            else:
                cursor = db.execute(
                    "INSERT INTO doc_files (path, kind, mtime_ns, size, sha256, indexed)"
                    " VALUES (?, ?, ?, ?, ?, ?)", (path, kind, mtime_ns, size, sha256, indexed),
                )
                file_id = int(cursor.lastrowid or 0)
            for ordinal, chunk in enumerate(chunks):
                cursor = db.execute(
                    "INSERT INTO doc_chunks (file_id, ordinal, kind, title, symbol, start_line,"
                    " end_line, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (file_id, ordinal, chunk.kind, chunk.title, chunk.symbol, chunk.start_line,
                     chunk.end_line, chunk.text),
                )
                self._add_fts(db, int(cursor.lastrowid or 0),
                              f"{chunk.title} {chunk.symbol or ''}".strip(), chunk.text)
        return file_id

    def files_under(self, path: str, prefix: str) -> list[DocFile]:
        """Files at ``path`` or whose path starts with ``prefix``."""
        with self._store.read() as db:
            rows = db.execute(_FILE + " WHERE path = ? OR substr(path, 1, ?) = ?",
                              (path, len(prefix), prefix)).fetchall()
        return [_file(r) for r in rows]

    def remove(self, file_ids: Collection[int]) -> None:
        """Forget the files, their chunks, keyword text and vectors."""
        with self._store.write() as db:
            for file_id in file_ids:
                self._delete_chunks(db, file_id)
                db.execute("DELETE FROM doc_files WHERE id = ?", (file_id,))

    # -- reading -------------------------------------------------------------------------

    def chunks(self, chunk_ids: Sequence[int]) -> list[DocChunk]:
        """The chunks still stored, in the order asked."""
        out: list[DocChunk] = []
        with self._store.read() as db:
            for chunk_id in chunk_ids:
                row = db.execute(
                    "SELECT c.id, f.path, c.start_line, c.end_line, c.title, c.symbol, c.kind,"
                    " c.text FROM doc_chunks c JOIN doc_files f ON f.id = c.file_id"
                    " WHERE c.id = ?", (chunk_id,)).fetchone()
                if row is not None:
                    out.append(DocChunk(int(row[0]), str(row[1]), int(row[2]), int(row[3]),
                                        row[4], row[5], row[6], row[7]))
        return out

    def keyword(self, plan: MatchQuery, *, kind: str | None, depth: int) -> list[int]:
        """Up to ``depth`` chunk ids matching ``plan`` (BM25; then its short terms)."""
        where, args = _kind(kind)
        t = self.table
        found: list[int] = []
        with self._store.read() as db:
            if plan.match is not None:
                found = [int(r[0]) for r in db.execute(
                    f"WITH r AS MATERIALIZED (SELECT rowid AS id, bm25({t}, 1.0, 2.0) AS s"
                    f" FROM {t} WHERE {t} MATCH ?) SELECT c.id FROM r JOIN doc_chunks c"
                    f" ON c.id = r.id WHERE 1{where} ORDER BY r.s, c.id LIMIT ?",
                    (f"{{body title}} : ({plan.match})", *args, depth))]
            if plan.short_terms:
                likes = " OR ".join("instr(lower(c.text), ?) > 0" for _ in plan.short_terms)
                extra = [int(r[0]) for r in db.execute(
                    f"SELECT c.id FROM doc_chunks c WHERE ({likes}){where} LIMIT ?",
                    (*[s.lower() for s in plan.short_terms], *args, depth))]
                found = list(dict.fromkeys([*found, *extra]))
        return found

    def of_kind(self, kind: str) -> list[int]:
        """Ids of every chunk of ``kind``."""
        where, args = _kind(kind)
        with self._store.read() as db:
            return [int(r[0]) for r in db.execute(
                f"SELECT c.id FROM doc_chunks c WHERE 1 = 1{where}", args)]

    def paths(self) -> list[str]:
        """Paths of every indexed file, sorted."""
        with self._store.read() as db:
            return [str(r[0]) for r in db.execute("SELECT path FROM doc_files ORDER BY path")]
