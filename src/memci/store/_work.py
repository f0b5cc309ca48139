"""What the store keeps of a session's working state: its records, and its audit log.

The working state (pins, plan, notebook, fastmemo; see :mod:`memci.workspace`) is kept as
plain JSON values under keys: an *item* is ``(kind, item_id)`` of a session (kind
``pin``, ``plan``, ``note`` or ``memo``; the id never reused), a *meta* value is a name
of a session (``limits``, ``round``, ``next_pin`` …). The audit log is a list of
:class:`WorkEvent` per session, each with the JSON value of every key it touched before
and after.

Invariants every backend keeps:

- a value read back equals the value written (JSON: objects, arrays, text, numbers,
  booleans, null); writing None removes the key;
- :meth:`WorkStore.items` lists a kind's items by id;
- event ids grow: an event added later has a larger id (in the whole store);
- every method is one transaction of its own, or joins the store's open ``atomic()``
  block, so the logic layer makes "change the keys and log the event" one transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from memci._dataclasses import dataclass

__all__ = ["WorkEvent", "WorkStore"]


@dataclass(frozen=True, slots=True)
class WorkEvent:
    """One change of the working state, as the audit log keeps it.

    ``before`` and ``after`` map each key the change touched (``pin:3``, ``note:7``,
    ``meta:limits`` …) to its JSON value before and after (None: absent). ``reverts``
    is the event a rollback undid.
    """

    id: int
    session_id: int
    at: datetime
    actor: str
    action: str
    target: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    reverts: int | None


class WorkStore(Protocol):
    """Working-state items, per-session values and the audit log, by session id."""

    def has_session(self, session_id: int) -> bool:
        """Whether the session exists (its working state can be written)."""
        ...

    def hold(self, session_id: int) -> None:
        """Lock the session's working state until the transaction ends (call it first).

        Another process's writer of it waits, so what a writer read stays true until it
        commits.
        """
        ...

    def item(self, session_id: int, kind: str, item_id: int) -> Any:
        """The JSON value of one item, or None."""
        ...

    def items(self, session_id: int, kind: str) -> list[Any]:
        """Every item of ``kind``, by id."""
        ...

    def top_item_id(self, session_id: int, kind: str) -> int:
        """The largest id of an item of ``kind`` stored now (0 when none is)."""
        ...

    def put_item(self, session_id: int, kind: str, item_id: int, value: Any) -> None:
        """Store an item's JSON value (None removes it)."""
        ...

    def every_item(self, session_id: int) -> dict[str, dict[int, Any]]:
        """Every item of the session by kind, each kind by id, in id order (one read)."""
        ...

    def every_value(
        self, session_id: int
    ) -> tuple[dict[str, dict[int, Any]], dict[str, Any]]:
        """:meth:`every_item`, and every per-session value by name, in one read."""
        ...

    def put_items(self, session_id: int, values: Mapping[tuple[str, int], Any]) -> None:
        """Store several items' values by ``(kind, id)`` (None removes one), in few statements."""
        ...

    def meta(self, session_id: int, name: str) -> Any:
        """The JSON value of a per-session value, or None."""
        ...

    def put_meta(self, session_id: int, name: str, value: Any) -> None:
        """Store a per-session value (None removes it)."""
        ...

    def add_event(
        self, session_id: int, *, at: datetime, actor: str, action: str, target: str,
        before: Mapping[str, Any], after: Mapping[str, Any], reverts: int | None = None,
    ) -> WorkEvent:
        """Append an event to the session's audit log; return it with its id."""
        ...

    def add_events(self, events: Sequence[WorkEvent]) -> list[WorkEvent]:
        """Append events in order (their ``id`` ignored); return them with their ids.

        One statement for them all: the events of a change made of several steps.
        """
        ...

    def events(self, session_id: int, *, after: int = 0) -> list[WorkEvent]:
        """The session's events with id > ``after``, oldest first."""
        ...

    def event(self, session_id: int, event_id: int) -> WorkEvent | None:
        """One event of the session, or None."""
        ...

    def latest_event(self, session_id: int) -> int:
        """The id of the session's newest event (0 when none): grows with every change."""
        ...
