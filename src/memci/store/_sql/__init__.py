"""One SQL layer for both stores: the statements SQLite and PostgreSQL share, written once.

Each storage protocol of :mod:`memci.store` is implemented here against a small
:class:`Dialect` (placeholders, lists, a few functions, row locks, column types) and a
small connection interface (:class:`Transactions` yielding a :class:`Sql`): the message
log (:class:`SqlLog`), context state, working state, artifacts' rows, jobs, API keys,
memory items, indexed files, the message index's rows, vectors' bookkeeping and
deletions with their audit log.

A backend package (:mod:`memci.store.sqlite`, :mod:`memci.store.postgres`) keeps only
what truly differs: its connections and transactions (SQLite's driver, WAL and busy
handling; psycopg's pool), keyword search (FTS5; a postings table with memci's
analyzer and FTS5's BM25), vectors (sqlite-vec; pgvector), migration DDL, and how it
scrubs deleted bytes from its files. Where a part differs only there, the shared class
leaves abstract methods (:class:`SqlItemStore`, :class:`SqlDocStore`,
:class:`SqlMessageSearch`, :class:`SqlVectorStore`, :class:`SqlEraser`) and the backend
subclasses it; the other parts are the same classes on both (:class:`SqlParts`).
"""

from typing import TYPE_CHECKING

from memci._lazy import lazy_names
from memci.store._sql._artifacts import SqlArtifactRows
from memci.store._sql._conn import Connections, Sql, Transactions, ran_here
from memci.store._sql._context import SqlContextStore
from memci.store._sql._dialect import Dialect
from memci.store._sql._items import SqlItemStore, item_filter
from memci.store._sql._log import SqlLog
from memci.store._sql._migrations import Migration
from memci.store._sql._parts import SqlParts
from memci.store._sql._search import LOAD_COLUMNS, SqlMessageSearch, search_filter
from memci.store._sql._vectors import (
    KINDS,
    SqlVectorStore,
    forget_refs,
    spaces_holding,
    vector_table,
)
from memci.store._sql._work import SqlWorkStore

if TYPE_CHECKING:
    from memci.store._sql._docs import SqlDocStore
    from memci.store._sql._erase import SqlEraser
    from memci.store._sql._jobs import SqlJobStore
    from memci.store._sql._keys import SqlKeyRows
else:
    # The parts a build never reaches (indexed files, deletions, jobs, API keys) load
    # with their first use.
    __getattr__, __dir__ = lazy_names(__name__, {
        "memci.store._sql._docs": ("SqlDocStore",),
        "memci.store._sql._erase": ("SqlEraser",),
        "memci.store._sql._jobs": ("SqlJobStore",),
        "memci.store._sql._keys": ("SqlKeyRows",),
    })

__all__ = [
    "KINDS",
    "LOAD_COLUMNS",
    "Connections",
    "Dialect",
    "Migration",
    "Sql",
    "SqlArtifactRows",
    "SqlContextStore",
    "SqlDocStore",
    "SqlEraser",
    "SqlItemStore",
    "SqlJobStore",
    "SqlKeyRows",
    "SqlLog",
    "SqlMessageSearch",
    "SqlParts",
    "SqlVectorStore",
    "SqlWorkStore",
    "Transactions",
    "forget_refs",
    "item_filter",
    "ran_here",
    "search_filter",
    "spaces_holding",
    "vector_table",
]
