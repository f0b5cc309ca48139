"""Copy a whole store into an empty one, across backends (``memci migrate``), and verify it.

Both backends hold the same tables, column for column, at the same schema version (the
PostgreSQL migrations mirror SQLite's step for step), so the copy is table by table, in
an order where every row's references are copied before it. Invariants:

- the target must be empty (no session, job or key): nothing is merged or overwritten;
- the copy is one transaction on the target: all of it, or nothing (a large tool output
  kept in a folder is written before, and is harmless if the copy fails, see
  :class:`~memci.store.OutputContents`);
- the source is read in one snapshot where the backend has them (PostgreSQL); stop the
  servers writing a SQLite source first;
- ids are kept (so every reference stays right), and the target's id sequences go on
  after the largest copied id;
- derived data is not copied but made again by the target on first use: keyword tables,
  and vectors (embedded again by ``memci index``/the embedder's backlog);
- :func:`copy_store` counts every table on both sides afterwards and returns the counts;
  a difference raises :class:`~memci.errors.StoreError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from memci._dataclasses import dataclass
from memci.errors import ConfigError, StoreError
from memci.store._artifacts import OutputContents
from memci.store._protocols import Store
from memci.store._sql import Dialect, Sql

__all__ = ["TABLES", "TableCount", "copy_store"]

#: Every table a store holds that is not derived, in an order where references come first.
TABLES: tuple[str, ...] = (
    "sessions", "messages", "tool_calls", "pages", "context_events", "session_state",
    "message_views", "workspace_blobs", "workspace_artifacts", "workspace_items",
    "workspace_meta", "workspace_events", "memory_docs", "memory_items", "doc_files",
    "doc_chunks", "memci_jobs", "server_api_keys", "memci_erasures",
)
# Identity columns of the PostgreSQL tables (their sequences go on after a copy).
_IDENTITY = {"sessions": "id", "context_events": "id", "workspace_artifacts": "seq",
             "workspace_events": "id", "memory_docs": "id", "memory_items": "id",
             "doc_files": "id", "doc_chunks": "id", "memci_jobs": "id",
             "memci_erasures": "id"}
# Self-references: copied in id order, so a row's reference is always copied first.
_ORDER = {"memory_items": "id", "workspace_events": "id"}
_BATCH = 1000

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True, slots=True)
class TableCount:
    """Rows of one table in the source and, after the copy, in the target."""

    table: str
    source: int
    target: int


class _Side:
    """Raw rows of one backend's tables, through its dialect (catalogs, cursors: its own)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        # Both backends' stores carry the transactions of the shared statements.
        self.dialect: Dialect = store.sql.dialect
        self.sqlite = self.dialect.name == "sqlite"

    def prepare(self) -> None:
        """Make every component's tables (a SQLite store makes some on first use)."""
        self.store.ready("workspace", "memory", "jobs", "server")

    def reading(self) -> AbstractContextManager[Any]:
        """A connection reading one snapshot (PostgreSQL) or the file as it is (SQLite)."""
        reading: AbstractContextManager[Any] = self.store.snapshot()
        return reading

    def tables(self, db: Any) -> set[str]:
        if self.sqlite:
            rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = db.execute("SELECT tablename FROM pg_tables WHERE schemaname ="
                              " current_schema()")
        return {str(r[0]) for r in rows.fetchall()}

    def columns(self, db: Any, table: str) -> list[str]:
        if self.sqlite:
            return [str(r[1]) for r in db.execute(f"PRAGMA table_info({table})").fetchall()]
        return [str(r[0]) for r in db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema ="
            " current_schema() AND table_name = %s ORDER BY ordinal_position",
            (table,)).fetchall()]

    def count(self, db: Any, table: str) -> int:
        row = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        return int(row[0]) if row else 0

    def rows(self, db: Any, table: str, columns: list[str]) -> Iterator[list[tuple[Any, ...]]]:
        order = f" ORDER BY {_ORDER[table]}" if table in _ORDER else ""
        sql = f"SELECT {', '.join(columns)} FROM {table}{order}"
        cursor = db.cursor() if self.sqlite else db.cursor(name=f"memci_copy_{table}")
        try:
            cursor.execute(sql)
            while batch := cursor.fetchmany(_BATCH):
                yield [tuple(r) for r in batch]
        finally:
            cursor.close()

    def insert(self, db: Any, table: str, columns: list[str], rows: list[tuple[Any, ...]]) -> None:
        marks = ", ".join("?" * len(columns))
        Sql(db, self.dialect).many(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    def convert(self, source: Dialect, table: str, columns: list[str],
                rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """``source``'s rows as this side stores them (an inline tool output: bytea or not)."""
        if table != "workspace_blobs":
            return rows
        at = columns.index("content")
        return [(*row[:at], self.dialect.utf8_in(source.utf8_out(row[at])), *row[at + 1:])
                for row in rows]

    def finish(self, db: Any) -> None:
        """Let the target's ids go on after the largest copied one."""
        if self.sqlite:
            return
        for table, column in _IDENTITY.items():
            db.execute(f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'),"
                       f" COALESCE(MAX({column}), 0) + 1, false) FROM {table}")
        db.execute("SELECT setval('memory_item_revisions', COALESCE(MAX(rev), 0) + 1, false)"
                   " FROM memory_items")

    def empty(self, db: Any) -> bool:
        return all(self.count(db, t) == 0 for t in ("sessions", "memci_jobs", "server_api_keys"))


def copy_store(
    source: Store, target: Store, *, source_contents: OutputContents,
    target_contents: OutputContents, progress: Progress | None = None,
) -> list[TableCount]:
    """Copy every row of ``source`` into the empty ``target``; return the verified counts.

    ``*_contents`` are where each side keeps tool outputs too large for their rows.
    ``progress(table, rows done, rows of the table)`` is called as the copy goes.
    """
    src, dst = _Side(source), _Side(target)
    src.prepare()
    dst.prepare()
    report = progress or (lambda table, done, total: None)
    counts: dict[str, int] = {}
    with src.reading() as read:
        present = src.tables(read)
        with dst.store.read() as check:
            if not dst.empty(check):
                raise ConfigError(
                    f"the target store {target.location} already holds sessions, jobs or "
                    "keys: copy into a new, empty store (nothing was copied)")
        with target.atomic(), dst.store.write() as write:
            for table in TABLES:
                if table not in present:
                    counts[table] = 0
                    continue
                columns = [c for c in src.columns(read, table)
                           if c in set(dst.columns(write, table))]
                total = src.count(read, table)
                counts[table] = total
                done = 0
                report(table, 0, total)
                for batch in src.rows(read, table, columns):
                    dst.insert(write, table, columns,
                               dst.convert(src.dialect, table, columns, batch))
                    if table == "workspace_blobs":
                        _copy_contents(columns, batch, source_contents, target_contents)
                    done += len(batch)
                    report(table, done, total)
            dst.finish(write)
    return _verify(dst, counts, target)


def _copy_contents(columns: list[str], rows: list[tuple[Any, ...]], source: OutputContents,
                   target: OutputContents) -> None:
    at_id, at_size, at_sha, at_content = (columns.index(c) for c in
                                          ("id", "bytes", "sha256", "content"))
    for row in rows:
        if row[at_content] is not None:
            continue
        artifact_id, size = str(row[at_id]), int(row[at_size])
        with source.open(artifact_id, size) as handle:
            target.write(artifact_id, iter(lambda: handle.read(1 << 20), b""), size,
                         str(row[at_sha]))
        # Not held until the copy commits (a file each would run out of descriptors): the
        # target is a new store no other process writes or sweeps yet.
        target.release(artifact_id)


def _verify(dst: _Side, counts: dict[str, int], target: Store) -> list[TableCount]:
    with dst.store.read() as db:
        out = [TableCount(t, n, dst.count(db, t)) for t, n in counts.items()]
    wrong = [c for c in out if c.source != c.target]
    if wrong:
        raise StoreError(f"the copy into {target.location} does not hold what the source "
                         "holds: " + ", ".join(f"{c.table} {c.target} of {c.source}"
                                               for c in wrong))
    return out
