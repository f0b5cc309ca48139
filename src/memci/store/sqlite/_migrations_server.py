"""The ``server`` migration series of the SQLite store: the server's API keys.

``server_api_keys`` keeps a key's public id, tenant, SHA-256 (never the key), label, times
and the operator's policy for its tenant (JSON). Never edit a released migration: add
the next.
"""

from __future__ import annotations

from memci.store._sql import Migration

__all__ = ["SERVER_MIGRATIONS"]

SERVER_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "api keys",
        """
        CREATE TABLE server_api_keys (
            key_id      TEXT PRIMARY KEY,
            tenant      TEXT NOT NULL,
            key_hash    TEXT NOT NULL UNIQUE,
            label       TEXT,
            created_at  TEXT NOT NULL,
            revoked_at  TEXT
        );
        CREATE INDEX server_api_keys_tenant ON server_api_keys (tenant);
        """,
    ),
    Migration(
        2,
        "key policies",
        "ALTER TABLE server_api_keys ADD COLUMN policy TEXT;",
    ),
)
