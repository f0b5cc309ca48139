"""memci.integrations.langchain with the real LangChain v1: create_agent, a fake chat model.

The model is LangChain's own ``FakeMessagesListChatModel``, taught to bind tools and to
answer through a planner that reads what it was sent (so it can call memci's
``artifact_get`` on a pointer it sees). The agent keeps its state in LangGraph's
``InMemorySaver``, so every call hands the middleware the whole conversation so far.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware, ModelRetryMiddleware
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import Field

import memci
from memci.integrations.langchain import MemciChatMessageHistory, MemciMiddleware, memci_tools
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


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return file_text(path)


class ScriptedChat(FakeMessagesListChatModel):
    """LangChain's fake list model, binding tools and answering through a planner."""

    planner: Any = None
    calls: list[tuple[list[BaseMessage], list[dict[str, Any]]]] = Field(default_factory=list)
    bound: list[dict[str, Any]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self.bound = [convert_to_openai_tool(t) for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls.append((list(messages), list(self.bound)))
        return ChatResult(generations=[ChatGeneration(message=self.planner(messages))])


def planner() -> Callable[[list[BaseMessage]], AIMessage]:
    state = {"run": -1, "step": 0, "n": 0}

    def plan(messages: list[BaseMessage]) -> AIMessage:
        text = "\n".join(str(m.content) for m in messages)
        run = max(int(n) for n in re.findall(r"Question (\d+):", text))
        if run != state["run"]:
            state["run"], state["step"] = run, 0
        state["step"] += 1
        state["n"] += 1
        if state["step"] > STEPS:
            return AIMessage(f"done with run {run}")
        call = {"name": "read_file", "args": {"path": f"run{run}/f{state['step']}.log"}}
        pointers = re.findall(r"artifact:([0-9a-f]{6,})", text)
        if state["step"] == 4 and pointers:
            call = {"name": "artifact_get", "args": {"id": pointers[-1], "length": 200}}
        return AIMessage("", tool_calls=[{**call, "id": f"call_{state['n']}"}])

    return plan


def call_tokens(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> int:
    total = 3
    for m in messages:
        total += 4 + TOKENS.count(str(m.content))
        if isinstance(m, AIMessage):
            total += sum(10 + TOKENS.count(c["name"]) + TOKENS.count(str(c["args"]))
                         for c in m.tool_calls)
    if tools:
        import json
        total += TOKENS.count(json.dumps(tools)) + 4 * len(tools)
    return total


def pairing_ok(messages: list[BaseMessage]) -> bool:
    open_calls: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            if m.tool_call_id not in open_calls:
                return False
            open_calls.discard(m.tool_call_id)
        elif isinstance(m, AIMessage):
            if open_calls:
                return False
            open_calls = {c["id"] for c in m.tool_calls if c["id"]}
        elif open_calls:
            return False
    return True


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_create_agent_tool_loop_within_budget(tmp_path: Path, mode: str) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("lc", context_window=10_000, tokenizer="cl100k_base")
        model = ScriptedChat(responses=[], planner=planner())
        agent = create_agent(model, tools=[read_file], system_prompt="You read logs.",
                             middleware=[MemciMiddleware(session)],
                             checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "t1"}, "recursion_limit": 100}
        for run in range(RUNS):
            question = {"messages": [HumanMessage(f"Question {run}: which lines failed?")]}
            if mode == "sync":
                result = agent.invoke(question, config)
            else:
                result = asyncio.run(agent.ainvoke(question, config))
            assert result["messages"][-1].content == f"done with run {run}"
        budget = session.settings.budget
        assert len(model.calls) == RUNS * (STEPS + 1)
        sizes = [call_tokens(m, t) for m, t in model.calls]
        assert max(sizes) <= budget, sizes
        for messages, _ in model.calls:
            assert isinstance(messages[0], SystemMessage)
            assert messages[0].content.startswith("You read logs.")
            assert pairing_ok(messages[1:])
        # The agent state holds every output in full: far more than one request may carry.
        assert sum(len(str(m.content)) for m in result["messages"]) > 8 * budget
        # Everything stored once, although the checkpointer hands the whole state back.
        stored = session.messages()
        assert [m.content for m in stored if m.role == "user"] == [
            f"Question {r}: which lines failed?" for r in range(RUNS)]
        state_ids = [m.id for m in result["messages"]]
        assert [m.metadata["langchain_id"] for m in stored] == state_ids
        # The model reached a stored output through memci's artifact_get.
        fetched = [m for m in result["messages"]
                   if isinstance(m, ToolMessage) and m.name == "artifact_get"]
        assert fetched and all(re.match(r"run\d/f\d\.log:0 value=0", str(m.content))
                               for m in fetched)
    finally:
        engine.close()


def test_without_memci_the_same_agent_outgrows_the_budget(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("lc", context_window=10_000, tokenizer="cl100k_base")
        model = ScriptedChat(responses=[], planner=planner())
        agent = create_agent(model, tools=[read_file, *memci_tools(session)],
                             system_prompt="You read logs.", checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "t1"}, "recursion_limit": 100}
        agent.invoke({"messages": [HumanMessage("Question 0: which lines failed?")]}, config)
        assert max(call_tokens(m, t) for m, t in model.calls) > session.settings.budget
    finally:
        engine.close()


def test_chat_message_history(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("hist")
        history = MemciChatMessageHistory(session)
        history.add_messages([HumanMessage("hi"), AIMessage("hello")])
        history.add_messages([HumanMessage("hi"), AIMessage("hello again")])  # said twice
        asyncio.run(history.aadd_messages([HumanMessage("bye")]))
        texts = [m.content for m in history.messages]
        assert texts == ["hi", "hello", "hi", "hello again", "bye"]
        assert [m.content for m in asyncio.run(history.aget_messages())] == texts
        history.clear()
        assert history.messages == []
        assert len(session.messages()) == 5  # nothing deleted
    finally:
        engine.close()


# -- behaves like InMemoryChatMessageHistory (docs/integrations/langchain.md) ------------


EVERY_KIND: list[BaseMessage] = [
    SystemMessage("You answer in French."),
    HumanMessage("weather?", id="h1", name="ann"),
    AIMessage("", id="a1", tool_calls=[{"name": "weather", "args": {"city": "Paris"},
                                        "id": "call_1", "type": "tool_call"}],
              response_metadata={"model_name": "m"}),
    ToolMessage("18C " * 40, tool_call_id="call_1", name="weather", id="t1"),
    AIMessage("Il fait 18 degres.", id="a2", additional_kwargs={"refusal": None}),
]


def test_history_gives_back_what_was_added(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        history = MemciChatMessageHistory(engine.session("hist"))
        history.add_message(EVERY_KIND[0])
        history.add_messages(EVERY_KIND[1:])
        assert history.messages == EVERY_KIND
        assert str(history).startswith("System: You answer in French.\nHuman: weather?")
        # Another history over the same session (another process) reads the same.
        assert MemciChatMessageHistory(engine.session("hist")).messages == EVERY_KIND
    finally:
        engine.close()


def test_runnable_with_message_history_keeps_each_turn(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        seen: list[list[BaseMessage]] = []

        def reply(messages: list[BaseMessage]) -> AIMessage:
            seen.append(list(messages))
            return AIMessage(f"reply {len(seen)}")

        # LangChain deprecates it for LangGraph's persistence (MemciMiddleware's place);
        # chains still built with it keep working.
        with pytest.warns(LangChainDeprecationWarning):
            chain = RunnableWithMessageHistory(
                RunnableLambda(reply), lambda sid: MemciChatMessageHistory(engine.session(sid)))
        config: RunnableConfig = {"configurable": {"session_id": "chat"}}
        for n in range(3):
            chain.invoke([HumanMessage(f"turn {n}")], config)
        assert [m.content for m in seen[-1]] == [
            "turn 0", "reply 1", "turn 1", "reply 2", "turn 2"]
        assert [m.content for m in MemciChatMessageHistory(engine.session("chat")).messages
                ] == ["turn 0", "reply 1", "turn 1", "reply 2", "turn 2", "reply 3"]
    finally:
        engine.close()


def test_context_history_is_memci_context_within_the_budget(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("hist", context_window=2_000, tokenizer="cl100k_base")
        stored = MemciChatMessageHistory(session)
        for n in range(30):
            stored.add_messages([HumanMessage(f"question {n} " + "word " * 100),
                                 AIMessage(f"answer {n}")])
        sent = MemciChatMessageHistory(session, context=True).messages
        assert 3 + sum(4 + TOKENS.count(str(m.content)) for m in sent) <= session.settings.budget
        assert sent[-1].content == "answer 29" and len(stored.messages) == 60
    finally:
        engine.close()


@tool
def send(to: str) -> str:
    """Send a note."""
    return f"sent to {to}"


class Flaky(FakeMessagesListChatModel):
    """Calls send as call_0 on every question (ids repeat across turns), answers "OK"
    after its result; fails ``fails`` times first."""

    fails: int = 0

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if self.fails > 0:
            self.fails -= 1
            raise RuntimeError("the provider is busy")
        if isinstance(messages[-1], ToolMessage):
            return ChatResult(generations=[ChatGeneration(message=AIMessage("OK"))])
        call = {"name": "send", "args": {"to": "ann"}, "id": "call_0", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


DECISIONS = st.sampled_from([
    {"type": "approve"}, {"type": "reject", "message": "not now"},
    {"type": "edit", "edited_action": {"name": "send", "args": {"to": "bob"}}}])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(DECISIONS, st.integers(0, 1), st.booleans()), min_size=1,
                max_size=3))
def test_agent_flows_store_each_state_message_once(
        turns: list[tuple[dict[str, Any], int, bool]]) -> None:
    """Human review (approve, edit, reject), a model call retried after a failure, sync
    and async turns, the same call id every turn: memci holds the agent state's messages,
    each once, in order."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = memci.Engine.open(Path(tmp) / "m.db")
        try:
            session = engine.session("lc")
            model = Flaky(responses=[])
            agent = create_agent(model, tools=[send], checkpointer=InMemorySaver(), middleware=[
                HumanInTheLoopMiddleware(interrupt_on={"send": True}),
                ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False),
                MemciMiddleware(session, tools=False)])
            config: RunnableConfig = {"configurable": {"thread_id": "t"}}
            state: dict[str, Any] = {}
            for n, (decision, fails, sync) in enumerate(turns):
                model.fails = fails
                for step in ({"messages": [HumanMessage(f"note {n}")]},
                             Command(resume={"decisions": [decision]})):
                    state = (agent.invoke(step, config) if sync
                             else asyncio.run(agent.ainvoke(step, config)))
            ids = [m.metadata["langchain_id"] for m in session.messages()]
            assert ids == [m.id for m in state["messages"]]
        finally:
            engine.close()


def test_memci_tools_run_sync_and_async(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("tools")
        session.add({"role": "user", "content": "the deploy key is in vault"})
        tools = {t.name: t for t in memci_tools(session)}
        assert {"recall_page", "search_memory", "artifact_get", "grep"} <= set(tools)
        assert "vault" in tools["search_memory"].invoke({"query": "deploy key"})
        assert "vault" in asyncio.run(tools["search_memory"].ainvoke({"query": "deploy key"}))
        assert tools["artifact_get"].invoke({"id": "nope"}).startswith("error:")
    finally:
        engine.close()


def test_working_state_is_registered_for_the_nine_and_runs(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("ws")
        session.add({"role": "user", "content": "run the tests"})
        session.add({"role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "run_tests", "arguments": "{}"}}]})
        session.add({"role": "tool", "tool_call_id": "c1", "content": "3 passed"})
        tools = {t.name: t for t in memci_tools(session)}
        # the one schema the model is offered, not the nine it stands for
        assert {"recall_page", "search_memory", "artifact_get", "grep", "working_state"} == set(
            tools)
        answer = tools["working_state"].invoke({"action": "plan_add", "text": "ship it"})
        assert answer == "added plan item 1"
        assert "ship it" in tools["working_state"].invoke({"action": "plan_list"})
        assert session.call_tool("plan_add", {"text": "tag it"}) == "added plan item 2"
        # with the nine named in the session's settings, they are registered by name
        named = engine.session("named", tools=["plan_add", "plan_list"])
        assert [t.name for t in memci_tools(named)] == ["plan_add", "plan_list"]
    finally:
        engine.close()


def test_missing_extra_names_the_install_command() -> None:
    code = ("import sys; sys.modules['langchain'] = None\n"
            "try:\n import memci.integrations.langchain\n"
            "except Exception as e: print(type(e).__name__, e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("MissingExtraError") and "pip install 'memci[langchain]'" in out


def test_example_runs_offline() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "examples/integrations/langchain_example.py")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "within budget" in out.stdout
