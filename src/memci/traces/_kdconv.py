"""KdConv (``thu-coai/KdConv``): ``[{name, messages: [{message, attrs?}]}]``.

A file is a list of dialogues (or one), each a conversation about the topic ``name``;
the speakers alternate, the first read as the user and the second as the assistant. An
utterance's ``attrs`` name the knowledge-base facts it uses: annotations, not part of the
chat, left out. KdConv dates nothing, so messages carry no time.
"""

from __future__ import annotations

from typing import Any

from memci.traces._format import Format, dicts, mapping
from memci.traces._transcript import Transcript

__all__ = ["KDCONV"]


def _is_dialogue(record: object) -> bool:
    top = mapping(record)
    if top is None:
        return False
    turns = dicts(top.get("messages"))
    # "message" (and never "role") in every utterance is this format's own shape
    return bool(turns) and all("message" in t and "role" not in t for t in turns[:20])


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    del strict
    if _is_dialogue(data):
        return [data]
    dialogues = [i for i in dicts(data) if _is_dialogue(i)]
    return list(dialogues) or None


def _read(record: Any, out: Transcript) -> None:
    top = mapping(record) or {}
    for i, utterance in enumerate(dicts(top.get("messages"))):
        origin = f"messages[{i + 1}]"
        if i % 2 == 0:
            out.user(utterance.get("message"), origin=origin)
        else:
            out.assistant(utterance.get("message"), origin=origin)
        if utterance.get("attrs"):
            out.skip(origin, "knowledge-base facts (attrs) are annotations, left out")


KDCONV = Format(
    "kdconv", "KdConv dialogues: [{name, messages: [{message, attrs}]}], one a conversation",
    _conversations, _read)
