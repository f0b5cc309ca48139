"""The OpenAI Responses API form (issue 15 item 3): its items read by ``add``, and
``ctx.to_responses()`` written as the API and the official SDK take it.

The SDK is used as a user uses it: its types check every payload (validated, iterables
included, and dumped back unchanged: a key the SDK does not know would be dropped), and
``openai.OpenAI(...).responses.create`` sends payloads to the fake server of
:mod:`tests.fakellm`, which holds them to the API's rules and answers as a reasoning
model does. The property tests are at the end.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.responses import Response
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

import memci
from memci.errors import (
    InvalidMessageError,
    InvalidTextError,
    InvalidToolArgumentsError,
)
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
    coerce_many,
    from_wire,
    to_anthropic,
    to_openai,
    to_responses,
    to_wire,
)
from tests.fakellm import FakeLLM, Reply
from tests.test_messages_props import (
    CONVERSATIONS,
    SECRET,
    check_anthropic_rules,
    check_openai_rules,
    conversations,
    messy_conversations,
    through_json,
)

CREATE = TypeAdapter(ResponseCreateParamsNonStreaming)


def sdk_checked(payload: dict[str, Any]) -> None:
    """``payload`` is what ``responses.create`` takes, by the SDK's own types, unchanged."""
    body = {"model": "gpt-5", **through_json(payload)}
    assert _materialized(CREATE.validate_python(body)) == body


def _materialized(value: Any) -> Any:
    # The SDK types its lists as Iterables, which pydantic checks as they are iterated.
    if isinstance(value, dict):
        return {k: _materialized(v) for k, v in value.items()}
    if isinstance(value, list | tuple | Iterator):
        return [_materialized(v) for v in value]
    return value


def reasoning(n: int = 1, *, encrypted: str | None = "opaque") -> dict[str, Any]:
    item: dict[str, Any] = {"type": "reasoning", "id": f"rs_{n}",
                            "summary": [{"type": "summary_text", "text": f"plan {n}"}]}
    if encrypted is not None:
        item["encrypted_content"] = f"{encrypted}-{n}"
    return item


def call(n: int, name: str = "weather", args: str = '{"city": "Paris"}',
         item_id: bool = True) -> dict[str, Any]:
    item = {"type": "function_call", "call_id": f"call_{n}", "name": name, "arguments": args}
    if item_id:
        item["id"] = f"fc_{n}"
    return item


