"""API keys of the server: made per tenant, stored only as a SHA-256 hash.

A key is ``mk_`` followed by 43 URL-safe characters (256 random bits). It is shown once,
when made; the store keeps its SHA-256 hex digest and a short public id (``key_…``) to
list and revoke it by. A key is checked by hashing what the client sent and looking the
hash up; a revoked key never matches again. The table lives in the session store, in
memci's ``server`` migration series.

A key may carry the operator's policy for its tenant (:class:`KeyPolicy`: file roots, the
largest message). A tenant's keys share its sessions, so they share one policy: a new key
of a tenant takes the policy of its other keys, and :meth:`KeyStore.set_policy` changes it
for all of them at once.

Answers of :meth:`KeyStore.tenant_of` (and of :meth:`KeyStore.policies`) are kept for
``cache_seconds`` (1 s by default), so a busy server does not queue on the store's lock to
check every request's key (or policy): a key revoked (or a policy changed) by this
KeyStore takes effect at once, one revoked by another process (``memci keys revoke``
while the server runs) within that time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memci.errors import ConfigError, InvalidInputError
from memci.server._policy import KeyPolicy, root_problem
from memci.store import Migration, SQLiteStore

__all__ = ["KEY_PREFIX", "SERVER_MIGRATIONS", "ApiKey", "KeyPolicy", "KeyStore", "hash_key"]

KEY_PREFIX = "mk_"

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


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A key's public record (never the key itself)."""

    key_id: str
    tenant: str
    label: str | None
    created_at: str
    revoked_at: str | None
    policy: KeyPolicy = field(default_factory=KeyPolicy)

    @property
    def active(self) -> bool:
        """True while the key is not revoked."""
        return self.revoked_at is None


