"""Stored embeddings and exact nearest-neighbour search, with sqlite-vec (:class:`VectorStore`).

The spaces and the list of refs with a vector are :class:`~memci.store._sql.SqlVectorStore`'s.
Here: a space's tables are sqlite-vec ``vec0`` tables, ``memory_vec_<space>_<kind>``: in
each, rowid = ref, the vector (float32, cosine distance) and ``session_id``, a metadata
column to filter by (0 when the thing has no session).

Invariants:

- a space's row and its ``vec0`` tables are created in one transaction (the one that
  stores its first vectors; the space is remembered once read back committed);
- search is exact: a KNN query (``embedding MATCH ? AND k = ?``) with the session and
  ref filters inside it (``vec0`` filters before it ranks, so the ``k`` nearest within the
  filter come back); past ``vec0``'s largest ``k`` (4096), a scan ordered by
  ``vec_distance_cosine``;
- the score is the cosine similarity, 1 − cosine distance (vectors are unit length); a
  zero vector has no direction: it is stored but never found, and a zero query finds
  nothing.

The ``vec0`` tables need sqlite-vec loaded into the store's connection
(:attr:`memci.store.sqlite._db.Database.sqlite_vec`): :class:`SQLiteVectorStore` raises
:class:`~memci.errors.MissingExtraError` when it is created without it.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Collection, Sequence
from typing import Any

from memci.store._sql import (
    KINDS,
    Sql,
    SqlVectorStore,
    forget_refs,
    spaces_holding,
    vector_table,
)
from memci.store.sqlite._db import Database
from memci.store.sqlite._driver import sqlite_vec_missing

__all__ = ["KINDS", "SQLiteVectorStore", "forget_vectors"]

_KNN_MAX = 4096  # the largest k sqlite-vec accepts in a KNN query


def _drop(sql: Sql, table: str, refs: list[int]) -> None:
    # One row at a time: vec0 finds a row by its rowid, not by a list.
    sql.many(f"DELETE FROM {table} WHERE rowid = ?", [(ref,) for ref in refs])


def forget_vectors(store: Database, sql: Sql, kind: str, refs: Collection[int]) -> None:
    """Forget the vectors of ``refs`` in every space (inside a write on ``store``).

    For things deleted at their source, whichever embedder embedded them. Raises
    :class:`~memci.errors.MissingExtraError` when some are stored and sqlite-vec cannot
    be loaded (they cannot be removed then).
    """
    if not refs:
        return
    spaces = spaces_holding(sql, kind, refs)
    if spaces and not store.sqlite_vec:
        raise sqlite_vec_missing("removing stored vectors")
    for space in spaces:
        _drop(sql, vector_table(space, kind), forget_refs(sql, space, kind, refs))


class SQLiteVectorStore(SqlVectorStore):
    """The vectors of one embedder (by name) in one SQLite store."""

    backend = "sqlite-vec"

    def __init__(self, store: Database, embedder: str) -> None:
        if not store.sqlite_vec:
            raise sqlite_vec_missing(f"dense retrieval with the embedder {embedder!r}")
        super().__init__(store.sql, embedder)

    def _space_for(self, sql: Sql, dim: int) -> tuple[int, int]:
        found = self._find(sql)
        if found is not None:
            return found
        space = int(sql.value("INSERT INTO memory_vector_spaces (embedder, dim, created)"
                              " VALUES (?, ?, ?) RETURNING id",
                              (self.embedder, dim, time.time())))
        for kind in KINDS:
            sql.run(f"CREATE VIRTUAL TABLE {vector_table(space, kind)} USING vec0("
                    f"embedding float[{int(dim)}] distance_metric=cosine, session_id integer)")
        # Not remembered yet: the transaction that creates the space may still roll back.
        return space, dim

    def _encode(self, vector: Sequence[float]) -> bytes:
        return array("f", vector).tobytes()

    def _insert(self, sql: Sql, table: str, rows: list[tuple[int, int, Sequence[float], Any]],
                ) -> None:
        sql.many(f"INSERT INTO {table} (rowid, embedding, session_id) VALUES (?, ?, ?)",
                 [(ref, packed, sid) for ref, sid, _, packed in rows])

    def _drop(self, sql: Sql, table: str, refs: list[int]) -> None:
        _drop(sql, table, refs)

    def search(
        self, kind: str, vector: Sequence[float], k: int, *,
        sessions: Collection[int] | None = None, refs: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest ``(ref, cosine)`` within ``sessions`` and ``refs``, best first."""
        if (k <= 0 or (sessions is not None and not sessions)
                or (refs is not None and not refs) or not any(vector)):
            return []
        d = self._db.dialect
        where, args = "", list[object]()
        if sessions is not None:
            where += f" AND {d.in_array('session_id')}"
            args.append(d.array(sorted({int(s) for s in sessions})))
        if refs is not None:
            where += f" AND {d.in_array('rowid')}"
            args.append(d.array(sorted({int(r) for r in refs})))
        query = self._encode(vector)
        with self._db.read() as sql:
            found = self._find(sql)
            if found is None:
                return []
            table = vector_table(found[0], kind)
            if k <= _KNN_MAX:
                rows = sql.all(f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ?"
                               f" AND k = ?{where}", (query, k, *args))
            else:
                rows = sql.all(
                    f"SELECT ref, distance FROM (SELECT rowid AS ref, vec_distance_cosine("
                    f"embedding, ?) AS distance FROM {table} WHERE 1 = 1{where})"
                    " WHERE distance IS NOT NULL ORDER BY distance, ref LIMIT ?",
                    (query, *args, k))
        return [(int(ref), 1.0 - float(distance)) for ref, distance in rows
                if distance is not None]
