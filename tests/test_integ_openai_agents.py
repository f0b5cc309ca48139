"""memci.integrations.openai_agents with the real OpenAI Agents SDK and a real HTTP model.

The SDK's ``Runner`` drives an agent whose model is ``OpenAIResponsesModel`` over the
``openai`` client, talking to tests/fakellm.py on 127.0.0.1 (the Responses endpoint, which
holds every request to the API's rules: pairing, reasoning items, ids). A planner plays
the model: it reads each request and calls the agent's ``read_file`` (5-20 KB outputs),
memci's ``artifact_get`` on a pointer it sees, and ``recall_page`` on an archived page.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, Runner, function_tool
from agents.memory import SessionSettings
from agents.models.openai_responses import OpenAIResponsesModel
from agents.testing import ScriptedModel, assistant_message, function_call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import AsyncOpenAI

import memci
from memci.integrations.openai_agents import MemciSession
from memci.tokens import get_tokenizer

from .fakellm import FakeLLM, RecordedRequest, Reply

ROOT = Path(__file__).resolve().parents[1]
RUNS, STEPS = 4, 10  # 40 tool steps
WINDOW = 10_000
TOKENS = get_tokenizer("cl100k_base")


def file_text(path: str) -> str:
    """A deterministic 5-20 KB file, different in every line."""
    size = 5_000 + (sum(map(ord, path)) * 2_657) % 15_000
    lines, n, length = [], 0, 0
    while length < size:
        lines.append(f"{path}:{n} value={(n * 7_919) % 104_729} status={'ok' if n % 9 else 'ERR'}")
        length += len(lines[-1]) + 1
        n += 1
    return "\n".join(lines)


def request_tokens(request: RecordedRequest) -> int:
    """A request's input as the model reads it, counted with cl100k_base.

    Text of instructions and items with memci's OpenAI framing (4 a message, 10 a call,
    5 a result), and the tools' schemas. Reasoning items are the model's own opaque state
    (encrypted), not text it reads, and are left out.
    """
    data = request.json
    total = 3 + (TOKENS.count(data["instructions"]) + 4 if data.get("instructions") else 0)
    for item in data["input"]:
        kind = item.get("type", "message")
        if kind == "message":
            content = item["content"]
            text = content if isinstance(content, str) else "".join(
                b.get("text", "") for b in content)
            total += 4 + TOKENS.count(text)
        elif kind == "function_call":
            total += 10 + TOKENS.count(item["name"]) + TOKENS.count(item["arguments"])
        elif kind == "function_call_output":
            total += 5 + TOKENS.count(item["output"])
    tools = [{"type": "function", "function": {"name": t["name"], "description":
              t.get("description") or "", "parameters": t["parameters"]}}
             for t in data.get("tools") or []]
    if tools:
        total += TOKENS.count(json.dumps(tools)) + 4 * len(tools)
    return total


def read_artifact(session: memci.Session, artifact: str) -> str:
    """A whole stored output, read through memci's artifact_get tool, 4,000 chars a call."""
    parts: list[str] = []
    while True:
        part = session.call_tool("artifact_get", {"id": artifact, "offset": sum(map(len, parts)),
                                                  "length": 4_000})
        assert not part.startswith("error:"), part
        if not part:
            return "".join(parts)
        parts.append(part)


