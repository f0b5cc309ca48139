"""Long-term memory items (:class:`~memci.store.ItemStore`): the row statements, both backends.

``memory_items`` (migration series ``memory``) holds every item, current or not; ``rev``
grows at each change (SQLite: ``MAX(rev) + 1``, in the statement that writes it;
PostgreSQL: the sequence ``memory_item_revisions``, so revisions grow whichever server
writes). Each backend keeps the items' keyword text its own way, and ranks it its own
way: :class:`SqlItemStore` leaves :meth:`SqlItemStore._index` and
:meth:`SqlItemStore.keyword` to it (FTS5; a postings table with FTS5's BM25).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memci.store._items import ItemFilter, MemoryItem, NewItem, Scope
from memci.store._rows import ITEM_COLUMNS, item_from_row
from memci.store._sql._conn import Sql, Transactions
from memci.store._sql._dialect import Dialect
from memci.store._sql._search import session_names

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["SqlItemStore", "item_filter"]

_SELECT = f"SELECT {ITEM_COLUMNS} FROM memory_items"


#: Items one INSERT carries (15 parameters each: far under both backends' limits).
_ITEMS_PER_INSERT = 500
#: What :meth:`SqlItemStore.add_many` writes of an item (its revision after them).
_ITEM_COLUMNS = ("tenant", "user_id", "session_id", "scope", "kind", "subject", "text", "norm",
                 "summary", "source", "page", "valid_from", "created", "updated")


def _owner(d: Dialect, scope: Scope) -> tuple[str, list[Any]]:
    """SQL for "owned by exactly this scope" (not what it can see)."""
    return (f"tenant = ? AND scope = ? AND user_id {d.is_same} ? AND session_id {d.is_same} ?",
            [scope.tenant, scope.level, scope.owner_user, scope.owner_session])


def _visible(scope: Scope, a: str = "i") -> tuple[str, list[Any]]:
    """SQL for the items ``scope`` may read (see :mod:`memci.store._items`)."""
    if scope.level == "tenant":
        return f"{a}.tenant = ?", [scope.tenant]
    if scope.level == "user":
        return (f"{a}.tenant = ? AND ({a}.scope = 'tenant' OR {a}.user_id = ?)",
                [scope.tenant, scope.user])
    sql = f"{a}.tenant = ? AND ({a}.scope = 'tenant' OR {a}.session_id = ?"
    args: list[Any] = [scope.tenant, scope.session_id]
    if scope.user:
        sql += f" OR ({a}.scope = 'user' AND {a}.user_id = ?)"
        args.append(scope.user)
    return sql + ")", args


def item_filter(d: Dialect, where: ItemFilter) -> tuple[str, list[Any]]:
    """SQL (on ``memory_items i``) and its args for the items passing ``where``."""
    sql, args = _visible(where.scope)
    if where.kinds is not None:
        kinds, more = d.in_values("i.kind", where.kinds)
        sql, args = f"{sql} AND {kinds}", args + more
    if where.exclude_kinds:
        kinds, more = d.in_values("i.kind", where.exclude_kinds, negate=True)
        sql, args = f"{sql} AND {kinds}", args + more
    if where.current:
        sql += " AND i.superseded_by IS NULL AND i.valid_to IS NULL"
    return sql, args


class SqlItemStore(ABC):
    """The memory items of one store, with the keyword text of one analyzer."""

    def __init__(self, db: Transactions, analyzer: Analyzer) -> None:
        db.ready("memory")
        self._db = db
        self.analyzer = analyzer
        self._names: dict[int, str] = {}  # session names read (see session_names)

    # -- what each backend does its own way ----------------------------------------------

    @abstractmethod
    def _index(self, sql: Sql, item_id: int, text: str, summary: str | None,
               subject: str | None, *, replace: bool = False) -> None:
        """Give the item its keyword text (``replace``: in place of the text it has)."""

    def _index_many(self, sql: Sql,
                    items: Sequence[tuple[int, str, str | None, str | None]]) -> None:
        """:meth:`_index` of each new ``(id, text, summary, subject)``."""
        for item_id, text, summary, subject in items:
            self._index(sql, item_id, text, summary, subject)

    @abstractmethod
    def _revision(self, sql: Sql) -> tuple[str, tuple[Any, ...]]:
        """SQL for the next revision number, and its args."""

    @abstractmethod
    def keyword(self, plan: MatchQuery, where: ItemFilter, depth: int) -> list[int]:
        """Up to ``depth`` ids passing ``where`` that match ``plan`` (BM25), best first.

        A plan with only terms too short for the index matches them by scanning, newest
        first.
        """

    # -- writing -------------------------------------------------------------------------

    def hold(self, owner: Scope, kind: str) -> None:
        """Lock ``owner``'s items of ``kind`` until the transaction ends (see ItemStore.hold).

        PostgreSQL: a transaction-scoped advisory lock named by the owner and kind (items
        have no row to lock before they are added); SQLite's writers take turns: nothing.
        """
        with self._db.write() as sql:
            if sql.dialect.lock_name:
                sql.run(sql.dialect.lock_name, ("\x1f".join(map(str, (
                    "memory_items", owner.tenant, owner.level, owner.owner_user,
                    owner.owner_session, kind))),))

    def find(self, owner: Scope, kind: str, norm: str) -> int | None:
        """The newest item not superseded owned by exactly ``owner`` with this text."""
        with self._db.read() as sql:
            where, args = _owner(sql.dialect, owner)
            found = sql.value(f"SELECT id FROM memory_items WHERE {where} AND kind = ?"
                              " AND norm = ? AND superseded_by IS NULL ORDER BY id DESC"
                              " LIMIT 1", (*args, kind, norm))
        return None if found is None else int(found)

    def merge(
        self, item_id: int, *, now: float, summary: str | None, source: str | None,
        subject: str | None,
    ) -> None:
        """Count the item seen again; a summary or source given replaces the old one."""
        with self._db.write() as sql:
            rev, rev_args = self._revision(sql)
            row = sql.one(
                f"UPDATE memory_items SET seen = seen + 1, updated = ?, rev = {rev},"
                " summary = COALESCE(?, summary), source = COALESCE(?, source),"
                " subject = COALESCE(subject, ?) WHERE id = ? RETURNING text, summary, subject",
                (now, *rev_args, summary, source, subject, item_id))
            if summary is not None and row is not None:
                self._index(sql, item_id, row[0], row[1], row[2], replace=True)

    def merge_many(self, seen: Mapping[int, NewItem], *, now: float) -> None:
        """:meth:`merge` of each item ``id`` seen again as ``item``, one after another."""
        for item_id, item in seen.items():
            self.merge(item_id, now=now, summary=item.summary, source=item.source,
                       subject=item.subject)

    def add(self, item: NewItem) -> int:
        """Store a new item; return its id."""
        scope = item.scope
        with self._db.write() as sql:
            rev, rev_args = self._revision(sql)
            made = sql.value(
                "INSERT INTO memory_items (tenant, user_id, session_id, scope, kind, subject,"
                " text, norm, summary, source, page, valid_from, created, updated, rev)"
                f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {rev}) RETURNING id",
                (scope.tenant, scope.owner_user, scope.owner_session, scope.level, item.kind,
                 item.subject, item.text, item.norm, item.summary, item.source, item.page,
                 item.valid_from, item.created, item.created, *rev_args))
            new_id = int(made)
            self._index(sql, new_id, item.text, item.summary, item.subject)
        return new_id

    def supersede(
        self, owner: Scope, kind: str, subject: str, *, by: int, since: float, now: float
    ) -> None:
        """End, as of ``since``, the current items of ``owner`` about ``subject`` but ``by``."""
        with self._db.write() as sql:
            where, args = _owner(sql.dialect, owner)
            rev, rev_args = self._revision(sql)
            sql.run(f"UPDATE memory_items SET valid_to = ?, superseded_by = ?, updated = ?,"
                    f" rev = {rev} WHERE {where} AND kind = ? AND subject = ? AND id <> ?"
                    " AND superseded_by IS NULL",
                    (since, by, now, *rev_args, *args, kind, subject, by))

    def find_many(self, owner: Scope, kind: str, norms: Collection[str]) -> dict[str, int]:
        """:meth:`find` for each of ``norms`` at once: norm -> the newest such item's id."""
        if not norms:
            return {}
        with self._db.read() as sql:
            where, args = _owner(sql.dialect, owner)
            listed, more = sql.dialect.in_values("norm", list(norms))
            rows = sql.all(f"SELECT id, norm FROM memory_items WHERE {where} AND kind = ?"
                           f" AND {listed} AND superseded_by IS NULL ORDER BY id DESC",
                           (*args, kind, *more))
        found: dict[str, int] = {}
        for item_id, norm in rows:
            found.setdefault(str(norm), int(item_id))
        return found

    def add_many(self, items: Sequence[NewItem]) -> list[int]:
        """Store new items (as :meth:`add` one after another); their ids, in order.

        One multi-row ``INSERT`` per batch, its rows as the dialect spells a batch (one
        statement text whatever its size, on PostgreSQL): both backends give the rows of
        one statement ids in the order they are written.
        """
        ids: list[int] = []
        if not items:
            return ids
        with self._db.write() as sql:
            revision = self._revision(sql)
            for at in range(0, len(items), _ITEMS_PER_INSERT):
                batch, args = sql.dialect.rows("memory_items", _ITEM_COLUMNS, [
                    (item.scope.tenant, item.scope.owner_user, item.scope.owner_session,
                     item.scope.level, item.kind, item.subject, item.text, item.norm,
                     item.summary, item.source, item.page, item.valid_from, item.created,
                     item.created) for item in items[at:at + _ITEMS_PER_INSERT]], revision)
                made = sql.all(f"INSERT INTO memory_items ({', '.join(_ITEM_COLUMNS)}, rev)"
                               f" {batch} RETURNING id", args)
                ids += sorted(int(r[0]) for r in made)
            self._index_many(sql, [(item_id, item.text, item.summary, item.subject)
                                   for item_id, item in zip(ids, items, strict=True)])
        return ids

    def supersede_many(
        self, owner: Scope, kind: str, by_subject: Mapping[str, int], *, since: float,
        now: float,
    ) -> None:
        """:meth:`supersede` for each ``subject -> by`` at once (one statement)."""
        if not by_subject:
            return
        with self._db.write() as sql:
            d = sql.dialect
            where, args = _owner(d, owner)
            rev, rev_args = self._revision(sql)
            cases = " ".join("WHEN ? THEN ?" for _ in by_subject)
            case_args = [v for subject, by in by_subject.items() for v in (subject, by)]
            subjects, subject_args = d.in_values("subject", list(by_subject))
            others, other_args = d.in_values("id", list(by_subject.values()), negate=True)
            sql.run(f"UPDATE memory_items SET valid_to = ?, superseded_by = CASE subject"
                    f" {cases} END, updated = ?, rev = {rev} WHERE {where} AND kind = ?"
                    f" AND {subjects} AND {others} AND superseded_by IS NULL",
                    (since, *case_args, now, *rev_args, *args, kind, *subject_args,
                     *other_args))

    def end(self, item_id: int, now: float) -> None:
        """End the item's validity at ``now`` (a no-op when it has ended)."""
        with self._db.write() as sql:
            rev, rev_args = self._revision(sql)
            sql.run(f"UPDATE memory_items SET valid_to = ?, updated = ?, rev = {rev}"
                    " WHERE id = ? AND valid_to IS NULL", (now, now, *rev_args, item_id))

    # -- reading -------------------------------------------------------------------------

    def get(self, item_id: int) -> MemoryItem | None:
        """The item, or None."""
        with self._db.read() as sql:
            row = sql.one(_SELECT + " WHERE id = ?", (item_id,))
        return item_from_row(row) if row else None

    def get_many(self, item_ids: Sequence[int]) -> list[MemoryItem]:
        """The items still stored, in the order asked (one statement for all)."""
        if not item_ids:
            return []
        with self._db.read() as sql:
            d = sql.dialect
            rows = sql.all(f"{_SELECT} WHERE {d.in_array('id')}",
                           (d.array(int(i) for i in item_ids),))
        found = {item.id: item for item in map(item_from_row, rows)}
        return [found[i] for i in item_ids if i in found]

    def visible(self, where: ItemFilter, *, limit: int | None = None) -> list[MemoryItem]:
        """Items passing ``where``, newest first (by the time they became true)."""
        sql_where, args = item_filter(self._db.dialect, where)
        query = (f"SELECT {ITEM_COLUMNS} FROM memory_items i WHERE {sql_where}"
                 " ORDER BY i.valid_from DESC, i.id DESC")
        if limit is not None:
            query += " LIMIT ?"
            args.append(limit)
        with self._db.read() as sql:
            return [item_from_row(r) for r in sql.all(query, args)]

    def history(self, item_id: int) -> list[MemoryItem]:
        """Every item of the same owner, kind and subject (or the item alone), oldest first."""
        with self._db.read() as sql:
            row = sql.one("SELECT tenant, scope, user_id, session_id, kind, subject FROM"
                          " memory_items WHERE id = ?", (item_id,))
            if row is None:
                return []
            if row[5] is None:
                rows = sql.all(_SELECT + " WHERE id = ?", (item_id,))
            else:
                same = sql.dialect.is_same
                rows = sql.all(f"{_SELECT} WHERE tenant = ? AND scope = ? AND user_id {same} ?"
                               f" AND session_id {same} ? AND kind = ? AND subject = ?"
                               " ORDER BY valid_from, id", tuple(row))
        return [item_from_row(r) for r in rows]

    def version(self) -> int:
        """The newest revision: grows with every change to items."""
        with self._db.read() as sql:
            return int(sql.value("SELECT COALESCE(MAX(rev), 0) FROM memory_items") or 0)

    def ids(self, where: ItemFilter) -> list[int]:
        """Ids of every item passing ``where``."""
        sql_where, args = item_filter(self._db.dialect, where)
        with self._db.read() as sql:
            return [int(r[0]) for r in sql.all(
                f"SELECT i.id FROM memory_items i WHERE {sql_where}", args)]

    def valid_within(self, where: ItemFilter, start: float, end: float) -> set[int]:
        """Ids passing ``where`` that became true in ``[start, end)`` (Unix seconds)."""
        sql_where, args = item_filter(self._db.dialect, where)
        with self._db.read() as sql:
            return {int(r[0]) for r in sql.all(
                f"SELECT i.id FROM memory_items i WHERE {sql_where} AND i.valid_from >= ?"
                " AND i.valid_from < ?", (*args, start, end))}

    def session_names(self, session_ids: Collection[int]) -> dict[int, str]:
        """Names of the sessions (their ids as text when gone).

        A name found is kept (names never change): each search's items name the same
        few sessions.
        """
        missing = set(session_ids) - self._names.keys()
        if missing:
            with self._db.read() as sql:
                found = session_names(sql, missing)
            self._names.update((i, name) for i, name in found.items() if name != str(i))
            return {i: self._names.get(i, found.get(i, str(i))) for i in session_ids}
        return {i: self._names[i] for i in session_ids}
