"""Memory items: dedupe, supersede with history, scopes, episodic pages, gather and cache."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import memci
from memci.errors import InvalidInputError
from memci.memory import Gatherer, Kept, Memory, MemoryItems, Scope
from memci.memory._memory import DOCS_READ
from memci.messages import Message
from memci.store import SQLiteStore


@pytest.fixture
def memory(store: SQLiteStore) -> Memory:
    return Memory(store, embedder=None)


def test_duplicates_merge(store: SQLiteStore) -> None:
    items = MemoryItems(store, embedder=None)
    scope = Scope.user_scope("alice")
    first = items.remember(scope, "Prefers  tea over coffee.", "preference", source="s#p1")
    again = items.remember(scope, "prefers tea over coffee", "preference", source="s#p4")
    assert again.id == first.id
    assert again.seen == 2
    assert again.source == "s#p4"
    assert len(items.items(scope)) == 1
    other_kind = items.remember(scope, "prefers tea over coffee", "fact")
    assert other_kind.id != first.id


def test_newer_fact_supersedes_with_history(store: SQLiteStore) -> None:
    items = MemoryItems(store, embedder=None)
    scope = Scope.user_scope("alice")
    old = items.remember(scope, "Lives in Denver", "fact", subject="Home city",
                         at=datetime(2025, 1, 1, tzinfo=UTC))
    new = items.remember(scope, "Moved to Austin", "fact", subject="home city",
                         at=datetime(2026, 2, 1, tzinfo=UTC))
    history = items.history(new.id)
    assert [h.text for h in history] == ["Lives in Denver", "Moved to Austin"]
    before = history[0]
    assert before.id == old.id
    assert before.superseded_by == new.id
    assert before.valid_to == datetime(2026, 2, 1, tzinfo=UTC)
    assert not before.current
    assert history[1].current
    assert [h.text for h in items.recall("Denver Austin", scope=scope)] == ["Moved to Austin"]
    everything = items.recall("Denver Austin", scope=scope, include_superseded=True)
    assert {h.text for h in everything} == {"Lives in Denver", "Moved to Austin"}
    assert items.items(scope, current=False)[0].text == "Moved to Austin"


def test_scopes_and_isolation(store: SQLiteStore) -> None:
    items = MemoryItems(store, embedder=None)
    a1 = store.ensure_session("acme", "a1", "alice", {})
    a2 = store.ensure_session("acme", "a2", "alice", {})
    b1 = store.ensure_session("acme", "b1", "bob", {})
    g1 = store.ensure_session("globex", "g1", "alice", {})
    items.remember(Scope.tenant_scope("acme"), "giraffe policy for everyone", "fact")
    items.remember(Scope.of(a1, "user"), "giraffe fan alice", "preference")
    items.remember(Scope.of(a1), "giraffe note in a1", "fact")
    items.remember(Scope.of(b1, "user"), "giraffe fan bob", "preference")
    items.remember(Scope.of(g1, "user"), "giraffe other tenant", "preference")

    def seen(scope: Scope) -> set[str]:
        return {h.text for h in items.recall("giraffe", scope=scope)}

    assert seen(Scope.of(a2)) == {"giraffe policy for everyone", "giraffe fan alice"}
    assert seen(Scope.of(a2, "user")) == {"giraffe policy for everyone", "giraffe fan alice",
                                          "giraffe note in a1"}
    assert seen(Scope.of(b1, "user")) == {"giraffe policy for everyone", "giraffe fan bob"}
    assert seen(Scope.tenant_scope("acme")) == {
        "giraffe policy for everyone", "giraffe fan alice", "giraffe note in a1",
        "giraffe fan bob"}
    assert seen(Scope.of(g1, "tenant")) == {"giraffe other tenant"}
    assert {p.text for p in items.preferences(Scope.of(a1))} == {"giraffe fan alice"}


def test_invalid_items(store: SQLiteStore) -> None:
    items = MemoryItems(store, embedder=None)
    with pytest.raises(InvalidInputError):
        items.remember(Scope.user_scope("u"), "   ")
    with pytest.raises(InvalidInputError):
        Scope("planet", "t")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        Scope("user", "t")


def test_remember_page_is_episodic_and_updates_summary(memory: Memory,
                                                      store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "s", "u", {})
    page = memory.remember_page(rec, 3, "user: the wombat escaped\nassistant: oh no")
    assert page.kind == "episodic"
    assert page.page == 3
    again = memory.remember_page(rec, 3, "user: the wombat escaped\nassistant: oh no",
                                 "A wombat got out of its pen")
    assert again.id == page.id
    hits = memory.recall("pen", scope=Scope.of(rec))
    assert hits[0].item is not None
    assert hits[0].item.id == page.id
    assert hits[0].page == 3
    assert hits[0].session == "s"
    assert hits[0].message.metadata["kind"] == "episodic"
    changed = memory.remember_page(rec, 3, "user: the wombat came back")
    assert changed.id != page.id
    assert [h.id for h in memory.items.history(changed.id)] == [page.id, changed.id]


def test_memory_search_covers_messages_and_items(memory: Memory, store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "s", "u", {})
    memory.index(rec, store.append(rec, [Message.user("the capybara bath"),
                                         Message.assistant("relaxing")]))
    memory.remember(Scope.of(rec, "user"), "capybara is the favourite animal", "preference")
    hits = memory.search("capybara", session=rec, scope="user")
    assert {h.kind for h in hits} == {"message", "item"}
    assert all(h.retrievers == ("keyword",) for h in hits)


def test_an_archived_pages_episode_comes_after_every_matching_message(
    memory: Memory, store: SQLiteStore,
) -> None:
    # An episodic item is an archived page's text, whose messages are searched too: fused
    # by rank, pages whose words the question shares (here "ticket", said again in their
    # summaries) took every other place from the messages that named what was asked, so
    # a chat whose pages became items as it went found less than the same chat imported.
    rec = store.ensure_session("t", "s", "u", {})
    said = [Message.user("Do you know the Zorbat museum?"),
            Message.assistant("Yes, in the old quarter; the ticket is free.")]
    for n in range(8):
        said += [Message.user(f"How much is the ticket at gallery {n}?"),
                 Message.assistant(f"The ticket is {n + 5} yuan.")]
    memory.index(rec, store.append(rec, said))
    for n in range(8):
        text = f"user: ticket at gallery {n}? assistant: the ticket is {n + 5} yuan"
        memory.remember_page(rec, n + 2, text, summary=text)
    memory.remember(Scope.of(rec, "user"), "the Zorbat museum ticket is cheap", "fact")
    hits = memory.search("Zorbat museum ticket", session=rec, scope="user", k=30)
    kinds = [h.item.kind if h.item is not None else "message" for h in hits]
    assert kinds.count("episodic") == 8 and kinds.count("message") == 18
    assert kinds[-8:] == ["episodic"] * 8  # found, after every message
    assert kinds.index("fact") < kinds.index("episodic")  # other items still fuse by rank
    assert {"Zorbat" in h.text or "free" in h.text for h in hits[:2]} == {True}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_gather_cache_ttl_and_invalidation(memory: Memory, store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "s", "u", {})
    old = store.ensure_session("t", "old", "u", {})
    memory.index(old, store.append(old, [Message.user("my puffin photo trip to Iceland"),
                                         Message.assistant("nice puffins")]))
    memory.items.remember_preference(Scope.of(rec, "user"), "on a trip, likes short answers",
                                     "style")
    memory.items.remember_preference(Scope.of(rec, "user"), "likes dark mode", "ui")
    clock = Clock()
    gatherer = Gatherer(memory, ttl=300, clock=clock)
    try:
        first = gatherer.gather("puffin trip", session=rec)
        assert not first.cached
        assert first.episodes[0].text == "my puffin photo trip to Iceland"
        assert len(first.episodes) <= 3
        # only the preference that shares a term with the question
        assert [p.text for p in first.preferences] == ["on a trip, likes short answers"]
        kinds = [t.kind for t in first.texts]
        assert kinds[-1] == "preference"
        assert first.texts[0].source.startswith("old#p1/")
        second = gatherer.gather("puffin trip", session=rec)
        assert second.cached
        clock.now += 301  # past the TTL
        assert not gatherer.gather("puffin trip", session=rec).cached
        assert gatherer.gather("puffin trip", session=rec).cached
        memory.index(rec, store.append(rec, [Message.user("puffin again")]))
        fresh = gatherer.gather("puffin trip", session=rec)  # a new message invalidates
        assert not fresh.cached
        assert "puffin again" in [h.text for h in fresh.episodes]
        window = gatherer.gather("puffin trip", session=rec, exclude_from_seq=1)
        assert "puffin again" not in [h.text for h in window.episodes]
        memory.items.remember_preference(Scope.of(rec, "user"), "likes tables", "layout")
        assert not gatherer.gather("puffin trip", session=rec, exclude_from_seq=1).cached
        assert gatherer.hits >= 2
        assert gatherer.gather("", session=rec).episodes == ()
    finally:
        gatherer.close()


def test_each_gather_sees_the_preferences_as_they_are_now(
        memory: Memory, store: SQLiteStore) -> None:
    # The preferences are kept between gathers while the items stay as they were: one
    # learned, changed or forgotten since shows at the next gather, whatever the question.
    rec = store.ensure_session("t", "prefs", "u", {})
    owner = Scope.of(rec, "user")
    gatherer = Gatherer(memory)
    try:
        assert gatherer.gather("trip ideas", session=rec).preferences == ()
        memory.items.remember_preference(owner, "on a trip, likes trains", "travel")
        assert [p.text for p in gatherer.gather("trip plans", session=rec).preferences] == [
            "on a trip, likes trains"]
        changed = memory.items.remember_preference(owner, "on a trip, likes planes", "travel")
        assert [p.text for p in gatherer.gather("trip dates", session=rec).preferences] == [
            "on a trip, likes planes"]
        memory.items.forget(changed.id)
        assert gatherer.gather("trip costs", session=rec).preferences == ()
    finally:
        gatherer.close()


def test_episodes_default_to_three(memory: Memory, store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "many", "u", {})
    memory.index(rec, store.append(rec, [Message.user(f"narwhal fact {i}") for i in range(8)]))
    gatherer = Gatherer(memory)
    try:
        assert len(gatherer.gather("narwhal", session=rec, scope="session").episodes) == 3
    finally:
        gatherer.close()


def test_recall_time_hint(store: SQLiteStore) -> None:
    items = MemoryItems(store, embedder=None)
    scope = Scope.user_scope("u")
    now = datetime(2026, 3, 12, 12, tzinfo=UTC)
    items.remember(scope, "meeting notes about budget", at=now - timedelta(days=40))
    items.remember(scope, "meeting notes about hiring", at=now - timedelta(days=1))
    hits = items.recall("meeting notes yesterday", scope=scope, now=now)
    assert hits[0].text == "meeting notes about hiring"
    assert "time" in hits[0].retrievers


def _episodes(memory: Memory, rec: object) -> list[tuple[object, ...]]:
    items = memory.items.items(Scope.of(rec), kinds=("episodic",), current=False)  # type: ignore[arg-type]
    return sorted((i.page, i.text, i.summary, (i.source or '').split('#')[-1], i.seen, i.current)
                  for i in items)


def test_remembering_pages_at_once_is_remembering_them_one_by_one(
        memory: Memory, store: SQLiteStore) -> None:
    """An archive event's batch: merged, added and superseded as single calls would."""
    one = store.ensure_session("t", "one", "u", {})
    many = store.ensure_session("t", "many", "u", {})
    rounds = [
        [(1, "user: the wombat escaped", "wombat out"), (2, "user: fed the cat", None)],
        [(1, "user: the wombat escaped", "the wombat got out"),  # the same text: merged
         (2, "user: the cat is fed", ""),  # other text: supersedes page 2's item
         (3, "user: a heron at the pond", None), (4, "user: a heron at the pond", None)],
    ]
    for pages in rounds:
        for page, text, summary in pages:
            memory.remember_page(one, page, text, summary)
        memory.remember_pages(many, pages)
    assert _episodes(memory, many) == _episodes(memory, one)
    hits = memory.recall("heron", scope=Scope.of(many))
    assert hits and hits[0].item is not None and hits[0].session == "many"
    with pytest.raises(InvalidInputError):
        memory.remember_pages(many, [(5, "fine", None), (6, "  ", None)])
    assert len(_episodes(memory, many)) == len(_episodes(memory, one))  # nothing stored


