"""Keyword terms cut the way FTS5 cuts them, for a backend that has no FTS5.

memci's analyzers (:mod:`memci.text._analyzer`) prepare text for an FTS5 tokenizer named by
their ``tokenize`` option; PostgreSQL stores the resulting terms in postings. This
module is that tokenizer in Python, so both backends index (and query) the same terms:

- ``porter unicode61 remove_diacritics 2``: a token is a run of letters, digits and
  private-use characters (Unicode categories L*, N*, Co; combining marks inside a token
  are kept, then dropped), folded to lower case, Latin diacritics removed, then stemmed
  by the Porter algorithm (on its UTF-8 bytes, tokens of 3 to 64 bytes only);
- ``trigram``: every run of three characters, folded to lower case (diacritics kept).

Invariant: :func:`terms` gives the tokens FTS5 gives, in order (positions are indexes in
the returned list); a test compares them with SQLite's on real English and Chinese text.
Unicode tables may differ between SQLite's and Python's versions on rare characters.
"""

from __future__ import annotations

import functools
import itertools
import unicodedata
from collections.abc import Callable

from memci.errors import ConfigError

__all__ = ["PORTER", "TRIGRAM", "terms", "tokenizer"]

PORTER = "porter unicode61 remove_diacritics 2"
TRIGRAM = "trigram"

_PORTER_MAX_BYTES = 64


def _kind(char: str) -> int:
    """2: a token character; 1: a combining mark (kept inside a token); 0: a separator."""
    if char < "\x80":
        return 2 if char.isascii() and char.isalnum() else 0
    category = unicodedata.category(char)
    if category[0] in "LN" or category in ("Co", "Cn"):  # FTS5 counts unassigned ones in
        return 2
    return 1 if "\u0300" <= char <= "\u036f" else 0


def _fold(char: str, remove_diacritics: bool) -> str:
    """``char`` in lower case and, when asked, without its Latin diacritic."""
    if char < "\x80":
        return char.lower()
    if "\u0300" <= char <= "\u036f":
        return "" if remove_diacritics else char
    folded = char.casefold()
    if len(folded) != 1:
        folded = char.lower()
        if len(folded) != 1:
            folded = char
    if not remove_diacritics:
        return folded
    decomposed = unicodedata.normalize("NFD", folded)
    if (len(decomposed) > 1 and decomposed[0].isascii()
            and all("\u0300" <= mark <= "\u036f" for mark in decomposed[1:])):
        return decomposed[0].lower()
    return folded


class _Folding(dict[int, str]):
    """``str.translate``'s table for unicode61, filled as characters are first met.

    A token character maps to its fold, a separator to a space, a combining mark to
    nothing: a mark inside a token is kept there and then dropped (diacritics removed),
    and a mark outside one separates nothing, so the text's tokens are the translated
    text's ``split()``, cut in C rather than one Python step per character.
    """

    def __missing__(self, code: int) -> str:
        char = chr(code)
        kind = _kind(char)
        folded = _fold(char, True) if kind == 2 else "" if kind == 1 else " "
        self[code] = folded
        return folded


_FOLDING = _Folding()


def _unicode61(text: str) -> list[str]:
    return text.translate(_FOLDING).split()


# -- the Porter stemmer, on bytes, as FTS5's porter tokenizer applies it ----------------

_VOWELS = frozenset(b"aeiou")


def _consonant_flags(word: bytes) -> list[bool]:
    flags: list[bool] = []
    previous_consonant = False
    for byte in word:
        vowel = byte in _VOWELS or (byte == ord("y") and previous_consonant)
        previous_consonant = not vowel
        flags.append(previous_consonant)
    return flags


def _measure(stem: bytes) -> int:
    """Porter's *m*: how many vowel-consonant sequences ``stem`` holds."""
    flags = _consonant_flags(stem)
    m = 0
    for before, now in itertools.pairwise(flags):
        if not before and now:
            m += 1
    return m


def _has_vowel(stem: bytes) -> bool:
    return any(byte in _VOWELS or (byte == ord("y") and i > 0) for i, byte in enumerate(stem))


