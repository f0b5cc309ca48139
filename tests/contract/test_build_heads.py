"""Contract: the reads a build starts with, and the events a working-state block writes.

Each is one statement of its part and must equal what the separate reads (or writes)
give: the session's heads (``ContextStore.heads``), memory's version with a user's
sessions (``MessageSearch.version_and_sessions``), a session's entries from a seq on
(``MessageSearch.docs_from``), and several audit events at once (``WorkStore.add_events``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memci.messages import Message
from memci.store import (
    Eraser,
    MessageSearch,
    SearchDoc,
    SessionHeads,
    SessionRecord,
    WorkEvent,
    WorkStore,
)
from tests.contract.conftest import Store

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _heads_apart(store: Store, session: SessionRecord) -> SessionHeads:
    epoch, last = store.log_head(session)
    return SessionHeads(store.context.head(session)[0], epoch, last,
                        store.work.latest_event(session.id))


def test_the_heads_are_the_version_the_log_head_and_the_newest_event(
    store: Store, session: SessionRecord,
) -> None:
    eraser: Eraser = store.eraser
    assert store.context.heads(session) == _heads_apart(store, session) == (0, 0, 0, 0)
    store.append(session, [Message.user(f"turn {i}") for i in range(4)])
    event = store.work.add_event(session.id, at=AT, actor="main", action="pin_add",
                                 target="pin:1", before={"pin:1": None},
                                 after={"pin:1": {"id": 1}})
    heads = store.context.heads(session)
    assert heads == _heads_apart(store, session)
    assert heads.last_seq == 4 and heads.work_event == event.id
    eraser.retract(session, [2])
    moved = store.context.heads(session)
    assert moved == _heads_apart(store, session) and moved.epoch > heads.epoch
    eraser.delete_session(session)
    assert store.context.heads(session) is None


def test_the_version_and_sessions_are_the_two_reads_in_one(
    store: Store, search: MessageSearch,
) -> None:
    a = store.ensure_session("t", "a", "u1", {})
    b = store.ensure_session("t", "b", "u2", {})
    c = store.ensure_session("t", "c", "u1", {})
    for record in (a, b, c):
        store.append(record, [Message.user("hello"), Message.assistant("hi")])
    search.add(SearchDoc(a.id, 1, "user", 1, 0.0, "hello", ""))
    search.add(SearchDoc(c.id, 1, "user", 1, 0.0, "hello", ""))
    for tenant, user in (("t", "u1"), ("t", None), ("t", "nobody"), ("none", None)):
        version, sessions, behind = search.version_and_sessions(tenant, user)
        # the writes in flight (PostgreSQL: any of the cluster's, autovacuum's too) may
        # differ between two reads
        assert version[:3] == search.memory_version()[:3]
        assert (sessions, behind) == search.sessions_behind(tenant, user)


def test_the_entries_from_a_seq_on_give_the_first_entry_of_every_later_seq(
    store: Store, search: MessageSearch, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", "u", {})
    for seq in range(1, 9):
        for record in (session, other):
            store.append(record, [Message.user(f"turn {seq}")])
            if seq != 5:  # a seq without an entry (a system message, say)
                search.add(SearchDoc(record.id, seq, "user", seq, 0.0, f"turn {seq}", ""))
    found = search.docs_from(session.id, 3, 10)
    assert [seq for seq, _ in found] == [3, 4, 6, 7, 8]
    for seq in range(3, 11):
        first = next((doc for at, doc in found if at >= seq), None)
        assert first == search.first_doc(session.id, seq)
    assert search.docs_from(session.id, 9, 10) == []
    assert search.docs_from(session.id, 3, 2) == found[:2]


def test_events_written_at_once_get_their_ids_in_order(
    work: WorkStore, session: SessionRecord,
) -> None:
    before = work.add_event(session.id, at=AT, actor="main", action="plan_add",
                            target="plan:1", before={"plan:1": None}, after={"plan:1": {}})
    drafts = [WorkEvent(id=0, session_id=session.id, at=AT + timedelta(seconds=i),
                        actor="memci", action=f"memo_{i}", target=f"memo:{i}",
                        before={f"memo:{i}": None}, after={f"memo:{i}": {"n": i}},
                        reverts=before.id if i == 2 else None) for i in range(70)]
    written = work.add_events(drafts)
    assert [e.action for e in written] == [d.action for d in drafts]
    ids = [e.id for e in written]
    assert ids == sorted(set(ids)) and ids[0] > before.id
    assert work.events(session.id, after=before.id) == written
    assert work.latest_event(session.id) == ids[-1]
    assert work.add_events([]) == []