def _facts(items: MemoryItems, scope: Scope) -> list[tuple[object, ...]]:
    return sorted((i.kind, i.text, i.subject, i.source, i.seen, i.current, i.valid_from,
                   i.valid_to) for i in items.items(scope, current=False))


def test_remembering_facts_at_once_is_remembering_them_one_by_one(
        store: SQLiteStore) -> None:
    """The user's facts an archive event keeps: one batch a kind, whatever their number,
    with what remembering them one after another gives (merged, superseded, dated)."""
    now = datetime(2026, 3, 1, tzinfo=UTC).timestamp()
    items = MemoryItems(store, embedder=None, clock=lambda: now)
    one, many = Scope.user_scope("one"), Scope.user_scope("many")
    said = datetime(2024, 6, 1, tzinfo=UTC)
    rounds = [
        [Kept("Lives in Denver", "home city", "s#p1"), Kept("Has two cats", source="s#p1"),
         Kept("has two  cats", source="s#p2")],  # met twice in the batch: merged
        [Kept("Moved to Austin", "Home city", "s#p3"),  # supersedes Denver
         Kept("Has two cats", source="s#p4"), Kept("Runs on Sundays", source="s#p4", at=said)],
    ]
    for entries in rounds:
        for e in entries:
            items.remember(one, e.text, "fact", e.subject, e.source, at=e.at)
        items.remember_many(many, "fact", entries)
    assert _facts(items, many) == _facts(items, one)
    assert ("fact", "Has two cats", None, "s#p4", 3, True) in [f[:6] for f in _facts(items, many)]
    ran: list[str] = []
    store._conn.set_trace_callback(ran.append)
    try:
        items.remember_many(many, "fact", [Kept(f"likes colour {n}", source="s#p9")
                                           for n in range(12)])
    finally:
        store._conn.set_trace_callback(None)
    # Before: four statements a fact (find, add, its keyword row, read back): 48 here.
    written = [q for q in ran if not q.lstrip().startswith("--")]
    assert len(written) <= 8, written
    with pytest.raises(InvalidInputError):
        items.remember_many(many, "fact", [Kept("fine"), Kept("  ")])
    assert not any(i.text == "fine" for i in items.items(many))  # nothing stored