def output(n: int, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": f"call_{n}", "output": text}


def said(n: int, text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def a_turn() -> list[dict[str, Any]]:
    """A user asks; a reasoning model thinks, says a word and calls two tools at once."""
    return [{"role": "user", "content": "Weather and time in Paris?"},
            reasoning(1), said(1, "Let me look."), call(1), call(2, "time", "{}"),
            output(1, "sunny"), output(2, "noon")]


# -- reading -----------------------------------------------------------------------------


def test_an_output_list_is_one_assistant_message_with_its_calls_together() -> None:
    user, *out, r1, r2 = coerce_many(a_turn())
    assert user == Message.user("Weather and time in Paris?")
    assert out == [Message("assistant", (
        ReasoningPart("rs_1", ("plan 1",), "opaque-1"),
        TextPart("Let me look.", item_id="msg_1"),
        ToolCallPart("call_1", "weather", '{"city": "Paris"}', item_id="fc_1"),
        ToolCallPart("call_2", "time", "{}", item_id="fc_2")))]
    assert (r1, r2) == (Message.tool("call_1", "sunny"), Message.tool("call_2", "noon"))
    # One list given as one item reads the same.
    assert coerce(a_turn()) == coerce_many(a_turn())


def test_function_calls_after_an_assistant_message_continue_its_turn() -> None:
    messages = coerce_many([{"role": "user", "content": "hi"},
                            {"role": "assistant", "content": "Checking."},
                            call(1, item_id=False), call(2, item_id=False),
                            output(1, "a"), output(2, "b"),
                            {"role": "assistant", "content": "Done."},
                            {"role": "assistant", "content": "Anything else?"}])
    assert [m.role for m in messages] == ["user", "assistant", "tool", "tool", "assistant",
                                          "assistant"]
    assert [c.id for c in messages[1].tool_calls] == ["call_1", "call_2"]
    assert messages[1].content == "Checking."
    # Chat messages in a row stay apart, as they always have.
    assert [m.content for m in messages[4:]] == ["Done.", "Anything else?"]


def test_add_many_keeps_parallel_calls_paired(engine: memci.Engine) -> None:
    session = engine.session("parallel")
    stored = session.add_many(a_turn())
    assert [m.role for m in stored] == ["user", "assistant", "tool", "tool"]
    assert len(stored[1].tool_calls) == 2
    sent = session.build().to_openai()["messages"]
    check_openai_rules(sent)
    assert MISSING_RESULT not in json.dumps(sent)
    assert [m["role"] for m in sent if m["role"] != "system"] == [
        "user", "assistant", "tool", "tool"]


def _response(n: int = 7) -> Response:
    """A Response as the SDK gives it back (the fake server's body, read by the SDK)."""
    body = {
        "id": f"resp_{n}", "object": "response", "created_at": 1.0, "status": "completed",
        "model": "gpt-5", "tool_choice": "auto", "tools": [], "parallel_tool_calls": True,
        "output": [reasoning(n), said(n, "On it."), call(n)],
    }
    return Response.model_validate(body)


def test_add_takes_an_sdk_response_or_its_output_list(engine: memci.Engine) -> None:
    session = engine.session("sdk")
    session.add({"role": "user", "content": "weather?"})
    stored = session.add(_response(7))  # the Response object itself
    assert stored.role == "assistant" and stored.content == "On it."
    assert stored.parts[0] == ReasoningPart("rs_7", ("plan 7",), "opaque-7")
    assert stored.tool_calls == (ToolCallPart("call_7", "weather", '{"city": "Paris"}',
                                              item_id="fc_7"),)
    session.add(output(7, "sunny"))
    again = session.add(_response(8).output)  # its output items, SDK objects
    assert again.parts == (
        ReasoningPart("rs_8", ("plan 8",), "opaque-8"), TextPart("On it.", item_id="msg_8"),
        ToolCallPart("call_8", "weather", '{"city": "Paris"}', item_id="fc_8"))
    assert [m.role for m in session.messages()] == ["user", "assistant", "tool", "assistant"]


def test_message_items_of_every_role_are_read() -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    user, system, assistant = coerce_many([
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": png, "detail": "high"}]},
        {"type": "message", "role": "developer", "content": "answer in French"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Un chat."},
                                          {"type": "refusal", "refusal": "Rien de plus."}]},
    ])
    assert user.parts == (TextPart("what is this?"), ImagePart(png, "image/png", "high"))
    assert system == Message.system("answer in French")
    assert assistant.content == "Un chat.\n\nRien de plus."


def test_built_in_tool_calls_are_kept_aside_with_their_reasoning() -> None:
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed",
              "action": {"type": "search", "query": "paris weather"}}
    (message,) = coerce_many([reasoning(1), search, reasoning(2), said(2, "Sunny.")])
    assert message.parts == (ReasoningPart("rs_2", ("plan 2",), "opaque-2"),
                             TextPart("Sunny.", item_id="msg_2"))
    # The reasoning that came before the search can go back only with it: both kept aside.
    assert message.metadata["responses_items"] == [reasoning(1), search]
    _, items = to_responses([Message.user("q"), message])
    assert [i["type"] for i in items] == ["message", "reasoning", "message"]
    assert "ws_1" not in json.dumps(items)


def test_an_item_may_carry_metadata_and_created_at() -> None:
    (message,) = coerce_many([
        {**reasoning(1), "metadata": {"turn": 1}, "created_at": "2026-11-21T09:30:00Z"},
        {**call(1), "metadata": {"cost": 2}}])
    assert dict(message.metadata) == {"turn": 1, "cost": 2}
    assert message.created_at is not None and message.created_at.year == 2026


