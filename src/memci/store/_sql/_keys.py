"""API keys (:class:`~memci.store.KeyRows`): ``server_api_keys``, both backends.

Table of the ``server`` migration series; ``key_hash`` is UNIQUE, and active keys of a
tenant are found through its index on ``tenant``. Keys made at the same instant are
ordered by id, so "the tenant's oldest active key" is one key on every backend.
"""

from __future__ import annotations

from typing import Any

from memci.store._keys import KeyRecord
from memci.store._rows import KEY_SELECT, key_from_row
from memci.store._sql._conn import Transactions

__all__ = ["SqlKeyRows"]


class SqlKeyRows:
    """The API keys of one store."""

    def __init__(self, db: Transactions) -> None:
        db.ready("server")
        self._db = db

    def add(self, record: KeyRecord) -> None:
        """Store a new key."""
        with self._db.write() as sql:
            sql.run("INSERT INTO server_api_keys (key_id, tenant, key_hash, label, created_at,"
                    " revoked_at, policy) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (record.key_id, record.tenant, record.key_hash, record.label,
                     record.created_at, record.revoked_at, record.policy))

    def get(self, key_id: str) -> KeyRecord | None:
        """The key with this id, or None."""
        with self._db.read() as sql:
            row = sql.one(KEY_SELECT + " WHERE key_id = ?", (key_id,))
        return None if row is None else key_from_row(row)

    def find(self, key_hash: str) -> KeyRecord | None:
        """The active key whose hash is ``key_hash``, or None."""
        with self._db.read() as sql:
            row = sql.one(KEY_SELECT + " WHERE key_hash = ? AND revoked_at IS NULL",
                          (key_hash,))
        return None if row is None else key_from_row(row)

    def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        """Every key (of one tenant), by time made, then id."""
        text, args = KEY_SELECT, list[Any]()
        if tenant is not None:
            text, args = text + " WHERE tenant = ?", [tenant]
        with self._db.read() as sql:
            rows = sql.all(text + " ORDER BY created_at, key_id", args)
        return [key_from_row(r) for r in rows]

    def first_active(self, tenant: str) -> KeyRecord | None:
        """The tenant's oldest active key, or None."""
        with self._db.read() as sql:
            row = sql.one(KEY_SELECT + " WHERE tenant = ? AND revoked_at IS NULL"
                          " ORDER BY created_at, key_id LIMIT 1", (tenant,))
        return None if row is None else key_from_row(row)

    def active_policies(self) -> list[tuple[str, str]]:
        """``(tenant, policy)`` of every active key that carries a policy."""
        with self._db.read() as sql:
            rows = sql.all("SELECT tenant, policy FROM server_api_keys"
                           " WHERE revoked_at IS NULL AND policy IS NOT NULL")
        return [(str(r[0]), str(r[1])) for r in rows]

    def set_policy(self, tenant: str, policy: str | None) -> int:
        """Give every key of ``tenant`` ``policy``; how many keys it has."""
        with self._db.write() as sql:
            return sql.run("UPDATE server_api_keys SET policy = ? WHERE tenant = ?",
                           (policy, tenant))

    def revoke(self, key_id: str, at: str) -> None:
        """Revoke the key at ``at`` (a no-op when it is revoked already)."""
        with self._db.write() as sql:
            sql.run("UPDATE server_api_keys SET revoked_at = ? WHERE key_id = ?"
                    " AND revoked_at IS NULL", (at, key_id))
