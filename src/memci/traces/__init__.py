"""Reading the traces agents write, for ``memci replay``: many formats, one transcript.

:func:`read_trace` reads a file and :func:`parse_trace` a JSON value already loaded;
both give a :class:`Trace`: the conversation as OpenAI chat messages (ready for
``Session.add``), where each came from in the file, the agent's own tool schemas when the
file records them, the questions whose answers the file labels (with their evidence
turns), and notes on what was left out. The format is found by the shape of
the data (:data:`FORMATS`, tried in order, most distinctive first), or forced by name.

Formats: OpenAI messages (lists, JSONL, ``{messages}``, mini-swe-agent, a list of
``{role, content}`` under any key), Anthropic messages (and Claude Code logs), ShareGPT
``conversations``, SWE-agent ``.traj``, tau-bench / tau2-bench results, OpenHands event
logs (both generations) and evaluation outputs, LongMemEval items, LoCoMo conversations,
Multi-Session Chat (MSC) and KdConv dialogues. A file that holds several conversations (a
results file) gives one, by number (``item``, from 1).

Invariants: tool calls and results are paired as providers require (ids are generated,
the same way every time, where a format has none); a file that yields no chat message
raises :class:`~memci.errors.InvalidFileError` naming the formats known; reading never
stores anything and does no I/O beyond reading the one file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memci._dataclasses import dataclass, field
from memci.errors import InvalidFileError
from memci.traces._anthropic import ANTHROPIC
from memci.traces._format import Format
from memci.traces._kdconv import KDCONV
from memci.traces._load import load_json
from memci.traces._locomo import LOCOMO
from memci.traces._longmemeval import LONGMEMEVAL
from memci.traces._msc import MSC
from memci.traces._openai import OPENAI
from memci.traces._openhands import OPENHANDS
from memci.traces._sharegpt import SHAREGPT
from memci.traces._sweagent import SWE_AGENT
from memci.traces._taubench import TAU_BENCH
from memci.traces._transcript import Question, Transcript

__all__ = ["FORMATS", "FORMAT_NAMES", "Format", "Question", "Trace", "formats_help",
           "parse_trace", "read_trace"]

FORMATS: tuple[Format, ...] = (LONGMEMEVAL, LOCOMO, MSC, KDCONV, SWE_AGENT, OPENHANDS,
                               TAU_BENCH, SHAREGPT, ANTHROPIC, OPENAI)
"""Every format, in the order detection tries them."""

FORMAT_NAMES: tuple[str, ...] = tuple(f.name for f in FORMATS)


@dataclass(frozen=True, slots=True)
class Trace:
    """One conversation of a trace file, as chat messages."""

    format: str
    messages: list[dict[str, Any]]
    """OpenAI chat messages (``created_at`` where the file dates them)."""
    origins: list[str]
    """Where each message came from in the file ("message 3", "event 12")."""
    tools: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """The agent's own tool schemas (OpenAI form), when the file records them."""
    notes: list[str] = field(default_factory=list[str])
    """What was left out or changed, and where."""
    item: int = 1
    items: int = 1
    """Which conversation of the file this is, and how many it holds."""
    questions: list[Question] = field(default_factory=list[Question])
    """The questions whose evidence the file labels (LoCoMo, LongMemEval), in order."""


def formats_help() -> str:
    """One line per format: its name and what its files look like."""
    return "\n".join(f"{f.name}: {f.summary}" for f in FORMATS)


def _known() -> str:
    return (f"memci replay reads {', '.join(FORMAT_NAMES)} (see `memci replay --help`); "
            "--format NAME forces one")


def parse_trace(
    data: Any, *, format: str | None = None, item: int | None = None, source: str = "the file",
) -> Trace:
    """The conversation in ``data`` (a file's JSON value); see the module notes."""
    if format is not None:
        chosen = next((f for f in FORMATS if f.name == format), None)
        if chosen is None:
            raise InvalidFileError(f"unknown trace format {format!r}; {_known()}")
        records = chosen.conversations(data, False)
        if not records:
            raise InvalidFileError(
                f"{source} is not a {chosen.name} file (expected {chosen.summary}); "
                f"{_known()}")
    else:
        found = next(((f, r) for f in FORMATS if (r := f.conversations(data, True))), None)
        if found is None:
            raise InvalidFileError(f"{source} holds no chat message in a format memci "
                                   f"knows; {_known()}")
        chosen, records = found
    if item is not None and not 1 <= item <= len(records):
        raise InvalidFileError(
            f"{source} holds {len(records)} conversation{'s' * (len(records) != 1)} "
            f"({chosen.name}); there is no conversation {item}")
    number = item or 1
    out = Transcript()
    try:
        chosen.read(records[number - 1], out)
    except RecursionError as exc:
        raise InvalidFileError(f"{source}: the conversation is nested too deeply to read "
                               f"as {chosen.name}") from exc
    if not out.chat_messages():
        raise InvalidFileError(
            f"{source} holds no chat message (read as {chosen.name}"
            f"{f', conversation {number}' if len(records) > 1 else ''}); {_known()}")
    notes = out.notes
    if len(records) > 1 and item is None:
        notes.insert(0, f"the file holds {len(records)} {chosen.name} conversations: "
                        "replaying the first (--item N picks another)")
    return Trace(chosen.name, out.messages, out.origins, out.tools, notes, number,
                 len(records), out.questions)


def read_trace(path: Path, *, format: str | None = None, item: int | None = None) -> Trace:
    """The conversation in the file at ``path``; see :func:`parse_trace`."""
    return parse_trace(load_json(path), format=format, item=item, source=str(path))
