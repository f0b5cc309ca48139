"""memci.integrations.llama_index with the real LlamaIndex: SimpleChatEngine and its MockLLM.

``MockLLMWithChatMemoryOfLastCall`` (LlamaIndex's own mock) records the messages of each
chat call; every call is counted with the real tokenizer against the session's budget.
"""

from __future__ import annotations

import asyncio
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
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


def test_a_memory_needs_a_session_or_its_name() -> None:
    with pytest.raises(memci.ConfigError, match="session"):
        MemciMemory()
    with pytest.raises(memci.ConfigError, match="session="):
        MemciMemory.from_defaults(session="chat-1")


# -- behaves like ChatMemoryBuffer (docs/integrations/llama_index.md) --------------------


@pytest.fixture
def default_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default store (what from_defaults opens) in a temporary directory."""
    monkeypatch.setenv("MEMCI_HOME", str(tmp_path))
    monkeypatch.delenv("MEMCI_DB", raising=False)
    return tmp_path / "memci.db"


def said(text: str, role: MessageRole = MessageRole.USER) -> ChatMessage:
    return ChatMessage(role=role, content=text)


def test_chat_engines_make_it_from_defaults(default_store: Path) -> None:
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=10)
    chat = SimpleChatEngine.from_defaults(llm=llm, memory_cls=MemciMemory,
                                          system_prompt="Be brief.")
    chat.chat("the locker code is 4312")
    chat.chat("what is the locker code?")
    sent = [m.content for m in llm.last_chat_messages or []]
    assert sent[0] == "Be brief." and "the locker code is 4312" in sent
    assert [m.content for m in chat.chat_history][::2] == [
        "the locker code is 4312", "what is the locker code?"]
    # In the default store, a conversation of its own for each chat engine made this way.
    other = SimpleChatEngine.from_defaults(llm=llm, memory_cls=MemciMemory)
    assert other.chat_history == []
    engine = memci.Engine.open(default_store)
    try:
        assert len(engine.sessions()) == 2
    finally:
        engine.close()


def test_from_defaults_takes_a_history_and_a_token_limit(default_store: Path) -> None:
    memory = MemciMemory.from_defaults(
        chat_history=[said("first"), said("hello", MessageRole.ASSISTANT)], token_limit=1_000)
    assert memory.token_limit == 1_000
    assert [m.content for m in memory.get()] == ["first", "hello"]
    memory.close()


def test_to_dict_to_string_and_pickle_reopen_the_same_conversation(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        memory = MemciMemory(engine.session("li", user="ann"), token_limit=500)
        memory.put(said("remember the blue door"))
        copies = [MemciMemory.from_dict(memory.to_dict()),
                  MemciMemory.from_string(memory.to_string()),
                  pickle.loads(pickle.dumps(memory))]
        for copy in copies:
            assert copy.token_limit == 500 and copy.user == "ann"
            assert [m.content for m in copy.get()] == ["remember the blue door"]
        copies[0].put(said("and the red key"))  # written through one, seen by the others
        assert [m.content for m in copies[2].get_all()] == [
            "remember the blue door", "and the red key"]
        assert "remember" not in memory.to_string()  # a reference, not the messages
        for copy in copies:
            copy.close()
        assert [m.content for m in memory.get_all()][-1] == "and the red key"
    finally:
        engine.close()


def test_a_history_handed_back_every_call_is_stored_once(tmp_path: Path) -> None:
    """SimpleChatEngine sets the chat_history it is given before each call: what the
    memory holds already is not stored again; a history that differs starts a branch."""
    engine = memci.Engine.open(tmp_path / "m.db")
    try:
        session = engine.session("li")
        llm = MockLLMWithChatMemoryOfLastCall(max_tokens=5)
        chat = SimpleChatEngine.from_defaults(llm=llm, memory=MemciMemory(session))
        history: list[ChatMessage] = []
        for turn in range(4):
            chat.chat(f"turn {turn}", chat_history=list(history))
            history = list(chat.chat_history)
        assert [m.content for m in session.messages() if m.role == "user"] == [
            f"turn {t}" for t in range(4)]
        assert len(session.messages()) == 8
        chat.chat("again", chat_history=history[:2])  # an edited history: a new branch
        assert [m.content for m in chat.chat_history][::2] == ["turn 0", "again"]
        assert len(session.messages()) == 10
    finally:
        engine.close()


def test_small_token_limits_hold_what_fits_and_name_the_least_one(default_store: Path) -> None:
    memory = MemciMemory.from_defaults(token_limit=40, chat_history=[
        said(f"message {n}") for n in range(8)])
    got = [m.content for m in memory.get()]
    assert got and got[-1] == "message 7" and len(got) < 8
    with pytest.raises(memci.BudgetTooSmallError) as refused:
        memory.get(initial_token_count=38)
    assert "token_limit" in str(refused.value) and refused.value.needed > 40
    memory.token_limit = refused.value.needed
    assert [m.content for m in memory.get(initial_token_count=38)] == ["message 7"]
    # Past the limit before any message (a chat engine's prompt alone): a ValueError too.
    with pytest.raises(ValueError, match="at least"):
        memory.get(initial_token_count=500)
    memory.close()


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
