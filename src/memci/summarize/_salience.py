"""Salience: what makes a sentence worth keeping in a summary, scored without a model.

A sentence scores by the frequency of its content terms across the text being summarized
(English words less stop words; Chinese character bigrams less particles, or ``jieba``
words when asked for), by where it stands (the lead sentence is usually the point), and by
the key content it carries: numbers, paths and file names, code identifiers, named
entities, and, for what a user wrote, questions. Greetings and narration ("Sure, let me
look") score low. Everything is deterministic: the same text gives the same scores.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Literal

from memci._lazy import LazyPattern
from memci._records import NamedTuple
from memci.errors import ConfigError, MissingExtraError
from memci.text import CJK_CLASS, IDENT_RE, MAYBE_IDENT_RE, MAYBE_PATH_RE, PATH_RE

__all__ = [
    "Features",
    "Segmenter",
    "analyze",
    "key_items",
    "make_segmenter",
    "score",
    "substantive",
    "term_frequencies",
]

Segmenter = Literal["bigram", "jieba", "auto"]

_STOP_EN = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can can't cannot could couldn't did didn't do does
    doesn't doing don't down during each few for from further had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how how's
    i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
    myself no nor not of off on once only or other ought our ours ourselves out over own same
    shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up very was wasn't we we'd we'll we're we've were
    weren't what what's when when's where where's which while who who's whom why why's with
    won't would wouldn't you you'd you'll you're you've your yours yourself yourselves also
    just now will may might must shall us get got let like well yes ok okay sure please thanks
    thank one two use used using make made see look go going want need know think sure really
    still even much many via per within without into onto upon""".split()
)

# Particles and pronouns that make a Chinese bigram say nothing by themselves.
_STOP_ZH = frozenset(
    "的了吗呢吧啊呀嘛哦嗯么着过地得之其与及和或而且也都就还又很太更最在是有这那个们我你他她它些啥怎"
)
_STOP_ZH_PAIRS = frozenset(
    """一个 一下 一些 一点 这个 那个 这些 那些 我们 你们 他们 她们 它们 什么 怎么 为什么 可以
    没有 就是 还是 但是 因为 所以 如果 然后 已经 知道 觉得 时候 现在 这样 那样 这里 那里 哪里
    不是 不会 不能 可能 应该 非常 真的 好的 对的 是的 吗？ 呢？""".split()
)

_WORD_RE = LazyPattern(r"[A-Za-z_][A-Za-z0-9_'.-]*[A-Za-z0-9_]|[A-Za-z]")
_CJK_RUN_RE = LazyPattern(f"[{CJK_CLASS}]+")
NUMBER_RE = LazyPattern(r"(?<![A-Za-z_])[-+]?\d+(?:[.,:/-]\d+)*%?")
ENTITY_RE = LazyPattern(
    r"(?<=[\w,;:)] )[A-Z][\w&'-]*[A-Za-z0-9](?: [A-Z][\w&'-]*[A-Za-z0-9])*"  # mid-sentence Caps
    r"|\b[A-Z]{2,}[0-9]*s?\b"  # acronyms
    r"|《[^》]{1,30}》|「[^」]{1,30}」|“[^”]{1,20}”"  # quoted names (Chinese)
)
_NOT_ENTITY = frozenset({"I", "OK", "ID", "A", "THE", "TODO", "NOTE", "AND", "OR"})
_FILLER_RE = LazyPattern(
    r"^(?:ok(?:ay)?|sure|great|thanks?(?: you)?|alright|got it|perfect|excellent|good|hi|"
    r"hello|hey|yes|no|yeah|right|cool|nice|wow|oh|ah|你好|您好|对|是的|没错|哈哈|"
    r"now,? let me|let me|let's|i'll|i will|i'm going to|first,? let me|next,? let me|"
    r"好的|好|嗯|哦|谢谢|明白|收到|让我|我来|我先|接下来我)\b",
    re.IGNORECASE,
)
_QUESTION_RE = LazyPattern(r"(?:[?？]|[吗呢么][。.!！]?)\s*[\"'”’」』)）]*\s*$")


class Features(NamedTuple):
    """What one sentence holds: content terms and counts of key content."""

    terms: tuple[str, ...]
    numbers: int
    paths: int
    idents: int
    entities: int
    question: bool
    filler: bool
    columns: int


def make_segmenter(kind: Segmenter = "bigram") -> Callable[[str], list[str]]:
    """Return how Chinese runs become terms: character ``bigram`` or ``jieba`` words.

    ``auto`` uses jieba when it can be imported and bigrams otherwise. ``jieba`` raises
    :class:`~memci.errors.MissingExtraError` when it is not installed.
    """
    if kind == "bigram":
        return _bigrams
    if kind not in ("jieba", "auto"):
        raise ConfigError(f"segmenter must be 'bigram', 'jieba' or 'auto', not {kind!r}")
    try:
        cut = _jieba_cut()
    except ImportError as exc:
        if kind == "auto":
            return _bigrams
        raise MissingExtraError("jieba", "jieba", "Chinese word segmentation") from exc
    return lambda run: [w for w in cut(run) if _zh_word_ok(w)]


