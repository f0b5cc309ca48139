"""The message log and a session's context state: protocols and their records.

:class:`MessageLog` is the write-back log (every message ever added, in order, per session);
:class:`ContextStore` keeps what a session's builds derive from it and must agree on across
processes: page states, archive/recall/evict events and small keyed values, all guarded by
the session's *version*. A build reads them, plans with no I/O, and commits its changes with
:meth:`ContextStore.commit`, which applies them only if the version is still the one it read
(compare-and-swap): two processes never archive a page twice.

Everything here is a plain value; no connection or cursor crosses these signatures. Writes
made inside the store's ``atomic()`` block join one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from memci._dataclasses import dataclass, field
from memci._records import NamedTuple
from memci.messages import Message
from memci.store._records import SessionRecord

__all__ = [
    "LOG_INDEX_KEY",
    "ContextChanges",
    "ContextEvent",
    "ContextState",
    "ContextStore",
    "LogRow",
    "MessageLog",
    "PageRow",
    "SessionHeads",
]


#: The keyed value that copies a session's planning rows (see
#: :mod:`memci.context._log_copy`): large, so :meth:`ContextStore.load` leaves it out and
#: :meth:`ContextStore.get` reads it, once, when a process opens the session.
LOG_INDEX_KEY = "log.index"


class LogRow(NamedTuple):
    """What planning needs of one stored message: seq, role, tokens, tokens as shown.

    ``shown`` is a tool result's tokens as its view (summary and pointer), None when no
    view is saved yet. A named tuple: a session's log is read whole when a process opens
    it, one row a message, and a tuple is made from a driver's row in C.
    """

    seq: int
    role: str
    tokens: int
    shown: int | None = None


class LogColumns(NamedTuple):
    """The planning rows of a run of messages as columns (see :class:`LogRow`), in order.

    What a process reads when it opens a session: one list a field, made from the
    driver's rows in C, so a long log costs no Python work per message.
    """

    seqs: list[int]
    roles: list[str]
    tokens: list[int]
    shown: list[int | None]


class PageRow(NamedTuple):
    """The saved state of a page that is not plainly active (archived, recalled, evicted)."""

    page: int
    first_seq: int
    last_seq: int
    state: str
    archived_round: int
    recall_count: int
    last_recall_round: int | None
    lines: tuple[str, ...]
    source: str = "extractive"
    #: Tokens of the page's contents entry as counted when the row was saved, and what
    #: they were counted for (the tokenizer's name and the language, ``"estimate/en"``;
    #: empty: not counted): a process that counts alike takes them, not counting again.
    tokens: int = 0
    counted: str = ""


class ContextEvent(NamedTuple):
    """An archive, recall or eviction: which pages, in which round, and why.

    ``last_page`` is the last page of a range (a backlog archived and evicted at once is one
    event); it equals ``page`` for a single page.
    """

    round: int
    kind: str
    page: int
    reason: str
    last_page: int = 0
    at: str | None = None  # when it was recorded (ISO 8601, UTC), as read back

    @property
    def pages(self) -> int:
        """How many pages the event is about."""
        return max(self.last_page, self.page) - self.page + 1


class SessionHeads(NamedTuple):
    """What tells a build whether what it holds of a session is current (one read)."""

    version: int  # the context state's (see ContextStore.head)
    epoch: int  # the log's: grows whenever messages are deleted
    last_seq: int  # the newest message's (0: none)
    work_event: int  # the working state's newest event's id (0: none)


@dataclass(frozen=True, slots=True)
class ContextState:
    """A session's context state as one build reads it.

    ``version`` grows with every committed change; ``values`` are small keyed JSON values a
    strategy keeps between builds (the paged cut and base, a rolling summary, the retrieval
    of the current page); ``counts`` are events by kind, counted in pages.
    """

    version: int
    pages: tuple[PageRow, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)
    values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ContextChanges:
    """What one build (or a recall) changes: page rows to save, events, values to set."""

    pages: Sequence[PageRow] = ()
    events: Sequence[ContextEvent] = ()
    values: Mapping[str, Any] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.pages or self.events or self.values)


class MessageLog(Protocol):
    """Sessions and their messages: ``seq`` 1, 2, 3 … per session, never given twice.

    Messages are only appended, except by the store's :class:`~memci.store.Eraser`
    (retract, clear, delete): it grows the session's epoch (:meth:`log_head`), and the
    next message still continues after the highest seq the session ever had.
    """

    def session(self, tenant: str, name: str) -> SessionRecord | None:
        """The session ``name`` of ``tenant``, or None."""
        ...

    def ensure_session(
        self, tenant: str, name: str, user: str | None, settings: Mapping[str, Any]
    ) -> SessionRecord:
        """Get or create the session; given settings replace the saved ones.

        A session's user is set once: when made, or by the first call that gives one to a
        session made without. Another user raises OwnerConflictError, changing nothing.
        """
        ...

    def sessions(
        self, tenant: str | None = None, *, after: int = 0, limit: int | None = None
    ) -> list[SessionRecord]:
        """Every session (of one tenant, if given), oldest first.

        ``after``: only sessions whose id is greater; ``limit``: at most this many (a page).
        """
        ...

    def append(
        self, session: SessionRecord, messages: Sequence[Message], *,
        external: Mapping[int, str] | None = None,
    ) -> list[Message]:
        """Store ``messages`` in one transaction (all or none); return them with their seq.

        A tool result must answer an open tool call (else OrphanToolResultError, nothing
        stored). ``external`` maps positions of tool results whose whole output is kept in
        an artifact file to that file's SHA-256: their rows keep only the head.
        """
        ...

    def last_seq(self, session: SessionRecord) -> int:
        """The seq of the newest message (0 when empty)."""
        ...

    def log_head(self, session: SessionRecord) -> tuple[int, int]:
        """``(epoch, last seq)``: the epoch grows whenever messages of the session are deleted.

        A copy of the log is current while the epoch is the one it read: it catches up by
        reading what came after its last seq; another epoch means reading it again.
        Raises :class:`~memci.errors.UnknownSessionError` when the session was deleted.
        """
        ...

    def messages(
        self, session: SessionRecord, *, after: int = 0, upto: int | None = None,
        whole: bool = True,
    ) -> list[Message]:
        """Messages with ``after < seq <= upto``, in order (``whole=False``: heads only)."""
        ...

    def activity(
        self, sessions: Sequence[SessionRecord]
    ) -> dict[int, tuple[int, datetime | None]]:
        """``{session id: (messages, newest message's created_at)}`` for a page of sessions.

        Sessions without messages are left out. What a listing of sessions shows beside
        each (the inspector's): one read for the page, whatever the sessions hold.
        """
        ...

    def message_sizes(
        self, session: SessionRecord, *, after: int = 0, limit: int
    ) -> list[tuple[int, int]]:
        """``(seq, bytes)`` of the first ``limit`` messages after ``after``, in order.

        The bytes a message's row holds (parts, name and metadata; a tool output kept in an
        artifact file counts its head, see :meth:`output_refs`), told without reading the
        messages: what reading them costs, so a reader can stop before a budget.
        """
        ...

    def log_rows(self, session: SessionRecord, *, after: int = 0) -> list[LogRow]:
        """Planning rows of the messages after ``after``, in order."""
        ...

    def log_columns(self, session: SessionRecord, *, after: int = 0) -> LogColumns:
        """:meth:`log_rows` as columns (what opening a session reads)."""
        ...

    def branch_links(self, session: SessionRecord, *, after: int = 0) -> dict[int, int]:
        """``{seq: linked seq}`` of the messages after ``after`` that name what they continue."""
        ...

    def tool_call(
        self, session: SessionRecord, call_id: str, before: int | None
    ) -> Message | None:
        """The assistant message with the latest call ``call_id`` (made before ``before``)."""
        ...

    def output_refs(self, session: SessionRecord, first: int, last: int) -> dict[int, str]:
        """The SHA-256 of every tool output with ``first <= seq <= last`` kept outside its row."""
        ...

    def views(self, session: SessionRecord, first: int, last: int) -> dict[int, str]:
        """The artifact id of every tool result with ``first <= seq <= last`` that has one."""
        ...

    def saved_views(self, session: SessionRecord, first: int,
                    last: int) -> dict[int, tuple[str, int]]:
        """:meth:`views` with the tokens each view was saved with: ``{seq: (id, tokens)}``."""
        ...

    def save_views(self, session: SessionRecord, views: Sequence[tuple[int, str, int]]) -> None:
        """Save ``(seq, artifact, tokens as shown)`` views of tool results."""
        ...


class ContextStore(Protocol):
    """A session's page states, events and keyed values, versioned for compare-and-swap."""

    def head(self, session: SessionRecord) -> tuple[int, int]:
        """``(version, last seq)``: what tells a cached snapshot whether it is current."""
        ...

    def heads(self, session: SessionRecord) -> SessionHeads | None:
        """:meth:`head`, the log's epoch and the working state's newest event, in one read.

        None when the session was deleted (its log's ``log_head`` raises). Makes the
        working state's tables when they are not made yet.
        """
        ...

    def load(self, session: SessionRecord) -> ContextState:
        """The state a build starts from."""
        ...

    def commit(self, session: SessionRecord, version: int, changes: ContextChanges) -> bool:
        """Apply ``changes`` if the version is still ``version`` (then it grows by one).

        Returns False, changing nothing, when another writer committed first.
        """
        ...

    def put(self, session: SessionRecord, key: str, value: Any) -> None:
        """Save a keyed value that only caches what is derived (no version check or bump)."""
        ...

    def get(self, session: SessionRecord, key: str) -> Any:
        """One keyed value (None when none is saved); :data:`LOG_INDEX_KEY` is read so only."""
        ...

    def page(self, session: SessionRecord, page: int) -> PageRow | None:
        """The saved row of one page (an evicted one included), or None."""
        ...

    def page_rows(self, session: SessionRecord, *, state: str) -> list[PageRow]:
        """The saved rows of every page in ``state``."""
        ...

    def events(self, session: SessionRecord, *, limit: int = 1000) -> list[ContextEvent]:
        """The newest events, oldest first."""
        ...