def strings(value: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def pairing_problems(items: list[dict[str, Any]]) -> list[str]:
    calls: set[str] = set()
    answered: set[str] = set()
    problems = []
    for item in items:
        if item.get("type") == "function_call":
            calls.add(item["call_id"])
        elif item.get("type") == "function_call_output":
            if item["call_id"] not in calls or item["call_id"] in answered:
                problems.append(f"output {item['call_id']} answers no open call")
            answered.add(item["call_id"])
    problems += [f"call {c} unanswered" for c in calls - answered]
    return problems


class Planner:
    """Plays the model: read files, fetch an artifact, recall a page, then answer."""

    def __init__(self) -> None:
        self.run = -1
        self.step = 0
        self.fetched: list[str] = []
        self.recalled: list[int] = []
        self.calls = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        text = json.dumps(request.json)
        run = max(int(n) for n in re.findall(r"Question (\d+): which", text))
        if run != self.run:
            self.run, self.step = run, 0
        self.step += 1
        if self.step > STEPS:
            return Reply(f"done with run {self.run}")
        self.calls += 1
        if self.step == 4:
            pointers = re.findall(r"artifact:([0-9a-f]{6,})", text)
            if pointers:
                self.fetched.append(pointers[-1])
                return Reply("", calls=(("artifact_get", {"id": pointers[-1], "offset": 0,
                                                          "length": 300}),))
        pages = [int(p) for p in re.findall(r"\[Page (\d+)\]", text)]
        if self.step >= 6 and pages and len(self.recalled) <= self.run - 2:
            self.recalled.append(pages[0])
            return Reply("", calls=(("recall_page", {"index": pages[0]}),))
        return Reply("", calls=(("read_file", {"path": f"run{self.run}/f{self.step}.log"}),))


def read_file_tool() -> FunctionTool:
    async def invoke(_ctx: RunContextWrapper[Any], arguments: str) -> str:
        return file_text(json.loads(arguments)["path"])

    return FunctionTool(
        name="read_file", description="Read a file of the project.",
        params_json_schema={"type": "object", "properties": {"path": {"type": "string"}},
                            "required": ["path"], "additionalProperties": False},
        on_invoke_tool=invoke)


def test_working_state_is_registered_enabled_when_offered_and_runs(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("ws")
        session.add({"role": "user", "content": "run the tests"})
        session.add({"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "run_tests", "arguments": "{}"}}]})
        session.add({"role": "tool", "tool_call_id": "c1", "content": "3 passed"})
        tools = {t.name: t for t in MemciSession(session).tools()}
        agent = Agent(name="a", tools=list(tools.values()))
        ctx = RunContextWrapper(None)

        async def enabled(name: str) -> bool:
            check = tools[name].is_enabled
            assert callable(check)
            return bool(await check(ctx, agent))

        assert "working_state" in tools and "plan_add" not in tools  # one for the nine
        session.build()  # the history is sent as stored: nothing of memci's can act
        assert not asyncio.run(enabled("working_state"))
        assert not asyncio.run(enabled("artifact_get"))
        session.add({"role": "assistant", "content": None, "tool_calls": [{
            "id": "c2", "type": "function",
            "function": {"name": "run_tests", "arguments": "{}"}}]})
        session.add({"role": "tool", "tool_call_id": "c2",
                     "content": "".join(f"test_{i} PASSED\n" for i in range(2000))})
        session.build()  # shown by its view now: memci shapes the request
        assert asyncio.run(enabled("working_state"))
        assert asyncio.run(enabled("artifact_get"))
        answer = asyncio.run(tools["working_state"].on_invoke_tool(
            ctx, json.dumps({"action": "plan_add", "text": "ship it"})))
        assert answer == "added plan item 1"
        assert "ship it" in session.call_tool("plan_list")
    finally:
        engine.close()


async def drive(session: memci.Session, fake: FakeLLM, *, use_filter: bool = True) -> None:
    memory = MemciSession(session)
    async with AsyncOpenAI(base_url=fake.openai_base_url, api_key="test-key",
                           max_retries=0) as client:
        agent = Agent(name="reader", instructions="You read logs and answer briefly.",
                      model=OpenAIResponsesModel("fake-model", client),
                      tools=[read_file_tool(), *memory.tools()])
        config = RunConfig(tracing_disabled=True, call_model_input_filter=(
            memory.call_model_input_filter if use_filter else None))
        for run in range(RUNS):
            result = await Runner.run(agent, f"Question {run}: which lines failed?",
                                      session=memory, run_config=config, max_turns=STEPS + 5)
            assert result.final_output == f"done with run {run}"


def test_runner_40_tool_steps_every_request_within_budget(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("agents", context_window=WINDOW, tokenizer="cl100k_base")
        planner = Planner()
        with FakeLLM(planner=planner) as fake:
            asyncio.run(drive(session, fake))
            requests = fake.requests
            assert not fake.server_errors
        assert all(r.path.endswith("/responses") for r in requests)
        assert planner.calls == RUNS * STEPS and len(requests) == RUNS * (STEPS + 1)
        budget = session.settings.budget
        sizes = [request_tokens(r) for r in requests]
        assert max(sizes) <= budget, sizes
        for r in requests:
            assert not pairing_problems(r.json["input"]), r.index
        # Without memci the same run's last request carries every output in full.
        outputs = sum(len(file_text(f"run{r}/f{s}.log")) for r in range(RUNS)
                      for s in range(1, STEPS + 1))
        assert outputs > 20 * budget
        # Pointers resolve: every artifact a read_file result pointed to is its exact output.
        calls = {i["call_id"]: i for r in requests for i in r.json["input"]
                 if i.get("type") == "function_call"}
        pointers = {m for r in requests for m in re.findall(
            r"call (\S+) · artifact:([0-9a-f]{6,})", "\n".join(strings(r.json)))}
        assert planner.fetched and planner.recalled
        checked = 0
        for call_id, artifact in pointers:
            if calls[call_id]["name"] == "read_file":
                path = json.loads(calls[call_id]["arguments"])["path"]
                assert read_artifact(session, artifact) == file_text(path), (call_id, artifact)
                checked += 1
        assert checked >= RUNS * (STEPS - 4)
        # The model's artifact_get answers came back with the original's first characters.
        fetched_outputs = [i["output"] for r in requests for i in r.json["input"]
                           if i.get("type") == "function_call_output"
                           and "value=" in i.get("output", "")]
        assert fetched_outputs
        # recall_page brought the page back: the request after it holds that page's question.
        after = next(r for r in requests if any(
            i.get("type") == "function_call" and i["name"] == "recall_page"
            for i in r.json["input"]))
        assert "Question 0" in json.dumps(after.json["input"])
        # Everything the SDK gave the session is stored, once.
        stored = session.messages()
        assert sum(1 for m in stored if m.role == "user") == RUNS
        assert sum(1 for m in stored if m.role == "tool") == len(
            {i["call_id"] for r in requests for i in r.json["input"]
             if i.get("type") == "function_call_output"})
    finally:
        engine.close()


def test_without_the_filter_the_tool_loop_outgrows_the_budget(tmp_path: Path) -> None:
    """What the filter is for: the session alone bounds only the start of each run."""
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("agents", context_window=WINDOW, tokenizer="cl100k_base")
        with FakeLLM(planner=Planner()) as fake:
            asyncio.run(drive(session, fake, use_filter=False))
            sizes = [request_tokens(r) for r in fake.requests]
        assert max(sizes) > session.settings.budget
    finally:
        engine.close()


def test_session_protocol_get_add_pop_clear(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("s")
        memory = MemciSession(session)

        async def scenario() -> None:
            await memory.add_items([{"role": "user", "content": "first"}])
            await memory.add_items([
                {"type": "function_call", "call_id": "c1", "name": "lookup",
                 "arguments": "{\"q\": \"x\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "found x"},
                {"role": "assistant", "content": "x is found"}])
            items = await memory.get_items()
            assert [i.get("type", i.get("role")) for i in items] == [
                "user", "function_call", "function_call_output", "assistant"]
            assert (await memory.get_items(limit=2))[0]["type"] == "function_call_output"
            popped = await memory.pop_item()
            assert popped is not None and popped["content"] == "x is found"
            tail = await memory.get_items(limit=1)
            assert tail[0]["type"] == "function_call_output"
            popped = await memory.pop_item()
            assert popped is not None and popped["type"] == "function_call_output"
            tail = await memory.get_items(limit=1)
            assert tail[0]["type"] == "function_call"
            await memory.clear_session()
            assert await memory.get_items(limit=5) == []
            assert await memory.pop_item() is None

        asyncio.run(scenario())
        # Nothing is deleted: popped and cleared items stay in the store and in search.
        assert len(session.messages()) >= 4
        assert session.search("found x")
    finally:
        engine.close()


# -- behaves like SQLiteSession (docs/integrations/openai_agents.md) ---------------------


SHAPES: list[dict[str, Any]] = [
    {"role": "user", "content": "Hello"},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "See [1].", "annotations": [
         {"type": "url_citation", "url": "https://example.com", "title": "ex",
          "start_index": 4, "end_index": 7}]}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
     "arguments": "{\"q\": \"x\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "x" * 5_000},
    {"role": "assistant", "content": "Done."},
]


def test_items_come_back_in_the_shape_given(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        memory = MemciSession(engine.session("s"))

        async def scenario() -> None:
            await memory.add_items(SHAPES[:2])  # type: ignore[arg-type]
            await memory.add_items(SHAPES[2:])  # type: ignore[arg-type]
            assert await memory.get_items() == SHAPES
            assert await memory.get_items(limit=2) == SHAPES[-2:]
            assert await memory.pop_item() == SHAPES[-1]
            assert await memory.pop_item() == SHAPES[-2]
            assert await memory.get_items() == SHAPES[:-2]

        asyncio.run(scenario())
        # memci read them all (the long output once, as its artifact and text).
        stored = engine.session("s").messages()
        assert [m.role for m in stored][:4] == ["user", "user", "assistant", "tool"]
    finally:
        engine.close()


def test_get_items_is_the_store_not_the_budgeted_context(tmp_path: Path) -> None:
    """get_items() is what was stored, whatever memci would send: no tool-result header,
    no developer item, the same items with and without a limit."""
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("s", context_window=2_000)
        session.set_system("You are terse.")
        memory = MemciSession(session)
        turns = [[{"role": "user", "content": f"question {n} " + "word " * 150},
                  {"role": "assistant", "content": f"answer {n}"}] for n in range(12)]

        async def scenario() -> list[Any]:
            for turn in turns:
                await memory.add_items(turn)  # type: ignore[arg-type]
            return [await memory.get_items(), await memory.get_items(limit=100)]

        everything, limited = asyncio.run(scenario())
        assert everything == limited == [i for t in turns for i in t]
        assert session.build().stats.total_tokens <= session.settings.budget
    finally:
        engine.close()


def test_session_settings_limit_the_items(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        memory = MemciSession(engine.session("s"), session_settings={"limit": 3})
        assert memory.session_settings == SessionSettings(limit=3)
        with pytest.raises(TypeError, match="limitt"):
            MemciSession(engine.session("s"), session_settings={"limitt": 3})
        said = [{"role": "user", "content": f"message {n}"} for n in range(6)]
        model = ScriptedModel([[assistant_message("ok")]])
        agent = Agent(name="a", model=model)

        async def scenario() -> None:
            await memory.add_items(said)  # type: ignore[arg-type]
            assert [i["content"] for i in await memory.get_items()] == [
                "message 3", "message 4", "message 5"]
            assert len(await memory.get_items(limit=5)) == 5
            await Runner.run(agent, "new", session=memory, run_config=RunConfig(
                session_settings=SessionSettings(limit=2), tracing_disabled=True))

        asyncio.run(scenario())
        assert [i.get("content") for i in model.calls[-1].input] == [
            "message 4", "message 5", "new"]
    finally:
        engine.close()


def test_small_budgets_build_down_to_the_least_one_named(tmp_path: Path) -> None:
    """No floor of the adapter's own: a 150-token budget runs; below what the agent's
    instructions and the newest message need, the error names the least budget, and that
    budget runs."""
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        model = ScriptedModel([[assistant_message("ok")]] * 3)
        agent = Agent(name="a", model=model, instructions="Answer in one word.")

        async def run(window: int, name: str) -> None:
            memory = MemciSession(engine.session(name, context_window=window, reserve_ratio=0,
                                                 tools=[]))
            await Runner.run(agent, "what is two and two?", session=memory, run_config=RunConfig(
                tracing_disabled=True, call_model_input_filter=memory.call_model_input_filter))

        asyncio.run(run(150, "small"))
        with pytest.raises(memci.BudgetTooSmallError) as refused:
            asyncio.run(run(12, "tiny"))
        needed = refused.value.needed
        assert f"at least {needed}" in str(refused.value) and needed > 12
        asyncio.run(run(needed, "just"))
        sent = model.calls[-1]
        assert [i.get("content") for i in sent.input][-1] == [
            {"type": "input_text", "text": "what is two and two?"}]
    finally:
        engine.close()


class ListSession:
    """The SDK's Session protocol over a plain list: what a session should end up with."""

    session_settings: SessionSettings | None = None

    def __init__(self) -> None:
        self.session_id = "reference"
        self.items: list[Any] = []

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return list(self.items) if limit is None else self.items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        self.items.extend(items)

    async def pop_item(self) -> Any:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items.clear()


@function_tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def script(turns: list[tuple[bool, str]]) -> ScriptedModel:
    """Each turn: maybe a call to lookup as call_0 (ids repeat, as scripted models number
    calls), then an answer (whose item id repeats too)."""
    steps: list[Any] = []
    for calls, answer in turns:
        if calls:
            steps.append([function_call("lookup", {"q": "same"}, call_id="call_0")])
        steps.append([assistant_message(answer)])
    return ScriptedModel(steps)


def repeat_history(history: list[Any], new: list[Any]) -> list[Any]:
    """A session_input_callback that hands the first item back twice."""
    return [*history, *history[:1], *new]


TURN = st.tuples(st.booleans(), st.sampled_from(["OK", "done"]))
FLOWS = st.lists(st.tuples(TURN, st.sampled_from(["run", "streamed"]), st.booleans(),
                          st.booleans()), min_size=1, max_size=4)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FLOWS)
def test_runs_store_what_a_plain_session_stores(
        runs: list[tuple[tuple[bool, str], str, bool, bool]]) -> None:
    """The same scripted runs (the same answers and call ids every run, streamed or not,
    with the filter or not, a callback that repeats history) leave memci's session with
    exactly the items a plain list session gets."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = memci.Engine.open(Path(tmp) / "m.db")
        try:
            memory = MemciSession(engine.session("s"))
            reference = ListSession()

            async def drive(session: Any, use_filter: bool) -> None:
                model = script([turn for turn, *_ in runs])
                agent = Agent(name="a", model=model, tools=[lookup])
                for n, (_, how, filtered, repeat) in enumerate(runs):
                    config = RunConfig(
                        tracing_disabled=True,
                        call_model_input_filter=(memory.call_model_input_filter
                                                 if use_filter and filtered else None),
                        session_input_callback=repeat_history if repeat else None)
                    if how == "streamed":
                        result = Runner.run_streamed(agent, f"question {n}", session=session,
                                                     run_config=config)
                        async for _ in result.stream_events():
                            pass
                    else:
                        await Runner.run(agent, f"question {n}", session=session,
                                         run_config=config)

            async def both() -> tuple[list[Any], list[Any]]:
                await drive(reference, use_filter=False)
                await drive(memory, use_filter=True)
                return await memory.get_items(), await reference.get_items()

            got, expected = asyncio.run(both())
            assert got == through_json(expected)
            stored = engine.session("s").messages()
            assert sum(1 for m in stored if m.role == "user") == len(runs)
        finally:
            engine.close()


def through_json(items: list[Any]) -> list[Any]:
    return [json.loads(json.dumps(i if isinstance(i, dict) else i.model_dump(
        exclude_unset=True))) for i in items]


def test_bad_items_raise_memci_errors_and_store_nothing(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("s")
        memory = MemciSession(session)
        with pytest.raises(memci.InvalidMessageError, match="call_id"):
            asyncio.run(memory.add_items([
                {"role": "user", "content": "ok"},
                {"type": "function_call_output", "output": "no call id"}]))  # type: ignore[list-item]
        assert session.messages() == []
    finally:
        engine.close()


def test_missing_extra_names_the_install_command() -> None:
    code = ("import sys; sys.modules['agents'] = None\n"
            "try:\n import memci.integrations.openai_agents\n"
            "except Exception as e: print(type(e).__name__, e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("MissingExtraError") and "pip install 'memci[openai-agents]'" in out


def test_example_runs_offline() -> None:
    example = ROOT / "examples/integrations/openai_agents_example.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "within budget" in out.stdout
