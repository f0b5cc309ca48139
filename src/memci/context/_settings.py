"""Session settings: what a session is configured with, resolved once, checked once.

Resolution order: keyword arguments to ``engine.session(...)`` > the settings saved with
the session > defaults for the model name > memci's defaults. Only what the caller set
explicitly is saved, so a default that changes in a later memci applies to old sessions.

Every setting is checked by name and type before anything is saved: a wrong one raises
:class:`~memci.errors.ConfigError` naming the setting and what it takes, and the store is
left as it was. A saved value that no longer passes (written by an older memci) is
ignored, so a session can always be opened.

:class:`HostLimits` is what the operator of a shared engine (``memci serve``) lets a
session reach on the host. Under limits, a session's file roots are the part of its own
roots that lies inside the allowed ones (all the allowed ones when it names none) and its
message size limit is at most the allowed one; a caller asking for more is refused.
The narrowed values are applied, never saved, so limits changed later apply at once.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any, cast

from memci._dataclasses import asdict, dataclass, field, fields
from memci._models import model_info
from memci._records import NamedTuple
from memci.errors import ConfigError
from memci.messages import DEFAULT_MAX_BYTES
from memci.messages._tools import OWN_TOOL_NAMES, OWN_TOOLS

__all__ = [
    "HOST_SETTINGS",
    "STRATEGIES",
    "HostLimits",
    "SessionSettings",
    "check_setting",
    "resolve_settings",
    "within",
]

STRATEGIES = ("paged", "oldest", "sliding_window", "summarize")

HOST_SETTINGS = ("file_roots", "max_message_bytes")
"""Settings that reach the host (files, memory): limited by :class:`HostLimits`."""

_LARGEST = 2**40  # any count or size setting: far above use, far below int64
_MAX_TEXT = 200  # model names and the like
_MAX_PATH = 4096


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """The resolved settings of one session."""

    model: str | None = None
    provider: str = "openai"
    context_window: int = 128_000
    reserve_ratio: float = 0.25
    strategy: str = "paged"
    tokenizer: str = "estimate"
    max_messages: int = 0
    max_tokens: int = 0
    max_message_bytes: int = DEFAULT_MAX_BYTES
    max_request_bytes: int = 0
    file_roots: tuple[str, ...] = field(default_factory=tuple)
    language: str = "auto"
    archive_low_watermark: float = 0.6
    evict_unrecalled_rounds: int = 30
    evict_unchanged_rounds: int = 20
    contents_max_tokens: int = 0
    contents_entry_lines: int = 8
    tool_head_tokens: int = 1500
    keep_rounds: int = 3
    tool_loop_tokens: int = 0
    ctx_recent_max_tokens: int = 0
    summary_swap_rounds: int = 4
    retrieval: bool = True
    tools: str | tuple[str, ...] = "auto"

    @property
    def budget(self) -> int:
        """Tokens available to a request: the window less the reply reserve, capped."""
        available = int(self.context_window * (1 - self.reserve_ratio))
        return min(available, self.max_tokens) if self.max_tokens else available

    def to_json(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict."""
        out = asdict(self)
        out["file_roots"] = list(self.file_roots)
        out["tools"] = self.tools if isinstance(self.tools, str) else list(self.tools)
        return out


NAMES: frozenset[str] = frozenset(f.name for f in fields(SessionSettings))


# -- one check per setting: each returns the JSON-ready value or raises ConfigError ---------


def _shown(value: object) -> str:
    """``repr(value)``, cut short: an error message never echoes a huge input."""
    if isinstance(value, int) and abs(value) >= 10**30:
        return "a huge int"
    try:
        text = repr(value)
    except RecursionError:
        return "a deeply nested value"
    return text if len(text) <= 80 else text[:77] + "..."


