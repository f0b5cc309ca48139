"""Long-term memory items in scopes tenant > user > session: remember, supersede, recall.

Kinds: ``episodic`` (an archived or evicted page and its summary, one per session page),
``preference`` (a user's taste or setting), ``fact`` and any other name for explicit items.

Invariants:

- one current item per owner, kind and normalized text: remembering the same thing again
  merges into it (``seen`` grows, a new summary or source replaces the old);
- one current item per owner, kind and ``subject``: a newer item about a subject
  supersedes the older, which keeps its row with ``valid_to`` and ``superseded_by`` set —
  nothing is deleted, :meth:`MemoryItems.history` returns the chain;
- visibility: a session-scope read sees the session's items, its user's and the tenant's;
  a user-scope read sees every item of the user (all their sessions) and the tenant's; a
  tenant-scope read sees all of the tenant. Nothing crosses tenants or users.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal

from memci.errors import InvalidInputError
from memci.memory._embed import Embedder, embedder_from_env, speaks
from memci.memory._hit import Hit, fuse
from memci.memory._schema import MEMORY_MIGRATIONS, ensure_fts, fts_name
from memci.memory._text import Analyzer, get_analyzer, normalize
from memci.memory._time import TimeRange, time_hint, without_time
from memci.memory._vectors import VectorIndex
from memci.messages import Message, TextPart
from memci.store import SessionRecord, SQLiteStore

__all__ = ["Level", "MemoryItem", "MemoryItems", "Scope"]

Level = Literal["tenant", "user", "session"]
_LEVELS: tuple[Level, ...] = ("tenant", "user", "session")
_EMBED_LIMIT = 2_000


@dataclass(frozen=True, slots=True)
class Scope:
    """Who an item belongs to, or what a read may see: a tenant, a user, or a session.

    Build one with :meth:`tenant_scope`, :meth:`user_scope` or :meth:`of` (a session's).
    """

    level: Level
    tenant: str
    user: str | None = None
    session_id: int | None = None
    session: str | None = None

    def __post_init__(self) -> None:
        if self.level not in _LEVELS:
            raise InvalidInputError(f"scope level must be one of {', '.join(_LEVELS)}, "
                                    f"not {self.level!r}")
        if self.level == "user" and not self.user:
            raise InvalidInputError("a user scope needs a user")
        if self.level == "session" and self.session_id is None:
            raise InvalidInputError("a session scope needs a session")

    @classmethod
    def tenant_scope(cls, tenant: str = "default") -> Scope:
        """Everything of ``tenant``."""
        return cls("tenant", tenant)

    @classmethod
    def user_scope(cls, user: str, tenant: str = "default") -> Scope:
        """One user of ``tenant``, across their sessions."""
        return cls("user", tenant, user)

    @classmethod
    def of(cls, session: SessionRecord, level: Level = "session") -> Scope:
        """Return ``session``'s scope at ``level`` (user level without a user: the session)."""
        if level == "tenant":
            return cls.tenant_scope(session.tenant)
        if level == "user" and session.user:
            return cls("user", session.tenant, session.user)
        return cls("session", session.tenant, session.user, session.id, session.name)

    def visible(self, alias: str = "i") -> tuple[str, list[Any]]:
        """Return an SQL condition (and its arguments) for items this scope may read."""
        a = alias
        if self.level == "tenant":
            return f"{a}.tenant = ?", [self.tenant]
        if self.level == "user":
            return (f"{a}.tenant = ? AND ({a}.scope = 'tenant' OR {a}.user_id = ?)",
                    [self.tenant, self.user])
        sql = f"{a}.tenant = ? AND ({a}.scope = 'tenant' OR {a}.session_id = ?"
        args: list[Any] = [self.tenant, self.session_id]
        if self.user:
            sql += f" OR ({a}.scope = 'user' AND {a}.user_id = ?)"
            args.append(self.user)
        return sql + ")", args


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One long-term item; ``valid_to``/``superseded_by`` are set once it is replaced."""

    id: int
    scope: Level
    tenant: str
    user: str | None
    session_id: int | None
    kind: str
    subject: str | None
    text: str
    summary: str | None
    source: str | None
    page: int | None
    seen: int
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: int | None
    created: datetime
    updated: datetime

    @property
    def current(self) -> bool:
        """Whether no newer item supersedes this one."""
        return self.superseded_by is None and self.valid_to is None


_COLUMNS = ("id, scope, tenant, user_id, session_id, kind, subject, text, summary, source, "
            "page, seen, valid_from, valid_to, superseded_by, created, updated")


def _time(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value is not None else None


def _item(row: Sequence[Any]) -> MemoryItem:
    return MemoryItem(
        id=int(row[0]), scope=row[1], tenant=row[2], user=row[3],
        session_id=int(row[4]) if row[4] is not None else None, kind=row[5], subject=row[6],
        text=row[7], summary=row[8], source=row[9],
        page=int(row[10]) if row[10] is not None else None, seen=int(row[11]),
        valid_from=datetime.fromtimestamp(row[12], UTC), valid_to=_time(row[13]),
        superseded_by=int(row[14]) if row[14] is not None else None,
        created=datetime.fromtimestamp(row[15], UTC),
        updated=datetime.fromtimestamp(row[16], UTC),
    )


def _owner(scope: Scope, alias: str = "") -> tuple[str, list[Any]]:
    """Return SQL for "owned by exactly this scope" (not what it can see)."""
    p = f"{alias}." if alias else ""
    return (f"{p}tenant = ? AND {p}scope = ? AND {p}user_id IS ? AND {p}session_id IS ?",
            [scope.tenant, scope.level, scope.user if scope.level != "tenant" else None,
             scope.session_id if scope.level == "session" else None])


class MemoryItems:
    """Memory items of a store: remember, merge, supersede, list and recall them."""

    def __init__(
        self,
        store: SQLiteStore,
        *,
        analyzer: str | Analyzer | None = None,
        embedder: Embedder | Literal["env"] | None = "env",
        clock: Any = time.time,
    ) -> None:
        from memci.memory._index import DEFAULT_ANALYZER

        self.store = store
        self.analyzer = (get_analyzer(analyzer or DEFAULT_ANALYZER)
                         if analyzer is None or isinstance(analyzer, str) else analyzer)
        self.embedder = embedder_from_env() if embedder == "env" else embedder
        self.vectors = (VectorIndex(self.embedder, store) if self.embedder is not None
                        else None)
        self.table = fts_name("memory_items_fts", self.analyzer)
        self._clock = clock
        self._lock = threading.Lock()
        store.migrate("memory", MEMORY_MIGRATIONS)
        with store.write() as db:
            if ensure_fts(db, "memory_items_fts", self.analyzer):
                for row in db.execute("SELECT id, text, summary, subject FROM memory_items"
                                      ).fetchall():
                    self._add_fts(db, int(row[0]), row[1], row[2], row[3])

    # -- writing -------------------------------------------------------------------------

    def remember(
        self,
        scope: Scope,
        text: str,
        kind: str = "fact",
        subject: str | None = None,
        source: str | None = None,
        *,
        summary: str | None = None,
        page: int | None = None,
        at: datetime | None = None,
    ) -> MemoryItem:
        """Store an item owned by ``scope``; merge a duplicate, supersede by ``subject``.

        ``at`` is when the fact became true (default now). Returns the current item.
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("a memory item needs non-empty text")
        if not isinstance(kind, str) or not kind.strip():
            raise InvalidInputError("a memory item needs a kind (e.g. 'fact', 'preference')")
        norm = normalize(text)
        subj = normalize(subject) if subject else None
        now = self._clock()
        since = at.timestamp() if at is not None else now
        owner, owner_args = _owner(scope)
        with self.store.write() as db:
            same = db.execute(
                f"SELECT id FROM memory_items WHERE {owner} AND kind = ? AND norm = ?"
                " AND superseded_by IS NULL ORDER BY id DESC LIMIT 1",
                (*owner_args, kind, norm),
            ).fetchone()
            if same is not None:
                db.execute(
                    "UPDATE memory_items SET seen = seen + 1, updated = ?, rev = ?,"
                    " summary = COALESCE(?, summary), source = COALESCE(?, source),"
                    " subject = COALESCE(subject, ?) WHERE id = ?",
                    (now, self._rev(db), summary, source, subj, same[0]),
                )
                if summary is not None:
                    self._refresh(db, int(same[0]))
                return self._get(db, int(same[0]))
            cursor = db.execute(
                "INSERT INTO memory_items (tenant, user_id, session_id, scope, kind, subject,"
                " text, norm, summary, source, page, valid_from, created, updated, rev)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (scope.tenant, scope.user if scope.level != "tenant" else None,
                 scope.session_id if scope.level == "session" else None, scope.level, kind,
                 subj, text, norm, summary, source, page, since, now, now, self._rev(db)),
            )
            new_id = int(cursor.lastrowid or 0)
            if subj is not None:
                db.execute(
                    f"UPDATE memory_items SET valid_to = ?, superseded_by = ?, updated = ?,"
                    f" rev = ? WHERE {owner} AND kind = ? AND subject = ? AND id != ?"
                    " AND superseded_by IS NULL",
                    (since, new_id, now, self._rev(db), *owner_args, kind, subj, new_id),
                )
            self._add_fts(db, new_id, text, summary, subj)
            return self._get(db, new_id)

    def remember_page(
        self, session: SessionRecord, page_no: int, text: str, summary: str | None = None,
        *, at: datetime | None = None,
    ) -> MemoryItem:
        """Keep an archived or evicted page (and its summary) as episodic memory.

        One current item per session page: remembering the page again with other text
        supersedes the old one; with the same text it only updates the summary.
        """
        return self.remember(Scope.of(session), text, "episodic", subject=f"page {page_no}",
                             source=f"{session.name}#p{page_no}", summary=summary,
                             page=page_no, at=at)

    def remember_preference(
        self, scope: Scope, text: str, subject: str | None = None, source: str | None = None
    ) -> MemoryItem:
        """Keep a preference (usually user-scoped); a subject makes newer ones supersede."""
        return self.remember(scope, text, "preference", subject=subject, source=source)

    def forget(self, item_id: int) -> None:
        """End an item's validity now (it stays in the history)."""
        now = self._clock()
        with self.store.write() as db:
            db.execute("UPDATE memory_items SET valid_to = ?, updated = ?, rev = ? WHERE id = ?"
                       " AND valid_to IS NULL", (now, now, self._rev(db), item_id))

    @staticmethod
    def _rev(db: sqlite3.Connection) -> int:
        return int(db.execute("SELECT COALESCE(MAX(rev), 0) + 1 FROM memory_items"
                              ).fetchone()[0])

    def _add_fts(self, db: sqlite3.Connection, item_id: int, text: str, summary: str | None,
                 subject: str | None) -> None:
        body = text if not summary else f"{text}\n{summary}"
        db.execute(f"INSERT INTO {self.table} (rowid, body, subject) VALUES (?, ?, ?)",
                   (item_id, self.analyzer.document(body), self.analyzer.document(subject or "")))

    def _refresh(self, db: sqlite3.Connection, item_id: int) -> None:
        row = db.execute("SELECT text, summary, subject FROM memory_items WHERE id = ?",
                         (item_id,)).fetchone()
        db.execute(f"DELETE FROM {self.table} WHERE rowid = ?", (item_id,))
        self._add_fts(db, item_id, row[0], row[1], row[2])
        if self.vectors is not None:
            self.vectors.delete(db, "item", [item_id])

    # -- reading -------------------------------------------------------------------------

    def _get(self, db: sqlite3.Connection, item_id: int) -> MemoryItem:
        row = db.execute(f"SELECT {_COLUMNS} FROM memory_items WHERE id = ?",
                         (item_id,)).fetchone()
        return _item(row)

    def get(self, item_id: int) -> MemoryItem | None:
        """Return the item ``item_id``, or None."""
        with self.store.read() as db:
            row = db.execute(f"SELECT {_COLUMNS} FROM memory_items WHERE id = ?",
                             (item_id,)).fetchone()
        return _item(row) if row else None

    def items(
        self, scope: Scope, *, kinds: Collection[str] | None = None, current: bool = True,
        limit: int | None = None,
    ) -> list[MemoryItem]:
        """Items visible in ``scope`` (current ones by default), newest first."""
        where, args = scope.visible()
        if kinds is not None:
            where += f" AND i.kind IN ({','.join('?' * len(kinds))})"
            args.extend(kinds)
        if current:
            where += " AND i.superseded_by IS NULL AND i.valid_to IS NULL"
        sql = f"SELECT {_COLUMNS} FROM memory_items i WHERE {where} ORDER BY i.valid_from DESC,"
        sql += " i.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        with self.store.read() as db:
            return [_item(r) for r in db.execute(sql, args).fetchall()]

    def preferences(self, scope: Scope, *, limit: int | None = None) -> list[MemoryItem]:
        """Return the current preferences visible in ``scope``, newest first."""
        return self.items(scope, kinds=("preference",), limit=limit)

    def history(self, item_id: int) -> list[MemoryItem]:
        """Every version of the item's subject (or the item alone), oldest first."""
        with self.store.read() as db:
            row = db.execute("SELECT tenant, scope, user_id, session_id, kind, subject FROM"
                             " memory_items WHERE id = ?", (item_id,)).fetchone()
            if row is None:
                return []
            if row[5] is None:
                return [self._get(db, item_id)]
            rows = db.execute(
                f"SELECT {_COLUMNS} FROM memory_items WHERE tenant = ? AND scope = ? AND"
                " user_id IS ? AND session_id IS ? AND kind = ? AND subject = ?"
                " ORDER BY valid_from, id", tuple(row),
            ).fetchall()
        return [_item(r) for r in rows]

    def version(self) -> int:
        """Return a number that grows with every change to items (for caches)."""
        with self.store.read() as db:
            return int(db.execute("SELECT COALESCE(MAX(rev), 0) FROM memory_items"
                                  ).fetchone()[0])

    def embed_pending(self, *, batch: int = 128) -> int:
        """Embed items that have no vector yet (a no-op without an embedder)."""
        if self.vectors is None or self.embedder is None:
            return 0
        done = 0
        while True:
            with self.store.read() as db:
                ids = self.vectors.missing(db, "item", "memory_items", batch)
                rows = [db.execute("SELECT id, session_id, text, summary FROM memory_items"
                                   " WHERE id = ?", (i,)).fetchone() for i in ids]
            if not rows:
                return done
            texts = [(r[2] + ("\n" + r[3] if r[3] else ""))[:_EMBED_LIMIT] for r in rows]
            vectors = self.embedder.embed(texts)
            with self.store.write() as db:
                self.vectors.add(db, "item", [(int(r[0]), r[1]) for r in rows], vectors)
            done += len(rows)

    def ranked(
        self, query: str, scope: Scope, *, depth: int = 50,
        kinds: Collection[str] | None = None, exclude_kinds: Collection[str] = (),
        include_superseded: bool = False, time_range: TimeRange | None = None,
    ) -> dict[str, list[int]]:
        """Ranked item ids per retriever (``keyword``, ``dense``, ``time``)."""
        where, args = scope.visible()
        if kinds is not None:
            where += f" AND i.kind IN ({','.join('?' * len(kinds))})"
            args.extend(kinds)
        if exclude_kinds:
            where += f" AND i.kind NOT IN ({','.join('?' * len(exclude_kinds))})"
            args.extend(exclude_kinds)
        if not include_superseded:
            where += " AND i.superseded_by IS NULL AND i.valid_to IS NULL"
        lists: dict[str, list[int]] = {}
        inside: set[int] = set()
        query = without_time(query, time_range)  # the range stands for those words
        plan = self.analyzer.query(query)
        t = self.table
        with self.store.read() as db:
            if plan.match is not None:
                rows = db.execute(
                    f"SELECT i.id FROM {t} JOIN memory_items i ON i.id = {t}.rowid"
                    f" WHERE {t} MATCH ? AND {where} ORDER BY bm25({t}, 1.0, 0.5), i.id"
                    " LIMIT ?", (f"{{body subject}} : ({plan.match})", *args, depth),
                ).fetchall()
                lists["keyword"] = [int(r[0]) for r in rows]
            elif plan.short_terms:
                likes = " OR ".join(f"instr(lower({t}.body), ?) > 0" for _ in plan.short_terms)
                rows = db.execute(
                    f"SELECT i.id FROM {t} JOIN memory_items i ON i.id = {t}.rowid"
                    f" WHERE ({likes}) AND {where} ORDER BY i.valid_from DESC LIMIT ?",
                    (*[s.lower() for s in plan.short_terms], *args, depth),
                ).fetchall()
                lists["keyword"] = [int(r[0]) for r in rows]
            allowed = [int(r[0]) for r in db.execute(
                f"SELECT i.id FROM memory_items i WHERE {where}", args)]
            if time_range is not None:
                inside = {int(r[0]) for r in db.execute(
                    f"SELECT i.id FROM memory_items i WHERE {where} AND i.valid_from >= ?"
                    " AND i.valid_from < ?",
                    (*args, time_range.start.timestamp(), time_range.end.timestamp()))}
                lists["time"] = [i for i in lists.get("keyword", []) if i in inside]
        if (self.vectors is not None and self.embedder is not None and allowed
                and query.strip() and speaks(self.embedder, query)):
            self.embed_pending()
            vector = self.embedder.embed([query])[0]
            with self.store.read() as db:
                found = self.vectors.search(db, "item", vector, depth, refs=allowed)
            lists["dense"] = [ref for ref, _ in found]
            if time_range is not None:
                both = {"k": lists.get("time", []),
                        "d": [r for r in lists["dense"] if r in inside]}
                lists["time"] = [i for i, _, _ in fuse(both)]
        return lists

    def recall(
        self,
        query: str,
        *,
        scope: Scope,
        k: int = 10,
        kinds: Collection[str] | None = None,
        include_superseded: bool = False,
        now: datetime | None = None,
        time_range: TimeRange | None = None,
    ) -> list[Hit]:
        """Return the ``k`` items visible in ``scope`` that best match ``query``."""
        if k <= 0:
            return []
        if time_range is None:
            time_range = time_hint(query, now=now)
        lists = self.ranked(query, scope, depth=max(50, 3 * k), kinds=kinds,
                            include_superseded=include_superseded, time_range=time_range)
        fused = fuse(lists)[:k]
        return self.hits([(i, score, names) for i, score, names in fused])

    def hits(self, ranked: Sequence[tuple[int, float, tuple[str, ...]]]) -> list[Hit]:
        """Hits for ranked item ids."""
        out: list[Hit] = []
        with self.store.read() as db:
            names: dict[int, str] = {}
            for item_id, score, retrievers in ranked:
                item = self._get(db, item_id)
                session = None
                if item.session_id is not None:
                    if item.session_id not in names:
                        row = db.execute("SELECT name FROM sessions WHERE id = ?",
                                         (item.session_id,)).fetchone()
                        names[item.session_id] = str(row[0]) if row else str(item.session_id)
                    session = names[item.session_id]
                out.append(Hit(message=item_message(item, session), page=item.page,
                               score=score, retrievers=retrievers, session=session, item=item))
        return out


def item_message(item: MemoryItem, session: str | None = None) -> Message:
    """Return a memory item as an assistant message, with what it is in ``metadata``."""
    text = item.text if not item.summary else f"{item.summary}\n\n{item.text}"
    meta = {"memory_item": item.id, "kind": item.kind, "scope": item.scope}
    if item.subject:
        meta["subject"] = item.subject
    if item.source:
        meta["source"] = item.source
    return Message("assistant", (TextPart(text),), metadata=MappingProxyType(meta),
                   created_at=item.valid_from, session=session)
