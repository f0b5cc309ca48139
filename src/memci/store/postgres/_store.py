"""The PostgreSQL store: its pool, transactions and migrations; the log's statements are shared.

One database holds everything (the same tables as the SQLite store, see
:mod:`memci.store.postgres._migrations`); any number of memci processes on any number of
machines may open it together. The message log's statements are
:class:`~memci.store._sql.SqlLog`'s, the same as SQLite's. Invariants:

- a message is durable when :meth:`PostgresStore.append` returns (its transaction has
  committed; PostgreSQL's ``synchronous_commit`` decides what that means on the server);
- one call to ``append`` is one transaction: all of its messages are stored or none;
- ``seq`` is 1, 2, 3 … per session with no duplicate, whichever process appends: the
  session's row is locked (``FOR UPDATE``) inside the append transaction and the next seq
  read under that lock, so writers wait for each other per session only; there is no gap
  until messages are deleted, and a deleted seq is never given again (the session keeps
  the highest seq it gave, ``top_seq``; its ``epoch`` grows with every deletion, see
  :meth:`PostgresStore.log_head`);
- a deleted session leaves a row no name finds (tenant ``''``, see
  :mod:`memci.store._sql._erase`), so its id is never given to another session;
- a tool result is accepted only if it answers an open tool call of its session;
- a tool output kept whole outside its row is read back through
  :attr:`PostgresStore.output_reader`, as in the SQLite store;
- every failure of PostgreSQL raises a :class:`~memci.errors.StoreError` that says what
  to do (see :mod:`memci.store.postgres._failures`), and a failed write leaves nothing.

Connections come from a pool (``psycopg_pool``; its size from ``pool_size``, else
``MEMCI_PG_POOL_SIZE``, else 10), shared by threads. Outside a transaction each read takes
a pooled connection in autocommit mode; :meth:`write` (and :meth:`atomic`) binds one
connection to the calling thread for the whole transaction, so the reads and writes of
every part inside it see one another and commit together. The schema is migrated when the
store opens, under an advisory lock, on a connection of its own.
"""

from __future__ import annotations

import contextvars
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg_pool

from memci.errors import ConfigError, StoreError
from memci.store._sql import SqlContextStore, SqlLog, Transactions, ran_here
from memci.store.postgres._db import Connection
from memci.store.postgres._dialect import POSTGRES
from memci.store.postgres._failures import store_error
from memci.store.postgres._migrations import MIGRATION_LOCK, SERIES
from memci.store.postgres._parts import PostgresParts

__all__ = ["BESIDE_THREADS", "DEFAULT_POOL_SIZE", "ENV_POOL_SIZE", "PostgresStore", "redact"]

T = TypeVar("T")

ENV_POOL_SIZE = "MEMCI_PG_POOL_SIZE"
DEFAULT_POOL_SIZE = 10
_CONNECT_TIMEOUT = 15  # seconds to reach the server when the store opens
_POOL_TIMEOUT = 30.0  # seconds a caller waits for a free pooled connection
# A pooled connection idle longer than this is checked (one round trip) before it is
# handed out: one that a restarted server or a network cut left broken is replaced, and
# a busy store does not pay the check on every read.
_CHECK_IDLE = 30.0

# Threads that run a caller's reads beside its own (see PostgresStore.beside): at most
# this many, and never more than half the pool, so callers keep connections for theirs.
_BESIDE_MAX = 4
#: The name their threads' names start with.
BESIDE_THREADS = "memci-pg-reads"

_PG_ERRORS = (psycopg.Error, psycopg_pool.PoolTimeout, psycopg_pool.PoolClosed)


def redact(url: str) -> str:
    """``url`` without its password (for messages and ``store.location``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _pool_size(given: int | None) -> int:
    if given is None:
        text = os.environ.get(ENV_POOL_SIZE, "").strip()
        if not text:
            return DEFAULT_POOL_SIZE
        try:
            given = int(text)
        except ValueError as exc:
            raise ConfigError(f"{ENV_POOL_SIZE} must be a whole number, not {text!r}") from exc
    if not 1 <= given <= 1000:
        raise ConfigError(f"the PostgreSQL pool size must be between 1 and 1000, not {given}")
    return given


def _statements(sql: str) -> list[str]:
    """A migration's statements: split at ``;``, except inside a ``$$`` body (``DO``)."""
    lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
    out = [""]
    for index, piece in enumerate("\n".join(lines).split("$$")):
        if index % 2:  # inside $$ … $$: one statement's body, whatever it holds
            out[-1] += f"$${piece}$$"
            continue
        first, *rest = piece.split(";")
        out[-1] += first
        out += rest
    return [s.strip() for s in out if s.strip()]


def _now() -> datetime:
    return datetime.now(UTC)


