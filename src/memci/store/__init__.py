"""The store: the write-back log every message goes to first, and everything derived.

What is stored goes through the protocols of :mod:`memci.store._protocols` with plain-value
signatures (:mod:`memci.store._records`); each backend implements them under its own
package, and all SQL lives there. SQLite (:mod:`memci.store.sqlite`) is the embedded default;
everything else in memci is derived from what the store holds and can be rebuilt from it.
"""

from memci.store._records import SessionRecord
from memci.store.sqlite import (
    CORE_MIGRATIONS,
    ROW_HEAD_CHARS,
    Migration,
    SQLiteStore,
    message_from_row,
    row_head,
)

__all__ = ["CORE_MIGRATIONS", "ROW_HEAD_CHARS", "Migration", "SQLiteStore", "SessionRecord",
           "message_from_row", "row_head"]
