"""The parts of a PostgreSQL store besides the log, each made on first use.

They are the working state, artifacts' rows and contents, jobs, API keys, deletions, and
the search index (messages, items, documents, vectors); their tables are made by the
migrations when the store opens, except what depends on an analyzer or an embedder
(keyword tables, vector tables), made by the part on first use. A part is kept once made
(one per store, and one per analyzer or embedder for the search parts). Every part takes
the store itself and writes through its ``write()``, so writes of several parts inside
:meth:`~memci.store.postgres.PostgresStore.atomic` are one transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from memci.store.postgres._db import Database

if TYPE_CHECKING:
    from memci.store.postgres._artifacts import PostgresArtifactRows, PostgresOutputContents
    from memci.store.postgres._docs import PostgresDocStore
    from memci.store.postgres._erase import PostgresEraser
    from memci.store.postgres._items import PostgresItemStore
    from memci.store.postgres._jobs import PostgresJobStore
    from memci.store.postgres._keys import PostgresKeyRows
    from memci.store.postgres._search import PostgresMessageSearch
    from memci.store.postgres._vectors import PostgresVectorStore
    from memci.store.postgres._work import PostgresWorkStore
    from memci.text import Analyzer

__all__ = ["PostgresParts"]

P = TypeVar("P")


class PostgresParts:
    """What :class:`~memci.store.postgres.PostgresStore` offers besides the log."""

    _parts_lock = threading.RLock()

    def _part(self, key: tuple[str, str], make: Callable[[], P]) -> P:
        parts: dict[tuple[str, str], Any] = self.__dict__.setdefault("_parts", {})
        found = parts.get(key)
        if found is None:
            with self._parts_lock:
                found = parts.get(key)
                if found is None:
                    found = parts[key] = make()
        return cast(P, found)

    @property
    def _store(self) -> Database:
        return cast("Database", self)

    @property
    def work(self) -> PostgresWorkStore:
        """Working state and its audit log (:class:`~memci.store.WorkStore`)."""
        from memci.store.postgres._work import PostgresWorkStore

        return self._part(("work", ""), lambda: PostgresWorkStore(self._store))

    @property
    def artifact_rows(self) -> PostgresArtifactRows:
        """Artifacts' blobs and links (:class:`~memci.store.ArtifactRows`)."""
        from memci.store.postgres._artifacts import PostgresArtifactRows

        return self._part(("artifact_rows", ""), lambda: PostgresArtifactRows(self._store))

    @property
    def output_contents(self) -> PostgresOutputContents:
        """Whole tool outputs too large for a row, in the database (never on one server)."""
        from memci.store.postgres._artifacts import PostgresOutputContents

        return self._part(("output_contents", ""), lambda: PostgresOutputContents(self._store))

    @property
    def eraser(self) -> PostgresEraser:
        """Deletions and their audit log (:class:`~memci.store.Eraser`)."""
        from memci.store.postgres._erase import PostgresEraser

        return self._part(("eraser", ""), lambda: PostgresEraser(self._store))

    @property
    def jobs(self) -> PostgresJobStore:
        """Background jobs (:class:`~memci.store.JobStore`)."""
        from memci.store.postgres._jobs import PostgresJobStore

        return self._part(("jobs", ""), lambda: PostgresJobStore(self._store))

    @property
    def keys(self) -> PostgresKeyRows:
        """The server's API keys (:class:`~memci.store.KeyRows`)."""
        from memci.store.postgres._keys import PostgresKeyRows

        return self._part(("keys", ""), lambda: PostgresKeyRows(self._store))

    def search(self, analyzer: Analyzer) -> PostgresMessageSearch:
        """The message index with ``analyzer``'s keyword text (a ``MessageSearch``)."""
        from memci.store.postgres._search import PostgresMessageSearch

        return self._part(("search", analyzer.name),
                          lambda: PostgresMessageSearch(self._store, analyzer))

    def items(self, analyzer: Analyzer) -> PostgresItemStore:
        """Memory items with ``analyzer``'s keyword text (:class:`~memci.store.ItemStore`)."""
        from memci.store.postgres._items import PostgresItemStore

        return self._part(("items", analyzer.name),
                          lambda: PostgresItemStore(self._store, analyzer))

    def docs(self, analyzer: Analyzer) -> PostgresDocStore:
        """Indexed files with ``analyzer``'s keyword text (:class:`~memci.store.DocStore`)."""
        from memci.store.postgres._docs import PostgresDocStore

        return self._part(("docs", analyzer.name),
                          lambda: PostgresDocStore(self._store, analyzer))

    def vectors(self, embedder: str) -> PostgresVectorStore:
        """The vectors of the embedder named ``embedder`` (:class:`~memci.store.VectorStore`).

        Raises :class:`~memci.errors.MissingExtraError` when the database has no pgvector.
        """
        from memci.store.postgres._vectors import PostgresVectorStore

        return self._part(("vectors", embedder),
                          lambda: PostgresVectorStore(self._store, embedder))
