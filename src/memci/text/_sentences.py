"""Sentences, clauses and cleanup: how memci cuts text into the units it summarizes.

Invariants:

- :func:`split_sentences` never loses a sentence and never splits inside a decimal
  (``3.14``), a path or file name (``src/memci/x.py``, ``./run.sh``), a domain
  (``api.example.com``), a version (``v1.2.3``), a known abbreviation (``e.g.``,
  ``Mr.``, ``etc.``) or an initial (``J. Smith``); Chinese ends (``。！？；…``) always split,
  with closing quotes and brackets kept on the sentence they close;
- a line break ends a sentence when the line reads as one (it ends with punctuation, the
  next starts a list item, either is code, or the text is CJK); hard-wrapped prose is
  joined back;
- everything here is pure, deterministic and linear in the text's length.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memci._lazy import LazyPattern
from memci.text._script import has_cjk, is_cjk

__all__ = [
    "clean_text",
    "split_clauses",
    "split_lines",
    "split_sentences",
]


# Sentence ends: Chinese ends (always), ellipses, and ASCII runs of . ! ?, each with the
# closing quotes and brackets that follow it.
_END_RE = LazyPattern(r"[。！？；….!?]++[”’」』》）)\]\"']*+")
_CJK_ENDS = frozenset("。！？；…")

_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st vs etc e.g i.e eg ie cf fig figs no nos vol vols approx
    inc ltd co corp dept est al ca resp esp incl excl min max avg ref refs sec eq eqs ch
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
    u.s u.k a.m p.m ph.d e.v i.v op pp ed eds gen gov rev hon""".split()
)

_LIST_MARKER_RE = LazyPattern(r"^\s*(?:[-*+•·>|#]|\d{1,3}[.)、]|[a-zA-Z][.)]\s|[（(]\d+[)）])")
_FENCE_RE = LazyPattern(r"^\s*(```|~~~)")
_TAG_RE = LazyPattern(r"</?[A-Za-z_][\w:-]*(?:\s[^<>]{0,200})?/?>")
_SPACES_RE = LazyPattern(r"[ \t\f\v\u00a0\u3000]+")
_MARKDOWN_RE = LazyPattern(r"\*\*|(?<!\w)__|__(?!\w)|`+|^#{1,6}\s+|^\s*>\s?", re.MULTILINE)
_MAYBE_MARKDOWN_RE = LazyPattern(r"[*`>#]|__")
_JOINING_WORDS = frozenset(
    "a an the of to in on at for with and or but by from as that which is are was were".split()
)
_LINE_END_PUNCT = frozenset(".!?:;。！？；：…")


def clean_text(text: str) -> str:
    """Drop markup that carries no meaning in a summary: XML-ish tags, emphasis, headings."""
    if "<" in text:
        text = _TAG_RE.sub(" ", text)
    if _MAYBE_MARKDOWN_RE.search(text):
        text = _MARKDOWN_RE.sub("", text)
    return text


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences, English and Chinese alike (see the module notes)."""
    out: list[str] = []
    for unit in _units(text):
        out.extend(_split_unit(unit))
    return out


def split_lines(text: str) -> list[list[str]]:
    """Split ``text`` into sentences grouped by the line (list item, paragraph) they are on."""
    return [sentences for unit in _units(text) if (sentences := _split_unit(unit))]


def _units(text: str) -> Iterator[str]:
    """Lines joined into units that sentence ends are looked for in."""
    current: list[str] = []
    in_code = False
    prev = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if _FENCE_RE.match(line):
            if current:
                yield " ".join(current)
                current = []
            in_code = not in_code
            prev = ""
            continue
        stripped = line.strip()
        if not stripped:
            if current:
                yield " ".join(current)
                current = []
            prev = ""
            continue
        if in_code:
            yield stripped
            continue
        if current and _line_breaks(prev, line):
            yield " ".join(current)
            current = []
        current.append(_SPACES_RE.sub(" ", stripped))
        prev = line
    if current:
        yield " ".join(current)


def _line_breaks(prev: str, line: str) -> bool:
    """Whether a line break between ``prev`` and ``line`` ends a sentence."""
    tail = prev.rstrip()
    if not tail or tail[-1] in _LINE_END_PUNCT:
        return True
    if _LIST_MARKER_RE.match(line) or line.startswith(("    ", "\t")) or prev.startswith(
        ("    ", "\t")
    ):
        return True
    # Chinese text is not hard-wrapped; a short line without an end is a heading.
    if has_cjk(tail[-1:] + line.lstrip()[:1]):
        return True
    last = tail.rsplit(" ", 1)[-1].lower()
    return len(tail) < 25 and last not in _JOINING_WORDS


def _split_unit(unit: str) -> list[str]:
    out: list[str] = []
    start = 0
    n = len(unit)
    for match in _END_RE.finditer(unit):
        end = match.end()
        if not _is_end(unit, match.start(), end, start):
            continue
        sentence = unit[start:end].strip()
        if sentence:
            out.append(sentence)
        start = end
        while start < n and unit[start] == " ":
            start += 1
    rest = unit[start:].strip()
    if rest:
        out.append(rest)
    return out


def _is_end(unit: str, s: int, e: int, sentence_start: int) -> bool:
    mark = unit[s]
    if mark in _CJK_ENDS or any(c in _CJK_ENDS for c in unit[s:e]):
        return True
    after = unit[e] if e < len(unit) else ""
    if after and not (after.isspace() or is_cjk(after)):
        return False  # 3.14, a.py, example.com, "what?!x": no end
    if not after:
        return True
    nxt = _next_visible(unit, e)
    if mark in "!?":
        return True
    run = unit[s:e].rstrip("”’」』》）)]\"'")
    if len(run) >= 3 and run.count(".") == len(run):  # an ellipsis "..."
        return not nxt or not nxt.islower()
    if len(run) > 1:  # "?!" or ".." runs: treat like their first mark
        return True
    word = _word_before(unit, s, sentence_start)
    if not word:
        return True
    low = word.lower()
    if low in _ABBREVIATIONS or low.rstrip(".") in _ABBREVIATIONS:
        return False
    if len(word) == 1 and word.isalpha() and word.isupper():
        return False  # an initial: "J. Smith"
    if "." in word and all(len(p) <= 2 and p.isalpha() for p in word.split(".") if p):
        return False  # "U.S.", "a.m."
    if word.isdigit() and _word_start(unit, s) == sentence_start:
        return False  # a list marker: "1. First"
    return not (nxt and nxt.islower())


def _next_visible(unit: str, i: int) -> str:
    n = len(unit)
    while i < n and unit[i].isspace():
        i += 1
    return unit[i] if i < n else ""


def _word_start(unit: str, s: int) -> int:
    i = s
    while i > 0 and not unit[i - 1].isspace() and unit[i - 1] not in "([{\"'“‘":
        i -= 1
    return i


def _word_before(unit: str, s: int, sentence_start: int) -> str:
    i = max(_word_start(unit, s), sentence_start)
    return unit[i:s]


# -- clauses -----------------------------------------------------------------------------

_CLAUSE_RE = LazyPattern(r"(?<=[,，、;；:：])\s*|\s+(?:—|–|-{2})\s+|\s+-\s+")


def split_clauses(sentence: str) -> list[str]:
    """Split a sentence at commas, semicolons, colons and dashes (English and Chinese)."""
    parts = [p.strip() for p in _CLAUSE_RE.split(sentence)]
    return [p for p in parts if p]
