"""The SQLite write-back log: every message ever added, in order, per session.

Invariants:

- a message is durable when :meth:`SQLiteStore.append` returns (WAL, ``synchronous=FULL``
  by default);
- one call to ``append`` is one transaction: all of its messages are stored or none;
- ``seq`` is 1, 2, 3 … per session with no gap and no duplicate, also with several
  processes appending to one session (the next seq is read inside a ``BEGIN IMMEDIATE``
  write transaction, which SQLite serializes across processes);
- a tool result is accepted only if it answers an open tool call of its session (made
  earlier, or earlier in the same batch).

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

__all__ = ["SQLiteStore", "SessionRecord"]

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
        return [_message(session.name, r) for r in rows]

    def token_index(
        self, session: SessionRecord, *, after: int = 0
    ) -> list[tuple[int, str, int, int | None]]:
        """``(seq, role, tokens, view tokens)`` of messages after ``after``, to plan a build.

        View tokens are those of a tool result as shown (None when no view is saved yet).
        """
        with self.read() as db:
            rows = db.execute(
                "SELECT m.seq, m.role, m.tokens, v.tokens FROM messages m"
                " LEFT JOIN message_views v ON v.session_id = m.session_id AND v.seq = m.seq"
                " WHERE m.session_id = ? AND m.seq > ? ORDER BY m.seq", (session.id, after),
            ).fetchall()
        return [(int(r[0]), str(r[1]), int(r[2]), None if r[3] is None else int(r[3]))
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


def _message(session: str, row: tuple[Any, ...]) -> Message:
    seq, role, parts, name, metadata, created_at, tokens = row
    return Message(
        role=role, parts=loads_parts(parts), name=name,
        metadata=MappingProxyType(json.loads(metadata)) if metadata else MappingProxyType({}),
        created_at=datetime.fromisoformat(created_at), session=session, seq=int(seq),
        tokens=int(tokens),
    )


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
