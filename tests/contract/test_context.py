"""Contract: a session's context state (ContextStore) — head, load, commit CAS, events, put."""

from __future__ import annotations

import threading

from memci.messages import Message
from memci.store import ContextChanges, ContextEvent, PageRow, SessionRecord
from tests.contract.conftest import Store


def page(n: int, state: str = "archived", *, recalls: int = 0) -> PageRow:
    return PageRow(page=n, first_seq=2 * n - 1, last_seq=2 * n, state=state, archived_round=n,
                   recall_count=recalls, last_recall_round=None if not recalls else n + 1,
                   lines=(f"page {n}", "第二行"), source="extractive")


def test_a_new_session_is_at_version_zero(store: Store, session: SessionRecord) -> None:
    assert store.context.head(session) == (0, 0)
    state = store.context.load(session)
    assert (state.version, state.pages, dict(state.counts), dict(state.values)) == (0, (), {}, {})
    store.append(session, [Message.user("a"), Message.assistant("b")])
    assert store.context.head(session) == (0, 2)


def test_a_commit_applies_everything_and_bumps_the_version(
    store: Store, session: SessionRecord,
) -> None:
    changes = ContextChanges(
        pages=[page(1), page(2)],
        events=[ContextEvent(3, "archive", 1, "window", last_page=2),
                ContextEvent(3, "recall", 2, "tool")],
        values={"cut": {"base": 4}, "summary": "text"})
    assert store.context.commit(session, 0, changes)
    state = store.context.load(session)
    assert state.version == 1
    assert state.pages == (page(1), page(2))
    assert dict(state.counts) == {"archive": 2, "recall": 1}
    assert dict(state.values) == {"cut": {"base": 4}, "summary": "text"}
    assert store.context.head(session)[0] == 1
    events = store.context.events(session)
    assert [(e.round, e.kind, e.page, e.last_page, e.pages) for e in events] == [
        (3, "archive", 1, 2, 2), (3, "recall", 2, 2, 1)]
    assert all(e.at for e in events)
    assert [e.kind for e in store.context.events(session, limit=1)] == ["recall"]


def test_a_commit_with_a_stale_version_changes_nothing(
    store: Store, session: SessionRecord,
) -> None:
    assert store.context.commit(session, 0, ContextChanges(values={"k": 1}))
    stale = ContextChanges(pages=[page(1)], events=[ContextEvent(1, "archive", 1, "x")],
                           values={"k": 2})
    assert not store.context.commit(session, 0, stale)
    state = store.context.load(session)
    assert (state.version, state.pages, dict(state.counts), dict(state.values)) == (
        1, (), {}, {"k": 1})
    assert store.context.events(session) == []


def test_of_racing_commits_on_one_version_exactly_one_wins(
    store: Store, session: SessionRecord, reopen: object,
) -> None:
    handles = [reopen() for _ in range(4)]  # type: ignore[operator]
    start = threading.Barrier(len(handles))
    won: list[int] = []

    def commit(n: int, handle: Store) -> None:
        start.wait()
        if handle.context.commit(session, 0, ContextChanges(
                events=[ContextEvent(1, "archive", n + 1, "race")], values={"by": n})):
            won.append(n)

    threads = [threading.Thread(target=commit, args=(n, h)) for n, h in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    state = store.context.load(session)
    assert state.version == 1 and dict(state.values) == {"by": won[0]}
    assert [e.page for e in store.context.events(session)] == [won[0] + 1]


def test_pages_are_saved_again_and_read_by_state(store: Store, session: SessionRecord) -> None:
    store.context.commit(session, 0, ContextChanges(pages=[page(1), page(2), page(3)]))
    store.context.commit(session, 1, ContextChanges(
        pages=[page(2, "recalled", recalls=1), page(3, "evicted")]))
    assert store.context.page(session, 2) == page(2, "recalled", recalls=1)
    assert store.context.page(session, 3) == page(3, "evicted")  # evicted: still readable
    assert store.context.page(session, 9) is None
    assert store.context.page_rows(session, state="archived") == [page(1)]
    assert store.context.page_rows(session, state="evicted") == [page(3, "evicted")]
    # what a build starts from leaves evicted pages out
    assert [p.page for p in store.context.load(session).pages] == [1, 2]


def test_a_value_set_to_none_is_removed(store: Store, session: SessionRecord) -> None:
    store.context.commit(session, 0, ContextChanges(values={"a": 1, "b": [1, "二"]}))
    store.context.commit(session, 1, ContextChanges(values={"a": None}))
    assert dict(store.context.load(session).values) == {"b": [1, "二"]}


def test_put_caches_a_value_without_a_version_check(store: Store, session: SessionRecord) -> None:
    store.context.put(session, "retrieval", {"page": 3})
    store.context.put(session, "retrieval", {"page": 4})
    state = store.context.load(session)
    assert state.version == 0 and dict(state.values) == {"retrieval": {"page": 4}}


def test_sessions_have_separate_states(store: Store, session: SessionRecord) -> None:
    other = store.ensure_session("t", "other", None, {})
    store.context.commit(session, 0, ContextChanges(pages=[page(1)], values={"x": 1}))
    assert store.context.load(other).version == 0
    assert store.context.page(other, 1) is None and store.context.events(other) == []
    assert store.context.commit(other, 0, ContextChanges(values={"x": 2}))
    assert dict(store.context.load(session).values) == {"x": 1}
