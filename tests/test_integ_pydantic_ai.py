"""memci.integrations.pydantic_ai with the real pydantic-ai: FunctionModel and TestModel.

Runs go through ``asyncio.run(agent.run(...))``: ``run_sync`` leaves an event loop
set on the thread that no one closes (pydantic-ai keeps one per thread), which a later
test would meet as an unclosed-socket ResourceWarning.

pydantic-ai's ``FunctionModel`` plays the model through a planner that reads the messages
it is sent (and so can call memci's ``artifact_get`` on a pointer it sees); every request's
messages and tool definitions are recorded and counted with the real tokenizer.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.models.test import TestModel

import memci
from memci.integrations.pydantic_ai import MemciCapability, history_processor, toolset
from memci.tokens import get_tokenizer

ROOT = Path(__file__).resolve().parents[1]
TOKENS = get_tokenizer("cl100k_base")
RUNS, STEPS = 3, 8


def file_text(path: str) -> str:
    size = 5_000 + (sum(map(ord, path)) * 2_657) % 15_000
    lines, n, length = [], 0, 0
    while length < size:
        lines.append(f"{path}:{n} value={(n * 7_919) % 104_729}")
        length += len(lines[-1]) + 1
        n += 1
    return "\n".join(lines)


def read_file(path: str) -> str:
    """Read a file of the project."""
    return file_text(path)


def text_of(messages: list[ModelMessage]) -> str:
    out = []
    for m in messages:
        for p in m.parts:
            content = getattr(p, "content", None)
            if isinstance(content, str):
                out.append(content)
            if isinstance(p, ToolCallPart):
                out.append(p.args_as_json_str())
    return "\n".join(out)


def request_tokens(messages: list[ModelMessage], info: AgentInfo) -> int:
    total = 3 + (TOKENS.count(info.instructions) + 4 if info.instructions else 0)
    for m in messages:
        for p in m.parts:
            if isinstance(p, SystemPromptPart | UserPromptPart | TextPart):
                total += 4 + TOKENS.count(str(p.content))
            elif isinstance(p, ToolCallPart):
                total += 10 + TOKENS.count(p.tool_name) + TOKENS.count(p.args_as_json_str())
            elif isinstance(p, ToolReturnPart):
                total += 5 + TOKENS.count(p.model_response_str())
    tools = [{"type": "function", "function": {"name": t.name, "description":
              t.description or "", "parameters": t.parameters_json_schema}}
             for t in info.function_tools]
    if tools:
        total += TOKENS.count(json.dumps(tools)) + 4 * len(tools)
    return total


class Planner:
    def __init__(self) -> None:
        self.run, self.step, self.n = -1, 0, 0
        self.seen: list[tuple[list[ModelMessage], int]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append((list(messages), request_tokens(messages, info)))
        text = text_of(messages)
        run = max(int(n) for n in re.findall(r"Question (\d+):", text))
        if run != self.run:
            self.run, self.step = run, 0
        self.step += 1
        self.n += 1
        if self.step > STEPS:
            return ModelResponse([TextPart(f"done with run {run}")])
        name, args = "read_file", {"path": f"run{run}/f{self.step}.log"}
        pointers = re.findall(r"artifact:([0-9a-f]{6,})", text)
        if self.step == 4 and pointers:
            name, args = "artifact_get", {"id": pointers[-1], "length": 200}
        return ModelResponse([ToolCallPart(name, json.dumps(args), f"call_{self.n}")])


def pairing_ok(messages: list[ModelMessage]) -> bool:
    open_calls: set[str] = set()
    for m in messages:
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                open_calls.add(p.tool_call_id)
            elif isinstance(p, ToolReturnPart):
                if p.tool_call_id not in open_calls:
                    return False
                open_calls.discard(p.tool_call_id)
    return not open_calls or isinstance(messages[-1], ModelResponse)


def test_capability_tool_loop_within_budget(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("pai", context_window=10_000, tokenizer="cl100k_base")
        planner = Planner()
        agent = Agent(FunctionModel(planner), instructions="You read logs.",
                      tools=[read_file], capabilities=[MemciCapability(session)])

        async def runs() -> list[str]:
            return [(await agent.run(f"Question {r}: which lines failed?")).output
                    for r in range(RUNS)]

        assert asyncio.run(runs()) == [f"done with run {r}" for r in range(RUNS)]
        budget = session.settings.budget
        assert len(planner.seen) == RUNS * (STEPS + 1)
        assert max(t for _, t in planner.seen) <= budget
        assert all(pairing_ok(m) for m, _ in planner.seen)
        # The conversation was stored once, final answers included.
        stored = session.messages()
        assert [m.content for m in stored if m.role == "user"] == [
            f"Question {r}: which lines failed?" for r in range(RUNS)]
        assert [m.content for m in stored if m.role == "assistant" and m.content] == [
            f"done with run {r}" for r in range(RUNS)]
        assert sum(1 for m in stored if m.role == "tool") == RUNS * STEPS
        # Far more than a request may carry went through, and artifact_get reached it.
        assert sum(len(m.content) for m in stored) > 8 * budget
        fetched = [m for m in stored if m.role == "tool" and m.content.startswith("run")
                   and m.content.count("\n") < 12]
        assert fetched
    finally:
        engine.close()


def test_without_memci_the_history_outgrows_the_budget(tmp_path: Path) -> None:
    planner = Planner()
    agent = Agent(FunctionModel(planner), instructions="You read logs.", tools=[read_file])
    asyncio.run(agent.run("Question 0: which lines failed?"))
    assert max(t for _, t in planner.seen) > 7_500


def test_history_processor_with_test_model(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("pai", context_window=10_000, tokenizer="cl100k_base")
        session.add_many([{"role": "user", "content": "my locker code is 4312"},
                          {"role": "assistant", "content": "noted"}])
        agent = Agent(TestModel(call_tools=[]), toolsets=[toolset(session)],
                      capabilities=[ProcessHistory(history_processor(session))])
        result = asyncio.run(agent.run("what is my locker code?"))
        sent = result.all_messages()
        assert "4312" in text_of(sent)  # the earlier conversation came from memci
        stored = [m.content for m in session.messages()]
        assert stored[:3] == ["my locker code is 4312", "noted", "what is my locker code?"]
        # Running again with the run's own history stores nothing twice.
        asyncio.run(agent.run("and again?", message_history=sent))
        users = [m.content for m in session.messages() if m.role == "user"]
        assert users == ["my locker code is 4312", "what is my locker code?", "and again?"]
    finally:
        engine.close()


def test_toolset_runs_memci_tools(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("pai")
        session.add({"role": "user", "content": "the deploy key is in vault"})
        calls: list[Any] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            names = {t.name for t in info.function_tools}
            calls.append(names)
            last = messages[-1]
            if isinstance(last, ModelRequest) and any(
                    isinstance(p, ToolReturnPart) for p in last.parts):
                return ModelResponse([TextPart(last.parts[0].model_response_str())])
            return ModelResponse([ToolCallPart("search_memory", {"query": "deploy key"})])

        agent = Agent(FunctionModel(model), toolsets=[toolset(session)])
        assert "vault" in asyncio.run(agent.run("where is the key?")).output
        # What can act now (nothing of the workspace before a tool result) and search.
        assert calls[0] == {"recall_page", "search_memory"}
    finally:
        engine.close()


def test_toolset_offers_working_state_and_runs_it(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("pai")
        session.add({"role": "user", "content": "run the tests"})
        session.add({"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "run_tests", "arguments": "{}"}}]})
        session.add({"role": "tool", "tool_call_id": "c1",  # shown by its view: shaped
                     "content": "".join(f"test_{i} PASSED\n" for i in range(2000))})
        session.build()
        calls: list[Any] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            calls.append({t.name for t in info.function_tools})
            last = messages[-1]
            if isinstance(last, ModelRequest) and any(
                    isinstance(p, ToolReturnPart) for p in last.parts):
                return ModelResponse([TextPart(last.parts[0].model_response_str())])
            return ModelResponse([ToolCallPart(
                "working_state", {"action": "plan_add", "text": "ship it"})])

        agent = Agent(FunctionModel(model), toolsets=[toolset(session)])
        assert asyncio.run(agent.run("plan it")).output == "added plan item 1"
        # The working-state tools go out as one schema (the nine are not registered).
        assert calls[0] == {"recall_page", "search_memory", "artifact_get", "grep",
                            "working_state"}
        assert "ship it" in session.call_tool("plan_list")
    finally:
        engine.close()


def answers_ok(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse([TextPart("OK")])


def test_the_same_answer_in_every_run_is_stored_each_time(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("pai")
        seen: list[list[ModelMessage]] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            seen.append(list(messages))
            return answers_ok(messages, info)

        agent = Agent(FunctionModel(model), capabilities=[MemciCapability(session, tools=False)])

        async def runs() -> None:
            for r in range(3):
                await agent.run(f"question {r}")

        asyncio.run(runs())
        assert [(m.role, m.content) for m in session.messages()] == [
            ("user", "question 0"), ("assistant", "OK"), ("user", "question 1"),
            ("assistant", "OK"), ("user", "question 2"), ("assistant", "OK")]
        # The last request alternates: each earlier question is followed by its answer.
        kinds = [type(p).__name__ for m in seen[-1] for p in m.parts]
        assert kinds == ["UserPromptPart", "TextPart", "UserPromptPart", "TextPart",
                         "UserPromptPart"]
    finally:
        engine.close()


def test_history_processor_stores_each_answer_once_across_runs_and_processes(
        tmp_path: Path) -> None:
    """A run's final answer comes after its last request: the processor stores it at the
    next run's first request; memci's context handed back (the run's history, passed as
    message_history, even to a processor made anew, as in another process) is not stored
    again."""
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("pai")
        agent = Agent(FunctionModel(answers_ok),
                      capabilities=[ProcessHistory(history_processor(session))])

        async def runs() -> list[ModelMessage]:
            for r in range(3):
                done = await agent.run(f"question {r}")
            return done.all_messages()

        last = asyncio.run(runs())
        assert [(m.role, m.content) for m in session.messages()] == [
            ("user", "question 0"), ("assistant", "OK"), ("user", "question 1"),
            ("assistant", "OK"), ("user", "question 2")]
        again = Agent(FunctionModel(answers_ok),
                      capabilities=[ProcessHistory(history_processor(session))])
        asyncio.run(again.run("question 3", message_history=last))
        assert [(m.role, m.content) for m in session.messages()] == [
            ("user", "question 0"), ("assistant", "OK"), ("user", "question 1"),
            ("assistant", "OK"), ("user", "question 2"), ("assistant", "OK"),
            ("user", "question 3")]
    finally:
        engine.close()


class Scripted:
    """A model for FunctionModel: calls ``lookup`` as ``call_0`` (pydantic-ai's test
    models number calls from 0 in every run), then answers one of a few words."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.n = 0

    def reply(self, messages: list[ModelMessage]) -> tuple[str | None, str]:
        last = messages[-1]
        returned = isinstance(last, ModelRequest) and any(
            p.part_kind in ("tool-return", "retry-prompt") for p in last.parts)
        if returned and not any(p.part_kind == "retry-prompt" for p in last.parts):
            answer = self.answers[self.n % len(self.answers)]
            self.n += 1
            return None, answer
        return "lookup", json.dumps({"q": "same"})

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tool, text = self.reply(messages)
        if tool is None:
            return ModelResponse([TextPart(text)])
        return ModelResponse([ToolCallPart(tool, text, tool_call_id="call_0")])

    async def stream(self, messages: list[ModelMessage], info: AgentInfo
                     ) -> AsyncIterator[str | DeltaToolCalls]:
        tool, text = self.reply(messages)
        if tool is None:
            yield text
        else:
            yield {0: DeltaToolCall(tool, text, tool_call_id="call_0")}


