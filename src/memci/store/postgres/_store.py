"""The PostgreSQL store: the write-back log and every other part, for several servers at once.

One database holds everything (the same tables as the SQLite store, see
:mod:`memci.store.postgres._migrations`); any number of memci processes on any number of
machines may open it together. Invariants:

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
  :mod:`memci.store.postgres._erase`), so its id is never given to another session;
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

import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg_pool

from memci.errors import (
    ConfigError,
    InvalidInputError,
    StoreError,
    UnknownSessionError,
)
from memci.messages import Message, dumps_parts
from memci.store._log import LogRow
from memci.store._records import SessionRecord
from memci.store._rows import (
    check_owner,
    message_from_row,
    orphan_result,
    row_head,
    session_from_row,
)
from memci.store.postgres._context import PostgresContextStore
from memci.store.postgres._db import Connection
from memci.store.postgres._failures import store_error
from memci.store.postgres._migrations import MIGRATION_LOCK, SERIES
from memci.store.postgres._parts import PostgresParts

__all__ = ["DEFAULT_POOL_SIZE", "ENV_POOL_SIZE", "PostgresStore", "redact"]

ENV_POOL_SIZE = "MEMCI_PG_POOL_SIZE"
DEFAULT_POOL_SIZE = 10
_CONNECT_TIMEOUT = 15  # seconds to reach the server when the store opens
_POOL_TIMEOUT = 30.0  # seconds a caller waits for a free pooled connection

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
    lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _now() -> datetime:
    return datetime.now(UTC)


class _Local(threading.local):
    conn: Connection | None = None
    depth: int = 0


class PostgresStore(PostgresParts):
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
        #: Reads a tool output kept whole outside its row, by its SHA-256 (set by the
        #: artifact store made over this store).
        self.output_reader: Callable[[str], str] | None = None
        #: Page states, events and keyed values of sessions (compare-and-swap on a version).
        self.context = PostgresContextStore(self)
        size = _pool_size(pool_size)
        self._migrate()
        self._pool: psycopg_pool.ConnectionPool[Connection] = psycopg_pool.ConnectionPool(
            url, min_size=1, max_size=size, kwargs={"autocommit": True},
            check=psycopg_pool.ConnectionPool.check_connection, timeout=_POOL_TIMEOUT,
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
    def write(self) -> Iterator[Connection]:
        """A write transaction: commit on success, roll back on error.

        Writes opened inside it on the same thread join it, so :meth:`atomic` makes
        several parts' writes one transaction. A failure of PostgreSQL raises a
        :class:`StoreError`; nothing of the transaction is kept.
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
                local.conn, local.depth = conn, 1
                try:
                    with conn.transaction():
                        yield conn
                finally:
                    local.conn, local.depth = None, 0
        except _PG_ERRORS as exc:
            raise store_error(exc, self.location, "write to") from exc

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
            with self._pool.connection() as pooled, pooled.transaction():
                pooled.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield pooled
        except _PG_ERRORS as exc:
            raise store_error(exc, self.location, "read from") from exc

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

    def another(self) -> PostgresStore:
        """A second store on the same database, with its own pool (for workers)."""
        return PostgresStore(self.url, pool_size=min(self._pool.max_size, 4))

    def close(self) -> None:
        """Close the pool's connections."""
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

    def schema_version(self, component: str = "core") -> int:
        """The number of the newest migration of ``component`` applied."""
        with self.read() as db:
            row = db.execute("SELECT MAX(version) FROM memci_migrations WHERE component = %s",
                             (component,)).fetchone()
        return int(row[0] or 0) if row else 0

    # -- sessions ------------------------------------------------------------------------

    def session(self, tenant: str, name: str) -> SessionRecord | None:
        """The session ``name`` of ``tenant``, or None."""
        with self.read() as db:
            row = db.execute(
                "SELECT id, tenant, name, user_id, settings, created_at FROM sessions"
                " WHERE tenant = %s AND name = %s AND tenant <> ''", (tenant, name)).fetchone()
        return session_from_row(row) if row else None

    def ensure_session(
        self, tenant: str, name: str, user: str | None, settings: Mapping[str, Any]
    ) -> SessionRecord:
        """Get or create the session; given settings replace the saved ones.

        Raises OwnerConflictError (nothing changed) when the session belongs to another
        user than ``user`` (see :func:`~memci.store._rows.check_owner`).
        """
        text = json.dumps(dict(settings), sort_keys=True)
        if not tenant:
            raise InvalidInputError("a session needs a non-empty tenant")
        select = ("SELECT id, tenant, name, user_id, settings, created_at FROM sessions"
                  " WHERE tenant = %s AND name = %s")
        with self.write() as db:
            row = db.execute(select, (tenant, name)).fetchone()
            if row is None:
                # Made once, whichever server asks first: the others find it made.
                db.execute(
                    "INSERT INTO sessions (tenant, name, user_id, settings, created_at)"
                    " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (tenant, name) DO NOTHING",
                    (tenant, name, user, text, _now().isoformat()))
                row = db.execute(select, (tenant, name)).fetchone()
            assert row is not None
            if (user is not None and user != row[3]) or text != row[4]:
                check_owner(name, row[3], user)
                row = db.execute(
                    "UPDATE sessions SET user_id = COALESCE(%s, user_id), settings = %s"
                    " WHERE id = %s RETURNING id, tenant, name, user_id, settings, created_at",
                    (user, text, row[0])).fetchone()
        assert row is not None
        return session_from_row(row)

    def sessions(
        self, tenant: str | None = None, *, after: int = 0, limit: int | None = None
    ) -> list[SessionRecord]:
        """Every session (of one tenant, if given), oldest first (a page: ``after``, ``limit``)."""
        sql = ("SELECT id, tenant, name, user_id, settings, created_at FROM sessions"
               " WHERE tenant <> '' AND id > %s")  # a deleted session's row is no session
        args: list[Any] = [after]
        if tenant is not None:
            sql += " AND tenant = %s"
            args.append(tenant)
        sql += " ORDER BY id"
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        with self.read() as db:
            rows = db.execute(sql, args).fetchall()
        return [session_from_row(r) for r in rows]

    # -- messages ------------------------------------------------------------------------

    def append(
        self, session: SessionRecord, messages: Sequence[Message], *,
        external: Mapping[int, str] | None = None,
    ) -> list[Message]:
        """Store ``messages`` (tokens already counted) in one transaction; return them stored.

        Raises :class:`OrphanToolResultError` (and stores nothing) when a tool result does
        not answer an open tool call of the session. ``external`` maps the position of a
        tool result to the SHA-256 of the artifact that holds its whole output: its row
        keeps only the head.
        """
        stored: list[Message] = []
        now = _now()
        external = external or {}
        with self.write() as db:
            seq = self._next_seq(db, session) - 1
            for position, message in enumerate(messages):
                seq += 1
                if message.role == "tool":
                    self._answer_call(db, session, message, seq)
                for call in message.tool_calls:
                    db.execute("INSERT INTO tool_calls (session_id, call_id, call_seq)"
                               " VALUES (%s, %s, %s)", (session.id, call.id, seq))
                created = message.created_at or now
                sha = external.get(position)
                db.execute(
                    "INSERT INTO messages (session_id, seq, role, parts, name, metadata,"
                    " created_at, tokens, output_sha256)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (session.id, seq, message.role,
                     dumps_parts(message.parts if sha is None else row_head(message).parts),
                     message.name,
                     json.dumps(dict(message.metadata), ensure_ascii=False)
                     if message.metadata else None,
                     created.isoformat(), message.tokens or 0, sha))
                stored.append(message.with_identity(
                    session=session.name, seq=seq, tokens=message.tokens or 0,
                    created_at=created))
        return stored

    def _next_seq(self, db: Connection, session: SessionRecord) -> int:
        """The seq the next message gets: after the newest, and after any ever deleted.

        Locks the session's row: it orders the session's writers (and its deletions);
        other sessions never wait on it.
        """
        found = db.execute("SELECT tenant, top_seq FROM sessions WHERE id = %s FOR UPDATE",
                           (session.id,)).fetchone()
        if found is None:
            raise UnknownSessionError(
                f"no session with id {session.id} in the store {self.location}: create "
                "the session first")
        if not found[0]:
            raise UnknownSessionError(
                f"session {session.name!r} was deleted: open it again with "
                "engine.session(name) to start a new one under that name")
        row = db.execute("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = %s",
                         (session.id,)).fetchone()
        return max(int(found[1]), int(row[0]) if row else 0) + 1

    @staticmethod
    def _answer_call(db: Connection, session: SessionRecord, message: Message, seq: int) -> None:
        result = message.tool_result
        assert result is not None
        row = db.execute(
            "SELECT call_seq FROM tool_calls WHERE session_id = %s AND call_id = %s"
            " AND result_seq IS NULL ORDER BY call_seq DESC LIMIT 1",
            (session.id, result.call_id)).fetchone()
        if row is None:
            raise orphan_result(result.call_id, session.name)
        db.execute("UPDATE tool_calls SET result_seq = %s WHERE session_id = %s"
                   " AND call_id = %s AND call_seq = %s",
                   (seq, session.id, result.call_id, row[0]))

    def log_head(self, session: SessionRecord) -> tuple[int, int]:
        """``(epoch, last seq)``: the epoch grows whenever messages are deleted.

        A process that holds a copy of the log catches up by reading what came after its
        last seq while the epoch is the one it read; another epoch means reading it again.
        Raises :class:`UnknownSessionError` when the session was deleted.
        """
        with self.read() as db:
            row = db.execute(
                "SELECT epoch, (SELECT MAX(seq) FROM messages WHERE session_id = %s)"
                " FROM sessions WHERE id = %s AND tenant <> ''", (session.id, session.id),
            ).fetchone()
        if row is None:
            raise UnknownSessionError(
                f"session {session.name!r} was deleted: open it again with "
                "engine.session(name) to start a new one under that name")
        return int(row[0]), int(row[1] or 0)

    def last_seq(self, session: SessionRecord) -> int:
        """The seq of the newest message of the session (0 when empty)."""
        with self.read() as db:
            row = db.execute("SELECT MAX(seq) FROM messages WHERE session_id = %s",
                             (session.id,)).fetchone()
        return int(row[0] or 0) if row else 0

    def messages(
        self, session: SessionRecord, *, after: int = 0, upto: int | None = None,
        whole: bool = True,
    ) -> list[Message]:
        """Messages with ``after < seq <= upto``, in order (``whole=False``: heads only)."""
        sql = ("SELECT seq, role, parts, name, metadata, created_at, tokens, output_sha256"
               " FROM messages WHERE session_id = %s AND seq > %s")
        args: list[Any] = [session.id, after]
        if upto is not None:
            sql += " AND seq <= %s"
            args.append(upto)
        with self.read() as db:
            rows = db.execute(sql + " ORDER BY seq", args).fetchall()
        out = [message_from_row(session.name, r[:7]) for r in rows]
        if whole:
            out = [self._whole(m, r[7]) if r[7] is not None else m
                   for m, r in zip(out, rows, strict=True)]
        return out

    def output_refs(self, session: SessionRecord, first: int, last: int) -> dict[int, str]:
        """The SHA-256 of every tool output with ``first <= seq <= last`` kept outside its row."""
        with self.read() as db:
            rows = db.execute(
                "SELECT seq, output_sha256 FROM messages WHERE session_id = %s"
                " AND seq BETWEEN %s AND %s AND output_sha256 IS NOT NULL",
                (session.id, first, last)).fetchall()
        return {int(r[0]): str(r[1]) for r in rows}

    def _whole(self, message: Message, sha: str) -> Message:
        result = message.tool_result
        assert result is not None
        if self.output_reader is None:
            raise StoreError(
                f"message {message.seq} of session {message.session!r} in {self.location} "
                "keeps its tool output as an artifact: open the store with memci.Engine, "
                "which reads artifacts")
        content = self.output_reader(sha)
        return replace(message, parts=(replace(result, content=content),))

    def message_sizes(
        self, session: SessionRecord, *, after: int = 0, limit: int
    ) -> list[tuple[int, int]]:
        """``(seq, bytes)`` of the first ``limit`` messages after ``after``, in order.

        Bytes as the rows hold them (parts, name, metadata; a tool output kept in a file
        counts its head: :meth:`output_refs` names those), told without reading them.
        """
        with self.read() as db:
            rows = db.execute(
                "SELECT m.seq, octet_length(m.parts) + COALESCE(octet_length(m.name), 0)"
                " + COALESCE(octet_length(m.metadata), 0) FROM messages m"
                " WHERE m.session_id = %s AND m.seq > %s ORDER BY m.seq LIMIT %s",
                (session.id, after, limit)).fetchall()
        return [(int(r[0]), int(r[1])) for r in rows]

    def log_rows(self, session: SessionRecord, *, after: int = 0) -> list[LogRow]:
        """Planning rows (seq, role, tokens, tokens as shown) of the messages after ``after``."""
        with self.read() as db:
            rows = db.execute(
                "SELECT m.seq, m.role, m.tokens, v.tokens FROM messages m"
                " LEFT JOIN message_views v ON v.session_id = m.session_id AND v.seq = m.seq"
                " WHERE m.session_id = %s AND m.seq > %s ORDER BY m.seq",
                (session.id, after)).fetchall()
        return [LogRow(int(r[0]), str(r[1]), int(r[2]), None if r[3] is None else int(r[3]))
                for r in rows]

    def branch_links(self, session: SessionRecord, *, after: int = 0) -> dict[int, int]:
        """``{seq: linked seq}`` of the messages after ``after`` that name what they continue.

        The link is the integer ``memci_branch.after`` of a message's metadata (see
        :mod:`memci.context._branches`); anything else there is no link.
        """
        with self.read() as db:
            rows = db.execute(
                "SELECT seq, metadata FROM messages WHERE session_id = %s AND seq > %s"
                " AND metadata LIKE '%%memci_branch%%' ORDER BY seq",
                (session.id, after)).fetchall()
        links: dict[int, int] = {}
        for seq, text in rows:
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                continue
            branch = value.get("memci_branch") if isinstance(value, dict) else None
            linked = branch.get("after") if isinstance(branch, dict) else None
            if isinstance(linked, int) and not isinstance(linked, bool):
                links[int(seq)] = linked
        return links

    def views(self, session: SessionRecord, first: int, last: int) -> dict[int, str]:
        """The artifact id of every tool result with ``first <= seq <= last`` that has one."""
        with self.read() as db:
            rows = db.execute(
                "SELECT seq, artifact FROM message_views WHERE session_id = %s"
                " AND seq BETWEEN %s AND %s", (session.id, first, last)).fetchall()
        return {int(r[0]): str(r[1]) for r in rows}

    def save_views(self, session: SessionRecord, views: Sequence[tuple[int, str, int]]) -> None:
        """Save ``(seq, artifact, tokens as shown)`` views of tool results."""
        if not views:
            return
        with self.write() as db, db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO message_views (session_id, seq, artifact, tokens)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (session_id, seq) DO UPDATE"
                " SET artifact = EXCLUDED.artifact, tokens = EXCLUDED.tokens",
                [(session.id, s, a, t) for s, a, t in views])

    def tool_call(
        self, session: SessionRecord, call_id: str, before: int | None
    ) -> Message | None:
        """The assistant message with the latest call ``call_id`` made before seq ``before``.

        With ``before=None``: the one with the latest open call of that id.
        """
        with self.read() as db:
            if before is None:
                row = db.execute(
                    "SELECT call_seq FROM tool_calls WHERE session_id = %s AND call_id = %s"
                    " AND result_seq IS NULL ORDER BY call_seq DESC LIMIT 1",
                    (session.id, call_id)).fetchone()
            else:
                row = db.execute(
                    "SELECT call_seq FROM tool_calls WHERE session_id = %s AND call_id = %s"
                    " AND call_seq < %s ORDER BY call_seq DESC LIMIT 1",
                    (session.id, call_id, before)).fetchone()
        if row is None:
            return None
        found = self.messages(session, after=int(row[0]) - 1, upto=int(row[0]))
        return found[0] if found else None


if TYPE_CHECKING:
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