def _text(name: str, value: object, *, limit: int = _MAX_TEXT) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise ConfigError(
            f"{name} must be a non-empty string (≤ {limit} chars), not {_shown(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"{name} holds a lone surrogate; send valid Unicode text") from None
    if "\x00" in value:
        raise ConfigError(f"{name} must not contain a NUL character")
    return value


def _choice(*options: str) -> Callable[[str, object], str]:
    def check(name: str, value: object) -> str:
        if not isinstance(value, str) or value not in options:
            raise ConfigError(f"{name} must be one of {', '.join(options)}, not {_shown(value)}")
        return value
    return check


def _integer(minimum: int, meaning: str = "") -> Callable[[str, object], int]:
    def check(name: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not (
                minimum <= value <= _LARGEST):
            raise ConfigError(f"{name} must be an int from {minimum} to {_LARGEST}"
                              f"{meaning}, not {_shown(value)}")
        return value
    return check


def _fraction(low: float, high: float, *, high_open: bool) -> Callable[[str, object], float]:
    def check(name: str, value: object) -> float:
        inside = (isinstance(value, int | float) and not isinstance(value, bool)
                  and math.isfinite(value) and low <= value
                  and (value < high if high_open else value <= high))
        if not inside:
            bracket = ")" if high_open else "]"
            raise ConfigError(f"{name} must be a number in [{low}, {high}{bracket}, "
                              f"not {_shown(value)}")
        return float(cast(float, value))
    return check


def _model(name: str, value: object) -> str | None:
    return None if value is None else _text(name, value)


def _tokenizer(name: str, value: object) -> str:
    from memci.tokens import NAMES as TOKENIZERS

    return _choice(*TOKENIZERS)(name, value)


def _bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, not {_shown(value)}")
    return value


def _file_roots(name: str, value: object) -> list[str]:
    if isinstance(value, str | bytes | os.PathLike) or not isinstance(value, list | tuple):
        raise ConfigError(f"{name} must be a list of directories, e.g. ['/srv/docs'], "
                          f"not {_shown(value)}")
    roots = []
    for root in value:
        if isinstance(root, os.PathLike):
            root = os.fspath(root)
        roots.append(_text(f"each of {name}", root, limit=_MAX_PATH))
    return roots


def _tools(name: str, value: object) -> str | list[str]:
    if value == "auto":
        return "auto"
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple) or any(
            not isinstance(t, str) or t not in OWN_TOOL_NAMES for t in value):
        raise ConfigError(f"{name} must be 'auto' or a list of memci tool names "
                          f"({', '.join(OWN_TOOLS)}), not {_shown(value)}")
    return list(value)


_CHECKS: dict[str, Callable[[str, object], Any]] = {
    "model": _model,
    "provider": _choice("openai", "anthropic"),
    "context_window": _integer(1),
    "reserve_ratio": _fraction(0, 1, high_open=True),
    "strategy": _choice(*STRATEGIES),
    "tokenizer": _tokenizer,
    "max_messages": _integer(0, " (0 = no limit)"),
    "max_tokens": _integer(0, " (0 = no limit)"),
    "max_message_bytes": _integer(1),
    "max_request_bytes": _integer(0, " (0 = no limit)"),
    "file_roots": _file_roots,
    "language": _choice("auto", "en", "zh"),
    "archive_low_watermark": _fraction(0.1, 1, high_open=False),
    "evict_unrecalled_rounds": _integer(0, " (0 = off)"),
    "evict_unchanged_rounds": _integer(0, " (0 = off)"),
    "contents_max_tokens": _integer(0, " (0 = off)"),
    "contents_entry_lines": _integer(0, " (0 = off)"),
    "tool_head_tokens": _integer(0, " (0 = off)"),
    "keep_rounds": _integer(1),
    "tool_loop_tokens": _integer(0, " (0 = the budget)"),
    "ctx_recent_max_tokens": _integer(0, " (0 = off)"),
    "summary_swap_rounds": _integer(0, " (0 = only at an archive event)"),
    "retrieval": _bool,
    "tools": _tools,
}
assert set(_CHECKS) == NAMES, "every setting has its check"


def check_setting(name: str, value: object) -> Any:
    """``value`` as saved (JSON-ready), or ConfigError naming the setting and what it takes."""
    check = _CHECKS.get(name)
    if check is None:
        raise ConfigError(
            f"unknown session setting {name!r}; known: {', '.join(sorted(NAMES))}")
    return check(name, value)


# -- what the operator allows ---------------------------------------------------------------


def _real(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))


