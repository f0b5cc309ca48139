"""The ``memory`` migration series of the SQLite store: the search index's plain tables.

The FTS5 tables depend on the analyzer (its ``tokenize`` option), so they are *derived*
tables made on first use by :mod:`memci.store.sqlite._fts`, not by a migration; the
sqlite-vec tables need the extension and are made with their vector space (see
:mod:`memci.store.sqlite._vectors`). Tables:

- ``memory_docs``: one row per indexed message — session, seq, role, page number (user
  messages with seq ≤ this one) and ``created`` as Unix seconds (UTC), for time filters;
- ``memory_items``: long-term items (episodic pages, preferences, explicit facts) with
  their scope, validity interval and supersession link; ``rev`` grows with every change;
- ``memory_vector_spaces``: one vector space per embedder (name, dimension), and
  ``memory_vector_refs``: which messages (``kind='message'``), items and document chunks
  have a vector in it. Migration 2 dropped ``memory_vectors`` (float32 BLOBs); vectors are
  derived data and are embedded again;
- ``doc_files`` and ``doc_chunks``: indexed files (path, mtime, size, sha256) and chunks
  with titles, symbols and line ranges.
- ``memory_docs_changes`` (migration 3): how many ``memory_docs`` rows were ever deleted
  or updated, counted by triggers, so that what a search keeps between searches is
  dropped on any such change, memci's or not.

Never edit a released migration: add the next.
"""

from __future__ import annotations

from memci.store._sql import Migration

__all__ = ["MEMORY_MIGRATIONS"]

MEMORY_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "message index, memory items, vectors, documents",
        """
        CREATE TABLE memory_docs (
            id          INTEGER PRIMARY KEY,
            session_id  INTEGER NOT NULL,
            seq         INTEGER NOT NULL,
            role        TEXT NOT NULL,
            page        INTEGER NOT NULL,
            created     REAL NOT NULL,
            UNIQUE (session_id, seq)
        );
        CREATE INDEX memory_docs_created ON memory_docs (session_id, created);
        CREATE TABLE memory_items (
            id            INTEGER PRIMARY KEY,
            tenant        TEXT NOT NULL,
            user_id       TEXT,
            session_id    INTEGER,
            scope         TEXT NOT NULL CHECK (scope IN ('tenant', 'user', 'session')),
            kind          TEXT NOT NULL,
            subject       TEXT,
            text          TEXT NOT NULL,
            norm          TEXT NOT NULL,
            summary       TEXT,
            source        TEXT,
            page          INTEGER,
            seen          INTEGER NOT NULL DEFAULT 1,
            valid_from    REAL NOT NULL,
            valid_to      REAL,
            superseded_by INTEGER REFERENCES memory_items (id),
            created       REAL NOT NULL,
            updated       REAL NOT NULL,
            rev           INTEGER NOT NULL
        );
        CREATE INDEX memory_items_owner ON memory_items (tenant, user_id, session_id);
        CREATE INDEX memory_items_norm ON memory_items (tenant, kind, norm);
        CREATE INDEX memory_items_subject ON memory_items (tenant, kind, subject);
        CREATE INDEX memory_items_rev ON memory_items (rev);
        CREATE TABLE memory_vector_spaces (
            id          INTEGER PRIMARY KEY,
            embedder    TEXT NOT NULL UNIQUE,
            dim         INTEGER NOT NULL,
            created     REAL NOT NULL
        );
        CREATE TABLE memory_vectors (
            space_id    INTEGER NOT NULL REFERENCES memory_vector_spaces (id),
            kind        TEXT NOT NULL,
            ref         INTEGER NOT NULL,
            session_id  INTEGER,
            vec         BLOB NOT NULL,
            PRIMARY KEY (space_id, kind, ref)
        ) WITHOUT ROWID;
        -- Counting and finding the newest vector must not read the vectors themselves.
        CREATE INDEX memory_vectors_refs ON memory_vectors (space_id, kind, session_id);
        CREATE TABLE doc_files (
            id          INTEGER PRIMARY KEY,
            path        TEXT NOT NULL UNIQUE,
            kind        TEXT NOT NULL,
            mtime_ns    INTEGER NOT NULL,
            size        INTEGER NOT NULL,
            sha256      TEXT NOT NULL,
            indexed     REAL NOT NULL
        );
        CREATE TABLE doc_chunks (
            id          INTEGER PRIMARY KEY,
            file_id     INTEGER NOT NULL REFERENCES doc_files (id),
            ordinal     INTEGER NOT NULL,
            kind        TEXT NOT NULL,
            title       TEXT NOT NULL,
            symbol      TEXT,
            start_line  INTEGER NOT NULL,
            end_line    INTEGER NOT NULL,
            text        TEXT NOT NULL
        );
        CREATE INDEX doc_chunks_file ON doc_chunks (file_id, ordinal);
        """,
    ),
    Migration(
        2,
        "vectors move to sqlite-vec tables",
        """
        -- Vectors are derived data: the BLOB table goes, and with it every space (a space
        -- and its sqlite-vec tables are created together, on the next embedding).
        DROP TABLE memory_vectors;
        DELETE FROM memory_vector_spaces;
        -- Which refs have a vector, kept beside the vec0 tables so that counting, finding
        -- the newest and finding the missing ones are index lookups, not scans of vec0.
        CREATE TABLE memory_vector_refs (
            space_id    INTEGER NOT NULL REFERENCES memory_vector_spaces (id),
            kind        TEXT NOT NULL,
            ref         INTEGER NOT NULL,
            PRIMARY KEY (space_id, kind, ref)
        ) WITHOUT ROWID;
        """,
    ),
    Migration(
        3,
        "message index changes counted",
        """
        -- How many entries were ever deleted or changed (a page renumbered): a search
        -- keeps what it read between searches, and any of these (an id may then be given
        -- again) drops it. Adding an entry changes nothing that was read.
        CREATE TABLE memory_docs_changes (n INTEGER NOT NULL);
        INSERT INTO memory_docs_changes (n) VALUES (0);
        CREATE TRIGGER memory_docs_deleted AFTER DELETE ON memory_docs
        BEGIN
            UPDATE memory_docs_changes SET n = n + 1;
        END;
        CREATE TRIGGER memory_docs_updated AFTER UPDATE ON memory_docs
        BEGIN
            UPDATE memory_docs_changes SET n = n + 1;
        END;
        """,
    ),
)
