"""The working state and its audit log in PostgreSQL (:class:`~memci.store.WorkStore`).

Tables of the ``workspace`` series: ``workspace_items`` (JSON per session, kind and id),
``workspace_meta`` (JSON per session and name) and ``workspace_events`` (the audit log; its
identity column never gives an id twice). Values are stored as JSON text with sorted keys,
so a value read back compares equal to the one written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any

from memci.store._rows import damaged, stored_json
from memci.store._work import WorkEvent
from memci.store.postgres._db import Database

__all__ = ["PostgresWorkStore"]

_EVENT = ("SELECT id, session_id, at, actor, action, target, before, after, reverts"
          " FROM workspace_events WHERE session_id = %s")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@damaged("working-state event row")
def _event(row: Sequence[Any]) -> WorkEvent:
    return WorkEvent(
        id=int(row[0]), session_id=int(row[1]), at=datetime.fromisoformat(str(row[2])),
        actor=str(row[3]), action=str(row[4]), target=str(row[5]),
        before=MappingProxyType(json.loads(row[6])), after=MappingProxyType(json.loads(row[7])),
        reverts=None if row[8] is None else int(row[8]),
    )


class PostgresWorkStore:
    """Working-state rows of one PostgreSQL store."""

    def __init__(self, store: Database) -> None:
        self._store = store

    def has_session(self, session_id: int) -> bool:
        """Whether the session exists."""
        with self._store.read() as db:
            return db.execute("SELECT 1 FROM sessions WHERE id = %s",
                              (session_id,)).fetchone() is not None

    def item(self, session_id: int, kind: str, item_id: int) -> Any:
        """The JSON value of one item, or None."""
        with self._store.read() as db:
            row = db.execute("SELECT data FROM workspace_items WHERE session_id = %s"
                             " AND kind = %s AND item_id = %s",
                             (session_id, kind, item_id)).fetchone()
        return None if row is None else stored_json(row[0], "working-state value")

    def items(self, session_id: int, kind: str) -> list[Any]:
        """Every item of ``kind``, by id."""
        with self._store.read() as db:
            rows = db.execute("SELECT data FROM workspace_items WHERE session_id = %s"
                              " AND kind = %s ORDER BY item_id", (session_id, kind)).fetchall()
        return [stored_json(r[0], "working-state value") for r in rows]

    def top_item_id(self, session_id: int, kind: str) -> int:
        """The largest id of an item of ``kind`` stored now (0 when none is)."""
        with self._store.read() as db:
            row = db.execute("SELECT MAX(item_id) FROM workspace_items WHERE session_id = %s"
                             " AND kind = %s", (session_id, kind)).fetchone()
        return int(row[0] or 0) if row else 0

    def put_item(self, session_id: int, kind: str, item_id: int, value: Any) -> None:
        """Store an item's JSON value (None removes it)."""
        with self._store.write() as db:
            if value is None:
                db.execute("DELETE FROM workspace_items WHERE session_id = %s AND kind = %s"
                           " AND item_id = %s", (session_id, kind, item_id))
            else:
                db.execute("INSERT INTO workspace_items (session_id, kind, item_id, data)"
                           " VALUES (%s, %s, %s, %s) ON CONFLICT (session_id, kind, item_id)"
                           " DO UPDATE SET data = EXCLUDED.data",
                           (session_id, kind, item_id, _dumps(value)))

    def meta(self, session_id: int, name: str) -> Any:
        """The JSON value of a per-session value, or None."""
        with self._store.read() as db:
            row = db.execute("SELECT value FROM workspace_meta WHERE session_id = %s"
                             " AND name = %s", (session_id, name)).fetchone()
        return None if row is None else stored_json(row[0], "working-state value")

    def put_meta(self, session_id: int, name: str, value: Any) -> None:
        """Store a per-session value (None removes it)."""
        with self._store.write() as db:
            if value is None:
                db.execute("DELETE FROM workspace_meta WHERE session_id = %s AND name = %s",
                           (session_id, name))
            else:
                db.execute("INSERT INTO workspace_meta (session_id, name, value)"
                           " VALUES (%s, %s, %s) ON CONFLICT (session_id, name)"
                           " DO UPDATE SET value = EXCLUDED.value",
                           (session_id, name, _dumps(value)))

    def add_event(
        self, session_id: int, *, at: datetime, actor: str, action: str, target: str,
        before: Mapping[str, Any], after: Mapping[str, Any], reverts: int | None = None,
    ) -> WorkEvent:
        """Append an event to the session's audit log; return it with its id."""
        with self._store.write() as db:
            row = db.execute(
                "INSERT INTO workspace_events (session_id, at, actor, action, target, before,"
                " after, reverts) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (session_id, at.isoformat(), actor, action, target, _dumps(dict(before)),
                 _dumps(dict(after)), reverts)).fetchone()
        assert row is not None
        return WorkEvent(id=int(row[0]), session_id=session_id, at=at, actor=actor,
                         action=action, target=target, before=dict(before), after=dict(after),
                         reverts=reverts)

    def events(self, session_id: int, *, after: int = 0) -> list[WorkEvent]:
        """The session's events with id > ``after``, oldest first."""
        with self._store.read() as db:
            rows = db.execute(_EVENT + " AND id > %s ORDER BY id", (session_id, after)).fetchall()
        return [_event(r) for r in rows]

    def event(self, session_id: int, event_id: int) -> WorkEvent | None:
        """One event of the session, or None."""
        with self._store.read() as db:
            row = db.execute(_EVENT + " AND id = %s", (session_id, event_id)).fetchone()
        return None if row is None else _event(row)

    def latest_event(self, session_id: int) -> int:
        """The id of the session's newest event (0 when none)."""
        with self._store.read() as db:
            row = db.execute("SELECT MAX(id) FROM workspace_events WHERE session_id = %s",
                             (session_id,)).fetchone()
        return int(row[0] or 0) if row else 0
