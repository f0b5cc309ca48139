"""A numbered schema migration: what each backend's series is made of.

Each backend writes its own DDL (SQLite's types, FTS5 and triggers; PostgreSQL's
identity columns, ``COLLATE "C"``, sequences) but numbers and names its steps alike, so
a schema version means the same tables on both (``memci migrate`` copies column for
column). Never edit a released migration: add the next.
"""

from __future__ import annotations

from memci._records import NamedTuple

__all__ = ["Migration"]


class Migration(NamedTuple):
    """One step of the schema: its number, a name, and the SQL that applies it."""

    version: int
    name: str
    sql: str
