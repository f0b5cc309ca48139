"""SWE-agent trajectories (``*.traj``): ``history``, else ``trajectory`` steps.

``history`` is the conversation the model saw: ``{role, content, agent, message_type}``
entries, content a string or text blocks; in SWE-agent 1.x an assistant entry carries
``tool_calls`` (OpenAI form) and a tool entry the ``tool_call_ids`` it answers;
demonstrations (``is_demo``) are kept, since they were sent. A file without ``history``
is read from its ``trajectory`` steps (``response`` or ``thought`` and ``action``, then
``observation`` as the next user message). A retry run's ``attempts`` are one
conversation each.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memci.traces._format import Format, dicts, mapping
from memci.traces._transcript import Transcript, text_of

__all__ = ["SWE_AGENT"]

_STEP_KEYS = ("action", "observation", "response")


def _is_traj(top: Mapping[str, Any], strict: bool) -> bool:
    history = dicts(top.get("history"))
    if history and all("role" in h for h in history[:20]):
        return not strict or any(k in top for k in ("trajectory", "info", "replay_config")) \
            or any("agent" in h or "message_type" in h for h in history[:20])
    steps = dicts(top.get("trajectory"))
    return bool(steps) and all(any(k in s for k in _STEP_KEYS) for s in steps[:20])


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    top = mapping(data)
    if top is None:
        return None
    if _is_traj(top, strict):
        return [top]
    attempts = [a for a in dicts(top.get("attempts")) if _is_traj(a, strict)]
    return list(attempts) or None


def _read(record: Any, out: Transcript) -> None:
    top = mapping(record) or {}
    history = dicts(top.get("history"))
    if history:
        for number, entry in enumerate(history, start=1):
            out.openai(entry, origin=f"history entry {number}")
        return
    out.skip("trajectory", "no history in the file: the conversation is rebuilt from the "
             "trajectory steps (the task prompt is not recorded there)")
    for number, step in enumerate(dicts(top.get("trajectory")), start=1):
        origin = f"trajectory step {number}"
        reply = step.get("response")
        if not text_of(reply):
            reply = "\n".join(t for t in (text_of(step.get("thought")),
                                          text_of(step.get("action"))) if t)
        out.assistant(reply, origin=origin)
        out.user(step.get("observation"), origin=origin)


SWE_AGENT = Format(
    "swe-agent", "SWE-agent .traj: {history: [{role, content, tool_calls?, tool_call_ids?}], "
    "trajectory: [{action, observation, response}], info}", _conversations, _read)
