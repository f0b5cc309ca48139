"""Contract: ``Store.beside`` — reads started now, their result or error given later."""

from __future__ import annotations

import pytest

from memci.messages import Message
from memci.store import SessionRecord
from tests.contract.conftest import Store


def test_reads_beside_give_their_result_when_asked(store: Store, session: SessionRecord) -> None:
    store.append(session, [Message.user("one"), Message.assistant("two")])
    waiting = store.beside(lambda: [m.content for m in store.messages(session)])
    store.append(session, [Message.user("three")])  # the caller goes on meanwhile
    assert waiting()[:2] == ["one", "two"]


def test_an_error_of_reads_beside_comes_from_the_call_that_waits(store: Store) -> None:
    def fails() -> None:
        raise LookupError("no such thing")

    waiting = store.beside(fails)
    with pytest.raises(LookupError, match="no such thing"):
        waiting()


def test_reads_beside_a_write_see_what_it_wrote(store: Store, session: SessionRecord) -> None:
    with store.atomic():
        store.append(session, [Message.user("not committed yet")])
        waiting = store.beside(lambda: [m.content for m in store.messages(session)])
        assert waiting() == ["not committed yet"]