BAD_ITEMS: list[tuple[Any, type[Exception], str]] = [
    ({"type": "function_call", "name": "f", "arguments": "{}"}, InvalidMessageError, "call_id"),
    ({"type": "function_call", "call_id": "c", "arguments": "{}"}, InvalidMessageError, "'name'"),
    (call(1, args="not json"), InvalidToolArgumentsError, "not valid JSON"),
    (call(1, args="[1, 2]"), InvalidToolArgumentsError, "must be a JSON object"),
    ({**call(1), "arguments": {"city": "Paris"}}, InvalidMessageError, "JSON text"),
    ({**call(1), "id": 5}, InvalidMessageError, "'id' must be a string"),
    ({"type": "function_call_output", "output": "x"}, InvalidMessageError, "call_id"),
    ({"type": "function_call_output", "call_id": "c"}, InvalidMessageError, "'output'"),
    ({**output(1, "x"), "output": {"a": 1}}, InvalidMessageError, "must be a string"),
    ({**output(1, "x"), "output": [{"type": "input_image", "image_url": "https://x/y.png"}]},
     InvalidMessageError, "only text"),
    ({"type": "reasoning", "summary": []}, InvalidMessageError, "'id'"),
    ({**reasoning(1), "summary": "plan"}, InvalidMessageError, "list of summary_text"),
    ({**reasoning(1), "summary": [{"type": "summary_text", "text": 5}]}, InvalidMessageError,
     "summary_text"),
    ({**reasoning(1), "content": [{"type": "text", "text": "x"}]}, InvalidMessageError,
     "reasoning_text"),
    ({**reasoning(1), "encrypted_content": 5}, InvalidMessageError, "encrypted_content"),
    ({**reasoning(1), "summary": [{"type": "summary_text", "text": "\ud800"}]},
     InvalidTextError, "not valid Unicode"),
    ({"type": "item_reference", "id": "msg_1"}, InvalidMessageError, "pass the item itself"),
    ({"type": "computer_call_output", "call_id": "c", "output": {}}, InvalidMessageError,
     "unsupported OpenAI Responses item type 'computer_call_output'"),
    ({"type": "web_search_call", "id": "ws", "score": float("nan")}, InvalidMessageError,
     "web_search_call item"),
    ({"type": "message", "role": "user", "content": [
        {"type": "input_image", "file_id": "file-1", "detail": "auto"}]},
     InvalidMessageError, "image_url"),
    ({"type": "message", "role": "user", "content": [
        {"type": "input_file", "file_id": "file-1"}]}, InvalidMessageError, "input_file"),
    ([call(1), call(1)], InvalidMessageError, "appears twice"),
    ([], InvalidMessageError, "empty"),
    ([[call(1)]], InvalidMessageError, "another list"),
    ({"object": "response", "status": "incomplete", "output": []}, InvalidMessageError,
     "no output items"),
    ({"role": "user", "content": "x", "type": "reasoning", "id": "rs"}, InvalidMessageError,
     "a reasoning item has no 'role'"),
]


@pytest.mark.parametrize(("item", "error", "phrase"), BAD_ITEMS)
def test_bad_items_raise_a_typed_error_and_store_nothing(
    engine: memci.Engine, item: Any, error: type[Exception], phrase: str
) -> None:
    session = engine.session("bad")
    with pytest.raises(error, match=phrase.replace("(", r"\(").replace("[", r"\[")):
        session.add_many([{"role": "user", "content": "hello"}, reasoning(9), item])
    with pytest.raises(error):
        session.add(item)
    assert session.count() == 0


