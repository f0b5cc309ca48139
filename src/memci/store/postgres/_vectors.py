"""Stored embeddings and nearest-neighbour search with pgvector (:class:`VectorStore`).

The spaces and the list of refs with a vector are :class:`~memci.store._sql.SqlVectorStore`'s.
Here: a space has one table per kind of thing embedded, ``memory_vec_<space>_<kind>``:
``ref``, ``session_id`` (0 when the thing has none), ``embedding`` (a pgvector
``vector``) and ``zero`` (a vector with no direction); an HNSW index with cosine
distance serves searches (up to 2,000 dimensions, pgvector's bound for it).

Invariants:

- a space's row and its tables are made in one transaction under the migration lock,
  so two servers embedding at once make one space;
- a ref is in ``memory_vector_refs`` exactly when its table has a row for it;
- search returns the ``k`` nearest within the session and ref filters: a filtered
  search reads the table in order of distance (pgvector's iterative index scan, strict
  order, else an exact scan), so filtering never leaves fewer than ``k`` found;
- the score is the cosine similarity, 1 − cosine distance; a zero vector is stored but
  never found, and a zero query finds nothing.

The database needs the ``vector`` extension (pgvector): it is created when missing
(which needs the right to); without it :class:`PostgresVectorStore` raises
:class:`~memci.errors.MissingExtraError` saying what to install.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from typing import Any

from memci.errors import MissingExtraError, StoreError
from memci.store._sql import (
    KINDS,
    Sql,
    SqlVectorStore,
    forget_refs,
    spaces_holding,
    vector_table,
)
from memci.store.postgres._db import Connection, Database

__all__ = ["KINDS", "PostgresVectorStore", "forget_vectors"]

_HNSW_MAX_DIM = 2000


def _text(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _drop(sql: Sql, table: str, refs: list[int]) -> None:
    sql.run(f"DELETE FROM {table} WHERE ref = ANY(?)", (refs,))


def forget_vectors(sql: Sql, kind: str, refs: Collection[int]) -> None:
    """Forget the vectors of ``refs`` in every space (inside a write)."""
    if not refs:
        return
    for space in spaces_holding(sql, kind, refs):
        _drop(sql, vector_table(space, kind), forget_refs(sql, space, kind, refs))


def _missing_pgvector(store: Database, embedder: str, why: str) -> MissingExtraError:
    return MissingExtraError(
        "postgres", "pgvector", f"dense retrieval with the embedder {embedder!r}",
        hint=f"the PostgreSQL database {store.location} {why}: install pgvector on the "
             "server (https://github.com/pgvector/pgvector) and run CREATE EXTENSION vector "
             "as a user allowed to, or use keyword retrieval only")


class PostgresVectorStore(SqlVectorStore):
    """The vectors of one embedder (by name) in one PostgreSQL store."""

    backend = "pgvector"

    def __init__(self, store: Database, embedder: str) -> None:
        super().__init__(store.sql, embedder)
        self._store = store
        self._iterative_scan: bool | None = None
        with store.read() as db:
            row = db.execute("SELECT"
                             " EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector'),"
                             " EXISTS (SELECT 1 FROM pg_available_extensions"
                             " WHERE name = 'vector')").fetchone()
        installed, available = (bool(row[0]), bool(row[1])) if row else (False, False)
        if not installed:
            if not available:
                raise _missing_pgvector(store, embedder, "has no pgvector extension")
            try:
                store.locked("create the vector extension in",
                             lambda db: db.execute("CREATE EXTENSION IF NOT EXISTS vector"))
            except StoreError as exc:  # e.g. no right to: say what to install or ask for
                raise _missing_pgvector(
                    store, embedder, f"has pgvector but cannot create it ({exc})") from exc

    def _iterative(self, db: Connection) -> bool:
        """Whether pgvector has iterative index scans (0.8 and later)."""
        if self._iterative_scan is None:
            row = db.execute("SELECT string_to_array(extversion, '.')::int[] >= '{0,8}'"
                             " FROM pg_extension WHERE extname = 'vector'").fetchone()
            self._iterative_scan = bool(row and row[0])
        return self._iterative_scan

    def _space_for(self, sql: Sql, dim: int) -> tuple[int, int]:
        found = self._find(sql)
        return found if found is not None else self._make(dim)

    def _make(self, dim: int) -> tuple[int, int]:
        """Make this embedder's space of ``dim`` (once, whichever server asks first).

        In a transaction of its own, under the migration lock: two servers embedding at
        once make one space.
        """
        found: list[tuple[int, int]] = []

        def make(db: Connection) -> None:
            row = db.execute("SELECT id, dim FROM memory_vector_spaces WHERE embedder = %s",
                             (self.embedder,)).fetchone()
            if row is not None:
                found.append((int(row[0]), int(row[1])))
                return
            made = db.execute("INSERT INTO memory_vector_spaces (embedder, dim, created)"
                              " VALUES (%s, %s, %s) RETURNING id",
                              (self.embedder, dim, time.time())).fetchone()
            assert made is not None
            space = int(made[0])
            for kind in KINDS:
                table = vector_table(space, kind)
                db.execute(f"CREATE TABLE {table} (ref bigint PRIMARY KEY, session_id bigint"
                           f" NOT NULL, zero boolean NOT NULL, embedding vector({int(dim)})"
                           " NOT NULL)")
                db.execute(f"CREATE INDEX {table}_session ON {table} (session_id)")
                if dim <= _HNSW_MAX_DIM:
                    db.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw"
                               " (embedding vector_cosine_ops)")
            found.append((space, dim))

        self._store.locked(f"make the vector space of {self.embedder!r} in", make)
        self._space = found[0]
        return self._space

    def _encode(self, vector: Sequence[float]) -> str:
        return _text(vector)

    def _insert(self, sql: Sql, table: str, rows: list[tuple[int, int, Sequence[float], Any]],
                ) -> None:
        sql.many(f"INSERT INTO {table} (ref, session_id, zero, embedding)"
                 " VALUES (?, ?, ?, ?::vector)",
                 [(ref, sid, not any(vector), text) for ref, sid, vector, text in rows])

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
        where, args = "", list[Any]()
        if sessions is not None:
            where += " AND session_id = ANY(%s)"
            args.append(sorted({int(s) for s in sessions}))
        if refs is not None:
            where += " AND ref = ANY(%s)"
            args.append(sorted({int(r) for r in refs}))
        with self._db.read() as sql:
            found = self._find(sql)
            if found is None:
                return []
            db: Connection = sql.conn
            table = vector_table(found[0], kind)
            query = _text(vector)
            with db.transaction():
                # The index filters after it picks candidates: read on in order of distance
                # until k pass the filters (pgvector 0.8's iterative scan), else scan exactly.
                if self._iterative(db):
                    db.execute("SET LOCAL hnsw.iterative_scan = strict_order")
                elif where:
                    db.execute("SET LOCAL enable_indexscan = off")
                db.execute(f"SET LOCAL hnsw.ef_search = {max(40, min(int(k), 1000))}")
                rows = db.execute(
                    f"SELECT ref, embedding <=> %s::vector AS distance FROM {table}"
                    f" WHERE NOT zero{where} ORDER BY embedding <=> %s::vector LIMIT %s",
                    (query, *args, query, k)).fetchall()
        rows.sort(key=lambda r: (float(r[1]), int(r[0])))
        return [(int(ref), 1.0 - float(distance)) for ref, distance in rows]
