"""Budget: splitting it between segments, planning what fits, cutting what must shrink."""

from memci.budget._allocator import (
    PRIORITIES,
    PROFILES,
    BudgetAllocator,
    PriorityRanker,
    Profile,
    Section,
)
from memci.budget._truncate import (
    CUT_FLOOR,
    cut_middle,
    fit_messages,
    floor_tokens,
    shrink_message,
)
from memci.budget._window import newest_that_fit

__all__ = [
    "CUT_FLOOR",
    "PRIORITIES",
    "PROFILES",
    "BudgetAllocator",
    "PriorityRanker",
    "Profile",
    "Section",
    "cut_middle",
    "fit_messages",
    "floor_tokens",
    "newest_that_fit",
    "shrink_message",
]
