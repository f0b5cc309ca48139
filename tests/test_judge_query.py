"""The eligibility judge and the query analyzer: rules in English and Chinese, LLM paths."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from memci.llm import OpenAIChatClient
from memci.memory import time_hint
from memci.memory._judge import EligibilityJudge, Judgement, judge
from memci.memory._query import SOURCES, QueryAnalyzer, analyze_query, asks
from memci.messages import Message
from tests.fakellm import FakeLLM

NOW = datetime(2026, 11, 21, 15, 30, tzinfo=timezone(timedelta(hours=8)))


@pytest.fixture
def client(fake: FakeLLM) -> Iterator[OpenAIChatClient]:
    with OpenAIChatClient("judge-model", base_url=fake.base_url, max_retries=0) as c:
        yield c


# -- the judge, by rules ---------------------------------------------------------------------


@pytest.mark.parametrize(("text", "kind"), [
    ("My name is Ann and I live in Berlin.", "user_fact"),
    ("I'm a data scientist at Acme, based in Lisbon.", "user_fact"),
    ("I have two kids and a dog.", "user_fact"),
    ("I prefer tabs over spaces.", "preference"),
    ("I really hate long meetings.", "preference"),
    ("Let's go with PostgreSQL for the billing service.", "decision"),
    ("We decided to ship on Friday.", "decision"),
    ("Don't use emojis in replies.", "constraint"),
    ("The report must not exceed 2 pages.", "constraint"),
    ("Actually, the deadline is March 3, not March 1.", "correction"),
    ("No, I meant the staging server.", "correction"),
    ("我叫王伟，我是一名前端工程师。", "user_fact"),
    ("我在上海工作，我的老家是成都。", "user_fact"),
    ("我喜欢用 Vim 写代码。", "preference"),
    ("我们决定就用 Redis 做缓存。", "decision"),
    ("不要在回复里用表情符号。", "constraint"),
    ("报告必须控制在两页以内。", "constraint"),
    ("不对，会议是周三不是周二。", "correction"),
    ("更正一下：预算是五万元。", "correction"),
])
def test_rules_find_what_to_remember(text: str, kind: str) -> None:
    verdict = judge(text)
    assert verdict.eligible and verdict.kind == kind and verdict.source == "rules"
    assert verdict.facts and verdict.reason


@pytest.mark.parametrize("text", [
    "Can you run the tests?",
    "Thanks!",
    "I'm going to look at the file now.",
    "I don't know.",
    "Do you like jazz?",
    "What is the capital of France?",
    "The build passed.",
    "你能帮我看看这个报错吗？",
    "好的，谢谢！",
    "今天天气不错。",
    "你喜欢什么音乐？",
    "",
])
def test_rules_leave_out_questions_and_small_talk(text: str) -> None:
    verdict = judge(text)
    assert not verdict.eligible and verdict.kind == "none" and verdict.facts == []


def test_judgement_records_every_fact_and_the_strongest_kind() -> None:
    verdict = judge("Hi! I'm a nurse. Actually, I prefer night shifts. Can you help me plan?")
    assert verdict.kind == "correction"
    assert verdict.facts == ["Actually, I prefer night shifts.", "I'm a nurse."]
    assert "correction" in verdict.reason and "user fact" in verdict.reason


def test_judging_a_page_uses_what_the_user_said() -> None:
    page = [Message.user("Can you compare Redis and Memcached for our cache?"),
            Message.assistant("Redis has persistence. We decided on Redis last week, "
                              "so let's go with Redis."),
            Message.user("Sounds good.")]
    verdict = EligibilityJudge().judge_messages(page)
    assert verdict.eligible and verdict.kind == "decision"
    chat = [Message.user("What's 2 + 2?"), Message.assistant("I prefer to say 4.")]
    assert not EligibilityJudge().judge_messages(chat).eligible


# -- the judge, through a model --------------------------------------------------------------


def test_model_verdict(fake: FakeLLM, client: OpenAIChatClient) -> None:
    fake.reply("Sure:\n```json\n" + json.dumps({
        "eligible": True, "kind": "preference", "reason": "a lasting taste",
        "facts": ["User likes green tea"]}) + "\n```")
    verdict = EligibilityJudge(client).judge("I always drink green tea in the morning.")
    assert verdict == Judgement(True, "preference", "a lasting taste",
                                ["User likes green tea"], "llm")
    assert "long-term memory" in fake.last.json["messages"][0]["content"]


def test_model_prompt_is_chinese_for_chinese(fake: FakeLLM, client: OpenAIChatClient) -> None:
    fake.reply('{"eligible": false, "kind": "none", "reason": "寒暄", "facts": []}')
    verdict = EligibilityJudge(client).judge("你好呀，今天怎么样？")
    assert verdict == Judgement(False, "none", "寒暄", [], "llm")
    assert fake.last.json["messages"][0]["content"].startswith("判断下面的文字")


@pytest.mark.parametrize("failure", ["status", "prose", "bad_json"])
def test_model_failures_fall_back_to_rules(
    fake: FakeLLM, client: OpenAIChatClient, failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    if failure == "status":
        fake.server_error(500)
    elif failure == "prose":
        fake.reply("I think this should be remembered.")
    else:
        fake.reply('{"eligible": "maybe"}')
    with caplog.at_level(logging.WARNING, logger="memci.memory"):
        verdict = EligibilityJudge(client).judge("我们决定就用 Redis 做缓存。")
    assert verdict.eligible and verdict.kind == "decision" and verdict.source == "rules"
    assert "model failed" in verdict.reason
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "judge by model failed, using rules"]


# -- the query analyzer ----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "sources"), [
    ("What did you say earlier about the deploy?", ("recent", "history")),
    ("Do you remember my cat's name?", ("recent", "history")),
    ("Why does parse_config() raise KeyError in config.py?", ("recent", "code")),
    ('Traceback (most recent call last):\n  File "app.py", line 3', ("recent", "code")),
    ("Is the EventBus class thread safe?", ("recent", "code")),
    ("According to the README, how do I install it?", ("recent", "documents")),
    ("What does the user manual say about refunds?", ("recent", "documents")),
    ("Last time you showed me a function for retries; is it in the docs?",
     ("recent", "history", "documents", "code")),
    ("hello there", ("recent",)),
    ("上次你说的那个方案是什么？", ("recent", "history")),
    ("我记得你之前提过一个办法", ("recent", "history")),
    ("这个函数报错了怎么办", ("recent", "code")),
    ("根据文档，怎么配置？", ("recent", "documents")),
    ("今天天气怎么样", ("recent", "history")),  # "today" is a time hint
    ("你好", ("recent",)),
])
def test_rules_pick_sources(text: str, sources: tuple[str, ...]) -> None:
    plan = analyze_query(text, now=NOW)
    assert plan.sources == sources and plan.source == "rules"
    assert set(plan.reasons) == set(sources)
    assert all(plan.consults(s) == (s in sources) for s in SOURCES)


@pytest.mark.parametrize(("text", "start", "end"), [
    ("What did we discuss yesterday?", "2026-11-20", "2026-11-21"),
    ("Summarize last week", "2026-11-09", "2026-11-16"),
    ("what happened on 2024-03-01", "2024-03-01", "2024-03-02"),
    ("我们上周聊了什么", "2026-11-09", "2026-11-16"),
    ("昨天的会议说了什么", "2026-11-20", "2026-11-21"),
    ("3月1日的会议记录", "2026-03-01", "2026-03-02"),
])
def test_time_hints(text: str, start: str, end: str) -> None:
    plan = analyze_query(text, now=NOW)
    assert plan.time_range is not None
    assert plan.time_range.start.date().isoformat() == start
    assert plan.time_range.end.date().isoformat() == end
    assert plan.time_range.start.tzinfo == NOW.tzinfo
    assert plan.consults("history")


# One row per kind of time expression (NOW is Saturday 2026-11-21): the days it covers.
@pytest.mark.parametrize(("text", "days"), [
    ("the 2024-03-01 notes", ("2024-03-01", "2024-03-02")),
    ("2025年3月1日的会", ("2025-03-01", "2025-03-02")),
    ("三月五号", ("2026-03-05", "2026-03-06")),
    ("2025年二月", ("2025-02-01", "2025-03-01")),
    ("3月份的账单", ("2026-03-01", "2026-04-01")),
    ("March 3rd, 2024", ("2024-03-03", "2024-03-04")),
    ("the 1st of March", ("2026-03-01", "2026-03-02")),
    ("on 11/2", ("2026-11-02", "2026-11-03")),
    ("back in September", ("2026-09-01", "2026-10-01")),
    ("day before yesterday", ("2026-11-19", "2026-11-20")),
    ("大前天", ("2026-11-18", "2026-11-19")),
    ("last night", ("2026-11-20", "2026-11-21")),
    ("this morning", ("2026-11-21", "2026-11-22")),
    ("two weeks ago", ("2026-11-04", "2026-11-11")),
    ("三个月前", ("2026-08-01", "2026-09-01")),
    ("2 years ago", ("2024-01-01", "2025-01-01")),
    ("the past 3 days", ("2026-11-18", "2026-11-22")),
    ("最近两周", ("2026-11-07", "2026-11-22")),
    ("last Tuesday", ("2026-11-17", "2026-11-18")),
    ("this friday", ("2026-11-20", "2026-11-21")),
    ("上周一", ("2026-11-09", "2026-11-10")),
    ("上上周五", ("2026-11-06", "2026-11-07")),
    ("周日", ("2026-11-15", "2026-11-16")),
    ("last weekend", ("2026-11-14", "2026-11-16")),
    ("this weekend", ("2026-11-21", "2026-11-23")),
    ("during 2019", ("2019-01-01", "2020-01-01")),
    ("2020年的事", ("2020-01-01", "2021-01-01")),
    ("last week", ("2026-11-09", "2026-11-16")),
    ("这个星期", ("2026-11-16", "2026-11-23")),
    ("last month", ("2026-10-01", "2026-11-01")),
    ("本月", ("2026-11-01", "2026-12-01")),
    ("去年", ("2025-01-01", "2026-01-01")),
    ("this year", ("2026-01-01", "2027-01-01")),
    # no time: a weekday's short name alone, a span off the calendar, a day that is not
    ("sun", None), ("5000 years ago", None), ("2月30日", None), ("hello", None),
])
def test_every_kind_of_time_expression(text: str, days: tuple[str, str] | None) -> None:
    found = time_hint(text, now=NOW)
    assert (None if found is None else
            (found.start.date().isoformat(), found.end.date().isoformat())) == days


def test_model_plan_keeps_recent_and_rule_time(fake: FakeLLM, client: OpenAIChatClient) -> None:
    fake.reply(json.dumps({"sources": ["code", "documents"],
                           "reasons": {"code": "asks about a function",
                                       "documents": "mentions the spec"}}))
    plan = QueryAnalyzer(client).analyze("Yesterday's spec for retry_with_backoff?", now=NOW)
    assert plan.source == "llm"
    assert plan.sources == ("recent", "history", "documents", "code")
    assert plan.reasons["code"] == "asks about a function"
    assert plan.time_range is not None and plan.time_range.label.lower() == "yesterday"


def test_model_plan_falls_back_to_rules(
    fake: FakeLLM, client: OpenAIChatClient, caplog: pytest.LogCaptureFixture
) -> None:
    fake.server_error(503)
    with caplog.at_level(logging.WARNING, logger="memci.memory"):
        plan = QueryAnalyzer(client).analyze("上次你说的那个方案是什么？", now=NOW)
    assert [r.name for r in caplog.records] == ["memci.memory"]
    assert caplog.records[0].getMessage().startswith("query analysis by model failed")
    assert plan.source == "rules" and plan.sources == ("recent", "history")
    fake.reply("not json at all")
    plan = QueryAnalyzer(client).analyze("hello", now=NOW)
    assert plan.source == "rules" and plan.sources == ("recent",)


@pytest.mark.parametrize(("text", "asked"), [
    ("When did Caroline go to the LGBTQ support group?", True),
    ("Remind me what we decided about the lease.", True),
    ("Thanks. Tell me about the trip again.", True),
    ("那家餐厅的门票多少钱？", True),
    ("你还记得那家餐厅吗", True),
    ("告诉我上次的价格", True),
    ("Thanks, Maria! It means a lot.", False),
    ("Moments like these remind me why I do it.", False),
    ("我今天去了西湖，很开心。", False),
])
def test_asks_tells_a_question_or_a_request_from_a_remark(text: str, asked: bool) -> None:
    # A build shows memory for a page that asks; a remark's words need none.
    assert asks(text) is asked
