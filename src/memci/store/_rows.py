"""Reading rows back as records, the same way on every SQL backend.

The SQLite and PostgreSQL stores keep the same columns for messages, sessions, jobs, API
keys, artifacts and memory items; each table's column list and its decoder live here once.

Every stored message row can be read (:func:`message_from_row`), also one an older memci
wrote before it checked every field: a ``tokens`` that is not a whole number is read as an
estimate from the size of its parts, a ``created_at`` outside what can be converted to UTC
as the nearest instant that can, an unreadable one as None, metadata that is not a JSON
object as text under ``"unreadable"``. A tool output kept whole in an artifact file has
only its head in the row (:data:`ROW_HEAD_CHARS`, :func:`row_head`).

A row no memci wrote — a value that cannot be decoded (JSON that is not, a blob or a
number where text belongs, a time that is none) in a column memci needs — is damage:
every decoder here (and :func:`stored_json`, :func:`stored_parts` for the other read
paths) raises :class:`~memci.errors.StoreCorruptError` naming what is damaged and what to
do, never a ``ValueError``, a ``TypeError`` or a caller's-mistake error.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from memci._dataclasses import replace
from memci.errors import (
    InvalidMessageError,
    OrphanToolResultError,
    OwnerConflictError,
    StoreCorruptError,
)
from memci.messages import NO_METADATA, ROLES, Message, loads_parts
from memci.store._artifacts import Artifact
from memci.store._items import MemoryItem
from memci.store._records import SessionRecord

if TYPE_CHECKING:
    from memci.store._erase import Erasure
    from memci.store._jobs import Job
    from memci.store._keys import KeyRecord

__all__ = [
    "ARTIFACT_SELECT",
    "ERASURE_COLUMNS",
    "ITEM_COLUMNS",
    "JOB_COLUMNS",
    "KEY_SELECT",
    "ROW_HEAD_CHARS",
    "artifact_from_row",
    "check_owner",
    "check_roles",
    "damaged",
    "erasure_from_row",
    "item_from_row",
    "job_from_row",
    "key_from_row",
    "message_from_row",
    "orphan_result",
    "row_head",
    "session_from_row",
    "stored_instant",
    "stored_json",
    "stored_parts",
    "summary_json",
]

ROW_HEAD_CHARS = 20_000
"""Characters of a tool output kept in its message row when the whole is in a file.

