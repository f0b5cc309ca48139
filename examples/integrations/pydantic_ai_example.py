"""memci under pydantic-ai, offline: an agent reads ten large logs.

Run it: ``python examples/integrations/pydantic_ai_example.py`` (needs
``memci[pydantic-ai]``; no network, no API key: the model is pydantic-ai's own
``FunctionModel``, scripted).

``MemciCapability`` stores what the run adds and sends memci's context on every model
request: the outputs stored as artifacts, shown as summaries with ``artifact:<id>``
pointers, within the budget; the run's own history keeps everything in full.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import memci
from memci.integrations.pydantic_ai import MemciCapability


def log_file(path: str) -> str:
    return "\n".join(f"{path}:{n} took {n * 37 % 1000} ms{' ERROR' if n % 50 == 7 else ''}"
                     for n in range(400 + 30 * len(path)))


def read_file(path: str) -> str:
    """Read a log file."""
    return log_file(path)


def main(home: Path) -> None:
    engine = memci.Engine.open(home / "memci.db")
    session = engine.session("example", context_window=16_000, tokenizer="cl100k_base")
    sent: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(session.tokenizer.count(
            ModelMessagesTypeAdapter.dump_json(messages).decode()))
        if len(sent) > 10:
            return ModelResponse([TextPart("Day 3 and day 7 have the most errors.")])
        path = f"logs/day{len(sent) - 1}.log"
        return ModelResponse([ToolCallPart("read_file", json.dumps({"path": path}))])

    agent = Agent(FunctionModel(model), instructions="You read logs.", tools=[read_file],
                  capabilities=[MemciCapability(session)])
    result = agent.run_sync("Which days had errors?")
    print("answer:", result.output)
    history = session.tokenizer.count(result.all_messages_json().decode())
    budget = session.settings.budget
    print(f"{len(sent)} model requests; tokens sent per request: {sent}")
    print(f"largest request {max(sent)} tokens, within budget {budget}: {max(sent) <= budget}"
          f" (the run's history holds {history} tokens)")
    engine.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as home:
        main(Path(home))
