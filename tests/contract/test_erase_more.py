"""Contract: the rest of the Eraser (entries, items, working state, values, scrub marks).

Each of these runs the same shared statements on both backends (``store/_sql/_erase.py``
with each backend's keyword rows and vectors): what they delete, and what they leave.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memci.messages import Message
from memci.store import (
    ContextChanges,
    Eraser,
    ItemFilter,
    NewItem,
    Scope,
    SearchDoc,
    SearchFilter,
    SessionRecord,
)
from memci.text import Analyzer
from tests.contract.conftest import Store

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def eraser(store: Store) -> Eraser:
    part: Eraser = store.eraser
    return part


def _indexed(store: Store, session: SessionRecord, analyzer: Analyzer, n: int) -> list[int]:
    search = store.search(analyzer)
    stored = store.append(session, [Message.user(f"walrus {i}") for i in range(n)])
    for m in stored:
        search.add(SearchDoc(session.id, m.seq or 0, m.role, 1, 0.0, m.content, ""))
    return [m.seq or 0 for m in stored]


def test_unindex_some_takes_the_oldest_entries_and_leaves_the_messages(
    store: Store, eraser: Eraser, session: SessionRecord, analyzer: Analyzer,
) -> None:
    search = store.search(analyzer)
    seqs = _indexed(store, session, analyzer, 5)
    first = search.first_doc(session.id, 1)
    assert first is not None and search.first_doc(session.id, 6) is None
    removed = eraser.unindex_some(session, 2)
    assert removed.count("index") == 2 and search.count() == 3
    assert search.first_doc(session.id, 1) == search.first_doc(session.id, 3)
    assert [m.seq for m in store.messages(session)] == seqs
    eraser.unindex_some(session, 10)
    assert dict(eraser.unindex_some(session, 10).counts) == {}  # none left: nothing counted


def test_unindex_takes_the_entries_of_messages_that_stay(
    store: Store, eraser: Eraser, session: SessionRecord, analyzer: Analyzer,
) -> None:
    search = store.search(analyzer)
    _indexed(store, session, analyzer, 3)
    assert eraser.unindex(session, [2, 3, 99]) == 2
    found = search.keyword(analyzer.query("walrus"), k=10, where=SearchFilter(),
                           context_weight=0.5)
    assert [c.seq for c in found] == [1]
    assert len(store.messages(session)) == 3


def test_user_sessions_are_the_user_s_own_and_not_deleted(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    second = store.ensure_session("t", "second", "u", {})
    store.ensure_session("t", "other user", "v", {})
    store.ensure_session("elsewhere", "same user", "u", {})
    assert [s.id for s in eraser.user_sessions("t", "u")] == [session.id, second.id]
    eraser.delete_session(second)
    assert [s.id for s in eraser.user_sessions("t", "u")] == [session.id]


def test_erase_items_takes_their_keyword_text_and_history_links(
    store: Store, eraser: Eraser, session: SessionRecord, analyzer: Analyzer,
) -> None:
    items = store.items(analyzer)
    scope = Scope.user_scope("u", "t")
    old = items.add(NewItem(scope, "fact", "home", "lives in oslo", "lives in oslo", None,
                            None, None, 0.0, 0.0))
    new = items.add(NewItem(scope, "fact", "home", "lives in bergen", "lives in bergen", None,
                            None, None, 1.0, 1.0))
    items.supersede(scope, "fact", "home", by=new, since=1.0, now=1.0)
    assert eraser.erase_items([new, 12345]) == 1
    (kept,) = items.get_many([old])
    assert kept.superseded_by is None  # no link to an item that is gone
    every = ItemFilter(scope, current=False)
    assert items.keyword(analyzer.query("bergen"), every, 10) == []
    assert items.keyword(analyzer.query("oslo"), every, 10) == [old]
    assert eraser.erase_items([]) == 0


def test_forget_work_takes_items_and_every_event_that_touched_them(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    work = store.work
    work.put_item(session.id, "note", 7, {"text": "secret"})
    work.put_item(session.id, "note", 8, {"text": "kept"})
    touched = work.add_event(session.id, at=AT, actor="model", action="note_add",
                             target="note:7", before={}, after={"note:7": {"text": "secret"}})
    undo = work.add_event(session.id, at=AT, actor="model", action="rollback",
                          target="note:7", before={"note:7": {"text": "secret"}}, after={},
                          reverts=touched.id)
    other = work.add_event(session.id, at=AT, actor="model", action="note_add",
                           target="note:8", before={}, after={"note:8": {"text": "kept"}})
    latest = work.latest_event(session.id)
    assert eraser.forget_work(session.id, ["note:7"]) == 3  # the item and two events
    assert work.item(session.id, "note", 7) is None
    assert work.item(session.id, "note", 8) == {"text": "kept"}
    left = work.events(session.id)
    assert [e.id for e in left[:-1]] == [other.id]  # not note:7's event, nor its undoing
    assert left[-1].action == "forget" and left[-1].after == {}  # ids, no content
    assert touched.id < undo.id < left[-1].id
    assert work.latest_event(session.id) > latest
    assert eraser.forget_work(session.id, ["note:99"]) == 0
    assert eraser.forget_work(session.id, []) == 0


def test_forget_values_takes_keyed_values_and_grows_each_version(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", "u", {})
    for s in (session, other):
        store.context.commit(s, store.context.head(s)[0], ContextChanges(
            values={"retrieval": {"texts": ["x"]}, "cut": 3}))
    versions = [store.context.head(s)[0] for s in (session, other)]
    assert eraser.forget_values([session.id, other.id], ["retrieval"]) == 2
    for s, version in zip((session, other), versions, strict=True):
        assert store.context.load(s).values == {"cut": 3}
        assert store.context.head(s)[0] > version
    assert eraser.forget_values([], ["cut"]) == 0


def test_scrub_marks_pending_erasures_and_only_those(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    nothing = eraser.record("clear", actor="cli", tenant="t", user=None, sessions=[session.id],
                            counts={"messages": 0}, at=AT)
    assert nothing.scrubbed == AT  # nothing removed: nothing to scrub
    first = eraser.record("clear", actor="cli", tenant="t", user=None, sessions=[session.id],
                          counts={"messages": 2}, at=AT)
    second = eraser.record("retract", actor="cli", tenant="t", user=None,
                           sessions=[session.id], counts={"messages": 1}, at=AT)
    assert eraser.pending_scrub() == [first.id, second.id]
    eraser.mark_scrubbed([first.id], AT)
    assert eraser.pending_scrub() == [second.id]
    eraser.mark_scrubbed([], AT)
    back = {e.id: e.scrubbed for e in eraser.erasures("t")}
    assert back[first.id] == AT and back[second.id] is None
