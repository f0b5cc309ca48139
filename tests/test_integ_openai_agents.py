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
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, Runner
from agents.models.openai_responses import OpenAIResponsesModel
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
            assert [i.get("type", i.get("role")) for i in items][-4:] == [
                "message", "function_call", "function_call_output", "message"]
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
