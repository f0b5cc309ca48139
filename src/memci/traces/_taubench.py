"""tau-bench results: ``[{task_id, reward, info, traj: [messages]}]``, and tau2-bench's.

tau-bench writes a list of runs, each with ``traj``, the OpenAI chat messages of the
conversation (system policy, the simulated user, assistant tool calls, ``tool`` results
with ``tool_call_id``); each run is one conversation. tau2-bench writes ``{info, tasks,
simulations: [{messages}]}``, its tool calls flat (``{id, name, arguments}``), a tool
result's call id in ``id``, and the agent's tools in ``info.environment_info.tool_defs``;
the simulated user's own tool calls and results become its text.
"""

from __future__ import annotations

from typing import Any

from memci.traces._format import Format, dicts, mapping
from memci.traces._transcript import Transcript

__all__ = ["TAU_BENCH"]


def _tau2_tools(top: Any) -> Any:
    info = mapping((mapping(top) or {}).get("info")) or {}
    environment = mapping(info.get("environment_info")) or {}
    return environment.get("tool_defs") or environment.get("tools")


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    del strict  # "traj" and "simulations" are this format's own words
    top = mapping(data)
    if top is not None and isinstance(top.get("traj"), list):
        return [top]
    if top is not None and dicts(top.get("simulations")):
        tools = _tau2_tools(top)
        return [{"messages": s.get("messages"), "tools": tools, "id": s.get("id")}
                for s in dicts(top.get("simulations"))]
    runs = [i for i in dicts(data) if isinstance(i.get("traj"), list)]
    return list(runs) or None


def _read(record: Any, out: Transcript) -> None:
    top = mapping(record) or {}
    out.add_tools(top.get("tools"))
    raw = top.get("traj") if isinstance(top.get("traj"), list) else top.get("messages")
    for number, item in enumerate(raw if isinstance(raw, list) else [], start=1):
        message = mapping(item)
        if message is None:
            out.skip(f"message {number}", "not a message object, skipped")
        else:
            out.openai(message, origin=f"message {number}")


TAU_BENCH = Format(
    "tau-bench", "tau-bench results: [{task_id, reward, traj: [OpenAI messages]}], or "
    "tau2-bench {simulations: [{messages}]}", _conversations, _read)
