"""memci under the OpenAI Agents SDK, offline: a scripted model reads twelve large logs.

Run it: ``python examples/integrations/openai_agents_example.py`` (needs ``memci[openai-agents]``;
no network, no API key: the model is the SDK's own ``ScriptedModel``).

The agent calls its ``read_file`` tool twelve times (10-16 KB each) before it answers.
Without memci every call would resend every output in full; with ``MemciSession`` and its
``call_model_input_filter`` each model call gets memci's context: the outputs stored as
artifacts, shown as summaries with ``artifact:<id>`` pointers, within the budget.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, Runner
from agents.testing import ScriptedModel, assistant_message, function_call

import memci
from memci.integrations.openai_agents import MemciSession


def log_file(path: str) -> str:
    return "\n".join(f"{path}:{n} took {n * 37 % 1000} ms{' ERROR' if n % 50 == 7 else ''}"
                     for n in range(400 + 30 * len(path)))


async def read_file(_ctx: RunContextWrapper[Any], arguments: str) -> str:
    return log_file(json.loads(arguments)["path"])


async def main(home: Path) -> None:
    engine = memci.Engine.open(home / "memci.db")
    session = engine.session("example", context_window=16_000, tokenizer="cl100k_base")
    memory = MemciSession(session)
    model = ScriptedModel([
        *([function_call("read_file", {"path": f"logs/day{i}.log"}, call_id=f"call_{i}")]
          for i in range(12)),
        [assistant_message("Day 3 and day 7 have the most errors.")],
    ])
    tool = FunctionTool(
        name="read_file", description="Read a log file.",
        params_json_schema={"type": "object", "properties": {"path": {"type": "string"}},
                            "required": ["path"], "additionalProperties": False},
        on_invoke_tool=read_file)
    agent = Agent(name="ops", instructions="You read logs and answer briefly.", model=model,
                  tools=[tool, *memory.tools()])
    result = await Runner.run(
        agent, "Which days had errors?", session=memory, max_turns=20,
        run_config=RunConfig(tracing_disabled=True,
                             call_model_input_filter=memory.call_model_input_filter))
    print("answer:", result.final_output)
    budget = session.settings.budget
    count = session.tokenizer.count
    sizes = [count(json.dumps(c.input, default=str)) + count(c.system_instructions or "")
             for c in model.calls]
    outputs = count("".join(log_file(f"logs/day{i}.log") for i in range(12)))
    print(f"{len(sizes)} model calls; input tokens per call: {sizes}")
    print(f"largest call {max(sizes)} tokens, within budget {budget}: {max(sizes) <= budget}"
          f" (the twelve outputs alone are {outputs} tokens)")
    pointer = next(p for p in json.dumps([c.input for c in model.calls], default=str)
                   .split("artifact:")[1:])[:12]
    print(f"artifact:{pointer} starts with:",
          session.call_tool("artifact_get", {"id": pointer, "length": 40}).splitlines()[0])
    engine.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as home:
        asyncio.run(main(Path(home)))
