"""A session's context state in PostgreSQL: ``pages``, ``context_events``, ``session_state``.

The session row's ``version`` guards them: :meth:`PostgresContextStore.commit` bumps it with
``UPDATE … WHERE version = %s`` inside the write transaction. Two servers committing at
once: the second's UPDATE waits for the first's row lock, then finds the version moved and
changes no row, so it writes nothing and returns False (compare-and-swap). :meth:`load`
reads version, pages, counts and values from one snapshot.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memci.store._log import ContextChanges, ContextEvent, ContextState, PageRow
from memci.store._records import SessionRecord
from memci.store._rows import damaged, stored_json
from memci.store.postgres._db import Database

__all__ = ["PostgresContextStore"]

_PAGE = ("SELECT page, first_seq, last_seq, state, archived_round, recall_count,"
         " last_recall_round, lines FROM pages WHERE session_id = %s")


class PostgresContextStore:
    """:class:`~memci.store.ContextStore` over one PostgreSQL store."""

    def __init__(self, store: Database) -> None:
        self._store = store

    def head(self, session: SessionRecord) -> tuple[int, int]:
        """``(version, last seq)`` of the session."""
        with self._store.read() as db:
            row = db.execute(
                "SELECT version, (SELECT MAX(seq) FROM messages WHERE session_id = %s)"
                " FROM sessions WHERE id = %s", (session.id, session.id)).fetchone()
        return (int(row[0]), int(row[1] or 0)) if row else (0, 0)

    def load(self, session: SessionRecord) -> ContextState:
        """Page rows of pages that are not plainly active, event counts, keyed values."""
        with self._store.snapshot() as db:
            version = db.execute("SELECT version FROM sessions WHERE id = %s",
                                 (session.id,)).fetchone()
            rows = db.execute(_PAGE + " AND state <> 'evicted' ORDER BY page",
                              (session.id,)).fetchall()
            counts = db.execute(
                "SELECT kind, SUM(COALESCE(last_page, page) - page + 1) FROM context_events"
                " WHERE session_id = %s GROUP BY kind", (session.id,)).fetchall()
            values = db.execute("SELECT key, value FROM session_state WHERE session_id = %s",
                                (session.id,)).fetchall()
        return ContextState(
            version=int(version[0]) if version else 0,
            pages=tuple(_page_row(r) for r in rows),
            counts={str(k): int(v) for k, v in counts},
            values={str(k): stored_json(v, "session state value") for k, v in values},
        )

    def page_rows(self, session: SessionRecord, *, state: str) -> list[PageRow]:
        """The saved rows of every page in ``state``."""
        with self._store.read() as db:
            rows = db.execute(_PAGE + " AND state = %s ORDER BY page",
                              (session.id, state)).fetchall()
        return [_page_row(r) for r in rows]

    def page(self, session: SessionRecord, page: int) -> PageRow | None:
        """The saved row of one page (an evicted one included), or None."""
        with self._store.read() as db:
            row = db.execute(_PAGE + " AND page = %s", (session.id, page)).fetchone()
        return _page_row(row) if row else None

    def commit(self, session: SessionRecord, version: int, changes: ContextChanges) -> bool:
        """Apply ``changes`` if the session is still at ``version``; bump it."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self._store.write() as db:
            bumped = db.execute("UPDATE sessions SET version = version + 1 WHERE id = %s"
                                " AND version = %s", (session.id, version)).rowcount
            if not bumped:
                return False
            with db.cursor() as cursor:
                if changes.pages:
                    cursor.executemany(
                        "INSERT INTO pages (session_id, page, first_seq, last_seq, state,"
                        " archived_round, recall_count, last_recall_round, lines)"
                        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
                        " ON CONFLICT (session_id, page) DO UPDATE SET"
                        " first_seq = EXCLUDED.first_seq, last_seq = EXCLUDED.last_seq,"
                        " state = EXCLUDED.state, archived_round = EXCLUDED.archived_round,"
                        " recall_count = EXCLUDED.recall_count,"
                        " last_recall_round = EXCLUDED.last_recall_round,"
                        " lines = EXCLUDED.lines",
                        [(session.id, r.page, r.first_seq, r.last_seq, r.state,
                          r.archived_round, r.recall_count, r.last_recall_round,
                          json.dumps({"lines": r.lines, "source": r.source},
                                     ensure_ascii=False))
                         for r in changes.pages])
                if changes.events:
                    cursor.executemany(
                        "INSERT INTO context_events (session_id, round, kind, page, reason,"
                        " created_at, last_page) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        [(session.id, e.round, e.kind, e.page, e.reason, now,
                          e.last_page if e.last_page > e.page else None)
                         for e in changes.events])
            for key, value in changes.values.items():
                if value is None:
                    db.execute("DELETE FROM session_state WHERE session_id = %s AND key = %s",
                               (session.id, key))
                else:
                    _put(db, session.id, key, value)
        return True

    def put(self, session: SessionRecord, key: str, value: Any) -> None:
        """Save a keyed value that caches what any process would derive the same way.

        Not guarded by the version (and not bumping it): a cache read stale is only
        derived again.
        """
        with self._store.write() as db:
            _put(db, session.id, key, value)

    def events(self, session: SessionRecord, *, limit: int = 1000) -> list[ContextEvent]:
        """The newest ``limit`` events, oldest first."""
        with self._store.read() as db:
            rows = db.execute(
                "SELECT round, kind, page, reason, created_at, last_page FROM context_events"
                " WHERE session_id = %s ORDER BY id DESC LIMIT %s", (session.id, limit),
            ).fetchall()
        return [_event(r) for r in reversed(rows)]


def _put(db: Any, session_id: int, key: str, value: Any) -> None:
    db.execute("INSERT INTO session_state (session_id, key, value) VALUES (%s, %s, %s)"
               " ON CONFLICT (session_id, key) DO UPDATE SET value = EXCLUDED.value",
               (session_id, key, json.dumps(value, ensure_ascii=False)))


@damaged("event row")
def _event(r: Any) -> ContextEvent:
    return ContextEvent(int(r[0]), str(r[1]), int(r[2]), str(r[3]), int(r[5] or r[2]),
                        str(r[4]))


@damaged("page row")
def _page_row(r: Any) -> PageRow:
    saved = json.loads(r[7])
    return PageRow(int(r[0]), int(r[1]), int(r[2]), str(r[3]), int(r[4]), int(r[5]),
                   None if r[6] is None else int(r[6]), tuple(saved["lines"]),
                   str(saved["source"]))
