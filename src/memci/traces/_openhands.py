"""OpenHands event logs, both generations: ``[{action | observation | kind, ...}]``.

An event log is a list of events (or ``{history: [...]}``, ``{events: [...]}``; an
evaluation's ``output.jsonl`` holds one run a line, each one conversation with its
``history``; the oldest logs pair them ``[[action, observation], ...]``). Events of the
software-agent SDK carry a ``kind`` and are read by :mod:`._openhands_sdk`; the first
generation's (``event_to_dict``: ``{id, source, action | observation, args, content,
tool_call_metadata}``) are read here, as the agent's model saw them:

- ``system`` action: the system prompt (``args.content``) and the agent's ``args.tools``;
- ``message`` actions: the user's or the agent's text (``args.content``, else ``message``);
  ``finish``, ``reject`` and ``think`` actions without a tool call are the agent's text;
- an agent action with ``tool_call_metadata`` is a tool call (``tool_call_id``,
  ``function_name``; arguments from the recorded ``model_response`` when present, else
  ``args``); calls of one model response become one assistant message, its text the
  response's text or the action's ``thought``;
- any other agent action (``run``, ``run_ipython``, ``read``, ``edit``, ``browse`` …,
  logged before function calling) is a tool call too, named after the action, its
  arguments its ``args``, its text the ``thought``;
- an observation answers its action's call (the ``cause`` that names the action, else
  the oldest open call); one with no call open (its action was text) is the next user
  message, as ``OBSERVATION:`` text;
- bookkeeping is left out with a note: agent state changes, recall and condensation
  events, and anything else the model never saw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from memci.traces._format import Format, dicts, mapping
from memci.traces._openhands_sdk import SDK_EVENTS, SdkReader, is_sdk_event
from memci.traces._transcript import Call, Transcript, text_of

__all__ = ["OPENHANDS"]

_BOOKKEEPING = frozenset({"agent_state_changed", "change_agent_state", "null", "recall",
                          "condensation", "condensation_request", "agent_condensation",
                          "pause", "resume"})
_SHOWN_ARGS = ("command", "code", "path", "file_text", "content", "url", "task", "query")
_NOT_ARGUMENTS = frozenset({"thought", "is_input", "blocking", "hidden", "confirmation_state",
                            "security_risk", "is_confirmed", "impl_source", "wait_for_response",
                            "include_extra", "kernel_init_code"})
# Actions that are the agent's words, not a tool it ran (before function calling).
_TEXT_ACTIONS = frozenset({"message", "finish", "reject", "think"})


def _is_event(item: Mapping[str, Any]) -> bool:
    kind = item.get("kind")
    return "action" in item or "observation" in item or (
        isinstance(kind, str) and kind in SDK_EVENTS)


def _events(record: Any) -> list[Mapping[str, Any]]:
    top = mapping(record)
    raw: Any = record
    if top is not None:
        raw = top.get("history", top.get("events"))
    out: list[Mapping[str, Any]] = []
    for item in cast(list[object], raw) if isinstance(raw, list) else []:
        if isinstance(item, list):  # [action, observation] pairs of the oldest logs
            out.extend(e for e in dicts(item) if _is_event(e))
        elif isinstance(item, Mapping):
            out.append(cast(Mapping[str, Any], item))
    return out


def _is_log(record: Any, strict: bool) -> bool:
    events = _events(record)[:50]
    hits = [e for e in events if _is_event(e)]
    if not hits:
        return False
    return not strict or any("source" in e or "tool_call_metadata" in e or "kind" in e
                             for e in hits)


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    if mapping(data) is not None:
        return [data] if _is_log(data, strict) else None
    items = dicts(data)
    runs = [i for i in items if isinstance(i.get("history", i.get("events")), list)
            and _is_log(i, strict)]
    if runs:
        return list(runs)
    return [data] if _is_log(data, strict) else None


def _arguments(event: Mapping[str, Any], meta: Mapping[str, Any], call_id: object) -> Any:
    """The call's arguments as the model wrote them, else the action's own ``args``."""
    response = mapping(meta.get("model_response")) or {}
    for choice in dicts(response.get("choices")):
        for call in dicts((mapping(choice.get("message")) or {}).get("tool_calls")):
            function = mapping(call.get("function")) or {}
            if call.get("id") == call_id and "arguments" in function:
                return function["arguments"]
    args = mapping(event.get("args")) or {}
    return {k: v for k, v in args.items() if k not in _NOT_ARGUMENTS}


def _response_text(event: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    response = mapping(meta.get("model_response")) or {}
    for choice in dicts(response.get("choices")):
        text = text_of((mapping(choice.get("message")) or {}).get("content"))
        if text:
            return text
    return text_of((mapping(event.get("args")) or {}).get("thought"))


class _Reader:
    def __init__(self, out: Transcript) -> None:
        self.out = out
        self.response: object = None  # the model response of the newest tool call
        self.calls: dict[object, str] = {}  # an action's event id -> its call's id

    def event(self, event: Mapping[str, Any], origin: str) -> None:
        kind = event.get("action", event.get("observation"))
        created = event.get("timestamp")
        meta = mapping(event.get("tool_call_metadata"))
        args = mapping(event.get("args")) or {}
        if isinstance(kind, str) and kind in _BOOKKEEPING:
            self.out.skip(origin, f"{kind} events (bookkeeping the model never sees), skipped")
        elif "action" in event and kind == "system":
            self.out.system(args.get("content") or event.get("message"), origin=origin,
                            created_at=created)
            self.out.add_tools(args.get("tools"))
        elif "action" in event and meta is not None:
            self._call(event, meta, origin, created)
        elif "action" in event:
            self.response = None
            if event.get("source") == "user":
                self._user(event, args, origin, created)
            elif isinstance(kind, str) and kind in _TEXT_ACTIONS:
                self._text(event, args, kind, origin, created)
            else:
                self._ran(event, args, str(kind), origin, created)
        elif meta is not None:
            call_id = meta.get("tool_call_id")
            name = meta.get("function_name")
            self.out.result(event.get("content", event.get("message")), origin=origin,
                            call_id=call_id if isinstance(call_id, str) else None,
                            tool=name if isinstance(name, str) else None, created_at=created,
                            strict=False)
        else:
            self._observed(event, origin, created)

    def _text(self, event: Mapping[str, Any], args: Mapping[str, Any], kind: object,
              origin: str, created: object) -> None:
        """An action that is the agent's words: its thought and what it said."""
        shown = [text_of(args.get("thought"))] + (
            [text_of(args.get(k)) for k in _SHOWN_ARGS if args.get(k)]
            if kind != "message" else [text_of(args.get("content"))])
        text = "\n".join(t for t in shown if t) or text_of(event.get("message"))
        self.out.assistant(text, origin=origin, created_at=created)

    def _ran(self, event: Mapping[str, Any], args: Mapping[str, Any], kind: str,
             origin: str, created: object) -> None:
        """An action that ran a tool, logged before function calling: a call of its own."""
        arguments = {k: v for k, v in args.items() if k not in _NOT_ARGUMENTS}
        (call_id,) = self.out.assistant(args.get("thought"), [Call(kind, arguments)],
                                        origin=origin, created_at=created)
        if isinstance(event.get("id"), int | str):
            self.calls[event["id"]] = call_id

    def _observed(self, event: Mapping[str, Any], origin: str, created: object) -> None:
        """An observation without a tool call: its action's result, else user text."""
        self.response = None
        content = event.get("content") if "content" in event else event.get("message")
        cause = event.get("cause")
        call_id = self.calls.pop(cause, None) if isinstance(cause, int | str) else None
        if call_id is not None or self.out.has_open_calls():
            name = event.get("observation")
            self.out.result(content, origin=origin, call_id=call_id,
                            tool=name if isinstance(name, str) else None,
                            created_at=created, strict=False)
            return
        text = text_of(content) or text_of(event.get("message"))
        self.out.user(f"OBSERVATION:\n{text}" if text else "", origin=origin,
                      created_at=created)

    def _user(self, event: Mapping[str, Any], args: Mapping[str, Any], origin: str,
              created: object) -> None:
        text = text_of(args.get("content")) or text_of(event.get("message"))
        urls = args.get("image_urls")
        images = [u for u in cast(list[object], urls) if isinstance(u, str) and u] \
            if isinstance(urls, list) else []
        content: Any = text
        if images:
            content = [{"type": "text", "text": text},
                       *({"type": "image_url", "image_url": {"url": u}} for u in images)]
        self.out.user(content, origin=origin, created_at=created)

    def _call(self, event: Mapping[str, Any], meta: Mapping[str, Any], origin: str,
              created: object) -> None:
        call_id = meta.get("tool_call_id")
        name = meta.get("function_name")
        if not isinstance(name, str) or not name:
            name = str(event.get("action"))
        call = Call(name, _arguments(event, meta, call_id),
                    call_id if isinstance(call_id, str) else None)
        response = (mapping(meta.get("model_response")) or {}).get("id")
        if response and response == self.response and self.out.add_calls([call]) is not None:
            return
        self.response = response
        self.out.assistant(_response_text(event, meta), [call], origin=origin,
                           created_at=created)


def _read(record: Any, out: Transcript) -> None:
    first, sdk = _Reader(out), SdkReader(out)
    for number, event in enumerate(_events(record), start=1):
        ident = event.get("id")
        named = isinstance(ident, int | str) and ident != ""
        origin = f"event {ident if named else f'#{number}'}"
        if is_sdk_event(event):
            sdk.event(event, origin)
        elif _is_event(event):
            first.event(event, origin)
        else:
            out.skip(origin, "not an action or observation, skipped")


OPENHANDS = Format(
    "openhands", "OpenHands event log: [{id, source, action | observation, args, content, "
    "tool_call_metadata}] or the SDK's [{kind: ActionEvent | ObservationEvent | "
    "MessageEvent, ...}], or {history: [...]} (output.jsonl: one run a line)",
    _conversations, _read)
