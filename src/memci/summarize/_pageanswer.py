"""A model's page summary, in whatever form it came, mapped onto the page's entries.

The page prompt asks for a title and one numbered line per message, but models answer as
they like: numbered lines, bullets, plain lines, a paragraph of prose, with or without a
title, in English or Chinese. :func:`read_page` reads them all:

- **per entry** (``form="entries"``): numbered lines whose numbers fall on at least half
  of the page's messages (the missing ones are left ``None`` for the caller to fill), or
  exactly as many bullets or lines as the page has messages, in order;
- **about the page** (``form="page"``): anything else. Its items (bullets, lines, or the
  sentences of a prose paragraph) become the entry's lines in order, at most as many as
  the page has messages (:func:`pack_lines` joins neighbours to get there, leaving none
  out), so a model's entry never has more lines than the extractive one it replaces.

Invariants: no text of the answer is dropped except the wrapping :func:`clean_answer`
removes, labels (``Title:``, ``1.``, ``-``, ``user:``) and emphasis markers; a line's
text is never empty; ``read_page`` raises ``LLMResponseError`` only for an empty or
refused answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from memci._dataclasses import dataclass
from memci._lazy import LazyPattern
from memci._records import NamedTuple
from memci.text import split_sentences

__all__ = ["PageAnswer", "pack_lines", "read_page"]

_TITLE_RE = LazyPattern(r"^\s*[*_]*(?:title|标题|题目)[*_]*\s*[:：]\s*(.+)$", re.IGNORECASE)
_HEADING_RE = LazyPattern(r"^\s*(?:#{1,6}\s+(.+)|\*\*([^*]+)\*\*|__([^_]+)__)\s*$")
_NUMBERED_RE = LazyPattern(
    r"^\s*[*_]*(?:\[(\d{1,3})\]|[(（](\d{1,3})[)）]|(\d{1,3})(?:[.)\]、:：]|\s-))[*_]*\s*(.+)$")
_BULLET_RE = LazyPattern(r"^\s*[-*•+·–—]\s+(.+)$")
_LABEL_RE = LazyPattern(
    r"^\s*[*_]*(?:user|assistant|tool(?: result)?|system|summary|用户|助手|工具(?:结果)?|系统|"
    r"摘要|总结)[*_]*\s*[:：]\s*", re.IGNORECASE)
_EMPHASIS_RE = LazyPattern(r"\*\*|__|`")


class PageAnswer(NamedTuple):
    """What a model wrote about a page: its title ("" if none) and its lines.

    ``form`` is ``"entries"`` (``lines`` has one item per message, ``None`` where the
    model wrote nothing for it) or ``"page"`` (1 to len(page) lines about the page).
    """

    title: str
    lines: tuple[str | None, ...]
    form: str


@dataclass(slots=True)
class _Item:
    number: int | None
    text: str


def read_page(answer: str, entries: int) -> PageAnswer:
    """Read a model's summary of a page of ``entries`` messages (see the module notes)."""
    from memci.llm import clean_answer  # the LLM answers' readers: a model's page only

    title, items = _items(clean_answer(answer))
    if not items:  # a title alone still says what the page was about
        return PageAnswer(title, (title,), "page")
    numbered = {i.number: i.text for i in items
                if i.number is not None and 1 <= i.number <= entries}
    if 2 * len(numbered) >= entries:
        return PageAnswer(title, tuple(numbered.get(n) for n in range(1, entries + 1)),
                          "entries")
    if len(items) == entries and entries > 1:
        return PageAnswer(title, tuple(i.text for i in items), "entries")
    texts = [i.text for i in items]
    if len(texts) < entries:  # prose: one sentence a line reads better than one blob
        texts = [s for text in texts for s in split_sentences(text)] or texts
    return PageAnswer(title, tuple(texts), "page")


def pack_lines(texts: Sequence[str], limit: int,
               fit: Callable[[str], str]) -> tuple[str, ...]:
    """``texts`` as at most ``limit`` lines, in order: neighbours joined evenly, each fit.

    ``texts`` must not be empty strings.
    """
    if limit <= 0 or len(texts) <= limit:
        return tuple(fit(t) for t in texts)
    size = len(texts) / limit
    groups = [texts[round(g * size):round((g + 1) * size)] for g in range(limit)]
    return tuple(fit(_join(group)) for group in groups if group)


def _join(texts: Sequence[str]) -> str:
    """Texts as one line: a sentence's own end mark separates it, else a semicolon."""
    out = texts[0]
    for text in texts[1:]:
        if out[-1:] in "。！？；":
            out += text
        else:
            out += (" " if out[-1:] in ".!?;:" else "; ") + text
    return out


def _items(answer: str) -> tuple[str, list[_Item]]:
    """The answer's title and its items (a wrapped line joins the item before it)."""
    title = ""
    items: list[_Item] = []
    lines = [line for line in answer.splitlines() if line.strip()]
    for n, line in enumerate(lines):
        found = _TITLE_RE.match(line)
        if found and not title:
            title = _plain(found.group(1))
            continue
        heading = _HEADING_RE.match(line)
        if heading and n == 0 and len(lines) > 1 and not title:
            title = _plain(next(g for g in heading.groups() if g))
            continue
        item = _item(line)
        if item.number is None and not _BULLET_RE.match(line) and items and (
                items[-1].number is not None and not line.startswith(line.lstrip())):
            items[-1].text += " " + item.text  # an indented continuation of a numbered item
        elif item.text:
            items.append(item)
    return title, items


def _item(line: str) -> _Item:
    numbered = _NUMBERED_RE.match(line)
    if numbered:
        number = next(g for g in numbered.groups()[:3] if g)
        return _Item(int(number), _plain(numbered.group(4)))
    bullet = _BULLET_RE.match(line)
    return _Item(None, _plain(bullet.group(1) if bullet else line))


def _plain(text: str) -> str:
    """Text without a leading label (a role, "summary:"), emphasis markers or quotes."""
    text = _EMPHASIS_RE.sub("", _LABEL_RE.sub("", text.strip(), count=1))
    return text.strip().strip("\"'“”「」").strip()
