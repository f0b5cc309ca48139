"""What a session needs from the engine that opened it (a protocol, so neither imports the other).

:class:`~memci.Engine` provides it: the store, the artifact workspace, the job queue of
background summaries (None without a model), long-term memory and its extractor, the
deletions (:class:`~memci.context._deleting.Deleter`) and the operator's host limits (set by
``memci serve``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # a protocol's annotations only: a session loads none of these for it
    from collections.abc import Callable

    from memci.context._deleting import Deleter
    from memci.context._settings import HostLimits
    from memci.memory import Gatherer, Memory
    from memci.store import Store
    from memci.summarize import JobQueue
    from memci.workspace import Workspace

__all__ = ["SessionServices"]


class SessionServices(Protocol):
    """The engine as a session sees it."""

    store: Store
    workspace: Workspace
    deleter: Deleter
    jobs: JobQueue | None
    host_limits: Callable[[str], HostLimits] | None

    @property
    def memory(self) -> Memory:
        """Long-term memory and search over the store."""
        ...

    @property
    def gatherer(self) -> Gatherer:
        """Seed 002's long-term extractor over :attr:`memory`."""
        ...
