"""Stored embeddings (:class:`~memci.store.VectorStore`): the bookkeeping both backends share.

One vector space per embedder name (``memory_vector_spaces``: name and dimension). A
space has one table per kind of thing embedded, ``memory_vec_<space>_<kind>``
(:data:`KINDS`: ``message`` = a ``memory_docs`` id, ``item`` = a ``memory_items`` id,
``chunk`` = a ``doc_chunks`` id), made and searched the backend's way (sqlite-vec's
``vec0``; pgvector with an HNSW index). ``memory_vector_refs`` lists the refs that have a
vector, so counting, finding the newest and finding the missing ones are index lookups,
never scans of a vector table.

Invariants:

- a ref is in ``memory_vector_refs`` exactly when its space's table has a row for it:
  both are written, and deleted, in one transaction (or the caller's ``atomic()``);
- a ref's vector is replaced, never doubled: adding it again forgets the old one first;
- a vector of another dimension than its space's is refused (nothing stored).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from typing import Any

from memci.errors import ConfigError, InvalidInputError
from memci.store._sql._conn import Sql, Transactions

__all__ = ["KINDS", "SqlVectorStore", "forget_refs", "spaces_holding", "vector_table"]

KINDS: tuple[str, ...] = ("message", "item", "chunk")
# The table each kind's refs are ids of (what "missing" vectors are missing from).
_SOURCES = {"message": "memory_docs", "item": "memory_items", "chunk": "doc_chunks"}
_NO_SESSION = 0  # a vector table's session column holds no NULL; session ids start at 1


def vector_table(space: int, kind: str) -> str:
    """The table of ``kind``'s vectors in the space ``space``."""
    if kind not in KINDS:
        raise InvalidInputError(f"vector kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return f"memory_vec_{int(space)}_{kind}"


def spaces_holding(sql: Sql, kind: str, refs: Collection[int]) -> list[int]:
    """The spaces that hold a vector of one of ``refs`` (of ``kind``)."""
    d = sql.dialect
    return [int(r[0]) for r in sql.all(
        f"SELECT DISTINCT space_id FROM memory_vector_refs WHERE kind = ? AND"
        f" {d.in_array('ref')}", (kind, d.array(sorted({int(r) for r in refs}))))]


def forget_refs(sql: Sql, space: int, kind: str, refs: Collection[int]) -> list[int]:
    """Strike ``refs`` off the space's list; those it held (their vectors must go too)."""
    d = sql.dialect
    wanted = d.array(sorted({int(r) for r in refs}))
    return [int(r[0]) for r in sql.all(
        f"DELETE FROM memory_vector_refs WHERE space_id = ? AND kind = ? AND"
        f" {d.in_array('ref')} RETURNING ref", (space, kind, wanted))]


class SqlVectorStore(ABC):
    """The vectors of one embedder (by name) in one store: what both backends share."""

    #: The vector search this backend runs (``sqlite-vec``, ``pgvector``).
    backend: str

    def __init__(self, db: Transactions, embedder: str) -> None:
        db.ready("memory")
        self._db = db
        self.embedder = embedder
        self._space: tuple[int, int] | None = None  # (id, dim), once seen

    # -- what each backend does its own way ----------------------------------------------

    @abstractmethod
    def _space_for(self, sql: Sql, dim: int) -> tuple[int, int]:
        """``(id, dim)`` of this embedder's space, made with ``dim`` when there is none."""

    @abstractmethod
    def _encode(self, vector: Sequence[float]) -> Any:
        """A vector as its table takes it."""

    @abstractmethod
    def _insert(self, sql: Sql, table: str, rows: list[tuple[int, int, Sequence[float], Any]],
                ) -> None:
        """Insert ``(ref, session id, vector, encoded)`` rows into ``table``."""

    @abstractmethod
    def _drop(self, sql: Sql, table: str, refs: list[int]) -> None:
        """Delete the vectors of ``refs`` from ``table``."""

    @abstractmethod
    def search(
        self, kind: str, vector: Sequence[float], k: int, *,
        sessions: Collection[int] | None = None, refs: Collection[int] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest ``(ref, cosine)`` within ``sessions`` and ``refs``, best first."""

    # -- the space -----------------------------------------------------------------------

    def _find(self, sql: Sql) -> tuple[int, int] | None:
        """``(id, dim)`` of this embedder's space, or None before its first vector."""
        if self._space is not None:
            return self._space
        row = sql.one("SELECT id, dim FROM memory_vector_spaces WHERE embedder = ?",
                      (self.embedder,))
        if row is not None:
            self._space = (int(row[0]), int(row[1]))
        return self._space

    def space(self) -> int | None:
        """The id of this embedder's vector space (None before its first vector)."""
        with self._db.read() as sql:
            found = self._find(sql)
        return found[0] if found is not None else None

    def _forget(self, sql: Sql, space: int, kind: str, refs: Collection[int]) -> None:
        stored = forget_refs(sql, space, kind, refs)
        if stored:
            self._drop(sql, vector_table(space, kind), stored)

    # -- writing -------------------------------------------------------------------------

    def add(
        self, kind: str, rows: Sequence[tuple[int, int | None]],
        vectors: Sequence[Sequence[float]],
    ) -> None:
        """Store ``vectors`` for ``rows`` of ``(ref, session_id)``; a ref's old one goes."""
        if not rows:
            return
        if len(rows) != len(vectors):
            raise InvalidInputError(f"{len(rows)} refs but {len(vectors)} vectors")
        vector_table(0, kind)  # a kind that is none: refused before anything is made
        with self._db.write() as sql:
            space, dim = self._space_for(sql, len(vectors[0]))
            latest: dict[int, tuple[int, int, Sequence[float], Any]] = {}
            for (ref, session_id), vector in zip(rows, vectors, strict=True):
                if len(vector) != dim:
                    raise ConfigError(
                        f"the embedder {self.embedder!r} returned a vector of {len(vector)} "
                        f"numbers; its vector space holds {dim}: give a different model a "
                        "different name")
                latest[int(ref)] = (int(ref), session_id or _NO_SESSION, vector,
                                    self._encode(vector))
            self._forget(sql, space, kind, list(latest))
            self._insert(sql, vector_table(space, kind), list(latest.values()))
            sql.many("INSERT INTO memory_vector_refs (space_id, kind, ref) VALUES (?, ?, ?)",
                     [(space, kind, ref) for ref in latest])

    def delete(self, kind: str, refs: Collection[int]) -> None:
        """Forget the vectors of ``refs``."""
        if not refs:
            return
        with self._db.write() as sql:
            found = self._find(sql)
            if found is not None:
                self._forget(sql, found[0], kind, refs)

    # -- reading -------------------------------------------------------------------------

    def missing(self, kind: str, limit: int) -> list[int]:
        """Up to ``limit`` refs of ``kind`` without a vector, oldest first."""
        source = _SOURCES[kind] if kind in _SOURCES else vector_table(0, kind)
        with self._db.read() as sql:
            found = self._find(sql)
            if found is None:
                rows = sql.all(f"SELECT id FROM {source} ORDER BY id LIMIT ?", (limit,))
            else:
                rows = sql.all(
                    f"SELECT t.id FROM {source} t WHERE NOT EXISTS (SELECT 1 FROM"
                    " memory_vector_refs v WHERE v.space_id = ? AND v.kind = ?"
                    " AND v.ref = t.id) ORDER BY t.id LIMIT ?", (found[0], kind, limit))
        return [int(r[0]) for r in rows]

    def newest_ref(self, kind: str) -> int:
        """The largest ref of ``kind`` that has a vector (0 when none has)."""
        with self._db.read() as sql:
            found = self._find(sql)
            if found is None:
                return 0
            top = sql.value("SELECT MAX(ref) FROM memory_vector_refs WHERE space_id = ?"
                            " AND kind = ?", (found[0], kind))
        return int(top or 0)

    def count(self, kind: str) -> int:
        """How many refs of ``kind`` have a vector."""
        with self._db.read() as sql:
            found = self._find(sql)
            if found is None:
                return 0
            return int(sql.value("SELECT COUNT(*) FROM memory_vector_refs WHERE space_id = ?"
                                 " AND kind = ?", (found[0], kind)) or 0)
