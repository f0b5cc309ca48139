"""A session's context state: ``pages``, ``context_events``, ``session_state`` (both backends).

The session row's ``version`` guards them: :meth:`SqlContextStore.commit` bumps it with
``UPDATE … WHERE version = ?`` inside the write transaction, and writes nothing when another
writer got there first (compare-and-swap). SQLite serializes writers across processes
(``BEGIN IMMEDIATE``), so the check and the writes are one step; in PostgreSQL the second
of two servers committing at once waits for the first's row lock, then finds the version
moved and changes no row. :meth:`SqlContextStore.load` reads version, pages, counts and
values from one snapshot where the backend has them (PostgreSQL).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memci.store._log import (
    LOG_INDEX_KEY,
    ContextChanges,
    ContextEvent,
    ContextState,
    PageRow,
    SessionHeads,
)
from memci.store._records import SessionRecord
from memci.store._rows import damaged, stored_json
from memci.store._sql._conn import Sql, Transactions
from memci.store._sql._dialect import upsert

__all__ = ["SqlContextStore"]

_PAGE = ("SELECT page, first_seq, last_seq, state, archived_round, recall_count,"
         " last_recall_round, lines FROM pages WHERE session_id = ?")
_PUT_PAGE = upsert("pages", ("session_id", "page", "first_seq", "last_seq", "state",
                             "archived_round", "recall_count", "last_recall_round", "lines"),
                   ("session_id", "page"))
_PUT_VALUE = upsert("session_state", ("session_id", "key", "value"), ("session_id", "key"))


class SqlContextStore:
    """:class:`~memci.store.ContextStore` over one store's transactions."""

    def __init__(self, db: Transactions) -> None:
        self._db = db

    def head(self, session: SessionRecord) -> tuple[int, int]:
        """``(version, last seq)`` of the session."""
        with self._db.read() as sql:
            row = sql.one("SELECT version, (SELECT MAX(seq) FROM messages WHERE session_id = ?)"
                          " FROM sessions WHERE id = ?", (session.id, session.id))
        return (int(row[0]), int(row[1] or 0)) if row else (0, 0)

    def heads(self, session: SessionRecord) -> SessionHeads | None:
        """The session's heads in one statement (None: the session was deleted)."""
        self._db.ready("workspace")
        with self._db.read() as sql:
            row = sql.one("SELECT version, epoch, (SELECT MAX(seq) FROM messages"
                          " WHERE session_id = ?), (SELECT MAX(id) FROM workspace_events"
                          " WHERE session_id = ?) FROM sessions WHERE id = ? AND tenant <> ''",
                          (session.id, session.id, session.id))
        return None if row is None else SessionHeads(int(row[0]), int(row[1]),
                                                     int(row[2] or 0), int(row[3] or 0))

    def load(self, session: SessionRecord) -> ContextState:
        """Page rows of pages that are not plainly active, event counts, keyed values.

        Evicted pages are not read: they are counted, and found again by their page
        number when recalled (:meth:`page`).
        """
        with self._db.snapshot() as sql:
            version = sql.value("SELECT version FROM sessions WHERE id = ?", (session.id,))
            rows = sql.all(_PAGE + " AND state <> 'evicted' ORDER BY page", (session.id,))
            counts = sql.all(
                "SELECT kind, SUM(COALESCE(last_page, page) - page + 1) FROM context_events"
                " WHERE session_id = ? GROUP BY kind", (session.id,))
            values = sql.all("SELECT key, value FROM session_state WHERE session_id = ?"
                             " AND key <> ?", (session.id, LOG_INDEX_KEY))
        return ContextState(
            version=int(version or 0),
            pages=tuple(_page_row(r) for r in rows),
            counts={str(k): int(v) for k, v in counts},
            values={str(k): stored_json(v, "session state value") for k, v in values},
        )

    def get(self, session: SessionRecord, key: str) -> Any:
        """One keyed value, None when none is saved."""
        with self._db.read() as sql:
            text = sql.value("SELECT value FROM session_state WHERE session_id = ? AND key = ?",
                             (session.id, key))
        return None if text is None else stored_json(text, "session state value")

    def page_rows(self, session: SessionRecord, *, state: str) -> list[PageRow]:
        """The saved rows of every page in ``state`` (``evicted``: for inspection)."""
        with self._db.read() as sql:
            rows = sql.all(_PAGE + " AND state = ? ORDER BY page", (session.id, state))
        return [_page_row(r) for r in rows]

    def page(self, session: SessionRecord, page: int) -> PageRow | None:
        """The saved row of one page (an evicted one included), or None."""
        with self._db.read() as sql:
            row = sql.one(_PAGE + " AND page = ?", (session.id, page))
        return _page_row(row) if row else None

    def commit(self, session: SessionRecord, version: int, changes: ContextChanges) -> bool:
        """Apply ``changes`` if the session is still at ``version``; bump it."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._db.write() as sql:
            if not sql.run("UPDATE sessions SET version = version + 1 WHERE id = ?"
                           " AND version = ?", (session.id, version)):
                return False
            sql.many(_PUT_PAGE, [
                (session.id, r.page, r.first_seq, r.last_seq, r.state, r.archived_round,
                 r.recall_count, r.last_recall_round,
                 json.dumps(_saved_lines(r), ensure_ascii=False))
                for r in changes.pages])
            sql.many(
                "INSERT INTO context_events (session_id, round, kind, page, reason, created_at,"
                " last_page) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(session.id, e.round, e.kind, e.page, e.reason, now,
                  e.last_page if e.last_page > e.page else None) for e in changes.events])
            # The values in two statements at most, whatever their number.
            gone = [key for key, value in changes.values.items() if value is None]
            if gone:
                sql.run("DELETE FROM session_state WHERE session_id = ?"
                        f" AND {sql.dialect.in_array('key')}",
                        (session.id, sql.dialect.array(gone)))
            sql.many(_PUT_VALUE, [(session.id, key, json.dumps(value, ensure_ascii=False))
                                  for key, value in changes.values.items() if value is not None])
        return True

    def put(self, session: SessionRecord, key: str, value: Any) -> None:
        """Save a keyed value that caches what any process would derive the same way.

        Not guarded by the version (and not bumping it): a cache read stale is only
        derived again; so its commit need not wait for the disk (SQLite).
        """
        with self._db.write(durable=False) as sql:
            _put(sql, session.id, key, value)

    def events(self, session: SessionRecord, *, limit: int = 1000) -> list[ContextEvent]:
        """The newest ``limit`` events, oldest first."""
        with self._db.read() as sql:
            rows = sql.all(
                "SELECT round, kind, page, reason, created_at, last_page FROM context_events"
                " WHERE session_id = ? ORDER BY id DESC LIMIT ?", (session.id, limit))
        return [_event(r) for r in reversed(rows)]


def _put(sql: Sql, session_id: int, key: str, value: Any) -> None:
    sql.run(_PUT_VALUE, (session_id, key, json.dumps(value, ensure_ascii=False)))


@damaged("event row")
def _event(r: Any) -> ContextEvent:
    return ContextEvent(int(r[0]), str(r[1]), int(r[2]), str(r[3]), int(r[5] or r[2]),
                        str(r[4]))


@damaged("page row")
def _page_row(r: Any) -> PageRow:
    saved = json.loads(r[7])
    return PageRow(int(r[0]), int(r[1]), int(r[2]), str(r[3]), int(r[4]), int(r[5]),
                   None if r[6] is None else int(r[6]), tuple(saved["lines"]),
                   str(saved["source"]), int(saved.get("tokens", 0)),
                   str(saved.get("counted", "")))


def _saved_lines(row: PageRow) -> dict[str, Any]:
    """The ``lines`` column of a page row: its lines, their source, their count if made."""
    saved: dict[str, Any] = {"lines": row.lines, "source": row.source}
    if row.counted:
        saved.update(tokens=row.tokens, counted=row.counted)
    return saved
