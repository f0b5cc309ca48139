"""Reading messages in: OpenAI and Anthropic dicts, SDK objects and memci values.

One tolerant reader understands the content blocks of both providers, so a caller can
hand memci whatever its agent has: an OpenAI Chat Completions message, an Anthropic
Messages message (one Anthropic user message with ``tool_result`` blocks becomes one memci
tool message per result, then the user's text), a response object of the official SDKs
(duck-typed through ``model_dump``; memci does not import them), a :class:`Message`, or
OpenAI Responses items (read by :mod:`memci.messages._responses`; in a batch read by
:func:`coerce_many`, the items of one assistant turn make one assistant message).

Everything read is checked before anything is stored, in every form (a :class:`Message`
built by hand included, whose every field is type-checked): that it holds something (text,
an image, a tool call or result, a reasoning item: an empty message is refused, naming
what to add), roles, parts, tool arguments
(JSON objects), text (valid Unicode, also inside JSON), metadata (a JSON object),
nesting (at most :data:`~memci._jsonvalues.MAX_DEPTH` levels in metadata and tool
arguments), size (text, arguments and metadata together within ``max_bytes``),
``created_at`` (ISO 8601, a datetime or epoch seconds, and an instant within years
1-9999 in UTC) and ``tokens``. A problem raises a specific
:class:`~memci.errors.InvalidMessageError` subclass that says what to fix; a reader that
fails in an unforeseen way on a caller's object (an SDK object whose ``model_dump``
raises) raises :class:`~memci.errors.InvalidMessageError` too. Nothing here does I/O.

Reading normalizes a little, always the same way: ``developer`` is read as ``system``;
empty text blocks are left out; an OpenAI ``refusal`` is read as text; blocks of an
Anthropic assistant message that memci does not model (thinking, server tool use and
its results) are kept verbatim in ``metadata["anthropic_blocks"]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from typing import Any, cast

from memci import _jsonvalues
from memci._dataclasses import replace
from memci.errors import (
    InvalidMessageError,
    InvalidTextError,
    InvalidTimestampError,
    InvalidToolArgumentsError,
    MemciError,
    MessageTooLargeError,
    UnknownRoleError,
)
from memci.messages._model import (
    NO_METADATA,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from memci.messages._responses import (
    TurnItem,
    Turns,
    item_kind,
    read_output,
    read_turn_item,
    response_output,
    with_item_id,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "coerce",
    "coerce_many",
    "from_anthropic",
    "from_openai",
    "parse_timestamp",
    "validate",
]

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
# A caller's own token count is kept when it is a whole number in this range.
MAX_TOKENS = 2**32

_ROLE_ALIASES: Mapping[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "tool": "tool",
}
_ROLES: frozenset[str] = frozenset(_ROLE_ALIASES.values())

# Blocks an Anthropic assistant message may carry that memci keeps aside in metadata:
# extended thinking, and the server-side tools Anthropic runs itself (their use and
# their results come back in the assistant's own message).
_ANTHROPIC_ASIDE_KEY = "anthropic_blocks"


# What to add to a message that holds nothing (it would send nothing: Anthropic drops it,
# OpenAI refuses it), by role.
_EMPTY = {
    "user": "add 'content' (text, or text and image blocks)",
    "assistant": "add 'content' (text) or 'tool_calls'",
    "system": "add 'content' (text)",
    "tool": "add 'content' (the tool's output; an empty string is an empty output)",
}


def coerce(obj: object, *, max_bytes: int = DEFAULT_MAX_BYTES) -> list[Message]:
    """Read one message in any accepted form; return the memci messages it holds.

    Most inputs give one message; an Anthropic user message that carries tool results
    gives one tool message per result followed by the user's own text, if any. A list
    of OpenAI Responses items, or a Responses ``Response``, gives the messages of all its
    items, read as :func:`coerce_many` reads them.
    """
    return coerce_many([obj], max_bytes=max_bytes)


def coerce_many(items: Iterable[object], *, max_bytes: int = DEFAULT_MAX_BYTES
                ) -> list[Message]:
    """Read a batch of messages in any accepted form, in order; check them all.

    Each item is read as :func:`coerce` reads it, except that OpenAI Responses items
    that belong to the assistant's turn (``reasoning``, ``function_call``, an assistant
    ``message`` item and the model's built-in tool calls) continue the assistant message
    right before them in the batch: a Responses output is one memci assistant message,
    with its calls together so that their results pair with them. An item that is a list
    (``response.output``) or a ``Response`` is read as its items.
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        raise InvalidMessageError(
            f"a batch of messages must be a list, not {type(items).__name__}")
    try:
        turns = Turns()
        for item in items:
            _read_into(turns, item, nested=False)
        messages = turns.messages
        for message in messages:
            validate(message, max_bytes=max_bytes)
    except MemciError:
        raise
    except (LookupError, TypeError, ValueError, AttributeError, RecursionError,
            OverflowError) as exc:
        # The caller's object misbehaved where no check foresaw it (a Mapping whose
        # methods raise, say): still the caller's input, still a typed error.
        raise InvalidMessageError(
            f"the message cannot be read ({type(exc).__name__}: {str(exc)[:200]}); pass an "
            "OpenAI or Anthropic message dict or a memci.Message"
        ) from exc
    return messages


