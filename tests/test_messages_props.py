"""Property tests for the message codecs: wire, OpenAI and Anthropic round trips, and the
providers' structural rules on every output.

Normalizations (what a provider cannot express, so a round trip gives it back changed):

OpenAI (:func:`openai_normal`)
  - a tool result's ``is_error`` and a tool message's ``name`` are dropped;
  - an assistant's tool calls come after its text (OpenAI keeps them in ``tool_calls``);
  - empty text parts are dropped;
  - an image's ``media_type`` is re-derived from its URL (the ``data:`` URI's type, or
    None for other URLs);
  - metadata, ``created_at`` and store identity are not sent.

Anthropic (:func:`anthropic_normal`), on top of what holds for OpenAI except that
``is_error`` and the order of an assistant's parts are kept:
  - system messages become one system message, first, their texts joined by a blank line;
  - ``name`` and an image's ``detail`` are dropped;
  - empty and whitespace-only text parts are dropped, a tool result whose content is only
    whitespace comes back empty, trailing whitespace is cut from the text that ends a final
    assistant message;
  - tool call arguments come back re-serialized (``json.dumps(..., ensure_ascii=False)``),
    equal as JSON values.

The Anthropic round trip is exact up to these for conversations that start with the user,
answer every tool call with tool messages right after the assistant message, and never put
two user (or two assistant) messages in a row; merging such messages is the one change a
round trip cannot undo, and the structural properties cover it instead.
"""

from __future__ import annotations

import json
import string
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from itertools import pairwise
from types import MappingProxyType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memci.errors import InvalidTimestampError
from memci.messages import (
    MISSING_RESULT,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    coerce,
    from_openai,
    from_wire,
    to_anthropic,
    to_openai,
    to_openai_message,
    to_wire,
    validate,
)

# Examples per property, chosen so that the whole file runs in a few seconds.
FAST = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
CONVERSATIONS = settings(FAST, max_examples=50)
SECRET = "memci-secret-marker"

# -- strategies --------------------------------------------------------------------------

texts = st.text(st.characters(codec="utf-8"), max_size=24) | st.text(
    "汉字中文日本語한국어😀🎉👍🏽👩\u200d💻 \n\tab", max_size=16)
nonblank = texts.filter(lambda t: bool(t.strip()))
names = st.none() | st.text(string.ascii_letters + "_-", min_size=1, max_size=8)

short = st.text('ab "\\/\n\t汉字😀\u00e9\x00', max_size=8)
json_scalars = st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(
    allow_nan=False, allow_infinity=False) | short
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(short, inner, max_size=3),
    max_leaves=4,
)
json_objects = st.dictionaries(short, json_values, max_size=3)


@st.composite
def arguments(draw: st.DrawFn) -> str:
    obj = draw(json_objects)
    compact = draw(st.booleans())
    return json.dumps(obj, ensure_ascii=draw(st.booleans()),
                      separators=(",", ":") if compact else None)


@st.composite
def images(draw: st.DrawFn) -> ImagePart:
    if draw(st.booleans()):
        url = "https://img.test/" + draw(st.text(string.ascii_lowercase, min_size=1,
                                                  max_size=8)) + ".png"
    else:
        media = draw(st.sampled_from(["image/png", "image/jpeg", "image/webp"]))
        data = draw(st.text(string.ascii_letters + string.digits + "+/", min_size=4,
                            max_size=16))
        url = f"data:{media};base64,{data}="
    media_type = draw(st.none() | st.sampled_from(["image/png", "image/gif"]))
    detail = draw(st.none() | st.sampled_from(["auto", "low", "high"]))
    return ImagePart(url, media_type, detail)


text_parts = texts.map(TextPart)
metadata = st.dictionaries(st.just(SECRET) | short, json_values, max_size=3).map(
    MappingProxyType)
offsets = st.sampled_from([UTC, timezone(timedelta(hours=8)),
                           timezone(-timedelta(hours=5, minutes=30)),
                           timezone(timedelta(seconds=3661))])
