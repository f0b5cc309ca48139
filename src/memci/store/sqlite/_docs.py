"""Indexed files' chunks in SQLite: their FTS5 keyword text and its BM25.

The file and chunk rows' statements are :class:`~memci.store._sql.SqlDocStore`'s. Here:
the derived FTS5 table ``doc_chunks_fts_<analyzer>`` (rowid = chunk id) keeps ``body``
(the chunk's text) and ``title`` (its title and symbol) with their copies, so a chunk's
row can be deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memci.store._sql import Sql, SqlDocStore
from memci.store.sqlite._db import Database
from memci.store.sqlite._fts import ensure_fts, fts_name
from memci.store.sqlite._vectors import forget_vectors

if TYPE_CHECKING:
    from memci.text import Analyzer

__all__ = ["SQLiteDocStore"]


class SQLiteDocStore(SqlDocStore):
    """The indexed files of one SQLite store, with the keyword text of one analyzer."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        super().__init__(store.sql, analyzer)
        self._store = store
        self.table = fts_name("doc_chunks_fts", analyzer)
        with self._db.write() as sql:
            if ensure_fts(sql.conn, "doc_chunks_fts", analyzer):
                for cid, file_id, title, text in sql.all(
                        "SELECT id, file_id, title, text FROM doc_chunks"):
                    self._index(sql, int(cid), int(file_id), title, text)

    def _index(self, sql: Sql, chunk_id: int, file_id: int, title: str, text: str) -> None:
        sql.run(f"INSERT INTO {self.table} (rowid, body, title) VALUES (?, ?, ?)",
                (chunk_id, self.analyzer.document(text), self.analyzer.document(title)))

    def _unindex(self, sql: Sql, chunk_ids: list[int]) -> None:
        sql.many(f"DELETE FROM {self.table} WHERE rowid = ?", [(i,) for i in chunk_ids])
        forget_vectors(self._store, sql, "chunk", chunk_ids)

    def _ranked(self, sql: Sql, match: str, where: str, args: list[Any], depth: int,
                ) -> list[int]:
        t = self.table
        return [int(r[0]) for r in sql.all(
            f"WITH r AS MATERIALIZED (SELECT rowid AS id, bm25({t}, 1.0, 2.0) AS s"
            f" FROM {t} WHERE {t} MATCH ?) SELECT c.id FROM r JOIN doc_chunks c"
            f" ON c.id = r.id WHERE 1{where} ORDER BY r.s, c.id LIMIT ?",
            (f"{{body title}} : ({match})", *args, depth))]
