"""The FTS5 tables of the search index: derived, one per analyzer, made on first use.

The FTS5 tables depend on the analyzer chosen (its ``tokenize`` option), so they are not
made by a migration: :func:`ensure_fts` makes ``<base>_<analyzer>`` when it is missing,
and the search parts fill it from the plain tables, which stay the source of truth.
Nothing in them is lost by dropping them.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memci.memory._text import Analyzer

__all__ = ["FTS_COLUMNS", "ensure_fts", "fts_name"]

# Columns of each derived FTS5 table (base name → columns, first is searched most).
FTS_COLUMNS: dict[str, tuple[str, ...]] = {
    "memory_fts": ("body", "context", "scope"),
    "memory_items_fts": ("body", "subject"),
    "doc_chunks_fts": ("body", "title"),
}


def fts_name(base: str, analyzer: Analyzer) -> str:
    """Return the table name of ``base`` for ``analyzer``."""
    return f"{base}_{analyzer.name}"


def ensure_fts(db: sqlite3.Connection, base: str, analyzer: Analyzer) -> bool:
    """Create the FTS5 table ``base`` for ``analyzer`` if missing; True when just created.

    Message tables keep no copy of the text (``content=''``): the store has it. The
    trigram analyzer keeps one, because its short terms are matched with ``instr``.
    Item and chunk tables keep theirs so rows can be deleted.
    """
    name = fts_name(base, analyzer)
    row = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                     (name,)).fetchone()
    if row is not None:
        return False
    columns = ", ".join(FTS_COLUMNS[base])
    options = [f"tokenize = '{analyzer.tokenize}'"]
    if base == "memory_fts" and analyzer.name != "trigram":
        options.append("content = ''")
    db.execute(f"CREATE VIRTUAL TABLE {name} USING fts5({columns}, {', '.join(options)})")
    return True