def test_reasoning_and_item_ids_are_stored_and_reloaded_losslessly(db_path: Path) -> None:
    with memci.Engine.open(db_path) as engine:
        session = engine.session("keep")
        added = session.add_many(a_turn())
        exported = [to_wire(m) for m in session.messages()]
    with memci.Engine.open(db_path) as engine:
        reloaded = engine.session("keep").messages()
    assert [m.without_identity() for m in reloaded] == [m.without_identity() for m in added]
    assert [from_wire(through_json(w)).without_identity() for w in exported] == [
        m.without_identity() for m in added]
    assert reloaded[1].parts[0] == ReasoningPart("rs_1", ("plan 1",), "opaque-1")


# -- the other writers skip reasoning ----------------------------------------------------


def test_chat_and_anthropic_writers_leave_reasoning_out() -> None:
    secret = ReasoningPart("rs_1", (SECRET,), SECRET, (SECRET,))
    text, calls = TextPart("Let me look.", item_id="msg_1"), (
        ToolCallPart("call_1", "weather", "{}", item_id="fc_1"),)
    with_reasoning = [Message.user("hi"), Message("assistant", (secret, text, *calls)),
                      Message.tool("call_1", "sunny"),
                      Message("assistant", (secret,)),  # reasoning alone: nothing to send
                      Message.user("thanks")]
    plain = [Message.user("hi"), Message("assistant", (TextPart("Let me look."), *calls)),
             Message.tool("call_1", "sunny"), Message.user("thanks")]
    assert to_openai(with_reasoning) == to_openai(plain)
    assert to_anthropic(with_reasoning) == to_anthropic(plain)
    for payload in (to_openai(with_reasoning), to_anthropic(with_reasoning)):
        assert SECRET not in json.dumps(payload) and "fc_1" not in json.dumps(payload)


# -- writing -----------------------------------------------------------------------------


def test_to_responses_writes_each_kind_of_message() -> None:
    png = "data:image/png;base64,iVBORw0KGgo="
    instructions, items = to_responses([
        Message.system("Be brief."),
        Message("user", (TextPart("What is in it?"), ImagePart(png, "image/png"),
                         TextPart(""))),
        Message("assistant", (TextPart("Let me zoom."),
                              ToolCallPart("call_1", "zoom", '{"x": 1}'))),
        Message.tool("call_1", "a cat", is_error=True),
        Message.system("Answer in French."),
        Message.assistant("Un chat."),
    ])
    assert instructions == "Be brief.\n\nAnswer in French."
    assert items == [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "What is in it?"},
            {"type": "input_image", "image_url": png, "detail": "auto"}]},
        {"type": "message", "role": "assistant", "content": "Let me zoom."},
        {"type": "function_call", "call_id": "call_1", "name": "zoom", "arguments": '{"x": 1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "a cat"},
        {"type": "message", "role": "assistant", "content": "Un chat."},
    ]
    sdk_checked({"input": items, "instructions": instructions})
    assert to_responses([Message.user("hi")])[0] is None


def test_reasoning_goes_back_verbatim_right_before_its_item() -> None:
    messages = coerce_many(a_turn())
    _, items = to_responses(messages)
    assert items == [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Weather and time in Paris?"}]},
        reasoning(1), said(1, "Let me look."), call(1), call(2, "time", "{}"),
        output(1, "sunny"), output(2, "noon")]
    sdk_checked({"input": items})


def test_reasoning_without_its_item_and_ids_without_reasoning_are_left_out() -> None:
    r = ReasoningPart("rs_1", ("plan",), "opaque")
    fc = ToolCallPart("call_1", "weather", "{}", item_id="fc_1")
    cases = {
        # the call it came before was cut from the window: reasoning alone is refused
        "cut": Message("assistant", (TextPart("Hm."), r)),
        # the item after it has no id to pair it with
        "no id": Message("assistant", (r, TextPart("Hm."), fc)),
        # an fc_ id whose reasoning is not sent is refused: the id is dropped
        "no reasoning": Message("assistant", (TextPart("Hm.", item_id="msg_1"), fc)),
    }
    for case, message in cases.items():
        _, items = to_responses([Message.user("q"), message])
        assert all(i["type"] != "reasoning" for i in items), case
        assert all("id" not in i for i in items), case
        sdk_checked({"input": items})
    _, items = to_responses([Message.user("q"), Message("assistant", (r,))])
    assert items == [{"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": "q"}]}]


