"""The ``workspace`` migration series of the SQLite store: artifacts' rows, working state, audit.

- ``workspace_blobs``: one row per distinct tool output, keyed by its content address;
  ``content`` holds it inline, or is NULL when it lives in a file beside the database.
- ``workspace_artifacts``: one row per tool call linked to a blob (an output seen twice is
  stored once and linked twice), with the call's metadata and summary.
- ``workspace_items``: pins, plan items, notebook entries and fastmemo entries of each
  session, as JSON, keyed by kind and a per-session id that is never reused.
- ``workspace_meta``: per-session values (limits, round, id counters).
- ``workspace_events``: the audit log; every change with its before and after values.

Never edit a released migration: add the next.
"""

from __future__ import annotations

from memci.store._sql import Migration

__all__ = ["WORKSPACE_MIGRATIONS"]

WORKSPACE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "artifacts, working state, audit log",
        """
        CREATE TABLE workspace_blobs (
            id          TEXT PRIMARY KEY,
            sha256      TEXT NOT NULL UNIQUE,
            bytes       INTEGER NOT NULL,
            chars       INTEGER NOT NULL,
            lines       INTEGER NOT NULL,
            content     TEXT,
            created_at  TEXT NOT NULL
        );
        CREATE TABLE workspace_artifacts (
            seq         INTEGER PRIMARY KEY AUTOINCREMENT,
            artifact_id TEXT NOT NULL REFERENCES workspace_blobs(id),
            session_id  INTEGER NOT NULL REFERENCES sessions(id),
            call_id     TEXT,
            tool_name   TEXT,
            arguments   TEXT,
            exit_code   INTEGER,
            is_error    INTEGER NOT NULL DEFAULT 0,
            summary     TEXT NOT NULL,
            owner       TEXT NOT NULL,
            created_at  TEXT NOT NULL
        );
        CREATE INDEX workspace_artifacts_call ON workspace_artifacts (session_id, call_id);
        CREATE INDEX workspace_artifacts_blob ON workspace_artifacts (artifact_id);
        CREATE TABLE workspace_items (
            session_id  INTEGER NOT NULL REFERENCES sessions(id),
            kind        TEXT NOT NULL,
            item_id     INTEGER NOT NULL,
            data        TEXT NOT NULL,
            PRIMARY KEY (session_id, kind, item_id)
        ) WITHOUT ROWID;
        CREATE TABLE workspace_meta (
            session_id  INTEGER NOT NULL REFERENCES sessions(id),
            name        TEXT NOT NULL,
            value       TEXT NOT NULL,
            PRIMARY KEY (session_id, name)
        ) WITHOUT ROWID;
        CREATE TABLE workspace_events (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id  INTEGER NOT NULL REFERENCES sessions(id),
            at          TEXT NOT NULL,
            actor       TEXT NOT NULL,
            action      TEXT NOT NULL,
            target      TEXT NOT NULL,
            before      TEXT NOT NULL,
            after       TEXT NOT NULL,
            reverts     INTEGER REFERENCES workspace_events(id)
        );
        CREATE INDEX workspace_events_session ON workspace_events (session_id, id);
        """,
    ),
)
