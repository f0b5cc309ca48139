"""A store's parts besides the log, each made on first use and kept: what both backends share.

The parts written once (:mod:`memci.store._sql`: context state, working state,
artifacts' rows, jobs, API keys) are made here over the store's :class:`Transactions`;
each backend adds the parts it writes its own way (deletions, the search index, vectors).
Opening a store stays cheap: a part applies its migration series (where the backend
migrates lazily) and makes its derived tables when first asked for, then is kept (one
per store, and one per analyzer or embedder for the search parts).

Every part writes through the store's transactions, so writes of several parts inside
``store.atomic()`` are one transaction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from memci.store._sql._artifacts import SqlArtifactRows
from memci.store._sql._conn import Transactions
from memci.store._sql._work import SqlWorkStore

if TYPE_CHECKING:
    from memci.store._sql._jobs import SqlJobStore
    from memci.store._sql._keys import SqlKeyRows

__all__ = ["SqlParts"]

P = TypeVar("P")


class SqlParts:
    """The parts of a store that both backends make alike; a backend class adds its own."""

    #: The store's transactions for the shared statements (set by the backend).
    sql: Transactions
    #: Held while a part is made (set by the backend: SQLite's is the store's own lock,
    #: so a thread inside a transaction that asks for a part never waits on another).
    _parts_lock: threading.RLock

    def _keeps_parts(self) -> bool:
        """Whether a part made now may be kept (SQLite: not inside an open write)."""
        return True

    def _part(self, key: tuple[str, str], make: Callable[[], P]) -> P:
        parts: dict[tuple[str, str], Any] = self.__dict__.setdefault("_parts", {})
        found = parts.get(key)
        if found is None:
            with self._parts_lock:
                found = parts.get(key)
                if found is None:
                    found = make()
                    if self._keeps_parts():
                        parts[key] = found
        return cast(P, found)

    def kept(self, name: str, make: Callable[[], P]) -> P:
        """What a layer above the store makes of it once (``make()``), kept with the store.

        It lives as long as the store does: a registry beside the store that held it (and
        through it the store) would keep both for the whole process.
        """
        return self._part(("kept", name), make)

    @property
    def work(self) -> SqlWorkStore:
        """Working state and its audit log (:class:`~memci.store.WorkStore`)."""
        return self._part(("work", ""), lambda: SqlWorkStore(self.sql))

    @property
    def artifact_rows(self) -> SqlArtifactRows:
        """Artifacts' blobs and links (:class:`~memci.store.ArtifactRows`)."""
        return self._part(("artifact_rows", ""), lambda: SqlArtifactRows(self.sql))

    @property
    def jobs(self) -> SqlJobStore:
        """Background jobs (:class:`~memci.store.JobStore`)."""
        from memci.store._sql._jobs import SqlJobStore  # an engine with a model, the worker

        return self._part(("jobs", ""), lambda: SqlJobStore(self.sql))

    @property
    def keys(self) -> SqlKeyRows:
        """The server's API keys (:class:`~memci.store.KeyRows`)."""
        from memci.store._sql._keys import SqlKeyRows  # the server's processes only

        return self._part(("keys", ""), lambda: SqlKeyRows(self.sql))
