"""What every part of memci needs to know about a text's script: CJK or not, and how much.

One definition of "CJK" (ideographs, kana, hangul) serves the summarizers, the sentence
splitter, the session's language and the embedders' language check. The names keep one
meaning each: :func:`is_cjk` asks about one character, :func:`has_cjk` whether a text holds
any, :func:`cjk_share` how much of it is CJK and :func:`is_cjk_text` whether that is most.

The keyword analyzers cut a narrower set into terms, :data:`HAN_KANA_CLASS` (kana and the
ideographs of the Basic Multilingual Plane): hangul separates its words by spaces, so it
is left to the word tokenizer; :func:`has_han_or_kana` asks about that set.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable

from memci._lazy import LazyPattern

__all__ = ["CJK_CLASS", "HAN_KANA_CLASS", "cjk_share", "has_cjk", "has_han_or_kana", "is_cjk",
           "is_cjk_text", "language_of"]

#: A regex character class of kana and the ideographs of the Basic Multilingual Plane.
HAN_KANA_CLASS = (
    "\u3040-\u30ff"  # kana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
)
#: A regex character class of CJK ideographs, kana and hangul.
CJK_CLASS = (
    HAN_KANA_CLASS
    + "\uac00-\ud7af"  # hangul
    + "\U00020000-\U0002ebef"  # ideographs of the supplementary planes
)
# Large Unicode classes take milliseconds to compile: they compile for the first text that
# is not all ASCII (none of their characters is ASCII, so such a text has no match).
_CJK_RE = LazyPattern(f"[{CJK_CLASS}]")
_HAN_KANA_RE = LazyPattern(f"[{HAN_KANA_CLASS}]")
_LATIN_WORD_RE = LazyPattern(r"[A-Za-z][A-Za-z'-]*")
# The same class as sorted code point bounds ("a-b" triples), for one character at a time:
# a character is CJK when it falls after an odd number of bounds (first inclusive).
_CJK_BOUNDS = sorted(b for i in range(0, len(CJK_CLASS), 3)
                     for b in (ord(CJK_CLASS[i]), ord(CJK_CLASS[i + 2]) + 1))


def is_cjk(char: str) -> bool:
    """Whether ``char`` (one character) is a CJK ideograph, kana or hangul."""
    return not char.isascii() and bisect_right(_CJK_BOUNDS, ord(char)) % 2 == 1


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds any CJK character."""
    return not text.isascii() and _CJK_RE.search(text) is not None


def has_han_or_kana(text: str) -> bool:
    """Whether ``text`` holds any character of :data:`HAN_KANA_CLASS` (Chinese or Japanese)."""
    return not text.isascii() and _HAN_KANA_RE.search(text) is not None


def cjk_share(text: str) -> float:
    """Share of CJK in ``text``: CJK characters over CJK characters plus Latin words.

    Latin words count as one unit each, so a Chinese sentence with a few English terms
    still reads as Chinese, and an English one with a Chinese name still as English.
    """
    cjk = 0 if text.isascii() else len(_CJK_RE.findall(text))
    if not cjk:
        return 0.0
    words = len(_LATIN_WORD_RE.findall(text))
    return cjk / (cjk + words)


def is_cjk_text(text: str, threshold: float = 0.4) -> bool:
    """Whether ``text`` is mostly CJK (see :func:`cjk_share`)."""
    return cjk_share(text) >= threshold


def language_of(texts: Iterable[str]) -> str:
    """``zh`` when more than 15% of the first 2,000 characters are CJK, else ``en``."""
    sample = "".join(texts)[:2000]
    cjk = 0 if sample.isascii() else sum(map(is_cjk, sample))
    return "zh" if sample and cjk / len(sample) > 0.15 else "en"
