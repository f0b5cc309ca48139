"""The SQLite write-back log: every message ever added, in order, per session.

Invariants:

- a message is durable when :meth:`SQLiteStore.append` returns (WAL, ``synchronous=FULL``
  by default);
- one call to ``append`` is one transaction: all of its messages are stored or none;
- ``seq`` is 1, 2, 3 … per session with no gap and no duplicate, also with several
  processes appending to one session (the next seq is read inside a ``BEGIN IMMEDIATE``
  write transaction, which SQLite serializes across processes);
- a tool result is accepted only if it answers an open tool call of its session (made
  earlier, or earlier in the same batch);
- every stored row can be read back (:func:`message_from_row`), also one an older memci
  wrote before it checked every field: a ``tokens`` that is not a whole number is read as
  an estimate from the size of its parts, a ``created_at`` outside what can be converted
  to UTC as the nearest instant that can, an unreadable one as None, metadata that is not
  a JSON object is kept as text under ``"unreadable"``.

One connection per store, shared by threads under a lock; SQLite serializes the rest. It
is opened with the driver :mod:`memci.store._driver` chooses (the standard ``sqlite3``, or
``pysqlite3`` where only it can load extensions), and sqlite-vec is loaded into it when
installed (:attr:`SQLiteStore.sqlite_vec`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from memci.errors import OrphanToolResultError, StoreError
from memci.messages import Message, dumps_parts, loads_parts
from memci.store._driver import connect, errors, load_sqlite_vec
from memci.store._migrations import CORE_MIGRATIONS, Migration

__all__ = ["SQLiteStore", "SessionRecord", "message_from_row"]

_BUSY_TIMEOUT_MS = 60_000


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """A session's row: its key, tenant, name, owner and saved settings."""

    id: int
    tenant: str
    name: str
    user: str | None
    settings: Mapping[str, Any]
    created_at: datetime


