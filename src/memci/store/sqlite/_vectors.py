"""Stored embeddings and exact nearest-neighbour search, with sqlite-vec (:class:`VectorStore`).

One vector space per embedder name (``memory_vector_spaces``: name and dimension). A space
has one sqlite-vec ``vec0`` table per kind of thing embedded, ``memory_vec_<space>_<kind>``:
``message`` (ref = ``memory_docs`` id), ``item`` (ref = ``memory_items`` id) and ``chunk``
(ref = ``doc_chunks`` id). In it, rowid = ref, the vector (float32, cosine distance) and
``session_id``, a metadata column to filter by (0 when the thing has no session).
``memory_vector_refs`` lists the refs that have a vector, so that counting, finding the
newest and finding the missing ones are index lookups, never scans of a ``vec0`` table.

Invariants:

- a space's row and its ``vec0`` tables are created in one transaction; a ref is in
  ``memory_vector_refs`` exactly when its ``vec0`` table has a row for it (both are
  written in one transaction, or in the caller's ``atomic()`` block);
- search is exact: a KNN query (``embedding MATCH ? AND k = ?``) with the session and
  ref filters inside it (``vec0`` filters before it ranks, so the ``k`` nearest within the
  filter come back); past ``vec0``'s largest ``k`` (4096), a scan ordered by
  ``vec_distance_cosine``;
- the score is the cosine similarity, 1 − cosine distance (vectors are unit length); a
  zero vector has no direction: it is stored but never found, and a zero query finds
  nothing.

The ``vec0`` tables need sqlite-vec loaded into the store's connection
(:attr:`memci.store.Database.sqlite_vec`): :class:`SQLiteVectorStore` raises
:class:`~memci.errors.MissingExtraError` when it is created without it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from array import array
from collections.abc import Collection, Sequence

from memci.errors import ConfigError, InvalidInputError
from memci.store.sqlite._db import Database
from memci.store.sqlite._driver import sqlite_vec_missing
from memci.store.sqlite._migrations_memory import MEMORY_MIGRATIONS

__all__ = ["KINDS", "SQLiteVectorStore", "forget_vectors"]

KINDS: tuple[str, ...] = ("message", "item", "chunk")
# The table each kind's refs are ids of (what "missing" vectors are missing from).
_SOURCES = {"message": "memory_docs", "item": "memory_items", "chunk": "doc_chunks"}

_KNN_MAX = 4096  # the largest k sqlite-vec accepts in a KNN query
_NO_SESSION = 0  # vec0 metadata columns hold no NULL; session ids start at 1


def _table(space: int, kind: str) -> str:
    if kind not in KINDS:
        raise InvalidInputError(f"vector kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return f"memory_vec_{int(space)}_{kind}"


def _pack(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def _ids(values: Collection[int]) -> str:
    """``values`` as one JSON parameter, read with ``json_each`` (no limit on how many)."""
    return json.dumps(sorted({int(v) for v in values}))


def _forget(db: sqlite3.Connection, space: int, kind: str, refs: Collection[int]) -> None:
    stored = [int(r[0]) for r in db.execute(
        "SELECT ref FROM memory_vector_refs WHERE space_id = ? AND kind = ?"
        " AND ref IN (SELECT value FROM json_each(?))", (space, kind, _ids(refs)))]
    if not stored:
        return
    db.executemany(f"DELETE FROM {_table(space, kind)} WHERE rowid = ?",
                   [(ref,) for ref in stored])
    db.executemany("DELETE FROM memory_vector_refs WHERE space_id = ? AND kind = ?"
                   " AND ref = ?", [(space, kind, ref) for ref in stored])


def forget_vectors(
    store: Database, db: sqlite3.Connection, kind: str, refs: Collection[int]
) -> None:
    """Forget the vectors of ``refs`` in every space (inside a write on ``store``).

    For things deleted at their source, whichever embedder embedded them. Raises
    :class:`~memci.errors.MissingExtraError` when some are stored and sqlite-vec cannot
    be loaded (they cannot be removed then).
    """
    if not refs:
        return
    spaces = [int(r[0]) for r in db.execute(
        "SELECT DISTINCT space_id FROM memory_vector_refs WHERE kind = ?"
        " AND ref IN (SELECT value FROM json_each(?))", (kind, _ids(refs)))]
    if spaces and not store.sqlite_vec:
        raise sqlite_vec_missing("removing stored vectors")
    for space in spaces:
        _forget(db, space, kind, refs)


class SQLiteVectorStore:
    """The vectors of one embedder (by name) in one SQLite store."""

    backend = "sqlite-vec"

    def __init__(self, store: Database, embedder: str) -> None:
        if not store.sqlite_vec:
            raise sqlite_vec_missing(f"dense retrieval with the embedder {embedder!r}")
        store.migrate("memory", MEMORY_MIGRATIONS)
        self._store = store
        self.embedder = embedder
        self._space: tuple[int, int] | None = None  # (id, dim), once seen committed

    def _find(self, db: sqlite3.Connection, dim: int | None = None) -> tuple[int, int] | None:
        """Return ``(id, dim)`` of this embedder's space; create it when ``dim`` is given."""
        if self._space is not None:
            return self._space
        row = db.execute("SELECT id, dim FROM memory_vector_spaces WHERE embedder = ?",
                         (self.embedder,)).fetchone()
        if row is not None:
            self._space = (int(row[0]), int(row[1]))
            return self._space
        if dim is None:
            return None
        cursor = db.execute("INSERT INTO memory_vector_spaces (embedder, dim, created)"
                            " VALUES (?, ?, ?)", (self.embedder, dim, time.time()))
        space = int(cursor.lastrowid or 0)
        for kind in KINDS:
            db.execute(f"CREATE VIRTUAL TABLE {_table(space, kind)} USING vec0("
                       f"embedding float[{int(dim)}] distance_metric=cosine,"
                       " session_id integer)")
        # Not cached yet: the transaction that creates the space may still roll back.
        return space, dim

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
        with self._store.write() as db:
            found = self._find(db, len(vectors[0]))
            assert found is not None
            space, dim = found
            latest: dict[int, tuple[int, bytes]] = {}
            for (ref, session_id), vector in zip(rows, vectors, strict=True):
                if len(vector) != dim:
                    raise ConfigError(
                        f"the embedder {self.embedder!r} returned a vector of {len(vector)} "
                        f"numbers; its vector space holds {dim}: give a different model a "
                        "different name"
                    )
                latest[int(ref)] = (session_id or _NO_SESSION, _pack(vector))
            _forget(db, space, kind, list(latest))
            db.executemany(
                f"INSERT INTO {_table(space, kind)} (rowid, embedding, session_id)"
                " VALUES (?, ?, ?)", [(ref, vec, sid) for ref, (sid, vec) in latest.items()],
            )
            db.executemany("INSERT INTO memory_vector_refs (space_id, kind, ref)"
                           " VALUES (?, ?, ?)", [(space, kind, ref) for ref in latest])

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
                rows = db.execute(f"SELECT id FROM {source} ORDER BY id LIMIT ?", (limit,))
            else:
                rows = db.execute(
                    f"SELECT t.id FROM {source} t WHERE NOT EXISTS (SELECT 1 FROM"
                    " memory_vector_refs v WHERE v.space_id = ? AND v.kind = ?"
                    " AND v.ref = t.id) ORDER BY t.id LIMIT ?", (found[0], kind, limit),
                )
            return [int(r[0]) for r in rows]

    def newest_ref(self, kind: str) -> int:
        """The largest ref of ``kind`` that has a vector (0 when none has)."""
        with self._store.read() as db:
            found = self._find(db)
            if found is None:
                return 0
            row = db.execute("SELECT MAX(ref) FROM memory_vector_refs WHERE space_id = ?"
                             " AND kind = ?", (found[0], kind)).fetchone()
        return int(row[0] or 0)

    def count(self, kind: str) -> int:
        """How many refs of ``kind`` have a vector."""
        with self._store.read() as db:
            found = self._find(db)
            if found is None:
                return 0
            return int(db.execute("SELECT COUNT(*) FROM memory_vector_refs WHERE space_id = ?"
                                  " AND kind = ?", (found[0], kind)).fetchone()[0])

    def search(
        self, kind: str, vector: Sequence[float], k: int, *,
        sessions: Collection[int] | None = None, refs: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest ``(ref, cosine)`` within ``sessions`` and ``refs``, best first."""
        if (k <= 0 or (sessions is not None and not sessions)
                or (refs is not None and not refs) or not any(vector)):
            return []
        where, args = "", list[object]()
        if sessions is not None:
            where += " AND session_id IN (SELECT value FROM json_each(?))"
            args.append(_ids(sessions))
        if refs is not None:
            where += " AND rowid IN (SELECT value FROM json_each(?))"
            args.append(_ids(refs))
        query = _pack(vector)
        with self._store.read() as db:
            found = self._find(db)
            if found is None:
                return []
            table = _table(found[0], kind)
            if k <= _KNN_MAX:
                rows = db.execute(
                    f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ?"
                    f"{where}", (query, k, *args),
                ).fetchall()
            else:
                rows = db.execute(
                    f"SELECT ref, distance FROM (SELECT rowid AS ref, vec_distance_cosine("
                    f"embedding, ?) AS distance FROM {table} WHERE 1 = 1{where})"
                    " WHERE distance IS NOT NULL ORDER BY distance, ref LIMIT ?",
                    (query, *args, k),
                ).fetchall()
        return [(int(ref), 1.0 - float(distance)) for ref, distance in rows
                if distance is not None]
