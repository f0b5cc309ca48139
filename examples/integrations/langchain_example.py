"""memci under LangChain v1, offline: a create_agent agent reads ten large logs.

Run it: ``python examples/integrations/langchain_example.py`` (needs ``memci[langchain]``; no
network, no API key: the model is LangChain's own ``FakeMessagesListChatModel``, scripted).

``MemciMiddleware`` stores each message of the agent's state once and sends memci's
context on every model call: the ten outputs are stored as artifacts and shown as
summaries with ``artifact:<id>`` pointers, so every call stays within the budget.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from pydantic import Field

import memci
from memci.integrations.langchain import MemciMiddleware


def log_file(path: str) -> str:
    return "\n".join(f"{path}:{n} took {n * 37 % 1000} ms{' ERROR' if n % 50 == 7 else ''}"
                     for n in range(400 + 30 * len(path)))


@tool
def read_file(path: str) -> str:
    """Read a log file."""
    return log_file(path)


class ScriptedModel(FakeMessagesListChatModel):
    """The scripted replies in order; records what each call was sent."""

    sent: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.sent.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def main(home: Path) -> None:
    engine = memci.Engine.open(home / "memci.db")
    session = engine.session("example", context_window=16_000, tokenizer="cl100k_base")
    model = ScriptedModel(responses=[
        *(AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": f"logs/day{i}.log"},
                                     "id": f"call_{i}"}]) for i in range(10)),
        AIMessage("Day 3 and day 7 have the most errors."),
    ])
    agent = create_agent(model, tools=[read_file], system_prompt="You read logs.",
                         middleware=[MemciMiddleware(session)])
    result = agent.invoke({"messages": [{"role": "user", "content": "Which days had errors?"}]},
                          {"recursion_limit": 50})
    print("answer:", result["messages"][-1].content)
    count = session.tokenizer.count
    sizes = [count(json.dumps(convert_to_openai_messages(m))) for m in model.sent]
    state = count(json.dumps(convert_to_openai_messages(result["messages"])))
    budget = session.settings.budget
    print(f"{len(sizes)} model calls; tokens sent per call: {sizes}")
    print(f"largest call {max(sizes)} tokens, within budget {budget}: {max(sizes) <= budget}"
          f" (the agent's state holds {state} tokens)")
    engine.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as home:
        main(Path(home))
