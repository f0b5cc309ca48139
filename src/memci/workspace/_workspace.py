"""The workspace of a store: its artifacts and the working state of each session.

:class:`Workspace` is what an engine holds once: it opens the :class:`ArtifactStore`
(files beside the database) and hands out the :class:`WorkState` of a session, with the
same limits, compressors and titles for all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from memci._lazy import pathlib
from memci.store import OutputContents, SessionRecord, Store
from memci.workspace._artifacts import ArtifactStore
from memci.workspace._compress import Compressor, extractive_compress
from memci.workspace._items import WorkEvent
from memci.workspace._limits import ENGLISH_TITLES, SectionTitles, WorkspaceLimits
from memci.workspace._state import WorkState
from memci.workspace._summary import ToolOutputSummarizer, summarize_tool_output

__all__ = ["Workspace"]


class Workspace:
    """Artifacts and per-session working state over one store.

    ``files_dir`` holds the large artifacts: a folder (e.g. ``<data dir>/artifacts`` beside
    the database) or the store's own contents (:attr:`~memci.store.Store.output_contents`).
    ``limits`` given here win over limits saved with a session.
    """

    def __init__(
        self, store: Store, files_dir: str | pathlib.Path | OutputContents, *,
        limits: WorkspaceLimits | None = None, compress: Compressor = extractive_compress,
        fastmemo_compress: Compressor | None = None, titles: SectionTitles = ENGLISH_TITLES,
        inline_max_bytes: int = 64 * 1024,
        summarize: ToolOutputSummarizer = summarize_tool_output,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.store = store
        self.artifacts = ArtifactStore(store, files_dir, inline_max_bytes=inline_max_bytes,
                                       summarize=summarize)
        self.limits = limits
        self.compress = compress
        self.fastmemo_compress = fastmemo_compress
        self.titles = titles
        self.clock = clock

    def state(self, session: SessionRecord, *, actor: str = "main") -> WorkState:
        """Return the working state of ``session``, recording ``actor`` on its events."""
        return WorkState(
            self.store, session, limits=self.limits, compress=self.compress,
            fastmemo_compress=self.fastmemo_compress, titles=self.titles, actor=actor,
            clock=self.clock,
        )

    def export_state(self, session: SessionRecord) -> dict[str, Any]:
        """Return the session's ``context_state.json`` object."""
        return self.state(session).export_state()

    def import_state(self, session: SessionRecord, data: Any, *, actor: str = "import"
                     ) -> WorkEvent:
        """Replace the session's working state with a ``context_state.json`` object."""
        return self.state(session, actor=actor).import_state(data)

    def save_state_file(self, session: SessionRecord, path: str | pathlib.Path) -> pathlib.Path:
        """Write the session's ``context_state.json`` to ``path`` (atomically)."""
        from memci.workspace._statefile import write_state_file  # with tempfile: when asked

        write_state_file(path, self.export_state(session))
        return pathlib.Path(path)

    def load_state_file(self, session: SessionRecord, path: str | pathlib.Path, *,
                        actor: str = "import") -> WorkEvent:
        """Import a ``context_state.json`` file into the session (all or nothing)."""
        from memci.workspace._statefile import read_state_file

        return self.import_state(session, read_state_file(path), actor=actor)
