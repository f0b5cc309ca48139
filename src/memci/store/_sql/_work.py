"""The working state and its audit log (:class:`~memci.store.WorkStore`), both backends.

Tables of the ``workspace`` series: ``workspace_items`` (JSON per session, kind and id),
``workspace_meta`` (JSON per session and name) and ``workspace_events`` (the audit log;
an event id is never given twice: SQLite's ``AUTOINCREMENT``, PostgreSQL's identity
column). Values are stored as JSON text with sorted keys, so a value read back compares
equal to the one written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any

from memci._dataclasses import replace
from memci.store._rows import damaged, stored_json
from memci.store._sql._conn import Transactions
from memci.store._sql._dialect import upsert
from memci.store._work import WorkEvent

__all__ = ["SqlWorkStore"]

_EVENT = ("SELECT id, session_id, at, actor, action, target, before, after, reverts"
          " FROM workspace_events WHERE session_id = ?")
_ADD_EVENT = ("INSERT INTO workspace_events (session_id, at, actor, action, target, before,"
              " after, reverts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_PUT_ITEM = upsert("workspace_items", ("session_id", "kind", "item_id", "data"),
                   ("session_id", "kind", "item_id"))
_PUT_META = upsert("workspace_meta", ("session_id", "name", "value"), ("session_id", "name"))


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


class SqlWorkStore:
    """Working-state rows of one store."""

    def __init__(self, db: Transactions) -> None:
        db.ready("workspace")
        self._db = db

    def has_session(self, session_id: int) -> bool:
        """Whether the session exists."""
        with self._db.read() as sql:
            return sql.one("SELECT 1 FROM sessions WHERE id = ?", (session_id,)) is not None

    def hold(self, session_id: int) -> None:
        """Lock the session's row until the transaction ends (where rows are locked).

        A writer of the working state reads it, then writes what it changed: on
        PostgreSQL two servers' writers of one session would read the same state and the
        later write would undo the earlier (two notes given one id). SQLite's write
        transactions take turns already: no statement.
        """
        with self._db.write() as sql:
            if sql.dialect.lock_row:
                sql.run("SELECT 1 FROM sessions WHERE id = ?" + sql.dialect.lock_row,
                        (session_id,))

    def item(self, session_id: int, kind: str, item_id: int) -> Any:
        """The JSON value of one item, or None."""
        with self._db.read() as sql:
            row = sql.one("SELECT data FROM workspace_items WHERE session_id = ? AND kind = ?"
                          " AND item_id = ?", (session_id, kind, item_id))
        return None if row is None else stored_json(row[0], "working-state value")

    def items(self, session_id: int, kind: str) -> list[Any]:
        """Every item of ``kind``, by id."""
        with self._db.read() as sql:
            rows = sql.all("SELECT data FROM workspace_items WHERE session_id = ?"
                           " AND kind = ? ORDER BY item_id", (session_id, kind))
        return [stored_json(r[0], "working-state value") for r in rows]

    def every_item(self, session_id: int) -> dict[str, dict[int, Any]]:
        """Every item of the session by kind, each kind by id, in id order (one read)."""
        with self._db.read() as sql:
            rows = sql.all("SELECT kind, item_id, data FROM workspace_items WHERE session_id = ?"
                           " ORDER BY kind, item_id", (session_id,))
        out: dict[str, dict[int, Any]] = {}
        for kind, item_id, data in rows:
            out.setdefault(str(kind), {})[int(item_id)] = stored_json(data,
                                                                      "working-state value")
        return out

    def every_value(
        self, session_id: int
    ) -> tuple[dict[str, dict[int, Any]], dict[str, Any]]:
        """:meth:`every_item`, and every per-session value by name, in one statement."""
        with self._db.read() as sql:
            rows = sql.all("SELECT 0, kind, item_id, data FROM workspace_items"
                           " WHERE session_id = ? UNION ALL SELECT 1, name, 0, value"
                           " FROM workspace_meta WHERE session_id = ? ORDER BY 1, 2, 3",
                           (session_id, session_id))
        items: dict[str, dict[int, Any]] = {}
        meta: dict[str, Any] = {}
        for is_meta, key, item_id, data in rows:
            value = stored_json(data, "working-state value")
            if is_meta:
                meta[str(key)] = value
            else:
                items.setdefault(str(key), {})[int(item_id)] = value
        return items, meta

    def top_item_id(self, session_id: int, kind: str) -> int:
        """The largest id of an item of ``kind`` stored now (0 when none is)."""
        with self._db.read() as sql:
            top = sql.value("SELECT MAX(item_id) FROM workspace_items WHERE session_id = ?"
                            " AND kind = ?", (session_id, kind))
        return int(top or 0)

    def put_item(self, session_id: int, kind: str, item_id: int, value: Any) -> None:
        """Store an item's JSON value (None removes it)."""
        with self._db.write() as sql:
            if value is None:
                sql.run("DELETE FROM workspace_items WHERE session_id = ? AND kind = ?"
                        " AND item_id = ?", (session_id, kind, item_id))
            else:
                sql.run(_PUT_ITEM, (session_id, kind, item_id, _dumps(value)))

    def put_items(self, session_id: int, values: Mapping[tuple[str, int], Any]) -> None:
        """Store several items' values (one delete per kind, the rest in one batch)."""
        gone: dict[str, list[int]] = {}
        for (kind, item_id), value in values.items():
            if value is None:
                gone.setdefault(kind, []).append(item_id)
        with self._db.write() as sql:
            for kind, ids in gone.items():
                sql.run("DELETE FROM workspace_items WHERE session_id = ? AND kind = ?"
                        f" AND {sql.dialect.in_array('item_id')}",
                        (session_id, kind, sql.dialect.array(ids)))
            sql.many(_PUT_ITEM, [(session_id, kind, item_id, _dumps(value))
                                 for (kind, item_id), value in values.items()
                                 if value is not None])

    def meta(self, session_id: int, name: str) -> Any:
        """The JSON value of a per-session value, or None."""
        with self._db.read() as sql:
            row = sql.one("SELECT value FROM workspace_meta WHERE session_id = ? AND name = ?",
                          (session_id, name))
        return None if row is None else stored_json(row[0], "working-state value")

    def put_meta(self, session_id: int, name: str, value: Any) -> None:
        """Store a per-session value (None removes it)."""
        with self._db.write() as sql:
            if value is None:
                sql.run("DELETE FROM workspace_meta WHERE session_id = ? AND name = ?",
                        (session_id, name))
            else:
                sql.run(_PUT_META, (session_id, name, _dumps(value)))

    def add_event(
        self, session_id: int, *, at: datetime, actor: str, action: str, target: str,
        before: Mapping[str, Any], after: Mapping[str, Any], reverts: int | None = None,
    ) -> WorkEvent:
        """Append an event to the session's audit log; return it with its id."""
        return self.add_events([WorkEvent(
            id=0, session_id=session_id, at=at, actor=actor, action=action, target=target,
            before=dict(before), after=dict(after), reverts=reverts)])[0]

    def add_events(self, events: Sequence[WorkEvent]) -> list[WorkEvent]:
        """Append events (their ids ignored) in one statement; return them with their ids."""
        if not events:
            return []
        with self._db.write() as sql:
            ids = sql.inserted(_ADD_EVENT, [
                (e.session_id, e.at.isoformat(), e.actor, e.action, e.target,
                 _dumps(dict(e.before)), _dumps(dict(e.after)), e.reverts) for e in events])
        return [replace(e, id=made) for e, made in zip(events, ids, strict=True)]

    def events(self, session_id: int, *, after: int = 0) -> list[WorkEvent]:
        """The session's events with id > ``after``, oldest first."""
        with self._db.read() as sql:
            rows = sql.all(_EVENT + " AND id > ? ORDER BY id", (session_id, after))
        return [_event(r) for r in rows]

    def event(self, session_id: int, event_id: int) -> WorkEvent | None:
        """One event of the session, or None."""
        with self._db.read() as sql:
            row = sql.one(_EVENT + " AND id = ?", (session_id, event_id))
        return None if row is None else _event(row)

    def latest_event(self, session_id: int) -> int:
        """The id of the session's newest event (0 when none)."""
        with self._db.read() as sql:
            top = sql.value("SELECT MAX(id) FROM workspace_events WHERE session_id = ?",
                            (session_id,))
        return int(top or 0)
