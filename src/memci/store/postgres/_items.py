"""Long-term memory items in PostgreSQL (:class:`~memci.store.ItemStore`).

``memory_items`` (migration series ``memory``) holds every item, current or not; ``rev``
comes from the sequence ``memory_item_revisions`` at each change, so revisions grow
whichever server writes. The derived keyword table ``memory_items_fts_<analyzer>`` (ref =
item id; :class:`KeywordTable`) keeps ``body`` (text and summary, weight A) and
``subject`` (weight B); a changed item's row there is replaced in the same transaction.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from memci.store._items import ItemFilter, MemoryItem, NewItem, Scope
from memci.store._rows import ITEM_COLUMNS, item_from_row
from memci.store.postgres._db import Connection, Database
from memci.store.postgres._keyword import KeywordTable
from memci.store.postgres._search import session_names

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["PostgresItemStore"]

_REV = "nextval('memory_item_revisions')"
# Item rows' statistics are spread over shards so writers seldom wait on one counter. A
# transaction counts all its rows under one shard (its connection's): counting each row
# under its own shard, two transactions that add many items took the shards' row locks in
# different orders and deadlocked (three servers archiving at once did).
_SHARDS = 16


def _owner(scope: Scope) -> tuple[str, list[Any]]:
    """SQL for "owned by exactly this scope" (not what it can see)."""
    return ("tenant = %s AND scope = %s AND user_id IS NOT DISTINCT FROM %s"
            " AND session_id IS NOT DISTINCT FROM %s",
            [scope.tenant, scope.level, scope.owner_user, scope.owner_session])


def _visible(scope: Scope, a: str = "i") -> tuple[str, list[Any]]:
    """SQL for the items ``scope`` may read (see :mod:`memci.store._items`)."""
    if scope.level == "tenant":
        return f"{a}.tenant = %s", [scope.tenant]
    if scope.level == "user":
        return (f"{a}.tenant = %s AND ({a}.scope = 'tenant' OR {a}.user_id = %s)",
                [scope.tenant, scope.user])
    sql = f"{a}.tenant = %s AND ({a}.scope = 'tenant' OR {a}.session_id = %s"
    args: list[Any] = [scope.tenant, scope.session_id]
    if scope.user:
        sql += f" OR ({a}.scope = 'user' AND {a}.user_id = %s)"
        args.append(scope.user)
    return sql + ")", args


def _where(where: ItemFilter) -> tuple[str, list[Any]]:
    sql, args = _visible(where.scope)
    if where.kinds is not None:
        sql += " AND i.kind = ANY(%s)"
        args.append(list(where.kinds))
    if where.exclude_kinds:
        sql += " AND NOT (i.kind = ANY(%s))"
        args.append(list(where.exclude_kinds))
    if where.current:
        sql += " AND i.superseded_by IS NULL AND i.valid_to IS NULL"
    return sql, args


class PostgresItemStore:
    """The memory items of one PostgreSQL store, with the keyword text of one analyzer."""

    def __init__(self, store: Database, analyzer: Analyzer) -> None:
        self._store = store
        self.analyzer = analyzer
        self.table = KeywordTable(store, f"memory_items_fts_{analyzer.name}",
                                  analyzer.tokenize)

        def fill(db: Connection) -> None:
            for row in db.execute("SELECT id, text, summary, subject FROM memory_items"
                                  ).fetchall():
                self._put(db, int(row[0]), row[1], row[2], row[3])

        store.derive(self.table.name, self.table.statements(), fill)

    def _put(self, db: Connection, item_id: int, text: str, summary: str | None,
             subject: str | None, *, replace: bool = False) -> None:
        body = text if not summary else f"{text}\n{summary}"
        a = self.analyzer
        self.table.put(db, item_id, (id(db) >> 4) % _SHARDS,
                       (a.document(body), a.document(subject or "")), replace=replace)

    # -- writing -------------------------------------------------------------------------

    def find(self, owner: Scope, kind: str, norm: str) -> int | None:
        """The newest item not superseded owned by exactly ``owner`` with this text."""
        sql, args = _owner(owner)
        with self._store.read() as db:
            row = db.execute(
                f"SELECT id FROM memory_items WHERE {sql} AND kind = %s AND norm = %s"
                " AND superseded_by IS NULL ORDER BY id DESC LIMIT 1", (*args, kind, norm),
            ).fetchone()
        return None if row is None else int(row[0])

    def merge(
        self, item_id: int, *, now: float, summary: str | None, source: str | None,
        subject: str | None,
    ) -> None:
        """Count the item seen again; a summary or source given replaces the old one."""
        with self._store.write() as db:
            row = db.execute(
                f"UPDATE memory_items SET seen = seen + 1, updated = %s, rev = {_REV},"
                " summary = COALESCE(%s, summary), source = COALESCE(%s, source),"
                " subject = COALESCE(subject, %s) WHERE id = %s"
                " RETURNING text, summary, subject",
                (now, summary, source, subject, item_id)).fetchone()
            if summary is not None and row is not None:
                self._put(db, item_id, row[0], row[1], row[2], replace=True)

    def add(self, item: NewItem) -> int:
        """Store a new item; return its id."""
        scope = item.scope
        with self._store.write() as db:
            row = db.execute(
                "INSERT INTO memory_items (tenant, user_id, session_id, scope, kind, subject,"
                " text, norm, summary, source, page, valid_from, created, updated, rev)"
                f" VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, {_REV})"
                " RETURNING id",
                (scope.tenant, scope.owner_user, scope.owner_session, scope.level, item.kind,
                 item.subject, item.text, item.norm, item.summary, item.source, item.page,
                 item.valid_from, item.created, item.created)).fetchone()
            assert row is not None
            new_id = int(row[0])
            self._put(db, new_id, item.text, item.summary, item.subject)
        return new_id

    def supersede(
        self, owner: Scope, kind: str, subject: str, *, by: int, since: float, now: float
    ) -> None:
        """End, as of ``since``, the current items of ``owner`` about ``subject`` but ``by``."""
        sql, args = _owner(owner)
        with self._store.write() as db:
            db.execute(
                f"UPDATE memory_items SET valid_to = %s, superseded_by = %s, updated = %s,"
                f" rev = {_REV} WHERE {sql} AND kind = %s AND subject = %s AND id <> %s"
                " AND superseded_by IS NULL",
                (since, by, now, *args, kind, subject, by))

    def end(self, item_id: int, now: float) -> None:
        """End the item's validity at ``now`` (a no-op when it has ended)."""
        with self._store.write() as db:
            db.execute(f"UPDATE memory_items SET valid_to = %s, updated = %s, rev = {_REV}"
                       " WHERE id = %s AND valid_to IS NULL", (now, now, item_id))

    # -- reading -------------------------------------------------------------------------

    def get(self, item_id: int) -> MemoryItem | None:
        """The item, or None."""
        with self._store.read() as db:
            row = db.execute(f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE id = %s",
                             (item_id,)).fetchone()
        return item_from_row(row) if row else None

    def get_many(self, item_ids: Sequence[int]) -> list[MemoryItem]:
        """The items still stored, in the order asked."""
        with self._store.read() as db:
            rows = db.execute(f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE id = ANY(%s)",
                              ([int(i) for i in item_ids],)).fetchall()
        found = {int(r[0]): item_from_row(r) for r in rows}
        return [found[i] for i in item_ids if i in found]

    def visible(self, where: ItemFilter, *, limit: int | None = None) -> list[MemoryItem]:
        """Items passing ``where``, newest first (by the time they became true)."""
        sql, args = _where(where)
        query = (f"SELECT {ITEM_COLUMNS} FROM memory_items i WHERE {sql}"
                 " ORDER BY i.valid_from DESC, i.id DESC")
        if limit is not None:
            query += " LIMIT %s"
            args.append(limit)
        with self._store.read() as db:
            return [item_from_row(r) for r in db.execute(query, args).fetchall()]

    def history(self, item_id: int) -> list[MemoryItem]:
        """Every item of the same owner, kind and subject (or the item alone), oldest first."""
        with self._store.read() as db:
            row = db.execute("SELECT tenant, scope, user_id, session_id, kind, subject FROM"
                             " memory_items WHERE id = %s", (item_id,)).fetchone()
            if row is None:
                return []
            if row[5] is None:
                rows = db.execute(f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE id = %s",
                                  (item_id,)).fetchall()
            else:
                rows = db.execute(
                    f"SELECT {ITEM_COLUMNS} FROM memory_items WHERE tenant = %s AND scope = %s AND"
                    " user_id IS NOT DISTINCT FROM %s AND session_id IS NOT DISTINCT FROM %s"
                    " AND kind = %s AND subject = %s ORDER BY valid_from, id", tuple(row),
                ).fetchall()
        return [item_from_row(r) for r in rows]

    def version(self) -> int:
        """The newest revision: grows with every change to items."""
        with self._store.read() as db:
            row = db.execute("SELECT COALESCE(MAX(rev), 0) FROM memory_items").fetchone()
        return int(row[0]) if row else 0

    def keyword(self, plan: MatchQuery, where: ItemFilter, depth: int) -> list[int]:
        """Up to ``depth`` ids passing ``where`` that match ``plan`` (BM25), best first.

        A plan with only terms too short for the index matches them by scanning
        (``strpos``), newest first.
        """
        sql, args = _where(where)
        join = " JOIN memory_items i ON i.id = k.ref"
        with self._store.snapshot() as db:
            if plan.match is not None:
                return [ref for _, ref in self.table.rank(
                    db, plan.match, (1.0, 0.5), join=join, where=f" AND {sql}", args=args,
                    limit=depth)]
            if not plan.short_terms:
                return []
            likes = " OR ".join("strpos(k.body, %s) > 0" for _ in plan.short_terms)
            rows = db.execute(
                f"SELECT i.id FROM {self.table.name} k{join} WHERE ({likes}) AND {sql}"
                " ORDER BY i.valid_from DESC LIMIT %s",
                (*[s.lower() for s in plan.short_terms], *args, depth)).fetchall()
        return [int(r[0]) for r in rows]

    def ids(self, where: ItemFilter) -> list[int]:
        """Ids of every item passing ``where``."""
        sql, args = _where(where)
        with self._store.read() as db:
            return [int(r[0]) for r in db.execute(
                f"SELECT i.id FROM memory_items i WHERE {sql}", args).fetchall()]

    def valid_within(self, where: ItemFilter, start: float, end: float) -> set[int]:
        """Ids passing ``where`` that became true in ``[start, end)`` (Unix seconds)."""
        sql, args = _where(where)
        with self._store.read() as db:
            return {int(r[0]) for r in db.execute(
                f"SELECT i.id FROM memory_items i WHERE {sql} AND i.valid_from >= %s"
                " AND i.valid_from < %s", (*args, start, end)).fetchall()}

    def session_names(self, session_ids: Collection[int]) -> dict[int, str]:
        """Names of the sessions (their ids as text when gone)."""
        if not session_ids:
            return {}
        with self._store.read() as db:
            return session_names(db, session_ids)
