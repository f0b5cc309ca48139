"""The FTS5 tables of the search index: derived, one per analyzer, made on first use.

The FTS5 tables depend on the analyzer chosen (its ``tokenize`` option), so they are not
made by a migration: :func:`ensure_fts` makes ``<base>_<analyzer>`` when it is missing,
and the search parts fill it from the plain tables, which stay the source of truth.
Nothing in them is lost by dropping them.

Every table keeps a copy of the text it indexes, so a row can be deleted exactly (FTS5
deletes a row by tokenizing the text it was given again). A message table made by an older
memci without one (``content=''``) cannot delete a row on every SQLite: :func:`ensure_fts`
drops it and makes it again, and the search part fills it from the plain tables.

Where SQLite can (3.42 and later), a table is made with FTS5's ``secure-delete`` on: a
deleted row's terms leave the index at once, instead of staying in older segments until
they are merged (see :mod:`memci.store.sqlite._erase`). Once it deleted a row so, such a
table can no longer be read by a SQLite older than 3.42 (its format version is 5).
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from memci._lazy import compile_pattern

if TYPE_CHECKING:
    from memci.text import Analyzer

__all__ = [
    "FTS_COLUMNS",
    "ensure_fts",
    "fts_name",
    "fts_secure",
    "fts_tables",
    "needs_remaking",
    "secure_delete_supported",
]

#: The first SQLite whose FTS5 has the ``secure-delete`` option.
SECURE_DELETE_SINCE = (3, 42, 0)

# Columns of each derived FTS5 table (base name → columns, first is searched most).
FTS_COLUMNS: dict[str, tuple[str, ...]] = {
    "memory_fts": ("body", "context", "scope"),
    "memory_items_fts": ("body", "subject"),
    "doc_chunks_fts": ("body", "title"),
}


# How a table made without a copy of its text was declared (``content = ''``).
_CONTENTLESS = compile_pattern(r"content\s*=\s*''")


def fts_name(base: str, analyzer: Analyzer) -> str:
    """Return the table name of ``base`` for ``analyzer``."""
    return f"{base}_{analyzer.name}"


def ensure_fts(db: sqlite3.Connection, base: str, analyzer: Analyzer) -> bool:
    """Create the FTS5 table ``base`` for ``analyzer`` if missing; True when just created.

    Every table keeps a copy of its text, so that a row can be deleted (retract, erase)
    and the trigram analyzer's short terms can be matched with ``instr``. A table without
    one, made by an older memci, is made again (True: fill it again).
    """
    name = fts_name(base, analyzer)
    row = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                     (name,)).fetchone()
    if row is not None:
        if not needs_remaking(str(row[0] or "")):
            return False
        db.execute(f"DROP TABLE {name}")
    columns = ", ".join(FTS_COLUMNS[base])
    db.execute(f"CREATE VIRTUAL TABLE {name} USING fts5({columns},"
               f" tokenize = '{analyzer.tokenize}')")
    if secure_delete_supported(db):
        db.execute(f"INSERT INTO {name} ({name}, rank) VALUES ('secure-delete', 1)")
    return True


def needs_remaking(sql: str) -> bool:
    """Whether the FTS5 table made by ``sql`` is made again (no copy of its text)."""
    return _CONTENTLESS.search(sql) is not None


def secure_delete_supported(db: sqlite3.Connection) -> bool:
    """Whether this SQLite's FTS5 can delete securely (3.42 and later)."""
    text = str(db.execute("SELECT sqlite_version()").fetchone()[0])
    return tuple(int(p) for p in text.split(".")[:3]) >= SECURE_DELETE_SINCE


def fts_secure(db: sqlite3.Connection, table: str) -> bool:
    """Whether the FTS5 table ``table`` deletes securely (its ``secure-delete`` is on)."""
    row = db.execute(f"SELECT v FROM {table}_config WHERE k = 'secure-delete'").fetchone()
    return row is not None and str(row[0]) == "1"


def fts_tables(db: sqlite3.Connection) -> dict[str, list[str]]:
    """Every FTS5 table of the store, by base name (whatever analyzer made it)."""
    names = [str(r[0]) for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL"
        " TABLE%USING fts5%'")]
    out: dict[str, list[str]] = {base: [] for base in FTS_COLUMNS}
    for name in names:
        # Longest base first: "memory_items_fts_x" is not "memory_fts" + "_items…".
        for base in sorted(FTS_COLUMNS, key=len, reverse=True):
            if name.startswith(base + "_"):
                out[base].append(name)
                break
    return out
