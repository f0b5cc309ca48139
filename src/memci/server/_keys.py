"""API keys of the server: made per tenant, stored only as a SHA-256 hash.

A key is ``mk_`` followed by 43 URL-safe characters (256 random bits). It is shown once,
when made; the store keeps its SHA-256 hex digest and a short public id (``key_…``) to
list and revoke it by. A key is checked by hashing what the client sent and looking the
hash up; a revoked key never matches again. The rows live in the session store, through
its key part (``store.keys``, a :class:`~memci.store.KeyRows`).

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
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from memci._dataclasses import dataclass, field
from memci.errors import ConfigError, InvalidInputError
from memci.server._policy import KeyPolicy, root_problem
from memci.store import KeyRecord, KeyRows, Store

__all__ = ["KEY_PREFIX", "ApiKey", "KeyPolicy", "KeyStore", "hash_key"]

KEY_PREFIX = "mk_"

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


def _api_key(row: KeyRecord) -> ApiKey:
    return ApiKey(row.key_id, row.tenant, row.label, row.created_at, row.revoked_at,
                  KeyPolicy.from_json(row.policy))


class KeyStore:
    """Make, check, list (``keys``) and revoke API keys in a :class:`~memci.store.Store`."""

    def __init__(self, store: Store, *, cache_seconds: float = 1.0) -> None:
        self.store = store
        self.cache_seconds = cache_seconds
        self._cache: dict[str, tuple[str | None, float]] = {}
        self._cache_lock = threading.Lock()
        self._policies: tuple[dict[str, KeyPolicy], float] | None = None
        self.rows: KeyRows = store.keys

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
        with self.store.atomic():
            current = self._tenant_policy(tenant)
            if policy is None:
                policy = current if current is not None else KeyPolicy()
            elif current is not None and policy != current:
                raise ConfigError(
                    f"tenant {tenant!r} has keys with another policy; a tenant's keys share "
                    f"its sessions and so one policy: change it for all of them with "
                    f"`memci keys policy {tenant} …`")
            else:
                self._check_roots(tenant, policy, guarded)
            record = ApiKey(key_id="key_" + secrets.token_hex(6), tenant=tenant, label=label,
                            created_at=_now(), revoked_at=None, policy=policy)
            self.rows.add(KeyRecord(
                key_id=record.key_id, tenant=tenant, key_hash=hash_key(key), label=label,
                created_at=record.created_at, revoked_at=None, policy=policy.to_json()))
        self._forget()
        return record, key

    def set_policy(
        self, tenant: str, policy: KeyPolicy, *, guarded: Sequence[Path] = ()
    ) -> int:
        """Give every key of ``tenant`` ``policy``; return how many keys it has."""
        with self.store.atomic():
            self._check_roots(tenant, policy, guarded)
            changed = self.rows.set_policy(tenant, policy.to_json())
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
        found = {tenant: KeyPolicy.from_json(policy)
                 for tenant, policy in self.rows.active_policies()}
        if self.cache_seconds > 0:
            with self._cache_lock:
                self._policies = (found, now + self.cache_seconds)
        return found

    def _tenant_policy(self, tenant: str) -> KeyPolicy | None:
        first = self.rows.first_active(tenant)
        return None if first is None else KeyPolicy.from_json(first.policy)

    def _check_roots(self, tenant: str, policy: KeyPolicy, guarded: Sequence[Path]) -> None:
        others = {other: KeyPolicy.from_json(text).file_roots or ()
                  for other, text in self.rows.active_policies() if other != tenant}
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
        row = self.rows.find(digest)
        # The lookup is by digest already; the constant-time compare keeps it honest.
        if row is None or not hmac.compare_digest(row.key_hash, digest):
            return None
        return row.tenant

    def keys(self, tenant: str | None = None) -> list[ApiKey]:
        """Every key (of one tenant, if given), oldest first."""
        return [_api_key(r) for r in self.rows.keys(tenant)]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key by its id (``key_…``); revoking twice is allowed."""
        with self.store.atomic():
            if self.rows.get(key_id) is None:
                raise InvalidInputError(
                    f"no API key {key_id!r}: `memci keys list` shows the ids")
            self.rows.revoke(key_id, _now())
        self._forget()
        record = self.rows.get(key_id)
        assert record is not None
        return _api_key(record)
