"""The form a question's answer takes, and whether a text holds one (answer-type matching).

A question asks a kind of fact: when something opens ("几点开门", "what time"), where it
is ("在什么位置", "where"), what it costs ("票价", "how much"), how long it takes ("多久",
"how long"), how to call ("电话", "phone number"), what is near it ("附近"). The message
that answers it often says it in other words than the question's — "开放时间是8:30-17:00"
answers "几点开门", "无需门票" answers "票价是多少" — so its words match the question
through its context (the turn that named the place) more than its own text, and messages
that only repeat the question's words rank above it. :func:`answer_kinds` reads what a
question asks; :func:`holds_answer` says whether a text holds an answer of that kind (a
clock time or a date, an address, a price, a duration, a phone number, a place the
question does not name). The search fuses the keyword matches that hold one as one more
list (see :data:`ANSWER_WEIGHT`): it reorders what the words found, it never adds a
message the words did not find.

Rules only, English and Chinese; each pattern is compiled the first time it is used, and
scans at most :data:`_TEXT_LIMIT` characters of a text; what an answer holds is matched by
RE2, in time linear in the text (see :func:`_holding`).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from memci._lazy import LazyPattern

__all__ = ["ANSWER_WEIGHT", "answer_kinds", "holds_answer"]

#: The RRF weight of the keyword matches that hold the kind of answer a question asks
#: (the keyword list's is 1): at 0.5 it lifts them among the matches without putting a
#: text that only holds a number above the ones that match the question's words
#: (bench/bench_retrieval.py, docs/retrieval.md "What a question asks").
ANSWER_WEIGHT = 0.5

_TEXT_LIMIT = 4_000  # characters of a text searched for an answer (a long output's start)

_MONTHS = ("jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
           "|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
_CN_NUMBER = "[一二两三四五六七八九十半几]"

# What a question asks, by kind: the words that ask it.
_ASKS: dict[str, LazyPattern] = {
    "time": LazyPattern(r"\bwhen\b|\bwhat time\b|\bwhat date\b|\bwhich (?:day|date|month|year)\b"
                        r"|\bopening hours\b|\bhow long ha(?:ve|s)\b|\bsince when\b"
                        r"|几点|什么时候|什么时间|何时|哪天|哪一天|几号|几月|开放时间|营业时间|开门|关门|多久了",
                        re.IGNORECASE),
    "place": LazyPattern(r"\bwhere\b|\baddress\b|\blocated\b"
                         r"|在哪|哪里|哪儿|什么位置|什么地方|地址|位置|地点|怎么走",
                         re.IGNORECASE),
    "price": LazyPattern(r"\bhow much\b|\bcosts?\b|\bprices?\b|\bfees?\b"
                         r"|多少钱|票价|价格|门票|费用|价钱|收费|要钱",
                         re.IGNORECASE),
    "duration": LazyPattern(r"\bhow long\b|多久|多长时间|时长|几个小时", re.IGNORECASE),
    "phone": LazyPattern(r"\bphone\b|\bcontact\b|电话|联系方式|手机号|号码",
                         re.IGNORECASE),
    "near": LazyPattern(r"\bwhat(?:'s| is) (?:near|close to)\b|\bnearby\b"
                        r"|附近|周边|周围|边上|旁边", re.IGNORECASE),
}

# What an answer of each kind holds, written as Python's re reads it (RE2 runs it: see
# _holding), with whether it ignores case.
HOLDS: dict[str, tuple[str, bool]] = {
    "time": (
        r"\d{1,2}[:：]\d{2}|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.)|\d{1,2}[点時时]"
        r"|\d{1,2}月|\d{1,2}[日号]|\d{4}年|\b(?:" + _MONTHS + r")\.?\s+\d{1,2}\b"
        r"|\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:" + _MONTHS + r")\b|\b(?:19|20)\d{2}\b"
        r"|周[一二三四五六日末]|星期[一二三四五六日天]|全天|24小时", True),
    "place": (
        r"\d+号|[路街巷道]\d|[省市区县镇乡村][^，。,.\s]{0,12}?[路街巷道里]|[省市][^，。,.\s]{1,8}?[区县]"
        r"|\b\d+\s+[A-Z][a-z]+\s+(?:Street|St|Road|Rd|Avenue|Ave|Boulevard|Blvd|Lane|Ln)\b"
        r"|\b(?:in|at|near|from)\s+(?:the\s+)?[A-Z][a-z]+", False),
    "price": (
        r"\d+(?:\.\d+)?\s*(?:元|块|角|yuan|rmb|dollars?|bucks|euros?|pounds?)"
        r"|[$¥€£]\s*\d|免费|免票|无需门票|不需要门票|不要门票|不收费|不用买票|\bfree\b", True),
    "duration": (
        r"\d+(?:\.\d+)?\s*(?:-\s*\d+\s*)?(?:个?小时|分钟|天|周|个月|年)"
        r"|" + _CN_NUMBER + r"+个?(?:小时|钟头|天|周|星期|月)|半天|一整天"
        r"|\b\d+(?:\.\d+)?\s*(?:-\s*\d+\s*)?(?:hours?|hrs?|minutes?|mins?|days?|weeks?"
        r"|months?|years?)\b|\b(?:an?|one|two|three|four|five|six|seven|eight|nine|ten|a few"
        r"|several|half an?|a couple of) (?:hour|day|week|month|year)s?\b", True),
    # A number not inside a longer one: its neighbours taken, not looked at (RE2 has no
    # lookaround), which holds the same texts.
    "phone": (r"\d{3,4}-\d{7,8}|(?:^|\D)1\d{10}(?:\D|$)|\(?\d{3}\)?[ -]\d{3}-\d{4}"
              r"|(?:^|\D)\d{8}(?:\D|$)", False),
}

# What is near a place is another place: a name ending the way a place's does (恭王府,
# 南锣鼓巷, 清华大学; "next to the Louvre"), its ending and at most two characters before
# it kept, so that the place asked about, said in the question, is not one.
_PLACE_NAME = LazyPattern(
    r"([\u4e00-\u9fff]{0,2}(?:公园|广场|大学|胡同|故居|中心|世界|[府园馆街巷宫寺庙坛堂殿阁亭湖海山塔桥楼陵峡谷潭瀑岛洞坡城]))"
    r"|\b(?:near|next to|close to|beside)\s+(?:the\s+)?([A-Z][a-z]+)")


#: Python's ``\d``, ``\D`` and ``\s`` in a str pattern, as RE2 writes them (RE2's own are
#: ASCII's): any Unicode digit (２０２４年 is a year), any Unicode space (U+3000 too).
_UNICODE = {r"\d": r"\p{Nd}", r"\D": r"\P{Nd}", r"\s": r"\s\x{0b}\x{1c}-\x{1f}\x{85}\p{Z}"}


def _unicode_classes(source: str) -> str:
    """``source`` for RE2, its digits and spaces matching what Python's ``re`` matches."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\":
            escape = source[i:i + 2]
            made = _UNICODE.get(escape, escape)
            out.append(made if in_class or escape != r"\s" else f"[{made}]")
            i += 2
            continue
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


