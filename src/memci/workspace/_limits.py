"""Limits of the working state, TTLs of pins, and the titles its sections render with.

Every part of the working state is bounded (:class:`WorkspaceLimits`); the defaults are
seed 004's: at most 20 pins of at most 600 characters with a TTL (7 days by default),
a notebook compressed into milestones past 12 entries, fastmemo sections compacted when
one reaches 10 entries.

A TTL is either time or rounds (or both: whichever comes first), written as a number of
seconds, a string ``"7d"``, ``"12h"``, ``"90min"``, ``"45sec"``, ``"2w"``, ``"30r"``
(rounds), or a mapping ``{"days": 7}``, ``{"rounds": 30}``, ``{"hours": 1, "rounds": 5}``.
``"30s"`` and ``"30m"`` are refused as ambiguous (seconds or sessions? minutes or months?).
What a round is belongs to the caller: the number it passes to ``WorkState.expire``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeAlias

from memci._dataclasses import asdict, dataclass, field, fields
from memci._lazy import LazyPattern, compile_pattern
from memci.errors import ConfigError, WorkspaceError

__all__ = [
    "CHINESE_TITLES",
    "ENGLISH_TITLES",
    "TTL",
    "SectionTitles",
    "TTLSpec",
    "WorkspaceLimits",
    "parse_ttl",
]

_MAX_TTL_SECONDS = 10 * 366 * 86400
_UNITS = {"sec": 1, "min": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_KEYS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400, "weeks": 7 * 86400}
_TTL_TEXT = compile_pattern(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", re.IGNORECASE)
_UNIT_ALIASES = {
    "secs": "sec", "second": "sec", "seconds": "sec", "mins": "min", "minute": "min",
    "minutes": "min", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "day": "d",
    "days": "d", "week": "w", "weeks": "w", "round": "r", "rounds": "r",
}


_SECTION = LazyPattern(r"[a-z][a-z0-9_]{0,31}")  # a fastmemo section's name


@dataclass(frozen=True, slots=True)
class TTL:
    """How long a pin lives: ``seconds`` of time, ``rounds``, or both (first one wins)."""

    seconds: int | None = None
    rounds: int | None = None

    def to_json(self) -> dict[str, int]:
        """``{"seconds": n}``, ``{"rounds": n}`` or both."""
        out: dict[str, int] = {}
        if self.seconds is not None:
            out["seconds"] = self.seconds
        if self.rounds is not None:
            out["rounds"] = self.rounds
        return out

    def describe(self) -> str:
        """Describe it in short form: ``7d``, ``12h``, ``30r``, ``1d or 5r``."""
        parts = []
        if self.seconds is not None:
            for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("min", 60)):
                if self.seconds % size == 0:
                    parts.append(f"{self.seconds // size}{unit}")
                    break
            else:
                parts.append(f"{self.seconds}sec")
        if self.rounds is not None:
            parts.append(f"{self.rounds}r")
        return " or ".join(parts)


TTLSpec: TypeAlias = TTL | str | int | float | Mapping[str, Any]
"""Any accepted way to write a TTL."""


def parse_ttl(value: TTLSpec) -> TTL:
    """Parse a :class:`TTL` from any accepted form; :class:`WorkspaceError` says what is wrong."""
    if isinstance(value, TTL):
        return _checked(value.seconds, value.rounds, value)
    if isinstance(value, bool):
        raise WorkspaceError(f"ttl must be a duration, not {value!r}")
    if isinstance(value, int | float):
        return _checked(_whole_seconds(value, value), None, value)
    if isinstance(value, str):
        return _parse_text(value)
    if isinstance(value, Mapping):
        return _parse_mapping(value)
    raise WorkspaceError(f"ttl must be text like '7d', a number of seconds or a mapping like "
                         f"{{'days': 7}} / {{'rounds': 30}}, not {type(value).__name__}")


def _parse_text(value: str) -> TTL:
    found = _TTL_TEXT.fullmatch(value)
    if not found:
        raise WorkspaceError(
            f"ttl {value!r} is not understood: write '7d', '12h', '90min', '45sec', '2w' or "
            "'30r' (rounds), or a mapping like {'days': 7} / {'rounds': 30}"
        )
    number, unit = float(found.group(1)), found.group(2).lower()
    unit = _UNIT_ALIASES.get(unit, unit)
    if unit in ("s", "m"):
        meaning = "seconds or sessions" if unit == "s" else "minutes or months"
        raise WorkspaceError(
            f"ttl {value!r} is ambiguous ({meaning}?): write "
            f"{'sec' if unit == 's' else 'min'} for time or 'r' for rounds, e.g. "
            f"'{found.group(1)}{'sec' if unit == 's' else 'min'}' or '{found.group(1)}r'"
        )
    if unit == "":
        return _checked(_whole_seconds(number, value), None, value)
    if unit == "r":
        return _checked(None, _whole_rounds(number, value), value)
    if unit in _UNITS:
        return _checked(_whole_seconds(number * _UNITS[unit], value), None, value)
    raise WorkspaceError(f"ttl {value!r} has an unknown unit {unit!r}: use sec, min, h, d, w "
                         "or r (rounds)")


def _parse_mapping(value: Mapping[str, Any]) -> TTL:
    unknown = sorted(set(value) - set(_KEYS) - {"rounds", "sessions"})
    if unknown or not value:
        raise WorkspaceError(
            f"ttl mapping {dict(value)!r} is not understood: use keys "
            f"{', '.join(sorted(_KEYS))} and/or rounds, e.g. {{'days': 7}} or {{'rounds': 30}}"
        )
    seconds: float | None = None
    for key, size in _KEYS.items():
        if key in value:
            seconds = (seconds or 0) + _number(value[key], key) * size
    rounds = None
    for key in ("rounds", "sessions"):
        if key in value:
            rounds = _whole_rounds(_number(value[key], key), value)
    return _checked(None if seconds is None else _whole_seconds(seconds, value), rounds, value)


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WorkspaceError(f"ttl {key} must be a number, not {value!r}")
    return float(value)


def _whole_seconds(value: float, original: object) -> int:
    if not math.isfinite(value) or value <= 0:
        raise WorkspaceError(f"ttl {original!r} must be more than 0")
    return math.ceil(value)


def _whole_rounds(value: float, original: object) -> int:
    if value != int(value) or value < 1:
        raise WorkspaceError(f"ttl {original!r}: rounds must be a whole number, 1 or more")
    return int(value)


def _checked(seconds: int | None, rounds: int | None, original: object) -> TTL:
    if seconds is None and rounds is None:
        raise WorkspaceError(f"ttl {original!r} gives neither a time nor a number of rounds")
    if seconds is not None and not 0 < seconds <= _MAX_TTL_SECONDS:
        raise WorkspaceError(f"ttl {original!r} must be between 1 second and 10 years")
    if rounds is not None and not 0 < rounds <= 1_000_000:
        raise WorkspaceError(f"ttl {original!r}: rounds must be between 1 and 1,000,000")
    return TTL(seconds, rounds)


@dataclass(frozen=True, slots=True)
class WorkspaceLimits:
    """How big each part of the working state may grow.

    - pins: ``pins_max`` pins, each summary at most ``pin_summary_max`` characters and
      title ``pin_title_max``; a pin given no TTL gets ``pin_default_ttl``;
    - plan: ``plan_max`` items of at most ``plan_text_max`` characters;
    - notebook: entries of at most ``notebook_entry_max`` characters; past
      ``notebook_max`` entries the oldest ``notebook_compress_batch`` (or more, to get
      back under) become one milestone of at most ``milestone_max`` characters;
    - fastmemo: ``fastmemo_sections`` (``pool_section`` receives compressed chat history),
      entries of at most ``fastmemo_entry_max`` characters; when a section reaches
      ``fastmemo_section_max`` entries the whole fastmemo is compacted: in each section,
      all but the newest ``fastmemo_keep_recent`` entries become one.
    """

    pins_max: int = 20
    pin_summary_max: int = 600
    pin_title_max: int = 120
    pin_default_ttl: str = "7d"
    plan_max: int = 30
    plan_text_max: int = 300
    notebook_max: int = 12
    notebook_compress_batch: int = 6
    notebook_entry_max: int = 400
    milestone_max: int = 800
    fastmemo_section_max: int = 10
    fastmemo_keep_recent: int = 3
    fastmemo_entry_max: int = 400
    fastmemo_sections: tuple[str, ...] = ("user", "environment", "task", "self", "pool")
    pool_section: str = "pool"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            least = 0 if f.name == "fastmemo_keep_recent" else 1
            if f.type == "int" and (isinstance(value, bool) or not isinstance(value, int)
                                    or value < least):
                raise ConfigError(f"workspace limit {f.name} must be a whole number, {least} "
                                  f"or more, not {value!r}")
        if self.notebook_compress_batch < 2:
            raise ConfigError("notebook_compress_batch must be 2 or more (a milestone joins "
                              "several entries)")
        if self.fastmemo_keep_recent + 1 >= self.fastmemo_section_max:
            raise ConfigError("fastmemo_keep_recent must be at most fastmemo_section_max - 2 "
                              "(a compacted section keeps that many entries plus one)")
        for name in ("pin_default_ttl", "pool_section"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"workspace limit {name} must be text")
        sections = self.fastmemo_sections
        if (not isinstance(sections, tuple) or not sections
                or not all(isinstance(s, str) and _SECTION.fullmatch(s)
                           for s in sections) or len(set(sections)) != len(sections)):
            raise ConfigError(
                f"fastmemo_sections must be distinct names of lowercase letters, digits and _, "
                f"not {sections!r}"
            )
        if self.pool_section not in sections:
            raise ConfigError(f"pool_section {self.pool_section!r} must be one of "
                              f"fastmemo_sections {sections!r}")
        try:
            parse_ttl(self.pin_default_ttl)
        except WorkspaceError as exc:
            raise ConfigError(f"pin_default_ttl: {exc}") from exc

    def to_json(self) -> dict[str, Any]:
        """Return the limits as a JSON-ready dict (as written in ``context_state.json``)."""
        out = asdict(self)
        out["fastmemo_sections"] = list(self.fastmemo_sections)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkspaceLimits:
        """Limits from :meth:`to_json` output; unknown keys are refused, missing ones default."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"limits must be an object, not {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(f"unknown workspace limit(s) {', '.join(unknown)}; known: "
                              f"{', '.join(sorted(names))}")
        values = dict(data)
        if "fastmemo_sections" in values:
            sections = values["fastmemo_sections"]
            if not isinstance(sections, list | tuple):
                raise ConfigError("fastmemo_sections must be a list of names")
            values["fastmemo_sections"] = tuple(sections)
        return cls(**values)


def _english_sections() -> Mapping[str, str]:
    return MappingProxyType({"user": "User", "environment": "Environment", "task": "Task",
                             "self": "Self", "pool": "Context pool"})


@dataclass(frozen=True, slots=True)
class SectionTitles:
    """The titles (and the few labels) of the rendered working-state blocks."""

    pins: str = "Pins"
    plan: str = "Plan"
    notebook: str = "Notebook"
    fastmemo: str = "Fastmemo"
    context_pool: str = "Context pool"
    sections: Mapping[str, str] = field(default_factory=_english_sections)
    source: str = "source"
    expires: str = "expires"
    milestone: str = "milestone"
    done: str = "done"

    def section(self, name: str) -> str:
        """Return the title of a fastmemo section (its name when no title is set)."""
        return self.sections.get(name, name)


ENGLISH_TITLES = SectionTitles()
CHINESE_TITLES = SectionTitles(
    pins="重要信息", plan="计划", notebook="笔记本", fastmemo="表层记忆", context_pool="过去总结",
    sections=MappingProxyType({"user": "用户", "environment": "环境", "task": "任务",
                               "self": "自我", "pool": "过去总结"}),
    source="来源", expires="到期", milestone="里程碑", done="完成",
)
