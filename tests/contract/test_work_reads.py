"""Contract: a session's whole working state, items and values, in one read (WorkStore)."""

from __future__ import annotations

from memci.store import SessionRecord, WorkStore
from tests.contract.conftest import Store


def test_every_value_is_every_item_and_every_value_by_name(
    store: Store, work: WorkStore, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", "u", {})
    assert work.every_value(session.id) == ({}, {})
    work.put_items(session.id, {("memo", 2): {"id": 2, "text": "b"},
                                ("memo", 1): {"id": 1, "text": "a"},
                                ("pin", 7): {"id": 7, "title": "部署"}})
    work.put_meta(session.id, "next_memo", 3)
    work.put_meta(session.id, "limits", {"pins_max": 4})
    work.put_item(other.id, "memo", 1, {"id": 1, "text": "elsewhere"})
    work.put_meta(other.id, "next_memo", 9)
    items, meta = work.every_value(session.id)
    assert items == work.every_item(session.id)
    assert [list(ids) for ids in items.values()] == [[1, 2], [7]]  # in id order
    assert meta == {"limits": {"pins_max": 4}, "next_memo": 3}
    assert meta == {name: work.meta(session.id, name) for name in ("limits", "next_memo")}
