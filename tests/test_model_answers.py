"""Answers of real models, in the forms they write, read by every upkeep call of memci.

The issue: with a model that answers a plain sentence, every page-summary job failed
("the page summary has no numbered lines"), so no model summary ever reached a request.
Each test here scripts a real fake OpenAI-compatible server on 127.0.0.1
(tests/fakellm.py) and goes through memci's own client.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import memci
from memci.errors import LLMResponseError
from memci.llm import OpenAIChatClient
from memci.memory._judge import EligibilityJudge
from memci.memory._query import QueryAnalyzer
from memci.messages import Message
from memci.summarize import LLMSummarizer

from .fakellm import FakeLLM, RecordedRequest

PAGE = [Message.user("When does the harbour museum open on Sundays?"),
        Message.assistant("It opens at nine and closes at five; tickets cost 12 euros.")]

# A model's page summary in the forms real models write; the lines each must give.
FORMS = {
    "prose": ("The user asked when the museum opens on Sundays. The assistant said nine "
              "to five, 12 euros.", "page",
              ["The user asked when the museum opens on Sundays.",
               "The assistant said nine to five, 12 euros."]),
    "bullets": ("- Sunday opening hours asked\n- Nine to five, tickets 12 euros\n"
                "- Nothing else was discussed", "page",
                ["Sunday opening hours asked; Nine to five, tickets 12 euros",
                 "Nothing else was discussed"]),
    "numbered": ("Title: Museum hours\n1. Asks Sunday hours\n2. Nine to five, 12 euros",
                 "entries", ["Asks Sunday hours", "Nine to five, 12 euros"]),
    "fenced": ("Here is the summary:\n```markdown\n## Museum hours\n- **user**: asks the "
               "Sunday hours\n- **assistant**: nine to five\n```\nLet me know if you need "
               "more.", "entries", ["asks the Sunday hours", "nine to five"]),
    "chinese": ("好的，以下是摘要：\n用户询问博物馆周日的开放时间。"
                "助手回答九点到五点，门票12欧元。",
                "page", ["用户询问博物馆周日的开放时间。", "助手回答九点到五点，门票12欧元。"]),
    "thinking": ("<think>The user wants hours.</think>\n[1] user: asks the Sunday hours\n"
                 "[2] assistant: nine to five", "entries",
                 ["asks the Sunday hours", "nine to five"]),
    "one line": ("Sunday hours of the harbour museum: nine to five.", "page",
                 ["Sunday hours of the harbour museum: nine to five."]),
}
FAILS = {
    "refusal": "I'm sorry, but I can't help with that.",
    "chinese refusal": "抱歉，我无法完成这个请求。",
    "error": "Error: the context is too long for this model.",
    "empty": "",
    "only a preamble": "Sure! Here is the summary:",
}


@pytest.fixture
def client(fake: FakeLLM) -> Iterator[OpenAIChatClient]:
    with OpenAIChatClient("m", base_url=fake.openai_base_url, max_retries=0) as c:
        yield c


@pytest.mark.parametrize("form", FORMS)
def test_a_page_summary_in_any_form_is_used(fake: FakeLLM, client: OpenAIChatClient,
                                            form: str) -> None:
    answer, kind, lines = FORMS[form]
    fake.reply(answer)
    title, got, got_kind = LLMSummarizer(client, strict=True).page_summary(PAGE)
    assert (got, got_kind) == (lines, kind)
    assert title  # the model's, or the extractive one when it wrote none
    assert fake.count == 1


@pytest.mark.parametrize("form", FAILS)
def test_an_empty_or_refused_page_summary_fails(fake: FakeLLM, client: OpenAIChatClient,
                                                form: str) -> None:
    fake.reply(FAILS[form])
    with pytest.raises(LLMResponseError):
        LLMSummarizer(client, strict=True).page_summary(PAGE)
    fake.reply(FAILS[form])
    s = LLMSummarizer(client)  # not strict: the extractive summary answers
    assert s.summarize_page(PAGE)[0].startswith("When does the harbour museum open")
    assert s.fallbacks == 1


@pytest.mark.parametrize(("answer", "expected"), [
    ("Here's a title:\n\n**Harbour museum hours**", "Harbour museum hours"),
    ("```\nHarbour museum hours\n```", "Harbour museum hours"),
    ("<think>short</think>Title: Harbour museum hours", "Harbour museum hours"),
    ("好的，以下是标题：\n港口博物馆开放时间", "港口博物馆开放时间"),
    ("1. **Title:** Harbour museum hours", "Harbour museum hours"),
])
def test_titles_and_entry_lines_leave_the_wrapping(fake: FakeLLM, client: OpenAIChatClient,
                                                   answer: str, expected: str) -> None:
    fake.reply(answer).reply(answer)
    s = LLMSummarizer(client, strict=True)
    assert s.page_title(PAGE) == expected
    assert s.summarize_entry(PAGE[0]) == expected


@pytest.mark.parametrize("method", ["text", "handoff"])
def test_texts_and_handoffs_leave_the_wrapping_and_refuse_refusals(
        fake: FakeLLM, client: OpenAIChatClient, method: str) -> None:
    notes = ["The billing database moved to PostgreSQL 15.2 on March 3. " * 20]
    talk = [*PAGE, Message.user("Also: the billing database moved to PostgreSQL 15.2. " * 20)]
    s = LLMSummarizer(client, strict=True)

    def ask() -> str:
        return s.summarize_text(notes, 60) if method == "text" else s.handoff(talk, 60)

    fake.reply("Sure! Here's the summary:\n\n```\nBilling DB is PostgreSQL 15.2.\n```\n\n"
               "I hope this helps!")
    assert ask() == "Billing DB is PostgreSQL 15.2."
    fake.reply("I cannot help with that request.")
    with pytest.raises(LLMResponseError, match="refused"):
        ask()


@pytest.mark.parametrize("answer", [
    "The following files changed:\n- billing/db.py\n- billing/models.py",
    "以下是修改的文件：\n- billing/db.py\n- billing/models.py",
])
def test_content_that_opens_like_a_preamble_is_kept(fake: FakeLLM, client: OpenAIChatClient,
                                                    answer: str) -> None:
    talk = [*PAGE, Message.user("Which files changed in billing? " * 30)]
    fake.reply(answer)
    assert LLMSummarizer(client, strict=True).handoff(talk, 60) == answer


@pytest.mark.parametrize("answer", [
    'Verdict:\n```json\n{"eligible": true, "kind": "preference", "facts": ["tabs"]}\n```\n'
    "Note: {tabs} matter.",
    "{'eligible': True, 'kind': 'preference', 'facts': ['tabs']}",
    '{"eligible": "yes", "kind": "preference", "facts": ["tabs"]}',
    '<think>{"draft": 1}</think>{"eligible": true, "kind": "preference", "facts": ["tabs"]}',
])
def test_the_judge_reads_json_as_models_write_it(fake: FakeLLM, client: OpenAIChatClient,
                                                 answer: str) -> None:
    fake.reply(answer)
    verdict = EligibilityJudge(client).judge("I prefer tabs over spaces.")
    assert (verdict.source, verdict.eligible, verdict.kind) == ("llm", True, "preference")


@pytest.mark.parametrize("answer", [
    'Here you go: {"sources": ["code"], "reasons": {"code": "names a function"}} '
    "(and {nothing} else)",
    '```json\n{"sources": "history, code", "reasons": {}}\n```',
])
def test_the_query_analyzer_reads_json_as_models_write_it(
        fake: FakeLLM, client: OpenAIChatClient, answer: str) -> None:
    fake.reply(answer)
    plan = QueryAnalyzer(client).analyze("Where is parse_header defined?")
    assert plan.source == "llm" and "code" in plan.sources


# -- through the engine: what reaches the contents page --------------------------------------


def _form_of(request: RecordedRequest) -> str:
    """The form a page's prompt asks the fake model to answer in (named in the chat)."""
    found = re.search(r"answer-form=(\w[\w ]*?)\.", request.last_user_text or "")
    return found.group(1) if found else "numbered"


