"""What each framework adapter adds per model call, against the framework's own memory.

Run from the repository root (needs the four extras; the dev install has them)::

    python bench/bench_integrations.py            # 30 tool steps a framework, 3 repeats

Each framework runs the same agent twice in this one run, on the same data: an agent that
calls its ``read_file`` tool ``--steps`` times (outputs of 5-20 KB, the same files for
every framework) and then answers, with an in-process model that takes no time (the
framework's own test model), so what is timed is the framework plus its memory:

- OpenAI Agents SDK: ``SQLiteSession`` (the SDK's own, a file) against ``MemciSession`` with
  its ``call_model_input_filter``; model: the SDK's ``ScriptedModel``;
- LangChain v1: ``create_agent`` with LangGraph's ``InMemorySaver`` against the same with
  ``MemciMiddleware``; model: ``FakeMessagesListChatModel``;
- pydantic-ai: the run's own message history against ``MemciCapability``; model:
  ``FunctionModel``;
- LlamaIndex: ``SimpleChatEngine`` with ``ChatMemoryBuffer`` against ``MemciMemory``, one
  chat call a turn with a pasted 5-20 KB log (a chat engine has no tool loop); model:
  ``MockLLM``.

Per framework: milliseconds per model call with each memory (the best of ``--repeats``
runs), the difference (what memci adds to a model call), and the largest request each
sent, in cl100k_base tokens of its text. memci's session: ``context_window=16000``
(budget 12,000), SQLite in a temporary directory, ``synchronous=FULL`` (each message is on
disk when ``add`` returns).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import memci
from memci.tokens import get_tokenizer

TOKENS = get_tokenizer("cl100k_base")
WINDOW = 16_000


@functools.cache
def file_text(path: str) -> str:
    size = 5_000 + (sum(map(ord, path)) * 2_657) % 15_000
    lines, n, length = [], 0, 0
    while length < size:
        lines.append(f"{path}:{n} value={(n * 7_919) % 104_729} status={'ok' if n % 9 else 'ERR'}")
        length += len(lines[-1]) + 1
        n += 1
    return "\n".join(lines)


def tokens_of(value: Any) -> int:
    return TOKENS.count(json.dumps(value, default=str))


# -- one runner per framework: (memci on?) -> (seconds, model calls, largest request) ----


def openai_agents(steps: int, home: Path, use_memci: bool) -> tuple[float, int, int]:
    from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, Runner, SQLiteSession
    from agents.testing import ScriptedModel, assistant_message, function_call

    from memci.integrations.openai_agents import MemciSession

    async def read(_ctx: RunContextWrapper[Any], arguments: str) -> str:
        return file_text(json.loads(arguments)["path"])

    tool = FunctionTool(name="read_file", description="Read a file.", on_invoke_tool=read,
                        params_json_schema={"type": "object", "properties": {
                            "path": {"type": "string"}}, "required": ["path"],
                            "additionalProperties": False})
    model = ScriptedModel([*([function_call("read_file", {"path": f"f{i}.log"},
                                            call_id=f"c{i}")] for i in range(steps)),
                           [assistant_message("done")]])
    engine = memci.Engine.open(home / "m.db")
    try:
        if use_memci:
            memory = MemciSession(engine.session("oa", context_window=WINDOW,
                                                 tokenizer="cl100k_base"))
            agent = Agent(name="a", instructions="Read logs.", model=model,
                          tools=[tool, *memory.tools()])
            config = RunConfig(tracing_disabled=True,
                               call_model_input_filter=memory.call_model_input_filter)
            session: Any = memory
        else:
            agent = Agent(name="a", instructions="Read logs.", model=model, tools=[tool])
            config = RunConfig(tracing_disabled=True)
            session = SQLiteSession("oa", str(home / "sdk.db"))
        started = time.perf_counter()
        asyncio.run(Runner.run(agent, "Which lines failed?", session=session,
                               run_config=config, max_turns=steps + 5))
        elapsed = time.perf_counter() - started
        largest = max(tokens_of(c.input) + TOKENS.count(c.system_instructions or "")
                      for c in model.calls)
        return elapsed, len(model.calls), largest
    finally:
        engine.close()


def langchain(steps: int, home: Path, use_memci: bool) -> tuple[float, int, int]:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
    from langchain_core.outputs import ChatResult
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from memci.integrations.langchain import MemciMiddleware

    sent: list[int] = []

    class Model(FakeMessagesListChatModel):
        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: list[BaseMessage], stop: Any = None,
                      run_manager: Any = None, **kwargs: Any) -> ChatResult:
            sent.append(tokens_of(convert_to_openai_messages(messages)))
            return super()._generate(messages, stop, run_manager, **kwargs)

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return file_text(path)

    model = Model(responses=[*(AIMessage("", tool_calls=[{
        "name": "read_file", "args": {"path": f"f{i}.log"}, "id": f"c{i}"}])
        for i in range(steps)), AIMessage("done")])
    engine = memci.Engine.open(home / "m.db")
    try:
        middleware = [MemciMiddleware(engine.session("lc", context_window=WINDOW,
                                                     tokenizer="cl100k_base"))] if use_memci else []
        agent = create_agent(model, tools=[read_file], system_prompt="Read logs.",
                             middleware=middleware, checkpointer=InMemorySaver())
        started = time.perf_counter()
        agent.invoke({"messages": [{"role": "user", "content": "Which lines failed?"}]},
                     {"configurable": {"thread_id": "t"}, "recursion_limit": 3 * steps + 10})
        return time.perf_counter() - started, len(sent), max(sent)
    finally:
        engine.close()


def pydantic_ai(steps: int, home: Path, use_memci: bool) -> tuple[float, int, int]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelResponse,
        TextPart,
        ToolCallPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from memci.integrations.pydantic_ai import MemciCapability

    sent: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(TOKENS.count(ModelMessagesTypeAdapter.dump_json(messages).decode()))
        if len(sent) > steps:
            return ModelResponse([TextPart("done")])
        return ModelResponse([ToolCallPart("read_file", {"path": f"f{len(sent) - 1}.log"})])

    def read_file(path: str) -> str:
        """Read a file."""
        return file_text(path)

    engine = memci.Engine.open(home / "m.db")
    try:
        capabilities = [MemciCapability(engine.session(
            "pa", context_window=WINDOW, tokenizer="cl100k_base"))] if use_memci else []
        agent = Agent(FunctionModel(model), instructions="Read logs.", tools=[read_file],
                      capabilities=capabilities)
        started = time.perf_counter()
        agent.run_sync("Which lines failed?")
        return time.perf_counter() - started, len(sent), max(sent)
    finally:
        engine.close()


def llama_index(steps: int, home: Path, use_memci: bool) -> tuple[float, int, int]:
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
    from llama_index.core.memory import ChatMemoryBuffer

    from memci.integrations.llama_index import MemciMemory

    engine = memci.Engine.open(home / "m.db")
    try:
        memory: Any = (MemciMemory(engine.session("li", context_window=WINDOW,
                                                  tokenizer="cl100k_base")) if use_memci
                       else ChatMemoryBuffer.from_defaults(token_limit=12_000))
        llm = MockLLMWithChatMemoryOfLastCall(max_tokens=20)
        chat = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Read logs.")
        sent = []
        started = time.perf_counter()
        for i in range(steps):
            chat.chat(f"Here is log {i}:\n" + file_text(f"f{i}.log"))
            sent.append(sum(TOKENS.count(m.content or "") for m in llm.last_chat_messages or []))
        return time.perf_counter() - started, steps, max(sent)
    finally:
        engine.close()


FRAMEWORKS: dict[str, Callable[[int, Path, bool], tuple[float, int, int]]] = {
    "OpenAI Agents SDK": openai_agents,
    "LangChain v1": langchain,
    "pydantic-ai": pydantic_ai,
    "LlamaIndex": llama_index,
}


def measure(run: Callable[[int, Path, bool], tuple[float, int, int]], steps: int,
            repeats: int, use_memci: bool) -> tuple[float, int, int]:
    best: tuple[float, int, int] | None = None
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as home:
            result = run(steps, Path(home), use_memci)
        if best is None or result[0] < best[0]:
            best = result
    assert best is not None
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"{args.steps} model calls with 5-20 KB tool outputs (LlamaIndex: pasted logs), "
          f"best of {args.repeats}; tokens: cl100k_base\n")
    print("| framework | own memory, ms/call | with memci, ms/call | memci adds, ms/call | "
          "ratio | largest request, own | largest request, memci |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, run in FRAMEWORKS.items():
        own_s, own_calls, own_max = measure(run, args.steps, args.repeats, False)
        mem_s, mem_calls, mem_max = measure(run, args.steps, args.repeats, True)
        own_ms, mem_ms = 1000 * own_s / own_calls, 1000 * mem_s / mem_calls
        print(f"| {name} | {own_ms:.1f} | {mem_ms:.1f} | {mem_ms - own_ms:+.1f} | "
              f"{mem_ms / own_ms:.2f}× | {own_max:,} | {mem_max:,} |")


if __name__ == "__main__":
    main()
