"""Session settings: what a session is configured with, resolved once, checked once.

Resolution order: keyword arguments to ``engine.session(...)`` > the settings saved with
the session > defaults for the model name > memci's defaults. Only what the caller set
explicitly is saved, so a default that changes in a later memci applies to old sessions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from memci._models import model_info
from memci.errors import ConfigError
from memci.messages import DEFAULT_MAX_BYTES

__all__ = ["STRATEGIES", "SessionSettings", "resolve_settings"]

STRATEGIES = ("paged", "oldest", "sliding_window", "summarize")


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
    ctx_recent_max_tokens: int = 0
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


_NAMES = {f.name for f in fields(SessionSettings)}


def resolve_settings(
    explicit: Mapping[str, Any], saved: Mapping[str, Any]
) -> tuple[SessionSettings, dict[str, Any]]:
    """The resolved settings and the explicit ones to save (saved, updated by explicit)."""
    unknown = sorted(set(explicit) - _NAMES)
    if unknown:
        raise ConfigError(
            f"unknown session setting(s) {', '.join(unknown)}; known: {', '.join(sorted(_NAMES))}"
        )
    chosen = {k: v for k, v in {**saved, **explicit}.items() if k in _NAMES and v is not None}
    info = model_info(chosen.get("model"))
    values: dict[str, Any] = {
        "provider": info.provider,
        "context_window": info.context_window,
        "tokenizer": _default_tokenizer(info.encoding),
    }
    values.update(chosen)
    if isinstance(values.get("tools"), list | tuple):
        values["tools"] = tuple(str(t) for t in values["tools"])
    if "file_roots" in values:
        values["file_roots"] = tuple(str(r) for r in values["file_roots"])
    settings = SessionSettings(**values)
    _check(settings)
    return settings, chosen


def _default_tokenizer(encoding: str) -> str:
    from memci.tokens import available

    return encoding if encoding != "estimate" and available(encoding) else "estimate"


def _check(s: SessionSettings) -> None:
    if not isinstance(s.context_window, int) or s.context_window <= 0:
        raise ConfigError(f"context_window must be a positive int, not {s.context_window!r}")
    if not isinstance(s.reserve_ratio, int | float) or not 0 <= s.reserve_ratio < 1:
        raise ConfigError(f"reserve_ratio must be in [0, 1), not {s.reserve_ratio!r}")
    if s.strategy not in STRATEGIES:
        raise ConfigError(f"strategy must be one of {', '.join(STRATEGIES)}, not {s.strategy!r}")
    if s.provider not in ("openai", "anthropic"):
        raise ConfigError(f"provider must be 'openai' or 'anthropic', not {s.provider!r}")
    for name in ("max_messages", "max_tokens", "max_request_bytes"):
        value = getattr(s, name)
        if not isinstance(value, int) or value < 0:
            raise ConfigError(f"{name} must be an int >= 0 (0 = no limit), not {value!r}")
    if not isinstance(s.max_message_bytes, int) or s.max_message_bytes <= 0:
        raise ConfigError(f"max_message_bytes must be a positive int, not {s.max_message_bytes!r}")
    if not isinstance(s.retrieval, bool):
        raise ConfigError(f"retrieval must be true or false, not {s.retrieval!r}")
    if s.tools != "auto" and not isinstance(s.tools, tuple):
        raise ConfigError("tools must be 'auto' or a list of memci tool names")
    if s.language not in ("auto", "en", "zh"):
        raise ConfigError(f"language must be 'auto', 'en' or 'zh', not {s.language!r}")
    if not isinstance(s.archive_low_watermark, int | float) or not (
        0.1 <= s.archive_low_watermark <= 1
    ):
        raise ConfigError(
            f"archive_low_watermark must be in [0.1, 1], not {s.archive_low_watermark!r}")
    for name in ("evict_unrecalled_rounds", "evict_unchanged_rounds", "contents_max_tokens",
                 "contents_entry_lines", "tool_head_tokens", "ctx_recent_max_tokens"):
        value = getattr(s, name)
        if not isinstance(value, int) or value < 0:
            raise ConfigError(f"{name} must be an int >= 0 (0 = off), not {value!r}")
    if s.strategy == "sliding_window" and not s.max_messages:
        raise ConfigError("strategy 'sliding_window' needs max_messages > 0")
