"""Every shape ``memci replay`` reads, from a small hand-written file of that shape.

``tests/trace_samples/FORMAT--VARIANT.EXT`` must be detected as FORMAT, give a paired
transcript that memci stores as it is, and replay through the command; a format without a
sample fails. The tests after the sweep check what each kind of file turns into.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memci.cli import main
from memci.messages import coerce
from memci.traces import FORMAT_NAMES, Trace, read_trace

SAMPLES = Path(__file__).resolve().parent / "trace_samples"
FILES = sorted(p for p in SAMPLES.iterdir() if "--" in p.name)


def _format_of(path: Path) -> str:
    return path.name.split("--", 1)[0]


def _roles(trace: Trace) -> list[str]:
    return [m["role"] for m in trace.messages]


def _assert_paired(trace: Trace) -> None:
    """Every result answers an earlier open call of the transcript; ids are unique."""
    open_calls: set[str] = set()
    seen: set[str] = set()
    for message in trace.messages:
        for call in message.get("tool_calls") or []:
            assert call["id"] not in seen
            seen.add(call["id"])
            open_calls.add(call["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, message
            open_calls.discard(message["tool_call_id"])


def _replay(path: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["replay", str(path), "--json", *args])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _sample(name: str) -> Path:
    path = SAMPLES / name
    assert path.is_file(), path
    return path


def test_every_format_has_a_sample() -> None:
    assert {_format_of(p) for p in FILES} == set(FORMAT_NAMES)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_a_sample_is_detected_and_replays(path: Path) -> None:
    trace = read_trace(path)
    assert trace.format == _format_of(path)
    assert len(trace.origins) == len(trace.messages)
    _assert_paired(trace)
    for message in trace.messages:
        coerce(message)  # memci stores what the reader gives, never refusing it
    assert all(m["content"] or m.get("tool_calls") or m["role"] == "tool"
               for m in trace.messages)
    data = _replay(path)
    assert data["format"] == trace.format and data["messages"] == len(trace.messages)
    assert data["totals"]["requests"] == sum(
        1 for i, m in enumerate(trace.messages) if i and m["role"] == "assistant")


# -- OpenHands ---------------------------------------------------------------------------


def test_openhands_actions_before_function_calling_are_tool_calls() -> None:
    trace = read_trace(_sample("openhands--output-v0.jsonl"))
    assert _roles(trace) == ["user", "assistant", "tool", "assistant", "tool", "assistant",
                             "tool", "assistant"]
    calls = [m["tool_calls"][0]["function"] for m in trace.messages if m.get("tool_calls")]
    assert [c["name"] for c in calls] == ["run", "run_ipython", "edit"]
    assert json.loads(calls[0]["arguments"]) == {"command": "pytest -q", "keep_prompt": True}
    assert json.loads(calls[1]["arguments"])["code"] == "print(open('calc.py').read())"
    assert trace.messages[1]["content"] == "First, the failure."
    assert trace.messages[2]["content"] == "FAILED test_add - assert 3 == 4"
    assert "return a + b + 1" in trace.messages[4]["content"]
    assert trace.messages[-1]["content"] == "test_add passes now."
    # no action is an empty message: what the agent ran is in every request after it
    assert all(m["content"] or m.get("tool_calls") for m in trace.messages)


def test_openhands_oldest_pairs_pair_their_observation() -> None:
    trace = read_trace(_sample("openhands--output-v0-pairs.jsonl"))
    assert _roles(trace) == ["user", "assistant", "tool", "assistant"]
    assert trace.messages[1]["tool_calls"][0]["function"]["name"] == "run"
    assert trace.messages[2]["content"] == "README.md\nsetup.py"
    assert trace.messages[3]["content"] == "Two files: README.md and setup.py."


def test_openhands_sdk_events() -> None:
    trace = read_trace(_sample("openhands--output-sdk.jsonl"))
    assert _roles(trace) == ["system", "user", "assistant", "tool", "assistant", "tool",
                             "tool", "assistant", "tool"]
    assert trace.messages[0]["content"].startswith("You are OpenHands agent")
    assert [t["function"]["name"] for t in trace.tools] == ["terminal", "file_editor",
                                                            "finish"]
    assert "<REPOSITORY>" in trace.messages[1]["content"]  # what the agent's context added
    both = trace.messages[4]  # two calls of one model response: one assistant message
    assert [c["id"] for c in both["tool_calls"]] == ["toolu_v2", "toolu_v3"]
    assert both["content"] == "Fix it and check."
    assert json.loads(both["tool_calls"][0]["function"]["arguments"])["new_str"] == "Hello"
    timed_out = trace.messages[6]
    assert timed_out["tool_call_id"] == "toolu_v3" and timed_out.get("is_error")
    assert "timed out" in timed_out["content"]
    notes = " ".join(trace.notes)
    assert "ConversationStateUpdateEvent" in notes and "Condensation" in notes
    assert "parameter schemas" in notes
    data = _replay(_sample("openhands--output-sdk.jsonl"))
    assert data["tools_tokens"] > 0


# -- chat datasets -----------------------------------------------------------------------


def test_msc_sessions_in_order_speaker_1_as_the_user() -> None:
    trace = read_trace(_sample("msc--session.jsonl"))
    assert trace.items == 2
    assert _roles(trace) == ["user", "assistant"] * 4
    assert trace.messages[0]["content"] == "Hi! I just got back from a hike."
    assert trace.messages[4]["content"] == "How did the sourdough turn out?"
    assert any("persona" in n for n in trace.notes)
    second = read_trace(_sample("msc--session.jsonl"), item=2)
    assert [m["content"] for m in second.messages][-1] == "Thanks, how was practice?"


def test_kdconv_dialogues_one_a_conversation() -> None:
    trace = read_trace(_sample("kdconv--dialogues.json"))
    assert trace.items == 2
    assert _roles(trace) == ["user", "assistant", "user", "assistant"]
    assert trace.messages[1]["content"] == "去过，西湖在杭州，景色很美。"


def test_messages_nested_under_any_key() -> None:
    lmsys = read_trace(_sample("openai--nested-conversation.jsonl"), item=1)
    assert lmsys.items == 2 and _roles(lmsys) == ["user", "assistant"] * 2
    deep = read_trace(_sample("openai--nested-deep.json"))
    assert [m["content"] for m in deep.messages][-1] == "Tomorrow before noon."
    anthropic = read_trace(_sample("anthropic--nested.json"))
    assert anthropic.messages[1]["tool_calls"][0]["function"]["name"] == "edit"


# -- questions with labelled evidence ----------------------------------------------------


def test_locomo_questions_are_asked_with_their_evidence() -> None:
    trace = read_trace(_sample("locomo--conversation.json"))
    assert [q.text for q in trace.questions] == [
        "What did Mara make first in her pottery class?", "Who is Mara's pottery teacher?",
        "When did Mara start pottery?"]
    first, teacher, started = trace.questions
    assert first.evidence == (("D1:3", "A lopsided mug, look. [shares a photo: a photo of "
                                        "a blue mug on a table]"),)
    assert [o for o, _ in teacher.evidence] == ["D2:2", "D2:3"]  # "D2:2; D2:3" in one string
    assert [o for o, _ in started.evidence] == ["D1:1"]  # D9:9 is no turn of the file
    for q in trace.questions:
        assert trace.messages[q.message] == {**trace.messages[q.message], "role": "user",
                                             "content": q.text}
        assert trace.messages[q.message + 1]["role"] == "assistant"
    assert any("category 5" in n for n in trace.notes)
    samples = read_trace(_sample("locomo--samples.json"), item=2)
    assert [q.evidence for q in samples.questions] == [(("D1:1", "My cat is called Miso."),)]


def test_longmemeval_question_with_has_answer_turns() -> None:
    trace = read_trace(_sample("longmemeval--items.json"))
    (question,) = trace.questions
    assert question.text == "What breed is my dog?"
    assert question.evidence == (("haystack session 2 turn 1", "My border collie Pip needs "
                                  "more exercise, any ideas?"),)
    assert question.message == len(trace.messages) - 2
    other = read_trace(_sample("longmemeval--items.json"), item=2)
    assert other.questions[0].evidence[0][1] == "How about a lentil curry?"