stamps = st.none() | st.datetimes() | st.datetimes(timezones=offsets)
# Instants memci accepts: a day inside the calendar's ends, so that any offset stays in it.
_FIRST, _LAST = datetime(1, 1, 2), datetime(9999, 12, 30)
valid_stamps = (st.none() | st.datetimes(_FIRST, _LAST)
                | st.datetimes(_FIRST, _LAST, timezones=offsets))


@st.composite
def tool_calls(draw: st.DrawFn, prefix: str, max_size: int = 3) -> list[ToolCallPart]:
    """Calls with unique ids, ``prefix`` keeps them apart from other messages' calls."""
    count = draw(st.integers(1, max_size))
    tools = st.sampled_from(["search", "read_file", "天气", "run"])
    return [ToolCallPart(f"{prefix}_{i}", draw(tools), draw(arguments()))
            for i in range(count)]


@st.composite
def valid_messages(draw: st.DrawFn) -> Message:
    """Any single valid message: every role and part kind."""
    role = draw(st.sampled_from(["system", "user", "assistant", "tool"]))
    extra = {"metadata": draw(metadata), "created_at": draw(valid_stamps)}
    if role == "tool":
        result = ToolResultPart(draw(st.text(string.ascii_letters, min_size=1, max_size=6)),
                                draw(texts), draw(st.booleans()))
        return Message("tool", (result,), name=draw(names), **extra)
    if role == "system":
        parts: list[Part] = draw(st.lists(text_parts, max_size=3))
    elif role == "user":
        parts = draw(st.lists(text_parts | images(), max_size=4))
    else:
        parts = draw(st.lists(text_parts, max_size=2))
        if draw(st.booleans()):
            parts += draw(tool_calls("call"))
        parts = draw(st.permutations(parts))
    if not any(not isinstance(p, TextPart) or p.text for p in parts):
        parts = [*parts, TextPart(draw(nonblank))]  # an empty message is not valid
    return Message(role, tuple(parts), name=draw(names), **extra)


@st.composite
def any_messages(draw: st.DrawFn) -> Message:
    """Any Message value at all, valid or not, with identity: for the wire form (reasoning
    parts and Responses item ids included)."""
    item_ids = st.none() | texts
    part = text_parts | st.builds(TextPart, texts, item_id=item_ids) | images() | st.builds(
        ToolCallPart, texts, texts, texts, item_id=item_ids) | st.builds(
        ToolResultPart, texts, texts, st.booleans()) | st.builds(
        ReasoningPart, texts, st.lists(texts, max_size=2).map(tuple), st.none() | texts,
        st.lists(texts, max_size=2).map(tuple))
    return Message(
        draw(st.sampled_from(["system", "user", "assistant", "tool"])),
        tuple(draw(st.lists(part, max_size=4))),
        name=draw(st.none() | texts),
        metadata=draw(metadata),
        created_at=draw(stamps),
        session=draw(st.none() | texts),
        seq=draw(st.none() | st.integers(0, 2**40)),
        tokens=draw(st.none() | st.integers(0, 2**31)),
    )


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """Valid conversations: user first, calls answered right after, no same-role runs.

    Messages carry names and metadata, which the round trips drop.
    """
    out: list[Message] = []
    marked = st.just(MappingProxyType({SECRET: 1})) | metadata
    if draw(st.booleans()):
        out.append(Message("system", tuple(draw(st.lists(nonblank.map(TextPart), min_size=1,
                                                         max_size=2)))))
    step = 0
    rounds = draw(st.integers(1, 3))
    for round_ in range(rounds):
        user_parts = draw(st.lists(nonblank.map(TextPart) | images(), min_size=1,
                                   max_size=3))
        out.append(Message("user", tuple(user_parts), name=draw(names),
                           metadata=draw(marked)))
        steps = draw(st.integers(0, 2))
        for _ in range(steps):
            step += 1
            calls = draw(tool_calls(f"call{step}"))
            said = draw(st.lists(nonblank.map(TextPart), max_size=2))
            parts = draw(st.permutations([*said, *calls]))
            out.append(Message("assistant", tuple(parts), name=draw(names)))
            for call in draw(st.permutations(calls)):
                out.append(Message.tool(call.id, draw(texts), is_error=draw(st.booleans())))
        # A user message right after a user message would be merged: answer it first.
        if (steps == 0 and round_ < rounds - 1) or draw(st.booleans()):
            out.append(Message("assistant", (TextPart(draw(nonblank)),)))
    return out


