"""Stored embeddings and nearest-neighbour search over them.

Vectors live in ``memory_vectors`` as float32 BLOBs, one vector space per embedder name
(``memory_vector_spaces``), for three kinds of things: ``message`` (ref = ``memory_docs``
id), ``item`` (ref = ``memory_items`` id) and ``chunk`` (ref = ``doc_chunks`` id). Search is
exact (brute-force cosine on unit vectors) over an in-memory matrix that is refreshed when
the table changes: numpy when it is installed (it comes with ``memci[embeddings]``), plain
Python otherwise. :attr:`VectorIndex.backend` says which.

sqlite-vec's ``vec0`` tables need a Python whose ``sqlite3`` can load extensions; where it
cannot (common with pyenv and some system builds) the BLOB table is the only form, and it
is also the source of truth when ``vec0`` is used.
"""

from __future__ import annotations

import functools
import importlib
import sqlite3
import threading
import time
from array import array
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from memci.memory._embed import Embedder

__all__ = ["VectorIndex"]

@functools.cache
def _numpy() -> Any:
    """Return numpy, imported on first use, or None when it is not installed."""
    try:  # numpy arrives with memci[embeddings]; without it, search is pure Python
        return importlib.import_module("numpy")
    except ImportError:  # pragma: no cover - exercised only without numpy
        return None


@dataclass(slots=True)
class _Matrix:
    signature: tuple[int, int] = (0, 0)
    refs: list[int] = field(default_factory=list)
    sessions: list[int] = field(default_factory=list)
    rows: list[bytes] = field(default_factory=list)
    dense: Any = None  # numpy array (n, dim) when numpy is present, built on demand


