"""memci under LlamaIndex, offline: a chat engine over thirty pasted logs.

Run it: ``python examples/integrations/llama_index_example.py`` (needs
``memci[llama-index]``; no network, no API key: the LLM is LlamaIndex's own ``MockLLM``).

``MemciMemory`` stores every message and answers ``get`` with memci's context: recent
turns in full, older ones on a contents page the model can recall, within the budget less
the chat engine's system prompt. Nothing is dropped: the first log is still found by search.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall

import memci
from memci.integrations.llama_index import MemciMemory


def pasted_log(turn: int) -> str:
    lines = [f"day{turn} request {n} took {n * 37 % 1000} ms" for n in range(120)]
    return f"Here is the log of day {turn}:\n" + "\n".join(lines)


def main(home: Path) -> None:
    engine = memci.Engine.open(home / "memci.db")
    session = engine.session("example", context_window=8_000, tokenizer="cl100k_base")
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=20)
    chat = SimpleChatEngine.from_defaults(llm=llm, memory=MemciMemory(session),
                                          system_prompt="You are an on-call assistant.")
    count = session.tokenizer.count
    sizes = []
    for turn in range(30):
        chat.chat(pasted_log(turn))
        sizes.append(sum(count(m.content or "") + 4 for m in llm.last_chat_messages or []))
    budget = session.settings.budget
    stored = sum(count(m.content) for m in session.messages())
    print(f"{len(sizes)} chat calls; tokens sent per call (last five): {sizes[-5:]}")
    print(f"largest call {max(sizes)} tokens, within budget {budget}: {max(sizes) <= budget}"
          f" (the conversation holds {stored} tokens)")
    hit = session.search("day0 request 7 took", k=1)[0]
    print("search still finds day 0:", hit.message.content.splitlines()[0])
    engine.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as home:
        main(Path(home))