@st.composite
def messy_conversations(draw: st.DrawFn) -> list[Message]:
    """Any order of valid messages: orphan and repeated results, unanswered calls,
    assistant first, same-role runs, blank text. Call ids are unique, as both
    providers require."""
    out: list[Message] = []
    ids: list[str] = []
    for step in range(draw(st.integers(0, 10))):
        role = draw(st.sampled_from(["system", "user", "assistant", "tool", "tool"]))
        if role == "assistant":
            parts: list[Part] = draw(st.lists(text_parts, max_size=2))
            if draw(st.booleans()):
                calls = draw(tool_calls(f"c{step}"))
                ids += [c.id for c in calls]
                parts += calls
            out.append(Message("assistant", tuple(parts)))
        elif role == "tool":
            call_id = draw(st.sampled_from([*ids, "ghost"]))
            out.append(Message.tool(call_id, draw(texts), is_error=draw(st.booleans())))
        elif role == "user":
            out.append(Message("user", tuple(draw(st.lists(text_parts | images(),
                                                           max_size=2)))))
        else:
            out.append(Message("system", tuple(draw(st.lists(text_parts, max_size=2)))))
    return out


# -- normalizations ----------------------------------------------------------------------


def _media(url: str) -> str | None:
    if url.startswith("data:") and ";" in url:
        return url[5 : url.index(";")] or None
    return None


def _bare(message: Message) -> Message:
    """Without metadata, timestamp and store identity: none of them is sent."""
    return replace(message, metadata=MappingProxyType({})).without_identity()


def openai_normal(message: Message) -> Message:
    """What an OpenAI round trip gives back (see the module docstring)."""
    message = _bare(message)
    if message.role == "tool":
        result = message.tool_result
        assert result is not None
        return Message("tool", (replace(result, is_error=False),))
    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, TextPart) and not part.text:
            continue
        if isinstance(part, ImagePart):
            part = replace(part, media_type=_media(part.url))
        parts.append(part)
    parts.sort(key=lambda p: isinstance(p, ToolCallPart))  # stable: calls last
    return replace(message, parts=tuple(parts))


def anthropic_normal(conversation: list[Message]) -> list[Message]:
    """What an Anthropic round trip gives back (see the module docstring)."""
    system = [m.content for m in conversation if m.role == "system" and m.content.strip()]
    out = [Message.system("\n\n".join(system))] if system else []
    for message in conversation:
        if message.role == "system":
            continue
        message = replace(_bare(message), name=None)
        result = message.tool_result
        if result is not None:
            content = result.content if result.content.strip() else ""
            out.append(Message("tool", (replace(result, content=content),)))
            continue
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, TextPart) and not part.text.strip():
                continue
            if isinstance(part, ImagePart):
                part = ImagePart(part.url, _media(part.url))
            if isinstance(part, ToolCallPart):
                args = json.dumps(json.loads(part.arguments), ensure_ascii=False)
                part = replace(part, arguments=args)
            parts.append(part)
        out.append(replace(message, parts=tuple(parts)))
    last = out[-1] if out else None
    if last is not None and last.role == "assistant" and isinstance(last.parts[-1], TextPart):
        end = TextPart(last.parts[-1].text.rstrip())
        out[-1] = replace(last, parts=(*last.parts[:-1], end))
    return out