def test_pairing_is_repaired_as_for_chat() -> None:
    _, items = to_responses([
        Message.user("q"),
        Message.assistant("", ToolCallPart("call_1", "a"), ToolCallPart("call_2", "b")),
        Message.tool("call_1", "one"),
        Message.tool("ghost", "lost result"),
        Message.user("next"),
        Message.assistant("", ToolCallPart("call_3", "c")),  # last: its result may come
    ])
    assert [(i["type"], i.get("call_id")) for i in items] == [
        ("message", None), ("function_call", "call_1"), ("function_call", "call_2"),
        ("function_call_output", "call_1"), ("function_call_output", "call_2"),
        ("message", None), ("message", None), ("function_call", "call_3")]
    assert items[4]["output"] == MISSING_RESULT
    assert items[5]["content"] == [{"type": "input_text",
                                    "text": "[result of tool call ghost]\nlost result"}]
    sdk_checked({"input": items})


def test_context_to_responses_carries_instructions_and_tools(engine: memci.Engine) -> None:
    # named in the session's tools: offered even while the history is sent as stored
    session = engine.session("ctx", tools=["working_state"])
    session.set_system("You are terse.")
    session.add_many(a_turn())
    payload = session.build().to_responses()
    assert set(payload) == {"input", "instructions", "tools"}
    assert payload["instructions"].startswith("You are terse.")
    tools = {t["name"]: t for t in payload["tools"]}
    assert list(tools) == ["working_state"]
    for tool in tools.values():
        assert set(tool) == {"type", "name", "description", "parameters", "strict"}
        assert tool["type"] == "function" and tool["strict"] is False
    kinds = [i["type"] for i in payload["input"]]
    at = kinds.index("reasoning")
    assert kinds[at:at + 7] == ["reasoning", "message", "function_call", "function_call",
                                "function_call_output", "function_call_output"]
    sdk_checked(payload)
    bare = engine.session("bare", tools=[]).build()
    assert bare.to_responses() == {"input": []}


# -- through the SDK, to a server on 127.0.0.1 -------------------------------------------


def test_round_trip_through_the_openai_sdk_and_a_local_server(engine: memci.Engine) -> None:
    session = engine.session("sdk-e2e")
    session.set_system("You are a weather bot.")
    session.add_many([{"role": "user", "content": "Hi"},
                      {"role": "assistant", "content": "Hello! Ask me about the weather."},
                      {"role": "user", "content": "Weather in Paris?"}])
    with FakeLLM() as fake, openai.OpenAI(base_url=fake.openai_base_url, api_key="test",
                                          max_retries=0) as client:
        fake.push(Reply("Let me check.", calls=(("weather", {"city": "Paris"}),)),
                  Reply("It is sunny in Paris."))
        payload = session.build().to_responses()
        sdk_checked(payload)
        first = client.responses.create(model="gpt-5", **payload)
        assert fake.last.json["input"] == through_json(payload["input"])
        assert fake.last.json["instructions"] == payload["instructions"]

        stored = session.add(first.output)  # reasoning, message, function_call
        (made,) = stored.tool_calls
        assert made.item_id == "fc_fake_0_0" and stored.parts[0].kind == "reasoning"
        session.add({"type": "function_call_output", "call_id": made.id,
                     "output": "sunny, 21°C"})

        payload = session.build().to_responses()
        sdk_checked(payload)
        kinds = [i["type"] for i in payload["input"]]
        at = kinds.index("reasoning")
        assert kinds[at:at + 4] == ["reasoning", "message", "function_call",
                                    "function_call_output"]
        assert payload["input"][at] == through_json(first.output[0].model_dump(
            exclude_none=True, exclude={"status"}))
        assert payload["input"][at + 1]["id"] == "msg_fake_0"
        assert payload["input"][at + 2]["id"] == "fc_fake_0_0"
        second = client.responses.create(model="gpt-5", **payload)  # the server takes it

        session.add(second)  # the Response object: reasoning and the answer
        payload = session.build().to_responses()
        sdk_checked(payload)
        client.responses.create(model="gpt-5", **payload)
        assert fake.count == 3 and not fake.server_errors
        assert "It is sunny in Paris." in json.dumps(payload["input"])


