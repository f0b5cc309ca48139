"""Multi-Session Chat (MSC, ParlAI's ``msc``): ``{personas, dialog, previous_dialogs}``.

A file holds one episode a line (JSONL), each a conversation: its earlier sessions
(``previous_dialogs``, oldest first, each a ``dialog`` of ``{text}`` turns) and then the
session itself (``dialog``: ``{id: "Speaker 1" | "Speaker 2", text}``). Speaker 1 is read
as the user and Speaker 2 as the assistant; a turn without an ``id`` takes the speaker
its place in the session gives (speakers alternate, Speaker 1 first). MSC dates nothing
(only the gap before a session, ``time_num`` ``time_unit``), so messages carry no time;
the speakers' persona lines are annotations, not part of the chat: both left out with a
note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memci.traces._format import Format, dicts, mapping
from memci.traces._transcript import Transcript

__all__ = ["MSC"]

_OWN_WORDS = ("previous_dialogs", "personas", "init_personas")


def _is_episode(record: object) -> bool:
    top = mapping(record)
    if top is None or not any(k in top for k in _OWN_WORDS):
        return False
    turns = dicts(top.get("dialog"))
    return bool(turns) and all("text" in t for t in turns[:20])


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    del strict  # "dialog" beside "previous_dialogs" or "personas" is this format's own shape
    if _is_episode(data):
        return [data]
    episodes = [i for i in dicts(data) if _is_episode(i)]
    return list(episodes) or None


def _session(turns: list[Mapping[str, Any]], where: str, out: Transcript) -> None:
    for i, turn in enumerate(turns):
        speaker = turn.get("id")
        first = speaker == "Speaker 1" if isinstance(speaker, str) and speaker.startswith(
            "Speaker") else i % 2 == 0
        origin = f"{where} turn {i + 1}"
        if first:
            out.user(turn.get("text"), origin=origin)
        else:
            out.assistant(turn.get("text"), origin=origin)


def _read(record: Any, out: Transcript) -> None:
    top = mapping(record) or {}
    previous = dicts(top.get("previous_dialogs"))
    for number, session in enumerate(previous, start=1):
        _session(dicts(session.get("dialog")), f"previous_dialogs[{number}]", out)
    _session(dicts(top.get("dialog")), "dialog", out)
    if any(k in top for k in _OWN_WORDS[1:]):
        out.skip("personas", "the speakers' persona lines are annotations, not part of the "
                 "chat: left out")
    if len(previous) and any("time_num" in s for s in previous):
        out.skip("previous_dialogs", "MSC gives only the gap between sessions, no date: "
                 "messages carry no time")


MSC = Format(
    "msc", "Multi-Session Chat (ParlAI msc): {personas, previous_dialogs: [{dialog}], "
    "dialog: [{id: 'Speaker 1', text}]}, one episode a line", _conversations, _read)