def read_anthropic(system: str | None, messages: list[dict[str, Any]]) -> list[Message]:
    back = [Message.system(system)] if system is not None else []
    for data in messages:
        back += coerce(data)
    return back


def assert_no_repair(payload: Any) -> None:
    """A conversation that keeps the rules is written without stand-ins or orphan text."""
    text = json.dumps(payload, ensure_ascii=False)
    assert MISSING_RESULT not in text
    assert "[result of tool call" not in text and "[error from tool call" not in text


def through_json(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False))


# -- (a) wire ----------------------------------------------------------------------------


@FAST
@given(any_messages())
def test_wire_round_trip_is_exact(message: Message) -> None:
    back = from_wire(through_json(to_wire(message)), session=message.session)
    assert back == message
    if message.created_at is not None:
        assert back.created_at is not None
        assert back.created_at.utcoffset() == message.created_at.utcoffset()


# -- (b) OpenAI --------------------------------------------------------------------------


@FAST
@given(valid_messages())
def test_openai_message_round_trip(message: Message) -> None:
    validate(message)
    assert from_openai(through_json(to_openai_message(message))) == openai_normal(message)


@CONVERSATIONS
@given(conversations())
def test_openai_conversation_round_trip(conversation: list[Message]) -> None:
    payload = through_json(to_openai(conversation))
    assert len(payload) == len(conversation)  # one for one when the rules are kept
    assert [from_openai(d) for d in payload] == [openai_normal(m) for m in conversation]
    assert SECRET not in json.dumps(payload)
    assert_no_repair(payload)


# -- (c) Anthropic -----------------------------------------------------------------------


@CONVERSATIONS
@given(conversations())
def test_anthropic_conversation_round_trip(conversation: list[Message]) -> None:
    system, messages = through_json(to_anthropic(conversation))
    assert read_anthropic(system, messages) == anthropic_normal(conversation)
    assert SECRET not in json.dumps(messages)
    assert_no_repair(messages)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def check_anthropic_rules(system: str | None, messages: list[dict[str, Any]]) -> None:
    assert system is None or system.strip()
    if not messages:
        return
    assert messages[0]["role"] == "user"
    for before, after in pairwise(messages):
        assert {before["role"], after["role"]} == {"user", "assistant"}
    for i, message in enumerate(messages):
        blocks = _blocks(message)
        assert blocks
        types = [b["type"] for b in blocks]
        for block in blocks:
            if block["type"] == "text":
                assert block["text"].strip()
            if block["type"] == "tool_result" and "content" in block:
                assert block["content"].strip()
        if message["role"] == "assistant":
            assert "tool_result" not in types
            used = [b["id"] for b in blocks if b["type"] == "tool_use"]
            assert all(isinstance(b["input"], dict) for b in blocks if b["type"] == "tool_use")
            assert len(used) == len(set(used))
            if i + 1 < len(messages):
                answered = {b["tool_use_id"] for b in _blocks(messages[i + 1])
                            if b["type"] == "tool_result"}
                assert set(used) <= answered
        else:
            assert "tool_use" not in types
            first_other = next((k for k, t in enumerate(types) if t != "tool_result"),
                               len(types))
            assert "tool_result" not in types[first_other:]  # tool results first
            answered_ids = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
            assert len(answered_ids) == len(set(answered_ids))
            if answered_ids:
                previous = _blocks(messages[i - 1]) if i > 0 else []
                used = {b["id"] for b in previous if b["type"] == "tool_use"}
                assert set(answered_ids) <= used
    last = messages[-1]
    if last["role"] == "assistant":
        end = _blocks(last)[-1]
        if end["type"] == "text":
            assert end["text"] == end["text"].rstrip()


def check_openai_rules(messages: list[dict[str, Any]]) -> None:
    """Every tool message answers a call of the nearest preceding assistant message, with
    only tool messages between; every call is answered before the next non-tool message."""
    open_calls: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls
            open_calls.remove(message["tool_call_id"])
            continue
        assert not open_calls
        for call in message.get("tool_calls") or ():
            assert call["type"] == "function"
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
            open_calls.add(call["id"])


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _kept(needle: str, haystack: list[str]) -> bool:
    return any(needle in s for s in haystack)


