"""What the store keeps of the server's API keys: a hash per key, never the key.

A key row holds its public id (``key_…``), its tenant, the SHA-256 hex digest of the key,
a label, when it was made and revoked, and the operator's policy for its tenant as JSON
text (read and checked by :mod:`memci.server`; the store keeps it as given).

Invariants every backend keeps:

- one row per key id and one per hash (adding a taken one fails, storing nothing);
- a revoked key keeps its row and its first ``revoked_at``; it is never active again;
- every method is one transaction of its own or joins the store's open ``atomic()``
  block (so checking a tenant's policy and adding its key is one transaction).
"""

from __future__ import annotations

from typing import Protocol

from memci._records import NamedTuple

__all__ = ["KeyRecord", "KeyRows"]


class KeyRecord(NamedTuple):
    """One key's row. Times are ISO 8601 text; ``policy`` is JSON text or None."""

    key_id: str
    tenant: str
    key_hash: str
    label: str | None
    created_at: str
    revoked_at: str | None
    policy: str | None

    @property
    def active(self) -> bool:
        """True while the key is not revoked."""
        return self.revoked_at is None


class KeyRows(Protocol):
    """API keys by id, hash and tenant."""

    def add(self, record: KeyRecord) -> None:
        """Store a new key."""
        ...

    def get(self, key_id: str) -> KeyRecord | None:
        """The key with this id, or None."""
        ...

    def find(self, key_hash: str) -> KeyRecord | None:
        """The active key whose hash is ``key_hash``, or None."""
        ...

    def keys(self, tenant: str | None = None) -> list[KeyRecord]:
        """Every key (of one tenant), by time made, then id."""
        ...

    def first_active(self, tenant: str) -> KeyRecord | None:
        """The tenant's oldest active key (its policy is the tenant's), or None."""
        ...

    def active_policies(self) -> list[tuple[str, str]]:
        """``(tenant, policy)`` of every active key that carries a policy."""
        ...

    def set_policy(self, tenant: str, policy: str | None) -> int:
        """Give every key of ``tenant`` ``policy`` (JSON text, or None); how many keys it has."""
        ...

    def revoke(self, key_id: str, at: str) -> None:
        """Revoke the key at ``at`` (a no-op when it is revoked already)."""
        ...