def scripted_agent(session: memci.Session, model: Scripted, retry_first: bool) -> Agent[None, str]:
    agent = Agent(FunctionModel(model, stream_function=model.stream),
                  capabilities=[MemciCapability(session, tools=False)])
    asked: list[int] = []

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look something up."""
        asked.append(1)
        if retry_first and len(asked) % 2 == 1:
            raise ModelRetry("try once more")
        return f"found {q}"

    return agent


def expected_rows(messages: list[ModelMessage]) -> list[tuple[str, str]]:
    """A run's new messages as memci should hold them: (role, what identifies it)."""
    rows: list[tuple[str, str]] = []
    for m in messages:
        for p in m.parts:
            if isinstance(p, UserPromptPart):
                rows.append(("user", str(p.content)))
            elif isinstance(p, ToolReturnPart | RetryPromptPart):
                rows.append(("tool", str(p.tool_call_id)))
        if isinstance(m, ModelResponse):
            calls = ",".join(p.tool_call_id for p in m.parts if isinstance(p, ToolCallPart))
            text = "".join(p.content for p in m.parts if isinstance(p, TextPart))
            rows.append(("assistant", calls or text))
    return rows


def stored_rows(session: memci.Session) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for m in session.messages():
        if m.role == "tool":
            result = m.tool_result
            assert result is not None
            rows.append(("tool", result.call_id))
        elif m.role == "assistant":
            rows.append(("assistant", ",".join(c.id for c in m.tool_calls) or m.content))
        else:
            rows.append((m.role, m.content))
    return rows