@CONVERSATIONS
@given(messy_conversations() | conversations())
def test_anthropic_output_keeps_the_rules(conversation: list[Message]) -> None:
    system, messages = to_anthropic(conversation)
    check_anthropic_rules(system, messages)
    # Nothing said is lost: every text and tool result is somewhere in the request.
    written = _strings([system, messages])
    for message in conversation:
        for part in message.parts:
            if isinstance(part, TextPart | ToolResultPart):
                text = part.text if isinstance(part, TextPart) else part.content
                assert not text.strip() or _kept(text.strip(), written)


@CONVERSATIONS
@given(messy_conversations() | conversations())
def test_openai_output_keeps_the_rules(conversation: list[Message]) -> None:
    messages = to_openai(conversation)
    check_openai_rules(messages)
    written = _strings(messages)
    for message in conversation:
        for part in message.parts:
            if isinstance(part, TextPart | ToolResultPart):
                text = part.text if isinstance(part, TextPart) else part.content
                assert _kept(text, written)


@settings(max_examples=60, deadline=None)
@given(valid_messages(), st.datetimes(_FIRST, _LAST, timezones=offsets))
def test_reading_is_idempotent_through_coerce(message: Message, stamp: datetime) -> None:
    """coerce(Message) gives the message itself (a naive created_at read as UTC) and
    reading that again changes nothing; an OpenAI dict with created_at keeps it."""
    at = message.created_at
    expected = replace(message, created_at=at.replace(tzinfo=UTC)) if (
        at is not None and at.tzinfo is None) else message
    assert coerce(message) == [expected]
    assert coerce(coerce(message)[0]) == [expected]
    data = {**to_openai_message(message), "created_at": stamp.isoformat()}
    [back] = coerce(data)
    assert back.created_at == stamp
    assert back.created_at is not None and back.created_at.utcoffset() == stamp.utcoffset()


# -- issue 11 §4: every created_at either can always be stored and compared, or is refused --

any_offsets = st.timedeltas(-timedelta(hours=23, minutes=59), timedelta(hours=23, minutes=59)
                            ).map(lambda d: timezone(timedelta(seconds=int(d.total_seconds()))))


@settings(max_examples=300, deadline=None)
@given(st.datetimes(timezones=st.none() | any_offsets)
       | st.datetimes(datetime(1, 1, 1), datetime(1, 1, 2), timezones=any_offsets)
       | st.datetimes(datetime(9999, 12, 30), datetime(9999, 12, 31, 23, 59, 59),
                      timezones=any_offsets),
       st.sampled_from(["datetime", "iso", "message"]))
def test_created_at_is_accepted_only_when_it_can_always_be_used(
    stamp: datetime, form: str
) -> None:
    value: object = stamp if form != "iso" else stamp.isoformat()
    try:
        if form == "message":
            [read] = coerce(Message("user", (TextPart("x"),), created_at=stamp))
        else:
            [read] = coerce({"role": "user", "content": "x", "created_at": value})
    except InvalidTimestampError as exc:
        assert "out of range" in str(exc)
        offset = stamp.utcoffset() or timedelta(0)
        assert stamp.year in (1, 9999) and offset  # refused only near the calendar's ends
        return
    at = read.created_at
    assert at is not None and at.tzinfo is not None
    assert at == (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC))
    # What the store writes and reads back, converted, compared and ordered: never raises.
    again = datetime.fromisoformat(at.isoformat())
    assert again == at and again.utcoffset() == at.utcoffset()
    assert at.astimezone(UTC) == at
    assert (at < datetime(5000, 1, 1, tzinfo=UTC)) == (at.astimezone(UTC).year < 5000)
    assert at.timestamp() == again.timestamp()