def within(path: str, root: str) -> bool:
    """True when real path ``path`` is ``root`` or lies under it (both already real)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class HostLimits(NamedTuple):
    """The most a session may reach on the host: set by the operator, never by a client.

    ``file_roots`` are the directories file tools may read (none: no file access);
    ``max_message_bytes`` is the largest message a session may be set to accept.
    """

    file_roots: tuple[str, ...] = ()
    max_message_bytes: int = DEFAULT_MAX_BYTES

    def refuse_wider(self, explicit: Mapping[str, Any]) -> None:
        """Raise ConfigError when ``explicit`` asks for more than these limits allow."""
        if "file_roots" in explicit:
            allowed = [_real(r) for r in self.file_roots]
            for root in explicit["file_roots"]:
                if not os.path.isabs(root):  # relative to what? the server's cwd is no answer
                    raise ConfigError(f"file_roots: {root!r} is relative; name absolute "
                                      "directories inside the operator's file roots")
                if not any(within(_real(root), a) for a in allowed):
                    where = (", ".join(self.file_roots) if self.file_roots
                             else "none are allowed here")
                    raise ConfigError(
                        f"file_roots: {root!r} is outside the file roots the operator "
                        f"allows ({where}); a request may only name directories inside them")
        asked = explicit.get("max_message_bytes")
        if asked is not None and asked > self.max_message_bytes:
            raise ConfigError(
                f"max_message_bytes: {asked} is over the operator's limit of "
                f"{self.max_message_bytes}; a request may only lower it")

    def narrow(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` with the host settings cut down to these limits."""
        out = dict(values)
        allowed = [_real(r) for r in self.file_roots]
        asked = [_real(r) for r in values.get("file_roots") or ()]
        if not asked:
            roots = allowed
        else:  # the overlap of two sets of directory trees, root by root
            roots = [r for r in asked if any(within(r, a) for a in allowed)]
            roots += [a for a in allowed if any(within(a, r) for r in asked)]
        out["file_roots"] = list(dict.fromkeys(roots))
        out["max_message_bytes"] = min(
            values.get("max_message_bytes", self.max_message_bytes), self.max_message_bytes)
        return out


# -- resolution -------------------------------------------------------------------------------


def resolve_settings(
    explicit: Mapping[str, Any], saved: Mapping[str, Any], *,
    limits: HostLimits | None = None,
) -> tuple[SessionSettings, dict[str, Any]]:
    """The resolved settings and the explicit ones to save (saved, updated by explicit).

    ``limits`` (the operator's, for a shared engine) refuses explicit host settings
    wider than allowed, and narrows the applied ones; what is saved is never widened.
    """
    unknown = sorted(set(explicit) - NAMES)
    if unknown:
        raise ConfigError(
            f"unknown session setting(s) {', '.join(unknown)}; known: {', '.join(sorted(NAMES))}"
        )
    asked = {k: check_setting(k, v) for k, v in explicit.items() if v is not None}
    if limits is not None:
        limits.refuse_wider(asked)
    kept = {}
    for name, value in saved.items():
        if name in NAMES and value is not None:
            try:
                kept[name] = check_setting(name, value)
            except ConfigError:
                continue  # written by an older memci: the default applies again
    chosen = {**kept, **asked}
    info = model_info(chosen.get("model"))
    values: dict[str, Any] = {
        "provider": info.provider,
        "context_window": info.context_window,
        "tokenizer": _default_tokenizer(info.encoding),
    }
    values.update(chosen)
    if limits is not None:
        values = limits.narrow(values)
    if isinstance(values.get("tools"), list):
        values["tools"] = tuple(values["tools"])
    if "file_roots" in values:
        values["file_roots"] = tuple(values["file_roots"])
    if values.get("strategy") == "sliding_window" and not values.get("max_messages"):
        raise ConfigError("strategy 'sliding_window' needs max_messages > 0")
    return SessionSettings(**values), chosen


def _default_tokenizer(encoding: str) -> str:
    from memci.tokens import available

    return encoding if encoding != "estimate" and available(encoding) else "estimate"