class SQLiteStore:
    """The embedded store: one SQLite file in WAL mode.

    :attr:`sqlite_vec` says whether sqlite-vec (vector search) is loaded into the store's
    connection.
    """

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        self.path = Path(path)
        if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise StoreError(f"synchronous must be FULL, NORMAL or EXTRA, not {synchronous!r}")
        failures = errors()  # chooses the driver: a bad MEMCI_SQLITE_DRIVER raises here
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = connect(
                self.path, isolation_level=None, check_same_thread=False,
                timeout=_BUSY_TIMEOUT_MS / 1000,
            )
            self._db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            mode = self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal" and str(self.path) != ":memory:":
                raise StoreError(f"cannot put {self.path} in WAL mode (got {mode})")
            self._db.execute(f"PRAGMA synchronous = {synchronous.upper()}")
            self._db.execute("PRAGMA foreign_keys = ON")
        except failures as exc:
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
        self.sqlite_vec = load_sqlite_vec(self._db)
        self._lock = threading.RLock()
        self._migrated: set[str] = set()
        self.migrate("core", CORE_MIGRATIONS)

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection (a checkpoint folds the WAL into the database file)."""
        with self._lock:
            self._db.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): commit on success, roll back on error."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except errors() as exc:
                raise StoreError(f"cannot start a write on {self.path}: {exc}") from exc
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            try:
                self._db.execute("COMMIT")
            except errors() as exc:
                self._db.execute("ROLLBACK")
                raise StoreError(f"cannot commit to {self.path}: {exc}") from exc

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection, for reads, under the store's lock."""
        with self._lock:
            yield self._db

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
        with self.write() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS memci_migrations (component TEXT NOT NULL,"
                " version INTEGER NOT NULL, name TEXT NOT NULL, applied_at TEXT NOT NULL,"
                " PRIMARY KEY (component, version))"
            )
            done = {int(r[0]) for r in db.execute(
                "SELECT version FROM memci_migrations WHERE component = ?", (component,))}
            newest = max((m.version for m in migrations), default=0)
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
                " WHERE tenant = ? AND name = ?", (tenant, name),
            ).fetchone()
        return _session_record(row) if row else None

    def ensure_session(
        self, tenant: str, name: str, user: str | None, settings: Mapping[str, Any]
    ) -> SessionRecord:
        """Get or create the session; given settings replace the saved ones."""
        text = json.dumps(dict(settings), sort_keys=True)
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
                db.execute(
                    "UPDATE sessions SET user_id = COALESCE(?, user_id), settings = ?"
                    " WHERE id = ?", (user, text, row[0]),
                )
        record = self.session(tenant, name)
        assert record is not None
        return record

    def sessions(self, tenant: str | None = None) -> list[SessionRecord]:
        """Every session (of one tenant, if given), oldest first."""
        sql = "SELECT id, tenant, name, user_id, settings, created_at FROM sessions"
        args: tuple[Any, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = ?"
            args = (tenant,)
        with self.read() as db:
            rows = db.execute(sql + " ORDER BY id", args).fetchall()
        return [_session_record(r) for r in rows]

    # -- messages ------------------------------------------------------------------------

    def append(
        self, session: SessionRecord, messages: Sequence[Message], *,
        also: Callable[[sqlite3.Connection, list[Message]], object] | None = None,
    ) -> list[Message]:
        """Store ``messages`` (tokens already counted) in one transaction; return them stored.

        Raises :class:`OrphanToolResultError` (and stores nothing) when a tool result does
        not answer an open tool call of the session. ``also(db, stored)`` runs inside the
        same transaction (derived indexes written with the messages, in one commit).
        """
        stored: list[Message] = []
        now = _now()
        with self.write() as db:
            row = db.execute(
                "SELECT MAX(seq) FROM messages WHERE session_id = ?", (session.id,)
            ).fetchone()
            seq = int(row[0] or 0)
            for message in messages:
                seq += 1
                if message.role == "tool":
                    self._answer_call(db, session, message, seq)
                for call in message.tool_calls:
                    db.execute(
                        "INSERT INTO tool_calls (session_id, call_id, call_seq)"
                        " VALUES (?, ?, ?)", (session.id, call.id, seq),
                    )
                created = message.created_at or now
                db.execute(
                    "INSERT INTO messages (session_id, seq, role, parts, name, metadata,"
                    " created_at, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        session.id, seq, message.role, dumps_parts(message.parts),
                        message.name,
                        json.dumps(dict(message.metadata), ensure_ascii=False)
                        if message.metadata else None,
                        created.isoformat(), message.tokens or 0,
                    ),
                )
                stored.append(message.with_identity(
                    session=session.name, seq=seq, tokens=message.tokens or 0,
                    created_at=created,
                ))
            if also is not None:
                also(db, stored)
        return stored

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
            raise OrphanToolResultError(
                f"tool result for call id {result.call_id!r} answers no open tool call in "
                f"session {session.name!r}: add the assistant message with that tool call "
                "first (each call is answered once)"
            )
        db.execute(
            "UPDATE tool_calls SET result_seq = ? WHERE session_id = ? AND call_id = ?"
            " AND call_seq = ?", (seq, session.id, result.call_id, row[0]),
        )

    def last_seq(self, session: SessionRecord) -> int:
        """The seq of the newest message of the session (0 when empty)."""
        with self.read() as db:
            row = db.execute(
                "SELECT MAX(seq) FROM messages WHERE session_id = ?", (session.id,)
            ).fetchone()
        return int(row[0] or 0)

    def messages(
        self, session: SessionRecord, *, after: int = 0, upto: int | None = None
    ) -> list[Message]:
        """Messages with ``after < seq <= upto``, in order."""
        sql = ("SELECT seq, role, parts, name, metadata, created_at, tokens FROM messages"
               " WHERE session_id = ? AND seq > ?")
        args: list[Any] = [session.id, after]
        if upto is not None:
            sql += " AND seq <= ?"
            args.append(upto)
        with self.read() as db:
            rows = db.execute(sql + " ORDER BY seq", args).fetchall()
        return [message_from_row(session.name, r) for r in rows]

    def token_index(
        self, session: SessionRecord, *, after: int = 0
    ) -> list[tuple[int, str, int, int | None]]:
        """``(seq, role, tokens, view tokens)`` of messages after ``after``, to plan a build.

        View tokens are those of a tool result as shown (None when no view is saved yet).
        """
        with self.read() as db:
            rows = db.execute(
                f"SELECT m.seq, m.role, {_TOKENS_SQL}, v.tokens FROM messages m"
                " LEFT JOIN message_views v ON v.session_id = m.session_id AND v.seq = m.seq"
                " WHERE m.session_id = ? AND m.seq > ? ORDER BY m.seq", (session.id, after),
            ).fetchall()
        return [(int(r[0]), str(r[1]), int(r[2]), None if r[3] is None else int(r[3]))
                for r in rows]

    def views(self, session: SessionRecord, first: int, last: int) -> dict[int, str]:
        """The artifact id of every tool result with ``first <= seq <= last`` that has one."""
        with self.read() as db:
            rows = db.execute(
                "SELECT seq, artifact FROM message_views WHERE session_id = ?"
                " AND seq BETWEEN ? AND ?", (session.id, first, last),
            ).fetchall()
        return {int(r[0]): str(r[1]) for r in rows}

    def save_views(self, session: SessionRecord, views: Sequence[tuple[int, str, int]]) -> None:
        """Save ``(seq, artifact, tokens)`` views of tool results."""
        with self.write() as db:
            db.executemany(
                "INSERT OR REPLACE INTO message_views (session_id, seq, artifact, tokens)"
                " VALUES (?, ?, ?, ?)", [(session.id, s, a, t) for s, a, t in views],
            )

    def tool_call(self, session: SessionRecord, call_id: str, before: int) -> Message | None:
        """The assistant message with the latest call ``call_id`` made before seq ``before``."""
        with self.read() as db:
            row = db.execute(
                "SELECT call_seq FROM tool_calls WHERE session_id = ? AND call_id = ?"
                " AND call_seq < ? ORDER BY call_seq DESC LIMIT 1",
                (session.id, call_id, before),
            ).fetchone()
        if row is None:
            return None
        found = self.messages(session, after=int(row[0]) - 1, upto=int(row[0]))
        return found[0] if found else None


