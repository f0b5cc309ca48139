"""Contract: a deletion reaches the derived rows too (vectors, keyword text, large outputs)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memci.errors import StoreError
from memci.messages import Message
from memci.store import (
    Blob,
    Eraser,
    MessageSearch,
    NewItem,
    OutputContents,
    Scope,
    SearchDoc,
    SearchFilter,
    SessionRecord,
    VectorStore,
)
from memci.text import Analyzer
from tests.contract.conftest import Store

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _indexed(store: Store, search: MessageSearch, session: SessionRecord, word: str) -> list[int]:
    """Two indexed messages of the session holding ``word``; their doc numbers."""
    stored = store.append(session, [Message.user(f"{word} one"), Message.assistant(f"{word} 2")])
    for m in stored:
        search.add(SearchDoc(session.id, m.seq or 0, m.role, 1, 0.0, m.content, ""))
    return [c.doc for c in search.matching(SearchFilter(sessions=[session.id]))]


def test_clear_and_erase_take_vectors_and_keyword_text_of_one_session_only(
    store: Store, session: SessionRecord, analyzer: Analyzer, vectors: VectorStore,
) -> None:
    eraser: Eraser = store.eraser
    search = store.search(analyzer)
    items = store.items(analyzer)
    other = store.ensure_session("t", "other", "v", {})
    mine = _indexed(store, search, session, "zebra")
    theirs = _indexed(store, search, other, "zebra")
    vectors.add("message", [(d, session.id) for d in mine] + [(d, other.id) for d in theirs],
                [[1.0, 0.0]] * (len(mine) + len(theirs)))
    item = items.add(NewItem(Scope.user_scope("u", "t"), "fact", None, "zebra tea",
                             "zebra tea", None, None, None, 0.0, 0.0))
    kept = items.add(NewItem(Scope.user_scope("v", "t"), "fact", None, "zebra tea",
                             "zebra tea", None, None, None, 0.0, 0.0))
    vectors.add("item", [(item, None), (kept, None)], [[0.0, 1.0], [0.0, 1.0]])

    removed = eraser.clear(session) + eraser.erase_user_items("t", "u")

    assert removed.count("vectors") == len(mine) + 1 and removed.count("index") == len(mine)
    assert vectors.count("message") == len(theirs) and vectors.count("item") == 1
    assert sorted(r for r, _ in vectors.search("message", [1.0, 0.0], 10)) == sorted(theirs)
    assert [r for r, _ in vectors.search("item", [0.0, 1.0], 10)] == [kept]
    found = search.keyword(analyzer.query("zebra"), k=10, where=SearchFilter(),
                           context_weight=0.5)
    assert sorted(c.doc for c in found) == sorted(theirs)
    assert [i.id for i in items.get_many([item, kept])] == [kept]


def test_a_large_output_goes_with_its_last_link(
    store: Store, session: SessionRecord, tmp_path: Path,
) -> None:
    """Its content is gone once the deletion's ``files`` are removed (PostgreSQL: at once)."""
    from memci.workspace._folder import ArtifactFolder

    output_contents: OutputContents = store.output_contents or ArtifactFolder(
        tmp_path / "artifacts")
    rows = store.artifact_rows
    data = b"large output " * 1000
    rows.add_blob(Blob("big1", "sha-big1", len(data), len(data), 1, None), created_at=AT)
    output_contents.write("big1", iter([data]), len(data), "sha-big1")
    output_contents.release("big1")  # as its writer does once its row committed
    store.append(session, [Message.user("q")])
    rows.link("big1", session_id=session.id, call_id="c1", tool_name="bash", arguments="{}",
              exit_code=0, is_error=False, summary=["x"], owner="main", created_at=AT)
    removed = store.eraser.delete_session(session)
    assert removed.files == ("big1",)
    for artifact_id in removed.files:
        output_contents.discard(artifact_id, rows.exists)
    assert not rows.exists("big1")
    with pytest.raises(StoreError, match="big1"):
        output_contents.open("big1", len(data))