def _marker(form: str) -> str:
    return f"M{list(FORMS).index(form)}X"


def _answer(request: RecordedRequest) -> str:
    """The scripted form, its text marked so the contents page shows whose lines it has."""
    form = _form_of(request)
    if form in FAILS:
        return FAILS[form]
    return FORMS[form][0].replace("Sunday", f"Sunday {_marker(form)}").replace(
        "周日", f"周日{_marker(form)}")


def _contents(ctx: memci.Context) -> str:
    return next((m.content for m in ctx.messages if m.content.startswith("## Contents")), "")


def _entries(contents: str) -> dict[int, str]:
    """Each listed page's block of the contents page, by page number."""
    return {int(found.group(1)): block for block in contents.split("\n\n")
            if (found := re.match(r"\[Page (\d+)\]", block))}


def test_model_summaries_in_any_form_reach_the_contents_page(tmp_path: Path) -> None:
    forms = [*FORMS, *FAILS]
    with FakeLLM(responder=_answer) as fake:
        client = OpenAIChatClient("m", base_url=fake.openai_base_url, max_retries=0)
        with client, memci.Engine.open(tmp_path / "m.db", llm=client, workers=2) as eng:
            s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False,
                            contents_entry_lines=2)
            for form in forms:  # page n answers in forms[n - 1]
                s.add({"role": "user", "content": f"answer-form={form}. When does the "
                       "harbour museum open on Sundays? " + "Tell me the details. " * 40})
                s.build(budget=6000)
                s.add({"role": "assistant", "content": "It opens at nine. " * 40})
            for turn in range(10):
                s.add({"role": "user", "content": f"Filler question {turn}. " * 40})
                s.build(budget=6000)
                s.add({"role": "assistant", "content": f"Filler answer {turn}. " * 30})
            first = s.build(budget=6000)
            stand_ins = _entries(_contents(first))
            assert set(range(1, len(forms) + 1)) <= set(stand_ins)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (
                    fake.count < len(forms) or s.stats().jobs_pending > s.stats().jobs_failed):
                time.sleep(0.05)
            events = []
            for turn in range(8):  # short turns at a larger budget: no archive event
                s.add({"role": "user", "content": f"Next point {turn}."})
                s.add({"role": "assistant", "content": f"Noted {turn}."})
                ctx = s.build(budget=6000)
                events += ctx.stats.events
            entries = _entries(_contents(ctx))
            stats = s.stats()
    assert not events  # no archive event brought the model's lines: the policy did
    for n, form in enumerate(forms, start=1):
        if form in FORMS:
            assert _marker(form) in entries[n], (form, entries[n])
        else:
            assert entries[n] == stand_ins[n], form  # the extractive lines stay
    assert stats.jobs_failed == len(FAILS)
    assert stats.jobs_last_error is not None
    assert re.search(r"refused|nothing usable", stats.jobs_last_error)