def test_the_local_server_refuses_what_the_api_refuses(engine: memci.Engine) -> None:
    """The checks the round trip relies on do bite: broken payloads get a 400."""
    session = engine.session("refused", tools=["working_state"])  # a tool to break
    session.add({"role": "user", "content": "Weather in Paris?"})
    with FakeLLM() as fake, openai.OpenAI(base_url=fake.openai_base_url, api_key="test",
                                          max_retries=0) as client:
        fake.push(Reply("Let me check.", calls=(("weather", {"city": "Paris"}),)))
        first = client.responses.create(model="gpt-5", **session.build().to_responses())
        session.add(first.output)
        session.add({"type": "function_call_output", "call_id": "call_fake_0_0",
                     "output": "sunny"})
        payload = session.build().to_responses()
        items = payload["input"]
        kinds = [i["type"] for i in items]
        at, out = kinds.index("reasoning"), kinds.index("function_call_output")
        broken = {
            "reasoning left out, ids kept": items[:at] + items[at + 1:],
            "reasoning moved after its item": [*items[:at], items[at + 1], items[at],
                                               *items[at + 2:]],
            "assistant text as input_text": [*items[:at + 1], {
                **items[at + 1], "content": [{"type": "input_text", "text": "x"}]},
                *items[at + 2:]],
            "a made-up id": [*items[:at + 2], {**items[at + 2], "id": "fc_made_up"},
                             *items[at + 3:]],
            "result before its call": [*items[:at], items[out], *items[at:out],
                                       *items[out + 1:]],
        }
        for case, bad in broken.items():
            with pytest.raises((openai.BadRequestError, openai.NotFoundError)) as refused:
                client.responses.create(model="gpt-5", **{**payload, "input": bad})
            assert refused.value.status_code in (400, 404), case
        strict = [{k: v for k, v in t.items() if k != "strict"} for t in payload["tools"]]
        with pytest.raises(openai.BadRequestError, match="strict"):
            client.responses.create(model="gpt-5", **{**payload, "tools": strict})
        client.responses.create(model="gpt-5", **payload)  # as written: taken


def test_a_turn_added_item_by_item_passes_its_reasoning_back(engine: memci.Engine) -> None:
    """``session.add(item)`` for each item of ``response.output``, as many loops do: the
    reasoning goes back before its item, with the item's id, as for the whole list."""
    session = engine.session("item-by-item")
    session.add({"role": "user", "content": "Weather in Paris?"})
    with FakeLLM() as fake, openai.OpenAI(base_url=fake.openai_base_url, api_key="test",
                                          max_retries=0) as client:
        fake.push(Reply("Let me check.", calls=(("weather", {"city": "Paris"}),
                                                ("weather", {"city": "Rome"}))),
                  Reply("Sunny in both."))
        first = client.responses.create(model="gpt-5", **session.build().to_responses())
        for item in first.output:  # reasoning, message, function_call, function_call
            session.add(item)
        for made in (i for i in first.output if i.type == "function_call"):
            session.add({"type": "function_call_output", "call_id": made.call_id,
                         "output": "sunny"})
        payload = session.build().to_responses()
        sdk_checked(payload)
        sent = {i.get("id") for i in payload["input"]}
        assert first.output[0].id in sent  # the reasoning item
        assert first.output[1].id in sent and first.output[2].id in sent  # msg_, fc_
        client.responses.create(model="gpt-5", **payload)  # the server pairs them: taken
        assert not fake.server_errors


TURN_ITEMS = st.lists(st.sampled_from(["reasoning", "said", "call"]), min_size=1, max_size=6)