class _Idle:
    """When each pooled connection was given back: only ones idle a while are checked."""

    def __init__(self) -> None:
        self._returned: weakref.WeakKeyDictionary[Connection, float] = (
            weakref.WeakKeyDictionary())

    def returned(self, conn: Connection) -> None:
        """The pool's ``reset`` and ``configure``: ``conn`` is idle from now.

        A connection the pool has just made was just seen working: the first request
        handed it does not ping it (a pool that grows under load made a build's first
        read of a new connection one statement more).
        """
        self._returned[conn] = time.monotonic()

    def check(self, conn: Connection) -> None:
        """The pool's ``check``: ping ``conn`` unless it was in use a moment ago."""
        since = self._returned.get(conn)
        if since is None or time.monotonic() - since > _CHECK_IDLE:
            psycopg_pool.ConnectionPool.check_connection(conn)


class _Local(threading.local):
    conn: Connection | None = None
    depth: int = 0
    after: tuple[Callable[[Connection], object], ...] = ()


class PostgresStore(PostgresParts, SqlLog):
    """A memci store in a PostgreSQL database, shared by every process that opens it.

    ``url`` is a libpq URL (``postgresql://user:password@host:5432/dbname``, query
    options such as ``sslmode=require`` or ``host=/socket/dir`` included).
    """

    def __init__(self, url: str, *, pool_size: int | None = None) -> None:
        self.url = url
        self.location = redact(url)
        self._local = _Local()
        self._derived: set[str] = set()
        self._derive_lock = threading.Lock()
        self._beside: ThreadPoolExecutor | None = None
        self._beside_lock = threading.Lock()
        self._parts_lock = threading.RLock()
        #: Reads a tool output kept whole outside its row, by its SHA-256 (set by the
        #: artifact store made over this store).
        self.output_reader: Callable[[str], str] | None = None
        #: The store's transactions as the shared statements use them.
        self.sql = Transactions(self, POSTGRES)
        #: Page states, events and keyed values of sessions (compare-and-swap on a version).
        self.context = SqlContextStore(self.sql)
        size = _pool_size(pool_size)
        self._migrate()
        idle = _Idle()
        self._pool: psycopg_pool.ConnectionPool[Connection] = psycopg_pool.ConnectionPool(
            url, min_size=1, max_size=size, kwargs={"autocommit": True},
            configure=idle.returned, check=idle.check, reset=idle.returned,
            timeout=_POOL_TIMEOUT,
            name="memci", open=False)
        try:
            self._pool.open(wait=False)
        except _PG_ERRORS as exc:
            raise store_error(exc, self.location, "open the store at") from exc

    # -- connections and transactions ----------------------------------------------------

    def _connect(self) -> Connection:
        """A connection of its own (migrations, derived tables): never waits on the pool."""
        try:
            conn: Connection = psycopg.connect(self.url, autocommit=True,
                                               connect_timeout=_CONNECT_TIMEOUT)
        except psycopg.Error as exc:
            raise store_error(exc, self.location, "open the store at") from exc
        return conn

    @contextmanager
    def write(self, *, durable: bool = True) -> Iterator[Connection]:
        """A write transaction: commit on success, roll back on error.

        Writes opened inside it on the same thread join it, so :meth:`atomic` makes
        several parts' writes one transaction. A failure of PostgreSQL raises a
        :class:`StoreError`; nothing of the transaction is kept. Every commit is as
        durable as the server's ``synchronous_commit`` makes it (``durable`` is SQLite's).
        """
        local = self._local
        if local.conn is not None:
            local.depth += 1
            try:
                yield local.conn
            finally:
                local.depth -= 1
            return
        try:
            with self._pool.connection() as conn:
                local.conn, local.depth, local.after = conn, 1, ()
                try:
                    with conn.transaction():
                        yield conn
                    committed: tuple[Callable[[Connection], object], ...] = local.after
                finally:
                    local.conn, local.depth, local.after = None, 0, ()
                for done in committed:
                    done(conn)
        except _PG_ERRORS as exc:
            raise store_error(exc, self.location, "write to") from exc

    def after_commit(self, work: Callable[[Connection], object]) -> None:
        """Run ``work`` on the connection of this thread's open write once it commits.

        Outside any transaction then; dropped if it rolls back or none is open (a
        derived table's fill runs in a transaction of its own).
        """
        if self._local.conn is not None and work not in self._local.after:
            self._local.after = (*self._local.after, work)

    def on_commit(self, work: Callable[[], object]) -> None:
        """Run ``work`` once this thread's open write has committed (after it, outside it).

        Dropped when that write rolls back, or when none is open.
        """
        self.after_commit(lambda _conn: work())

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction for every write made inside the block (all or nothing)."""
        with self.write():
            yield

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reads: the open transaction's on this thread, else a pooled one."""
        conn = self._local.conn
        if conn is not None:
            yield conn
            return
        try:
            with self._pool.connection() as pooled:
                yield pooled
        except _PG_ERRORS as exc:
            raise store_error(exc, self.location, "read from") from exc

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A connection whose statements read one snapshot (a read-only transaction)."""
        conn = self._local.conn
        if conn is not None:
            yield conn
            return
        try:
            with self._pool.connection() as pooled:
                # Sent with its BEGIN (no round trip of its own); the pooled connection
                # is put back as it was.
                pooled.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                pooled.read_only = True
                try:
                    with pooled.transaction():
                        yield pooled
                finally:
                    pooled.isolation_level = None
                    pooled.read_only = None
        except _PG_ERRORS as exc:
            raise store_error(exc, self.location, "read from") from exc

    def ready(self, *components: str) -> None:
        """Nothing to do: every migration series is applied when the store opens."""

    def locked(self, doing: str, work: Callable[[Connection], object]) -> None:
        """Run ``work`` in a transaction of its own, under the migration lock.

        On a connection of its own, so a caller's open transaction never holds (or rolls
        back) what it made, and servers doing it at once do it one after the other.
        ``doing`` says what, in an error ("make the table x in").
        """
        conn = self._connect()
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                work(conn)
        except _PG_ERRORS as exc:
            raise store_error(exc, self.location, doing) from exc
        finally:
            conn.close()

    def derive(
        self, name: str, statements: Sequence[str],
        fill: Callable[[Connection], None] | None = None,
    ) -> bool:
        """Make the derived table ``name`` (and ``fill`` it) once, committed on its own.

        Made under the migration lock (:meth:`locked`), so servers starting at once make
        it once. True when this call made it.
        """
        with self._derive_lock:
            if name in self._derived:
                return False
            made: list[bool] = []

            def make(conn: Connection) -> None:
                exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                                      (name,)).fetchone()
                made.append(not (exists and exists[0]))
                if made[0]:
                    for statement in statements:
                        conn.execute(statement.encode())
                    if fill is not None:
                        fill(conn)

            self.locked(f"make the table {name} in", make)
            self._derived.add(name)
            return made[0]

    def beside(self, reads: Callable[[], T]) -> Callable[[], T]:
        """Start ``reads`` on a thread of this store's; the returned call waits for them.

        Their statements run on a pooled connection of their own while the caller's run on
        another: the server works on both at once (each statement of a search is a round
        trip the caller waits for). Here, before this returns, when this thread has a
        write open (another connection would not see it) or the pool holds one or two
        connections. The trace context goes with them.
        """
        if self._local.conn is not None or self._pool.max_size < 3:
            return ran_here(reads)
        pool = self._beside
        if pool is None:
            with self._beside_lock:
                pool = self._beside
                if pool is None:
                    from concurrent.futures import ThreadPoolExecutor

                    pool = self._beside = ThreadPoolExecutor(
                        min(_BESIDE_MAX, self._pool.max_size // 2),
                        thread_name_prefix=BESIDE_THREADS)
        try:
            return pool.submit(contextvars.copy_context().run, reads).result
        except RuntimeError:  # the store was closed: its reads say so, as a StoreError
            return ran_here(reads)

    def another(self) -> PostgresStore:
        """A second store on the same database, with its own pool (for workers)."""
        return PostgresStore(self.url, pool_size=min(self._pool.max_size, 4))

    def close(self) -> None:
        """Close the pool's connections (and the job table's listening one)."""
        jobs = self.__dict__.get("_parts", {}).get(("jobs", ""))
        if jobs is not None:
            jobs.close()
        if self._beside is not None:
            self._beside.shutdown(wait=True)
        self._pool.close()

    # -- migrations ----------------------------------------------------------------------

    def _migrate(self) -> None:
        """Apply every series' missing migrations in one transaction, under the lock."""
        conn = self._connect()
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS memci_migrations (component text NOT NULL,"
                    " version bigint NOT NULL, name text NOT NULL, applied_at text NOT NULL,"
                    " PRIMARY KEY (component, version))")
                done = {(str(c), int(v)) for c, v in conn.execute(
                    "SELECT component, version FROM memci_migrations")}
                for component, series in SERIES:
                    newest = max(m.version for m in series)
                    have = max((v for c, v in done if c == component), default=0)
                    if have > newest:
                        raise StoreError(
                            f"{self.location} is at {component} schema version {have}, newer "
                            f"than this memci ({newest}); upgrade memci")
                    for migration in series:
                        if (component, migration.version) in done:
                            continue
                        for statement in _statements(migration.sql):
                            conn.execute(statement.encode())
                        conn.execute(
                            "INSERT INTO memci_migrations (component, version, name,"
                            " applied_at) VALUES (%s, %s, %s, %s)",
                            (component, migration.version, migration.name,
                             _now().isoformat()))
        except _PG_ERRORS as exc:
            raise store_error(exc, self.location, "migrate the store at") from exc
        finally:
            conn.close()


if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from memci.store import (
        ArtifactRows,
        ContextStore,
        DocStore,
        Eraser,
        ItemStore,
        JobStore,
        KeyRows,
        MessageSearch,
        Store,
        VectorStore,
        WorkStore,
    )
    from memci.text import Analyzer

    def _implements(
        store: PostgresStore, analyzer: Analyzer
    ) -> tuple[Store, ContextStore, WorkStore, ArtifactRows, JobStore, KeyRows,
               MessageSearch, ItemStore, DocStore, VectorStore, Eraser]:
        """Never called: mypy checks here that each PostgreSQL part implements its protocol."""
        return (store, store.context, store.work, store.artifact_rows, store.jobs, store.keys,
                store.search(analyzer), store.items(analyzer), store.docs(analyzer),
                store.vectors(""), store.eraser)