RUN = st.tuples(st.booleans(), st.booleans(), st.booleans())  # stream, history back, retry


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(RUN, min_size=1, max_size=4), st.lists(st.sampled_from(["OK", "done"]),
                                                       min_size=1, max_size=2))
def test_runs_repeating_ids_answers_and_history_store_each_message_once(
        runs: list[tuple[bool, bool, bool]], answers: list[str]) -> None:
    """Whatever pydantic-ai repeats (the same call id and the same words in every run,
    the run's own history passed back, streamed runs, retried tools), memci holds each
    message of each run once, in order."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = memci.Engine.open(Path(tmp) / "m.db")
        try:
            session = engine.session("pai")
            model = Scripted(answers)
            expected: list[tuple[str, str]] = []
            history: list[ModelMessage] = []

            async def go() -> None:
                nonlocal history
                for n, (stream, back, retry) in enumerate(runs):
                    agent = scripted_agent(session, model, retry)
                    given_history = history if back else None
                    if stream:
                        async with agent.run_stream(f"question {n}",
                                                    message_history=given_history) as result:
                            await result.get_output()
                        new, everything = result.new_messages(), result.all_messages()
                    else:
                        done = await agent.run(f"question {n}", message_history=given_history)
                        new, everything = done.new_messages(), done.all_messages()
                    expected.extend(expected_rows(new))
                    history = everything

            asyncio.run(go())
            assert stored_rows(session) == expected
        finally:
            engine.close()


def test_missing_extra_names_the_install_command() -> None:
    code = ("import sys; sys.modules['pydantic_ai'] = None\n"
            "try:\n import memci.integrations.pydantic_ai\n"
            "except Exception as e: print(type(e).__name__, e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("MissingExtraError") and "pip install 'memci[pydantic-ai]'" in out


def test_example_runs_offline() -> None:
    example = ROOT / "examples/integrations/pydantic_ai_example.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "within budget" in out.stdout
