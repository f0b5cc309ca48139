"""The contents page of seed 000: what the model reads of the ArchiveChapter.

Every archived page that is listed gets an entry: its index, its seq range, its recall
count and last recall round (absolute numbers, never "5 rounds ago") and one short line
per message. Archived pages that are not listed (no room, or archived with a backlog) are
named in one line of ranges, so the model knows every page it may recall. The page is a
system message; it is rendered here, from the entries, with no I/O, and counted as sent.

Invariants: the same entries, the same pages in the window and the same language give
the same text, byte for byte (the contents page sits early in every request, so a
request's prefix stays the same while the archive does not change); an entry's lines are
capped at ``entry_lines``, the head and the tail kept.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from memci.context._model import ContentsEntry
from memci.messages import Message
from memci.tokens import Tokenizer

__all__ = ["CONTENTS_OVERHEAD", "ContentsPage", "capped_lines", "entry_text",
           "unlisted_ranges"]

CONTENTS_OVERHEAD = 90
"""Tokens of a contents page's title and explanation, over its entries (a little over)."""

_TITLES = {
    "en": ("## Contents page (archived conversation)",
           "Earlier pages of this conversation were moved out of the context. Each is "
           "listed by its index with one line per message. To read a page again in full, "
           "call the tool recall_page with its index.",
           "recalls: {n}", "last recall: round {r}", "… {k} more entries",
           "Pages {ranges}: archived, not listed here (no room); recall_page still reads "
           "them."),
    "zh": ("## 目录页（已归档的对话）",
           "本对话中较早的页面已移出上下文，按页码列出，每条消息一行摘要。如需再次完整查看某一页，"
           "请调用工具 recall_page 并传入页码。",
           "召回次数: {n}", "最后召回: 第 {r} 轮", "… 另有 {k} 条",
           "第 {ranges} 页：已归档，篇幅所限未在此列出；仍可用 recall_page 查看。"),
}

_UNLISTED_RUNS = 8  # ranges the contents page names at most (the oldest and newest kept)
_KEPT_BLOCKS = 4_096  # blocks whose counts a page keeps (a window lists a few hundred)


def capped_lines(lines: Sequence[str], limit: int, language: str) -> tuple[str, ...]:
    """An entry's lines, at most ``limit`` (0: all): the head, a count of the rest, the tail."""
    if limit and len(lines) > limit:
        more = _TITLES[language][4].format(k=len(lines) - limit + 1)
        lines = [*lines[: limit // 2], more, *lines[-(limit - limit // 2 - 1):]]
    return tuple(lines)


def entry_text(entry: ContentsEntry, language: str) -> str:
    """One entry of the contents page: its header line and its lines."""
    titles = _TITLES[language]
    recall = titles[2].format(n=entry.recall_count)
    if entry.last_recall_round is not None:
        recall += ", " + titles[3].format(r=entry.last_recall_round)
    body = "\n".join(f"  - {line}" for line in entry.lines)
    return f"[Page {entry.page}] messages {entry.first_seq}-{entry.last_seq} · {recall}\n{body}"


def unlisted_ranges(listed: Collection[int], first_active: int) -> str:
    """The archived pages below ``first_active`` not among ``listed``, as ranges ("1–9, 12").

    The gaps between listed (or recalled) pages: O(listed pages).
    """
    parts: list[str] = []
    start = 1
    for page in [*sorted(p for p in listed if p < first_active), first_active]:
        if page > start:
            parts.append(f"{start}" if page - 1 == start else f"{start}–{page - 1}")
        start = page + 1
    if len(parts) > _UNLISTED_RUNS:
        parts = [*parts[:_UNLISTED_RUNS // 2], "…", *parts[-(_UNLISTED_RUNS // 2):]]
    return ", ".join(parts)


class ContentsPage:
    """Renders and counts the contents page and its entries for one session's language.

    The page is its blocks (titles, entries, the line of unlisted pages) parted by blank
    lines, and is counted as the sum of each block's count with the blank line after it
    (the last block's alone): a tokenizer's pieces never run from a blank line into a block
    that starts with neither a space nor a newline (nor a slash, which o200k_base joins to
    punctuation and newlines before it). A block's count is kept by its text, so an entry
    is counted once in a process, or never when its page row saved the count.
    """

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._blocks: dict[str, int] = {}  # a block's text -> its tokens, blank line after

    def block_tokens(self, text: str) -> int:
        """Tokens of ``text`` followed by the blank line that parts it from the next block."""
        found = self._blocks.get(text)
        if found is None:
            found = self.tokenizer.count(text + "\n\n")
            self.known(text, found)
        return found

    def known(self, text: str, tokens: int) -> None:
        """Keep ``tokens`` as :meth:`block_tokens` of ``text`` (counted by an earlier process)."""
        if len(self._blocks) > _KEPT_BLOCKS:
            self._blocks.clear()
        self._blocks[text] = tokens

    def entry_tokens(self, entry: ContentsEntry, language: str) -> int:
        """Tokens an entry adds to the page: its text and the blank line after it."""
        return self.block_tokens(entry_text(entry, language))

    def render(self, listed: Mapping[int, ContentsEntry], recalled: Collection[int],
               first_active: int, language: str) -> Message | None:
        """The page: every listed entry in page order, then one line naming the unlisted.

        None when no page has left the window. The explanation goes with listed pages; a
        page of ranges only is its title and the ranges.
        """
        if not listed and first_active <= 1:
            return None
        titles = _TITLES[language]
        blocks = [entry_text(listed[p], language) for p in sorted(listed)]
        unlisted = unlisted_ranges(listed.keys() | set(recalled), first_active)
        if unlisted:
            blocks.append(titles[5].format(ranges=unlisted))
        if not blocks:
            return None
        blocks = [titles[0], titles[1], *blocks] if listed else [titles[0], *blocks]
        # Every block starts with a title's, an entry's ("[Page") or the ranges' first
        # letter: the page is the sum of its blocks (see the class).
        tokens = (self.tokenizer.count_message(Message.system(""))
                  + sum(map(self.block_tokens, blocks[:-1])) + self.tokenizer.count(blocks[-1]))
        return Message("system", Message.system("\n\n".join(blocks)).parts, tokens=tokens)
