"""Splitting a request's budget between segments (seed 002), and trimming by priority.

:class:`BudgetAllocator` picks a profile from the conversation's length and whether
retrieval found anything, and turns its shares into token caps. Shares cap the optional
segments (state, retrieval, contents page); what they do not use flows to the recent
turns, which take the rest. :class:`PriorityRanker` trims the lowest priority first:
System > RecentTurns > Retrieval > Episodic > OlderTurns > Preferences. The system
segment is never trimmed; the newest page is the last thing to shrink.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from memci._dataclasses import dataclass, field, replace
from memci._records import NamedTuple
from memci.errors import ConfigError

__all__ = [
    "PRIORITIES",
    "PROFILES",
    "BudgetAllocator",
    "PriorityRanker",
    "Profile",
    "Section",
]


class Profile(NamedTuple):
    """Shares of the budget (after the system segment) per segment; they sum to 1."""

    name: str
    shares: Mapping[str, float]


def _profile(name: str, **shares: float) -> Profile:
    return Profile(name, MappingProxyType(shares))


PROFILES: Mapping[str, Profile] = MappingProxyType({
    # seed 002: short conversations favour the recent turns (STM 55%) ...
    "short": _profile("short", recent=0.55, contents=0.15, retrieval=0.15, state=0.15),
    # ... long ones shrink them and grow the episodic part (the contents page) ...
    "long": _profile("long", recent=0.40, contents=0.30, retrieval=0.15, state=0.15),
    # ... and with retrieval results, retrieval 45% and recent turns 40%.
    "retrieval": _profile("retrieval", recent=0.40, retrieval=0.45, contents=0.10, state=0.05),
})

# Highest first; trimming goes from the end of this tuple.
PRIORITIES: tuple[str, ...] = (
    "system", "recent", "retrieval", "episodic", "older", "preferences",
)


@dataclass(frozen=True, slots=True)
class BudgetAllocator:
    """Chooses a profile and turns its shares into token caps."""

    profiles: Mapping[str, Profile] = field(default_factory=lambda: PROFILES)
    long_after_turns: int = 20

    def __post_init__(self) -> None:
        for profile in self.profiles.values():
            total = sum(profile.shares.values())
            if abs(total - 1) > 1e-6 or any(v < 0 for v in profile.shares.values()):
                raise ConfigError(
                    f"profile {profile.name!r}: shares must be >= 0 and sum to 1, got {total}"
                )
        missing = {"short", "long", "retrieval"} - set(self.profiles)
        if missing:
            raise ConfigError(f"budget profiles missing: {', '.join(sorted(missing))}")

    def choose(self, *, turns: int, has_retrieval: bool) -> Profile:
        """The profile for a conversation of ``turns`` pages."""
        if has_retrieval:
            return self.profiles["retrieval"]
        return self.profiles["long" if turns >= self.long_after_turns else "short"]

    def allocate(self, available: int, *, turns: int, has_retrieval: bool) -> dict[str, int]:
        """Token caps per segment for ``available`` tokens (system segment already taken)."""
        profile = self.choose(turns=turns, has_retrieval=has_retrieval)
        caps = {name: int(available * share) for name, share in profile.shares.items()}
        caps["recent"] = available - sum(v for k, v in caps.items() if k != "recent")
        return caps

    def with_shares(self, name: str, **shares: float) -> BudgetAllocator:
        """A copy with profile ``name`` replaced."""
        profiles = dict(self.profiles)
        profiles[name] = _profile(name, **shares)
        return replace(self, profiles=MappingProxyType(profiles))


class Section(NamedTuple):
    """A trimmable piece of the context: its priority, its tokens, and whether it may shrink."""

    name: str
    priority: str
    tokens: int
    required: bool = False


class PriorityRanker:
    """Decides what to trim first when the sections do not fit."""

    def __init__(self, priorities: Sequence[str] = PRIORITIES) -> None:
        unknown = set(priorities) ^ set(PRIORITIES)
        if unknown:
            raise ConfigError(f"priorities must name exactly {', '.join(PRIORITIES)}")
        self._rank = {name: i for i, name in enumerate(priorities)}

    def trim_order(self, sections: Sequence[Section]) -> list[Section]:
        """Sections in the order they should be trimmed: lowest priority first."""
        return sorted((s for s in sections if not s.required),
                      key=lambda s: -self._rank[s.priority])

    def rank_and_truncate(self, sections: Sequence[Section], budget: int) -> dict[str, int]:
        """Tokens each section may keep so that the total fits ``budget``."""
        keep = {s.name: s.tokens for s in sections}
        over = sum(keep.values()) - budget
        for section in self.trim_order(sections):
            if over <= 0:
                break
            cut = min(over, keep[section.name])
            keep[section.name] -= cut
            over -= cut
        return keep
