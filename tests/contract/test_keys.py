"""Contract: the server's API keys, kept as hashes (KeyRows)."""

from __future__ import annotations

import pytest

from memci.errors import MemciError
from memci.store import KeyRecord, KeyRows


def key(key_id: str, tenant: str, *, created_at: str = "2026-03-01T12:00:00+00:00",
        policy: str | None = None) -> KeyRecord:
    return KeyRecord(key_id=key_id, tenant=tenant, key_hash=f"hash-of-{key_id}", label=None,
                     created_at=created_at, revoked_at=None, policy=policy)


def test_a_key_is_found_by_id_and_hash(keys: KeyRows) -> None:
    made = key("key_a", "acme")
    keys.add(made)
    assert keys.get("key_a") == made and made.active
    assert keys.find("hash-of-key_a") == made
    assert keys.find("hash-of-nothing") is None and keys.get("key_b") is None


def test_a_taken_id_or_hash_is_refused(keys: KeyRows) -> None:
    keys.add(key("key_a", "acme"))
    with pytest.raises(MemciError):
        keys.add(key("key_a", "other"))
    with pytest.raises(MemciError):
        keys.add(KeyRecord("key_b", "other", "hash-of-key_a", None, "2026-03-01", None, None))
    assert keys.get("key_b") is None and [k.key_id for k in keys.keys()] == ["key_a"]


def test_keys_are_listed_oldest_first(keys: KeyRows) -> None:
    keys.add(key("key_c", "acme", created_at="2026-03-02T00:00:00+00:00"))
    keys.add(key("key_b", "acme", created_at="2026-03-01T00:00:00+00:00"))
    keys.add(key("key_a", "beta", created_at="2026-03-02T00:00:00+00:00"))
    assert [k.key_id for k in keys.keys()] == ["key_b", "key_a", "key_c"]
    assert [k.key_id for k in keys.keys("acme")] == ["key_b", "key_c"]
    assert keys.keys("nobody") == []


def test_a_revoked_key_never_matches_again(keys: KeyRows) -> None:
    keys.add(key("key_a", "acme"))
    keys.add(key("key_b", "acme", created_at="2026-03-02T00:00:00+00:00"))
    keys.revoke("key_a", "2026-04-01T00:00:00+00:00")
    keys.revoke("key_a", "2026-05-01T00:00:00+00:00")  # twice: the first time stays
    revoked = keys.get("key_a")
    assert revoked is not None and revoked.revoked_at == "2026-04-01T00:00:00+00:00"
    assert not revoked.active
    assert keys.find("hash-of-key_a") is None
    first = keys.first_active("acme")
    assert first is not None and first.key_id == "key_b"
    keys.revoke("key_b", "2026-04-01T00:00:00+00:00")
    assert keys.first_active("acme") is None


def test_policies_belong_to_a_tenants_active_keys(keys: KeyRows) -> None:
    keys.add(key("key_a", "acme", policy='{"max_message_bytes": 10}'))
    keys.add(key("key_b", "acme", created_at="2026-03-02T00:00:00+00:00",
                  policy='{"max_message_bytes": 10}'))
    keys.add(key("key_c", "beta"))
    assert sorted(set(keys.active_policies())) == [("acme", '{"max_message_bytes": 10}')]
    assert keys.set_policy("beta", '{"max_message_bytes": 5}') == 1
    assert keys.set_policy("acme", None) == 2
    assert keys.active_policies() == [("beta", '{"max_message_bytes": 5}')]
    assert keys.set_policy("nobody", "{}") == 0
    keys.revoke("key_c", "2026-04-01T00:00:00+00:00")
    assert keys.active_policies() == []
    first = keys.first_active("acme")
    assert first is not None and first.policy is None
