"""The store: the write-back log every message goes to first, and everything derived.

SQLite is the embedded default (:class:`SQLiteStore`); everything else in memci is
derived from what the store holds and can be rebuilt from it.
"""

from memci.store._migrations import CORE_MIGRATIONS, Migration
from memci.store._sqlite import (
    ROW_HEAD_CHARS,
    SessionRecord,
    SQLiteStore,
    message_from_row,
    row_head,
)

__all__ = ["CORE_MIGRATIONS", "ROW_HEAD_CHARS", "Migration", "SQLiteStore", "SessionRecord",
           "message_from_row", "row_head"]