def test_an_archived_page_holds_from_when_it_was_said(tmp_path: Path) -> None:
    """A replayed chat's archived pages keep their own dates in memory (not the day they
    were archived): the line memory shows carries when the page was said."""
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    with memci.Engine.open(tmp_path / "m.db") as engine:
        s = engine.session("replayed", user="u")
        for day in range(40):
            at = (said + timedelta(days=day)).isoformat()
            s.add({"role": "user", "content": f"day {day}: we talked about the harbor crane "
                   f"number {day} and its paint", "created_at": at})
            s.add({"role": "assistant", "content": f"noted, crane {day}", "created_at": at})
            s.build(budget=600)
        assert s.stats().archived > 5
        episodes = engine.memory.items.items(Scope.of(s.record), kinds=("episodic",))
        assert episodes
        days = {m.seq: m.created_at for m in s.messages()}
        for item in episodes:
            assert item.page is not None
            first = min(seq for seq in days if s.page_of(seq) == item.page)
            assert item.valid_from == days[first], (item.page, item.valid_from)
        hits = engine.memory.recall("crane number 3 paint", scope=Scope.of(s.record), k=3)
        assert hits and all(h.message.created_at is not None
                            and h.message.created_at.year == 2023 for h in hits)


def test_the_gathers_of_one_reading_read_memory_once_and_find_what_separate_ones_find(
        memory: Memory, store: SQLiteStore) -> None:
    # A build gathers for its page, then again with the window starting later: inside
    # reading() the second reads memory's version, the user's sessions and the items'
    # ranking no more, and finds what it finds alone.
    rec = store.ensure_session("t", "now", "u", {})
    old = store.ensure_session("t", "old", "u", {})
    memory.index(old, store.append(old, [Message.user("the puffin colony on the cliffs"),
                                         Message.assistant("puffins nest there")]))
    memory.index(rec, store.append(rec, [
        Message.user(f"puffin question {i}") if i % 2 == 0 else Message.assistant("ok")
        for i in range(12)]))
    memory.items.remember(Scope.of(rec, "user"), "saw puffins in Iceland", "fact")
    alone = [Gatherer(memory).gather("puffin cliffs", session=rec, exclude_from_seq=seq)
             for seq in (9, 5)]
    gatherer = Gatherer(memory)
    ran: list[str] = []
    store._conn.set_trace_callback(ran.append)
    try:
        with memory.reading():
            first = gatherer.gather("puffin cliffs", session=rec, exclude_from_seq=9)
            read_first = len(ran)
            again = gatherer.gather("puffin cliffs", session=rec, exclude_from_seq=5)
    finally:
        store._conn.set_trace_callback(None)
    assert [first.texts, again.texts] == [a.texts for a in alone]
    memory_reads = ("memory_items", "memci_erasures", "FROM sessions")
    later = [s for s in ran[read_first:] if not s.startswith("--")]  # FTS5's own aside
    assert any(name in s for s in ran[:read_first] for name in memory_reads)
    # Before: the second gather read the version (three statements) and the sessions
    # (two) again, and ranked and read the items again; and each ranked list and load
    # read the index's size and change count.
    assert not [s for s in later if any(name in s for name in memory_reads)], later
    assert sum("memory_docs_changes" in s for s in ran) == 1, ran


