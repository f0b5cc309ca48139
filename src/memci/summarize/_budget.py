"""The token budgeter's answer to overflow (seed 003): summarize sections down, never drop.

:func:`fit_sections` gives every section a share of the budget by water-filling: sections
that fit in an even (weighted) share keep their text whole, and what they leave over is
shared among the rest, so the largest and least important sections are the ones
summarized. A section over its share is summarized to it with
:meth:`Summarizer.summarize_text`; if a summary still comes back over (a different
tokenizer, a model that ran long), it is cut at a word boundary. Invariant: the returned
texts, counted one by one with the given tokenizer, sum to at most the budget, and every
section of the input is in the output (possibly as ``""`` when its share is zero).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from typing import TypeVar

from memci.errors import InvalidInputError
from memci.summarize._protocol import Summarizer, TokenCounter
from memci.text import fit_line, line_width

__all__ = ["fit_sections", "fit_tokens", "water_fill"]

#: A section's name: any hashable key (``str`` or a ``Literal`` of names).
K = TypeVar("K", bound=Hashable)


def fit_sections(
    sections: Mapping[K, str],
    budget: int,
    tokenizer: TokenCounter,
    summarizer: Summarizer,
    *,
    weights: Mapping[K, float] | None = None,
    keep: Collection[K] = (),
) -> dict[K, str]:
    """Return ``sections`` within ``budget`` tokens, summarizing the ones over their share.

    ``weights`` (default 1.0 each) make a section's share larger: a section of weight 2
    keeps twice the tokens of one of weight 1 when both must shrink. Sections named in
    ``keep`` are never summarized (the system prompt); raises
    :class:`~memci.errors.InvalidInputError` when they alone pass the budget.
    """
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise InvalidInputError(f"budget must be an integer >= 0, got {budget!r}")
    unknown = [k for k in keep if k not in sections]
    if unknown:
        raise InvalidInputError(f"keep names sections that are not given: {unknown}")
    counts = {name: tokenizer.count(text) for name, text in sections.items()}
    if sum(counts.values()) <= budget:
        return dict(sections)
    fixed = sum(counts[name] for name in keep)
    if fixed > budget:
        raise InvalidInputError(
            f"the sections kept whole ({', '.join(map(str, keep))}) need {fixed} tokens, "
            f"more than the budget of {budget}: raise the budget or let them be summarized"
        )
    given: Mapping[K, float] = weights or {}
    for name, weight in given.items():
        if not weight > 0:
            raise InvalidInputError(f"weight of section {name!r} must be > 0, got {weight!r}")
    flexible = {name: count for name, count in counts.items() if name not in keep}
    shares = water_fill(flexible, budget - fixed, given)
    out = dict(sections)
    cut: list[K] = []
    for name, share in shares.items():
        if counts[name] > share:
            out[name] = _summarize(sections[name], share, tokenizer, summarizer)
            cut.append(name)
    # Summaries often come in under their share: give what is left to the sections that
    # were cut, once, so the budget is used rather than wasted.
    spare = budget - sum(tokenizer.count(text) for text in out.values())
    if cut and spare > 8 * len(cut):
        total = sum(given.get(name, 1.0) for name in cut)
        for name in cut:
            now = tokenizer.count(out[name])
            extra = int(spare * given.get(name, 1.0) / total)
            target = min(counts[name], shares[name] + extra)
            if target > now + 4:
                better = _summarize(sections[name], target, tokenizer, summarizer)
                grown = tokenizer.count(better)
                if now < grown <= now + extra:
                    out[name] = better
    return out


def water_fill(
    counts: Mapping[K, int], budget: int, weights: Mapping[K, float] | None = None
) -> dict[K, int]:
    """Share ``budget`` max-min fairly: ``min(count, weight × level)``, summing ≤ budget."""
    weights = weights or {}
    order = sorted(counts, key=lambda name: counts[name] / weights.get(name, 1.0))
    left = max(0, budget)
    weight_left = sum(weights.get(name, 1.0) for name in order)
    shares: dict[K, int] = {}
    for i, name in enumerate(order):
        weight = weights.get(name, 1.0)
        fair = left * weight / weight_left if weight_left > 0 else 0.0
        if counts[name] <= fair:
            shares[name] = counts[name]
        else:
            # Every later section is at least as large per weight: all get fair shares.
            for rest in order[i:]:
                shares[rest] = int(left * weights.get(rest, 1.0) / weight_left)
            break
        left -= counts[name]
        weight_left -= weight
    return {name: shares[name] for name in counts}


def _summarize(text: str, share: int, tokenizer: TokenCounter, summarizer: Summarizer) -> str:
    if share <= 0:
        return ""
    summary = summarizer.summarize_text([text], share)
    return fit_tokens(summary, share, tokenizer)


def fit_tokens(text: str, max_tokens: int, tokenizer: TokenCounter) -> str:
    """``text`` cut at a word boundary (ending in ``…``) to at most ``max_tokens`` tokens."""
    if max_tokens <= 0:
        return ""
    if tokenizer.count(text) <= max_tokens:
        return text
    low, high = 0.0, line_width(text)
    best = ""
    for _ in range(24):
        if high - low < 1:
            break
        mid = (low + high) / 2
        candidate = fit_line(text, mid)
        if tokenizer.count(candidate) <= max_tokens:
            best, low = candidate, mid
        else:
            high = mid
    return best
