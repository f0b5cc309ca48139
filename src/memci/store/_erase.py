"""Deleting what must go: messages, sessions and users, with everything derived from them.

:class:`Eraser` is the only part of a store that removes rows for good. It knows every
table its backend holds, so a deletion also reaches what no other part would think of:
the search entries of every analyzer, the vectors of every embedder, the artifact blobs
no remaining link needs. What a deletion removed comes back as a :class:`Removed` (counts
by kind, and the artifact files to remove once it is committed); the audit log keeps one
:class:`Erasure` per deletion, with ids and counts, never content.

Invariants every backend keeps:

- a deletion is one transaction of its own, or joins the store's open ``atomic()`` block:
  all of it or nothing;
- a seq is never given twice: after a retract or a clear, the session's next message
  continues after the highest seq it ever had;
- every deletion of messages grows the session's epoch (:meth:`MessageLog.log_head`) and
  its context version (:meth:`ContextStore.head`), so every process that holds a copy of
  either reads it again instead of catching up;
- a deleted session is no longer found by name or listed, and its id is never given to
  another session, so a handle that still names it finds nothing rather than another
  session's data;
- an artifact blob goes when its last link goes, and not before: a blob shared with a
  session that stays is kept;
- an erasure that removed nothing is recorded as scrubbed (there is nothing to scrub);
  any other one is *scrub pending* (:attr:`Erasure.scrubbed` None) until a scrub that
  began after it committed completes (:meth:`Eraser.pending_scrub`,
  :meth:`Eraser.mark_scrubbed`);
- :meth:`Eraser.scrub` takes deleted content out of the store's files as far as its
  backend can without stopping other writers (SQLite: every deletion already zeroed what
  it freed, and the write-ahead log is emptied; PostgreSQL: every table of memci's is
  vacuumed); ``full=True`` rewrites the files (a maintenance step: it blocks writers).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Protocol

from memci._dataclasses import dataclass, field
from memci.store._records import SessionRecord

__all__ = ["ERASE_COUNTS", "Eraser", "Erasure", "Removed"]

#: The kinds a deletion counts, in the order they are reported.
ERASE_COUNTS: tuple[str, ...] = (
    "sessions", "messages", "index", "vectors", "artifacts", "blobs", "items", "jobs",
    "state", "work",
)


@dataclass(frozen=True, slots=True)
class Removed:
    """What one deletion removed: how many of each kind, and the blob files to remove.

    ``counts`` keys are :data:`ERASE_COUNTS` (``index``: search entries, ``artifacts``:
    links of tool outputs to calls, ``blobs``: distinct tool outputs, ``state``: rows of
    the context state, ``work``: working-state rows and audit events). ``files`` are the
    ids of blobs kept in files whose rows went: the caller removes those files after the
    transaction commits (a file is never removed while a row may still name it).
    """

    counts: Mapping[str, int] = field(default_factory=dict)
    files: tuple[str, ...] = ()

    def __add__(self, other: Removed) -> Removed:
        counts = dict(self.counts)
        for kind, n in other.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        return Removed(counts, tuple(dict.fromkeys((*self.files, *other.files))))

    def count(self, kind: str) -> int:
        """How many of ``kind`` went (0 when none)."""
        return int(self.counts.get(kind, 0))


@dataclass(frozen=True, slots=True)
class Erasure:
    """One deletion as the audit log keeps it: who, what and when, never content.

    ``action`` is ``retract``, ``clear``, ``delete_session`` or ``erase_user``; ``user`` is
    the SHA-256 (hex) of the user id an erase was about (None otherwise), so the log holds
    no name yet can answer "was this user erased?"; ``sessions`` are the ids of the
    sessions it touched; ``counts`` as in :class:`Removed`. ``scrubbed`` is when a scrub
    covered it (what it removed left the files, as far as the backend can promise: see
    docs/deleting.md); None: the deletion is committed, its scrub is pending.
    """

    id: int
    at: datetime
    actor: str
    action: str
    tenant: str
    user: str | None
    sessions: tuple[int, ...]
    counts: Mapping[str, int]
    scrubbed: datetime | None = None


class Eraser(Protocol):
    """Deletes messages, sessions and users, and keeps the audit log of deletions."""

    def retract(self, session: SessionRecord, seqs: Collection[int]) -> Removed:
        """Delete the messages ``seqs`` of the session and what is derived from each.

        That is: their tool-call rows (a deleted result reopens its call), views, search
        entries (and the page numbers of later entries when a user message goes), vectors,
        the artifact links of deleted tool results and the blobs no link needs any more.
        Seqs the session does not hold are ignored. Grows the epoch and the version.
        """
        ...

    def unindex_some(self, session: SessionRecord, limit: int) -> Removed:
        """Delete up to ``limit`` of the session's search entries, oldest first, and commit.

        A transaction of its own, ahead of a deletion of the whole session (its messages
        stay until then): many entries go in short transactions instead of one long one.
        Counts ``index`` and ``vectors``; none left: nothing counted.
        """
        ...

    def unindex(self, session: SessionRecord, seqs: Collection[int]) -> int:
        """Delete the search entries (keyword text, vectors) of messages ``seqs``, which stay.

        For messages whose keyword text quotes a deleted one (its context): they are
        indexed again after. Returns how many entries went.
        """
        ...

    def clear(self, session: SessionRecord) -> Removed:
        """Delete every message of the session and everything derived from them.

        The session stays, with its settings: its context state, working state and audit
        events, artifacts, memory items and summary jobs (keys ``session:<id>:…``) go.
        """
        ...

    def delete_session(self, session: SessionRecord) -> Removed:
        """:meth:`clear`, then the session itself: no name finds it any more."""
        ...

    def user_sessions(self, tenant: str, user: str) -> list[SessionRecord]:
        """The sessions of ``user`` in ``tenant``, oldest first."""
        ...

    def erase_user_items(self, tenant: str, user: str) -> Removed:
        """Delete every memory item of ``user`` in ``tenant`` (every scope), with history."""
        ...

    def erase_items(self, item_ids: Collection[int]) -> int:
        """Delete memory items with their keyword text, vectors and history links."""
        ...

    def derived_items(self, session: SessionRecord, first_page: int) -> list[int]:
        """Ids of the memory items derived from the session's pages ``first_page`` and later.

        The session's episodes of those pages, and its user's facts whose source names one
        of them (``<session name>#p<page>``). Pass them to :meth:`erase_items`.
        """
        ...

    def forget_pages(self, session: SessionRecord, first_page: int) -> int:
        """Delete the saved rows of pages ``first_page`` and later; grow the version.

        Those pages are plainly active again: the next build archives them anew.
        """
        ...

    def erase_jobs(self, key_prefixes: Collection[str]) -> int:
        """Delete the jobs whose key starts with one of ``key_prefixes`` (any state)."""
        ...

    def forget_work(self, session_id: int, keys: Collection[str]) -> int:
        """Delete working-state items (``note:7``, ``memo:3`` …) and the events that touched them.

        Returns how many rows went (items and audit events). When any went, a ``forget``
        event (the keys, no content) is added, so the state's version still grows.
        """
        ...

    def forget_values(self, session_ids: Collection[int], keys: Collection[str]) -> int:
        """Delete keyed context values of these sessions; grow each one's version.

        Values that cache text derived from deleted messages (retrieval) go with them.
        """
        ...

    def record(
        self, action: str, *, actor: str, tenant: str, user: str | None,
        sessions: Collection[int], counts: Mapping[str, int], at: datetime,
    ) -> Erasure:
        """Add a deletion to the audit log (``user`` as given: the log keeps its SHA-256).

        Scrub pending, unless it counts nothing (then scrubbed at ``at``).
        """
        ...

    def pending_scrub(self) -> list[int]:
        """Ids of the committed erasures whose scrub is pending, oldest first."""
        ...

    def mark_scrubbed(self, erasure_ids: Collection[int], at: datetime) -> None:
        """Record that a scrub covering these erasures completed at ``at``."""
        ...

    def erasures(self, tenant: str | None = None, *, limit: int = 100) -> list[Erasure]:
        """The newest deletions (of one tenant, if given), oldest first."""
        ...

    def epoch(self) -> int:
        """Grows with every deletion in the store (0 before the first): for caches."""
        ...

    def scrub(self, *, full: bool = False) -> bool:
        """Take deleted content out of the store's files; False if readers kept some.

        Runs outside any transaction, in steps that never hold other writers up for long
        (see the backends). ``full`` rewrites the files instead: it needs free space of
        their size and holds every writer up while it runs. Raises StoreError when it
        cannot (what was deleted stays deleted). Marks nothing: see
        :meth:`mark_scrubbed`.
        """
        ...
