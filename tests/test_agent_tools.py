"""The agent's own tools (issue 15 item 1): read in any form, budgeted, sent with memci's.

``session.build(tools=[...])`` and ``engine.session(..., tools=[...])`` take the agent's
tool definitions in OpenAI, Anthropic or Responses form; the payloads carry them, in each
provider's form, before memci's own, as the official SDKs' types and a local server that
keeps the APIs' rules accept them; ``session.handles(call)`` tells memci's calls from the
agent's. The whole loop runs through the ``openai`` SDK against the fake server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import ToolUseBlock
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat import ChatCompletionMessageFunctionToolCall
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses import FunctionTool, ResponseFunctionToolCall
from pydantic import TypeAdapter

import memci
from memci.messages import ToolCallPart
from tests.fakellm import FakeLLM, Reply
from tests.test_responses import sdk_checked

CHAT = TypeAdapter(CompletionCreateParamsNonStreaming)
MESSAGES = TypeAdapter(MessageCreateParamsNonStreaming)

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
STRICT_SCHEMA = {**SCHEMA, "additionalProperties": False}
# One tool in each form an agent may have it in.
OPENAI_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city", "parameters": SCHEMA}}
ANTHROPIC_TOOL = {"name": "get_time", "description": "Local time in a city",
                  "input_schema": SCHEMA, "cache_control": {"type": "ephemeral"}}
RESPONSES_TOOL = {"type": "function", "name": "book_table",
                  "description": "Book a table in a city", "parameters": STRICT_SCHEMA}
TOOLS = [OPENAI_TOOL, ANTHROPIC_TOOL, RESPONSES_TOOL]
NAMES = ["get_weather", "get_time", "book_table"]


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def _session(engine: memci.Engine, name: str = "s", **settings: Any) -> memci.Session:
    s = engine.session(name, **settings)
    s.set_system("You are a helpful assistant.")
    s.add({"role": "user", "content": "What is the weather in Paris?"})
    return s


def _names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


# -- reading and writing each form -------------------------------------------------------


def test_each_form_is_sent_in_every_form_before_memcis_own(engine: memci.Engine) -> None:
    s = _session(engine)
    ctx = s.build(tools=TOOLS)
    own = [t.name for t in s.tool_specs()]
    assert [t.name for t in ctx.tools] == [*NAMES, *own]
    assert [t.agent for t in ctx.tools] == [True] * 3 + [False] * len(own)
    for payload in (ctx.to_openai(), ctx.to_anthropic(), ctx.to_responses()):
        assert _names(payload["tools"]) == [*NAMES, *own]
    chat, claude, responses = (ctx.to_openai()["tools"], ctx.to_anthropic()["tools"],
                               ctx.to_responses()["tools"])
    # In its own form a tool goes back exactly as given (cache_control included) ...
    assert chat[0] == OPENAI_TOOL and claude[1] == ANTHROPIC_TOOL
    assert responses[2] == {**RESPONSES_TOOL, "strict": True}  # the key the SDK requires
    # ... and in the others from its name, description, schema and strictness.
    assert claude[0] == {"name": "get_weather", "description": "Current weather in a city",
                         "input_schema": SCHEMA}
    assert chat[1] == {"type": "function", "function": {
        "name": "get_time", "description": "Local time in a city", "parameters": SCHEMA}}
    assert responses[1]["strict"] is False and "cache_control" not in responses[1]
    # A Responses function without "strict" is strict (the API's default): so it stays.
    assert chat[2]["function"]["strict"] is True and claude[2]["strict"] is True
    assert responses[0] == {"type": "function", "name": "get_weather",
                            "description": "Current weather in a city", "parameters": SCHEMA,
                            "strict": False}


def test_payloads_are_what_the_sdks_take(engine: memci.Engine) -> None:
    ctx = _session(engine).build(tools=TOOLS)
    body = {"model": "gpt-4o-mini", **ctx.to_openai()}
    assert json.loads(json.dumps(CHAT.validate_python(body), default=list)) == body
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, **ctx.to_anthropic()}
    assert json.loads(json.dumps(MESSAGES.validate_python(body), default=list)) == body
    sdk_checked(ctx.to_responses())


def test_payloads_go_through_the_sdks_to_a_server_that_keeps_the_rules(
    engine: memci.Engine, fake: FakeLLM
) -> None:
    ctx = _session(engine).build(tools=TOOLS)
    with openai.OpenAI(base_url=fake.openai_base_url, api_key="k", max_retries=0) as client:
        client.chat.completions.create(model="m", **ctx.to_openai())
        client.responses.create(model="m", **ctx.to_responses())
    with anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key="k",
                             max_retries=0) as claude:
        claude.messages.create(model="m", max_tokens=100, **ctx.to_anthropic())
    sent = [r.json for r in fake.requests]
    assert [_names(b["tools"])[:3] for b in sent] == [NAMES] * 3


def test_sdk_objects_and_tool_specs_are_read_too(engine: memci.Engine) -> None:
    s = _session(engine)
    sdk = FunctionTool(type="function", name="book_table", parameters=STRICT_SCHEMA,
                       strict=True, description="Book a table")
    spec = memci.ToolSpec("get_weather", "Current weather", SCHEMA)
    ctx = s.build(tools=[sdk, spec])
    assert [t.name for t in ctx.tools[:2]] == ["book_table", "get_weather"]
    assert ctx.to_responses()["tools"][0]["strict"] is True
    assert ctx.to_openai()["tools"][1] == {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather", "parameters": SCHEMA}}


def test_given_tools_are_copied_not_shared(engine: memci.Engine) -> None:
    s = _session(engine)
    mine = json.loads(json.dumps(OPENAI_TOOL))
    ctx = s.build(tools=[mine])
    mine["function"]["name"] = "changed"
    payload = ctx.to_openai()
    payload["tools"][0]["function"]["description"] = "edited"
    assert ctx.to_openai()["tools"][0] == OPENAI_TOOL


# -- the budget ----------------------------------------------------------------------------


def _long_session(engine: memci.Engine, name: str = "long") -> memci.Session:
    s = engine.session(name, strategy="oldest")
    for i in range(60):
        s.add({"role": "user", "content": f"question {i} " + "about the weather " * 20})
        s.add({"role": "assistant", "content": f"answer {i} " + "it is sunny " * 20})
    return s


def _many_tools(n: int) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {
        "name": f"tool_{i}", "description": "does one thing well " * 10,
        "parameters": SCHEMA}} for i in range(n)]


def test_the_agents_tools_are_reserved_from_the_budget(engine: memci.Engine) -> None:
    s = _long_session(engine)
    without = s.build(budget=3000)
    tools = _many_tools(8)
    with_tools = s.build(budget=3000, tools=tools)
    counted = s.tokenizer.count(json.dumps(tools)) + 4 * len(tools)
    assert with_tools.stats.sections["agent_tools"] == counted
    assert without.stats.sections["agent_tools"] == 0
    assert with_tools.stats.total_tokens <= 3000 and without.stats.total_tokens <= 3000
    # The conversation gave up the room the tools take.
    shown = with_tools.stats.sections["recent"] + with_tools.stats.sections["contents"]
    before = without.stats.sections["recent"] + without.stats.sections["contents"]
    assert shown <= before - counted + 200  # within a message's granularity
    assert with_tools.stats.total_tokens == sum(with_tools.stats.sections.values()) + 3


@pytest.mark.parametrize("budget", [400, 700, 1500, 5000])
def test_builds_with_tools_stay_within_the_budget(engine: memci.Engine, budget: int) -> None:
    s = _long_session(engine)
    ctx = s.build(budget=budget, tools=_many_tools(2))
    assert ctx.stats.total_tokens <= budget
    exact = s.tokenizer.count(json.dumps(ctx.to_openai()["tools"]))
    assert ctx.stats.sections["tools"] + ctx.stats.sections["agent_tools"] >= exact


def test_tools_that_leave_no_room_are_refused(engine: memci.Engine) -> None:
    s = _long_session(engine)
    with pytest.raises(memci.BudgetTooSmallError,
                       match=r"budget of 500 .* the agent's tools \(\d+ tokens of schemas\)"):
        s.build(budget=500, tools=_many_tools(10))
    assert len(s.messages()) == 120  # nothing changed


def test_memcis_tools_give_way_to_the_agents_on_a_small_budget(engine: memci.Engine) -> None:
    s = _long_session(engine)
    s.add({"role": "assistant", "content": "checking",
           "tool_calls": [{"id": "c1", "type": "function",
                           "function": {"name": "get_weather", "arguments": "{}"}}]})
    s.add({"role": "tool", "tool_call_id": "c1", "content": "sunny, 24°C, light wind\n" * 40})
    full = s.build(budget=5_000, tools=_many_tools(2))  # the history does not fit
    small = s.build(budget=1200, tools=_many_tools(2))
    assert len(small.tools) < len(full.tools)
    assert [t.name for t in small.tools[:2]] == ["tool_0", "tool_1"]  # the agent's all stay
    assert small.stats.total_tokens <= 1200


# -- names: no clash with memci's own ------------------------------------------------------


def test_a_clash_with_memcis_tool_is_an_error_naming_both(engine: memci.Engine) -> None:
    s = _session(engine)
    clash = {"type": "function", "function": {"name": "search_memory", "parameters": SCHEMA}}
    with pytest.raises(memci.ToolNameClashError) as err:
        s.build(tools=[OPENAI_TOOL, clash])
    assert "the agent's tool 'search_memory' (tools[1])" in str(err.value)
    assert "memci's own tool 'search_memory'" in str(err.value)
    assert isinstance(err.value, memci.InvalidToolError | memci.InvalidInputError)


@pytest.mark.parametrize("name", ["artifact_get", "pin_add", "grep", "recall_page"])
def test_a_clash_shows_on_the_first_build_not_when_memci_starts_offering_it(
    engine: memci.Engine, name: str
) -> None:
    s = _session(engine)
    assert name == "recall_page" or name not in [t.name for t in s.tool_specs()]
    with pytest.raises(memci.ToolNameClashError, match=name):
        s.build(tools=[{"name": name, "input_schema": SCHEMA}])


def test_a_name_memci_does_not_offer_in_the_session_is_free(engine: memci.Engine) -> None:
    s = _session(engine, tools=["recall_page", "search_memory"])
    ctx = s.build(tools=[{"name": "grep", "input_schema": SCHEMA}])
    assert [t.name for t in ctx.tools] == ["grep", "recall_page", "search_memory"]
    assert not s.handles("grep")  # the agent's own grep


# -- engine.session(..., tools=[...]) as the default ---------------------------------------


def test_session_tools_are_the_default_of_every_build(engine: memci.Engine) -> None:
    s = engine.session("s", tools=TOOLS, model="gpt-4o-mini")
    assert [t.name for t in s.agent_tools] == NAMES
    s.add({"role": "user", "content": "hi"})
    assert [t.name for t in s.build().tools[:3]] == NAMES
    assert not any(t.agent for t in s.build(tools=[]).tools)  # none this time
    assert [t.name for t in s.build(tools=[OPENAI_TOOL]).tools if t.agent] == ["get_weather"]
    again = engine.session("s", tools=[ANTHROPIC_TOOL])
    assert again is s and [t.name for t in s.build().tools if t.agent] == ["get_time"]
    # The agent's tools are not a stored setting: memci's tool setting is left alone.
    assert "tools" not in engine.store.session("default", "s").settings  # type: ignore[union-attr]


def test_memcis_tool_setting_still_takes_names(engine: memci.Engine) -> None:
    s = engine.session("s", tools=["recall_page"])
    assert [t.name for t in s.tool_specs()] == ["recall_page"] and s.agent_tools == ()
    with pytest.raises(memci.ConfigError, match="mixes memci tool names and tool definitions"):
        engine.session("s", tools=["recall_page", OPENAI_TOOL])


def test_bad_session_tools_change_nothing(engine: memci.Engine) -> None:
    engine.session("s", model="gpt-4o-mini", tools=[OPENAI_TOOL])
    for bad in ([{"name": "x y", "input_schema": SCHEMA}],
                [{"type": "function", "function": {"name": "grep", "parameters": SCHEMA}}]):
        with pytest.raises(memci.InvalidToolError):
            engine.session("s", model="gpt-4o", tools=bad)
        saved = engine.store.session("default", "s")
        assert saved is not None and saved.settings["model"] == "gpt-4o-mini"
        assert [t.name for t in engine.session("s").agent_tools] == ["get_weather"]
    with pytest.raises(memci.InvalidToolError):
        engine.session("new", tools=[{"name": "?", "input_schema": SCHEMA}])
    assert engine.store.session("default", "new") is None


# -- bad definitions: a typed error that says what to fix ----------------------------------

BAD: list[tuple[Any, str]] = [
    (OPENAI_TOOL, "takes a list of tool definitions, not dict"),
    ("get_weather", "takes a list of tool definitions, not str"),
    (memci.ToolSpec("a", "", SCHEMA), "takes a list of tool definitions, not ToolSpec"),
    (42, "takes a list of tool definitions, not int"),
    ([42], r"tools\[0\] must be a dict"),
    ([None], r"tools\[0\] must be a dict"),
    ([{"type": "web_search"}], "tool of type 'web_search'.*add it to the payload"),
    ([{"type": "web_search_20250305", "name": "web_search"}], "built-in tool"),
    ([{"type": "custom", "custom": {"name": "x"}}], "tool of type 'custom'"),
    ([{"name": "lookup"}], "not a tool definition memci reads"),
    ([{"type": "function", "function": "get_weather"}], "'function' must be an object"),
    ([{"type": "function", "function": {"parameters": SCHEMA}}], r"the name None must be"),
    ([{"type": "function", "name": "", "parameters": SCHEMA}], r"the name '' must be"),
    ([{"name": "get weather", "input_schema": SCHEMA}], "1 to 64 letters, digits"),
    ([{"name": "x" * 65, "input_schema": SCHEMA}], "1 to 64 letters"),
    ([{"name": "天气", "input_schema": SCHEMA}], "1 to 64 letters"),
    ([{"name": 7, "input_schema": SCHEMA}], "the name 7 must be"),
    ([{"name": "a", "input_schema": None}], "input_schema must be a JSON Schema object"),
    ([{"name": "a", "input_schema": "object"}], "parameters must be a JSON Schema object"),
    ([{"name": "a", "input_schema": {"type": "string"}}], "of type 'object'"),
    ([{"name": "a", "input_schema": {"properties": {}}}], "of type 'object'"),
    ([{"name": "a", "input_schema": SCHEMA, "description": 5}], "description must be text"),
    ([{"type": "function", "name": "a", "parameters": SCHEMA, "strict": "yes"}],
     "strict must be true or false"),
    ([{"name": "a", "input_schema": {**SCHEMA, "default": float("nan")}}], "not JSON"),
    ([{"name": "a", "input_schema": SCHEMA, "description": "bad \ud800 text"}],
     "not valid Unicode"),
    ([{"name": "a", "input_schema": {**SCHEMA, "x": {1, 2}}}], "not JSON"),
    ([{"name": "a", "input_schema": SCHEMA}, {"name": "a", "input_schema": SCHEMA}],
     r"tools\[0\] and tools\[1\] are both named 'a'"),
    ([{"name": f"t{i}", "input_schema": SCHEMA} for i in range(600)], "more than 512 tools"),
]


@pytest.mark.parametrize(("tools", "message"), BAD)
def test_bad_tools_raise_a_typed_error_saying_what_to_fix(
    engine: memci.Engine, tools: Any, message: str
) -> None:
    s = _session(engine)
    with pytest.raises(memci.InvalidToolError, match=message):
        s.build(tools=tools)
    assert s.stats().builds == 0


def test_deeply_nested_schema_is_refused_without_recursion_error(engine: memci.Engine) -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(5000):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(memci.InvalidToolError, match="nested more than 64 levels"):
        _session(engine).build(tools=[{"name": "deep", "input_schema": deep}])


def test_tools_over_the_message_size_limit_are_refused(engine: memci.Engine) -> None:
    s = _session(engine, max_message_bytes=10_000)
    big = {"name": "big", "description": "x" * 20_000, "input_schema": SCHEMA}
    with pytest.raises(memci.InvalidToolError, match="more than 10,000 bytes"):
        s.build(tools=[big])


def test_a_sdk_object_that_cannot_dump_itself_is_a_typed_error(engine: memci.Engine) -> None:
    class Broken:
        def model_dump(self, **_: Any) -> Any:
            raise RuntimeError("boom")

    with pytest.raises(memci.InvalidToolError, match=r"Broken.model_dump\(\) failed"):
        _session(engine).build(tools=[Broken()])


# -- whose call is it? ---------------------------------------------------------------------


def test_handles_tells_memcis_calls_from_the_agents_in_every_form(
    engine: memci.Engine,
) -> None:
    s = _session(engine, tools=TOOLS)
    for name, mine in (("search_memory", True), ("recall_page", True),
                       ("get_weather", False), ("anything_else", False)):
        forms: list[object] = [
            name,
            ToolCallPart("c1", name, "{}"),
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}},
            {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}},
            {"type": "function_call", "call_id": "c1", "name": name, "arguments": "{}"},
            ChatCompletionMessageFunctionToolCall(
                id="c1", type="function", function={"name": name, "arguments": "{}"}),
            ToolUseBlock(type="tool_use", id="toolu_1", name=name, input={}),
            ResponseFunctionToolCall(type="function_call", call_id="c1", name=name,
                                     arguments="{}"),
        ]
        assert [s.handles(f) for f in forms] == [mine] * len(forms), name


def test_handles_answers_for_every_tool_memci_can_run_offered_now_or_not(
    engine: memci.Engine,
) -> None:
    s = _session(engine)
    assert "pin_add" not in [t.name for t in s.tool_specs()]  # not offered yet ...
    assert s.handles("pin_add")  # ... but a model may call it, and memci runs it
    assert not s.handles("file_snippet")  # no file_roots: memci has none
    oldest = _session(engine, "oldest", strategy="oldest")
    assert not oldest.handles("recall_page")  # no pages to recall with this strategy
    narrowed = _session(engine, "narrowed", tools=["search_memory"])
    assert narrowed.handles("search_memory") and not narrowed.handles("pin_add")


@pytest.mark.parametrize("call", [None, 5, {"id": "c1"}, {"type": "web_search_call"},
                                  {"function": "x"}, ["search_memory"]])
def test_handles_refuses_what_is_not_a_tool_call(engine: memci.Engine, call: Any) -> None:
    with pytest.raises(memci.InvalidToolError, match="expected a tool call"):
        _session(engine).handles(call)


# -- the whole loop ------------------------------------------------------------------------


def get_weather(city: str) -> str:
    return f"Sunny in {city}, 21 °C"


def run_loop(session: memci.Session, client: openai.OpenAI, question: str) -> str:
    """The README's loop: build, call the model, add the reply, run the tools, add results."""
    session.add({"role": "user", "content": question})
    while True:
        ctx = session.build()
        reply = client.chat.completions.create(model="m", **ctx.to_openai()).choices[0].message
        session.add(reply)
        if not reply.tool_calls:
            return reply.content or ""
        for call in reply.tool_calls:
            assert call.type == "function"
            if session.handles(call):
                output = session.call_tool(call.function.name, call.function.arguments)
            else:
                output = get_weather(**json.loads(call.function.arguments))
            session.add({"role": "tool", "tool_call_id": call.id, "content": output})


