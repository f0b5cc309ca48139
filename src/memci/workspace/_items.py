"""The records of the working state, their JSON form, and the checks every write passes.

Each record is stored (and exported to ``context_state.json``) as a JSON object; the
frozen dataclasses here are read-only views of those objects. The JSON object is the
one true form: an export holds exactly what is stored, so a round trip is lossless.

Sources: a pin must cite its evidence as ``chat:<id>``, ``tool:<id>``,
``file:<path>#L<n>`` (or ``#L<n>-<m>``) or ``artifact:<id>``. Notebook and fastmemo
entries may cite anything on one line; when they cite nothing the writer is recorded
as ``actor:<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memci._dataclasses import dataclass
from memci._lazy import LazyPattern
from memci.errors import WorkspaceError, WorkspaceLimitError
from memci.store._work import WorkEvent
from memci.workspace._limits import TTL

__all__ = [
    "MemoEntry",
    "NoteEntry",
    "Pin",
    "PlanItem",
    "WorkEvent",
    "check_artifact_ref",
    "check_line",
    "check_pin_source",
    "check_source",
]

_PIN_SOURCE = LazyPattern(
    r"(?:chat|tool):[^\s]{1,200}|file:[^\s#][^#\n]{0,1000}#L\d+(?:-L?\d+)?"
    r"|artifact:[0-9a-f]{12,64}"
)
_ARTIFACT_REF = LazyPattern(r"(?:artifact:)?([0-9a-f]{12,64})")
_SOURCE_MAX = 300


def check_line(value: Any, what: str, max_chars: int, *, limit_hint: str = "") -> str:
    """Check a non-empty single-line text of at most ``max_chars`` characters (stripped)."""
    if not isinstance(value, str):
        raise WorkspaceError(f"{what} must be text, not {type(value).__name__}")
    text = value.strip()
    if not text:
        raise WorkspaceError(f"{what} must not be empty")
    if len(text) > max_chars:
        raise WorkspaceLimitError(
            f"{what} is {len(text):,} characters, over the limit of {max_chars:,}"
            + (f": {limit_hint}" if limit_hint else "")
        )
    return text


def check_pin_source(value: Any) -> str:
    """Check a pin's source: ``chat:<id>``, ``tool:<id>``, ``file:<p>#L<n>``, ``artifact:<id>``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise WorkspaceError(
            "a pin needs a source citing its evidence: chat:<message id>, tool:<call id>, "
            "file:<path>#L<line> or artifact:<id>"
        )
    if not isinstance(value, str) or not _PIN_SOURCE.fullmatch(value.strip()):
        raise WorkspaceError(
            f"pin source {value!r} is not one of chat:<message id>, tool:<call id>, "
            "file:<path>#L<line> (or #L<a>-<b>), artifact:<id>"
        )
    return value.strip()


def check_source(value: Any, actor: str) -> str:
    """Check an entry's source: any single line, or ``actor:<actor>`` when none is given."""
    if value is None:
        return f"actor:{actor}"
    return check_line(value, "source", _SOURCE_MAX)


def check_artifact_ref(value: Any) -> str | None:
    """``artifact:<id>`` (a bare id is accepted and prefixed) or ``file:<path>[#L<n>]``."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise WorkspaceError(f"artifact_ref must be text, not {type(value).__name__}")
    text = value.strip()
    found = _ARTIFACT_REF.fullmatch(text)
    if found:
        return f"artifact:{found.group(1)}"
    if text.startswith("file:") and len(text) > 5 and "\n" not in text and len(text) <= 1000:
        return text
    raise WorkspaceError(
        f"artifact_ref {value!r} must be artifact:<id> (the id of a stored tool output) or "
        "file:<path>#L<line>"
    )


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(str(value))


def _opt_time(value: Any) -> datetime | None:
    return None if value is None else _time(value)


@dataclass(frozen=True, slots=True)
class Pin:
    """An important fact kept across rounds: short, sourced, limited, with a TTL."""

    id: int
    type: str
    title: str
    summary: str
    source: str
    artifact_ref: str | None
    ttl: TTL
    created_at: datetime
    updated_at: datetime
    created_round: int
    expires_at: datetime | None
    expires_round: int | None
    actor: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Pin:
        """Make the view of a stored pin object."""
        ttl = data["ttl"]
        return cls(
            id=int(data["id"]), type=str(data["type"]), title=str(data["title"]),
            summary=str(data["summary"]), source=str(data["source"]),
            artifact_ref=data.get("artifact_ref"),
            ttl=TTL(ttl.get("seconds"), ttl.get("rounds")),
            created_at=_time(data["created_at"]), updated_at=_time(data["updated_at"]),
            created_round=int(data["created_round"]),
            expires_at=_opt_time(data.get("expires_at")),
            expires_round=data.get("expires_round"), actor=str(data["actor"]),
        )


@dataclass(frozen=True, slots=True)
class PlanItem:
    """One TODO of the plan."""

    id: int
    text: str
    done: bool
    source: str
    created_at: datetime
    updated_at: datetime
    actor: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlanItem:
        """Make the view of a stored plan item object."""
        return cls(
            id=int(data["id"]), text=str(data["text"]), done=bool(data["done"]),
            source=str(data["source"]), created_at=_time(data["created_at"]),
            updated_at=_time(data["updated_at"]), actor=str(data["actor"]),
        )


@dataclass(frozen=True, slots=True)
class NoteEntry:
    """A notebook entry; a milestone stands for the older entries it ``covers``."""

    id: int
    summary: str
    source: str
    artifact_ref: str | None
    milestone: bool
    covers: tuple[int, ...]
    pos: int
    created_at: datetime
    actor: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> NoteEntry:
        """Make the view of a stored notebook entry object."""
        return cls(
            id=int(data["id"]), summary=str(data["summary"]), source=str(data["source"]),
            artifact_ref=data.get("artifact_ref"), milestone=bool(data["milestone"]),
            covers=tuple(int(i) for i in data["covers"]), pos=int(data["pos"]),
            created_at=_time(data["created_at"]), actor=str(data["actor"]),
        )


@dataclass(frozen=True, slots=True)
class MemoEntry:
    """A fastmemo entry of one section; a compacted one stands for those it ``covers``."""

    id: int
    section: str
    text: str
    source: str
    covers: tuple[int, ...]
    pos: int
    created_at: datetime
    actor: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MemoEntry:
        """Make the view of a stored fastmemo entry object."""
        return cls(
            id=int(data["id"]), section=str(data["section"]), text=str(data["text"]),
            source=str(data["source"]), covers=tuple(int(i) for i in data["covers"]),
            pos=int(data["pos"]), created_at=_time(data["created_at"]),
            actor=str(data["actor"]),
        )