def from_openai(data: Mapping[str, Any], *, max_bytes: int = DEFAULT_MAX_BYTES) -> Message:
    """Read one OpenAI Chat Completions message dict."""
    messages = coerce(data, max_bytes=max_bytes)
    if len(messages) != 1:
        raise InvalidMessageError(
            "an OpenAI message holds exactly one message; got content blocks of "
            "another format (use coerce() for Anthropic messages)"
        )
    return messages[0]


def from_anthropic(
    data: Mapping[str, Any], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> list[Message]:
    """Read one Anthropic Messages message dict (may give several memci messages)."""
    return coerce(data, max_bytes=max_bytes)


def validate(message: Message, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Check a message's every field, its text and its size; raise what is wrong with it.

    The size is the UTF-8 bytes of its text, image URLs, tool arguments and results, and
    its metadata as JSON. The checks run in a fixed order (role, parts, where tool
    results may be, the other fields, the size), so a message with several problems
    always names the same one.
    """
    _check_role_and_parts(message)
    size = _check_parts(message)
    _check_not_empty(message)
    _check_tool_results(message)
    size += _check_fields(message)
    if size > max_bytes:
        raise MessageTooLargeError(
            f"message content and metadata are {size:,} bytes, over the limit of "
            f"{max_bytes:,}; store large tool output as an artifact or raise "
            "max_message_bytes"
        )


def _check_role_and_parts(message: Message) -> None:
    if not isinstance(message.role, str) or message.role not in _ROLES:
        raise UnknownRoleError(
            f"unknown role {message.role!r}: use one of system, user, assistant, tool"
        )
    if not isinstance(message.parts, tuple):
        raise InvalidMessageError(
            f"Message.parts must be a tuple of parts (TextPart, ImagePart, ToolCallPart, "
            f"ToolResultPart, ReasoningPart), got {type(message.parts).__name__}"
        )


def _check_parts(message: Message) -> int:
    """Check each part, in order; return their size in UTF-8 bytes."""
    call_ids: set[str] = set()
    return sum(_check_part(part, message.role, call_ids) for part in message.parts)


def _check_part(part: object, role: str, call_ids: set[str]) -> int:
    """Check one part of a ``role`` message; return its size in UTF-8 bytes."""
    if isinstance(part, TextPart):
        size = _check_text(part.text, "text")
        _check_item_id(part.item_id, role)
        return size
    if isinstance(part, ImagePart):
        return _check_image(part, role)
    if isinstance(part, ToolCallPart):
        return _check_tool_call(part, role, call_ids)
    if isinstance(part, ReasoningPart):
        return _check_reasoning(part, role)
    if isinstance(part, ToolResultPart):
        return _check_tool_result(part)
    raise InvalidMessageError(f"unknown message part {_brief(part)}")


def _check_image(part: ImagePart, role: str) -> int:
    """Check an image part; return its size (its URL's) in UTF-8 bytes."""
    if role != "user":
        raise InvalidMessageError(
            f"a {role} message cannot carry an image; only user messages can"
        )
    size = _check_text(part.url, "image url")
    for what, value in (("media_type", part.media_type), ("detail", part.detail)):
        if value is not None:
            _check_text(value, f"image {what}")
    return size


def _check_tool_call(part: ToolCallPart, role: str, call_ids: set[str]) -> int:
    """Check a tool call (its id unique among ``call_ids``); return its arguments' size."""
    if role != "assistant":
        raise InvalidMessageError(
            f"a {role} message cannot make tool calls; only assistant can"
        )
    _check_text(part.id, "tool call id")
    _check_text(part.name, "tool name")
    if not part.id or not part.name:
        raise InvalidMessageError("a tool call needs a non-empty id and name")
    if part.id in call_ids:
        raise InvalidMessageError(
            f"tool call id {part.id!r} appears twice in one message; ids must be unique"
        )
    call_ids.add(part.id)
    size = _check_text(part.arguments, "tool arguments")
    _check_arguments(part.arguments, part.name)
    _check_item_id(part.item_id, role)
    return size


def _check_tool_result(part: ToolResultPart) -> int:
    """Check a tool result; return its content's size in UTF-8 bytes."""
    _check_text(part.call_id, "tool call id")
    if not part.call_id:
        raise InvalidMessageError("a tool result needs a non-empty call id")
    size = _check_text(part.content, "tool result")
    _check_flag(part.is_error, "a tool result's is_error")
    return size


def _check_not_empty(message: Message) -> None:
    """A message holds something: text, an image, a tool call or result, reasoning."""
    if not any(not isinstance(p, TextPart) or p.text for p in message.parts):
        raise InvalidMessageError(f"the {message.role} message is empty: {_EMPTY[message.role]}")


def _check_tool_results(message: Message) -> None:
    """A tool message is one tool result; no other message carries one."""
    if message.role == "tool":
        if len(message.parts) != 1 or not isinstance(message.parts[0], ToolResultPart):
            raise InvalidMessageError(
                "a tool message carries exactly one tool result (tool_call_id and content)"
            )
    elif any(isinstance(p, ToolResultPart) for p in message.parts):
        raise InvalidMessageError(
            f"a {message.role} message cannot carry a tool result; use a tool message"
        )


def _check_fields(message: Message) -> int:
    """Check name, metadata, created_at and tokens; return the metadata's size as JSON."""
    if message.name is not None:
        _check_text(message.name, "name")
    if not isinstance(message.metadata, Mapping):
        raise InvalidMessageError(
            f"'metadata' must be a JSON object (a dict), got {type(message.metadata).__name__}"
        )
    size = len(_metadata_text(message.metadata).encode("utf-8")) if message.metadata else 0
    if message.created_at is not None:
        if not isinstance(message.created_at, datetime):
            raise InvalidTimestampError(
                f"created_at must be a datetime, got {type(message.created_at).__name__}")
        _check_instant(message.created_at, message.created_at)
    _check_tokens(message.tokens)
    return size


def parse_timestamp(value: object) -> datetime:
    """Read an ISO 8601 date-time (or a datetime, or epoch seconds); naive means UTC.

    The result keeps its UTC offset, as a fixed offset (what the store gives back), and is
    an instant between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z: one that can
    always be stored, read back, converted to UTC and compared. Outside that range, or
    with an offset that is not a whole number of seconds under a day, it is refused.
    """
    if isinstance(value, datetime):
        stamp = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        try:
            stamp = datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise InvalidTimestampError(f"created_at {value!r} is out of range") from exc
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            stamp = datetime.fromisoformat(text)
        except ValueError as exc:
            raise InvalidTimestampError(
                f"created_at {value!r} is not an ISO 8601 date-time "
                "(for example 2026-11-21T09:30:00Z)"
            ) from exc
    else:
        raise InvalidTimestampError(
            f"created_at must be an ISO 8601 string, got {type(value).__name__}"
        )
    return _check_instant(stamp, value)


def _check_instant(stamp: datetime, value: object) -> datetime:
    """``stamp`` with a fixed offset (UTC when naive), if its instant is in range."""
    try:
        offset = stamp.utcoffset()
        if offset is None:
            zone: timezone = UTC
        elif offset % timedelta(seconds=1):
            raise ValueError("the UTC offset has a fraction of a second")
        else:
            zone = UTC if not offset else timezone(offset)
        fixed = datetime(stamp.year, stamp.month, stamp.day, stamp.hour, stamp.minute,
                         stamp.second, stamp.microsecond, tzinfo=zone)
        fixed.astimezone(UTC)  # in range as an instant, not only on its own clock
    except (OverflowError, ValueError, TypeError, AttributeError) as exc:
        raise InvalidTimestampError(
            f"created_at {_brief(value)} is out of range: it must be an instant between "
            "0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z (in UTC)"
        ) from exc
    return fixed


def _check_item_id(item_id: object, role: str) -> None:
    """A Responses item id: absent, or a non-empty string on an assistant's part."""
    if item_id is None:
        return
    _check_text(item_id, "a Responses item id")
    if not item_id:
        raise InvalidMessageError("a Responses item id must be non-empty (or None)")
    if role != "assistant":
        raise InvalidMessageError(
            f"a {role} message cannot carry a Responses item id; only assistant parts can")


def _check_reasoning(part: ReasoningPart, role: str) -> int:
    """Check a reasoning part; return its size in UTF-8 bytes."""
    if role != "assistant":
        raise InvalidMessageError(
            f"a {role} message cannot carry a reasoning item; only assistant messages can")
    _check_text(part.id, "reasoning id")
    if not part.id:
        raise InvalidMessageError("a reasoning item needs a non-empty id (rs_...)")
    size = 0
    for what, texts in (("summary", part.summary), ("content", part.content)):
        if not isinstance(texts, tuple):
            raise InvalidMessageError(
                f"ReasoningPart.{what} must be a tuple of strings, got {_brief(texts)}")
        for text in texts:
            size += _check_text(text, f"reasoning {what}")
    if part.encrypted_content is not None:
        size += _check_text(part.encrypted_content, "reasoning encrypted_content")
    return size


def _check_tokens(tokens: object) -> None:
    if tokens is None:
        return
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not (
            0 <= tokens <= MAX_TOKENS):
        raise InvalidMessageError(
            f"Message.tokens must be None (memci counts them) or a whole number from 0 to "
            f"{MAX_TOKENS:,}, got {_brief(tokens)}"
        )


def _check_flag(value: object, what: str) -> None:
    if not isinstance(value, bool):
        raise InvalidMessageError(f"{what} must be true or false, got {_brief(value)}")


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _normalized(message: Message) -> Message:
    """A memci.Message built by hand, its fields checked and in their stored form.

    Store identity (session, seq) is dropped; ``parts`` given as a list become a tuple,
    ``metadata`` its JSON form, ``created_at`` a fixed-offset datetime (a string or
    epoch seconds are read as :func:`parse_timestamp` reads them).
    """
    parts: object = message.parts
    if isinstance(parts, list):
        parts = tuple(cast(list[Part], parts))
    if not isinstance(parts, tuple):
        raise InvalidMessageError(
            f"Message.parts must be a tuple of parts (TextPart, ImagePart, ToolCallPart, "
            f"ToolResultPart, ReasoningPart), got {type(parts).__name__}"
        )
    role: object = message.role
    if isinstance(role, str) and role in _ROLE_ALIASES:
        role = _ROLE_ALIASES[role]
    created = message.created_at
    return replace(
        message, role=cast(Role, role), parts=cast(tuple[Part, ...], parts),
        metadata=_read_metadata(message.metadata),
        created_at=parse_timestamp(created) if created is not None else None,
        session=None, seq=None,
    )


# -- reading dicts -----------------------------------------------------------------------


def _read_into(turns: Turns, item: object, *, nested: bool) -> None:
    """Read one item of a batch into ``turns``; a list or a Response as its items."""
    if isinstance(item, Message):
        turns.add([_normalized(item)])
        return
    if isinstance(item, list | tuple):
        if nested:
            raise InvalidMessageError(
                "a list of messages holds another list: pass the items of one list")
        if not item:
            raise InvalidMessageError("the list is empty: it holds no message to add")
        for inner in cast(list[object], item):
            _read_into(turns, inner, nested=True)
        return
    data = _as_mapping(item)
    output = response_output(data)
    if output is not None:
        for inner in output:
            _read_into(turns, inner, nested=True)
        return
    kind = item_kind(data)
    if kind is None:
        turns.add(_read(data))
    elif kind == "message":
        (message,) = _read(data)  # the assistant's: one message, no tool results
        turns.add_to_turn(TurnItem(with_item_id(message.parts, data)), message.metadata,
                          message.created_at)
    else:
        metadata = _read_metadata(data.get("metadata"))
        created = data.get("created_at")
        created_at = parse_timestamp(created) if created is not None else None
        if kind == "function_call_output":
            turns.add([Message("tool", (read_output(data),), None, metadata, created_at)])
            return
        read = read_turn_item(data, kind)
        if read.aside is not None:
            read = TurnItem(aside=_aside_item(read.aside, kind))
        turns.add_to_turn(read, metadata, created_at)


def _aside_item(data: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """A Responses item kept aside, as its JSON value (checked as metadata is)."""
    try:
        return cast(Mapping[str, Any], _jsonvalues.loads(_jsonvalues.dumps(dict(data))))
    except _jsonvalues.JSONTextError as exc:
        raise InvalidTextError(f"the {kind} item: {exc}") from exc
    except _jsonvalues.JSONValueError as exc:
        raise InvalidMessageError(f"the {kind} item: {exc}") from exc


def _as_mapping(obj: object) -> Mapping[str, Any]:
    if isinstance(obj, Mapping):
        return _plain_dict(cast(Mapping[str, Any], obj), type(obj).__name__)
    try:
        dump = getattr(obj, "model_dump", None)
    except Exception as exc:  # a property of the caller's object raised
        raise InvalidMessageError(
            f"cannot read {type(obj).__name__}.model_dump: {_failure(exc)}") from exc
    if callable(dump):
        try:
            data = dump()
        except Exception as exc:  # the caller's SDK object could not dump itself
            raise InvalidMessageError(
                f"{type(obj).__name__}.model_dump() failed ({_failure(exc)}); pass the "
                "message as a dict instead") from exc
        if isinstance(data, Mapping):
            data = _plain_dict(cast(Mapping[str, Any], data), type(obj).__name__)
            data = cast(Mapping[str, Any], data)
            choices = data.get("choices")
            if isinstance(choices, list) and "role" not in data:
                # A ChatCompletion response: its (first) choice's message.
                first = choices[0] if choices else None
                message = first.get("message") if isinstance(first, Mapping) else None
                if not isinstance(message, Mapping):
                    raise InvalidMessageError("the chat completion holds no choice message")
                return _plain_dict(cast(Mapping[str, Any], message), "choice message")
            return data
    raise InvalidMessageError(
        f"a message must be a dict (OpenAI or Anthropic format) or a memci.Message, "
        f"got {type(obj).__name__}"
    )


def _plain_dict(data: Mapping[str, Any], what: str) -> dict[str, Any]:
    """A plain dict copy, so that the reading below calls no method of the caller's type."""
    try:
        return dict(data)
    except Exception as exc:  # a Mapping whose iteration or lookup raises
        raise InvalidMessageError(
            f"cannot read the {what} as a dict ({_failure(exc)})") from exc


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def _read(data: Mapping[str, Any]) -> list[Message]:
    raw_role = data.get("role")
    if not isinstance(raw_role, str) or raw_role not in _ROLE_ALIASES:
        if raw_role is None:
            raise InvalidMessageError(
                "message has no 'role'; add one of system, user, assistant, tool"
            )
        raise UnknownRoleError(
            f"unknown role {raw_role!r}: use one of system, user, assistant, tool"
        )
    role = _ROLE_ALIASES[raw_role]
    name = data.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidMessageError("'name' must be a string")
    metadata = _read_metadata(data.get("metadata"))
    created = data.get("created_at")
    created_at = parse_timestamp(created) if created is not None else None

    if role == "tool":
        call_id = data.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidMessageError("a tool message needs a non-empty 'tool_call_id' string")
        content = _flatten_text(data.get("content"), "tool message content")
        part = ToolResultPart(call_id, content, _read_flag(data.get("is_error"), "is_error"))
        return [Message("tool", (part,), name, metadata, created_at)]

    if data.get("function_call") is not None:
        raise InvalidMessageError(
            "legacy 'function_call' messages are not supported; use 'tool_calls'"
        )
    parts, results, aside = _read_content(data.get("content"), role)
    refusal = data.get("refusal")
    if refusal is not None and not parts:
        # An OpenAI refusal: the model's answer is the refusal text.
        parts.append(TextPart(_as_text(refusal, "refusal")))
    tool_calls = data.get("tool_calls")
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise InvalidMessageError("'tool_calls' must be a list of tool calls")
        parts.extend(_read_openai_call(call) for call in tool_calls)
    if aside:
        metadata = _read_metadata({**metadata, _ANTHROPIC_ASIDE_KEY: aside})
    messages = [Message("tool", (r,), None, metadata, created_at) for r in results]
    if parts or not results:
        messages.append(Message(role, tuple(parts), name, metadata, created_at))
    return messages


def _read_flag(value: object, what: str) -> bool:
    """A provider's boolean; absent (None) is false."""
    if value is None:
        return False
    _check_flag(value, what)
    return bool(value)


def _read_metadata(value: object) -> Mapping[str, Any]:
    """Metadata in its stored form: a read-only copy of its JSON value."""
    if value is None:
        return NO_METADATA
    if not isinstance(value, Mapping):
        raise InvalidMessageError(
            f"'metadata' must be a JSON object (a dict), got {type(value).__name__}")
    text = _metadata_text(cast(Mapping[str, Any], value))
    return MappingProxyType(_jsonvalues.loads(text))


def _metadata_text(value: Mapping[str, Any]) -> str:
    try:
        return _jsonvalues.dumps(dict(value))
    except _jsonvalues.JSONTextError as exc:
        raise InvalidTextError(f"'metadata': {exc}") from exc
    except _jsonvalues.JSONValueError as exc:
        raise InvalidMessageError(f"'metadata': {exc}") from exc


def _read_content(
    content: object, role: Role
) -> tuple[list[Part], list[ToolResultPart], list[dict[str, Any]]]:
    """Content as parts, tool results, and assistant blocks kept aside (thinking)."""
    parts: list[Part] = []
    results: list[ToolResultPart] = []
    aside: list[dict[str, Any]] = []
    if content is None:
        return parts, results, aside
    if isinstance(content, str | bytes):
        _add_text(parts, content, "content")
        return parts, results, aside
    if not isinstance(content, list):
        raise InvalidMessageError(
            f"'content' must be a string or a list of content blocks, "
            f"got {type(content).__name__}"
        )
    for block in content:
        _read_block(block, role, parts, results, aside)
    return parts, results, aside


def _add_text(parts: list[Part], value: object, what: str) -> None:
    """Add ``value`` as a text part, unless it is empty."""
    text = _as_text(value, what)
    if text:
        parts.append(TextPart(text))


# Compared with ==, never hashed: a block's "type" is the caller's value, perhaps a list.
_TEXT_BLOCKS = ("text", "input_text", "output_text", "refusal")


def _read_block(block: object, role: Role, parts: list[Part],
                results: list[ToolResultPart], aside: list[dict[str, Any]]) -> None:
    """Read one content block into the parts, results or blocks kept aside."""
    if isinstance(block, str | bytes):
        _add_text(parts, block, "content")
        return
    if not isinstance(block, Mapping):
        raise InvalidMessageError("each content block must be a dict with a 'type'")
    block = cast(Mapping[str, Any], block)
    kind = block.get("type")
    if kind in _TEXT_BLOCKS:
        _add_text(parts, block.get("refusal" if kind == "refusal" else "text", ""),
                  f"{kind} block")
    elif kind == "image_url":
        parts.append(_read_openai_image(block))
    elif kind == "input_image":
        parts.append(_read_responses_image(block))
    elif kind == "image":
        parts.append(_read_anthropic_image(block))
    elif kind == "tool_use":
        parts.append(_read_tool_use(block, role))
    elif kind == "tool_result":
        results.append(_read_tool_result(block, role))
    elif role == "assistant" and isinstance(kind, str) and _is_aside(kind):
        aside.append(dict(block))
    else:
        raise InvalidMessageError(
            f"unsupported content block type {kind!r}: use text, image_url, image, "
            "tool_use or tool_result (OpenAI Responses: input_text, output_text, "
            "refusal, input_image)"
        )


def _read_tool_use(block: Mapping[str, Any], role: Role) -> ToolCallPart:
    """An Anthropic ``tool_use`` block of an assistant message."""
    if role != "assistant":
        raise InvalidMessageError("tool_use blocks belong in assistant messages")
    call_id, tool = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(tool, str):
        raise InvalidMessageError("a tool_use block needs 'id' and 'name' strings")
    return ToolCallPart(call_id, tool, _arguments_text(block.get("input"), tool))


def _read_tool_result(block: Mapping[str, Any], role: Role) -> ToolResultPart:
    """An Anthropic ``tool_result`` block of a user message."""
    if role != "user":
        raise InvalidMessageError("tool_result blocks belong in user messages")
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidMessageError("a tool_result block needs a 'tool_use_id' string")
    text = _flatten_text(block.get("content"), "tool_result content")
    return ToolResultPart(call_id, text, _read_flag(
        block.get("is_error"), "a tool_result block's is_error"))


def _is_aside(kind: str) -> bool:
    return kind in ("thinking", "redacted_thinking", "server_tool_use") or (
        kind.endswith("_tool_result") or kind.startswith("mcp_")
    )


def _read_openai_image(block: Mapping[str, Any]) -> ImagePart:
    image = block.get("image_url")
    detail: object = None
    if isinstance(image, Mapping):
        image = cast(Mapping[str, Any], image)
        url, detail = image.get("url"), image.get("detail")
    else:
        url = image
    if not isinstance(url, str) or not url:
        raise InvalidMessageError("an image_url block needs image_url.url")
    if detail is not None and not isinstance(detail, str):
        raise InvalidMessageError("image_url.detail must be a string (auto, low or high)")
    return ImagePart(url, _media_type_of(url), detail)


def _read_responses_image(block: Mapping[str, Any]) -> ImagePart:
    url, detail = block.get("image_url"), block.get("detail")
    if not isinstance(url, str) or not url:
        what = "a file_id" if block.get("file_id") is not None else "no image_url"
        raise InvalidMessageError(
            f"an input_image block needs 'image_url' (an http(s) URL or a data: URI); it "
            f"has {what}, and memci keeps images by URL only")
    if detail is not None and not isinstance(detail, str):
        raise InvalidMessageError("input_image 'detail' must be a string (auto, low or high)")
    return ImagePart(url, _media_type_of(url), detail)


def _read_openai_call(call: object) -> ToolCallPart:
    if not isinstance(call, Mapping):
        raise InvalidMessageError("each entry of 'tool_calls' must be a dict")
    call = cast(Mapping[str, Any], call)
    if call.get("type", "function") != "function":
        raise InvalidMessageError(
            f"tool calls of type {call.get('type')!r} are not supported; use function calls"
        )
    function = call.get("function")
    call_id = call.get("id")
    if not isinstance(function, Mapping) or not isinstance(call_id, str) or not call_id:
        raise InvalidMessageError(
            "each tool call needs an 'id' and a 'function' with 'name' and 'arguments'"
        )
    function = cast(Mapping[str, Any], function)
    tool = function.get("name")
    if not isinstance(tool, str) or not tool:
        raise InvalidMessageError("a tool call's function needs a 'name'")
    return ToolCallPart(call_id, tool, _arguments_text(function.get("arguments"), tool))


def _arguments_text(value: object, tool: str) -> str:
    if value is None or value == "":
        return "{}"
    if isinstance(value, Mapping):
        try:
            return _jsonvalues.dumps(dict(cast(Mapping[str, Any], value)))
        except _jsonvalues.JSONTextError as exc:
            raise InvalidTextError(f"arguments of tool call {tool!r}: {exc}") from exc
        except _jsonvalues.JSONValueError as exc:
            raise InvalidToolArgumentsError(f"arguments of tool call {tool!r}: {exc}") from exc
    if isinstance(value, str | bytes):
        text = _as_text(value, "tool arguments")
        _check_arguments(text, tool)
        return text
    raise InvalidToolArgumentsError(
        f"arguments of tool call {tool!r} must be a JSON object or JSON text of one, "
        f"got {type(value).__name__}"
    )


def _check_arguments(text: str, tool: str) -> None:
    try:
        parsed = _jsonvalues.loads(text)
    except _jsonvalues.JSONTextError as exc:
        raise InvalidTextError(f"arguments of tool call {tool!r}: {exc}") from exc
    except _jsonvalues.JSONValueError as exc:
        raise InvalidToolArgumentsError(
            f"arguments of tool call {tool!r}: {exc}: {text[:80]!r}") from exc
    if not isinstance(parsed, dict):
        raise InvalidToolArgumentsError(
            f"arguments of tool call {tool!r} must be a JSON object, "
            f"got {type(parsed).__name__}"
        )


def _read_anthropic_image(block: Mapping[str, Any]) -> ImagePart:
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise InvalidMessageError("an image block needs a 'source'")
    source = cast(Mapping[str, Any], source)
    if source.get("type") == "base64":
        media, data = source.get("media_type"), source.get("data")
        if not isinstance(media, str) or not isinstance(data, str):
            raise InvalidMessageError("a base64 image source needs 'media_type' and 'data'")
        return ImagePart(f"data:{media};base64,{data}", media)
    url = source.get("url")
    if not isinstance(url, str) or not url:
        raise InvalidMessageError("an image source needs 'url' or base64 'data'")
    return ImagePart(url, _media_type_of(url))


def _media_type_of(url: str) -> str | None:
    """Return the media type a ``data:`` URI declares; None for other URLs."""
    if url.startswith("data:") and ";" in url:
        return url[5 : url.index(";")] or None
    return None


def _flatten_text(content: object, what: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str | bytes):
        return _as_text(content, what)
    if isinstance(content, list):
        texts: list[str] = []
        for block in content:
            if isinstance(block, str | bytes):
                texts.append(_as_text(block, what))
            elif isinstance(block, Mapping) and block.get("type") in ("text", "input_text"):
                texts.append(_as_text(cast(Mapping[str, Any], block).get("text", ""), what))
            else:
                raise InvalidMessageError(f"{what} may hold only text blocks")
        return "\n".join(texts)
    raise InvalidMessageError(f"{what} must be a string or a list of text blocks")


def _as_text(value: object, what: str) -> str:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidTextError(f"{what} is not valid UTF-8: {exc}") from exc
    if not isinstance(value, str):
        raise InvalidMessageError(f"{what} must be a string, got {type(value).__name__}")
    _check_text(value, what)
    return value


def _check_text(text: object, what: str) -> int:
    """Raise on lone surrogates; return the text's size in UTF-8 bytes."""
    if not isinstance(text, str):
        raise InvalidMessageError(f"{what} must be a string, got {type(text).__name__}")
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidTextError(
            f"{what} holds characters that are not valid Unicode (a lone surrogate at "
            f"position {exc.start}); decode the source text as UTF-8 before adding it"
        ) from exc


def iter_dicts(items: Iterable[object]) -> Iterable[object]:
    """Yield the items of a list of messages, refusing a bare string or dict."""
    if isinstance(items, str | bytes | Mapping):
        raise InvalidMessageError("add_many takes a list of messages, not one message")
    return items
