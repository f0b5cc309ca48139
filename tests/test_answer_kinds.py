"""Answer-type matching: a question's kind of fact lifts the matches that hold one."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memci.memory import MessageIndex
from memci.memory._answer import HOLDS, answer_kinds, holds_answer
from memci.messages import Message
from memci.store import SQLiteStore


@pytest.mark.parametrize(("question", "kinds"), [
    ("颐和园几点开门？", ("time",)),
    ("国子监的开放时间是什么时候？", ("time",)),
    ("When does the pharmacy open on Sundays?", ("time",)),
    ("圆明园在什么位置？", ("place",)),
    ("Where did she move from?", ("place",)),
    ("去故宫要买票吗，票价多少？", ("price",)),
    ("How much did the bike cost?", ("price",)),
    ("逛景山公园需要多长时间？", ("duration",)),
    ("How long is the drive to the lake?", ("duration",)),
    ("How long have I been vegetarian?", ("time", "duration")),
    ("怎么打电话联系恭王府？", ("phone",)),
    ("What's the hotel's phone number?", ("phone",)),
    ("北大红楼附近有什么好玩的？", ("near",)),
    ("What's near the hotel?", ("near",)),
    ("What did Melanie paint last week?", ()),
    ("你喜欢什么样的音乐？", ()),
])
def test_what_a_question_asks(question: str, kinds: tuple[str, ...]) -> None:
    assert answer_kinds(question) == kinds


@pytest.mark.parametrize(("kind", "text"), [
    ("time", "开放时间是4月1日-10月31日6:30-18:00。"),
    ("time", "It opens at 9 am, and closes at 5:30."),
    ("time", "We met on March 3 and again in 2019."),
    ("place", "地址是北京市海淀区清华西路28号。"),
    ("place", "可以，地址在北京市海淀区北京大学中北部。"),  # its city and district, no street
    ("place", "它在河北省承德县的山里。"),
    ("place", "It's at 221 Baker Street, by the station."),
    ("place", "She moved here from Sweden four years ago."),
    ("price", "无需门票。"),
    ("price", "门票40元一个人，学生半价。"),
    ("price", "It was $120 with the helmet."),
    ("duration", "建议游玩时长是3小时 - 6小时。"),
    ("duration", "大概要两个小时。"),
    ("duration", "It takes 45 minutes by car."),
    ("duration", "I've been vegetarian for about two years now."),
    ("phone", "电话是010-83288149。"),
    ("phone", "Call them at (415) 555-0132."),
])
def test_what_holds_an_answer(kind: str, text: str) -> None:
    assert holds_answer((kind,), text)
    others = tuple(k for k in ("time", "place", "price", "duration", "phone") if k != kind)
    assert holds_answer((*others, kind), text)


@pytest.mark.parametrize(("text", "holds"), [
    ("有恭王府，天安门广场。", True),
    ("我知道它边上就是北京大学，可以去参观一下。", True),
    ("It's right next to the Louvre.", True),
    ("你去看过北大红楼吗？", False),  # the place asked about is not what is near it
    ("北大红楼附近好玩的地方很多。", False),  # nor are the question's words
])
def test_what_is_near_a_place_is_another_place(text: str, holds: bool) -> None:
    assert holds_answer(("near",), text, "北大红楼附近有什么好玩的？") is holds


@pytest.mark.parametrize(("kind", "text"), [
    ("time", "这里的早上人很多，开门的时候排队很长。"),
    ("time", "I can't remember when it opens, sorry."),
    ("place", "我不知道它在哪里，你查一下吧。"),
    ("place", "这个城市的变化很大，你去看看吧。"),
    ("price", "票价我忘了，应该不贵。"),
    ("duration", "玩多久都可以，看你的兴趣。"),
    ("phone", "电话我没有记下来。"),
])
def test_text_without_the_fact_holds_no_answer(kind: str, text: str) -> None:
    assert not holds_answer((kind,), text)


#: Texts whose digits and spaces are not ASCII's, beside plain ones: RE2 runs the patterns
#: (its own \d and \s are ASCII's) and must hold what Python's re holds reading them.
_WIDE = [
    "我们２０２４年去的，３月５号到。", "开放时间　８：３０－１７：００", "门票５０元，学生半价",
    "电话：１３８１２３４５６７８", "大概３\u3000个小时", "It opens at 9\u00a0am on Mondays.",
    "It takes 45\u2009minutes by car.", "at 221\u3000Baker Street", "price: 12\x0byuan",
    "call 010-83288149 now", "no number here, nor a place", "x13812345678y", "113812345678",
    "It was $ 120 with the helmet.", "We met in\u00a0Lisbon.",
]


@pytest.mark.parametrize("kind", ["time", "place", "price", "duration", "phone"])
def test_an_answer_is_held_as_pythons_re_reads_the_pattern(kind: str) -> None:
    source, ignore_case = HOLDS[kind]
    python = re.compile(source, re.IGNORECASE if ignore_case else 0)
    held = [text for text in _WIDE if python.search(text)]
    assert held  # each kind holds some of the texts: the comparison sees both answers
    assert [text for text in _WIDE if holds_answer((kind,), text)] == held


def test_a_chinese_character_bounds_a_word_beside_it() -> None:
    # RE2's word boundary is ASCII's: Python's re sees none between 午 and 3, nor
    # before a digit that is not ASCII's.
    assert holds_answer(("time",), "下午3pm见")
    assert holds_answer(("place",), "她住在from Lisbon那边")
    assert not holds_answer(("duration",), "٣ hours by train")


def _session(store: SQLiteStore, turns: list[str]) -> tuple[MessageIndex, int]:
    record = store.ensure_session("t", "trip", "u", {})
    index = MessageIndex(store, embedder=None)
    messages = [Message(("user", "assistant")[i % 2], Message.user(t).parts, tokens=1)
                for i, t in enumerate(turns)]
    index.index(record, store.append(record, messages))
    return index, record.id


# The answer follows the turn that named the place: its own words match only the hours
# asked about through that turn (its context); other turns repeat the question's words.
_CHAT = [
    "你了解颐和园吗？", "颐和园是清朝的皇家园林，有昆明湖和万寿山。",
    "颐和园几点开门呀？", "开放时间是6:30-18:00，旺季人比较多。",
    "听说颐和园开门以后人特别多。", "是的，颐和园的长廊和佛香阁最有名，开门就有人排队。",
    "颐和园开门前能进去吗？", "不能，颐和园开门以后才可以进。",
    "颐和园早上开门的时候冷吗？", "颐和园开门那会儿有点凉，多穿点。",
    "我上次去颐和园，开门就进去了。", "颐和园开门早，适合早起的人。",
]


# The places near 北大红楼 follow the turn that asked; other turns repeat the question's
# words ("附近", "好玩") about the place itself.
_NEAR = [
    "你去看过北大红楼吗？", "看过，北大红楼附近的路我很熟，那里好玩。",
    "北大红楼附近好玩吗？", "北大红楼附近挺好玩的，人不多。",
    "北大红楼附近有好玩的地方吗？", "有恭王府，天安门广场。",
    "北大红楼附近好停车吗？", "北大红楼附近不好停车。",
]


@pytest.mark.parametrize(("turns", "question", "answer"), [
    (_CHAT, "颐和园几点开门？", "开放时间是6:30-18:00，旺季人比较多。"),
    (_NEAR, "北大红楼附近有什么好玩的？", "有恭王府，天安门广场。"),
])
def test_the_match_that_holds_the_fact_asked_comes_first(
    store: SQLiteStore, turns: list[str], question: str, answer: str,
) -> None:
    index, sid = _session(store, turns)
    hits = index.search(question, k=2, sessions=[sid])
    assert answer in [h.text for h in hits]


def test_a_question_asking_no_such_fact_ranks_as_its_words_do(store: SQLiteStore) -> None:
    index, sid = _session(store, _CHAT)
    lists = index.ranked_lists("颐和园的长廊有名吗？", depth=20, sessions=[sid])
    asked = index.ranked_lists("颐和园几点开门？", depth=20, sessions=[sid])
    assert "answer" not in lists
    # What the answer list holds is among the word matches, never more.
    assert asked["answer"] and {c.doc for c in asked["answer"]} <= {
        c.doc for c in asked["keyword"]}


def test_a_text_with_a_time_but_none_of_the_words_is_not_found(store: SQLiteStore) -> None:
    index, sid = _session(store, ["今天的会议改到15:30了。", "好的，我记下了。", *_CHAT])
    hits = index.search("颐和园几点开门？", k=20, sessions=[sid])
    assert all("15:30" not in h.text for h in hits)


def test_the_messages_read_for_the_answer_list_are_not_read_again(tmp_path: Path) -> None:
    # The hits are among the matches read for the answer list: a search that asks a kind
    # of fact runs the statements of one that does not (its hits read once, not twice).
    ran: dict[float, list[str]] = {}
    for weight in (0.0, 0.5):
        store = SQLiteStore(tmp_path / f"{weight}.db")
        try:
            index, sid = _session(store, _CHAT)
            index = MessageIndex(store, embedder=None, answer_weight=weight)
            index.search("颐和园", k=1, sessions=[sid])  # terms counted, caches warm
            ran[weight] = []
            store._conn.set_trace_callback(ran[weight].append)  # type: ignore[attr-defined]
            hits = index.search("颐和园几点开门？", k=5, sessions=[sid])
            store._conn.set_trace_callback(None)  # type: ignore[attr-defined]
            assert len(hits) == 5
        finally:
            store.close()
    assert len(ran[0.5]) == len(ran[0.0]), (ran[0.0], ran[0.5])


# Three days ago: turns repeating the question's words about other places. Yesterday: the
# place talked about, and how long a visit takes, in none of the question's words.
_EARLIER = ["颐和园的游玩时长是多少？", "颐和园很大，游玩时长看你走多少地方。",
            "景山公园的游玩时长呢？", "景山公园的游玩时长不好说，看你爬不爬山。",
            "天坛的游玩时长长吗？", "天坛的游玩时长因人而异。"] * 3
_YESTERDAY = ["你知道北海公园吗？", "知道，北海公园有白塔和九龙壁。",
              "那里要买门票吗？", "要，门票10元。", "逛完要多久？", "可以玩1小时 - 2小时。"]


@pytest.mark.parametrize("question", ["昨天说的那个地方，游玩时长是什么来着？",
                                      "昨天聊的景点要玩多久？"])
def test_what_was_said_in_the_time_asked_about_holding_the_fact_asked_is_found(
    store: SQLiteStore, question: str,
) -> None:
    record = store.ensure_session("t", "trip", "u", {})
    index = MessageIndex(store, embedder=None)
    now = datetime(2026, 5, 20, 12, tzinfo=UTC)
    messages = [Message(("user", "assistant")[i % 2], Message.user(t).parts, tokens=1,
                        created_at=now - timedelta(days=ago, minutes=60 - i))
                for ago, turns in ((3, _EARLIER), (1, _YESTERDAY)) for i, t in enumerate(turns)]
    index.index(record, store.append(record, messages))
    hits = index.search(question, k=3, sessions=[record.id], now=now)
    assert "可以玩1小时 - 2小时。" in [h.text for h in hits]
    # Without a time, a turn holding a duration in none of the question's words is no match.
    plain = index.search("景点的游玩时长是什么？", k=20, sessions=[record.id], now=now)
    assert plain and "可以玩1小时 - 2小时。" not in [h.text for h in plain]
