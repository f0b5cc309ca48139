"""OpenHands' second generation (the software-agent SDK): events told apart by ``kind``.

An evaluation of ``OpenHands/benchmarks`` writes each run's ``history`` as these events,
and a conversation saves them one a file; read as the model saw them:

- ``SystemPromptEvent``: the system prompt (``system_prompt``, then ``dynamic_context``)
  and the agent's ``tools`` (saved with their name and description; their parameter
  schemas are not in the file, so they are counted without them, with a note);
- ``MessageEvent``: ``llm_message`` (``role``, ``content`` blocks), plus the
  ``extended_content`` the agent's context added to it;
- ``ActionEvent``: one tool call (``tool_call``: ``id``, ``name``, ``arguments``; else
  ``tool_call_id``, ``tool_name`` and the ``action``'s fields); the calls of one model
  response (``llm_response_id``) become one assistant message, its text the ``thought``;
- ``ObservationEvent`` (``observation.content``), ``UserRejectObservation``
  (``rejection_reason``) and ``AgentErrorEvent`` (``error``): the result of the call named
  by ``tool_call_id``;
- anything else (condensation, state updates, pauses, …) is bookkeeping the model never
  saw: left out with a note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memci._lazy import compile_pattern
from memci.traces._format import dicts, mapping
from memci.traces._transcript import Call, Transcript, text_of

__all__ = ["SDK_EVENTS", "SdkReader", "is_sdk_event"]

SDK_EVENTS = frozenset({"SystemPromptEvent", "MessageEvent", "ActionEvent",
                        "ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
"""The kinds of event the model saw (the rest is bookkeeping)."""

_RESULTS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
_CAMEL = compile_pattern(r"(?<=[a-z0-9])(?=[A-Z])")


def is_sdk_event(event: Mapping[str, Any]) -> bool:
    """An event of the SDK: it names its class in ``kind`` (the first generation never)."""
    kind = event.get("kind")
    return isinstance(kind, str) and bool(kind)


def _tool_name(tool: Mapping[str, Any]) -> str | None:
    """A saved tool's name: ``name`` or ``title``, else its class (``TerminalTool``)."""
    for key in ("name", "title"):
        if isinstance(tool.get(key), str) and tool[key]:
            return str(tool[key])
    kind = tool.get("kind")
    if isinstance(kind, str) and kind:
        return _CAMEL.sub("_", kind.removesuffix("Tool")).lower() or None
    return None


def _tools(event: Mapping[str, Any], out: Transcript, origin: str) -> None:
    saved = []
    for tool in dicts(event.get("tools")):
        name = _tool_name(tool)
        if name is not None:
            saved.append({**{k: v for k, v in tool.items() if k in ("description",
                                                                    "parameters")},
                          "name": name})
    if saved and not any("parameters" in t for t in saved):
        out.skip(origin, "the agent's tools are saved without their parameter schemas: "
                 "counted by name and description")
    out.add_tools(saved)


class SdkReader:
    """Reads SDK events in order into a transcript (see the module notes)."""

    def __init__(self, out: Transcript) -> None:
        self.out = out
        self.response: object = None  # the model response of the newest tool call

    def event(self, event: Mapping[str, Any], origin: str) -> None:
        """Read one event."""
        kind = event.get("kind")
        created = event.get("timestamp")
        if kind == "SystemPromptEvent":
            self.response = None
            prompt = [text_of(event.get("system_prompt")), text_of(event.get("dynamic_context"))]
            self.out.system("\n\n".join(p for p in prompt if p), origin=origin,
                            created_at=created)
            _tools(event, self.out, origin)
        elif kind == "MessageEvent":
            self.response = None
            self._message(event, origin, created)
        elif kind == "ActionEvent":
            self._call(event, origin, created)
        elif kind in _RESULTS:
            self._result(event, origin, created)
        else:
            self.out.skip(origin, f"{kind} events (bookkeeping the model never sees), "
                          "skipped")

    def _message(self, event: Mapping[str, Any], origin: str, created: object) -> None:
        message = mapping(event.get("llm_message")) or {}
        content: list[Any] = [*dicts(message.get("content")), *dicts(
            event.get("extended_content"))]
        if not content and isinstance(message.get("content"), str):
            content = [{"type": "text", "text": message["content"]}]
        role = message.get("role") or ("user" if event.get("source") == "user" else
                                       "assistant")
        if role == "assistant":
            self.out.assistant(content, origin=origin, created_at=created)
        elif role == "system":
            self.out.system(content, origin=origin, created_at=created)
        else:
            self.out.user(content, origin=origin, created_at=created)

    def _call(self, event: Mapping[str, Any], origin: str, created: object) -> None:
        call = mapping(event.get("tool_call")) or {}
        name = call.get("name") or event.get("tool_name")
        call_id = call.get("id") or event.get("tool_call_id")
        if "arguments" in call:
            arguments: Any = call["arguments"]
        else:
            action = mapping(event.get("action")) or {}
            arguments = {k: v for k, v in action.items() if k != "kind"}
        made = Call(name if isinstance(name, str) and name else "tool", arguments,
                    call_id if isinstance(call_id, str) and call_id else None)
        response = event.get("llm_response_id")
        if response and response == self.response and self.out.add_calls([made]) is not None:
            return
        self.response = response
        self.out.assistant(event.get("thought"), [made], origin=origin, created_at=created)

    def _result(self, event: Mapping[str, Any], origin: str, created: object) -> None:
        kind = event.get("kind")
        observation = mapping(event.get("observation")) or {}
        if kind == "UserRejectObservation":
            content: object = f"Action rejected: {text_of(event.get('rejection_reason'))}"
        elif kind == "AgentErrorEvent":
            content = event.get("error")
        else:
            content = observation.get("content", observation.get("output"))
        call_id, name = event.get("tool_call_id"), event.get("tool_name")
        self.out.result(content, origin=origin,
                        call_id=call_id if isinstance(call_id, str) and call_id else None,
                        tool=name if isinstance(name, str) else None, created_at=created,
                        is_error=kind == "AgentErrorEvent" or observation.get("is_error")
                        is True, strict=False)