@lru_cache(maxsize=1)
def _jieba_cut() -> Callable[[str], list[str]]:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    lcut: Callable[[str], list[str]] = jieba.lcut
    return lcut


def _zh_word_ok(word: str) -> bool:
    if len(word) == 1:
        return word not in _STOP_ZH
    return word not in _STOP_ZH_PAIRS and not all(c in _STOP_ZH for c in word)


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [] if run in _STOP_ZH else [run]
    out = []
    for i in range(len(run) - 1):
        pair = run[i : i + 2]
        if pair[0] in _STOP_ZH or pair[1] in _STOP_ZH or pair in _STOP_ZH_PAIRS:
            continue
        out.append(pair)
    return out


def analyze(sentence: str, segment: Callable[[str], list[str]] = _bigrams) -> Features:
    """Terms and key-content counts of one sentence."""
    terms: list[str] = []
    for word in _WORD_RE.findall(sentence):
        low = word.lower()
        if len(low) > 1 and low not in _STOP_EN and not low.isdigit():
            terms.append(low)
    if _CJK_RUN_RE.search(sentence):
        for run in _CJK_RUN_RE.findall(sentence):
            terms.extend(segment(run))
    entities = sum(1 for e in ENTITY_RE.findall(sentence) if e not in _NOT_ENTITY)
    paths = set(PATH_RE.findall(sentence)) if MAYBE_PATH_RE.search(sentence) else set()
    # A file name is a path and looks like a dotted name too: count it once.
    idents = (
        {i for i in IDENT_RE.findall(sentence) if i.rstrip("(") not in paths}
        if MAYBE_IDENT_RE.search(sentence) else set()
    )
    return Features(
        terms=tuple(terms),
        numbers=len(set(NUMBER_RE.findall(sentence))),
        paths=len(paths),
        idents=len(idents),
        entities=entities,
        question=bool(_QUESTION_RE.search(sentence)),
        filler=bool(_FILLER_RE.match(sentence.lstrip("-*• "))),
        columns=len(sentence),
    )


def term_frequencies(features: Sequence[Features]) -> Counter[str]:
    """How often each term occurs across ``features`` (the document)."""
    counts: Counter[str] = Counter()
    for f in features:
        counts.update(f.terms)
    return counts


def substantive(f: Features) -> bool:
    """Whether a sentence says something (not a greeting, not narration, not a fragment)."""
    if f.filler:
        return False
    distinct = len(set(f.terms))
    return distinct >= 2 or bool(f.paths or f.idents) or (f.numbers > 0 and distinct >= 1)


def score(
    f: Features,
    tf: Counter[str],
    *,
    position: int,
    total: int,
    questions_matter: bool = False,
) -> float:
    """Salience of one sentence within a document whose term counts are ``tf``.

    ``position`` counts substantive sentences only (see :func:`substantive`), so a
    greeting before the point does not take the lead bonus; it is -1 for the others.
    """
    distinct = set(f.terms)
    # fsum: the same total whatever order the set gives its terms in (it moves with the
    # hash seed), so equal sentences tie exactly in every process.
    base = math.fsum(math.log1p(tf[t]) for t in distinct) / math.sqrt(len(distinct) + 1)
    bonus = (
        min(f.numbers, 3) * 0.7
        + min(f.paths, 2) * 1.2
        + min(f.idents, 3) * 0.6
        + min(f.entities, 3) * 0.6
    )
    if position == 0:
        bonus += 0.8
    elif position == 1:
        bonus += 0.3
    elif total > 2 and position == total - 1:
        bonus += 0.2
    if questions_matter and f.question:
        bonus += 1.0
    if f.filler:
        bonus -= 1.5
    if len(distinct) < 3 and not (f.numbers or f.paths or f.idents):
        bonus -= 0.8
    if f.columns > 300:
        bonus -= 0.5 + (f.columns - 300) / 600
    return base + bonus


def key_items(text: str) -> list[tuple[int, str]]:
    """Key content in ``text`` with its offset: numbers, paths, identifiers, entities."""
    found: list[tuple[int, str]] = []
    for regex in (PATH_RE, IDENT_RE, NUMBER_RE, ENTITY_RE):
        for m in regex.finditer(text):
            if m.group() not in _NOT_ENTITY:
                found.append((m.start(), m.group()))
    found.sort()
    return found
