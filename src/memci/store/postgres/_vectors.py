"""Stored embeddings and nearest-neighbour search with pgvector (:class:`VectorStore`).

One vector space per embedder name (``memory_vector_spaces``: name and dimension). A space
has one table per kind of thing embedded, ``memory_vec_<space>_<kind>`` (``message``,
``item``, ``chunk``): ``ref``, ``session_id`` (0 when the thing has none), ``embedding``
(a pgvector ``vector``) and ``zero`` (a vector with no direction); an HNSW index with
cosine distance serves searches (up to 2,000 dimensions, pgvector's bound for it).
``memory_vector_refs`` lists the refs that have a vector, as in the SQLite store.

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

from memci.errors import ConfigError, InvalidInputError, MissingExtraError, StoreError
from memci.store.postgres._db import Connection, Database

__all__ = ["KINDS", "PostgresVectorStore", "forget_vectors"]

KINDS: tuple[str, ...] = ("message", "item", "chunk")
_SOURCES = {"message": "memory_docs", "item": "memory_items", "chunk": "doc_chunks"}
_NO_SESSION = 0
_HNSW_MAX_DIM = 2000


def _table(space: int, kind: str) -> str:
    if kind not in KINDS:
        raise InvalidInputError(f"vector kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return f"memory_vec_{int(space)}_{kind}"


def _text(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _forget(db: Connection, space: int, kind: str, refs: Collection[int]) -> None:
    wanted = sorted({int(r) for r in refs})
    db.execute(f"DELETE FROM {_table(space, kind)} WHERE ref = ANY(%s)", (wanted,))
    db.execute("DELETE FROM memory_vector_refs WHERE space_id = %s AND kind = %s"
               " AND ref = ANY(%s)", (space, kind, wanted))


def forget_vectors(db: Connection, kind: str, refs: Collection[int]) -> None:
    """Forget the vectors of ``refs`` in every space (inside a write)."""
    if not refs:
        return
    spaces = [int(r[0]) for r in db.execute(
        "SELECT DISTINCT space_id FROM memory_vector_refs WHERE kind = %s AND ref = ANY(%s)",
        (kind, sorted({int(r) for r in refs}))).fetchall()]
    for space in spaces:
        _forget(db, space, kind, refs)


def _missing_pgvector(store: Database, embedder: str, why: str) -> MissingExtraError:
    return MissingExtraError(
        "postgres", "pgvector", f"dense retrieval with the embedder {embedder!r}",
        hint=f"the PostgreSQL database {store.location} {why}: install pgvector on the "
             "server (https://github.com/pgvector/pgvector) and run CREATE EXTENSION vector "
             "as a user allowed to, or use keyword retrieval only")


class PostgresVectorStore:
    """The vectors of one embedder (by name) in one PostgreSQL store."""

    backend = "pgvector"

    def __init__(self, store: Database, embedder: str) -> None:
        self._store = store
        self.embedder = embedder
        self._space: tuple[int, int] | None = None
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

    def _find(self, db: Connection) -> tuple[int, int] | None:
        if self._space is not None:
            return self._space
        row = db.execute("SELECT id, dim FROM memory_vector_spaces WHERE embedder = %s",
                         (self.embedder,)).fetchone()
        if row is None:
            return None
        self._space = (int(row[0]), int(row[1]))
        return self._space

    def _make(self, dim: int) -> tuple[int, int]:
        """Make this embedder's space of ``dim`` (once, whichever server asks first)."""
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
                table = _table(space, kind)
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

    def space(self) -> int | None:
        """The id of this embedder's vector space (None before its first vector)."""
        with self._store.read() as db:
            found = self._find(db)
        return found[0] if found is not None else None

    def add(
        self, kind: str, rows: Sequence[tuple[int, int | None]],
        vectors: Sequence[Sequence[float]],
    ) -> None:
        """Store ``vectors`` for ``rows`` of ``(ref, session_id)``; a ref's old one goes."""
        if not rows:
            return
        if len(rows) != len(vectors):
            raise InvalidInputError(f"{len(rows)} refs but {len(vectors)} vectors")
        _table(0, kind)
        with self._store.read() as db:
            found = self._find(db)
        space, dim = found if found is not None else self._make(len(vectors[0]))
        latest: dict[int, tuple[int, bool, str]] = {}
        for (ref, session_id), vector in zip(rows, vectors, strict=True):
            if len(vector) != dim:
                raise ConfigError(
                    f"the embedder {self.embedder!r} returned a vector of {len(vector)} "
                    f"numbers; its vector space holds {dim}: give a different model a "
                    "different name")
            latest[int(ref)] = (session_id or _NO_SESSION, not any(vector), _text(vector))
        with self._store.write() as db:
            _forget(db, space, kind, list(latest))
            with db.cursor() as cursor:
                cursor.executemany(
                    f"INSERT INTO {_table(space, kind)} (ref, session_id, zero, embedding)"
                    " VALUES (%s, %s, %s, %s::vector)",
                    [(ref, sid, zero, text) for ref, (sid, zero, text) in latest.items()])
                cursor.executemany(
                    "INSERT INTO memory_vector_refs (space_id, kind, ref) VALUES (%s, %s, %s)",
                    [(space, kind, ref) for ref in latest])

    def delete(self, kind: str, refs: Collection[int]) -> None:
        """Forget the vectors of ``refs``."""
        if not refs:
            return
        with self._store.write() as db:
            found = self._find(db)
            if found is not None:
                _forget(db, found[0], kind, refs)

    def missing(self, kind: str, limit: int) -> list[int]:
        """Up to ``limit`` refs of ``kind`` without a vector, oldest first."""
        source = _SOURCES[kind] if kind in _SOURCES else _table(0, kind)
        with self._store.read() as db:
            found = self._find(db)
            if found is None:
                rows = db.execute(f"SELECT id FROM {source} ORDER BY id LIMIT %s",
                                  (limit,)).fetchall()
            else:
                rows = db.execute(
                    f"SELECT t.id FROM {source} t WHERE NOT EXISTS (SELECT 1 FROM"
                    " memory_vector_refs v WHERE v.space_id = %s AND v.kind = %s"
                    " AND v.ref = t.id) ORDER BY t.id LIMIT %s",
                    (found[0], kind, limit)).fetchall()
        return [int(r[0]) for r in rows]

    def newest_ref(self, kind: str) -> int:
        """The largest ref of ``kind`` that has a vector (0 when none has)."""
        with self._store.read() as db:
            found = self._find(db)
            if found is None:
                return 0
            row = db.execute("SELECT MAX(ref) FROM memory_vector_refs WHERE space_id = %s"
                             " AND kind = %s", (found[0], kind)).fetchone()
        return int(row[0] or 0) if row else 0

    def count(self, kind: str) -> int:
        """How many refs of ``kind`` have a vector."""
        with self._store.read() as db:
            found = self._find(db)
            if found is None:
                return 0
            row = db.execute("SELECT COUNT(*) FROM memory_vector_refs WHERE space_id = %s"
                             " AND kind = %s", (found[0], kind)).fetchone()
        return int(row[0]) if row else 0

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
        with self._store.read() as db:
            found = self._find(db)
            if found is None:
                return []
            table = _table(found[0], kind)
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
