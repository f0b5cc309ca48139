"""Summarizers: sentence splitting, salience, entry lines, budgets, the LLM path (real server)."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memci.errors import ConfigError, InvalidInputError, LLMHTTPError
from memci.llm import OpenAIChatClient
from memci.messages import ImagePart, Message, TextPart, ToolCallPart
from memci.summarize import (
    ENTRY_WIDTH,
    ExtractiveSummarizer,
    LLMSummarizer,
    Summarizer,
    conversation_language,
    fit_sections,
    fit_tokens,
    handoff,
    page_title,
    split_sentences,
    summarize_entry,
    summarize_page,
    summarize_text,
    water_fill,
)
from memci.text import cjk_share, line_width
from memci.tokens import get_tokenizer
from tests.conftest import shared_data
from tests.fakellm import FakeLLM

TOK = get_tokenizer("estimate")
FAST = {"backoff": 0.001, "max_backoff": 0.005}


@pytest.fixture
def clients(fake: FakeLLM) -> Iterator[list[OpenAIChatClient]]:
    made: list[OpenAIChatClient] = []
    yield made
    for c in made:
        c.close()


@pytest.fixture
def client(fake: FakeLLM, clients: list[OpenAIChatClient]) -> Any:
    def make(server: FakeLLM = fake, **options: Any) -> OpenAIChatClient:
        c = OpenAIChatClient("sum-model", base_url=server.openai_base_url,
                             **{**FAST, **options})
        clients.append(c)
        return c

    return make


def call(name: str, **args: Any) -> ToolCallPart:
    return ToolCallPart("c1", name, json.dumps(args))


# -- sentence splitting ----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("Dr. Smith paid $3.50 for apples, e.g. Fuji. Then he left! Did he? Yes.",
     ["Dr. Smith paid $3.50 for apples, e.g. Fuji.", "Then he left!", "Did he?", "Yes."]),
    ("Open src/memci/x.py and run ./run.sh. The value is 3.14 today. See api.example.com now.",
     ["Open src/memci/x.py and run ./run.sh.", "The value is 3.14 today.",
      "See api.example.com now."]),
    ('He said "stop." Then J. K. Rowling spoke. The U.S. Army is big. It uses v1.2.3.',
     ['He said "stop."', "Then J. K. Rowling spoke.", "The U.S. Army is big.",
      "It uses v1.2.3."]),
    ("Version 15.2. Next one i.e. the last. Meet at 3 p.m. today... or not.",
     ["Version 15.2.", "Next one i.e. the last.", "Meet at 3 p.m. today... or not."]),
    ("1. First item\n2. Second item\nThis line is wrapped in the middle of\na sentence. End.",
     ["1. First item", "2. Second item",
      "This line is wrapped in the middle of a sentence.", "End."]),
])
def test_split_english(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("我们明天去北京。你觉得怎么样？好的！就这样吧；再见……然后呢",
     ["我们明天去北京。", "你觉得怎么样？", "好的！", "就这样吧；", "再见……", "然后呢"]),
    ("他说：“我明天到。”然后就走了。文件在 /tmp/a.py 里，版本是 v3.2，对吗？",
     ["他说：“我明天到。”", "然后就走了。", "文件在 /tmp/a.py 里，版本是 v3.2，对吗？"]),
    ("价格是3.5元。Done.然后继续", ["价格是3.5元。", "Done.", "然后继续"]),
])
def test_split_chinese(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_split_keeps_every_character_of_content() -> None:
    text = "Alpha beta. Gamma? 中文句子。Delta! e.g. x.py and 2.5 — end"
    joined = "".join(split_sentences(text)).replace(" ", "")
    assert joined == text.replace(" ", "")


def test_cjk_share_and_width() -> None:
    assert cjk_share("这个 function 报错了") > 0.6
    assert cjk_share("Talked to 王伟 about the deploy") < 0.4
    assert line_width("abc") == 3 and line_width("中文") == 5


# -- salience and entry lines ----------------------------------------------------------------


def test_entry_keeps_numbers_paths_and_entities() -> None:
    s = ExtractiveSummarizer()
    message = Message.user(
        "Hi there! Hope you are well. Thanks again for yesterday. "
        "The billing job on PostgreSQL 15.2 fails with exit code 137 when it reads "
        "/etc/billing/config.yaml. It was fine before."
    )
    line = s.summarize_entry(message)
    for key in ("137", "/etc/billing/config.yaml", "PostgreSQL"):
        assert key in line
    assert "Hi there" not in line and line_width(line) <= ENTRY_WIDTH


def test_entry_for_a_user_question_in_chinese() -> None:
    line = summarize_entry(Message.user(
        "你好！我们明天下午3点在北京保利剧院见面，地址是东城区东直门南大街14号。你能帮我订两张票吗？"
    ))
    assert "保利剧院" in line and "3点" in line
    assert line_width(line) <= ENTRY_WIDTH and not line.startswith("你好")


def test_entry_for_an_assistant_tool_call() -> None:
    message = Message.assistant(
        "Now let me look for the serializer code:",
        call("bash", command='grep -rn "EnumSerializer" django/db/migrations/'),
    )
    line = summarize_entry(message)
    assert line.endswith('bash(grep -rn "EnumSerializer" django/db/migrations/)')
    assert line.startswith("Look for the serializer code")


def test_entry_for_calls_with_several_and_long_arguments() -> None:
    message = Message.assistant("", ToolCallPart("a", "write_file", json.dumps(
        {"path": "src/app/models.py", "content": "import os\n" * 300})),
        ToolCallPart("b", "run_tests", json.dumps({"paths": ["tests/a.py", "tests/b.py"]})))
    line = summarize_entry(message)
    assert line.startswith("write_file(path=src/app/models.py, content=<301 lines>)")
    assert "run_tests([2 items])" in line and line_width(line) <= ENTRY_WIDTH


@pytest.mark.parametrize(("content", "is_error", "expected"), [
    ("<returncode>1</returncode>\n<output>\nRunning...\nTraceback (most recent call last):\n"
     '  File "manage.py", line 22, in <module>\nKeyError: \'total_cents\'\n</output>',
     False, "exit 1 · 4 lines · KeyError: 'total_cents'"),
    ("<returncode>0</returncode>\n<output>\n./django/db/migrations/serializer.py\n"
     "./django/db/migrations/writer.py\n</output>", False,
     "exit 0 · 2 lines · ./django/db/migrations/serializer.py"),
    ("===== 3 failed, 120 passed in 4.2s =====", False, "===== 3 failed, 120 passed in 4.2s ====="),
    ('{"results": [1, 2], "total": 2}', False, "JSON object {results, total}"),
    ("[1, 2, 3]", False, "JSON list of 3 items"),
    ("<returncode>0</returncode>\n<output>\n</output>", False, "exit 0 · no output"),
    ("permission denied: /root/secret", True, "error · permission denied: /root/secret"),
])
def test_entry_for_a_tool_result(content: str, is_error: bool, expected: str) -> None:
    assert summarize_entry(Message.tool("c1", content, is_error=is_error)) == expected


def test_entry_for_images_and_empty_messages() -> None:
    message = Message("user", (TextPart("What is in this picture?"),
                               ImagePart("https://example.com/cat.png")))
    assert summarize_entry(message) == "What is in this picture? [+1 image]"
    assert summarize_entry(Message.assistant("")) == ""


def test_every_line_fits_the_width_even_for_huge_messages() -> None:
    s = ExtractiveSummarizer()
    huge_en = "word " * 5000 + "The key is /var/lib/data/file_name_that_is_long.csv and 42."
    huge_zh = "这是一个没有标点的很长的句子" * 200
    one_long = "x" * 3000
    for m in (Message.user(huge_en), Message.user(huge_zh), Message.user(one_long),
              Message.tool("c", "y" * 20000), Message.assistant("", call("bash", command=huge_en))):
        line = s.summarize_entry(m)
        assert 0 < line_width(line) <= ENTRY_WIDTH


def test_page_lines_and_title() -> None:
    page = [
        Message.user("Why does the migration 0007_invoice_total fail on staging?"),
        Message.assistant("Checking the log.", call("bash", command="tail -n 50 migrate.log")),
        Message.tool("c1", "<returncode>1</returncode><output>column total_cents does not "
                           "exist</output>"),
        Message.assistant("The column total_cents is missing: run migration 0006 first."),
    ]
    lines = summarize_page(page)
    assert len(lines) == 4 and all(lines)
    assert "0006" in lines[3] and "total_cents" in lines[3]
    title = page_title(page)
    assert title == "Why does the migration 0007_invoice_total fail on staging?"


def test_extractive_is_deterministic_and_fast() -> None:
    s = ExtractiveSummarizer()
    messages = [
        Message.user("I'm deploying the billing service to prod on 2024-03-01. The config "
                     "lives in /etc/billing/config.yaml. Can you check why it fails?"),
        Message.assistant("The migration 0007_invoice_total fails because the column "
                          "total_cents does not exist. Run `manage.py migrate billing 0006` "
                          "first, then retry."),
        Message.user("我们明天下午3点在北京保利剧院见面，地址是东城区东直门南大街14号。你能帮我订票吗？"),
        Message.tool("c", "<returncode>0</returncode><output>" + "line\n" * 200 + "</output>"),
    ]
    first = [s.summarize_entry(m) for m in messages]
    assert [s.summarize_entry(m) for m in messages] == first
    timings = []
    for _ in range(50):
        for m in messages:
            start = time.perf_counter()
            s.summarize_entry(m)
            timings.append(time.perf_counter() - start)
    assert statistics.median(timings) < 0.01  # 10x slack; figures: bench_summaries.py


def test_chinese_segmenters() -> None:
    text = "保利剧院位于北京市东城区东直门南大街14号。剧院常年上演话剧。你知道保利剧院的票价吗？"
    bigram = ExtractiveSummarizer().summarize_entry(Message.user(text))
    assert "保利剧院" in bigram
    with pytest.raises(ConfigError):
        ExtractiveSummarizer(segmenter="words")  # type: ignore[arg-type]
    pytest.importorskip("jieba")
    words = ExtractiveSummarizer(segmenter="jieba").summarize_entry(Message.user(text))
    assert "保利剧院" in words and line_width(words) <= ENTRY_WIDTH


# -- summaries within a budget ---------------------------------------------------------------

NOTES = [
    "We moved the billing database to PostgreSQL 15.2 on 2024-03-01. The old MySQL host "
    "db-old.internal is read-only now. Nobody noticed any downtime.",
    "Alice Chen owns the invoice service. She wants the retry limit at 5 and the timeout at "
    "30 seconds. The config is in /etc/invoice/settings.toml.",
    "The nightly export failed twice with exit code 137 (out of memory). We raised the "
    "memory limit to 4 GiB in deploy/export.yaml. It has passed since.",
    "保利剧院位于北京市东城区东直门南大街14号，常年上演话剧和交响音乐会。票价从180元起。",
]


@pytest.mark.parametrize("budget", [10, 25, 40, 60, 90, 150])
def test_summarize_text_is_within_budget(budget: int) -> None:
    out = summarize_text(NOTES, budget)
    assert out and TOK.count(out) <= budget


def test_summarize_text_keeps_key_content_and_order() -> None:
    out = summarize_text(NOTES, 110)
    for key in ("PostgreSQL 15.2", "2024-03-01", "137", "保利剧院"):
        assert key in out
    lines = out.splitlines()
    assert lines == sorted(lines, key=lambda line: next(
        i for i, note in enumerate(NOTES) if line.split("…")[0][:15] in note))


def test_summarize_text_returns_what_fits_whole() -> None:
    assert summarize_text(["short note.", "another."], 100) == "short note.\nanother."
    assert summarize_text([], 100) == "" and summarize_text(NOTES, 0) == ""


def test_summarize_text_on_a_real_trace_within_budget() -> None:
    trace = json.loads(shared_data("traces", "django__django-11815.traj.json").read_text())
    texts = [str(m.get("content") or "") for m in trace["messages"]]
    s = ExtractiveSummarizer()
    for budget in (50, 200, 800):
        out = s.summarize_text(texts, budget)
        assert 0 < TOK.count(out) <= budget


def test_handoff_within_budget_in_both_languages() -> None:
    english = [
        Message.user("Fix the failing migration on staging; the config is in "
                     "/etc/billing/config.yaml."),
        Message.assistant("Checking.", call("bash", command="python manage.py migrate")),
        Message.tool("c1", "<returncode>1</returncode><output>KeyError: 'total_cents'"
                           "</output>"),
        Message.assistant("The column total_cents is missing; migration 0006 must run first."),
        Message.user("Ok, then also add a test for it."),
    ]
    note = handoff(english, 120)
    assert TOK.count(note) <= 120
    assert note.startswith("Goal:") and "Latest request:" in note and "total_cents" in note
    chinese = [Message.user("帮我订明天晚上保利剧院的两张话剧票。"),
               Message.assistant("好的，明天晚上7点有《茶馆》，票价280元，需要现在下单吗？")]
    note = handoff(chinese, 80)
    assert TOK.count(note) <= 80 and note.startswith("目标:") and "保利剧院" in note


# -- the token budgeter ----------------------------------------------------------------------


def test_water_fill_shares() -> None:
    assert water_fill({"a": 10, "b": 100, "c": 100}, 110) == {"a": 10, "b": 50, "c": 50}
    assert water_fill({"a": 100, "b": 100}, 90, {"a": 2.0}) == {"a": 60, "b": 30}
    assert water_fill({"a": 5}, 100) == {"a": 5}


def test_fit_sections_summarizes_instead_of_dropping() -> None:
    s = ExtractiveSummarizer()
    sections = {"system": "You are a helpful assistant.", "pins": NOTES[1],
                "history": "\n".join(NOTES * 3), "retrieval": NOTES[0] + " " + NOTES[2]}
    out = fit_sections(sections, 120, TOK, s, keep=("system",))
    assert set(out) == set(sections)
    assert sum(TOK.count(t) for t in out.values()) <= 120
    assert out["system"] == sections["system"] and out["pins"] == sections["pins"]
    assert out["history"] and out["history"] != sections["history"]
    assert fit_sections({"a": "short"}, 100, TOK, s) == {"a": "short"}


def test_fit_sections_errors() -> None:
    s = ExtractiveSummarizer()
    with pytest.raises(InvalidInputError, match="kept whole"):
        fit_sections({"system": "word " * 100, "x": "y"}, 10, TOK, s, keep=("system",))
    with pytest.raises(InvalidInputError):
        fit_sections({"a": "b"}, -1, TOK, s)


def test_fit_tokens_cuts_at_a_word() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    cut = fit_tokens(text, 5, TOK)
    assert TOK.count(cut) <= 5 and cut.endswith("…") and text.startswith(cut[:-1])


# -- the LLM summarizer, through a real local server -----------------------------------------


def test_both_summarizers_follow_the_protocol(fake: FakeLLM, client: Any) -> None:
    assert isinstance(ExtractiveSummarizer(), Summarizer)
    assert isinstance(LLMSummarizer(client(fake)), Summarizer)


def test_llm_entry_line_comes_from_the_model(fake: FakeLLM, client: Any) -> None:
    fake.reply("- Summary: User asks why migration 0007 fails on staging.\n(extra line)")
    s = LLMSummarizer(client(fake))
    line = s.summarize_entry(Message.user("Why does migration 0007 fail on staging?"))
    assert line == "User asks why migration 0007 fails on staging."
    body = fake.last.json
    assert body["messages"][0]["role"] == "system"
    assert "Answer in English" in body["messages"][0]["content"]
    assert "ONE line" in body["messages"][1]["content"]
    assert s.calls == 1 and s.fallbacks == 0


def test_llm_page_in_one_call(fake: FakeLLM, client: Any) -> None:
    fake.reply("Title: Staging migration failure\n1. Asks about 0007\n2. Runs the migration")
    page = [Message.user("Why does migration 0007 fail?"),
            Message.assistant("Let me run it.", call("bash", command="manage.py migrate")),
            Message.tool("c1", "<returncode>1</returncode>KeyError: 'x'")]
    title, lines = LLMSummarizer(client(fake)).page(page)
    assert title == "Staging migration failure"
    assert lines[:2] == ["Asks about 0007", "Runs the migration"]
    assert lines[2] == "exit 1 · KeyError: 'x'"  # the model skipped it: extractive
    assert fake.count == 1


def test_llm_summary_is_held_to_the_budget(fake: FakeLLM, client: Any) -> None:
    fake.reply("The billing database moved to PostgreSQL 15.2. " * 30)
    s = LLMSummarizer(client(fake))
    out = s.summarize_text(NOTES, 40)
    assert 0 < TOK.count(out) <= 40 and "PostgreSQL 15.2" in out
    assert "at most 40 tokens" in fake.last.json["messages"][1]["content"]


def test_llm_falls_back_on_server_errors(fake: FakeLLM, client: Any) -> None:
    fake.server_error(500, times=20)
    s = LLMSummarizer(client(fake, max_retries=1))
    message = Message.user("The job fails with exit code 137 on /srv/export.py.")
    assert s.summarize_entry(message) == ExtractiveSummarizer().summarize_entry(message)
    assert TOK.count(s.summarize_text(NOTES, 30)) <= 30
    assert s.handoff([message], 50).startswith("Goal:")
    assert s.fallbacks == 3 and fake.count == 6  # two attempts per call


def test_llm_falls_back_on_an_empty_answer(fake: FakeLLM, client: Any) -> None:
    fake.reply("   ")
    s = LLMSummarizer(client(fake))
    assert s.page_title([Message.user("Deploy the API to eu-west-1 today.")]) == (
        "Deploy the API to eu-west-1 today.")
    assert s.fallbacks == 1


def test_llm_strict_raises(fake: FakeLLM, client: Any) -> None:
    fake.server_error(503, times=5)
    s = LLMSummarizer(client(fake, max_retries=0), strict=True)
    with pytest.raises(LLMHTTPError):
        s.summarize_entry(Message.user("hello"))


def test_llm_asks_in_chinese_for_chinese_content(fake: FakeLLM, client: Any) -> None:
    fake.reply("用户约在保利剧院见面并请求订票。")
    s = LLMSummarizer(client(fake))
    page = [Message.user("我们明天下午3点在北京保利剧院见面，你能帮我订两张票吗？"),
            Message.tool("c1", "HTTP 200 OK: tickets API returned 2 results")]
    assert conversation_language(page) == "zh"
    assert s.page_title(page) == "用户约在保利剧院见面并请求订票。"
    system, prompt = (m["content"] for m in fake.last.json["messages"])
    assert "请用中文回答" in system and prompt.startswith("为下面这页对话写一个")
    fake.reply("ok")
    s.page_title([Message.user("Book two tickets for tomorrow, please.")])
    assert "Answer in English" in fake.last.json["messages"][0]["content"]


def test_llm_input_is_bounded(fake: FakeLLM, client: Any) -> None:
    s = LLMSummarizer(client(fake), max_input_tokens=300)
    s.summarize_text(["A long note about the export job and its memory. " * 400], 50)
    assert TOK.count(fake.last.json["messages"][1]["content"]) < 450
    talk = [Message.user("The task: fix the export job."), *(
        Message.assistant(f"Step {n}: checked part {n} of the export. " * 20) for n in range(60))]
    s.handoff(talk, 100)
    prompt = fake.last.json["messages"][1]["content"]
    assert TOK.count(prompt) < 1000 and "The task" in prompt and "Step 59" in prompt
    assert "messages left out" in prompt


# -- invariants on arbitrary text ------------------------------------------------------------

_PIECES = st.sampled_from([
    *"abc XYZ 123 ./_-!?。！？；，中文字句“”\n\t…",
    "e.g. ", "3.14", "Dr. ", "src/a.py", "Hello world. ", "我们明天去北京。",
])
_TEXT = st.lists(_PIECES, max_size=120).map("".join)
_TEXTS = st.lists(_TEXT, min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(texts=_TEXTS, budget=st.integers(min_value=0, max_value=80))
def test_any_summary_fits_its_budget(texts: list[str], budget: int) -> None:
    out = summarize_text(texts, budget)
    assert TOK.count(out) <= budget


@settings(max_examples=60, deadline=None)
@given(text=_TEXT)
def test_any_entry_fits_the_line_and_splitting_loses_nothing(text: str) -> None:
    assert line_width(summarize_entry(Message.user(text))) <= ENTRY_WIDTH
    assert "".join(split_sentences(text)).replace(" ", "") == "".join(text.split())
