"""Text blocks of the working state for a context, each under a clear title.

The blocks are stable: the same state renders byte for byte the same text (times are
absolute, to the minute, in UTC; nothing like "5 minutes ago"), so a request prefix that
holds them stays cacheable until the state changes. An empty part renders as ``""`` so a
recipe can leave its section out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memci.workspace._items import MemoEntry, NoteEntry, Pin, PlanItem
from memci.workspace._limits import ENGLISH_TITLES, SectionTitles
from memci.workspace._text import format_time

__all__ = [
    "render_context_pool",
    "render_fastmemo",
    "render_notebook",
    "render_pins",
    "render_plan",
]


def _block(title: str, lines: list[str]) -> str:
    return "\n".join([f"## {title}", *lines]) if lines else ""


def _expiry(pin: Pin, titles: SectionTitles) -> str | None:
    parts = []
    if pin.expires_at is not None:
        parts.append(format_time(pin.expires_at))
    if pin.expires_round is not None:
        parts.append(f"round {pin.expires_round}")
    return f"{titles.expires} " + " or ".join(parts) if parts else None


def render_pins(pins: Sequence[Pin], titles: SectionTitles = ENGLISH_TITLES) -> str:
    """``## Pins`` then one line a pin: id, type, title, summary, source, pointer, expiry."""
    lines = []
    for pin in pins:
        notes = [f"{titles.source}: {pin.source}"]
        if pin.artifact_ref:
            notes.append(pin.artifact_ref)
        expiry = _expiry(pin, titles)
        if expiry:
            notes.append(expiry)
        lines.append(f"- [pin {pin.id}] ({pin.type}) {pin.title}: {pin.summary} "
                     f"({'; '.join(notes)})")
    return _block(titles.pins, lines)


def render_plan(items: Sequence[PlanItem], titles: SectionTitles = ENGLISH_TITLES) -> str:
    """``## Plan`` then one checkbox line an item: ``- [x] 2. text``."""
    lines = [f"- [{'x' if item.done else ' '}] {item.id}. {item.text}" for item in items]
    return _block(titles.plan, lines)


def render_notebook(entries: Sequence[NoteEntry], titles: SectionTitles = ENGLISH_TITLES) -> str:
    """``## Notebook`` then one line an entry, milestones marked with what they fold."""
    lines = []
    for entry in entries:
        when = format_time(entry.created_at)
        if entry.milestone:
            folded = _ranges(entry.covers)
            head = f"[{titles.milestone} {entry.id} · notes {folded} · {when}]"
            lines.append(f"- {head} {entry.summary}")
            continue
        tail = [f"{titles.source}: {entry.source}"]
        if entry.artifact_ref:
            tail.append(entry.artifact_ref)
        lines.append(f"- [note {entry.id} · {when}] {entry.summary} ({'; '.join(tail)})")
    return _block(titles.notebook, lines)


def render_fastmemo(
    sections: Mapping[str, Sequence[MemoEntry]], titles: SectionTitles = ENGLISH_TITLES
) -> str:
    """``## Fastmemo`` then ``### <section>`` and its entries, for each non-empty section."""
    lines = []
    for name, entries in sections.items():
        if entries:
            lines.append(f"### {titles.section(name)}")
            lines.extend(f"- {e.text}" for e in entries)
    return _block(titles.fastmemo, lines)


def render_context_pool(
    entries: Sequence[MemoEntry], titles: SectionTitles = ENGLISH_TITLES
) -> str:
    """``## Context pool`` then the compressed chat history, oldest first."""
    return _block(titles.context_pool, [f"- {e.text}" for e in entries])


def _ranges(ids: Sequence[int]) -> str:
    """``1-4, 7, 9-10`` for ``[1, 2, 3, 4, 7, 9, 10]``."""
    out: list[str] = []
    ordered = sorted(ids)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ", ".join(out)
