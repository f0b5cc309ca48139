"""What every part of memci needs to know about a text's script: CJK or not, and its width.

One definition of "CJK" (ideographs, kana, hangul) and of display width serves the
summarizers, the workspace's one-line views, the session's language and the token
estimate's callers. Wide characters (CJK and full-width forms) take ``wide`` columns.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

__all__ = ["CJK_CLASS", "cjk_share", "has_cjk", "is_cjk", "is_cjk_text", "is_wide",
           "language_of", "width"]

#: A regex character class of CJK ideographs, kana and hangul.
CJK_CLASS = (
    "\u3040-\u30ff"  # kana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # hangul
    "\U00020000-\U0002ebef"
)
_CJK_RE = re.compile(f"[{CJK_CLASS}]")
_LATIN_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]*")


def is_cjk(char: str) -> bool:
    """Whether ``char`` (one character) is a CJK ideograph, kana or hangul."""
    return bool(_CJK_RE.match(char))


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds any CJK character."""
    return _CJK_RE.search(text) is not None


def cjk_share(text: str) -> float:
    """Share of CJK in ``text``: CJK characters over CJK characters plus Latin words.

    Latin words count as one unit each, so a Chinese sentence with a few English terms
    still reads as Chinese, and an English one with a Chinese name still as English.
    """
    cjk = len(_CJK_RE.findall(text))
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
    cjk = len(_CJK_RE.findall(sample))
    return "zh" if sample and cjk / len(sample) > 0.15 else "en"


def is_wide(char: str) -> bool:
    """Whether ``char`` takes two columns on a terminal (East Asian wide or full-width)."""
    return char >= "\u1100" and unicodedata.east_asian_width(char) in ("W", "F")


def width(text: str, wide: float = 2.0) -> float:
    """Columns of ``text``: 1 per character, ``wide`` per wide (CJK, full-width) one."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if is_wide(ch)) * (wide - 1)
