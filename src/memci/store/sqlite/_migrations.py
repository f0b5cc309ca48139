"""Numbered schema migrations of the SQLite store, recorded in ``memci_migrations``.

Each component of memci (``core`` here; workspace, memory, jobs … in their own modules)
owns a numbered series, applied with :meth:`memci.store.SQLiteStore.migrate`. A migration
is applied once, inside one transaction with the row that records it, so a store is always
at a numbered version of every component. Never edit a released migration: add the next.
"""

from __future__ import annotations

from memci.store._sql import Migration

__all__ = ["CORE_MIGRATIONS", "Migration"]

CORE_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "sessions, messages, tool calls",
        """
        CREATE TABLE sessions (
            id          INTEGER PRIMARY KEY,
            tenant      TEXT NOT NULL,
            name        TEXT NOT NULL,
            user_id     TEXT,
            settings    TEXT NOT NULL DEFAULT '{}',
            created_at  TEXT NOT NULL,
            UNIQUE (tenant, name)
        );
        CREATE TABLE messages (
            session_id  INTEGER NOT NULL REFERENCES sessions(id),
            seq         INTEGER NOT NULL,
            role        TEXT NOT NULL,
            parts       TEXT NOT NULL,
            name        TEXT,
            metadata    TEXT,
            created_at  TEXT NOT NULL,
            tokens      INTEGER NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID;
        -- One row per tool call, so a tool result can be checked against its call at
        -- ingest. Ids are not unique in every agent (some reuse "call_0"), so the key
        -- carries the call's seq and a result answers the latest open call of that id.
        CREATE TABLE tool_calls (
            session_id  INTEGER NOT NULL,
            call_id     TEXT NOT NULL,
            call_seq    INTEGER NOT NULL,
            result_seq  INTEGER,
            PRIMARY KEY (session_id, call_id, call_seq)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        2,
        "paged context: page states and context events",
        """
        -- A page's row exists once its state is not plain 'active' (archived, recalled,
        -- evicted): page boundaries themselves are derived from the log (user messages).
        CREATE TABLE pages (
            session_id        INTEGER NOT NULL,
            page              INTEGER NOT NULL,
            first_seq         INTEGER NOT NULL,
            last_seq          INTEGER NOT NULL,
            state             TEXT NOT NULL,
            archived_round    INTEGER NOT NULL,
            recall_count      INTEGER NOT NULL DEFAULT 0,
            last_recall_round INTEGER,
            lines             TEXT NOT NULL,
            PRIMARY KEY (session_id, page)
        ) WITHOUT ROWID;
        CREATE TABLE context_events (
            id          INTEGER PRIMARY KEY,
            session_id  INTEGER NOT NULL,
            round       INTEGER NOT NULL,
            kind        TEXT NOT NULL,
            page        INTEGER NOT NULL,
            reason      TEXT NOT NULL,
            created_at  TEXT NOT NULL
        );
        CREATE INDEX context_events_session ON context_events (session_id, id);
        -- Small derived values a strategy keeps between builds (a rolling summary, a cut).
        CREATE TABLE session_state (
            session_id  INTEGER NOT NULL,
            key         TEXT NOT NULL,
            value       TEXT NOT NULL,
            PRIMARY KEY (session_id, key)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        3,
        "message views: a tool result's artifact and its tokens as shown",
        """
        -- A tool result is shown as its artifact's summary and pointer, not raw; this
        -- keeps which artifact it is and what that view costs, so planning reads no
        -- message. Derived: rebuilt from the log and the artifacts when missing.
        CREATE TABLE message_views (
            session_id  INTEGER NOT NULL,
            seq         INTEGER NOT NULL,
            artifact    TEXT NOT NULL,
            tokens      INTEGER NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        4,
        "a large tool output is stored once: its row holds the head and names the file",
        """
        -- The SHA-256 of a tool output kept whole as an artifact file; the row's parts
        -- then hold only the head of it (what search indexes). NULL: the row holds all.
        ALTER TABLE messages ADD COLUMN output_sha256 TEXT;
        """,
    ),
    Migration(
        5,
        "context state versioned for compare-and-swap; events over page ranges",
        """
        -- Grows with every committed change of the session's context state (pages, events,
        -- keyed values): a build commits only if it is still the version it planned from.
        ALTER TABLE sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
        -- The last page of an event about a range of pages (a backlog archived at once);
        -- NULL: the event is about one page.
        ALTER TABLE context_events ADD COLUMN last_page INTEGER;
        """,
    ),
    Migration(
        6,
        "deleting: a log epoch, seqs never given twice, the audit log of erasures",
        """
        -- Grows whenever messages of the session are deleted (retract, clear): a process
        -- that holds a copy of the log reads it again instead of only catching up.
        ALTER TABLE sessions ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
        -- The highest seq the session ever gave, so a deleted seq is never given again.
        ALTER TABLE sessions ADD COLUMN top_seq INTEGER NOT NULL DEFAULT 0;
        -- One row per deletion: who, what and when, as ids and counts, never content (a
        -- user is kept as the SHA-256 of their id). AUTOINCREMENT: ids are never reused,
        -- so the newest id is the store's erasure epoch.
        CREATE TABLE memci_erasures (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            at          TEXT NOT NULL,
            actor       TEXT NOT NULL,
            action      TEXT NOT NULL,
            tenant      TEXT NOT NULL,
            user_sha256 TEXT,
            sessions    TEXT NOT NULL,
            counts      TEXT NOT NULL
        );
        CREATE INDEX memci_erasures_tenant ON memci_erasures (tenant, id);
        """,
    ),
    Migration(
        7,
        "deleting: when a scrub covered each erasure",
        """
        -- When a scrub that began after the erasure committed completed (what it deleted
        -- left the files); NULL: scrub pending. Erasures made before this are pending.
        ALTER TABLE memci_erasures ADD COLUMN scrubbed_at TEXT;
        """,
    ),
    Migration(
        8,
        "planning reads: the log's planning rows and branch links without the bodies",
        """
        -- A session opens by reading every message's (seq, role, tokens) and the few
        -- messages that link a branch. Without these the reads walk the rows, bodies and
        -- all: 300 MB for 100,000 messages, each time a process opens the session.
        -- Both indexes cover their reads (the links' metadata is in the second: only the
        -- few linking rows are in it), or the planner, knowing no better, reads the rows.
        CREATE INDEX messages_plan ON messages (session_id, seq, role, tokens);
        CREATE INDEX messages_branch_links ON messages (session_id, seq, metadata)
            WHERE metadata LIKE '%memci_branch%';
        """,
    ),
)
