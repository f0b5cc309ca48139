"""Contract: the message log (MessageLog) — sessions, append and seq, tool calls, views."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest

from memci.errors import OrphanToolResultError
from memci.messages import Message, ToolCallPart
from memci.store import ROW_HEAD_CHARS, LogColumns, LogRow, SessionRecord
from tests.contract.conftest import Store

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def call(call_id: str) -> Message:
    return Message.assistant("", ToolCallPart(call_id, "bash", '{"cmd": "ls"}'))


def test_sessions_are_made_once_and_keep_their_settings(store: Store) -> None:
    assert store.session("t", "a") is None
    made: SessionRecord = store.ensure_session("t", "a", "u1", {"model": "x"})
    again: SessionRecord = store.ensure_session("t", "a", None, {"model": "y"})
    assert again.id == made.id and again.user == "u1" and dict(again.settings) == {"model": "y"}
    assert store.session("t", "a") == again
    other = store.ensure_session("t2", "a", None, {})
    assert other.id != made.id
    assert [s.name for s in store.sessions("t")] == ["a"]
    assert [s.tenant for s in store.sessions()] == ["t", "t2"]


def test_sessions_come_in_pages_oldest_first(store: Store) -> None:
    for n in range(5):
        store.ensure_session("t", f"s{n}", None, {})
    store.ensure_session("other", "x", None, {})
    first = store.sessions("t", limit=2)
    assert [s.name for s in first] == ["s0", "s1"]
    rest = store.sessions("t", after=first[-1].id, limit=10)
    assert [s.name for s in rest] == ["s2", "s3", "s4"]
    assert store.sessions("t", after=rest[-1].id) == []
    assert [s.name for s in store.sessions(after=rest[-1].id)] == ["x"]


def test_message_sizes_tell_what_reading_costs_without_reading(
    store: Store, session: SessionRecord,
) -> None:
    store.append(session, [
        Message.user("é" * 100),  # 200 bytes of UTF-8
        Message("user", Message.user("x").parts, metadata={"k": "v" * 5000}),
        Message.assistant("ok")])
    sizes = store.message_sizes(session, limit=10)
    assert [seq for seq, _ in sizes] == [1, 2, 3]
    (_, accented), (_, with_metadata), (_, short) = sizes
    assert 200 <= accented < 400 and 5000 <= with_metadata < 5200 and short < 100
    assert store.message_sizes(session, after=1, limit=1) == [sizes[1]]
    assert store.message_sizes(session, after=3, limit=5) == []


def test_activity_counts_a_page_of_sessions_and_their_newest_message(
    store: Store, session: SessionRecord,
) -> None:
    busy = store.ensure_session("t", "busy", None, {})
    empty = store.ensure_session("t", "empty", None, {})
    store.append(session, [Message("user", Message.user("one").parts, created_at=AT)])
    store.append(busy, [Message.user(f"m{i}") for i in range(5)])
    later = Message("user", Message.user("late").parts, created_at=AT.replace(hour=13))
    store.append(busy, [later])
    activity = store.activity([session, busy, empty])
    assert activity == {session.id: (1, AT), busy.id: (6, AT.replace(hour=13))}
    assert store.activity([]) == {}
    assert store.activity([empty]) == {}


def test_append_numbers_messages_one_by_one_per_session(
    store: Store, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", None, {})
    first = store.append(session, [Message.user("one"), Message.assistant("two")])
    store.append(other, [Message.user("elsewhere")])
    second = store.append(session, [Message.user("three")])
    assert [m.seq for m in first + second] == [1, 2, 3]
    assert store.last_seq(session) == 3 and store.last_seq(other) == 1
    assert [m.content for m in store.messages(session)] == ["one", "two", "three"]
    assert [m.seq for m in store.messages(session, after=1, upto=2)] == [2]
    assert all(m.session == "contract" for m in store.messages(session))


def test_metadata_names_and_times_come_back_as_given(
    store: Store, session: SessionRecord,
) -> None:
    message = Message("user", Message.user("hi").parts, name="ann", metadata={"k": ["v", 1]},
                      created_at=AT, tokens=7)
    store.append(session, [message])
    back = store.messages(session)[0]
    assert (back.name, dict(back.metadata), back.created_at, back.tokens) == (
        "ann", {"k": ["v", 1]}, AT, 7)


def test_append_is_all_or_nothing_and_a_tool_result_needs_an_open_call(
    store: Store, session: SessionRecord,
) -> None:
    with pytest.raises(OrphanToolResultError):
        store.append(session, [Message.user("kept?"), Message.tool("nope", "out")])
    assert store.messages(session) == [] and store.last_seq(session) == 0
    store.append(session, [call("c1"), Message.tool("c1", "out")])
    with pytest.raises(OrphanToolResultError):  # each call is answered once
        store.append(session, [Message.tool("c1", "again")])
    assert store.last_seq(session) == 2
    assert store.tool_call(session, "c1", 3) == store.messages(session, upto=1)[0]
    assert store.tool_call(session, "c1", None) is None  # answered: no open call
    store.append(session, [call("c1")])  # a call id may be reused once answered
    opened = store.tool_call(session, "c1", None)
    assert opened is not None and opened.seq == 3


def test_writers_in_several_threads_never_share_a_seq(
    store: Store, session: SessionRecord, reopen: object,
) -> None:
    others = [reopen() for _ in range(3)]  # type: ignore[operator]
    errors: list[BaseException] = []

    def write(handle: Store, n: int) -> None:
        try:
            for i in range(10):
                handle.append(session, [Message.user(f"{n}-{i}"), Message.assistant("ok")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(h, n)) for n, h in enumerate(others)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    messages = store.messages(session)
    assert [m.seq for m in messages] == list(range(1, 61))
    for n in range(3):  # each call's two messages are neighbours
        mine = [m.seq for m in messages if m.content.startswith(f"{n}-")]
        assert all(messages[s].content == "ok" for s in mine)


def test_log_rows_carry_tokens_and_views(store: Store, session: SessionRecord) -> None:
    stored = store.append(session, [
        Message("user", Message.user("q").parts, tokens=3), call("c1"),
        Message("tool", Message.tool("c1", "x" * 50).parts, tokens=40)])
    assert [m.seq for m in stored] == [1, 2, 3]
    assert store.log_rows(session) == [LogRow(1, "user", 3), LogRow(2, "assistant", 0),
                                       LogRow(3, "tool", 40)]
    assert store.views(session, 1, 3) == {}
    store.save_views(session, [(3, "abc123abc123", 9)])
    store.save_views(session, [(3, "def456def456", 8)])  # saved again: replaced
    assert store.views(session, 1, 3) == {3: "def456def456"}
    assert store.views(session, 1, 2) == {}
    assert store.log_rows(session, after=2) == [LogRow(3, "tool", 40, 8)]


def test_log_columns_are_the_log_rows_as_columns(store: Store, session: SessionRecord) -> None:
    assert store.log_columns(session) == LogColumns([], [], [], [])
    store.append(session, [
        Message("system", Message.system("be brief").parts, tokens=4),
        Message("user", Message.user("q").parts, tokens=3), call("c1"),
        Message("tool", Message.tool("c1", "x" * 50).parts, tokens=40)])
    store.save_views(session, [(4, "abc123abc123", 9)])
    rows = store.log_rows(session)
    assert store.log_columns(session) == LogColumns(
        [r.seq for r in rows], [r.role for r in rows], [r.tokens for r in rows],
        [r.shown for r in rows])
    assert store.log_columns(session, after=2) == LogColumns([3, 4], ["assistant", "tool"],
                                                             [0, 40], [None, 9])
    assert store.log_columns(session, after=4) == LogColumns([], [], [], [])


def test_branch_links_are_read_from_metadata(store: Store, session: SessionRecord) -> None:
    store.append(session, [
        Message.user("a"),
        Message("user", Message.user("b").parts, metadata={"memci_branch": {"after": 1}}),
        Message("user", Message.user("c").parts, metadata={"memci_branch": {"after": "x"}}),
        Message("user", Message.user("d").parts, metadata={"note": "memci_branch"}),
    ])
    assert store.branch_links(session) == {2: 1}
    assert store.branch_links(session, after=2) == {}


def test_an_output_kept_outside_its_row_is_read_back_whole(
    store: Store, session: SessionRecord,
) -> None:
    whole = "line\n" * (ROW_HEAD_CHARS // 2)
    outputs = {"f" * 64: whole}
    store.output_reader = outputs.__getitem__
    store.append(session, [call("c1"), Message.tool("c1", whole)], external={1: "f" * 64})
    assert store.output_refs(session, 1, 2) == {2: "f" * 64}
    assert store.messages(session)[1].content == whole
    head = store.messages(session, whole=False)[1].content
    assert len(head) < len(whole) and whole.startswith(head[:100])


def test_another_handle_sees_what_was_committed(
    store: Store, session: SessionRecord, reopen: object,
) -> None:
    store.append(session, [Message.user("from one process")])
    other: Store = reopen()  # type: ignore[operator]
    found = other.session("t", "contract")
    assert found is not None and found.id == session.id
    assert [m.content for m in other.messages(found)] == ["from one process"]
    assert json.loads(json.dumps(dict(found.settings))) == {}
