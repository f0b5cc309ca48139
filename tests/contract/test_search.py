"""Contract: the message search index — entries, keyword ranking, filters, loading."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memci.memory import get_analyzer
from memci.messages import Message
from memci.store import MessageSearch, SearchDoc, SearchFilter, SessionRecord
from memci.store._search import RARE, RECENT
from memci.text import Analyzer
from tests.contract.conftest import Store

DAY = datetime(2026, 3, 1, tzinfo=UTC)


def stored(store: Store, session: SessionRecord, *turns: tuple[str, str],
           day: datetime = DAY) -> list[Message]:
    """Append ``(role, text)`` turns, an hour apart from ``day``; return them stored."""
    messages = [Message(role, Message.user(text).parts, tokens=1,  # type: ignore[arg-type]
                        created_at=day + timedelta(hours=i))
                for i, (role, text) in enumerate(turns)]
    result: list[Message] = store.append(session, messages)
    return result


def index(search: MessageSearch, session: SessionRecord, messages: Sequence[Message]) -> int:
    """Add an entry per message the way the logic layer does (page = user turns so far)."""
    added = 0
    page = search.before(session.id, messages[0].seq or 0, 0).page if messages else 0
    for message in messages:
        assert message.seq is not None and message.created_at is not None
        page += message.role == "user"
        added += search.add(SearchDoc(session.id, message.seq, message.role, page,
                                      message.created_at.timestamp(), message.content, ""))
    return added


def seqs(found: Sequence[object]) -> list[int]:
    return [c.seq for c in found]  # type: ignore[attr-defined]


def test_a_message_has_one_entry(
    store: Store, search: MessageSearch, session: SessionRecord,
) -> None:
    messages = stored(store, session, ("user", "the lighthouse keeper"), ("assistant", "ok"))
    assert search.version() == 0 and search.count() == 0
    assert index(search, session, messages) == 2
    first = search.version()
    assert index(search, session, messages) == 0  # again: nothing added
    assert search.version() == first and search.count() == 2


def test_keyword_search_ranks_the_better_match_first(
    store: Store, search: MessageSearch, analyzer: Analyzer, session: SessionRecord,
) -> None:
    messages = stored(store, session,
                      ("user", "we talked about the weather"),
                      ("assistant", "the red kayak is in the boathouse"),
                      ("user", "red kayak red kayak: paddle the red kayak to the fjord"),
                      ("assistant", "groceries: milk and bread"),
                      ("user", "我们明天去杭州旅游"))
    index(search, session, messages)
    found = search.keyword(analyzer.query("red kayak paddle"), k=10, where=SearchFilter(),
                           context_weight=0.5)
    assert seqs(found) == [3, 2]
    assert all(c.session_id == session.id for c in found)
    assert seqs(search.keyword(analyzer.query("杭州"), k=10, where=SearchFilter(),
                               context_weight=0.5)) == [5]
    assert search.keyword(analyzer.query("submarine"), k=10, where=SearchFilter(),
                          context_weight=0.5) == []
    assert len(search.keyword(analyzer.query("red kayak"), k=1, where=SearchFilter(),
                              context_weight=0.5)) == 1


def test_filters_apply_before_ranking(
    store: Store, search: MessageSearch, analyzer: Analyzer, session: SessionRecord,
) -> None:
    other = store.ensure_session("t", "other", "v", {})
    mine = stored(store, session, ("user", "kayak trip one"), ("assistant", "kayak noted"),
                  ("user", "kayak trip two"))
    theirs = stored(store, other, ("user", "kayak kayak kayak trip"),
                    day=DAY + timedelta(days=10))
    index(search, session, mine)
    index(search, other, theirs)
    plan = analyzer.query("kayak trip")

    def found(where: SearchFilter) -> list[tuple[int, int]]:
        return [(c.session_id, c.seq) for c in search.keyword(plan, k=10, where=where,
                                                              context_weight=0.5)]

    assert {s for s, _ in found(SearchFilter())} == {session.id, other.id}
    assert {s for s, _ in found(SearchFilter(sessions=[session.id]))} == {session.id}
    assert found(SearchFilter(sessions=[])) == []
    assert found(SearchFilter(roles=["assistant"])) == [(session.id, 2)]
    window = SearchFilter(start=DAY.timestamp(), end=(DAY + timedelta(hours=2)).timestamp())
    assert sorted(found(window)) == [(session.id, 1), (session.id, 2)]
    many = [session.id, *range(10_000, 10_030)]  # more sessions than the index filters inline
    assert {s for s, _ in found(SearchFilter(sessions=many))} == {session.id}


def test_system_messages_have_an_entry_but_are_never_found(
    store: Store, search: MessageSearch, analyzer: Analyzer, session: SessionRecord,
) -> None:
    messages = stored(store, session, ("system", "secret kayak instructions"),
                      ("user", "kayak please"))
    assert index(search, session, messages) == 2
    assert search.count() == 1
    plan = analyzer.query("kayak")
    assert seqs(search.keyword(plan, k=10, where=SearchFilter(), context_weight=0.5)) == [2]
    assert seqs(search.matching(SearchFilter())) == [2]
    assert seqs(search.in_range(SearchFilter(start=0.0, end=DAY.timestamp() + 1e6), 10)) == [2]
    assert search.behind([session.id]) == []  # the system message counts as indexed


def test_in_range_among_and_matching(
    store: Store, search: MessageSearch, session: SessionRecord,
) -> None:
    messages = stored(store, session, ("user", "a"), ("assistant", "b"), ("user", "c"),
                      ("assistant", "d"))
    index(search, session, messages)
    later = SearchFilter(start=(DAY + timedelta(hours=1)).timestamp(),
                         end=(DAY + timedelta(days=1)).timestamp())
    assert seqs(search.in_range(later, 2)) == [2, 3]  # oldest first, at most k
    assert sorted(seqs(search.matching(SearchFilter(roles=["user"])))) == [1, 3]
    docs = {c.seq: c.doc for c in search.matching(SearchFilter())}
    assert sorted(seqs(search.among([docs[1], docs[2], docs[4]],
                                    SearchFilter(roles=["assistant"])))) == [2, 4]
    assert search.among([], SearchFilter()) == []


def test_loaded_hits_carry_the_message_and_its_page(
    store: Store, search: MessageSearch, session: SessionRecord,
) -> None:
    messages = stored(store, session, ("user", "first page"), ("assistant", "reply"),
                      ("user", "second page"))
    index(search, session, messages)
    by_seq = {c.seq: c for c in search.matching(SearchFilter())}
    loaded = search.load([by_seq[3], by_seq[2]])
    message, page = loaded[by_seq[3].doc]
    assert message.content == "second page" and message.session == "contract" and page == 2
    assert loaded[by_seq[2].doc][1] == 1
    assert search.session_name(session.id) == "contract"


def test_what_indexing_reads_back(
    store: Store, search: MessageSearch, session: SessionRecord,
) -> None:
    messages = stored(store, session, ("user", "one"), ("system", "rules"),
                      ("assistant", "two"), ("user", "three"), ("assistant", "four"))
    assert search.behind(None) == [(session.id, 0)]
    assert search.before(session.id, 4, 0).page == 1  # nothing indexed: counted in the log
    index(search, session, messages[:3])
    assert search.behind([session.id]) == [(session.id, 3)]
    assert [m.seq for m in search.unindexed(session.id, 3)] == [4, 5]
    assert search.unindexed(session.id, 3)[0].session == "contract"
    assert search.before(session.id, 4, 0) == (1, 0, [])  # the log's epoch: 0
    assert [m.content for m in search.recent(session.id, 4, 8)] == ["two", "one"]
    assert [m.content for m in search.recent(session.id, 4, 1)] == ["two"]
    # when each was said: indexing stops a message's context at a pause
    assert [m.created_at for m in search.recent(session.id, 4, 8)] == [
        DAY + timedelta(hours=2), DAY]
    # both in one read: the page (indexed before, or counted in the log) and the messages
    page, epoch, recent = search.before(session.id, 4, 8)
    assert (page, epoch, [(m.content, m.created_at) for m in recent]) == (
        1, 0, [(m.content, m.created_at) for m in search.recent(session.id, 4, 8)])
    assert search.before(session.id, 6, 1).page == 2  # seq 5 has no entry yet: counted
    assert search.before(session.id, 1, 8) == (0, 0, [])  # nothing before the first
    index(search, session, messages[3:])
    assert search.before(session.id, 6, 1).page == 2  # read from the entry of seq 5
    assert [m.content for m in search.before(session.id, 6, 1).recent] == ["four"]
    # a deletion grows the epoch (indexing then reads the context again)
    store.eraser.retract(session, [2])
    assert search.before(session.id, 6, 8).epoch == 1
    assert search.behind(None) == []
    backlog = search.embed_backlog(0, 10)
    assert [e.message.content for e in backlog] == ["one", "two", "three", "four"]
    assert [e.message.content for e in search.embed_backlog(backlog[1].doc, 1)] == ["three"]


def test_another_analyzer_gets_the_entries_it_lacks(
    store: Store, search: MessageSearch, session: SessionRecord,
) -> None:
    index(search, session, stored(store, session, ("user", "pelicans fly south"),
                                  ("system", "x"), ("assistant", "ok")))
    assert search.keyword_backlog() == []
    trigram: MessageSearch = store.search(get_analyzer("trigram"))
    backlog = trigram.keyword_backlog()
    assert [(e.session_id, e.message.seq, e.message.content) for e in backlog] == [
        (session.id, 1, "pelicans fly south"), (session.id, 3, "ok")]
    assert [e.message.created_at for e in backlog] == [DAY, DAY + timedelta(hours=2)]
    for entry in backlog:
        trigram.add_keyword(entry.doc, entry.session_id, entry.message.content, "")
    assert trigram.keyword_backlog() == []
    found = trigram.keyword(get_analyzer("trigram").query("pelican"), k=5,
                            where=SearchFilter(), context_weight=0.5)
    assert seqs(found) == [1]


def test_sessions_of_a_tenant_and_user(store: Store, search: MessageSearch) -> None:
    a = store.ensure_session("t", "a", "u1", {})
    b = store.ensure_session("t", "b", "u2", {})
    c = store.ensure_session("t", "c", "u1", {})
    store.ensure_session("other", "d", "u1", {})
    assert search.sessions_of("t") == [a.id, b.id, c.id]
    assert search.sessions_of("t", "u1") == [a.id, c.id]
    assert search.sessions_of("nobody") == []


@pytest.mark.parametrize("context_weight", [0.0, 2.0])
def test_the_context_of_a_message_can_be_found(
    store: Store, search: MessageSearch, analyzer: Analyzer, session: SessionRecord,
    context_weight: float,
) -> None:
    messages = stored(store, session, ("user", "what about the zeppelin?"),
                      ("assistant", "it flies tomorrow"))
    search.add(SearchDoc(session.id, 1, "user", 1, DAY.timestamp(), messages[0].content, ""))
    search.add(SearchDoc(session.id, 2, "assistant", 1, DAY.timestamp(), messages[1].content,
                         messages[0].content))
    found = seqs(search.keyword(analyzer.query("zeppelin"), k=5, where=SearchFilter(),
                                context_weight=context_weight))
    assert sorted(found) == [1, 2]  # the answer is found through what it answers
    if context_weight == 0.0:
        assert found[0] == 1  # the context then adds nothing to the score


def _fill(store: Store, search: MessageSearch, session: SessionRecord, texts: Sequence[str],
          day: datetime = DAY) -> None:
    """Store and index ``texts`` (alternating user and assistant), 400 a transaction."""
    for start in range(0, len(texts), 400):
        chunk = texts[start:start + 400]
        with store.atomic():
            index(search, session, stored(
                store, session, *((("user", "assistant")[i % 2], t) for i, t in enumerate(chunk)),
                day=day))


def test_another_scope_s_writes_never_change_what_a_scope_s_search_finds(
    store: Store, search: MessageSearch, analyzer: Analyzer, reopen: Callable[[], Store],
) -> None:
    # Words in thousands of a scope's entries are ranked among the scope's newest entries,
    # and whether a word is that common is counted in the scope. Writes of another tenant,
    # user or session (unrelated words, or the same words by thousands) change nothing a
    # tenant's, a user's or a session's search finds, filtered or bounded or not; a handle
    # that kept nothing between searches finds the same.
    a1 = store.ensure_session("a", "a1", "u1", {})
    a2 = store.ensure_session("a", "a2", "u1", {})
    a3 = store.ensure_session("a", "a3", "u2", {})
    b1 = store.ensure_session("b", "b1", "v", {})
    places = ("north", "south", "east", "west", "old", "new", "grey", "stone")
    _fill(store, search, a1, [f"deploy the {places[i % 8]} build to the harbor {i}"
                              + (" lighthouse" if i % 900 == 7 else "") for i in range(4_000)])
    _fill(store, search, a2, [f"harbor notes {i}: deploy twice" for i in range(300)])
    _fill(store, search, a3, [f"the harbor of user two {i}" for i in range(300)])
    top = search.version()
    scopes = {"session": [a1.id], "user": [a1.id, a2.id], "tenant": [a1.id, a2.id, a3.id]}
    day1 = (DAY.timestamp(), (DAY + timedelta(hours=900)).timestamp())
    filters = {
        "plain": {}, "below": {"below": top - 500}, "roles": {"roles": ["assistant"]},
        "time": {"start": day1[0], "end": day1[1]},
    }
    queries = ("deploy harbor", "harbor", "deploy harbor lighthouse")

    def found(part: MessageSearch, scope: str) -> dict[tuple[str, str], list[int]]:
        return {(name, q): [c.doc for c in part.keyword(
            analyzer.query(q), k=10, where=SearchFilter(sessions=scopes[scope], **extra),
            context_weight=0.5)] for name, extra in filters.items() for q in queries}

    before = {scope: found(search, scope) for scope in scopes}
    assert all(len(docs) == 10 for results in before.values() for docs in results.values())

    def unchanged(*kept: str) -> None:
        fresh = reopen().search(analyzer)
        for scope in kept:
            assert found(search, scope) == before[scope], scope
            assert found(fresh, scope) == before[scope], scope

    _fill(store, search, b1, [f"unrelated words number {i}" for i in range(2_000)])
    unchanged("session", "user", "tenant")
    _fill(store, search, b1, [f"deploy to the harbor, tenant b {i}" for i in range(4_000)])
    unchanged("session", "user", "tenant")
    _fill(store, search, a3, [f"another user: deploy at the harbor {i}" for i in range(2_000)])
    unchanged("session", "user")
    _fill(store, search, a2, [f"the same user's other session {i}" for i in range(2_000)])
    unchanged("session")


def test_words_common_in_a_scope_rank_by_their_weight_among_its_newest_entries(
    store: Store, search: MessageSearch, analyzer: Analyzer, session: SessionRecord,
) -> None:
    # Words held by more than RARE entries of a scope are ranked among its RECENT newest
    # entries (the window): an entry scores the sum of its words' weights there,
    # ln(1 + n / entries of the window holding it), the newer first at a tie. Indexed in
    # batches whose boundaries are not the window's: the window's oldest entries share a
    # batch with older ones, and one of the few entries holding "saffron" is among them.
    window = RECENT
    older = RARE + 300  # every entry before the window holds every word: all are common
    saffron = {older + 2, older + 15, older + 29, older + 700, older + 1_700}

    def words(i: int) -> list[str]:
        if i <= older:
            return ["amber", "cobalt", "indigo", "saffron"]
        mix = (i * 2_654_435_761) % 1_000
        return [w for w, held in (("amber", mix < 900), ("cobalt", mix % 10 < 6),
                                  ("indigo", mix % 7 < 2), ("saffron", i in saffron)) if held]

    total = older + window
    texts = [" ".join([f"note {i}:", *words(i)]) for i in range(1, total + 1)]
    for start in range(0, total, 333):  # batches of 333: the window starts inside one
        chunk = stored(store, session, *(("user", t) for t in texts[start:start + 333]))
        search.add_many([SearchDoc(session.id, m.seq or 0, "user", 1, DAY.timestamp(),
                                   m.content, "") for m in chunk])
    held = {w: {i for i in range(older + 1, total + 1) if w in words(i)}
            for w in ("amber", "cobalt", "indigo", "saffron")}
    weight = {w: math.log(1 + window / len(docs)) for w, docs in held.items()}
    scored = sorted(range(older + 1, total + 1), key=lambda i: (
        -round(sum(weight[w] for w in words(i)), 9), -i))
    found = search.keyword(analyzer.query("amber cobalt indigo saffron"), k=10,
                           where=SearchFilter(), context_weight=0.5)
    assert seqs(found) == scored[:10]
    assert set(scored[:5]) == saffron  # the oldest of the window's entries among the best
