"""A whole store: the message log, the context state and every other part, as one protocol.

Everything above ``store/`` is typed against :class:`Store`, never against a backend, so a
backend (SQLite, PostgreSQL) is one class that provides these parts.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, TypeVar

from memci.store._artifacts import ArtifactRows, OutputContents
from memci.store._items import ItemStore
from memci.store._log import ContextStore, MessageLog
from memci.store._search import MessageSearch, VectorStore
from memci.store._work import WorkStore

if TYPE_CHECKING:
    # The parts a build never reaches load with their first use (memci.store's lazy names).
    from memci.store._docs import DocStore
    from memci.store._erase import Eraser
    from memci.store._jobs import JobStore
    from memci.store._keys import KeyRows
    from memci.text import Analyzer

__all__ = ["Store"]

T = TypeVar("T")


class Store(MessageLog, Protocol):
    """A backend: the log (:class:`MessageLog`) and the parts derived from it.

    ``location`` names where the data lives (a file path, a database URL) in messages;
    ``output_reader`` reads a tool output kept whole outside its row, by its SHA-256 (set
    by the artifact store made over this store).
    """

    location: str
    output_reader: Callable[[str], str] | None

    @property
    def context(self) -> ContextStore:
        """Sessions' page states, events and keyed values, versioned."""
        ...

    @property
    def work(self) -> WorkStore:
        """Working state and its audit log."""
        ...

    @property
    def artifact_rows(self) -> ArtifactRows:
        """Artifacts' blobs and links."""
        ...

    @property
    def output_contents(self) -> OutputContents | None:
        """Where the backend keeps whole tool outputs too large for a row itself.

        None: in a folder the engine chooses (beside a SQLite file); a PostgreSQL store
        keeps them in the database, so every server reads them.
        """
        ...

    @property
    def eraser(self) -> Eraser:
        """Deletions (retract, clear, delete a session, erase a user) and their audit log."""
        ...

    @property
    def jobs(self) -> JobStore:
        """Background jobs."""
        ...

    @property
    def keys(self) -> KeyRows:
        """The server's API keys."""
        ...

    def search(self, analyzer: Analyzer) -> MessageSearch:
        """The message index with ``analyzer``'s keyword text."""
        ...

    def items(self, analyzer: Analyzer) -> ItemStore:
        """Long-term memory items with ``analyzer``'s keyword text."""
        ...

    def docs(self, analyzer: Analyzer) -> DocStore:
        """Indexed files and their chunks."""
        ...

    def vectors(self, embedder: str) -> VectorStore:
        """The vectors of one embedder."""
        ...

    def atomic(self) -> AbstractContextManager[None]:
        """One transaction for every write made inside the block (all or nothing)."""
        ...

    def kept(self, name: str, make: Callable[[], T]) -> T:
        """``make()`` once per ``name``, kept with the store (for the layers above it)."""
        ...

    def on_commit(self, work: Callable[[], object]) -> None:
        """Run ``work`` once this thread's open write has committed (after it, outside it).

        Dropped when that write rolls back, or when none is open: what a process keeps of
        the store's data (a cache) is kept this way only once every reader sees it there.
        """
        ...

    def beside(self, reads: Callable[[], T]) -> Callable[[], T]:
        """Start ``reads`` (reads of this store only); the returned call waits for its result.

        A backend that serves reads on several connections at once (PostgreSQL, when no
        write is open on this thread) runs them on a thread of its own, so the caller's
        next statements overlap theirs; otherwise they run here, before this returns. The
        result, or the error ``reads`` raised, comes from the returned call.
        """
        ...

    def another(self) -> Store:
        """A second handle on the same data, with its own connection (for workers)."""
        ...

    def schema_version(self, component: str = "core") -> int:
        """The newest migration of ``component`` applied."""
        ...

    def close(self) -> None:
        """Release the store's connections."""
        ...