@given(TURN_ITEMS, st.data())
def test_a_turn_stored_in_any_batches_writes_as_one_batch(
        kinds: list[str], data: st.DataObject) -> None:
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n, kind in enumerate(kinds):
        if kind == "reasoning":
            items.append(reasoning(n))
        elif kind == "said":
            items.append(said(n, f"step {n}"))
        else:
            items.append(call(n))
    items += [output(n, "done") for n, k in enumerate(kinds) if k == "call"]
    cuts = sorted(data.draw(st.sets(st.integers(1, len(items) - 1))))
    batches = [items[a:b] for a, b in zip([0, *cuts], [*cuts, len(items)], strict=True)]
    stored = [m for batch in batches for m in coerce_many(batch)]
    assert to_responses(stored) == to_responses(coerce_many(items))


# -- properties --------------------------------------------------------------------------


@st.composite
def with_reasoning(draw: st.DrawFn, conversation: list[Message]) -> list[Message]:
    """``conversation`` with reasoning parts and Responses item ids in its assistant
    messages (reasoning summaries and encrypted content carry SECRET where drawn)."""
    out: list[Message] = []
    n = 0
    for message in conversation:
        if message.role != "assistant":
            out.append(message)
            continue
        parts: list[Part] = []
        for part in message.parts:
            n += 1
            if draw(st.booleans()):
                summary = tuple(draw(st.lists(st.sampled_from(["plan", "check", SECRET]),
                                              max_size=2)))
                encrypted = draw(st.none() | st.just(f"{SECRET}-{n}"))
                parts.append(ReasoningPart(f"rs_{n}", summary, encrypted))
            if isinstance(part, TextPart | ToolCallPart) and draw(st.booleans()):
                prefix = "msg" if isinstance(part, TextPart) else "fc"
                part = replace(part, item_id=f"{prefix}_{n}")
            parts.append(part)
        if draw(st.booleans()):
            parts.append(ReasoningPart(f"rs_end_{n}", ("unfinished",)))
        out.append(replace(message, parts=tuple(parts)))
    return out


def reasoned(strategy: st.SearchStrategy[list[Message]]) -> st.SearchStrategy[list[Message]]:
    return strategy.flatmap(with_reasoning)


def _sent(part: Part | None) -> bool:
    if isinstance(part, TextPart):
        return bool(part.text) and part.item_id is not None
    return isinstance(part, ToolCallPart) and part.item_id is not None


def responses_normal(conversation: list[Message]) -> list[Message]:
    """What a Responses round trip gives back (see docs/messages.md, Round trips)."""
    system = [m.content for m in conversation if m.role == "system" and m.content.strip()]
    out = [Message.system("\n\n".join(system))] if system else []
    for message in conversation:
        if message.role == "system":
            continue
        message = replace(message, name=None, metadata=MappingProxyType({})
                          ).without_identity()
        result = message.tool_result
        if result is not None:
            out.append(Message("tool", (replace(result, is_error=False),)))
            continue
        parts: list[Part] = []
        beside = False
        for i, part in enumerate(message.parts):
            if isinstance(part, ReasoningPart):
                beside = _sent(message.parts[i + 1] if i + 1 < len(message.parts) else None)
                if beside:
                    parts.append(part)
            elif isinstance(part, TextPart | ToolCallPart):
                if isinstance(part, TextPart) and not part.text:
                    continue
                parts.append(part if beside else replace(part, item_id=None))
            elif isinstance(part, ImagePart):
                url = part.url
                media = url[5:url.index(";")] if url.startswith("data:") and ";" in url else None
                parts.append(ImagePart(url, media or None, part.detail or "auto"))
        out.append(replace(message, parts=tuple(parts)))
    return out


def read_responses(instructions: str | None, items: list[dict[str, Any]]) -> list[Message]:
    back = [Message.system(instructions)] if instructions is not None else []
    return back + (coerce_many(items) if items else [])


