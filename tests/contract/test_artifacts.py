"""Contract: artifacts' blobs and their links to tool calls (ArtifactRows)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from memci.errors import MemciError, UnknownSessionError
from memci.store import Artifact, ArtifactRows, Blob, SessionRecord
from tests.contract.conftest import Store

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def blob(text: str, *, inline: bool = True) -> Blob:
    sha = hashlib.sha256(text.encode()).hexdigest()
    return Blob(id=sha[:12], sha256=sha, size=len(text.encode()), chars=len(text),
                lines=text.count("\n") + 1, content=text if inline else None)


def link(rows: ArtifactRows, artifact_id: str, session_id: int, call_id: str | None, *,
         tool_name: str = "bash", exit_code: int | None = 0, is_error: bool = False,
         created_at: datetime = AT) -> Artifact:
    return rows.link(artifact_id, session_id=session_id, call_id=call_id, tool_name=tool_name,
                     arguments='{"cmd": "ls"}', exit_code=exit_code, is_error=is_error,
                     summary=["3 files", "exit 0"], owner="main", created_at=created_at)


def test_a_blob_is_found_by_id_and_address(artifact_rows: ArtifactRows) -> None:
    small, large = blob("a.txt\nb.txt\n"), blob("x" * 100, inline=False)
    assert artifact_rows.blob(small.id) is None and not artifact_rows.exists(small.id)
    artifact_rows.add_blob(small, created_at=AT)
    artifact_rows.add_blob(large, created_at=AT)
    assert artifact_rows.blob(small.id) == small
    assert artifact_rows.blob(large.id) == large  # content None: its file holds it
    assert artifact_rows.blob_id(small.sha256) == small.id
    assert artifact_rows.blob_id("0" * 64) is None
    assert artifact_rows.exists(large.id)
    assert artifact_rows.file_ids() == {large.id}


def test_a_taken_id_or_address_is_refused(artifact_rows: ArtifactRows) -> None:
    first = blob("same")
    artifact_rows.add_blob(first, created_at=AT)
    with pytest.raises(MemciError):
        artifact_rows.add_blob(first, created_at=AT)
    with pytest.raises(MemciError):
        artifact_rows.add_blob(Blob(first.id + "ab", first.sha256, 4, 4, 1, "same"),
                               created_at=AT)
    assert artifact_rows.blob(first.id + "ab") is None


def test_links_number_the_calls_of_one_content(
    store: Store, artifact_rows: ArtifactRows, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", "u", {})
    content = blob("total 3\n")
    artifact_rows.add_blob(content, created_at=AT)
    one = link(artifact_rows, content.id, session.id, "call_1")
    two = link(artifact_rows, content.id, other.id, "call_9", is_error=True, exit_code=2,
               created_at=AT + timedelta(seconds=5))
    three = link(artifact_rows, content.id, session.id, "call_1", tool_name="grep")
    assert one.seq < two.seq < three.seq
    assert one.id == content.id and one.sha256 == content.sha256
    assert one.stored == "inline" and one.size == content.size
    assert one.summary == ("3 files", "exit 0") and one.created_at == AT
    assert two.is_error and two.exit_code == 2 and two.session_id == other.id
    assert artifact_rows.latest(content.id) == three
    assert artifact_rows.calls(content.id) == [one, two, three]
    assert artifact_rows.for_call(session.id, "call_1") == three
    assert artifact_rows.for_call(other.id, "call_1") is None
    assert artifact_rows.for_session(session.id) == [one, three]
    assert artifact_rows.latest("0" * 12) is None


def test_the_links_of_many_calls_are_read_at_once(
    store: Store, artifact_rows: ArtifactRows, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", "u", {})
    first, second = blob("one\n"), blob("two\n")
    artifact_rows.add_blob(first, created_at=AT)
    artifact_rows.add_blob(second, created_at=AT)
    a = link(artifact_rows, first.id, session.id, "call_a")
    link(artifact_rows, second.id, other.id, "call_b")  # another session's call
    b = link(artifact_rows, second.id, session.id, "call_b")
    again = link(artifact_rows, second.id, session.id, "call_a", tool_name="grep")
    found = artifact_rows.for_calls(session.id, ["call_a", "call_b", "call_none"])
    assert found == {"call_a": again, "call_b": b}  # the latest link of each call
    assert found["call_a"] == artifact_rows.for_call(session.id, "call_a") != a
    assert artifact_rows.for_calls(session.id, []) == {}
    assert artifact_rows.for_calls(other.id, ["call_a"]) == {}


def test_a_summary_can_be_replaced(artifact_rows: ArtifactRows, session: SessionRecord) -> None:
    content = blob("output")
    artifact_rows.add_blob(content, created_at=AT)
    made = link(artifact_rows, content.id, session.id, "c")
    artifact_rows.set_summary(made.seq, ["a better summary"])
    found = artifact_rows.latest(content.id)
    assert found is not None and found.summary == ("a better summary",)


def test_a_link_to_an_unknown_session_stores_nothing(
    store: Store, artifact_rows: ArtifactRows, session: SessionRecord,
) -> None:
    content = blob("orphan")
    with pytest.raises(UnknownSessionError), store.atomic():
        artifact_rows.add_blob(content, created_at=AT)
        link(artifact_rows, content.id, session.id + 1000, "c")
    assert artifact_rows.blob(content.id) is None
    assert artifact_rows.for_session(session.id + 1000) == []
