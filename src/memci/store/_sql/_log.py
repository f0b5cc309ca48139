"""The message log's statements, once for both backends (:class:`~memci.store.MessageLog`).

Tables of the ``core`` series: ``sessions`` (a session's row: tenant, name, owner,
settings, ``version`` of its context state, ``epoch`` and ``top_seq`` of its log),
``messages`` (``(session_id, seq)``), ``tool_calls`` (one row per call, answered by the
seq of its result) and ``message_views`` (a tool result's artifact and tokens as shown).

Invariants (each backend's transactions keep the rest, see its ``_store.py``):

- an append is one write transaction: the session's row is read first (and locked,
  where the backend locks rows: PostgreSQL ``FOR UPDATE``, so a session's writers take
  turns and other sessions never wait), then the next seq is read under it, after both
  the newest stored and the highest ever given (``top_seq``): a seq is never given twice;
- a tool result is stored only if it answers an open call of its session, made earlier
  or earlier in the same batch (else :func:`~memci.store._rows.orphan_result`, nothing
  stored);
- a session is made once, whichever process asks first (``ON CONFLICT DO NOTHING``, then
  read); its user is set once (:func:`~memci.store._rows.check_owner`);
- a deleted session's row is a tombstone (tenant ``''``) that no lookup or listing finds;
- a tool output kept whole outside its row is read back through ``output_reader``
  (``whole=False``: the head its row holds).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from memci._dataclasses import replace
from memci.errors import InvalidInputError, StoreError, UnknownSessionError
from memci.messages import Message, dumps_parts
from memci.store._log import LogColumns, LogRow
from memci.store._records import SessionRecord
from memci.store._rows import (
    check_owner,
    check_roles,
    message_from_row,
    orphan_result,
    row_head,
    session_from_row,
    stored_instant,
)
from memci.store._sql._conn import Sql, Transactions

__all__ = ["SESSION_COLUMNS", "SqlLog"]

#: A ``sessions`` row as :func:`~memci.store._rows.session_from_row` reads it.
SESSION_COLUMNS = "id, tenant, name, user_id, settings, created_at"
_MESSAGE_COLUMNS = "seq, role, parts, name, metadata, created_at, tokens, output_sha256"
_OPEN_CALL = ("SELECT call_seq FROM tool_calls WHERE session_id = ? AND call_id = ?"
              " AND result_seq IS NULL ORDER BY call_seq DESC LIMIT 1")


def _deleted(session: SessionRecord) -> UnknownSessionError:
    return UnknownSessionError(
        f"session {session.name!r} was deleted: open it again with engine.session(name) "
        "to start a new one under that name")


def _now() -> datetime:
    return datetime.now(UTC)


class SqlLog:
    """:class:`~memci.store.MessageLog` (and the schema version) for a store's class."""

    #: The store's transactions for the shared statements (set by the backend).
    sql: Transactions
    location: str
    output_reader: Callable[[str], str] | None
    #: A message row's tokens (SQLite reads what an older memci wrote unchecked).
    _TOKENS = "m.tokens"

    def schema_version(self, component: str = "core") -> int:
        """The number of the newest migration of ``component`` applied."""
        with self.sql.read() as sql:
            found = sql.value("SELECT MAX(version) FROM memci_migrations WHERE component = ?",
                              (component,))
        return int(found or 0)

    # -- sessions ------------------------------------------------------------------------

    def session(self, tenant: str, name: str) -> SessionRecord | None:
        """The session ``name`` of ``tenant``, or None."""
        with self.sql.read() as sql:
            row = sql.one(f"SELECT {SESSION_COLUMNS} FROM sessions WHERE tenant = ?"
                          " AND name = ? AND tenant <> ''", (tenant, name))
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
        select = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE tenant = ? AND name = ?"
        with self.sql.write() as sql:
            row = sql.one(select, (tenant, name))
            if row is None:
                # Made once, whichever process asks first: the others find it made.
                sql.run("INSERT INTO sessions (tenant, name, user_id, settings, created_at)"
                        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, name) DO NOTHING",
                        (tenant, name, user, text, _now().isoformat()))
                row = sql.one(select, (tenant, name))
            assert row is not None
            if (user is not None and user != row[3]) or text != row[4]:
                check_owner(name, row[3], user)
                row = sql.one("UPDATE sessions SET user_id = COALESCE(?, user_id),"
                              f" settings = ? WHERE id = ? RETURNING {SESSION_COLUMNS}",
                              (user, text, row[0]))
        assert row is not None
        return session_from_row(row)

    def sessions(
        self, tenant: str | None = None, *, after: int = 0, limit: int | None = None
    ) -> list[SessionRecord]:
        """Every session (of one tenant, if given), oldest first (a page: ``after``, ``limit``)."""
        # A deleted session's row is no session.
        text = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE tenant <> '' AND id > ?"
        args: list[Any] = [after]
        if tenant is not None:
            text += " AND tenant = ?"
            args.append(tenant)
        text += " ORDER BY id"
        if limit is not None:
            text += " LIMIT ?"
            args.append(limit)
        with self.sql.read() as sql:
            return [session_from_row(r) for r in sql.all(text, args)]

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
        the artifact that holds its whole output (written before): its row then keeps
        only the head (:data:`~memci.store.ROW_HEAD_CHARS`), so it is stored once.
        """
        stored: list[Message] = []
        now = _now()
        external = external or {}
        with self.sql.write() as sql:
            seq = self._next_seq(sql, session) - 1
            calls: list[tuple[int, str, int]] = []
            rows: list[tuple[Any, ...]] = []
            for position, message in enumerate(messages):
                seq += 1
                if message.role == "tool":
                    # The call it answers may be in this batch: its row goes in first.
                    _insert(sql, calls, rows)
                    _answer_call(sql, session, message, seq)
                calls += [(session.id, call.id, seq) for call in message.tool_calls]
                created = message.created_at or now
                sha = external.get(position)
                rows.append(
                    (session.id, seq, message.role,
                     dumps_parts(message.parts if sha is None else row_head(message).parts),
                     message.name,
                     json.dumps(dict(message.metadata), ensure_ascii=False)
                     if message.metadata else None,
                     created.isoformat(), message.tokens or 0, sha))
                stored.append(message.with_identity(
                    session=session.name, seq=seq, tokens=message.tokens or 0,
                    created_at=created))
            _insert(sql, calls, rows)
        return stored

    def _next_seq(self, sql: Sql, session: SessionRecord) -> int:
        """The seq the next message gets: after the newest, and after any ever deleted.

        The session's row is read (and locked, where rows are) before the newest seq: a
        writer that waited for the lock reads the seqs stored meanwhile.
        """
        found = sql.one("SELECT tenant, top_seq FROM sessions WHERE id = ?"
                        + sql.dialect.lock_row, (session.id,))
        if found is None:
            raise UnknownSessionError(
                f"no session with id {session.id} in the store {self.location}: create "
                "the session first")
        if not found[0]:
            raise _deleted(session)
        top = sql.value("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?",
                        (session.id,))
        return max(int(found[1]), int(top or 0)) + 1

    def log_head(self, session: SessionRecord) -> tuple[int, int]:
        """``(epoch, last seq)``: the epoch grows whenever messages are deleted.

        A process that holds a copy of the log catches up by reading what came after its
        last seq while the epoch is the one it read; another epoch means reading it again.
        Raises :class:`UnknownSessionError` when the session was deleted.
        """
        with self.sql.read() as sql:
            row = sql.one("SELECT epoch, (SELECT MAX(seq) FROM messages WHERE session_id = ?)"
                          " FROM sessions WHERE id = ? AND tenant <> ''",
                          (session.id, session.id))
        if row is None:
            raise _deleted(session)
        return int(row[0]), int(row[1] or 0)

    def last_seq(self, session: SessionRecord) -> int:
        """The seq of the newest message of the session (0 when empty)."""
        with self.sql.read() as sql:
            found = sql.value("SELECT MAX(seq) FROM messages WHERE session_id = ?",
                              (session.id,))
        return int(found or 0)

    def messages(
        self, session: SessionRecord, *, after: int = 0, upto: int | None = None,
        whole: bool = True,
    ) -> list[Message]:
        """Messages with ``after < seq <= upto``, in order.

        A tool output kept whole outside its row is read back whole; with ``whole=False``
        it keeps the head its row holds (planning a context needs no more).
        """
        text = f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE session_id = ? AND seq > ?"
        args: list[Any] = [session.id, after]
        if upto is not None:
            text += " AND seq <= ?"
            args.append(upto)
        with self.sql.read() as sql:
            rows = sql.all(text + " ORDER BY seq", args)
        out = [message_from_row(session.name, r[:7]) for r in rows]
        if whole:
            out = [self._whole(m, r[7]) if r[7] is not None else m
                   for m, r in zip(out, rows, strict=True)]
        return out

    def output_refs(self, session: SessionRecord, first: int, last: int) -> dict[int, str]:
        """The SHA-256 of every tool output with ``first <= seq <= last`` kept outside its row."""
        with self.sql.read() as sql:
            rows = sql.all("SELECT seq, output_sha256 FROM messages WHERE session_id = ?"
                           " AND seq BETWEEN ? AND ? AND output_sha256 IS NOT NULL",
                           (session.id, first, last))
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

    def activity(
        self, sessions: Sequence[SessionRecord]
    ) -> dict[int, tuple[int, datetime | None]]:
        """``{session id: (messages, newest message's created_at)}`` of ``sessions``.

        One statement for a page of sessions; a session without messages is left out.
        Each count walks the session's own rows of the message key, never another's.
        """
        if not sessions:
            return {}
        marks = ", ".join("?" for _ in sessions)
        with self.sql.read() as sql:
            rows = sql.all(
                "SELECT c.session_id, c.n, m.created_at FROM (SELECT session_id,"
                " COUNT(*) AS n, MAX(seq) AS top FROM messages"
                f" WHERE session_id IN ({marks}) GROUP BY session_id) c"
                " JOIN messages m ON m.session_id = c.session_id AND m.seq = c.top",
                [s.id for s in sessions])
        return {int(r[0]): (int(r[1]), stored_instant(r[2])) for r in rows}

    def message_sizes(
        self, session: SessionRecord, *, after: int = 0, limit: int
    ) -> list[tuple[int, int]]:
        """``(seq, bytes)`` of the first ``limit`` messages after ``after``, in order.

        Bytes as the rows hold them (parts, name, metadata; a tool output kept outside its
        row counts its head: :meth:`output_refs` names those), told without reading them.
        """
        size = self.sql.dialect.byte_length
        with self.sql.read() as sql:
            rows = sql.all(
                f"SELECT m.seq, {size('m.parts')} + COALESCE({size('m.name')}, 0)"
                f" + COALESCE({size('m.metadata')}, 0) FROM messages m"
                " WHERE m.session_id = ? AND m.seq > ? ORDER BY m.seq LIMIT ?",
                (session.id, after, limit))
        return [(int(r[0]), int(r[1])) for r in rows]

    def log_rows(self, session: SessionRecord, *, after: int = 0) -> list[LogRow]:
        """Planning rows (seq, role, tokens, tokens as shown) of the messages after ``after``.

        Tokens as shown are a tool result's view's (None when no view is saved yet).
        """
        # The columns are typed (integers, text, NULL) by both backends: no cast is needed.
        rows = self._planning(session, after)
        check_roles(r[1] for r in rows)
        return list(map(LogRow._make, rows))

    def log_columns(self, session: SessionRecord, *, after: int = 0) -> LogColumns:
        """:meth:`log_rows` as columns: transposed in C, nothing made per row."""
        rows = self._planning(session, after)
        if not rows:
            return LogColumns([], [], [], [])
        seqs, roles, tokens, shown = map(list, zip(*rows, strict=True))
        check_roles(roles)
        return LogColumns(seqs, roles, tokens, shown)

    def _planning(self, session: SessionRecord, after: int) -> list[Any]:
        with self.sql.read() as sql:
            return sql.all(
                f"SELECT m.seq, m.role, {self._TOKENS}, v.tokens FROM messages m"
                " LEFT JOIN message_views v ON v.session_id = m.session_id AND v.seq = m.seq"
                " WHERE m.session_id = ? AND m.seq > ? ORDER BY m.seq", (session.id, after))

    def branch_links(self, session: SessionRecord, *, after: int = 0) -> dict[int, int]:
        """``{seq: linked seq}`` of the messages after ``after`` that name what they continue.

        The link is the integer ``memci_branch.after`` of a message's metadata (see
        :mod:`memci.context._branches`); anything else there, or metadata that is not a
        JSON object, is no link.
        """
        with self.sql.read() as sql:
            rows = sql.all("SELECT seq, metadata FROM messages WHERE session_id = ?"
                           " AND seq > ? AND metadata LIKE '%memci_branch%' ORDER BY seq",
                           (session.id, after))
        links: dict[int, int] = {}
        for seq, text in rows:
            linked = _branch_link(text)
            if linked is not None:
                links[int(seq)] = linked
        return links

    def views(self, session: SessionRecord, first: int, last: int) -> dict[int, str]:
        """The artifact id of every tool result with ``first <= seq <= last`` that has one."""
        with self.sql.read() as sql:
            rows = sql.all("SELECT seq, artifact FROM message_views WHERE session_id = ?"
                           " AND seq BETWEEN ? AND ?", (session.id, first, last))
        return {int(r[0]): str(r[1]) for r in rows}

    def saved_views(self, session: SessionRecord, first: int,
                    last: int) -> dict[int, tuple[str, int]]:
        """:meth:`views` with the tokens each view was saved with: ``{seq: (id, tokens)}``."""
        with self.sql.read() as sql:
            rows = sql.all("SELECT seq, artifact, tokens FROM message_views WHERE session_id = ?"
                           " AND seq BETWEEN ? AND ?", (session.id, first, last))
        return {int(r[0]): (str(r[1]), int(r[2] or 0)) for r in rows}

    def save_views(self, session: SessionRecord, views: Sequence[tuple[int, str, int]]) -> None:
        """Save ``(seq, artifact, tokens as shown)`` views of tool results."""
        if not views:
            return
        with self.sql.write() as sql:
            sql.many("INSERT INTO message_views (session_id, seq, artifact, tokens)"
                     " VALUES (?, ?, ?, ?) ON CONFLICT (session_id, seq) DO UPDATE"
                     " SET artifact = excluded.artifact, tokens = excluded.tokens",
                     [(session.id, s, a, t) for s, a, t in views])

    def tool_call(
        self, session: SessionRecord, call_id: str, before: int | None
    ) -> Message | None:
        """The assistant message with the latest call ``call_id`` made before seq ``before``.

        With ``before=None``: the one with the latest open call of that id (the call a
        result added now would answer).
        """
        with self.sql.read() as sql:
            if before is None:
                found = sql.value(_OPEN_CALL, (session.id, call_id))
            else:
                found = sql.value(
                    "SELECT call_seq FROM tool_calls WHERE session_id = ? AND call_id = ?"
                    " AND call_seq < ? ORDER BY call_seq DESC LIMIT 1",
                    (session.id, call_id, before))
        if found is None:
            return None
        messages = self.messages(session, after=int(found) - 1, upto=int(found))
        return messages[0] if messages else None


def _insert(sql: Sql, calls: list[tuple[int, str, int]], rows: list[tuple[Any, ...]]) -> None:
    """Insert the tool calls and messages gathered so far, each kind as one batch; clear them."""
    sql.many("INSERT INTO tool_calls (session_id, call_id, call_seq) VALUES (?, ?, ?)", calls)
    sql.many("INSERT INTO messages (session_id, seq, role, parts, name, metadata,"
             " created_at, tokens, output_sha256) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    calls.clear()
    rows.clear()


def _answer_call(sql: Sql, session: SessionRecord, message: Message, seq: int) -> None:
    """Mark the open call the tool result ``message`` answers as answered by ``seq``."""
    result = message.tool_result
    assert result is not None
    call = sql.value(_OPEN_CALL, (session.id, result.call_id))
    if call is None:
        raise orphan_result(result.call_id, session.name)
    sql.run("UPDATE tool_calls SET result_seq = ? WHERE session_id = ? AND call_id = ?"
            " AND call_seq = ?", (seq, session.id, result.call_id, call))


def _branch_link(text: object) -> int | None:
    """The integer ``memci_branch.after`` of a message's metadata text, or None."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None
    branch = value.get("memci_branch") if isinstance(value, dict) else None
    linked = branch.get("after") if isinstance(branch, dict) else None
    return linked if isinstance(linked, int) and not isinstance(linked, bool) else None
