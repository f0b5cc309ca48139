"""The SQLite backend: the only module tree of memci that speaks SQL to SQLite.

One file in WAL mode holds everything: the log, page and session state, working state,
artifacts' rows, jobs, API keys and the search index (FTS5, and sqlite-vec vectors).
"""

from memci.store.sqlite._migrations import CORE_MIGRATIONS, Migration
from memci.store.sqlite._store import ROW_HEAD_CHARS, SQLiteStore, message_from_row, row_head

__all__ = ["CORE_MIGRATIONS", "ROW_HEAD_CHARS", "Migration", "SQLiteStore", "message_from_row",
           "row_head"]
