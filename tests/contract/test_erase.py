"""Contract: deleting messages, sessions and users, and the audit log of it (Eraser)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from memci.errors import UnknownSessionError
from memci.messages import Message, ToolCallPart, ToolResultPart
from memci.store import (
    Blob,
    Eraser,
    ItemFilter,
    MessageSearch,
    NewItem,
    NewJob,
    Scope,
    SearchDoc,
    SessionRecord,
)
from memci.text import Analyzer
from tests.contract.conftest import Store

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def eraser(store: Store) -> Eraser:
    part: Eraser = store.eraser
    return part


def _chat(store: Store, session: SessionRecord, n: int, word: str = "hello") -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out += store.append(session, [Message.user(f"{word} {i}"),
                                      Message.assistant(f"answer {i}")])
    return out


def _index(search: MessageSearch, session: SessionRecord, messages: list[Message]) -> None:
    for m in messages:
        search.add(SearchDoc(session.id, m.seq or 0, m.role, 1, 0.0, m.content, ""))


def test_retract_deletes_messages_and_grows_the_epoch(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    _chat(store, session, 3)
    epoch, last = store.log_head(session)
    version = store.context.head(session)[0]
    removed = eraser.retract(session, [2, 5, 99])  # 99: not held, ignored
    assert removed.count("messages") == 2
    assert [m.seq for m in store.messages(session)] == [1, 3, 4, 6]
    new_epoch, new_last = store.log_head(session)
    assert new_epoch > epoch and new_last == last == 6
    assert store.context.head(session)[0] > version
    assert eraser.retract(session, [99]).count("messages") == 0


def test_a_deleted_seq_is_never_given_again(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    _chat(store, session, 2)
    eraser.retract(session, [4])
    assert store.append(session, [Message.user("next")])[0].seq == 5
    eraser.clear(session)
    assert store.messages(session) == []
    assert store.append(session, [Message.user("after clear")])[0].seq == 6


def test_retracting_a_result_reopens_its_call(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    store.append(session, [Message.user("q"), Message("assistant", (
        ToolCallPart("c1", "bash", "{}"),)), Message("tool", (ToolResultPart("c1", "out"),))])
    eraser.retract(session, [3])
    # The call is open again: a new result for it is accepted.
    again = store.append(session, [Message("tool", (ToolResultPart("c1", "out 2"),))])
    assert again[0].seq == 4


def test_retract_removes_search_entries(
    store: Store, eraser: Eraser, session: SessionRecord, analyzer: Analyzer,
) -> None:
    search = store.search(analyzer)
    stored = _chat(store, session, 2, word="zebra")
    _index(search, session, stored)
    before = search.count()
    removed = eraser.retract(session, [1])
    assert removed.count("index") == 1
    assert search.count() == before - 1


def test_clear_keeps_the_session_and_drops_its_state(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    _chat(store, session, 2)
    store.work.put_item(session.id, "note", 1, {"id": 1, "summary": "x"})
    store.context.put(session, "retrieval", {"opener": 1, "texts": []})
    removed = eraser.clear(session)
    assert removed.count("messages") == 4
    assert store.session("t", "contract") is not None
    assert store.work.items(session.id, "note") == []
    assert "retrieval" not in store.context.load(session).values


def test_a_deleted_session_is_not_found_and_its_id_is_not_reused(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    _chat(store, session, 1)
    eraser.delete_session(session)
    assert store.session("t", "contract") is None
    assert session.id not in {s.id for s in store.sessions()}
    with pytest.raises(UnknownSessionError):
        store.log_head(session)
    with pytest.raises(UnknownSessionError):
        store.append(session, [Message.user("late")])
    fresh = store.ensure_session("t", "contract", "u", {})
    assert fresh.id != session.id and store.messages(fresh) == []


def test_a_shared_blob_goes_with_its_last_link(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", "u2", {})
    rows = store.artifact_rows
    rows.add_blob(Blob("b1", "sha-b1", 3, 3, 1, None), created_at=AT)
    for s in (session, other):
        store.append(s, [Message.user("q"), Message("assistant", (
            ToolCallPart("c1", "bash", "{}"),))])
        rows.link("b1", session_id=s.id, call_id="c1", tool_name="bash", arguments="{}",
                  exit_code=0, is_error=False, summary=["x"], owner="main", created_at=AT)
    first = eraser.delete_session(session)
    assert first.count("blobs") == 0 and rows.exists("b1")
    second = eraser.delete_session(other)
    assert second.count("blobs") == 1 and second.files == ("b1",)
    assert not rows.exists("b1")


def test_user_items_and_jobs_go(
    store: Store, eraser: Eraser, session: SessionRecord, analyzer: Analyzer,
) -> None:
    items = store.items(analyzer)
    mine = items.add(NewItem(Scope.user_scope("u", "t"), "fact", None, "likes tea", "likes tea",
                             None, "contract#p2 · rule: stated", None, 0.0, 0.0))
    theirs = items.add(NewItem(Scope.user_scope("v", "t"), "fact", None, "likes tea",
                               "likes tea", None, None, None, 0.0, 0.0))
    assert eraser.derived_items(session, 3) == []
    assert eraser.derived_items(session, 2) == [mine]
    removed = eraser.erase_user_items("t", "u")
    assert removed.count("items") == 1
    assert items.get_many([mine]) == [] and [i.id for i in items.get_many([theirs])] == [theirs]
    assert items.ids(ItemFilter(Scope.user_scope("v", "t"))) == [theirs]
    store.jobs.submit([NewJob("k", f"session:{session.id}:page:1:1-2", "{}", 3, 0.0),
                       NewJob("k", "session:999:page:1:1-2", "{}", 3, 0.0)], at=AT)
    assert eraser.erase_jobs([f"session:{session.id}:"]) == 1
    with pytest.raises(Exception, match="non-empty"):
        eraser.erase_jobs([""])


def test_forget_pages_drops_rows_from_a_page_on(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    from memci.store import ContextChanges, PageRow

    _chat(store, session, 3)
    rows = [PageRow(p, 2 * p - 1, 2 * p, "archived", 1, 0, None, (f"line {p}",))
            for p in (1, 2)]
    assert store.context.commit(session, store.context.head(session)[0], ContextChanges(rows))
    version = store.context.head(session)[0]
    assert eraser.forget_pages(session, 2) == 1
    assert [r.page for r in store.context.load(session).pages] == [1]
    assert store.context.head(session)[0] > version


def test_the_audit_log_keeps_ids_and_counts_not_content(
    store: Store, eraser: Eraser, session: SessionRecord,
) -> None:
    epoch = eraser.epoch()
    erasure = eraser.record("erase_user", actor="cli", tenant="t", user="alice@example.com",
                            sessions=[session.id], counts={"messages": 4, "items": 0}, at=AT)
    assert eraser.epoch() > epoch
    assert erasure.user == hashlib.sha256(b"alice@example.com").hexdigest()
    assert dict(erasure.counts) == {"messages": 4}  # zero counts are left out
    (back,) = eraser.erasures("t")
    assert back == erasure and back.at == AT
    assert eraser.erasures("other tenant") == []


def test_scrub_runs_outside_a_transaction(store: Store, eraser: Eraser) -> None:
    assert eraser.scrub() is True
    with store.atomic(), pytest.raises(Exception, match="outside any transaction"):
        eraser.scrub()