@CONVERSATIONS
@given(reasoned(conversations()))
def test_responses_round_trip(conversation: list[Message]) -> None:
    instructions, items = through_json(to_responses(conversation))
    assert read_responses(instructions, items) == responses_normal(conversation)
    text = json.dumps(items, ensure_ascii=False)
    assert MISSING_RESULT not in text and "[result of tool call" not in text
    sdk_checked({"input": items, **({"instructions": instructions} if instructions else {})})


def check_responses_rules(instructions: str | None, items: list[dict[str, Any]]) -> None:
    """What the API takes: outputs answer earlier calls, reasoning precedes its item, item
    ids only after their reasoning, and every item in the SDK's types."""
    assert instructions is None or instructions.strip()
    pending: set[str] = set()
    after_output = False
    for i, item in enumerate(items):
        kind = item["type"]
        if kind == "function_call_output":
            assert item["call_id"] in pending
            pending.remove(item["call_id"])
            after_output = True
            continue
        if kind == "message" and item["role"] == "user":
            assert not pending and item["content"]
            assert all(b["type"] in ("input_text", "input_image") for b in item["content"])
        else:
            assert not (after_output and pending)  # the model speaks again: all answered
        if kind == "function_call":
            pending.add(item["call_id"])
        after_output = False
        if kind == "message" and item["role"] == "assistant" and not isinstance(
                item["content"], str):
            # The API takes only output_text and refusal from the assistant.
            assert item["status"] == "completed"
            assert all(b["type"] == "output_text" for b in item["content"])
        if kind == "reasoning":
            after = items[i + 1]
            assert after["type"] in ("function_call", "message") and "id" in after
        elif "id" in item:
            j = i - 1
            while j >= 0 and items[j]["type"] in ("function_call", "message") and items[
                    j].get("role") != "user":
                j -= 1
            assert j >= 0 and items[j]["type"] == "reasoning"
    sdk_checked({"input": items, **({"instructions": instructions} if instructions else {})})


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


@CONVERSATIONS
@given(reasoned(messy_conversations() | conversations()))
def test_responses_output_keeps_the_rules(conversation: list[Message]) -> None:
    instructions, items = to_responses(conversation)
    check_responses_rules(instructions, items)
    written = _strings([instructions, items])
    for message in conversation:
        for part in message.parts:
            if isinstance(part, TextPart | ToolResultPart):
                text = part.text if isinstance(part, TextPart) else part.content
                assert not text or any(text in s for s in written)


@CONVERSATIONS
@given(reasoned(messy_conversations() | conversations()))
def test_chat_and_anthropic_writers_skip_reasoning_and_keep_their_rules(
    conversation: list[Message]
) -> None:
    plain = [replace(m, parts=tuple(replace(p, item_id=None) if isinstance(
        p, TextPart | ToolCallPart) else p for p in m.parts if not isinstance(
        p, ReasoningPart))) for m in conversation]
    plain = [m for m, o in zip(plain, conversation, strict=True)
             if m.parts or not o.parts]  # an assistant message of reasoning alone goes
    chat = to_openai(conversation)
    system, messages = to_anthropic(conversation)
    assert chat == to_openai(plain) and (system, messages) == to_anthropic(plain)
    check_openai_rules(chat)
    check_anthropic_rules(system, messages)
    assert SECRET not in json.dumps([chat, system, messages])


@given(st.text(string.ascii_letters, min_size=1, max_size=8), st.lists(st.text(max_size=8),
                                                                      max_size=3),
       st.none() | st.text(max_size=12), st.lists(st.text(max_size=8), max_size=2))
def test_reasoning_item_reads_back_as_it_was_written(
    rid: str, summary: list[str], encrypted: str | None, content: list[str]
) -> None:
    part = ReasoningPart(f"rs_{rid}", tuple(summary), encrypted, tuple(content))
    message = Message("assistant", (part, ToolCallPart("call_1", "f", "{}", item_id="fc_1")))
    _, items = to_responses([message])
    assert coerce_many(through_json(items)) == [message]
