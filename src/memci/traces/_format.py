"""What a trace format is to the readers: a name, a shape test, and a reader.

A :class:`Format` finds the conversations a file's JSON value holds (one for most files;
a list of them for result files such as tau-bench's or LongMemEval's) and reads one of
them into a :class:`~memci.traces._transcript.Transcript`. ``strict`` asks for the
shape that tells this format apart from the others (automatic detection); without it,
any shape the reader can read is accepted (the user forced this format).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from memci.traces._transcript import Transcript

__all__ = ["Format", "dicts", "mapping"]


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