def _pack(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def _unpack(blob: bytes) -> array[float]:
    values = array("f")
    values.frombytes(blob)
    return values


class VectorIndex:
    """The vectors of one embedder; add and search per kind, filtered by session."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.backend = "numpy" if _numpy() is not None else "python"
        self._space: int | None = None
        self._lock = threading.Lock()
        self._cache: dict[str, _Matrix] = {}

    def space(self, db: sqlite3.Connection, dim: int | None = None) -> int | None:
        """Return the id of this embedder's vector space (created when ``dim`` is given)."""
        if self._space is not None:
            return self._space
        row = db.execute("SELECT id FROM memory_vector_spaces WHERE embedder = ?",
                         (self.embedder.name,)).fetchone()
        if row is None and dim is not None:
            db.execute("INSERT INTO memory_vector_spaces (embedder, dim, created)"
                       " VALUES (?, ?, ?)", (self.embedder.name, dim, time.time()))
            row = db.execute("SELECT id FROM memory_vector_spaces WHERE embedder = ?",
                             (self.embedder.name,)).fetchone()
        if row is not None:
            self._space = int(row[0])
        return self._space

    def add(
        self,
        db: sqlite3.Connection,
        kind: str,
        rows: Sequence[tuple[int, int | None]],
        vectors: Sequence[Sequence[float]],
    ) -> None:
        """Store ``vectors`` for ``rows`` of ``(ref, session_id)`` (inside a write)."""
        if not rows:
            return
        space = self.space(db, len(vectors[0]))
        db.executemany(
            "INSERT OR REPLACE INTO memory_vectors (space_id, kind, ref, session_id, vec)"
            " VALUES (?, ?, ?, ?, ?)",
            [(space, kind, ref, sid, _pack(vec)) for (ref, sid), vec in zip(rows, vectors,
                                                                            strict=True)],
        )

    def delete(self, db: sqlite3.Connection, kind: str, refs: Sequence[int]) -> None:
        """Forget the vectors of ``refs`` (inside a write)."""
        space = self.space(db)
        if space is None or not refs:
            return
        db.executemany("DELETE FROM memory_vectors WHERE space_id = ? AND kind = ? AND ref = ?",
                       [(space, kind, ref) for ref in refs])

    def missing(self, db: sqlite3.Connection, kind: str, table: str, limit: int) -> list[int]:
        """Ids of ``table`` that have no vector of ``kind`` yet, oldest first."""
        space = self.space(db)
        if space is None:
            rows = db.execute(f"SELECT id FROM {table} ORDER BY id LIMIT ?", (limit,))
        else:
            rows = db.execute(
                f"SELECT t.id FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v"
                " WHERE v.space_id = ? AND v.kind = ? AND v.ref = t.id) ORDER BY t.id LIMIT ?",
                (space, kind, limit),
            )
        return [int(r[0]) for r in rows]

    def _matrix(self, db: sqlite3.Connection, kind: str) -> _Matrix | None:
        space = self.space(db)
        if space is None:
            return None
        count, top = db.execute(
            "SELECT COUNT(*), COALESCE(MAX(ref), 0) FROM memory_vectors"
            " WHERE space_id = ? AND kind = ?", (space, kind),
        ).fetchone()
        signature = (int(count), int(top))
        with self._lock:
            cached = self._cache.get(kind)
            if cached is not None and cached.signature == signature:
                return cached
            after = cached.refs[-1] if cached is not None and cached.refs else 0
            fresh = cached if cached is not None and signature[0] > len(cached.refs) else None
            rows = db.execute(
                "SELECT ref, session_id, vec FROM memory_vectors WHERE space_id = ? AND kind = ?"
                " AND ref > ? ORDER BY ref", (space, kind, after if fresh else 0),
            ).fetchall()
            matrix = fresh if fresh is not None else _Matrix()
            for ref, sid, blob in rows:
                matrix.refs.append(int(ref))
                matrix.sessions.append(int(sid) if sid is not None else -1)
                matrix.rows.append(bytes(blob))
            if len(matrix.refs) != signature[0]:  # rows were replaced or deleted: reload
                matrix = _Matrix()
                for ref, sid, blob in db.execute(
                    "SELECT ref, session_id, vec FROM memory_vectors WHERE space_id = ?"
                    " AND kind = ? ORDER BY ref", (space, kind),
                ):
                    matrix.refs.append(int(ref))
                    matrix.sessions.append(int(sid) if sid is not None else -1)
                    matrix.rows.append(bytes(blob))
            matrix.signature = signature
            matrix.dense = None
            self._cache[kind] = matrix
            return matrix

    def search(
        self,
        db: sqlite3.Connection,
        kind: str,
        vector: Sequence[float],
        k: int,
        *,
        sessions: Collection[int] | None = None,
        refs: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Return the ``k`` nearest ``(ref, cosine)`` of ``kind`` in ``sessions``/``refs``."""
        matrix = self._matrix(db, kind)
        if matrix is None or not matrix.refs or k <= 0:
            return []
        with self._lock:
            if _numpy() is not None:
                return self._search_numpy(matrix, vector, k, sessions, refs)
            return self._search_python(matrix, vector, k, sessions, refs)

    @staticmethod
    def _search_numpy(
        matrix: _Matrix, vector: Sequence[float], k: int,
        sessions: Collection[int] | None, refs: Collection[int] | None,
    ) -> list[tuple[int, float]]:
        _np = _numpy()
        if matrix.dense is None:
            matrix.dense = _np.frombuffer(b"".join(matrix.rows), dtype=_np.float32).reshape(
                len(matrix.rows), -1)
        scores = matrix.dense @ _np.asarray(vector, dtype=_np.float32)
        if sessions is not None:
            mask = _np.isin(_np.asarray(matrix.sessions), _np.fromiter(sessions, dtype=int))
            scores = _np.where(mask, scores, -_np.inf)
        if refs is not None:
            mask = _np.isin(_np.asarray(matrix.refs), _np.fromiter(refs, dtype=int))
            scores = _np.where(mask, scores, -_np.inf)
        top = min(k, len(scores))
        best = _np.argpartition(-scores, top - 1)[:top]
        best = best[_np.argsort(-scores[best], kind="stable")]
        return [(matrix.refs[i], float(scores[i])) for i in best if _np.isfinite(scores[i])]

    @staticmethod
    def _search_python(
        matrix: _Matrix, vector: Sequence[float], k: int,
        sessions: Collection[int] | None, refs: Collection[int] | None,
    ) -> list[tuple[int, float]]:  # pragma: no cover - exercised only without numpy
        wanted = set(sessions) if sessions is not None else None
        allowed = set(refs) if refs is not None else None
        scored: list[tuple[float, int]] = []
        for ref, sid, blob in zip(matrix.refs, matrix.sessions, matrix.rows, strict=True):
            if (wanted is not None and sid not in wanted) or (
                    allowed is not None and ref not in allowed):
                continue
            row = _unpack(blob)
            scored.append((sum(a * b for a, b in zip(row, vector, strict=False)), ref))
        scored.sort(key=lambda t: -t[0])
        return [(ref, score) for score, ref in scored[:k]]
