"""What memci's own tools may ask of the session they run in (a narrow protocol).

Tools never reach into a session's internals: they recall a page, search memory, read the
session's artifacts and files, and change its working state, through this.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from memci.context._tool_views import SessionArtifacts
from memci.memory import Hit
from memci.workspace import WorkState

__all__ = ["ToolHost"]


class ToolHost(Protocol):
    """The session a tool call runs in."""

    @property
    def file_roots(self) -> tuple[str, ...]:
        """Directories ``file_snippet`` and ``grep`` may read (after the operator's limits)."""
        ...

    @property
    def artifacts(self) -> SessionArtifacts:
        """The stored tool outputs of this session."""
        ...

    def recall_page(self, page: int) -> str:
        """Bring an archived page back into the context from the next build on."""
        ...

    def search(self, query: str, k: int, scope: str, *, now: datetime | None = None) -> list[Hit]:
        """Messages and memory items for ``query``, best first."""
        ...

    def work_state(self) -> WorkState:
        """The session's pins, plan, notebook and fastmemo."""
        ...

    def record_round(self) -> None:
        """Record the current round in the working state (TTLs in rounds count from it)."""
        ...
