"""API keys in SQLite (:class:`~memci.store.KeyRows`): ``server_api_keys``.

Table of the ``server`` migration series; ``key_hash`` is UNIQUE, and active keys of a
tenant are found through its index on ``tenant``.
"""

from __future__ import annotations

from memci.store._keys import KeyRecord
from memci.store._rows import KEY_SELECT, key_from_row
from memci.store.sqlite._db import Database
from memci.store.sqlite._migrations_server import SERVER_MIGRATIONS

__all__ = ["SQLiteKeyRows"]

class SQLiteKeyRows:
    """The API keys of one SQLite store."""

    def __init__(self, store: Database) -> None:
        store.migrate("server", SERVER_MIGRATIONS)
        self._store = store

    def add(self, record: KeyRecord) -> None:
        """Store a new key."""
        with self._store.write() as db:
            db.execute(
                "INSERT INTO server_api_keys (key_id, tenant, key_hash, label, created_at,"
                " revoked_at, policy) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (record.key_id, record.tenant, record.key_hash, record.label,
                 record.created_at, record.revoked_at, record.policy),
            )

    def get(self, key_id: str) -> KeyRecord | None:
        """The key with this id, or None."""
        with self._store.read() as db:
            row = db.execute(KEY_SELECT + " WHERE key_id = ?", (key_id,)).fetchone()
        return None if row is None else key_from_row(row)

    def find(self, key_hash: str) -> KeyRecord | None:
        """The active key whose hash is ``key_hash``, or None."""
        with self._store.read() as db:
            row = db.execute(KEY_SELECT + " WHERE key_hash = ? AND revoked_at IS NULL",
                             (key_hash,)).fetchone()
        return None if row is None else key_from_row(row)

    def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        """Every key (of one tenant), by time made, then id."""
        sql, args = KEY_SELECT, tuple[str, ...]()
        if tenant is not None:
            sql, args = sql + " WHERE tenant = ?", (tenant,)
        with self._store.read() as db:
            rows = db.execute(sql + " ORDER BY created_at, key_id", args).fetchall()
        return [key_from_row(r) for r in rows]

    def first_active(self, tenant: str) -> KeyRecord | None:
        """The tenant's oldest active key, or None."""
        with self._store.read() as db:
            row = db.execute(KEY_SELECT + " WHERE tenant = ? AND revoked_at IS NULL"
                             " ORDER BY created_at LIMIT 1", (tenant,)).fetchone()
        return None if row is None else key_from_row(row)

    def active_policies(self) -> list[tuple[str, str]]:
        """``(tenant, policy)`` of every active key that carries a policy."""
        with self._store.read() as db:
            rows = db.execute("SELECT tenant, policy FROM server_api_keys"
                              " WHERE revoked_at IS NULL AND policy IS NOT NULL").fetchall()
        return [(str(r[0]), str(r[1])) for r in rows]

    def set_policy(self, tenant: str, policy: str | None) -> int:
        """Give every key of ``tenant`` ``policy``; how many keys it has."""
        with self._store.write() as db:
            return int(db.execute("UPDATE server_api_keys SET policy = ? WHERE tenant = ?",
                                  (policy, tenant)).rowcount)

    def revoke(self, key_id: str, at: str) -> None:
        """Revoke the key at ``at`` (a no-op when it is revoked already)."""
        with self._store.write() as db:
            db.execute("UPDATE server_api_keys SET revoked_at = ? WHERE key_id = ?"
                       " AND revoked_at IS NULL", (at, key_id))