# A row's tokens, or (written by an older memci without checking) an estimate: about four
# characters of its parts a token. Python's _stored_tokens reads a row the same way.
_TOKENS_SQL = ("CASE WHEN typeof(m.tokens) = 'integer' AND m.tokens >= 0 THEN m.tokens"
               " ELSE length(m.parts) / 4 END")


def message_from_row(session: str, row: Sequence[Any]) -> Message:
    """A ``messages`` row (seq, role, parts, name, metadata, created_at, tokens) as a Message.

    Reads every row any memci version wrote (see the module's invariants).
    """
    seq, role, parts, name, metadata, created_at, tokens = row
    return Message(
        role=role, parts=loads_parts(parts), name=name if isinstance(name, str) else None,
        metadata=_stored_metadata(metadata), created_at=_stored_instant(created_at),
        session=session, seq=int(seq), tokens=_stored_tokens(tokens, parts),
    )


def _stored_tokens(tokens: object, parts: object) -> int:
    if isinstance(tokens, int) and tokens >= 0:
        return tokens
    return len(parts) // 4 if isinstance(parts, str) else 0


def _stored_metadata(text: object) -> Mapping[str, Any]:
    if not text:
        return MappingProxyType({})
    try:
        value = json.loads(str(text))
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        return MappingProxyType({"unreadable": str(text)})
    return MappingProxyType(value)


def _stored_instant(text: object) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        return stamp.replace(tzinfo=UTC)
    try:
        stamp.astimezone(UTC)
    except OverflowError:
        # Older versions took instants just outside years 1-9999 in UTC: the nearest one.
        edge = datetime.min if stamp.year == 1 else datetime.max
        return edge.replace(tzinfo=UTC)
    return stamp


def _session_record(row: tuple[Any, ...]) -> SessionRecord:
    return SessionRecord(
        id=int(row[0]), tenant=str(row[1]), name=str(row[2]), user=row[3],
        settings=MappingProxyType(json.loads(row[4])),
        created_at=datetime.fromisoformat(row[5]),
    )


def _statements(sql: str) -> list[str]:
    lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _now() -> datetime:
    return datetime.now(UTC)