As many as search indexes of one message, so indexes rebuilt from rows see the same text.
"""

P = ParamSpec("P")
R = TypeVar("R")

# What decoding a damaged value raises (InvalidMessageError: stored parts that are not).
_DAMAGE = (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
           RecursionError, InvalidMessageError)


def _damaged(what: str, exc: BaseException) -> StoreCorruptError:
    return StoreCorruptError(
        f"a stored {what} is damaged: {type(exc).__name__}: {exc}. memci did not write it "
        "so; restore the store from a backup, or repair or delete that row")


def damaged(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A row decoder that raises :class:`StoreCorruptError` for a damaged ``what``."""
    def wrap(decode: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(decode)
        def decoded(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return decode(*args, **kwargs)
            except _DAMAGE as exc:
                raise _damaged(what, exc) from exc
        return decoded
    return wrap


def stored_json(text: object, what: str) -> Any:
    """The JSON value of the stored text ``text`` (of ``what``); damage raises."""
    try:
        if not isinstance(text, str):
            raise TypeError(f"{type(text).__name__} where JSON text belongs")
        return json.loads(text)
    except _DAMAGE as exc:
        raise _damaged(what, exc) from exc


def stored_parts(text: object) -> tuple[Any, ...]:
    """A stored message's parts (its ``parts`` column); damage raises."""
    try:
        if not isinstance(text, str):
            raise TypeError(f"{type(text).__name__} where JSON text belongs")
        return loads_parts(text)
    except _DAMAGE as exc:
        raise _damaged("message's parts", exc) from exc


def row_head(message: Message) -> Message:
    """``message`` as its row keeps it when its tool output is in a file: the head only."""
    result = message.tool_result
    assert result is not None
    return replace(message, parts=(replace(result, content=result.content[:ROW_HEAD_CHARS]),))


def check_roles(roles: Iterable[object]) -> None:
    """Raise :class:`StoreCorruptError` when a stored role is none of :data:`ROLES`.

    For planning rows, read as columns (a message row checks its own).
    """
    unknown = set(roles).difference(ROLES)  # one pass, in C
    if unknown:
        role = min(unknown, key=repr)
        raise _damaged("message row", ValueError(
            f"role {role!r} is not one of {', '.join(ROLES)}"))


@damaged("message row")
def message_from_row(session: str, row: Sequence[Any]) -> Message:
    """A ``messages`` row (seq, role, parts, name, metadata, created_at, tokens) as a Message.

    Reads every row any memci version wrote (see the module's invariants).
    """
    seq, role, parts, name, metadata, created_at, tokens = row
    if role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    return Message(
        role=role, parts=stored_parts(parts), name=name if isinstance(name, str) else None,
        metadata=_stored_metadata(metadata), created_at=stored_instant(created_at),
        session=session, seq=int(seq), tokens=_stored_tokens(tokens, parts),
    )


def _stored_tokens(tokens: object, parts: object) -> int:
    if isinstance(tokens, int) and tokens >= 0:
        return tokens
    return len(parts) // 4 if isinstance(parts, str) else 0


def _stored_metadata(text: object) -> Mapping[str, Any]:
    if not text:
        return NO_METADATA
    try:
        value = json.loads(str(text))
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        return MappingProxyType({"unreadable": str(text)})
    return MappingProxyType(value)


def stored_instant(text: object) -> datetime | None:
    """A stored ISO 8601 instant in UTC (None when it cannot be read)."""
    try:
        stamp = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    if stamp.tzinfo is None:
        return stamp.replace(tzinfo=UTC)
    try:
        stamp.astimezone(UTC)
    except OverflowError:
        # Older versions took instants just outside years 1-9999 in UTC: the nearest one.
        edge = datetime.min if stamp.year == 1 else datetime.max
        return edge.replace(tzinfo=UTC)
    return stamp


@damaged("session row")
def session_from_row(row: Sequence[Any]) -> SessionRecord:
    """A ``sessions`` row (id, tenant, name, user_id, settings, created_at)."""
    return SessionRecord(
        id=int(row[0]), tenant=str(row[1]), name=str(row[2]), user=row[3],
        settings=MappingProxyType(json.loads(row[4])),
        created_at=datetime.fromisoformat(row[5]),
    )


ERASURE_COLUMNS = ("id, at, actor, action, tenant, user_sha256, sessions, counts,"
                   " scrubbed_at")


def erasure_from_row(row: Sequence[Any]) -> Erasure:
    """A ``memci_erasures`` row (:data:`ERASURE_COLUMNS`) as an :class:`Erasure`."""
    from memci.store._erase import Erasure  # loaded by its reader already: a lookup

    return Erasure(int(row[0]), datetime.fromisoformat(row[1]), str(row[2]), str(row[3]),
                   str(row[4]), row[5], tuple(int(s) for s in json.loads(row[6])),
                   MappingProxyType({str(k): int(v) for k, v in json.loads(row[7]).items()}),
                   datetime.fromisoformat(row[8]) if row[8] else None)


def check_owner(name: str, owner: str | None, user: str | None) -> None:
    """Refuse to make ``user`` the owner of a session ``owner`` holds (OwnerConflictError).

    A session's user is set once and never changed: a session written as another user
    would become that user's, and erasing its owner would no longer reach it. No user
    (None) asks for the session as it is; a session without one takes the first given.
    The message never names the owner (the caller may be another user).
    """
    if owner is not None and user is not None and user != owner:
        raise OwnerConflictError(
            f"session {name!r} belongs to another user and cannot be used as user "
            f"{user!r} (a session's user is set once, when it is made): use a session of "
            "that user's own (another name), or give no user")


def orphan_result(call_id: str, session_name: str) -> OrphanToolResultError:
    """The error for a tool result that answers no open tool call of its session."""
    return OrphanToolResultError(
        f"tool result for call id {call_id!r} answers no open tool call in session "
        f"{session_name!r}: add the assistant message with that tool call first (each call "
        "is answered once)")


JOB_COLUMNS = ("id, kind, key, payload, state, attempts, max_attempts, last_error, result,"
               " lease_owner, lease_expires, run_after, created_at, updated_at")


@damaged("job row")
def job_from_row(row: Sequence[Any]) -> Job:
    """A ``memci_jobs`` row of :data:`JOB_COLUMNS`."""
    from memci.store._jobs import Job  # loaded by its reader already: a lookup

    return Job(
        id=int(row[0]), kind=str(row[1]), key=str(row[2]),
        payload=MappingProxyType(json.loads(row[3])), state=row[4], attempts=int(row[5]),
        max_attempts=int(row[6]), last_error=row[7],
        result=json.loads(row[8]) if row[8] is not None else None,
        lease_owner=row[9], lease_expires=row[10], run_after=float(row[11]),
        created_at=datetime.fromisoformat(row[12]), updated_at=datetime.fromisoformat(row[13]),
    )


KEY_SELECT = ("SELECT key_id, tenant, key_hash, label, created_at, revoked_at, policy"
              " FROM server_api_keys")


@damaged("API key row")
def key_from_row(row: Sequence[Any]) -> KeyRecord:
    """A ``server_api_keys`` row of :data:`KEY_SELECT`."""
    from memci.store._keys import KeyRecord  # loaded by its reader already: a lookup

    return KeyRecord(key_id=str(row[0]), tenant=str(row[1]), key_hash=str(row[2]),
                     label=row[3], created_at=str(row[4]), revoked_at=row[5], policy=row[6])


ARTIFACT_SELECT = (
    "SELECT b.id, b.bytes, b.chars, b.lines, a.exit_code, a.summary, a.tool_name, a.call_id,"
    " a.arguments, a.owner, a.session_id, a.created_at, b.content IS NULL, b.sha256,"
    " a.is_error, a.seq FROM workspace_artifacts a JOIN workspace_blobs b"
    " ON b.id = a.artifact_id"
)


@damaged("artifact row")
def artifact_from_row(row: Sequence[Any]) -> Artifact:
    """An artifact (a ``workspace_artifacts`` link and its blob) of :data:`ARTIFACT_SELECT`."""
    return Artifact(
        id=str(row[0]), size=int(row[1]), chars=int(row[2]), lines=int(row[3]),
        exit_code=None if row[4] is None else int(row[4]),
        summary=tuple(json.loads(row[5])), tool_name=row[6], call_id=row[7],
        arguments=row[8], owner=str(row[9]), session_id=int(row[10]),
        created_at=datetime.fromisoformat(row[11]), stored="file" if row[12] else "inline",
        sha256=str(row[13]), is_error=bool(row[14]), seq=int(row[15]),
    )


def summary_json(lines: Sequence[str]) -> str:
    """An artifact's summary lines as stored."""
    return json.dumps(list(lines), ensure_ascii=False)


ITEM_COLUMNS = ("id, scope, tenant, user_id, session_id, kind, subject, text, summary, source, "
                "page, seen, valid_from, valid_to, superseded_by, created, updated")


def _instant(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value is not None else None


@damaged("memory item row")
def item_from_row(row: Sequence[Any]) -> MemoryItem:
    """A ``memory_items`` row of :data:`ITEM_COLUMNS`."""
    if not isinstance(row[7], str):
        raise TypeError(f"{type(row[7]).__name__} where the item's text belongs")
    return MemoryItem(
        id=int(row[0]), scope=row[1], tenant=row[2], user=row[3],
        session_id=int(row[4]) if row[4] is not None else None, kind=row[5], subject=row[6],
        text=row[7], summary=row[8], source=row[9],
        page=int(row[10]) if row[10] is not None else None, seen=int(row[11]),
        valid_from=datetime.fromtimestamp(row[12], UTC), valid_to=_instant(row[13]),
        superseded_by=int(row[14]) if row[14] is not None else None,
        created=datetime.fromtimestamp(row[15], UTC),
        updated=datetime.fromtimestamp(row[16], UTC),
    )
