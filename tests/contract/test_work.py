"""Contract: working-state items, per-session values and the audit log (WorkStore)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memci.store import SessionRecord, WorkStore
from tests.contract.conftest import Store

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_values_come_back_as_written(work: WorkStore, session: SessionRecord) -> None:
    value = {"id": 3, "title": "部署 deploy", "tags": ["a", "b"], "ttl": None,
             "nested": {"n": 1.5, "ok": True}}
    assert work.item(session.id, "pin", 3) is None
    work.put_item(session.id, "pin", 3, value)
    assert work.item(session.id, "pin", 3) == value
    work.put_item(session.id, "pin", 3, {**value, "title": "changed"})
    assert work.item(session.id, "pin", 3)["title"] == "changed"
    work.put_item(session.id, "pin", 3, None)
    assert work.item(session.id, "pin", 3) is None


def test_items_are_listed_by_id_per_session_and_kind(
    store: Store, work: WorkStore, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", "u", {})
    for item_id in (7, 2, 11):
        work.put_item(session.id, "note", item_id, {"id": item_id})
    work.put_item(session.id, "pin", 5, {"id": 5})
    work.put_item(other.id, "note", 40, {"id": 40})
    assert [d["id"] for d in work.items(session.id, "note")] == [2, 7, 11]
    assert work.top_item_id(session.id, "note") == 11
    assert work.top_item_id(session.id, "plan") == 0
    assert work.items(other.id, "note") == [{"id": 40}]
    assert work.item(other.id, "note", 7) is None


def test_meta_values(work: WorkStore, session: SessionRecord) -> None:
    assert work.meta(session.id, "round") is None
    work.put_meta(session.id, "round", 4)
    work.put_meta(session.id, "limits", {"pins_max": 3})
    assert work.meta(session.id, "round") == 4
    assert work.meta(session.id, "limits") == {"pins_max": 3}
    work.put_meta(session.id, "round", None)
    assert work.meta(session.id, "round") is None


def test_sessions_are_known(store: Store, work: WorkStore, session: SessionRecord) -> None:
    assert work.has_session(session.id)
    assert not work.has_session(session.id + 1000)


def test_the_audit_log_keeps_every_event_in_order(
    store: Store, work: WorkStore, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", "u", {})
    assert work.latest_event(session.id) == 0
    first = work.add_event(session.id, at=AT, actor="main", action="pin_add", target="pin:1",
                           before={"pin:1": None}, after={"pin:1": {"id": 1}})
    work.add_event(other.id, at=AT, actor="main", action="plan_add", target="plan:1",
                   before={"plan:1": None}, after={"plan:1": {"id": 1}})
    undo = work.add_event(session.id, at=AT + timedelta(seconds=1), actor="user",
                          action="rollback", target="pin:1", before={"pin:1": {"id": 1}},
                          after={"pin:1": None}, reverts=first.id)
    assert undo.id > first.id
    assert work.latest_event(session.id) == undo.id
    events = work.events(session.id)
    assert [e.id for e in events] == [first.id, undo.id]  # the other session's is not here
    stored = events[0]
    assert (stored.session_id, stored.actor, stored.action, stored.target) == (
        session.id, "main", "pin_add", "pin:1")
    assert stored.at == AT and stored.reverts is None
    assert dict(stored.before) == {"pin:1": None} and dict(stored.after) == {"pin:1": {"id": 1}}
    assert events[1].reverts == first.id and events[1].actor == "user"
    assert [e.id for e in work.events(session.id, after=first.id)] == [undo.id]
    assert work.event(session.id, first.id) == stored
    assert work.event(other.id, first.id) is None


def test_a_change_and_its_event_commit_together(
    store: Store, work: WorkStore, session: SessionRecord,
) -> None:
    with pytest.raises(RuntimeError), store.atomic():
        work.put_item(session.id, "pin", 1, {"id": 1})
        work.put_meta(session.id, "next_pin", 2)
        work.add_event(session.id, at=AT, actor="main", action="pin_add", target="pin:1",
                       before={"pin:1": None}, after={"pin:1": {"id": 1}})
        raise RuntimeError("refused after the writes")
    assert work.item(session.id, "pin", 1) is None
    assert work.meta(session.id, "next_pin") is None
    assert work.events(session.id) == [] and work.latest_event(session.id) == 0
    with store.atomic():
        work.put_item(session.id, "pin", 1, {"id": 1})
        work.add_event(session.id, at=AT, actor="main", action="pin_add", target="pin:1",
                       before={"pin:1": None}, after={"pin:1": {"id": 1}})
    assert work.item(session.id, "pin", 1) == {"id": 1} and len(work.events(session.id)) == 1


def test_another_handle_sees_what_was_committed(
    work: WorkStore, session: SessionRecord, reopen: object,
) -> None:
    work.put_item(session.id, "plan", 1, {"id": 1, "text": "ship it"})
    other = reopen()  # type: ignore[operator]
    assert other.work.item(session.id, "plan", 1) == {"id": 1, "text": "ship it"}


def test_a_batch_goes_as_one_statement_and_upserts_as_one_after_another(store: Any) -> None:
    """``Sql.many``: a multi-row INSERT where it can be; a batch naming a key twice still
    ends as the rows one after another would (the last value wins)."""
    with store.sql.write() as sql:
        sql.run("CREATE TABLE memci_test_batch (k INTEGER PRIMARY KEY, v TEXT)")
        sql.many("INSERT INTO memci_test_batch (k, v) VALUES (?, ?)",
                 [(k, f"v{k}") for k in range(2500)])
        upsert = ("INSERT INTO memci_test_batch (k, v) VALUES (?, ?)"
                  " ON CONFLICT (k) DO UPDATE SET v = excluded.v")
        sql.many(upsert, [(1, "a"), (2, "b")])
        sql.many(upsert, [(3, "first"), (3, "last"), (2500, "new")])
    with store.sql.read() as sql:
        rows = dict(sql.all("SELECT k, v FROM memci_test_batch"))
    assert len(rows) == 2501
    assert (rows[0], rows[1], rows[2], rows[3], rows[2499], rows[2500]) == (
        "v0", "a", "b", "last", "v2499", "new")
