"""memci.integrations.llama_index with the real LlamaIndex: SimpleChatEngine and its MockLLM.

``MockLLMWithChatMemoryOfLastCall`` (LlamaIndex's own mock) records the messages of each
chat call; every call is counted with the real tokenizer against the session's budget.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall

import memci
from memci.integrations.llama_index import MemciMemory
from memci.tokens import get_tokenizer

ROOT = Path(__file__).resolve().parents[1]
TOKENS = get_tokenizer("cl100k_base")
SYSTEM = "You are an on-call assistant. Answer from the logs the user pastes."


def pasted_log(turn: int) -> str:
    size = 2_000 + (turn * 1_733) % 4_000
    lines, n = [], 0
    while sum(len(x) + 1 for x in lines) < size:
        lines.append(f"turn{turn} line{n} latency={(n * 7_919) % 997}ms")
        n += 1
    return f"Turn {turn}: here is the log\n" + "\n".join(lines)


def call_tokens(messages: list[ChatMessage]) -> int:
    return 3 + sum(4 + TOKENS.count(m.content or "") for m in messages)


def test_simple_chat_engine_stays_within_budget(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("li", context_window=8_000, tokenizer="cl100k_base")
        memory = MemciMemory(session)
        llm = MockLLMWithChatMemoryOfLastCall(max_tokens=30)
        chat = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt=SYSTEM)
        sizes = []
        for turn in range(40):
            if turn % 2:
                asyncio.run(chat.achat(pasted_log(turn)))
            else:
                chat.chat(pasted_log(turn))
            sent = list(llm.last_chat_messages or [])
            assert sent[0].content == SYSTEM
            # The newest message, then (when memci found some) its retrieved memory.
            assert pasted_log(turn) in [m.content for m in sent[-2:]]
            sizes.append(call_tokens(sent))
        budget = session.settings.budget
        assert max(sizes) <= budget, sizes
        # Everything stored, in order; far more than one call could carry.
        stored = session.messages()
        assert [m.content for m in stored if m.role == "user"] == [
            pasted_log(t) for t in range(40)]
        assert sum(1 for m in stored if m.role == "assistant") == 40
        assert sum(TOKENS.count(m.content) for m in stored) > 5 * budget
        # The oldest turn is out of the window, in full, but memci's search still finds it.
        assert all(pasted_log(0) not in (m.content or "") for m in sent)
        assert session.search("turn0 line3 latency")
    finally:
        engine.close()


def test_memory_protocol(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("li")
        memory = MemciMemory.from_defaults(session=session)
        memory.put(ChatMessage(role=MessageRole.USER, content="weather in Paris?"))
        memory.put_messages([
            ChatMessage(role=MessageRole.ASSISTANT, content="", additional_kwargs={
                "tool_calls": [{"id": "c1", "type": "function", "function": {
                    "name": "weather", "arguments": "{\"city\": \"Paris\"}"}}]}),
            ChatMessage(role=MessageRole.TOOL, content="18C and sunny",
                        additional_kwargs={"tool_call_id": "c1"})])
        asyncio.run(memory.aput(ChatMessage(role=MessageRole.ASSISTANT, content="18C, sunny")))
        got = memory.get()
        assert [m.role for m in got][-4:] == [MessageRole.USER, MessageRole.ASSISTANT,
                                               MessageRole.TOOL, MessageRole.ASSISTANT]
        assert got[-3].additional_kwargs["tool_calls"][0]["id"] == "c1"
        assert got[-2].additional_kwargs["tool_call_id"] == "c1"
        assert [m.content for m in asyncio.run(memory.aget())] == [m.content for m in got]
        assert len(memory.get_all()) == 4
        memory.set([ChatMessage(role=MessageRole.USER, content="start again")])
        assert [m.content for m in memory.get_all()] == ["start again"]
        memory.reset()
        assert memory.get_all() == []
        assert len(session.messages()) == 5  # nothing deleted
    finally:
        engine.close()


def test_from_defaults_without_a_session_names_what_to_pass() -> None:
    try:
        MemciMemory.from_defaults()
    except memci.ConfigError as exc:
        assert "session=" in str(exc)
    else:
        raise AssertionError("from_defaults without a session must raise ConfigError")


def test_missing_extra_names_the_install_command() -> None:
    code = ("import sys; sys.modules['llama_index'] = None\n"
            "try:\n import memci.integrations.llama_index\n"
            "except Exception as e: print(type(e).__name__, e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("MissingExtraError") and "pip install 'memci[llama-index]'" in out


def test_example_runs_offline() -> None:
    example = ROOT / "examples/integrations/llama_index_example.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "within budget" in out.stdout