def test_the_whole_loop_runs_memcis_tools_and_the_agents(
    engine: memci.Engine, fake: FakeLLM
) -> None:
    s = engine.session("loop", tools=[OPENAI_TOOL])
    s.set_system("You are a helpful assistant.")
    fake.push(Reply("", calls=(("get_weather", {"city": "Paris"}),
                               ("search_memory", {"query": "Paris"}))),
              Reply("It is sunny in Paris."))
    with openai.OpenAI(base_url=fake.openai_base_url, api_key="k", max_retries=0) as client:
        answer = run_loop(s, client, "What is the weather in Paris?")
    assert answer == "It is sunny in Paris."
    first, second = (r.json for r in fake.requests)
    assert _names(first["tools"])[0] == "get_weather"  # the agent's tools first
    results = {m["tool_call_id"]: m["content"] for m in second["messages"]
               if m["role"] == "tool"}
    assert "Sunny in Paris, 21 °C" in results["call_fake_0_0"]
    assert "results for 'Paris'" in results["call_fake_0_1"]
    assert [m.role for m in s.messages()] == ["system", "user", "assistant", "tool", "tool",
                                              "assistant"]


def test_readme_example_is_the_real_loop(
    fake: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Use it from Python", 1)[1].split("```python\n", 1)[1]
    code = block.split("```", 1)[0]
    assert "session.handles(call)" in code and "session.call_tool(" in code
    monkeypatch.setenv("MEMCI_HOME", str(tmp_path))
    monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    fake.push(Reply("", calls=(("get_weather", {"city": "Paris"}),
                               ("search_memory", {"query": "Paris"}))),
              Reply("Sunny in Paris; you had not asked before."))
    namespace: dict[str, Any] = {"__name__": "readme"}
    exec(compile(code, "README.md", "exec"), namespace)
    assert fake.count == 2
    assert namespace["reply"].content == "Sunny in Paris; you had not asked before."
    tools = [m for m in fake.requests[1].json["messages"] if m["role"] == "tool"]
    assert len(tools) == 2 and "Sunny in Paris" in tools[0]["content"]
