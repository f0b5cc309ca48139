"""The parts of a PostgreSQL store that are PostgreSQL's own: contents, jobs, deletions, search.

The parts both backends share (working state, artifacts' rows, API keys) come from
:class:`~memci.store._sql.SqlParts`; the job table is the shared one plus ``NOTIFY``.
Their tables are made by the migrations when the store opens, except what depends on an
analyzer or an embedder (keyword tables, vector tables), made by the part on first use.
A part is kept once made (one per store, and one per analyzer or embedder for the search
parts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from memci.store._sql import SqlParts
from memci.store.postgres._db import Database

if TYPE_CHECKING:
    from memci.store.postgres._artifacts import PostgresOutputContents
    from memci.store.postgres._docs import PostgresDocStore
    from memci.store.postgres._erase import PostgresEraser
    from memci.store.postgres._items import PostgresItemStore
    from memci.store.postgres._jobs import PostgresJobStore
    from memci.store.postgres._search import PostgresMessageSearch
    from memci.store.postgres._vectors import PostgresVectorStore
    from memci.text import Analyzer

__all__ = ["PostgresParts"]


class PostgresParts(SqlParts):
    """What :class:`~memci.store.postgres.PostgresStore` offers besides the log."""

    @property
    def _store(self) -> Database:
        return cast("Database", self)

    @property
    def output_contents(self) -> PostgresOutputContents:
        """Whole tool outputs too large for a row, in the database (never on one server)."""
        from memci.store.postgres._artifacts import PostgresOutputContents

        return self._part(("output_contents", ""), lambda: PostgresOutputContents(self._store))

    @property
    def jobs(self) -> PostgresJobStore:
        """Background jobs (:class:`~memci.store.JobStore`); submissions wake workers."""
        from memci.store.postgres._jobs import PostgresJobStore

        return self._part(("jobs", ""), lambda: PostgresJobStore(self._store))

    @property
    def eraser(self) -> PostgresEraser:
        """Deletions and their audit log (:class:`~memci.store.Eraser`)."""
        from memci.store.postgres._erase import PostgresEraser

        return self._part(("eraser", ""), lambda: PostgresEraser(self._store))

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
