"""The SQLite store: one file, its connection and transactions; the log's statements are shared.

The message log's statements are :class:`~memci.store._sql.SqlLog`'s, the same as
PostgreSQL's; this module holds what only SQLite does. Invariants:

- a message is durable when :meth:`SQLiteStore.append` returns (WAL, ``synchronous=FULL``
  by default);
- one call to ``append`` is one transaction: all of its messages are stored or none;
- ``seq`` is 1, 2, 3 … per session with no duplicate, also with several processes
  appending to one session (the next seq is read inside a ``BEGIN IMMEDIATE`` write
  transaction, which SQLite serializes across processes), and with no gap until messages
  are deleted: a deleted seq is never given again (the session keeps the highest seq it
  gave, ``top_seq``), and the session's ``epoch`` grows with every deletion
  (:meth:`SQLiteStore.log_head`);
- a deleted session leaves a row no name finds (tenant ``''``, see
  :mod:`memci.store._sql._erase`), so its id is never given to another session;
- every write zeroes what it frees (``secure_delete``), so a deleted row's bytes leave
  the file as the deletion is checkpointed;
- every stored row can be read back (:func:`message_from_row`), also one an older memci
  wrote before it checked every field: a ``tokens`` that is not a whole number is read as
  an estimate from the size of its parts (here and in :data:`TOKENS_SQL`, for planning),
  a ``created_at`` outside what can be converted to UTC as the nearest instant that can,
  an unreadable one as None, metadata that is not a JSON object is kept as text under
  ``"unreadable"``;
- a tool output kept whole in an artifact file is stored once: its row holds the head
  (:data:`ROW_HEAD_CHARS`) and the file's SHA-256, and :meth:`SQLiteStore.messages` reads
  the whole back through :attr:`SQLiteStore.output_reader` (``whole=False``: the head);
- the SQLite in use is :data:`~memci.store.sqlite._dialect.MIN_SQLITE` or later, checked
  before the file is touched;
- every failure of SQLite raises :class:`~memci.errors.StoreError` (see
  :mod:`memci.store.sqlite._failures`), and a failed write leaves nothing of its transaction.

One connection per store, shared by threads under a lock; SQLite serializes the rest. It
is opened with the driver :mod:`memci.store.sqlite._driver` chooses (the standard ``sqlite3``, or
``pysqlite3`` where only it can load extensions), and sqlite-vec is loaded into it when
installed (:attr:`SQLiteStore.sqlite_vec`).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar

from memci._lazy import LazyLogger, pathlib
from memci.errors import StoreCorruptError, StoreError
from memci.store._sql import Migration, SqlContextStore, SqlLog, Transactions, ran_here
from memci.store.sqlite._dialect import SQLITE, require_sqlite
from memci.store.sqlite._driver import connect, driver, errors, load_sqlite_vec
from memci.store.sqlite._failures import store_error
from memci.store.sqlite._migrations import CORE_MIGRATIONS
from memci.store.sqlite._migrations_jobs import JOBS_MIGRATIONS
from memci.store.sqlite._migrations_memory import MEMORY_MIGRATIONS
from memci.store.sqlite._migrations_server import SERVER_MIGRATIONS
from memci.store.sqlite._migrations_workspace import WORKSPACE_MIGRATIONS
from memci.store.sqlite._parts import SQLiteParts

__all__ = ["CACHE_KIB", "TOKENS_SQL", "SQLiteStore"]

T = TypeVar("T")

_BUSY_TIMEOUT_MS = 60_000

#: The connection's page cache, KiB (SQLite's default is 2,000). A steady build of a
#: 100,000-message session reads the pages of its search's doclists, the entries and
#: memory items it ranks, and the window's rows: with 2 MB they did not stay between
#: builds, and each build read ~760 pages again from the file; with 16 MiB, ~53 (what
#: the writes between builds changed). Pages are cached as they are read, so a small
#: store never holds more than its size.
CACHE_KIB = 16_384

#: A row's tokens, or (written by an older memci without checking) an estimate: about
#: four characters of its parts a token. memci.store._rows reads a row the same way. The
#: parts are read by their own lookup, made only for such a row: the planning read is
#: then covered by the index ``messages_plan`` and reads no message body.
TOKENS_SQL = ("CASE WHEN typeof(m.tokens) = 'integer' AND m.tokens >= 0 THEN m.tokens"
              " ELSE (SELECT length(b.parts) / 4 FROM messages b"
              " WHERE b.session_id = m.session_id AND b.seq = m.seq) END")

# Each component's migration series but ``core`` (applied when the store opens): applied
# when a part of it is first used (see SQLiteStore.ready).
_SERIES: dict[str, Sequence[Migration]] = {
    "workspace": WORKSPACE_MIGRATIONS, "memory": MEMORY_MIGRATIONS, "jobs": JOBS_MIGRATIONS,
    "server": SERVER_MIGRATIONS,
}

logger = LazyLogger("memci.store")

# The table that makes a SQLite file a memci store: it records the migrations applied.
_MIGRATIONS_TABLE = "memci_migrations"
_MIGRATIONS_DDL = (f"CREATE TABLE IF NOT EXISTS {_MIGRATIONS_TABLE} (component TEXT NOT NULL,"
                   " version INTEGER NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL,"
                   " PRIMARY KEY (component, version))")


def _refuse_empty(path: pathlib.Path) -> None:
    """Raise for an existing file of 0 bytes: SQLite would take it for a new database.

    memci never leaves one (see :func:`_create`): a store cut to nothing, or a file made
    by something else, must not open as a store that lost every message.
    """
    try:
        empty = path.stat().st_size == 0
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"cannot open the store at {path}: {exc}; check that the file "
                         "and its folder exist and are readable by this user") from exc
    if empty:
        raise StoreCorruptError(
            f"cannot open the store at {path}: the file is empty (0 bytes), so it holds no "
            "memci store. If it held your messages, restore it from a backup; to start a "
            "new store there, delete it first (or give a path that does not exist)")


def _create(path: pathlib.Path) -> None:
    """Make the store file at ``path`` if there is none, never visible half-made.

    The file is made beside it (WAL mode, the migrations table) and linked into place:
    another process opening the same new path meanwhile finds no file, or a memci store,
    never an empty one. Whoever links first wins; the others open that file. Where the
    file system has no hard links, SQLite makes the file where it is (as before).
    """
    if path.exists():
        return
    temp = path.with_name(f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.new")
    try:
        made = connect(temp, isolation_level=None)
        try:
            made.execute("PRAGMA journal_mode = WAL")
            made.execute(_MIGRATIONS_DDL)
        finally:
            made.close()
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
    except errors() as exc:
        raise store_error(exc, path, "create the store at") from exc
    except OSError:
        pass  # no hard links here: connect() makes the file in place
    finally:
        for leftover in (temp, temp.with_name(temp.name + "-wal"),
                         temp.with_name(temp.name + "-shm")):
            with contextlib.suppress(OSError):
                leftover.unlink()


class SQLiteStore(SQLiteParts, SqlLog):
    """The embedded store: one SQLite file in WAL mode.

    :attr:`sqlite_vec` says whether sqlite-vec (vector search) is loaded into the store's
    connection. Its other parts (working state, artifacts' rows, jobs, keys, the search
    index) are made on first use (see :mod:`memci.store.sqlite._parts`).
    """

    _TOKENS = TOKENS_SQL

    def __init__(self, path: str | pathlib.Path, *, synchronous: str = "FULL") -> None:
        self.path = pathlib.Path(path)
        self.location = str(self.path)
        if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise StoreError(f"synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}")
        errors()  # chooses the driver: a bad MEMCI_SQLITE_DRIVER raises here
        require_sqlite(driver().sqlite_version, self.location)
        self._lock = self._parts_lock = threading.RLock()
        self._depth = 0  # nesting of write(): >0 while a transaction is open
        self._committed: list[Callable[[], object]] = []  # on_commit's, of the open write
        self._migrated: set[str] = set()
        self._migrated_before: set[str] = set()  # as it was when the transaction began
        self._db: sqlite3.Connection | None = None
        self._synchronous = synchronous.upper()
        self.sqlite_vec = False
        #: Reads a tool output kept whole in an artifact file, by its SHA-256; set by the
        #: artifact store made over this store (see :meth:`messages`).
        self.output_reader: Callable[[str], str] | None = None
        #: The store's transactions as the shared statements use them.
        self.sql = Transactions(self, SQLITE)
        #: Page states, events and keyed values of sessions (compare-and-swap on a version).
        self.context = SqlContextStore(self.sql)
        try:
            self._open(synchronous.upper())
            fresh = self._fresh()
            self.migrate("core", CORE_MIGRATIONS)
            if fresh:
                # Nothing was ever freed in it without being zeroed (see _open).
                from memci.store.sqlite._erase import mark_zeroed  # deletions: a new file

                with self.write() as db:
                    mark_zeroed(db)
        except BaseException:
            with contextlib.suppress(StoreError):
                self.close()  # the reason it failed is what the caller needs to see
            raise

    def _open(self, synchronous: str) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot open the store at {self.path}: cannot make its folder "
                             f"({exc}); check the path and its permissions") from exc
        in_memory = str(self.path) == ":memory:"
        if not in_memory:
            _refuse_empty(self.path)
            _create(self.path)
        try:
            self._db = db = connect(
                self.path, isolation_level=None, check_same_thread=False,
                timeout=_BUSY_TIMEOUT_MS / 1000,
            )
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            # Reading the schema reads page 1 and the schema table: a foreign file, or one
            # damaged there, fails here, when opened, not at the first session; and before
            # anything is written to it.
            tables = [str(r[0]) for r in db.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")]
            if not in_memory and _MIGRATIONS_TABLE not in tables:
                held = f"its tables: {', '.join(tables[:8])}" if tables else "it has no tables"
                raise StoreCorruptError(
                    f"cannot open the store at {self.path}: it is a SQLite database but not "
                    f"a memci store ({held}). Give memci a path of its own (one that does not "
                    "exist makes a new store); if this file held memci's messages, restore "
                    "it from a backup")
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal" and not in_memory:
                raise StoreError(f"cannot put {self.path} in WAL mode (got {mode})")
            db.execute(f"PRAGMA synchronous = {synchronous}")
            self._synchronous = synchronous
            db.execute("PRAGMA foreign_keys = ON")
            # Whatever a write frees (a deleted row, an old version of a changed one, a
            # page) is overwritten with zeros, so no deleted byte stays in the file: a
            # scrub then only empties the write-ahead log (memci.store.sqlite._erase).
            db.execute("PRAGMA secure_delete = ON")
            db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        except errors() as exc:
            raise store_error(exc, self.path, "open the store at") from exc
        self.sqlite_vec = load_sqlite_vec(db)

    def _fresh(self) -> bool:
        """Whether the file holds no table yet (a store being made)."""
        with self.read() as db:
            return int(db.execute("SELECT COUNT(*) FROM sqlite_schema").fetchone()[0]) == 0

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (a checkpoint folds the WAL into the database file)."""
        with self._lock:
            db, self._db = self._db, None
            if db is None:
                return
            try:
                db.close()
            except errors() as exc:
                raise store_error(exc, self.path, "close") from exc

    @property
    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"the store at {self.path} is closed: open it again")
        return self._db

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): commit on success, roll back on error.

        Writes opened inside it (by this thread, which holds the store's lock) join it, so
        :meth:`atomic` makes several parts' writes one transaction.

        ``durable=False`` (a cache any process derives again) commits without waiting for
        the disk (``synchronous=NORMAL`` for this transaction): a power cut may lose it,
        never corrupt the file nor any durable write before or after it.

        A failure of SQLite in the transaction raises :class:`StoreError` (a full disk
        :class:`~memci.errors.StoreFullError`, a damaged file
        :class:`~memci.errors.StoreCorruptError`); nothing of the transaction is kept.
        """
        with self._lock:
            db = self._conn
            if self._depth:
                # Inside a write already (``atomic``): join it; the outermost one commits.
                self._depth += 1
                try:
                    yield db
                finally:
                    self._depth -= 1
                return
            relaxed = not durable and self._synchronous != "NORMAL"
            try:
                if relaxed:
                    db.execute("PRAGMA synchronous = NORMAL")
                db.execute("BEGIN IMMEDIATE")
            except errors() as exc:
                self._restore_synchronous(db, relaxed)
                raise store_error(exc, self.path, "start a write on") from exc
            self._depth = 1
            self._migrated_before = set(self._migrated)
            try:
                yield db
            except errors() as exc:
                self._rollback(db)
                raise store_error(exc, self.path, "write to") from exc
            except BaseException:
                self._rollback(db)
                raise
            finally:
                self._depth = 0
                committed, self._committed = self._committed, []
            try:
                db.execute("COMMIT")
            except errors() as exc:
                self._rollback(db)
                raise store_error(exc, self.path, "commit to") from exc
            finally:
                self._restore_synchronous(db, relaxed)
            for work in committed:
                work()

    def on_commit(self, work: Callable[[], object]) -> None:
        """Run ``work`` once this thread's open write has committed (after it, outside it).

        Dropped when that write rolls back, or when none is open.
        """
        with self._lock:
            if self._depth:
                self._committed.append(work)

    def _restore_synchronous(self, db: sqlite3.Connection, relaxed: bool) -> None:
        if relaxed:
            try:
                db.execute(f"PRAGMA synchronous = {self._synchronous}")
            except errors() as exc:
                raise store_error(exc, self.path, "configure") from exc

    def beside(self, reads: Callable[[], T]) -> Callable[[], T]:
        """Run ``reads`` now: one connection serves this store's reads one at a time."""
        return ran_here(reads)

    def another(self) -> SQLiteStore:
        """A second store on the same file, with its own connection (for workers).

        An in-memory store has no second handle: it is returned itself.
        """
        if str(self.path) == ":memory:":
            return self
        return SQLiteStore(self.path, synchronous="FULL")

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction for every write made inside the block (all or nothing)."""
        with self.write():
            yield

    def _rollback(self, db: sqlite3.Connection) -> None:
        # A migration applied in the transaction is undone with it: apply it again later.
        self._migrated = self._migrated_before
        # SQLite may already have rolled the transaction back by itself (a full disk,
        # an I/O error): a second ROLLBACK would fail and hide the reason.
        if not db.in_transaction:
            return
        try:
            db.execute("ROLLBACK")
        except errors() as exc:
            # What was not committed is not in the file; the next open recovers.
            logger.warning("cannot roll back a failed write on %s: %s", self.path, exc)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection, for reads, under the store's lock.

        A failure of SQLite while reading raises :class:`StoreError`.
        """
        with self._lock:
            try:
                yield self._conn
            except errors() as exc:
                raise store_error(exc, self.path, "read from") from exc

    def snapshot(self) -> AbstractContextManager[sqlite3.Connection]:
        """The connection, for reads (one connection: what it reads is the file's state)."""
        return self.read()

    def ready(self, *components: str) -> None:
        """Apply the migration series of ``components`` (``workspace``, ``memory`` …)."""
        for component in components:
            self.migrate(component, _SERIES[component])

    def migrate(self, component: str, migrations: Sequence[Migration]) -> None:
        """Apply the migrations of ``component`` not applied yet, each in one transaction."""
        if component in self._migrated:
            return
        newest = max((m.version for m in migrations), default=0)
        if "core" in self._migrated and self.schema_version(component) == newest:
            # Up to date: only read, so a part opened to read never waits on a writer.
            self._migrated.add(component)
            return
        with self.write() as db:
            db.execute(_MIGRATIONS_DDL)
            done = {int(r[0]) for r in db.execute(
                "SELECT version FROM memci_migrations WHERE component = ?", (component,))}
            if done and max(done) > newest:
                raise StoreError(
                    f"{self.path} is at {component} schema version {max(done)}, newer than "
                    f"this memci ({newest}); upgrade memci"
                )
            for migration in migrations:
                if migration.version in done:
                    continue
                for statement in _statements(migration.sql):
                    db.execute(statement)
                db.execute(
                    "INSERT INTO memci_migrations (component, version, name, applied_at)"
                    " VALUES (?, ?, ?, ?)",
                    (component, migration.version, migration.name, _now().isoformat()),
                )
        self._migrated.add(component)


def _statements(sql: str) -> list[str]:
    """The statements of a migration, one by one (a trigger's body holds semicolons)."""
    lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
    found = [""]
    for piece in "\n".join(lines).split(";"):
        found[-1] += piece + ";"
        if sqlite3.complete_statement(found[-1]):
            found.append("")
    return [s.strip().removesuffix(";").strip() for s in found if s.strip(" \n;")]


def _now() -> datetime:
    return datetime.now(UTC)

if TYPE_CHECKING:
    from memci.store import (
        ArtifactRows,
        ContextStore,
        DocStore,
        Eraser,
        ItemStore,
        JobStore,
        KeyRows,
        MessageLog,
        MessageSearch,
        VectorStore,
        WorkStore,
    )
    from memci.text import Analyzer

    def _implements(
        store: SQLiteStore, analyzer: Analyzer
    ) -> tuple[MessageLog, ContextStore, WorkStore, ArtifactRows, JobStore, KeyRows,
               MessageSearch, ItemStore, DocStore, VectorStore, Eraser]:
        """Never called: mypy checks here that each SQLite part implements its protocol."""
        return (store, store.context, store.work, store.artifact_rows, store.jobs, store.keys,
                store.search(analyzer), store.items(analyzer), store.docs(analyzer),
                store.vectors(""), store.eraser)
