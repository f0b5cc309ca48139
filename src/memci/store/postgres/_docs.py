"""Indexed files' chunks in PostgreSQL: their keyword text and its BM25.

The file and chunk rows' statements are :class:`~memci.store._sql.SqlDocStore`'s. Here:
the derived keyword table ``doc_chunks_fts_<analyzer>`` (ref = chunk id,
:class:`KeywordTable`) keeps ``body`` (the chunk's text, weight A) and ``title`` (its
title and symbol, weight B), counted under the chunk's file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memci.store._sql import Sql, SqlDocStore
from memci.store.postgres._db import Connection, Database
from memci.store.postgres._keyword import KeywordTable
from memci.store.postgres._vectors import forget_vectors

if TYPE_CHECKING:
    from memci.text import Analyzer

__all__ = ["PostgresDocStore"]


class PostgresDocStore(SqlDocStore):
    """The indexed files of one PostgreSQL store, with the keyword text of one analyzer."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        super().__init__(store.sql, analyzer)
        self.table = KeywordTable(store, f"doc_chunks_fts_{analyzer.name}", analyzer,
                                  indexes="doc_chunks")

        def fill(db: Connection) -> None:
            for cid, file_id, title, text in db.execute(
                    "SELECT id, file_id, title, text FROM doc_chunks").fetchall():
                self._put(db, int(cid), int(file_id), title, text)

        self.table.make(fill)

    def _put(self, db: Connection, chunk_id: int, file_id: int, title: str, text: str) -> None:
        self.table.put(db, chunk_id, file_id, (text, title))

    def _index(self, sql: Sql, chunk_id: int, file_id: int, title: str, text: str) -> None:
        self._put(sql.conn, chunk_id, file_id, title, text)

    def _unindex(self, sql: Sql, chunk_ids: list[int]) -> None:
        self.table.delete(sql.conn, chunk_ids)
        forget_vectors(sql, "chunk", chunk_ids)

    def _ranked(self, sql: Sql, match: str, where: str, args: list[Any], depth: int,
                ) -> list[int]:
        return [ref for _, ref in self.table.rank(
            sql.conn, match, (1.0, 2.0), join=" JOIN doc_chunks c ON c.id = k.ref",
            where=sql.dialect.statement(where), args=args, limit=depth, prune=True)]
