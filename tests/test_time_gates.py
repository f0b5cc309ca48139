"""Each kind of time expression is searched only in texts holding what its matches hold.

A row of ``memci.memory._time._ROWS`` names strings (its ``needs``) of which every match of
its pattern holds one; a text holding none is not searched with it, so its pattern is not
compiled until a text could match. These tests check the needs against what the patterns
match over many real and made-up texts, so a wrong need (a text the pattern would match
and the gate skips) fails here, not silently in a search.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable, Iterator

from memci.memory._time import _ANY_DIGIT, _ROWS, _folded, _may_match, _Row

from .conftest import shared_data

# What people say about time, in the forms the rows read (and some they do not).
PHRASES = [
    "what did I say yesterday", "昨天聊了什么", "上周的会议记录", "what happened last week",
    "3月1日去了哪里", "三月五号", "what did I do on March 1st?", "the dinner on 2025-12-24",
    "last Tuesday", "上周二", "in January", "上个月", "today", "what book did I read in the "
    "past month?", "over the past week", "the weekend before last", "the week before last",
    "the month before last", "what did we do last summer?", "in the winter of 2024",
    "this spring", "in early February", "mid-January 2026", "late February",
    "the day before yesterday", "前天", "大前天", "last night", "昨晚", "this morning",
    "tonight", "今早", "3 days ago", "a couple of weeks ago", "两个月前", "三天之前",
    "the past 3 days", "last two weeks", "最近三天", "过去两周", "近一个月", "on Friday",
    "this Thu", "last sat", "星期天", "礼拜三", "这个星期五", "last weekend", "上个周末",
    "this weekend", "周末", "in 2019", "2021年", "last year", "去年", "this year", "今年",
    "this month", "本月", "这个月", "previous month", "this week", "本周", "这周",
    "上一周", "a week ago", "12/25", "8 May, 2023", "May 8th, 2023", "the 3rd of June",
    "since Sept 2020", "during Oct", "end of the month of March", "beginning of Dec",
    "２０２４年３月５日", "３月", "THE DAY BEFORE YESTERDAY", "LAST FALL", "Last Fall of 2022",
    "IN AUGUST", "ſeptember 3", "frıday", "on the weekend", "at the weekend",
]


def _variants(text: str) -> Iterator[str]:
    yield text
    yield text.upper()
    yield text.title()
    yield f"well, {text}, right?"


def _conversation_texts() -> Iterator[str]:
    for name in ("26.json", "30.json", "41.json"):
        chat = json.loads(shared_data("locomo", name).read_text(encoding="utf-8"))
        chat = chat.get("conversation", chat)
        for key, value in chat.items():
            if key.endswith("date_time"):
                yield str(value)
            elif key.startswith("session_") and isinstance(value, list):
                yield from (str(turn.get("text", "")) for turn in value)
    dialogues = json.loads(shared_data("zh", "kdconv_travel_test.json").read_text(
        encoding="utf-8"))
    for dialogue in dialogues:
        yield from (str(m["message"]) for m in dialogue["messages"])


def missed(rows: Iterable[_Row], texts: Iterable[str]) -> list[tuple[str, str]]:
    """(pattern, matched text) of every match that holds none of its row's needs."""
    rows = list(rows)
    out = []
    for text in texts:
        for row in rows:
            for match in row.pattern.finditer(text):
                said = match.group(0)
                digits = _ANY_DIGIT.search(said) is not None
                if not _may_match(row.needs, _folded(said), digits):
                    out.append((row.pattern.pattern, said))
    return out


def test_every_match_of_a_phrase_holds_what_its_row_needs() -> None:
    texts = [v for p in PHRASES for v in _variants(p)]
    assert sum(1 for t in texts for r in _ROWS if r.pattern.search(t)) > len(PHRASES)
    assert missed(_ROWS, texts) == []


def test_every_match_in_real_conversations_holds_what_its_row_needs() -> None:
    texts = list(_conversation_texts())
    assert len(texts) > 4000
    assert missed(_ROWS, texts) == []


def test_a_row_that_needs_the_wrong_thing_is_reported() -> None:
    yesterday = next(r for r in _ROWS if r.pattern.search("yesterday"))
    wrong = yesterday._replace(needs=("tomorrow",))
    assert missed([wrong], ["what did we say YESTERDAY?"]) == [
        (yesterday.pattern.pattern, "YESTERDAY")]
    digits = next(r for r in _ROWS if r.pattern.search("2025-12-24"))
    assert missed([digits], ["on 2025-12-24"]) == []
    assert missed([digits._replace(needs=("-",))], ["on ２０２５.１２.２４"]) != []


def _compiled_after(question: str) -> int:
    code = ("import sys; from memci.memory._time import time_hint, _ROWS;"
            "time_hint(sys.argv[1]);"
            "print(sum(r.pattern._compiled is not None for r in _ROWS))")
    done = subprocess.run([sys.executable, "-c", code, question], capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


def test_a_question_naming_no_time_compiles_no_time_pattern() -> None:
    assert _compiled_after("where does the parser read the config twice?") == 0
    assert _compiled_after("这个景点的门票多少钱？") == 0
    assert _compiled_after("what did we fix last week?") > 0
    assert _compiled_after("上周聊了什么？") > 0
