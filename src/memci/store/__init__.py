"""The store: the write-back log every message goes to first, and everything derived.

SQLite is the embedded default (:class:`SQLiteStore`); everything else in memci is
derived from what the store holds and can be rebuilt from it.
"""

from memci.store._migrations import CORE_MIGRATIONS, Migration
from memci.store._sqlite import SessionRecord, SQLiteStore, message_from_row

__all__ = ["CORE_MIGRATIONS", "Migration", "SQLiteStore", "SessionRecord", "message_from_row"]
