"""The SQLite backend: one file, and what only SQLite does.

One file in WAL mode holds everything: the log, page and session state, working state,
artifacts' rows, jobs, API keys and the search index (FTS5, and sqlite-vec vectors). The
statements both backends share are :mod:`memci.store._sql`'s, run here in SQLite's
dialect (:mod:`._dialect`, which also names the oldest SQLite memci runs on); this
package keeps the connection and its transactions (driver, WAL, busy handling), FTS5
keyword search, sqlite-vec vectors, the scrub, and the schema: each component's numbered
migration series recorded in ``memci_migrations`` (``core``, ``workspace``, ``memory``,
``jobs``, ``server``).
"""

from memci.store._rows import ROW_HEAD_CHARS, message_from_row, row_head
from memci.store.sqlite._migrations import CORE_MIGRATIONS, Migration
from memci.store.sqlite._migrations_jobs import JOBS_MIGRATIONS
from memci.store.sqlite._migrations_memory import MEMORY_MIGRATIONS
from memci.store.sqlite._migrations_server import SERVER_MIGRATIONS
from memci.store.sqlite._migrations_workspace import WORKSPACE_MIGRATIONS
from memci.store.sqlite._store import SQLiteStore

__all__ = ["CORE_MIGRATIONS", "JOBS_MIGRATIONS", "MEMORY_MIGRATIONS", "ROW_HEAD_CHARS",
           "SERVER_MIGRATIONS", "WORKSPACE_MIGRATIONS", "Migration", "SQLiteStore",
           "message_from_row", "row_head"]
