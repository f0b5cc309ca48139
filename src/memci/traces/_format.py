"""What a trace format is to the readers: a name, a shape test, and a reader.

A :class:`Format` finds the conversations a file's JSON value holds (one for most files;
a list of them for result files such as tau-bench's or LongMemEval's) and reads one of
them into a :class:`~memci.traces._transcript.Transcript`. ``strict`` asks for the
shape that tells this format apart from the others (automatic detection); without it,
any shape the reader can read is accepted (the user forced this format).

:func:`message_list` finds the chat messages a record holds under ``messages`` or under
any other key (LMSYS and WildChat keep them in ``conversation``, others in ``dialogue``,
``chat``, ``turns``, or one level further down).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from memci._dataclasses import dataclass
from memci.traces._transcript import Transcript

__all__ = ["Format", "dicts", "mapping", "message_list"]

_DEPTH = 3  # levels below the record searched for a list of messages
_LOOKED_AT = 20  # items of a list looked at to decide that it holds messages


@dataclass(frozen=True, slots=True)
class Format:
    """One trace format memci replay reads."""

    name: str
    summary: str
    """What the file looks like, for help text and errors."""
    conversations: Callable[[Any, bool], list[Any] | None]
    """The conversations in a file's JSON value, or None when it is not of this shape."""
    read: Callable[[Any, Transcript], None]
    """Read one conversation into a transcript."""


def mapping(value: object) -> Mapping[str, Any] | None:
    """``value`` as a JSON object, or None."""
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else None


def dicts(value: object) -> list[Mapping[str, Any]]:
    """The JSON objects of a list (an empty list for anything else)."""
    if not isinstance(value, list):
        return []
    return [cast(Mapping[str, Any], v) for v in cast(list[object], value)
            if isinstance(v, Mapping)]


def _is_messages(value: object) -> bool:
    items = dicts(value)
    return bool(items) and len(items) == len(cast(list[object], value)) and all(
        "role" in i for i in items[:_LOOKED_AT])


def message_list(record: object) -> tuple[Mapping[str, Any], list[Any]] | None:
    """The list of ``{role, …}`` messages ``record`` holds, and the object that holds it.

    ``messages`` is looked at first, then every key, breadth first, down to three levels;
    a list counts when each of its items is an object with a ``role``.
    """
    level = [mapping(record)]
    for _ in range(_DEPTH):
        below: list[Mapping[str, Any] | None] = []
        for holder in level:
            if holder is None:
                continue
            if _is_messages(holder.get("messages")):
                return holder, cast(list[Any], holder["messages"])
            for value in holder.values():
                if _is_messages(value):
                    return holder, cast(list[Any], value)
                below.append(mapping(value))
        level = below
    return None
