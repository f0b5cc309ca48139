"""Example tests for the message codecs: reading, writing, wire form and errors."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

import memci
from memci.errors import (
    InvalidInputError,
    InvalidMessageError,
    InvalidTextError,
    InvalidTimestampError,
    InvalidToolArgumentsError,
    MemciError,
    MessageTooLargeError,
    UnknownRoleError,
)
from memci.messages import (
    ANTHROPIC_OPENER,
    MISSING_RESULT,
    NO_METADATA,
    ImagePart,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    coerce,
    dumps_parts,
    from_anthropic,
    from_openai,
    from_wire,
    loads_parts,
    parse_timestamp,
    to_anthropic,
    to_openai,
    to_openai_message,
    to_wire,
    validate,
)

PNG_B64 = "iVBORw0KGgo="
PNG_URI = f"data:image/png;base64,{PNG_B64}"


def one(obj: object) -> Message:
    messages = coerce(obj)
    assert len(messages) == 1
    return messages[0]


def parallel_conversation() -> list[Message]:
    """A user asks, the assistant makes three calls at once, three tool answers."""
    calls = [
        ToolCallPart("call_1", "weather", '{"city": "Paris"}'),
        ToolCallPart("call_2", "weather", '{"city": "東京"}'),
        ToolCallPart("call_3", "time", "{}"),
    ]
    return [
        Message.system("You are terse."),
        Message.user("Weather in Paris and Tokyo, and the time?"),
        Message.assistant("Checking.", *calls),
        Message.tool("call_1", "12°C rain"),
        Message.tool("call_2", "20°C 晴れ"),
        Message.tool("call_3", "timeout", is_error=True),
        Message.assistant("Paris 12°C, Tokyo 20°C; the clock did not answer."),
    ]


# -- reading OpenAI ----------------------------------------------------------------------


class TestReadOpenAI:
    def test_system_and_developer(self) -> None:
        assert one({"role": "system", "content": "be kind"}) == Message.system("be kind")
        assert one({"role": "developer", "content": "be kind"}) == Message.system("be kind")

    def test_system_content_parts(self) -> None:
        m = one({"role": "system", "content": [{"type": "text", "text": "a"},
                                               {"type": "text", "text": "b"}]})
        assert m.parts == (TextPart("a"), TextPart("b"))
        assert m.content == "a\n\nb"

    def test_user_string(self) -> None:
        m = from_openai({"role": "user", "content": "hello", "name": "ann"})
        assert m == Message.user("hello", name="ann")

    def test_user_text_and_image_parts(self) -> None:
        m = one({
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "https://x.test/a.png",
                                                    "detail": "low"}},
                {"type": "image_url", "image_url": {"url": PNG_URI}},
            ],
        })
        assert m.parts == (
            TextPart("what is this?"),
            ImagePart("https://x.test/a.png", None, "low"),
            ImagePart(PNG_URI, "image/png"),
        )

    def test_assistant_text(self) -> None:
        assert one({"role": "assistant", "content": "hi"}) == Message.assistant("hi")

    def test_assistant_tool_calls_with_null_content(self) -> None:
        m = one({
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "f", "arguments": '{"a": 1}'}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": ""}},
            ],
        })
        assert m.parts == (ToolCallPart("c1", "f", '{"a": 1}'), ToolCallPart("c2", "g", "{}"))
        assert m.content == ""

    def test_assistant_text_and_tool_call(self) -> None:
        m = one({"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        assert m == Message.assistant("Let me look.", ToolCallPart("c1", "f", "{}"))

    def test_tool_message(self) -> None:
        m = one({"role": "tool", "tool_call_id": "c1", "content": "42"})
        assert m == Message.tool("c1", "42")
        assert m.tool_result == ToolResultPart("c1", "42")

    def test_tool_message_text_parts(self) -> None:
        m = one({"role": "tool", "tool_call_id": "c1",
                 "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
        assert m.content == "a\nb"

    def test_refusal(self) -> None:
        assert one({"role": "assistant", "content": None, "refusal": "I can't."}) == (
            Message.assistant("I can't.")
        )
        m = one({"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]})
        assert m == Message.assistant("No.")

    def test_empty_text_is_left_out(self) -> None:
        m = one({"role": "user", "content": [{"type": "text", "text": ""},
                                             {"type": "text", "text": "x"}]})
        assert m.parts == (TextPart("x"),)

    def test_bytes_content_is_decoded(self) -> None:
        assert one({"role": "user", "content": "héllo".encode()}) == Message.user("héllo")


# -- reading Anthropic -------------------------------------------------------------------


class TestReadAnthropic:
    def test_user_string_and_blocks(self) -> None:
        assert from_anthropic({"role": "user", "content": "hi"}) == [Message.user("hi")]
        [m] = from_anthropic({"role": "user", "content": [
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": PNG_B64}},
            {"type": "image", "source": {"type": "url", "url": "https://x.test/b.jpg"}},
        ]})
        assert m.parts == (
            TextPart("look"),
            ImagePart(PNG_URI, "image/png"),
            ImagePart("https://x.test/b.jpg"),
        )

    def test_assistant_text_and_tool_use(self) -> None:
        [m] = from_anthropic({"role": "assistant", "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather",
             "input": {"city": "北京", "days": 2}},
        ]})
        assert m.role == "assistant"
        assert m.parts[0] == TextPart("Checking.")
        call = m.tool_calls[0]
        assert (call.id, call.name) == ("toolu_1", "weather")
        assert json.loads(call.arguments) == {"city": "北京", "days": 2}
        assert "北京" in call.arguments  # not \\u-escaped

    def test_tool_results_then_text(self) -> None:
        messages = from_anthropic({"role": "user", "metadata": {"src": "t"}, "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
            {"type": "tool_result", "tool_use_id": "t2",
             "content": [{"type": "text", "text": "two"}, {"type": "text", "text": "lines"}],
             "is_error": True},
            {"type": "text", "text": "thanks, now summarize"},
        ]})
        assert [m.without_identity() for m in messages] == [
            Message("tool", (ToolResultPart("t1", "one"),), metadata={"src": "t"}),
            Message("tool", (ToolResultPart("t2", "two\nlines", True),), metadata={"src": "t"}),
            Message("user", (TextPart("thanks, now summarize"),), metadata={"src": "t"}),
        ]

    def test_only_tool_results_gives_only_tool_messages(self) -> None:
        messages = from_anthropic({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1"}]})
        assert messages == [Message.tool("t1", "")]

    def test_thinking_is_kept_aside_in_metadata(self) -> None:
        thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
        [m] = from_anthropic({"role": "assistant", "content": [thinking,
                                                               {"type": "text", "text": "42"}]})
        assert m.parts == (TextPart("42"),)
        assert m.metadata["anthropic_blocks"] == [thinking]
        assert "thinking" not in json.dumps(to_anthropic([Message.user("q"), m]))

    def test_server_tool_blocks_are_kept_aside(self) -> None:
        blocks = [
            {"type": "server_tool_use", "id": "srv_1", "name": "web_search",
             "input": {"query": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": []},
            {"type": "text", "text": "found it"},
        ]
        [m] = from_anthropic({"role": "assistant", "content": blocks})
        assert m.parts == (TextPart("found it"),)
        assert m.metadata["anthropic_blocks"] == blocks[:2]


# -- writing OpenAI ----------------------------------------------------------------------


class TestWriteOpenAI:
    def test_each_role(self) -> None:
        assert to_openai_message(Message.system("s")) == {"role": "system", "content": "s"}
        assert to_openai_message(Message.user("u", name="ann")) == {
            "role": "user", "content": "u", "name": "ann"}
        assert to_openai_message(Message.assistant("a")) == {"role": "assistant", "content": "a"}
        assert to_openai_message(Message.tool("c", "r", is_error=True)) == {
            "role": "tool", "tool_call_id": "c", "content": "r"}

    def test_user_parts(self) -> None:
        m = Message("user", (TextPart("see"), ImagePart("https://x.test/a.png", None, "high")))
        assert to_openai_message(m) == {"role": "user", "content": [
            {"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "high"}},
        ]}

    def test_assistant_calls_only_has_null_content(self) -> None:
        m = Message.assistant("", ToolCallPart("c1", "f", '{"a":1}'))
        assert to_openai_message(m) == {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}]}

    def test_parallel_tool_calls(self) -> None:
        out = to_openai(parallel_conversation())
        assert [m["role"] for m in out] == [
            "system", "user", "assistant", "tool", "tool", "tool", "assistant"]
        assert [c["id"] for c in out[2]["tool_calls"]] == ["call_1", "call_2", "call_3"]
        assert out[2]["content"] == "Checking."
        assert [m["tool_call_id"] for m in out[3:6]] == ["call_1", "call_2", "call_3"]
        assert out[5]["content"] == "timeout"

    def test_orphan_result_becomes_user_text_after_the_run(self) -> None:
        out = to_openai([
            Message.user("q"),
            Message.assistant("", ToolCallPart("a", "f"), ToolCallPart("b", "f")),
            Message.tool("a", "ra"),
            Message.tool("zz", "lost", is_error=True),
            Message.tool("b", "rb"),
        ])
        assert out[2:] == [
            {"role": "tool", "tool_call_id": "a", "content": "ra"},
            {"role": "tool", "tool_call_id": "b", "content": "rb"},
            {"role": "user", "content": "[error from tool call zz]\nlost"},
        ]

    def test_unanswered_call_gets_a_stand_in_when_the_talk_moves_on(self) -> None:
        out = to_openai([Message.user("q"),
                         Message.assistant("", ToolCallPart("a", "f")),
                         Message.user("never mind")])
        assert out[2] == {"role": "tool", "tool_call_id": "a", "content": MISSING_RESULT}
        assert out[3] == {"role": "user", "content": "never mind"}

    def test_call_in_last_message_stays_open(self) -> None:
        out = to_openai([Message.user("q"), Message.assistant("", ToolCallPart("a", "f"))])
        assert len(out) == 2


# -- writing Anthropic -------------------------------------------------------------------


class TestWriteAnthropic:
    def test_system_is_split_out(self) -> None:
        system, messages = to_anthropic([Message.system("one"), Message.user("hi"),
                                         Message.system("two")])
        assert system == "one\n\ntwo"
        assert messages == [{"role": "user", "content": "hi"}]
        assert to_anthropic([Message.user("hi")])[0] is None

    def test_parallel_tool_calls(self) -> None:
        system, out = to_anthropic(parallel_conversation())
        assert system == "You are terse."
        assert [m["role"] for m in out] == ["user", "assistant", "user", "assistant"]
        assistant = out[1]["content"]
        assert assistant[0] == {"type": "text", "text": "Checking."}
        assert [b["type"] for b in assistant[1:]] == ["tool_use"] * 3
        assert assistant[2] == {"type": "tool_use", "id": "call_2", "name": "weather",
                                "input": {"city": "東京"}}
        assert out[2]["content"] == [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "12°C rain"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": "20°C 晴れ"},
            {"type": "tool_result", "tool_use_id": "call_3", "content": "timeout",
             "is_error": True},
        ]

    def test_tool_results_come_first_then_user_text(self) -> None:
        _, out = to_anthropic([
            Message.user("q"),
            Message.assistant("", ToolCallPart("a", "f")),
            Message.tool("a", "ra"),
            Message.user("and now?"),
        ])
        assert out[2] == {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "ra"},
            {"type": "text", "text": "and now?"},
        ]}

    def test_images(self) -> None:
        _, out = to_anthropic([Message("user", (ImagePart(PNG_URI, "image/png"),
                                                ImagePart("https://x.test/c.gif")))])
        assert out[0]["content"] == [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": PNG_B64}},
            {"type": "image", "source": {"type": "url", "url": "https://x.test/c.gif"}},
        ]

    def test_consecutive_same_role_messages_merge(self) -> None:
        _, out = to_anthropic([Message.user("a"), Message.user("b"),
                               Message.assistant("c"), Message.assistant("d")])
        assert out == [
            {"role": "user", "content": [{"type": "text", "text": "a"},
                                         {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "c"},
                                              {"type": "text", "text": "d"}]},
        ]

    def test_opener_when_the_assistant_speaks_first(self) -> None:
        _, out = to_anthropic([Message.system("s"), Message.assistant("hello")])
        assert out == [{"role": "user", "content": ANTHROPIC_OPENER},
                       {"role": "assistant", "content": "hello"}]

    def test_no_empty_or_blank_text(self) -> None:
        _, out = to_anthropic([
            Message("user", (TextPart(""), TextPart("  \n"), TextPart("real"))),
            Message.assistant("   "),
            Message.user("more"),
            Message.assistant("answer  \n"),
        ])
        assert out == [
            {"role": "user", "content": [{"type": "text", "text": "real"},
                                         {"type": "text", "text": "more"}]},
            {"role": "assistant", "content": "answer"},  # final: no trailing whitespace
        ]

    def test_blank_tool_result_has_no_content(self) -> None:
        _, out = to_anthropic([Message.user("q"), Message.assistant("", ToolCallPart("a", "f")),
                               Message.tool("a", "")])
        assert out[2]["content"] == [{"type": "tool_result", "tool_use_id": "a"}]

    def test_repairs_orphans_and_unanswered_calls(self) -> None:
        _, out = to_anthropic([
            Message.tool("early", "before any call"),
            Message.assistant("", ToolCallPart("a", "f"), ToolCallPart("b", "f")),
            Message.tool("b", "rb"),
            Message.user("go on"),
        ])
        assert out[0] == {"role": "user", "content": "[result of tool call early]\n"
                                                     "before any call"}
        assert out[2] == {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "b", "content": "rb"},
            {"type": "tool_result", "tool_use_id": "a", "content": MISSING_RESULT,
             "is_error": True},
            {"type": "text", "text": "go on"},
        ]}


# -- metadata, identity, timestamps ------------------------------------------------------


def test_metadata_and_identity_never_in_outputs() -> None:
    stamp = datetime(2026, 1, 2, tzinfo=UTC)
    m = one({"role": "user", "content": "hi", "metadata": {"secret": "s3"},
             "created_at": "2026-01-02T00:00:00Z"})
    m = m.with_identity(session="sess", seq=7, tokens=3, created_at=stamp)
    assert m.metadata == {"secret": "s3"}
    for payload in (to_openai([m]), to_anthropic([m])):
        text = json.dumps(payload)
        assert "secret" not in text and "s3" not in text
        assert "sess" not in text and "2026" not in text and "metadata" not in text


def test_messages_without_metadata_share_one_read_only_mapping(tmp_path: Path) -> None:
    # Not a dict and a proxy for each of a window's hundreds of messages read back.
    parsed = coerce([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    with memci.Engine.open(str(tmp_path / "m.db")) as engine:
        engine.session("s").add_many([*parsed, one({"role": "user", "content": "and?",
                                                     "metadata": {"src": "t"}})])
        record = engine.store.session("default", "s")
        assert record is not None
        stored = engine.store.messages(record)
    assert [m.metadata is NO_METADATA for m in [*parsed, *stored]] == [True] * 4 + [False]
    assert stored[-1].metadata == {"src": "t"}
    with pytest.raises(TypeError):
        NO_METADATA["src"] = "changed"  # type: ignore[index]


class TestTimestamps:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("2026-11-21T09:30:00Z", datetime(2026, 11, 21, 9, 30, tzinfo=UTC)),
            ("2026-11-21T09:30:00z", datetime(2026, 11, 21, 9, 30, tzinfo=UTC)),
            ("2026-11-21T17:30:00+08:00",
             datetime(2026, 11, 21, 17, 30, tzinfo=timezone(timedelta(hours=8)))),
            ("2026-11-21T09:30:00.123456-05:30",
             datetime(2026, 11, 21, 9, 30, 0, 123456,
                      tzinfo=timezone(-timedelta(hours=5, minutes=30)))),
            ("2026-11-21T09:30:00", datetime(2026, 11, 21, 9, 30, tzinfo=UTC)),
            ("2026-11-21 09:30", datetime(2026, 11, 21, 9, 30, tzinfo=UTC)),
        ],
    )
    def test_iso_forms(self, text: str, expected: datetime) -> None:
        stamp = parse_timestamp(text)
        assert stamp == expected
        assert stamp.utcoffset() == expected.utcoffset()
        assert one({"role": "user", "content": "x", "created_at": text}).created_at == expected

    def test_datetime_and_epoch(self) -> None:
        naive = datetime(2026, 1, 1, 12)
        assert parse_timestamp(naive) == naive.replace(tzinfo=UTC)
        assert parse_timestamp(0) == datetime(1970, 1, 1, tzinfo=UTC)

    @pytest.mark.parametrize(
        "bad", ["yesterday", "", "2026-13-01T00:00:00Z", "2026-11-21T25:00", [2026], True,
                {"y": 2026}, float("nan"), 1e20],
    )
    def test_bad_timestamps(self, bad: object) -> None:
        with pytest.raises(InvalidTimestampError):
            parse_timestamp(bad)
        with pytest.raises(InvalidTimestampError):
            coerce({"role": "user", "content": "x", "created_at": bad})


# -- errors ------------------------------------------------------------------------------


def _call(arguments: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        ({"role": "robot", "content": "x"}, UnknownRoleError),
        ({"role": "function", "name": "f", "content": "x"}, UnknownRoleError),
        ({"role": 3, "content": "x"}, UnknownRoleError),
        (_call("not json"), InvalidToolArgumentsError),
        (_call("[1, 2]"), InvalidToolArgumentsError),
        (_call('"text"'), InvalidToolArgumentsError),
        (_call('{"a": NaN}'), InvalidToolArgumentsError),
        (_call(5), InvalidToolArgumentsError),
        ({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                            "input": [1]}]}, InvalidToolArgumentsError),
        ({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                            "input": {"x": float("inf")}}]},
         InvalidToolArgumentsError),
        ({"role": "user", "content": "bad \ud800 text"}, InvalidTextError),
        ({"role": "user", "content": [{"type": "text", "text": "\udfff"}]}, InvalidTextError),
        ({"role": "user", "content": b"\xff\xfe bad"}, InvalidTextError),
        ({"role": "tool", "tool_call_id": "c", "content": b"\xc3\x28"}, InvalidTextError),
        ({"role": "user", "content": "x", "name": "\ud800"}, InvalidTextError),
        ({"role": "user", "content": "x", "metadata": {"k": "\ud800"}}, InvalidTextError),
        ({"role": "tool", "content": "orphan"}, InvalidMessageError),
        ({"role": "tool", "tool_call_id": "", "content": "x"}, InvalidMessageError),
        ({"role": "tool", "tool_call_id": 7, "content": "x"}, InvalidMessageError),
        ({"content": "no role"}, InvalidMessageError),
        ({"role": "user", "content": 42}, InvalidMessageError),
        ({"role": "user", "content": [{"type": "audio", "data": "x"}]}, InvalidMessageError),
        ({"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                       "input": {}}]}, InvalidMessageError),
        ({"role": "assistant", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
         InvalidMessageError),
        ({"role": "user", "content": "x", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
         InvalidMessageError),
        ({"role": "assistant", "content": [{"type": "image", "source": {
            "type": "url", "url": "https://x.test/a.png"}}]}, InvalidMessageError),
        ({"role": "assistant", "content": None, "function_call": {"name": "f",
                                                                  "arguments": "{}"}},
         InvalidMessageError),
        ({"role": "assistant", "tool_calls": [{"id": "c", "type": "custom",
                                               "custom": {"name": "f", "input": "x"}}]},
         InvalidMessageError),
        ({"role": "assistant", "tool_calls": {"id": "c"}}, InvalidMessageError),
        ({"role": "user", "content": "x", "metadata": {"k": object()}}, InvalidMessageError),
        ({"role": "user", "content": "x", "metadata": ["not", "a", "dict"]},
         InvalidMessageError),
    ],
)
def test_bad_input_raises_specific_error(bad: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error) as info:
        coerce(bad)
    assert isinstance(info.value, MemciError)
    assert isinstance(info.value, InvalidInputError)
    assert str(info.value)  # says what is wrong


@pytest.mark.parametrize("bad", ["just text", 42, None, ["role", "user"], object()])
def test_non_dict_message(bad: object) -> None:
    with pytest.raises(InvalidMessageError):
        coerce(bad)


def test_message_too_large() -> None:
    with pytest.raises(MessageTooLargeError):
        coerce({"role": "user", "content": "é" * 600}, max_bytes=1000)  # 1200 bytes
    assert coerce({"role": "user", "content": "é" * 500}, max_bytes=1000)
    with pytest.raises(MessageTooLargeError):
        coerce({"role": "tool", "tool_call_id": "c", "content": "x" * 101}, max_bytes=100)
    with pytest.raises(MessageTooLargeError):
        coerce(_call(json.dumps({"k": "x" * 200})), max_bytes=100)
    with pytest.raises(MessageTooLargeError):
        coerce(Message.user("x" * 11), max_bytes=10)


def test_validate_checks_memci_values() -> None:
    with pytest.raises(UnknownRoleError):
        validate(Message("robot", (TextPart("x"),)))  # type: ignore[arg-type]
    with pytest.raises(InvalidToolArgumentsError):
        validate(Message.assistant("", ToolCallPart("c", "f", "[]")))
    with pytest.raises(InvalidMessageError):
        validate(Message("tool", (TextPart("x"),)))
    with pytest.raises(InvalidMessageError):
        validate(Message("tool", (ToolResultPart("a", "x"), ToolResultPart("b", "y"))))
    with pytest.raises(InvalidMessageError):
        validate(Message("user", (ToolResultPart("a", "x"),)))
    with pytest.raises(InvalidMessageError):
        validate(Message.assistant("", ToolCallPart("c", "f"), ToolCallPart("c", "g")))
    with pytest.raises(InvalidMessageError):
        validate(Message.assistant("", ToolCallPart("", "f")))
    with pytest.raises(InvalidTextError):
        validate(Message.tool("c", "\ud83d"))
    validate(Message.assistant("ok", ToolCallPart("c", "f", '{"a": [1, {"b": null}]}')))


def test_from_openai_refuses_what_splits() -> None:
    with pytest.raises(InvalidMessageError):
        from_openai({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "x"},
            {"type": "text", "text": "y"}]})


# -- issue 11: every field of every accepted form is checked before anything is stored -----


def _deep(levels: int, leaf: Any = 1) -> Any:
    """A value nested ``levels`` deep, alternating objects and arrays (built iteratively)."""
    value = leaf
    for i in range(levels):
        value = {"k": value} if i % 2 else [value]
    return value


def _tool_use(value: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "input": value}]}


DEEP = 100_000


@pytest.mark.parametrize(
    ("bad", "error", "says"),
    [
        # Nesting: a typed error, never a RecursionError, at any depth past the limit.
        ({"role": "user", "content": "x", "metadata": {"m": _deep(DEEP)}},
         InvalidMessageError, "nested more than 64 levels"),
        ({"role": "user", "content": "x", "metadata": {"m": _deep(64)}},
         InvalidMessageError, "nested more than 64 levels"),
        (_tool_use({"a": _deep(DEEP)}), InvalidToolArgumentsError, "nested more than 64"),
        (_call({"a": _deep(DEEP)}), InvalidToolArgumentsError, "nested more than 64"),
        (_call('{"a":' * DEEP + "1" + "}" * DEEP), InvalidToolArgumentsError,
         "nested more than 64"),
        (_call("[" * DEEP + "]" * DEEP), InvalidToolArgumentsError, "nested more than 64"),
        (_call('{"a":' * 70 + "1" + "}" * 70), InvalidToolArgumentsError,
         "nested more than 64"),
        # A lone surrogate written as a JSON escape: refused before the index sees it.
        (_call('{"q": "\\ud800"}'), InvalidTextError, "not valid Unicode"),
        (_call('{"\\udc00": 1}'), InvalidTextError, "not valid Unicode"),
        (_tool_use({"q": "\ud800"}), InvalidTextError, "not valid Unicode"),
        (_call('{"n": 1e999}'), InvalidToolArgumentsError, "not finite"),
        ({"role": "user", "content": "x", "metadata": {"m": 10**5000}}, InvalidMessageError,
         "not JSON"),
        ({"role": "user", "content": "x", "metadata": {"m": float("nan")}},
         InvalidMessageError, "not JSON"),
        ({"role": "user", "content": "x", "metadata": {"m": {1, 2}}}, InvalidMessageError,
         "not JSON"),
        # Booleans are booleans.
        ({"role": "tool", "tool_call_id": "c", "content": "x", "is_error": "yes"},
         InvalidMessageError, "is_error must be true or false"),
        ({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c",
                                       "is_error": "false"}]},
         InvalidMessageError, "is_error must be true or false"),
        # Timestamps whose instant leaves years 1-9999 in UTC.
        ({"role": "user", "content": "x", "created_at": "0001-01-01T00:00:00+01:00"},
         InvalidTimestampError, "out of range"),
        ({"role": "user", "content": "x", "created_at": "9999-12-31T23:59:59-00:01"},
         InvalidTimestampError, "out of range"),
        ({"role": "user", "content": "x", "created_at": -62135596801},
         InvalidTimestampError, "out of range"),
    ],
)
def test_bad_values_inside_messages_are_typed_errors(
    bad: dict[str, Any], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        coerce(bad)


def test_limits_are_inclusive() -> None:
    assert coerce({"role": "user", "content": "x", "metadata": {"m": _deep(63)}})
    assert coerce(_call(json.dumps({"a": _deep(63)})))
    for edge in ("0001-01-01T00:00:00Z", "0001-01-01T00:59:00-01:00",
                 "9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59+05:00"):
        assert one({"role": "user", "content": "x", "created_at": edge}).created_at
    assert coerce(_call('{"q": "\\ud83d\\ude00"}'))  # an escaped pair is one character


class _Dumps:
    """An SDK-like object: duck-typed through ``model_dump``."""

    def __init__(self, dump: Any) -> None:
        self._dump = dump

    def model_dump(self) -> Any:
        return self._dump()


class _BrokenMapping(dict[str, Any]):
    def __iter__(self) -> Any:
        raise RuntimeError("iteration failed")

    def keys(self) -> Any:
        raise RuntimeError("keys failed")


def _raise(exc: BaseException) -> Any:
    raise exc


@pytest.mark.parametrize("obj", [
    _Dumps(lambda: _raise(RuntimeError("boom"))),
    _Dumps(lambda: _raise(RecursionError("deep"))),
    _Dumps(lambda: _raise(KeyError("k"))),
    _Dumps(lambda: "not a mapping"),
    _Dumps(lambda: {"choices": [{"message": "not a dict"}]}),
    _BrokenMapping(role="user", content="x"),
])
def test_sdk_objects_that_fail_are_typed_errors(obj: object) -> None:
    with pytest.raises(InvalidMessageError):
        coerce(obj)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"tokens": "many"}, "tokens"),
        ({"tokens": -1}, "tokens"),
        ({"tokens": True}, "tokens"),
        ({"tokens": 2**70}, "tokens"),
        ({"parts": None}, "parts must be a tuple"),
        ({"parts": "text"}, "parts must be a tuple"),
        ({"parts": (None,)}, "unknown message part"),
        ({"parts": (TextPart(5),)}, "text must be a string"),  # type: ignore[arg-type]
        ({"created_at": "str"}, "ISO 8601"),
        ({"created_at": 1e20}, "out of range"),
        ({"created_at": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))},
         "out of range"),
        ({"metadata": "abc"}, "metadata"),
        ({"metadata": {"m": _deep(DEEP)}}, "nested more than 64"),
        ({"name": 5}, "name must be a string"),
        ({"role": ["user"]}, "unknown role"),
        ({"role": None}, "unknown role"),
    ],
)
def test_memci_message_with_wrong_field_types_is_refused(
    fields: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidMessageError, match=says):
        coerce(replace(Message.user("hi"), **fields))


@pytest.mark.parametrize(
    ("message", "says"),
    [
        (Message.tool("c", "x", is_error="yes"), "is_error"),  # type: ignore[arg-type]
        (Message("user", (ImagePart("https://x.test/a.png", media_type=5),)),  # type: ignore[arg-type]
         "media_type"),
        (Message.assistant("", ToolCallPart("c", "f", {"a": 1})),  # type: ignore[arg-type]
         "tool arguments must be a string"),
        (Message.assistant("", ToolCallPart(["c"], "f")), "tool call id"),  # type: ignore[arg-type]
    ],
)
def test_memci_parts_with_wrong_field_types_are_refused(message: Message, says: str) -> None:
    with pytest.raises(InvalidMessageError, match=says):
        coerce(message)


def test_memci_message_is_normalized_to_its_stored_form() -> None:
    given = Message("developer", [TextPart("x")],  # type: ignore[arg-type]
                    metadata={"k": (1, 2)}, created_at="2026-01-02T03:04:05+08:00",  # type: ignore[arg-type]
                    session="other", seq=9)
    [read] = coerce(given)
    assert read.role == "system" and read.parts == (TextPart("x"),)
    assert dict(read.metadata) == {"k": [1, 2]}
    assert read.created_at == datetime(2026, 1, 1, 19, 4, 5, tzinfo=UTC)
    assert read.session is None and read.seq is None
    naive = coerce(Message("user", (TextPart("x"),), created_at=datetime(2026, 1, 1)))[0]
    assert naive.created_at == datetime(2026, 1, 1, tzinfo=UTC)


def test_metadata_counts_toward_the_size_limit() -> None:
    small = {"role": "user", "content": "x" * 50}
    assert coerce(small, max_bytes=100)
    with pytest.raises(MessageTooLargeError, match="metadata"):
        coerce({**small, "metadata": {"k": "y" * 60}}, max_bytes=100)
    with pytest.raises(MessageTooLargeError):
        coerce({"role": "assistant", "content": [
            {"type": "text", "text": "x"},
            {"type": "thinking", "thinking": "z" * 200, "signature": "s"}]}, max_bytes=100)


# -- wire form ---------------------------------------------------------------------------


def test_wire_round_trip_is_exact() -> None:
    m = Message(
        "assistant",
        (TextPart("汉字 😀"), ToolCallPart("c", "f", '{"a": 1}')),
        name="bot",
        metadata={"k": ["v", 1]},
        created_at=datetime(2026, 5, 1, 8, 0, tzinfo=timezone(timedelta(hours=8))),
        session="s1",
        seq=4,
        tokens=9,
    )
    wire = json.loads(json.dumps(to_wire(m)))
    back = from_wire(wire, session="s1")
    assert back == m
    assert back.created_at is not None and back.created_at.utcoffset() == timedelta(hours=8)
    assert "session" not in wire
    assert loads_parts(dumps_parts(m.parts)) == m.parts


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "robot", "parts": []},
        {"role": "user"},
        {"role": "user", "parts": [{"kind": "sound"}]},
        {"role": "user", "parts": [{"kind": "text"}]},
        {"role": "user", "parts": ["text"]},
        {"role": "user", "parts": [], "created_at": "soon"},
        {"role": "user", "parts": [], "metadata": [1]},
    ],
)
def test_bad_wire(bad: dict[str, Any]) -> None:
    with pytest.raises(InvalidMessageError):
        from_wire(bad)


def test_bad_stored_parts() -> None:
    with pytest.raises(InvalidMessageError):
        loads_parts("{not json")
    with pytest.raises(InvalidMessageError):
        loads_parts('{"kind": "text"}')


@pytest.mark.parametrize("text", [
    '[{"kind":"text","text":"hi"}]', ' [{"kind":"text","text":"hi"}]\n',
    '[{"kind":"text","text":"hi"}] x', '[{"kind":"text","text":"hi"}][]',
    '\ufeff[{"kind":"text","text":"hi"}]', "", "  ", "[", '[{"kind":"text","text":"\\x"}]',
    '[{"kind":"text","text":"a\tb"}]', "[NaN]", '"text"', "[1e400]", "[" * 100_000,
])
def test_stored_parts_read_as_json_loads_reads_them(text: str) -> None:
    # loads_parts calls json's scanner itself (fewer checks a row): the same parts, and
    # the same message for text json.loads refuses, wherever the damage is.
    try:
        expected: object = json.loads(text)
    except (ValueError, RecursionError) as exc:
        expected = exc
    if isinstance(expected, BaseException):
        with pytest.raises((InvalidMessageError, RecursionError)) as caught:
            loads_parts(text)
        assert str(expected) in str(caught.value)
    elif not isinstance(expected, list) or not all(isinstance(p, dict) for p in expected):
        with pytest.raises(InvalidMessageError):
            loads_parts(text)
    else:
        assert loads_parts(text) == tuple(TextPart(p["text"]) for p in expected)


# -- SDK objects (optional packages; memci never imports them) ---------------------------


class TestOpenAISDK:
    def test_chat_completion(self) -> None:
        chat = pytest.importorskip("openai.types.chat")
        completion = chat.ChatCompletion.model_validate({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1_700_000_000,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                         "message": {
                             "role": "assistant", "content": None, "refusal": None,
                             "tool_calls": [
                                 {"id": "call_a", "type": "function",
                                  "function": {"name": "weather",
                                               "arguments": '{"city":"Paris"}'}},
                                 {"id": "call_b", "type": "function",
                                  "function": {"name": "time", "arguments": "{}"}},
                             ]}}],
        })
        dumped = completion.model_dump()["choices"][0]["message"]
        assert {"refusal", "audio", "function_call"} <= dumped.keys()  # None-valued keys
        m = one(completion)
        assert m == Message.assistant("", ToolCallPart("call_a", "weather", '{"city":"Paris"}'),
                                      ToolCallPart("call_b", "time", "{}"))

    def test_chat_completion_message(self) -> None:
        chat = pytest.importorskip("openai.types.chat")
        message = chat.ChatCompletionMessage.model_validate(
            {"role": "assistant", "content": "Bonjour 👋", "refusal": None})
        assert one(message) == Message.assistant("Bonjour 👋")
        refused = chat.ChatCompletionMessage.model_validate(
            {"role": "assistant", "content": None, "refusal": "I can't help with that."})
        assert one(refused) == Message.assistant("I can't help with that.")

    def test_written_messages_validate_as_sdk_params(self) -> None:
        pydantic = pytest.importorskip("pydantic")
        chat = pytest.importorskip("openai.types.chat")
        adapter = pydantic.TypeAdapter(list[chat.ChatCompletionMessageParam])
        adapter.validate_python(to_openai(parallel_conversation()))


class TestAnthropicSDK:
    def test_message_response(self) -> None:
        types = pytest.importorskip("anthropic.types")
        response = types.Message.model_validate({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [
                {"type": "thinking", "thinking": "let me see", "signature": "sig"},
                {"type": "text", "text": "I'll check."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather",
                 "input": {"city": "Paris"}},
            ],
            "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 20},
        })
        [m] = coerce(response)
        assert m.parts[0] == TextPart("I'll check.")
        assert m.tool_calls[0].id == "toolu_1"
        assert json.loads(m.tool_calls[0].arguments) == {"city": "Paris"}
        assert m.metadata["anthropic_blocks"][0]["type"] == "thinking"

    def test_written_messages_validate_as_sdk_params(self) -> None:
        pydantic = pytest.importorskip("pydantic")
        types = pytest.importorskip("anthropic.types")
        system, messages = to_anthropic(parallel_conversation())
        assert isinstance(system, str)
        pydantic.TypeAdapter(list[types.MessageParam]).validate_python(messages)


def test_codecs_import_no_sdk() -> None:
    import subprocess
    import sys

    code = ("import sys, memci.messages; "
            "print([m for m in ('openai', 'anthropic') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


# -- an empty message: in no form is it stored ------------------------------------------

EMPTY_FORMS: list[tuple[str, object, str]] = [
    ("openai user, no content", {"role": "user"}, "add 'content'"),
    ("openai user, empty text", {"role": "user", "content": ""}, "add 'content'"),
    ("openai assistant, null content", {"role": "assistant", "content": None},
     "'tool_calls'"),
    ("openai assistant, empty tool_calls", {"role": "assistant", "content": "",
                                            "tool_calls": []}, "'tool_calls'"),
    ("openai system", {"role": "system", "content": ""}, "add 'content'"),
    ("anthropic user, no blocks", {"role": "user", "content": []}, "add 'content'"),
    ("anthropic assistant, an empty text block", {
        "role": "assistant", "content": [{"type": "text", "text": ""}]}, "'tool_calls'"),
    ("anthropic assistant, thinking only", {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "hm", "signature": "sig"}]}, "'tool_calls'"),
    ("responses message item", {"type": "message", "role": "user", "content": []},
     "add 'content'"),
    ("responses assistant item", {"type": "message", "role": "assistant", "content": [
        {"type": "output_text", "text": ""}]}, "'tool_calls'"),
    ("memci.Message, no parts", Message("user", ()), "add 'content'"),
    ("memci.Message, an empty text part", Message("assistant", (TextPart(""),)),
     "'tool_calls'"),
]


@pytest.mark.parametrize(("form", "message", "says"), EMPTY_FORMS,
                         ids=[f for f, _, _ in EMPTY_FORMS])
def test_an_empty_message_is_refused_in_every_form(form: str, message: object,
                                                   says: str) -> None:
    with pytest.raises(InvalidMessageError, match="message is empty") as caught:
        coerce(message)
    assert says in str(caught.value), form


def test_what_is_not_empty_is_kept() -> None:
    kept = [{"role": "tool", "tool_call_id": "c1", "content": ""},  # an empty output
            {"role": "user", "content": " "},
            {"role": "user", "content": [{"type": "image_url",
                                          "image_url": {"url": "https://x.invalid/a.png"}}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f",
                                                              "arguments": "{}"}}]}]
    for message in kept:
        assert coerce(message)
