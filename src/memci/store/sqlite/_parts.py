"""The parts of a SQLite store that are SQLite's own: deletions, the search index, vectors.

The parts both backends share (working state, artifacts' rows, jobs, API keys) come from
:class:`~memci.store._sql.SqlParts`. Each is made on first use: it applies its migration
series and makes its derived tables then (FTS5 tables, sqlite-vec tables), and is kept.
A part first asked for inside an open write transaction is not kept: that transaction
may still roll back what making it did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from memci.store._sql import SqlParts
from memci.store.sqlite._db import Database

if TYPE_CHECKING:
    from memci.store.sqlite._docs import SQLiteDocStore
    from memci.store.sqlite._erase import SQLiteEraser
    from memci.store.sqlite._items import SQLiteItemStore
    from memci.store.sqlite._search import SQLiteMessageSearch
    from memci.store.sqlite._vectors import SQLiteVectorStore
    from memci.text import Analyzer

__all__ = ["SQLiteParts"]


class SQLiteParts(SqlParts):
    """What :class:`~memci.store.SQLiteStore` offers besides the log: its other parts."""

    _depth: int  # set by SQLiteStore: >0 while a write transaction is open

    def _keeps_parts(self) -> bool:
        return not self._depth

    @property
    def _store(self) -> Database:
        return cast("Database", self)

    @property
    def output_contents(self) -> None:
        """None: large tool outputs are files in a folder beside the database."""
        return None

    @property
    def eraser(self) -> SQLiteEraser:
        """Deletions and their audit log (:class:`~memci.store.Eraser`)."""
        from memci.store.sqlite._erase import SQLiteEraser

        return self._part(("eraser", ""), lambda: SQLiteEraser(self._store))

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
