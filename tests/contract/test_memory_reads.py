"""Contract: what a build's gathers read of long-term memory, one statement each.

Memory's version (the newest entry, item revision and erasure, and the writes in flight
where they may commit out of order) and a user's sessions
with the ones whose index lags are each one read of the search part, equal to what the
separate reads give.
"""

from __future__ import annotations

from datetime import UTC, datetime

from memci.messages import Message
from memci.store import Eraser, ItemStore, MessageSearch, NewItem, Scope, SearchDoc
from tests.contract.conftest import Store

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _separately(store: Store, search: MessageSearch, items: ItemStore) -> tuple[int, int, int]:
    eraser: Eraser = store.eraser
    return search.version(), items.version(), eraser.epoch()


def _version(search: MessageSearch) -> tuple[int, int, int]:
    """The version's first three parts (the fourth: see test_postgres, nothing in flight)."""
    version = search.memory_version()
    assert isinstance(version[3], int)
    return version[:3]


def test_memory_version_grows_with_an_entry_an_item_and_an_erasure(
    store: Store, search: MessageSearch, items: ItemStore,
) -> None:
    session = store.ensure_session("t", "s", "u", {})
    assert _version(search) == _separately(store, search, items) == (0, 0, 0)
    stored = store.append(session, [Message.user("the lighthouse keeper"),
                                    Message.assistant("ok")])
    for m in stored:
        search.add(SearchDoc(session.id, m.seq or 0, m.role, 1, 0.0, m.content, ""))
    entry = _version(search)
    assert entry[0] > 0 and entry == _separately(store, search, items)
    items.add(NewItem(Scope.user_scope("u", "t"), "fact", None, "likes tea", "likes tea",
                      None, "test", None, 1.0, 1.0))
    item = _version(search)
    assert item[0] == entry[0] and item[1] > entry[1]
    assert item == _separately(store, search, items)
    store.eraser.record("retract", actor="test", tenant="t", user="u",
                        sessions=[session.id], counts={"messages": 1}, at=AT)
    erased = _version(search)
    assert erased[1:2] == item[1:2] and erased[2] > item[2]
    assert erased == _separately(store, search, items)


def test_sessions_behind_are_the_sessions_of_a_user_and_those_whose_index_lags(
    store: Store, search: MessageSearch,
) -> None:
    a = store.ensure_session("t", "a", "u1", {})
    b = store.ensure_session("t", "b", "u2", {})
    c = store.ensure_session("t", "c", "u1", {})
    store.ensure_session("other", "d", "u1", {})
    for record in (a, b, c):
        store.append(record, [Message.user("hello"), Message.assistant("hi")])
    search.add(SearchDoc(a.id, 1, "user", 1, 0.0, "hello", ""))
    search.add(SearchDoc(a.id, 2, "assistant", 1, 0.0, "hi", ""))
    search.add(SearchDoc(c.id, 1, "user", 1, 0.0, "hello", ""))
    assert search.sessions_behind("t", "u1") == ([a.id, c.id], [(c.id, 1)])
    assert search.sessions_behind("t") == ([a.id, b.id, c.id], [(b.id, 0), (c.id, 1)])
    for user in ("u1", None):
        sessions, behind = search.sessions_behind("t", user)
        assert sessions == search.sessions_of("t", user)
        assert behind == search.behind(sessions)
    assert search.sessions_behind("nobody") == ([], [])
