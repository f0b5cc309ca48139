"""The SQLite write-back log: every message ever added, in order, per session.

Invariants:

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
  :mod:`memci.store.sqlite._erase`), so its id is never given to another session;
- every write zeroes what it frees (``secure_delete``), so a deleted row's bytes leave
  the file as the deletion is checkpointed;
- a tool result is accepted only if it answers an open tool call of its session (made
  earlier, or earlier in the same batch);
- every stored row can be read back (:func:`message_from_row`), also one an older memci
  wrote before it checked every field: a ``tokens`` that is not a whole number is read as
  an estimate from the size of its parts, a ``created_at`` outside what can be converted
  to UTC as the nearest instant that can, an unreadable one as None, metadata that is not
  a JSON object is kept as text under ``"unreadable"``.
- a tool output kept whole in an artifact file is stored once: its row holds the head
  (:data:`ROW_HEAD_CHARS`) and the file's SHA-256, and :meth:`SQLiteStore.messages` reads
  the whole back through :attr:`SQLiteStore.output_reader` (``whole=False``: the head);
- every failure of SQLite raises :class:`~memci.errors.StoreError` (see
  :mod:`memci.store.sqlite._failures`), and a failed write leaves nothing of its transaction.

One connection per store, shared by threads under a lock; SQLite serializes the rest. It
is opened with the driver :mod:`memci.store.sqlite._driver` chooses (the standard ``sqlite3``, or
``pysqlite3`` where only it can load extensions), and sqlite-vec is loaded into it when
installed (:attr:`SQLiteStore.sqlite_vec`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memci.errors import (
    InvalidInputError,
    StoreCorruptError,
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
from memci.store.sqlite._context import SQLiteContextStore
from memci.store.sqlite._driver import connect, errors, load_sqlite_vec
from memci.store.sqlite._erase import mark_zeroed
from memci.store.sqlite._failures import store_error
from memci.store.sqlite._migrations import CORE_MIGRATIONS, Migration
from memci.store.sqlite._parts import StoreParts

__all__ = ["SQLiteStore"]

_BUSY_TIMEOUT_MS = 60_000

# A row's tokens, or (written by an older memci without checking) an estimate: about four
# characters of its parts a token. memci.store._rows reads a row the same way.
TOKENS_SQL = ("CASE WHEN typeof(m.tokens) = 'integer' AND m.tokens >= 0 THEN m.tokens"
               " ELSE length(m.parts) / 4 END")



logger = logging.getLogger("memci.store")

# The table that makes a SQLite file a memci store: it records the migrations applied.
_MIGRATIONS_TABLE = "memci_migrations"
_MIGRATIONS_DDL = (f"CREATE TABLE IF NOT EXISTS {_MIGRATIONS_TABLE} (component TEXT NOT NULL,"
                   " version INTEGER NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL,"
                   " PRIMARY KEY (component, version))")


def _refuse_empty(path: Path) -> None:
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


def _create(path: Path) -> None:
    """Make the store file at ``path`` if there is none, never visible half-made.

    The file is made beside it (WAL mode, the migrations table) and linked into place:
    another process opening the same new path meanwhile finds no file, or a memci store,
    never an empty one. Whoever links first wins; the others open that file. Where the
    file system has no hard links, SQLite makes the file where it is (as before).
    """
    if path.exists():
        return
    temp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.new")
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


class SQLiteStore(StoreParts):
    """The embedded store: one SQLite file in WAL mode.

    :attr:`sqlite_vec` says whether sqlite-vec (vector search) is loaded into the store's
    connection. Its other parts (working state, artifacts' rows, jobs, keys, the search
    index) are made on first use (see :mod:`memci.store.sqlite._parts`).
    """

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        self.path = Path(path)
        self.location = str(self.path)
        if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise StoreError(f"synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}")
        errors()  # chooses the driver: a bad MEMCI_SQLITE_DRIVER raises here
        self._lock = threading.RLock()
        self._depth = 0  # nesting of write(): >0 while a transaction is open
        self._migrated: set[str] = set()
        self._migrated_before: set[str] = set()  # as it was when the transaction began
        self._db: sqlite3.Connection | None = None
        self._synchronous = synchronous.upper()
        self.sqlite_vec = False
        #: Reads a tool output kept whole in an artifact file, by its SHA-256; set by the
        #: artifact store made over this store (see :meth:`messages`).
        self.output_reader: Callable[[str], str] | None = None
        #: Page states, events and keyed values of sessions (compare-and-swap on a version).
        self.context = SQLiteContextStore(self)
        try:
            self._open(synchronous.upper())
            fresh = self._fresh()
            self.migrate("core", CORE_MIGRATIONS)
            if fresh:
                # Nothing was ever freed in it without being zeroed (see _open).
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
            try:
                db.execute("COMMIT")
            except errors() as exc:
                self._rollback(db)
                raise store_error(exc, self.path, "commit to") from exc
            finally:
                self._restore_synchronous(db, relaxed)

    def _restore_synchronous(self, db: sqlite3.Connection, relaxed: bool) -> None:
        if relaxed:
            try:
                db.execute(f"PRAGMA synchronous = {self._synchronous}")
            except errors() as exc:
                raise store_error(exc, self.path, "configure") from exc

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

    def schema_version(self, component: str = "core") -> int:
        """The number of the newest migration of ``component`` applied."""
        with self.read() as db:
            row = db.execute("SELECT MAX(version) FROM memci_migrations WHERE component = ?",
                             (component,)).fetchone()
        return int(row[0] or 0)

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

    # -- sessions ------------------------------------------------------------------------

    def session(self, tenant: str, name: str) -> SessionRecord | None:
        """The session ``name`` of ``tenant``, or None."""
        with self.read() as db:
            row = db.execute(
                "SELECT id, tenant, name, user_id, settings, created_at FROM sessions"
                " WHERE tenant = ? AND name = ? AND tenant != ''", (tenant, name),
            ).fetchone()
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
        with self.write() as db:
            row = db.execute(
                "SELECT id, user_id, settings FROM sessions WHERE tenant = ? AND name = ?",
                (tenant, name),
            ).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO sessions (tenant, name, user_id, settings, created_at)"
                    " VALUES (?, ?, ?, ?, ?)", (tenant, name, user, text, _now().isoformat()),
                )
            elif (user is not None and user != row[1]) or text != row[2]:
                check_owner(name, row[1], user)
                db.execute(
                    "UPDATE sessions SET user_id = COALESCE(?, user_id), settings = ?"
                    " WHERE id = ?", (user, text, row[0]),
                )
        record = self.session(tenant, name)
        assert record is not None
        return record

    def sessions(
        self, tenant: str | None = None, *, after: int = 0, limit: int | None = None
    ) -> list[SessionRecord]:
        """Every session (of one tenant, if given), oldest first (a page: ``after``, ``limit``)."""
        sql = ("SELECT id, tenant, name, user_id, settings, created_at FROM sessions"
               " WHERE tenant != '' AND id > ?")  # a deleted session's row is no session
        args: list[Any] = [after]
        if tenant is not None:
            sql += " AND tenant = ?"
            args.append(tenant)
        sql += " ORDER BY id"
        if limit is not None:
            sql += " LIMIT ?"
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
        not answer an open tool call of the session. Inside ``atomic()``, the derived rows
        written after it (search entries, artifacts, views) commit with the messages.
        ``external`` maps the position of a tool result in ``messages`` to the SHA-256 of
        the artifact file that holds its whole output (written before): its row then keeps
        only the head (:data:`ROW_HEAD_CHARS`), so it is stored once.
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
                    db.execute(
                        "INSERT INTO tool_calls (session_id, call_id, call_seq)"
                        " VALUES (?, ?, ?)", (session.id, call.id, seq),
                    )
                created = message.created_at or now
                sha = external.get(position)
                db.execute(
                    "INSERT INTO messages (session_id, seq, role, parts, name, metadata,"
                    " created_at, tokens, output_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session.id, seq, message.role,
                        dumps_parts(message.parts if sha is None else row_head(message).parts),
                        message.name,
                        json.dumps(dict(message.metadata), ensure_ascii=False)
                        if message.metadata else None,
                        created.isoformat(), message.tokens or 0, sha,
                    ),
                )
                stored.append(message.with_identity(
                    session=session.name, seq=seq, tokens=message.tokens or 0,
                    created_at=created,
                ))
        return stored

    @staticmethod
    def _next_seq(db: sqlite3.Connection, session: SessionRecord) -> int:
        """The seq the next message gets: after the newest, and after any ever deleted."""
        row = db.execute(
            "SELECT MAX(top_seq, COALESCE((SELECT MAX(seq) FROM messages WHERE"
            " session_id = ?), 0)) FROM sessions WHERE id = ? AND tenant != ''",
            (session.id, session.id)).fetchone()
        if row is None:
            raise UnknownSessionError(
                f"session {session.name!r} was deleted: open it again with "
                "engine.session(name) to start a new one under that name")
        return int(row[0]) + 1

    @staticmethod
    def _answer_call(
        db: sqlite3.Connection, session: SessionRecord, message: Message, seq: int
    ) -> None:
        result = message.tool_result
        assert result is not None
        row = db.execute(
            "SELECT call_seq FROM tool_calls WHERE session_id = ? AND call_id = ?"
            " AND result_seq IS NULL ORDER BY call_seq DESC LIMIT 1",
            (session.id, result.call_id),
        ).fetchone()
        if row is None:
            raise orphan_result(result.call_id, session.name)
        db.execute(
            "UPDATE tool_calls SET result_seq = ? WHERE session_id = ? AND call_id = ?"
            " AND call_seq = ?", (seq, session.id, result.call_id, row[0]),
        )

    def log_head(self, session: SessionRecord) -> tuple[int, int]:
        """``(epoch, last seq)``: the epoch grows whenever messages are deleted.

        A process that holds a copy of the log catches up by reading what came after its
        last seq while the epoch is the one it read; another epoch means reading it again.
        Raises :class:`UnknownSessionError` when the session was deleted.
        """
        with self.read() as db:
            row = db.execute(
                "SELECT epoch, (SELECT MAX(seq) FROM messages WHERE session_id = ?)"
                " FROM sessions WHERE id = ? AND tenant != ''", (session.id, session.id),
            ).fetchone()
        if row is None:
            raise UnknownSessionError(
                f"session {session.name!r} was deleted: open it again with "
                "engine.session(name) to start a new one under that name")
        return int(row[0]), int(row[1] or 0)

    def last_seq(self, session: SessionRecord) -> int:
        """The seq of the newest message of the session (0 when empty)."""
        with self.read() as db:
            row = db.execute(
                "SELECT MAX(seq) FROM messages WHERE session_id = ?", (session.id,)
            ).fetchone()
        return int(row[0] or 0)

    def messages(
        self, session: SessionRecord, *, after: int = 0, upto: int | None = None,
        whole: bool = True,
    ) -> list[Message]:
        """Messages with ``after < seq <= upto``, in order.

        A tool output stored as an artifact file is read back whole from its file; with
        ``whole=False`` it keeps the head its row holds (planning a context needs no more).
        """
        sql = ("SELECT seq, role, parts, name, metadata, created_at, tokens, output_sha256"
               " FROM messages WHERE session_id = ? AND seq > ?")
        args: list[Any] = [session.id, after]
        if upto is not None:
            sql += " AND seq <= ?"
            args.append(upto)
        with self.read() as db:
            rows = db.execute(sql + " ORDER BY seq", args).fetchall()
        out = [message_from_row(session.name, r[:7]) for r in rows]
        if whole:
            out = [self._whole(m, r[7]) if r[7] is not None else m for m, r in zip(out, rows,
                                                                                     strict=True)]
        return out

    def output_refs(self, session: SessionRecord, first: int, last: int) -> dict[int, str]:
        """The SHA-256 of every tool output with ``first <= seq <= last`` kept in a file."""
        with self.read() as db:
            rows = db.execute(
                "SELECT seq, output_sha256 FROM messages WHERE session_id = ?"
                " AND seq BETWEEN ? AND ? AND output_sha256 IS NOT NULL",
                (session.id, first, last),
            ).fetchall()
        return {int(r[0]): str(r[1]) for r in rows}

    def _whole(self, message: Message, sha: str) -> Message:
        result = message.tool_result
        assert result is not None
        if self.output_reader is None:
            raise StoreError(
                f"message {message.seq} of session {message.session!r} in {self.path} keeps "
                "its tool output in an artifact file: open the store with memci.Engine, "
                "which reads artifacts"
            )
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
                # length() of a BLOB counts bytes; of TEXT, characters
                "SELECT m.seq, length(CAST(m.parts AS BLOB))"
                " + COALESCE(length(CAST(m.name AS BLOB)), 0)"
                " + COALESCE(length(CAST(m.metadata AS BLOB)), 0) FROM messages m"
                " WHERE m.session_id = ? AND m.seq > ? ORDER BY m.seq LIMIT ?",
                (session.id, after, limit)).fetchall()
        return [(int(r[0]), int(r[1])) for r in rows]

    def log_rows(self, session: SessionRecord, *, after: int = 0) -> list[LogRow]:
        """Planning rows (seq, role, tokens, tokens as shown) of the messages after ``after``.

        Tokens as shown are a tool result's view's (None when no view is saved yet).
        """
        with self.read() as db:
            rows = db.execute(
                f"SELECT m.seq, m.role, {TOKENS_SQL}, v.tokens FROM messages m"
                " LEFT JOIN message_views v ON v.session_id = m.session_id AND v.seq = m.seq"
                " WHERE m.session_id = ? AND m.seq > ? ORDER BY m.seq", (session.id, after),
            ).fetchall()
        return [LogRow(int(r[0]), str(r[1]), int(r[2]), None if r[3] is None else int(r[3]))
                for r in rows]

    def branch_links(self, session: SessionRecord, *, after: int = 0) -> dict[int, int]:
        """``{seq: linked seq}`` of the messages after ``after`` that name what they continue.

        The link is the integer ``memci_branch.after`` of a message's metadata (see
        :mod:`memci.context._branches`); anything else there is no link.
        """
        with self.read() as db:
            # CASE, not AND: SQLite may evaluate AND's terms in any order, and json_type
            # raises on a value that is not JSON.
            rows = db.execute(
                "SELECT seq, CASE WHEN json_valid(metadata) THEN CASE WHEN json_type(metadata,"
                " '$.memci_branch.after') = 'integer' THEN json_extract(metadata,"
                " '$.memci_branch.after') END END FROM messages WHERE session_id = ?"
                " AND seq > ? AND metadata LIKE '%memci_branch%' ORDER BY seq",
                (session.id, after),
            ).fetchall()
        return {int(r[0]): int(r[1]) for r in rows if r[1] is not None}

    def views(self, session: SessionRecord, first: int, last: int) -> dict[int, str]:
        """The artifact id of every tool result with ``first <= seq <= last`` that has one."""
        with self.read() as db:
            rows = db.execute(
                "SELECT seq, artifact FROM message_views WHERE session_id = ?"
                " AND seq BETWEEN ? AND ?", (session.id, first, last),
            ).fetchall()
        return {int(r[0]): str(r[1]) for r in rows}

    def save_views(
        self, session: SessionRecord, views: Sequence[tuple[int, str, int]], *,
        db: sqlite3.Connection | None = None,
    ) -> None:
        """Save ``(seq, artifact, tokens)`` views of tool results (in ``db``'s transaction)."""
        if db is None:
            with self.write() as own:
                self.save_views(session, views, db=own)
            return
        db.executemany(
            "INSERT OR REPLACE INTO message_views (session_id, seq, artifact, tokens)"
            " VALUES (?, ?, ?, ?)", [(session.id, s, a, t) for s, a, t in views],
        )

    def tool_call(
        self, session: SessionRecord, call_id: str, before: int | None
    ) -> Message | None:
        """The assistant message with the latest call ``call_id`` made before seq ``before``.

        With ``before=None``: the one with the latest open call of that id (the call a
        result added now would answer).
        """
        with self.read() as db:
            if before is None:
                row = db.execute(
                    "SELECT call_seq FROM tool_calls WHERE session_id = ? AND call_id = ?"
                    " AND result_seq IS NULL ORDER BY call_seq DESC LIMIT 1",
                    (session.id, call_id),
                ).fetchone()
            else:
                row = db.execute(
                    "SELECT call_seq FROM tool_calls WHERE session_id = ? AND call_id = ?"
                    " AND call_seq < ? ORDER BY call_seq DESC LIMIT 1",
                    (session.id, call_id, before),
                ).fetchone()
        if row is None:
            return None
        found = self.messages(session, after=int(row[0]) - 1, upto=int(row[0]))
        return found[0] if found else None


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