def _cvc(stem: bytes) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (Porter's *o)."""
    if len(stem) < 3 or stem[-1] in b"wxy":
        return False
    flags = _consonant_flags(stem)
    return flags[-3] and not flags[-2] and flags[-1]


def _m_gt0(stem: bytes) -> bool:
    return _measure(stem) > 0


def _m_gt1(stem: bytes) -> bool:
    return _measure(stem) > 1


_Rule = tuple[bytes, Callable[[bytes], bool] | None, bytes]

_STEP2: tuple[_Rule, ...] = tuple((a.encode(), _m_gt0, b.encode()) for a, b in (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"),
    ("izer", "ize"), ("logi", "log"), ("bli", "ble"), ("alli", "al"), ("entli", "ent"),
    ("eli", "e"), ("ousli", "ous"), ("ization", "ize"), ("ation", "ate"), ("ator", "ate"),
    ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous"),
    ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")))
_STEP3: tuple[_Rule, ...] = tuple((a.encode(), _m_gt0, b.encode()) for a, b in (
    ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
    ("ful", ""), ("ness", "")))
_STEP4: tuple[_Rule, ...] = (
    *((s.encode(), _m_gt1, b"") for s in (
        "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent")),
    (b"ion", lambda stem: stem[-1:] in (b"s", b"t") and _m_gt1(stem), b""),
    *((s.encode(), _m_gt1, b"") for s in ("ou", "ism", "ate", "iti", "ous", "ive", "ize")),
)


@functools.lru_cache(maxsize=262144)  # words repeat: each is stemmed once per process
def _porter(token: str) -> str:  # noqa: C901 - the Porter stemmer's steps, one after the other
    if token[-1] >= "\x80":
        # Every rule's suffix ends in an ASCII letter: a token that does not (a CJK
        # bigram, most terms of a Chinese text) is kept as it is, without the steps.
        return token
    word = token.encode("utf-8")
    if len(word) > _PORTER_MAX_BYTES or len(word) < 3:
        return token
    # Step 1a.
    if word.endswith(b"s"):
        if ((word.endswith(b"sses") and len(word) > 4)
                or (word.endswith(b"ies") and len(word) > 3)):
            word = word[:-2]
        elif not word.endswith(b"ss"):
            word = word[:-1]
    # Step 1b.
    trimmed = False
    if word.endswith(b"eed") and len(word) > 3:
        if _m_gt0(word[:-3]):
            word = word[:-1]
    elif word.endswith(b"ed") and len(word) > 2 and _has_vowel(word[:-2]):
        word, trimmed = word[:-2], True
    elif word.endswith(b"ing") and len(word) > 3 and _has_vowel(word[:-3]):
        word, trimmed = word[:-3], True
    if trimmed and len(word) >= 2:
        if word.endswith((b"at", b"bl", b"iz")) and len(word) > 2:
            word += b"e"
        elif (word[-1] not in _VOWELS and word[-1] not in b"lsz" and word[-1] == word[-2]):
            word = word[:-1]
        elif _measure(word) == 1 and _cvc(word):
            word += b"e"
    # Step 1c.
    if word.endswith(b"y") and _has_vowel(word[:-1]):
        word = word[:-1] + b"i"
    # Steps 2 to 4.
    word = _step(word, _STEP2)
    word = _step(word, _STEP3)
    word = _step(word, _STEP4)
    # Step 5a.
    if word.endswith(b"e"):
        stem = word[:-1]
        if _m_gt1(stem) or (_measure(stem) == 1 and not _cvc(stem)):
            word = stem
    # Step 5b.
    if len(word) > 1 and word.endswith(b"ll") and _m_gt1(word[:-1]):
        word = word[:-1]
    return word.decode("utf-8", errors="surrogateescape")


def _step(word: bytes, rules: tuple[_Rule, ...]) -> bytes:
    """Apply the one rule of a step whose suffix ends ``word`` (FTS5's order), if any.

    FTS5 groups the rules of a step by the word's second-to-last letter and tries, in
    that group, each suffix in turn: the first that ends the word is the only one
    considered, whether or not its condition holds.
    """
    if len(word) < 2:
        return word
    key = word[-2]
    for suffix, condition, replacement in rules:
        if suffix[-2] != key or len(word) <= len(suffix) or not word.endswith(suffix):
            continue
        stem = word[:-len(suffix)]
        if condition is None or condition(stem):
            return stem + replacement
        return word
    return word


def _porter_unicode61(text: str) -> list[str]:
    # map: each token's stem looked up in the stemmer's cache from C, no Python step.
    return list(map(_porter, _unicode61(text)))


class _Lowering(dict[int, str]):
    """``str.translate``'s table for the trigram tokenizer, filled as characters are met.

    Each character maps to its fold: one character, diacritics kept.
    """

    def __missing__(self, code: int) -> str:
        folded = _fold(chr(code), False)
        self[code] = folded
        return folded


_LOWERING = _Lowering()


def _trigram(text: str) -> list[str]:
    text = text.split("\x00", 1)[0]  # FTS5's trigram tokenizer stops at a NUL
    folded = text.translate(_LOWERING)  # as long as ``text``: a fold is one character
    return [folded[i:i + 3] for i in range(len(folded) - 2)]


_TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    PORTER: _porter_unicode61, TRIGRAM: _trigram,
}


def tokenizer(spec: str) -> Callable[[str], list[str]]:
    """The tokenizer of the FTS5 ``tokenize`` option ``spec`` (one memci's analyzers use)."""
    found = _TOKENIZERS.get(spec)
    if found is None:
        raise ConfigError(f"PostgreSQL keyword search cannot cut text as the FTS5 tokenizer "
                          f"{spec!r}; use an analyzer with one of: {', '.join(_TOKENIZERS)}")
    return found


def terms(spec: str, text: str) -> list[str]:
    """The tokens of ``text`` under ``spec``, in order."""
    return tokenizer(spec)(text)