def test_a_search_reads_a_bounded_part_of_a_large_window_for_its_bound(
        memory: Memory, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # The window's bound (its first entry) is read once per reading() block, but not the
    # whole window: a large one held thousands of entries, all read at every build. A
    # later gather whose window starts past what was read reads again, and every gather
    # finds what it finds alone.
    rec = store.ensure_session("t", "now", None, {})
    memory.index(rec, store.append(rec, [
        Message.user(f"puffin question {i}") if i % 2 == 0 else Message.assistant("ok")
        for i in range(DOCS_READ * 4)]))
    starts = (11, 11 + DOCS_READ // 2, 11 + DOCS_READ * 2)
    alone = [Gatherer(memory).gather("puffin question", session=rec, exclude_from_seq=seq,
                                     max_episodes=5) for seq in starts]
    read: list[int] = []
    docs_from = memory.messages.rows.docs_from

    def counted(session_id: int, seq: int, limit: int) -> list[tuple[int, int]]:
        found = docs_from(session_id, seq, limit)
        read.append(len(found))
        return found

    monkeypatch.setattr(memory.messages.rows, "docs_from", counted)
    gatherer = Gatherer(memory)
    with memory.reading():
        together = [gatherer.gather("puffin question", session=rec, exclude_from_seq=seq,
                                    max_episodes=5) for seq in starts]
    assert [r.texts for r in together] == [r.texts for r in alone]
    assert all(r.episodes for r in together)
    assert read == [DOCS_READ, DOCS_READ]  # the second start is among the first read


def test_a_reading_block_reads_the_index_again_once_its_connection_wrote(
        memory: Memory, store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "now", "u", {})
    memory.index(rec, store.append(rec, [Message.user("the puffin colony")]))
    ran: list[str] = []
    with memory.reading():
        assert memory.search("puffin", session=rec)
        memory.index(rec, store.append(rec, [Message.user("a new puffin burrow")]))
        store._conn.set_trace_callback(ran.append)
        try:
            found = memory.search("puffin burrow", session=rec)
        finally:
            store._conn.set_trace_callback(None)
    assert found[0].text == "a new puffin burrow"
    assert any("memory_docs_changes" in s for s in ran), ran  # not the stale one


@pytest.mark.parametrize(("question", "again"), [
    # the day's entries reach past the first gather's bound: only the count is shared
    ("what did we say about the harbor lantern yesterday?", ()),
    # all of that day's entries are below both bounds: ranked and counted once
    ("what did we say about the harbor lantern on May 29?", ("BETWEEN",)),
])
def test_the_gathers_of_one_reading_read_the_window_bounds_once(
        memory: Memory, store: SQLiteStore, question: str, again: tuple[str, ...]) -> None:
    # A dated question gathered for the page, then with the window starting later (a
    # build that archives): the second finds the window's first entry among what the
    # first read, and the day's entries counted once.
    rec = store.ensure_session("t", "solo", "u", {})
    day = datetime(2026, 6, 1, 9, tzinfo=UTC)
    turns = [(day - timedelta(days=3, minutes=i), f"the lantern by the harbor, note {i}")
             for i in range(20, 0, -1)]
    turns += [(day + timedelta(hours=i), text) for i, text in enumerate(
        ("the lantern is lit", "a brass harbor lantern", "milk and bread", "the tide"))]
    memory.index(rec, store.append(rec, [Message("user", Message.user(text).parts,
                                                 created_at=at) for at, text in turns]))
    now = day + timedelta(days=1)
    alone = [Gatherer(memory).gather(question, session=rec, exclude_from_seq=seq, now=now)
             for seq in (23, 24)]
    gatherer = Gatherer(memory)
    ran: list[str] = []
    store._conn.set_trace_callback(ran.append)
    try:
        with memory.reading():
            first = gatherer.gather(question, session=rec, exclude_from_seq=23, now=now)
            read_first = len(ran)
            second = gatherer.gather(question, session=rec, exclude_from_seq=24, now=now)
    finally:
        store._conn.set_trace_callback(None)
    assert [first.texts, second.texts] == [a.texts for a in alone]
    assert any("lantern" in t.text for t in first.texts)
    # the window's first entry, the day's entries counted, and what the day may repeat
    bounds = ("AND seq >= ", "SELECT COUNT(*), MIN(id), MAX(id)", *again)
    assert all(any(b in s for s in ran[:read_first]) for b in bounds), ran[:read_first]
    # Before: each gather read the window's first entry and counted the day's entries,
    # and ranked and counted a day wholly below both bounds again.
    later = ran[read_first:]
    assert not [s for s in later if any(b in s for b in bounds)], later
