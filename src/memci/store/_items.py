"""What the store keeps of long-term memory items, and who may see each one.

An item is owned by a :class:`Scope` (a tenant, a user of it, or a session) and has a
kind, text, its normalized form, optional subject, summary, source and page, a validity
interval and, once replaced, the item that superseded it. Keyword text (of the item's
analyzer) covers its text, summary and subject.

Visibility (:class:`ItemFilter`): a session scope sees the session's items, its user's
and the tenant's; a user scope sees every item of the user (all their sessions) and the
tenant's; a tenant scope sees all of the tenant. Nothing crosses tenants or users.

Invariants every backend keeps:

- item ids grow; every change gives the item a new revision (:meth:`ItemStore.version`
  grows with each);
- nothing is deleted: an ended or superseded item keeps its row;
- every write is one transaction of its own or joins the store's open ``atomic()``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

from memci._dataclasses import dataclass
from memci._records import NamedTuple
from memci.errors import InvalidInputError
from memci.store._records import SessionRecord

if TYPE_CHECKING:
    from memci.text import Analyzer, MatchQuery

__all__ = ["LEVELS", "ItemFilter", "ItemStore", "Level", "MemoryItem", "NewItem", "Scope"]

Level = Literal["tenant", "user", "session"]
LEVELS: tuple[Level, ...] = ("tenant", "user", "session")


@dataclass(frozen=True, slots=True)
class Scope:
    """Who an item belongs to, or what a read may see: a tenant, a user, or a session.

    Build one with :meth:`tenant_scope`, :meth:`user_scope` or :meth:`of` (a session's).
    """

    level: Level
    tenant: str
    user: str | None = None
    session_id: int | None = None
    session: str | None = None

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise InvalidInputError(f"scope level must be one of {', '.join(LEVELS)}, "
                                    f"not {self.level!r}")
        if self.level == "user" and not self.user:
            raise InvalidInputError("a user scope needs a user")
        if self.level == "session" and self.session_id is None:
            raise InvalidInputError("a session scope needs a session")

    @classmethod
    def tenant_scope(cls, tenant: str = "default") -> Scope:
        """Everything of ``tenant``."""
        return cls("tenant", tenant)

    @classmethod
    def user_scope(cls, user: str, tenant: str = "default") -> Scope:
        """One user of ``tenant``, across their sessions."""
        return cls("user", tenant, user)

    @classmethod
    def of(cls, session: SessionRecord, level: Level = "session") -> Scope:
        """Return ``session``'s scope at ``level`` (user level without a user: the session)."""
        if level == "tenant":
            return cls.tenant_scope(session.tenant)
        if level == "user" and session.user:
            return cls("user", session.tenant, session.user)
        return cls("session", session.tenant, session.user, session.id, session.name)

    @property
    def owner_user(self) -> str | None:
        """The user an item owned by this scope is stored with (None for a tenant's)."""
        return self.user if self.level != "tenant" else None

    @property
    def owner_session(self) -> int | None:
        """The session an item owned by this scope is stored with (a session's only)."""
        return self.session_id if self.level == "session" else None


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """One long-term item; ``valid_to``/``superseded_by`` are set once it is replaced."""

    id: int
    scope: Level
    tenant: str
    user: str | None
    session_id: int | None
    kind: str
    subject: str | None
    text: str
    summary: str | None
    source: str | None
    page: int | None
    seen: int
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: int | None
    created: datetime
    updated: datetime

    @property
    def current(self) -> bool:
        """Whether no newer item supersedes this one."""
        return self.superseded_by is None and self.valid_to is None


class NewItem(NamedTuple):
    """An item to store, owned by ``scope``; times are Unix seconds."""

    scope: Scope
    kind: str
    subject: str | None
    text: str
    norm: str
    summary: str | None
    source: str | None
    page: int | None
    valid_from: float
    created: float


class ItemFilter(NamedTuple):
    """Which items a read returns: those ``scope`` may see.

    Of ``kinds`` (None: all) but not ``exclude_kinds``; ``current`` keeps only items
    neither ended nor superseded.
    """

    scope: Scope
    kinds: Collection[str] | None = None
    exclude_kinds: Collection[str] = ()
    current: bool = True


class ItemStore(Protocol):
    """Memory items and their keyword text (of one analyzer)."""

    analyzer: Analyzer

    def hold(self, owner: Scope, kind: str) -> None:
        """Keep other writers of ``owner``'s items of ``kind`` out until the transaction ends.

        A write finds the items it merges or supersedes, then writes: call it first, so
        what it found stays true (two servers never add one fact twice).
        """
        ...

    def find(self, owner: Scope, kind: str, norm: str) -> int | None:
        """The newest item not superseded owned by exactly ``owner`` with this text."""
        ...

    def merge(
        self, item_id: int, *, now: float, summary: str | None, source: str | None,
        subject: str | None,
    ) -> None:
        """Count the item seen again.

        A summary or source given replaces the old one; a subject fills a missing one.
        """
        ...

    def merge_many(self, seen: Mapping[int, NewItem], *, now: float) -> None:
        """:meth:`merge` of each item ``id`` seen again as ``item``, at once.

        ``item`` gives the summary, source and subject :meth:`merge` takes.
        """
        ...

    def add(self, item: NewItem) -> int:
        """Store a new item; return its id."""
        ...

    def supersede(
        self, owner: Scope, kind: str, subject: str, *, by: int, since: float, now: float
    ) -> None:
        """End, as of ``since``, the current items of ``owner`` about ``subject`` but ``by``."""
        ...

    def find_many(self, owner: Scope, kind: str, norms: Collection[str]) -> dict[str, int]:
        """:meth:`find` for each of ``norms`` at once: norm -> the newest such item's id."""
        ...

    def add_many(self, items: Sequence[NewItem]) -> list[int]:
        """Store new items (as :meth:`add` one after another); their ids, in order."""
        ...

    def supersede_many(
        self, owner: Scope, kind: str, by_subject: Mapping[str, int], *, since: float,
        now: float,
    ) -> None:
        """:meth:`supersede` for each ``subject -> by`` at once."""
        ...

    def end(self, item_id: int, now: float) -> None:
        """End the item's validity at ``now`` (a no-op when it has ended)."""
        ...

    def get(self, item_id: int) -> MemoryItem | None:
        """The item, or None."""
        ...

    def get_many(self, item_ids: Sequence[int]) -> list[MemoryItem]:
        """The items still stored, in the order asked."""
        ...

    def visible(self, where: ItemFilter, *, limit: int | None = None) -> list[MemoryItem]:
        """Items passing ``where``, newest first (by the time they became true)."""
        ...

    def history(self, item_id: int) -> list[MemoryItem]:
        """Every item of the same owner, kind and subject (or the item alone), oldest first."""
        ...

    def version(self) -> int:
        """The newest revision: grows with every change to items."""
        ...

    def keyword(self, plan: MatchQuery, where: ItemFilter, depth: int) -> list[int]:
        """Up to ``depth`` ids passing ``where`` that match ``plan``, best first."""
        ...

    def ids(self, where: ItemFilter) -> list[int]:
        """Ids of every item passing ``where``."""
        ...

    def valid_within(self, where: ItemFilter, start: float, end: float) -> set[int]:
        """Ids passing ``where`` that became true in ``[start, end)`` (Unix seconds)."""
        ...

    def session_names(self, session_ids: Collection[int]) -> dict[int, str]:
        """Names of the sessions (their ids as text when gone)."""
        ...
