"""Indexed files' chunks in SQLite: their FTS5 keyword text and its BM25.

The file and chunk rows' statements are :class:`~memci.store._sql.SqlDocStore`'s. Here:
the derived FTS5 table ``doc_chunks_fts_<analyzer>`` (rowid = chunk id) keeps ``body``
(the chunk's text) and ``title`` (its title and symbol) with their copies, so a chunk's
row can be deleted.

The table is made when the first file is indexed, or when it is searched while chunks
are stored (filled from them): a store without documents never makes it, and a search of
one (a build whose question consults documents) is one read that finds no chunk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memci.store._sql import Sql, SqlDocStore
from memci.store.sqlite._db import Database
from memci.store.sqlite._fts import ensure_fts, fts_name, needs_remaking
from memci.store.sqlite._vectors import forget_vectors

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["SQLiteDocStore"]


class SQLiteDocStore(SqlDocStore):
    """The indexed files of one SQLite store, with the keyword text of one analyzer."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        super().__init__(store.sql, analyzer)
        self._store = store
        self.table = fts_name("doc_chunks_fts", analyzer)
        self._made = False  # the table is made and filled (and committed)

    def _needed(self) -> bool:
        """Whether a search has chunks to find: the table made (and filled) if it must be.

        One read when the table is there, or when neither it nor a chunk is (nothing made).
        """
        if self._made:
            return True
        with self._store.read() as db:
            found, chunks = db.execute(
                "SELECT (SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?),"
                " EXISTS (SELECT 1 FROM doc_chunks)", (self.table,)).fetchone()
        if found is None and not chunks:
            return False
        if found is not None and not needs_remaking(str(found)):
            self._made = True
            return True
        self._prepare_write()
        return True

    def _prepare_write(self) -> None:
        """Make the table (filled from the chunks stored) unless it is made."""
        if self._made:
            return
        with self._db.write() as sql:
            if ensure_fts(sql.conn, "doc_chunks_fts", self.analyzer):
                for cid, file_id, title, text in sql.all(
                        "SELECT id, file_id, title, text FROM doc_chunks"):
                    self._index(sql, int(cid), int(file_id), title, text)
        with self._store.read() as db:
            # Inside another write it is made only if that one commits: checked again.
            self._made = not db.in_transaction

    def keyword(self, plan: MatchQuery, *, kind: str | None, depth: int) -> list[int]:
        """:meth:`SqlDocStore.keyword`; nothing to search (no statement) without chunks."""
        return super().keyword(plan, kind=kind, depth=depth) if self._needed() else []

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
