"""ShareGPT-style conversations: ``{conversations: [{from, value}]}``.

Speakers (``from``): ``human``/``user`` are the user; ``gpt``/``assistant``/``chatgpt``/
``bard``/``bing``/``model`` the assistant; ``system`` the system prompt;
``function_call``/``tool_call`` an assistant tool call whose value is JSON
``{name, arguments}`` (or a list of them); ``observation``/``tool``/``function`` a tool
result, paired with the oldest open call (LLaMA-Factory's function-calling variant, with
``system`` and ``tools`` beside ``conversations``). A file may hold one conversation, a
list of them, or the bare list of turns.
"""

from __future__ import annotations

import json
from typing import Any, cast

from memci.traces._format import Format, dicts, mapping
from memci.traces._transcript import Call, Transcript

__all__ = ["SHAREGPT"]

_USER = frozenset({"human", "user"})
_ASSISTANT = frozenset({"gpt", "assistant", "chatgpt", "bard", "bing", "model", "bot"})
_CALL = frozenset({"function_call", "tool_call", "tool_calls"})
_RESULT = frozenset({"observation", "tool", "function", "tool_response"})


def _turns(record: Any) -> list[Any] | None:
    top = mapping(record)
    if top is None:
        return None
    for key in ("conversations", "conversation"):
        turns = top.get(key)
        if isinstance(turns, list) and any("from" in t for t in dicts(turns)):
            return turns
    return None


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    del strict  # "from" and "value" are this format's own words
    if _turns(data) is not None:
        return [data]
    items = dicts(data)
    if items and _turns(items[0]) is not None:
        return [i for i in items if _turns(i) is not None]
    if items and all("from" in i and "value" in i for i in items[:20]):
        return [{"conversations": data}]
    return None


def _calls(value: object) -> list[Call]:
    """A function_call turn's calls: JSON {name, arguments}, a list of them, or text."""
    parsed = value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return [Call("function", value)]
    out = []
    for item in cast(list[object], parsed) if isinstance(parsed, list) else [parsed]:
        call = mapping(item)
        if call is not None and isinstance(call.get("name"), str):
            out.append(Call(call["name"], call.get("arguments", call.get("parameters"))))
    return out or [Call("function", value)]


def _read(record: Any, out: Transcript) -> None:
    top = mapping(record) or {}
    out.system(top.get("system"), origin="system")
    out.add_tools(top.get("tools"))
    for number, turn in enumerate(_turns(record) or [], start=1):
        origin = f"conversations turn {number}"
        entry = mapping(turn)
        if entry is None:
            out.skip(origin, "not a turn object, skipped")
            continue
        speaker = str(entry.get("from", "")).lower()
        value = entry.get("value")
        if speaker in _USER:
            out.user(value, origin=origin)
        elif speaker in _ASSISTANT:
            out.assistant(value, origin=origin)
        elif speaker == "system":
            out.system(value, origin=origin)
        elif speaker in _CALL:
            out.assistant("", _calls(value), origin=origin)
        elif speaker in _RESULT:
            name = entry.get("name")
            out.result(value, origin=origin, tool=name if isinstance(name, str) else None)
        else:
            out.skip(origin, f"speaker {speaker!r} is not one ShareGPT names, skipped")


SHAREGPT = Format(
    "sharegpt", "ShareGPT-style {conversations: [{from, value}]} (human / gpt / system / "
    "function_call / observation), one or a list", _conversations, _read)