@functools.cache
def _holding(kind: str) -> Any:
    """The RE2 pattern of what an answer of ``kind`` holds, compiled on first use.

    RE2 reads a text once, in time linear in its length, whatever the pattern: 30-40x
    Python's ``re`` on these alternations, which tries each at every character (a
    question asking "when" over 240 tool outputs took 25 ms a build). Its word boundary
    is ASCII's: a Chinese character next to a Latin word or a number bounds it, and a
    digit that is not ASCII's starts no word ("３ hours" holds no duration, "３小时" does).
    """
    # RE2 (a C++ extension) loads with the first question that asks a kind of answer.
    import re2

    source, ignore_case = HOLDS[kind]
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.never_capture = True  # whether it holds one, not where
    return re2.compile(_unicode_classes(source).encode("utf-8"), options)


def answer_kinds(question: str) -> tuple[str, ...]:
    """The kinds of answer ``question`` asks for (none: it asks no such fact)."""
    return tuple(kind for kind, asks in _ASKS.items() if asks.search(question))


def holds_answer(kinds: tuple[str, ...], text: str, question: str = "") -> bool:
    """Whether ``text`` holds an answer of one of ``kinds`` to ``question``.

    ``near`` (what is near a place): a place name the question does not say.
    """
    head = text[:_TEXT_LIMIT]
    data = b""  # the head as RE2 reads it, encoded once for every kind
    for kind in kinds:
        if kind == "near":
            if any("".join(name) not in question for name in _PLACE_NAME.findall(head)):
                return True
            continue
        data = data or head.encode("utf-8", "surrogatepass")
        if _holding(kind).search(data) is not None:
            return True
    return False
