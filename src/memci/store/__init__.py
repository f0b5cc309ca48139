"""The store: the write-back log every message goes to first, and everything derived.

What is stored goes through protocols with plain-value signatures (no connection or
cursor crosses them), one module per area: the message log (:class:`MessageLog`) and a
session's context state, versioned for compare-and-swap (:class:`ContextStore`), the
working state and its audit log (:class:`WorkStore`), deletions and their audit log
(:class:`Eraser`), artifacts' rows (:class:`ArtifactRows`), background jobs
(:class:`JobStore`), the server's API keys (:class:`KeyRows`) and the search index
(:class:`MessageSearch`, :class:`ItemStore`, :class:`DocStore`, :class:`VectorStore`),
with the records they take and return (:mod:`memci.store._records` and each area's
module). All SQL lives under this package: the statements both backends share are
written once (:mod:`memci.store._sql`, against a small dialect), and each backend's
package keeps what only it does (connections, keyword search, vectors, DDL). SQLite
(:mod:`memci.store.sqlite`) is the embedded default, PostgreSQL
(:mod:`memci.store.postgres`) the store of several servers; everything else in memci is
derived from what the store holds and can be rebuilt from it.
"""

from typing import TYPE_CHECKING

from memci._lazy import lazy_names
from memci.store._artifacts import Artifact, ArtifactRows, Blob, OutputContents
from memci.store._items import LEVELS, ItemFilter, ItemStore, Level, MemoryItem, NewItem, Scope
from memci.store._log import (
    LOG_INDEX_KEY,
    ContextChanges,
    ContextEvent,
    ContextState,
    ContextStore,
    LogColumns,
    LogRow,
    MessageLog,
    PageRow,
    SessionHeads,
)
from memci.store._open import ENV_DB, default_location, is_postgres_url, open_store
from memci.store._protocols import Store
from memci.store._records import SessionRecord
from memci.store._rows import ROW_HEAD_CHARS, message_from_row, orphan_result, row_head
from memci.store._search import (
    Candidate,
    IndexedMessage,
    MemoryVersion,
    MessageSearch,
    SearchDoc,
    SearchFilter,
    VectorStore,
)
from memci.store._work import WorkEvent, WorkStore
from memci.store._writers import other_writers

if TYPE_CHECKING:
    from memci.store._copy import TABLES, TableCount, copy_store
    from memci.store._docs import DocChunk, DocFile, DocStore
    from memci.store._erase import ERASE_COUNTS, Eraser, Erasure, Removed
    from memci.store._jobs import (
        JOB_STATES,
        Job,
        JobCounts,
        JobState,
        JobStore,
        JobTally,
        NewJob,
    )
    from memci.store._keys import KeyRecord, KeyRows
    from memci.store.sqlite import CORE_MIGRATIONS, Migration, SQLiteStore
else:
    # What opening a store, adding and building never reach loads when first asked for:
    # copying a store (``memci migrate``), indexed files, deletions, background jobs
    # (an engine with a model, the worker) and the server's API keys; and the SQLite
    # backend, when a SQLite store is first opened (a PostgreSQL store's process never
    # loads it, nor sqlite3).
    __getattr__, __dir__ = lazy_names(__name__, {
        "memci.store._copy": ("TABLES", "TableCount", "copy_store"),
        "memci.store._docs": ("DocChunk", "DocFile", "DocStore"),
        "memci.store._erase": ("ERASE_COUNTS", "Eraser", "Erasure", "Removed"),
        "memci.store._jobs": ("JOB_STATES", "Job", "JobCounts", "JobState", "JobStore",
                              "JobTally", "NewJob"),
        "memci.store._keys": ("KeyRecord", "KeyRows"),
        "memci.store.sqlite": ("CORE_MIGRATIONS", "Migration", "SQLiteStore"),
    })

__all__ = [
    "CORE_MIGRATIONS",
    "ENV_DB",
    "ERASE_COUNTS",
    "JOB_STATES",
    "LEVELS",
    "LOG_INDEX_KEY",
    "ROW_HEAD_CHARS",
    "TABLES",
    "Artifact",
    "ArtifactRows",
    "Blob",
    "Candidate",
    "ContextChanges",
    "ContextEvent",
    "ContextState",
    "ContextStore",
    "DocChunk",
    "DocFile",
    "DocStore",
    "Eraser",
    "Erasure",
    "IndexedMessage",
    "ItemFilter",
    "ItemStore",
    "Job",
    "JobCounts",
    "JobState",
    "JobStore",
    "JobTally",
    "KeyRecord",
    "KeyRows",
    "Level",
    "LogColumns",
    "LogRow",
    "MemoryItem",
    "MemoryVersion",
    "MessageLog",
    "MessageSearch",
    "Migration",
    "NewItem",
    "NewJob",
    "OutputContents",
    "PageRow",
    "Removed",
    "SQLiteStore",
    "Scope",
    "SearchDoc",
    "SearchFilter",
    "SessionHeads",
    "SessionRecord",
    "Store",
    "TableCount",
    "VectorStore",
    "WorkEvent",
    "WorkStore",
    "copy_store",
    "default_location",
    "is_postgres_url",
    "message_from_row",
    "open_store",
    "orphan_result",
    "other_writers",
    "row_head",
]
