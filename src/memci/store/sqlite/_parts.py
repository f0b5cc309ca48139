"""The parts of a SQLite store besides the log, each made on first use.

They are the working state, artifacts' rows, jobs, API keys, deletions, and the search index
(messages, items, documents, vectors). Opening a store stays cheap: a part applies its
migration series and makes its derived tables when first asked for, then is kept (one
per store, and one per analyzer or embedder for the search parts). A part first asked
for inside an open write transaction is not kept: that transaction may still roll back
what making it did.

Every part takes the store itself and writes through its ``write()``, so writes of
several parts inside :meth:`~memci.store.SQLiteStore.atomic` are one transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from memci.store.sqlite._db import Database

if TYPE_CHECKING:
    from memci.store.sqlite._artifacts import SQLiteArtifactRows
    from memci.store.sqlite._docs import SQLiteDocStore
    from memci.store.sqlite._erase import SQLiteEraser
    from memci.store.sqlite._items import SQLiteItemStore
    from memci.store.sqlite._jobs import SQLiteJobStore
    from memci.store.sqlite._keys import SQLiteKeyRows
    from memci.store.sqlite._search import SQLiteMessageSearch
    from memci.store.sqlite._vectors import SQLiteVectorStore
    from memci.store.sqlite._work import SQLiteWorkStore
    from memci.text import Analyzer

__all__ = ["StoreParts"]

P = TypeVar("P")


class StoreParts:
    """What :class:`~memci.store.SQLiteStore` offers besides the log: its other parts."""

    # Set by SQLiteStore: its lock (every part is made under it, so a thread inside a
    # transaction that asks for a part never waits on another lock) and its write depth.
    _lock: threading.RLock
    _depth: int

    def _part(self, key: tuple[str, str], make: Callable[[], P]) -> P:
        with self._lock:
            parts: dict[tuple[str, str], Any] = self.__dict__.setdefault("_parts", {})
            found = parts.get(key)
            if found is None:
                found = make()
                if not self._depth:
                    parts[key] = found
            return cast(P, found)

    @property
    def _store(self) -> Database:
        return cast("Database", self)

    @property
    def work(self) -> SQLiteWorkStore:
        """Working state and its audit log (:class:`~memci.store.WorkStore`)."""
        from memci.store.sqlite._work import SQLiteWorkStore

        return self._part(("work", ""), lambda: SQLiteWorkStore(self._store))

    @property
    def artifact_rows(self) -> SQLiteArtifactRows:
        """Artifacts' blobs and links (:class:`~memci.store.ArtifactRows`)."""
        from memci.store.sqlite._artifacts import SQLiteArtifactRows

        return self._part(("artifact_rows", ""), lambda: SQLiteArtifactRows(self._store))

    @property
    def output_contents(self) -> None:
        """None: large tool outputs are files in a folder beside the database."""
        return None

    @property
    def eraser(self) -> SQLiteEraser:
        """Deletions and their audit log (:class:`~memci.store.Eraser`)."""
        from memci.store.sqlite._erase import SQLiteEraser

        return self._part(("eraser", ""), lambda: SQLiteEraser(self._store))

    @property
    def jobs(self) -> SQLiteJobStore:
        """Background jobs (:class:`~memci.store.JobStore`)."""
        from memci.store.sqlite._jobs import SQLiteJobStore

        return self._part(("jobs", ""), lambda: SQLiteJobStore(self._store))

    @property
    def keys(self) -> SQLiteKeyRows:
        """The server's API keys (:class:`~memci.store.KeyRows`)."""
        from memci.store.sqlite._keys import SQLiteKeyRows

        return self._part(("keys", ""), lambda: SQLiteKeyRows(self._store))

    def search(self, analyzer: Analyzer) -> SQLiteMessageSearch:
        """The message index with ``analyzer``'s keyword text (a ``MessageSearch``)."""
        from memci.store.sqlite._search import SQLiteMessageSearch

        return self._part(("search", analyzer.name),
                          lambda: SQLiteMessageSearch(self._store, analyzer))

    def items(self, analyzer: Analyzer) -> SQLiteItemStore:
        """Memory items with ``analyzer``'s keyword text (:class:`~memci.store.ItemStore`)."""
        from memci.store.sqlite._items import SQLiteItemStore

        return self._part(("items", analyzer.name),
                          lambda: SQLiteItemStore(self._store, analyzer))

    def docs(self, analyzer: Analyzer) -> SQLiteDocStore:
        """Indexed files with ``analyzer``'s keyword text (:class:`~memci.store.DocStore`)."""
        from memci.store.sqlite._docs import SQLiteDocStore

        return self._part(("docs", analyzer.name), lambda: SQLiteDocStore(self._store, analyzer))

    def vectors(self, embedder: str) -> SQLiteVectorStore:
        """The vectors of the embedder named ``embedder`` (:class:`~memci.store.VectorStore`).

        Raises :class:`~memci.errors.MissingExtraError` when sqlite-vec is not loaded.
        """
        from memci.store.sqlite._vectors import SQLiteVectorStore

        return self._part(("vectors", embedder),
                          lambda: SQLiteVectorStore(self._store, embedder))