def hash_key(key: str) -> str:
    """The SHA-256 hex digest the store keeps for ``key``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class KeyStore:
    """Make, check, list (``keys``) and revoke API keys in a :class:`~memci.store.SQLiteStore`."""

    def __init__(self, store: SQLiteStore, *, cache_seconds: float = 1.0) -> None:
        self.store = store
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[str | None, float]] = {}
        self._cache_lock = threading.Lock()
        self._policies: tuple[dict[str, KeyPolicy], float] | None = None
        store.migrate("server", SERVER_MIGRATIONS)

    def create(
        self, tenant: str, *, label: str | None = None, policy: KeyPolicy | None = None,
        guarded: Sequence[Path] = (),
    ) -> tuple[ApiKey, str]:
        """Make a key for ``tenant``; return its record and the key (shown only now).

        Without ``policy`` the key takes the policy of the tenant's other keys; with one,
        it must equal theirs (change theirs with :meth:`set_policy`). ``guarded`` are
        memci's own files, which no file root may reach.
        """
        if not isinstance(tenant, str) or not tenant.strip() or len(tenant) > 200:
            raise InvalidInputError("a tenant must be a non-empty string (≤ 200 chars)")
        if label is not None and (not isinstance(label, str) or len(label) > 200):
            raise InvalidInputError("a label must be a string (≤ 200 chars)")
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        with self.store.write() as db:
            current = self._tenant_policy(db, tenant)
            if policy is None:
                policy = current if current is not None else KeyPolicy()
            elif current is not None and policy != current:
                raise ConfigError(
                    f"tenant {tenant!r} has keys with another policy; a tenant's keys share "
                    f"its sessions and so one policy: change it for all of them with "
                    f"`memci keys policy {tenant} …`")
            else:
                self._check_roots(db, tenant, policy, guarded)
            record = ApiKey(key_id="key_" + secrets.token_hex(6), tenant=tenant, label=label,
                            created_at=_now(), revoked_at=None, policy=policy)
            db.execute(
                "INSERT INTO server_api_keys (key_id, tenant, key_hash, label, created_at,"
                " policy) VALUES (?, ?, ?, ?, ?, ?)",
                (record.key_id, tenant, hash_key(key), label, record.created_at,
                 policy.to_json()),
            )
        self._forget()
        return record, key

    def set_policy(
        self, tenant: str, policy: KeyPolicy, *, guarded: Sequence[Path] = ()
    ) -> int:
        """Give every key of ``tenant`` ``policy``; return how many keys it has."""
        with self.store.write() as db:
            self._check_roots(db, tenant, policy, guarded)
            changed = db.execute("UPDATE server_api_keys SET policy = ? WHERE tenant = ?",
                                 (policy.to_json(), tenant)).rowcount
            if not changed:
                raise InvalidInputError(
                    f"tenant {tenant!r} has no API keys: make one with `memci keys create`")
        self._forget()
        return int(changed)

    def policy(self, tenant: str) -> KeyPolicy:
        """The policy of ``tenant``'s active keys (empty when none is set)."""
        return self.policies().get(tenant, KeyPolicy())

    def policies(self) -> dict[str, KeyPolicy]:
        """The policy of every tenant with an active key that carries one."""
        now = time.monotonic()
        with self._cache_lock:
            cached = self._policies
        if cached is not None and cached[1] > now:
            return cached[0]
        with self.store.read() as db:
            rows = db.execute("SELECT tenant, policy FROM server_api_keys"
                              " WHERE revoked_at IS NULL AND policy IS NOT NULL").fetchall()
        found = {str(r[0]): KeyPolicy.from_json(r[1]) for r in rows}
        if self.cache_seconds > 0:
            with self._cache_lock:
                self._policies = (found, now + self.cache_seconds)
        return found

    def _tenant_policy(self, db: sqlite3.Connection, tenant: str) -> KeyPolicy | None:
        row = db.execute("SELECT policy FROM server_api_keys WHERE tenant = ? AND"
                         " revoked_at IS NULL ORDER BY created_at LIMIT 1",
                         (tenant,)).fetchone()
        return None if row is None else KeyPolicy.from_json(row[0])

    def _check_roots(
        self, db: sqlite3.Connection, tenant: str, policy: KeyPolicy, guarded: Sequence[Path]
    ) -> None:
        rows = db.execute("SELECT tenant, policy FROM server_api_keys WHERE tenant != ?"
                          " AND revoked_at IS NULL AND policy IS NOT NULL",
                          (tenant,)).fetchall()
        others = {str(r[0]): KeyPolicy.from_json(r[1]).file_roots or () for r in rows}
        for root in policy.file_roots or ():
            problem = root_problem(root, guarded, others)
            if problem:
                raise ConfigError(problem)

    def _forget(self) -> None:
        with self._cache_lock:
            self._cache.clear()
            self._policies = None

    def tenant_of(self, key: str) -> str | None:
        """The tenant of an active key, or None for an unknown or revoked one."""
        if not key.startswith(KEY_PREFIX) or len(key) > 200:
            return None
        found, tenant = self.cached(key)
        if found:
            return tenant
        digest = hash_key(key)
        now = time.monotonic()
        tenant = self._lookup(digest)
        if self.cache_seconds > 0:
            with self._cache_lock:
                if len(self._cache) > 10_000:
                    self._cache.clear()  # bounded, also against floods of made-up keys
                self._cache[digest] = (tenant, now + self.cache_seconds)
        return tenant

    def cached(self, key: str) -> tuple[bool, str | None]:
        """``(True, tenant)`` when the answer for ``key`` is cached and fresh (no store read)."""
        with self._cache_lock:
            entry = self._cache.get(hash_key(key))
        if entry is not None and entry[1] > time.monotonic():
            return True, entry[0]
        return False, None

    def _lookup(self, digest: str) -> str | None:
        with self.store.read() as db:
            row = db.execute(
                "SELECT tenant, key_hash FROM server_api_keys"
                " WHERE key_hash = ? AND revoked_at IS NULL", (digest,),
            ).fetchone()
        # The lookup is by digest already; the constant-time compare keeps it honest.
        if row is None or not hmac.compare_digest(str(row[1]), digest):
            return None
        return str(row[0])

    def keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every key (of one tenant, if given), oldest first."""
        sql = ("SELECT key_id, tenant, label, created_at, revoked_at, policy"
               " FROM server_api_keys")
        args: tuple[str, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = ?"
            args = (tenant,)
        with self.store.read() as db:
            rows = db.execute(sql + " ORDER BY created_at, key_id", args).fetchall()
        return [ApiKey(str(r[0]), str(r[1]), r[2], str(r[3]), r[4], KeyPolicy.from_json(r[5]))
                for r in rows]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by its id (``key_…``); revoking twice is allowed."""
        with self.store.write() as db:
            row = db.execute("SELECT revoked_at FROM server_api_keys WHERE key_id = ?",
                             (key_id,)).fetchone()
            if row is None:
                raise InvalidInputError(
                    f"no API key {key_id!r}: `memci keys list` shows the ids")
            if row[0] is None:
                db.execute("UPDATE server_api_keys SET revoked_at = ? WHERE key_id = ?",
                           (_now(), key_id))
        self._forget()
        (record,) = [k for k in self.keys() if k.key_id == key_id]
        return record
