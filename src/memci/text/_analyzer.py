"""Text analysis for keyword search: how text is cut into FTS5 terms, for each analyzer.

An :class:`Analyzer` says three things: the FTS5 ``tokenize`` option of its tables, how a
document's text is prepared before it goes into the index (:meth:`Analyzer.document`), and
how a user's query becomes an FTS5 ``MATCH`` expression (:meth:`Analyzer.query`).

Invariants:

- :meth:`Analyzer.query` never returns an expression FTS5 rejects: every term is a quoted
  string (embedded ``"`` doubled), joined only by ``OR``; a query with no searchable term
  gives ``None`` (search returns nothing rather than raising);
- the same analyzer is used to write and to read one table: its name is recorded with the
  table, and a store indexed with another analyzer is re-indexed, never mixed.

Analyzers (chosen by measurement, see ``docs/benchmarks-retrieval.md``):

- ``bigram`` (default, no dependency): runs of CJK characters are indexed as overlapping
  character bigrams; other text goes through FTS5's ``porter unicode61`` (English stemming,
  case and diacritics folded). A two-character Chinese word is one bigram, so short queries
  match exactly.
- ``jieba`` (extra ``memci[jieba]``): CJK runs are cut into words by jieba (search mode);
  the rest as ``bigram``.
- ``trigram``: FTS5's ``trigram`` tokenizer over the raw text (substring matching); terms
  shorter than three characters cannot be searched through the index and are matched with
  ``LIKE`` instead (see :attr:`MatchQuery.short_terms`).
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from memci._lazy import LazyPattern, compile_pattern
from memci._records import NamedTuple
from memci.errors import ConfigError, MissingExtraError
from memci.text._script import HAN_KANA_CLASS, has_han_or_kana

__all__ = [
    "ANALYZERS",
    "Analyzer",
    "BigramAnalyzer",
    "JiebaAnalyzer",
    "MatchQuery",
    "TrigramAnalyzer",
    "get_analyzer",
    "normalize",
]

# Han (incl. extension A and compatibility), kana. Hangul is left to unicode61: Korean
# separates words by spaces.
_CJK = HAN_KANA_CLASS
# The CJK class takes milliseconds to compile: the two expressions that hold it compile
# for the first text that is not all ASCII; an ASCII text has no CJK run, and its words
# are what _ASCII_WORD finds (the same expression without the class it cannot hold).
_CJK_RUN = LazyPattern(f"[{_CJK}]+")
# A word of the non-CJK part: letters and digits with inner apostrophes, or an identifier
# joined by ``_ . - / :`` ("get_weather", "memci.store", "v1.2"), searched as a phrase.
_WORD = LazyPattern(rf"[^\W{_CJK}_]+(?:(?:['’]|[_./:-]+)[^\W{_CJK}_]+)*")
_ASCII_WORD = compile_pattern(r"[^\W_]+(?:(?:'|[_./:-]+)[^\W_]+)*")

ENGLISH_STOPWORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't
doing don't down during each else ever few for from further get got had hadn't has hasn't
have haven't having he he'd he'll he's her here here's hers herself him himself his how how's
i i'd i'll i'm i've if in into is isn't it it's its itself just let's like me mine more most
much mustn't my myself no nor not now of off on once only or other ought our ours ourselves
out over own said same say says shan't she she'd she'll she's should shouldn't so some such
tell than that that's the their theirs them themselves then there there's these they they'd
they'll they're they've this those through to too under until up upon us very was wasn't we
we'd we'll we're we've were weren't what what's when when's where where's which while who
who's whom why why's will with won't would wouldn't yes yet you you'd you'll you're you've
your yours yourself yourselves also remember recall know mentioned mention talked told
something anything thing things please one ones
""".split())

# Chinese function words and question words. A bigram made only of these, or one of these
# words, is not searched; the list stays short on purpose (content words are never in it).
CHINESE_STOPWORDS = frozenset("""
的 了 吗 呢 吧 啊 呀 哦 嗯 么 嘛 哈 是 在 和 与 及 或 也 都 就 还 又 很 太 把 被 给 让 从 向 对
我 你 他 她 它 您 咱 这 那 哪 谁 有 没 不 个 一 些 之 其 而 以 于 为 上 下 中 里 吗 啦 呗
我们 你们 他们 她们 它们 咱们 自己 这个 那个 这些 那些 这里 那里 哪里 哪儿 这儿 那儿 什么
怎么 怎样 怎么样 如何 为什么 多少 几个 哪个 哪些 是否 是不是 有没有 可以 能够 一下 一些
一个 知道 告诉 请问 记得 说过 提到 问过 聊过 还是 或者 以及 但是 因为 所以 如果 虽然 然后
已经 曾经 就是 不是 没有 有的 的话 时候 之前 之后 以前 以后 上次 刚才 具体 一般 大概
""".split())


_SPACES = LazyPattern(r"[\s\u3000]+")


def normalize(text: str) -> str:
    """Text folded for comparing: NFKC, lower case, whitespace collapsed, edges trimmed.

    Two memory items whose texts normalize alike are the same item (see dedupe).
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _SPACES.sub(" ", folded)
    return folded.strip(" .。!！?？,，;；:：")


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class MatchQuery(NamedTuple):
    """A query ready for FTS5: the ``MATCH`` expression and terms only ``LIKE`` can match.

    ``match`` is None when no term can go through the index; ``short_terms`` are the terms
    (trigram analyzer only) too short for it.
    """

    match: str | None
    terms: tuple[str, ...]
    short_terms: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Whether there is nothing to search for."""
        return self.match is None and not self.short_terms


class Analyzer(Protocol):
    """How text becomes FTS5 terms, for indexing and for querying."""

    name: str
    tokenize: str

    def document(self, text: str) -> str:
        """Return the text to store in the FTS5 column for ``text``."""
        ...

    def query(self, text: str) -> MatchQuery:
        """Return the FTS5 query for a user's ``text``; never a syntax error."""
        ...


def _english_terms(text: str) -> Iterator[str]:
    for match in (_ASCII_WORD if text.isascii() else _WORD).finditer(text):
        word = match.group(0).casefold().replace("’", "'")
        if word in ENGLISH_STOPWORDS:
            continue
        if word.endswith("'s"):
            word = word[:-2]
        if "'" in word:
            word = word.replace("'", "")
        if word and (len(word) > 1 or word.isdigit()):
            yield word


def _non_cjk(text: str) -> str:
    return text if text.isascii() else _CJK_RUN.sub(" ", text)


def _cjk_runs(text: str) -> list[str]:
    return [] if text.isascii() else _CJK_RUN.findall(text)


def _unique(terms: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for t in terms if t))


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


def _cjk_segments(run: str) -> list[str]:
    """Split a query's CJK run at stopwords (longest first), dropping them."""
    out: list[str] = []
    i, start, n = 0, 0, len(run)
    while i < n:
        for size in (3, 2):
            if i + size <= n and run[i:i + size] in CHINESE_STOPWORDS:
                if i > start:
                    out.append(run[start:i])
                i += size
                start = i
                break
        else:
            # Single-character function words split only when they stand between content
            # (a run of one is dropped as a stopword below).
            if run[i] in _CJK_PARTICLES:
                if i > start:
                    out.append(run[start:i])
                start = i + 1
            i += 1
    if start < n:
        out.append(run[start:])
    return [s for s in out if s not in CHINESE_STOPWORDS]


# Particles that never start or end a content word in a question.
_CJK_PARTICLES = frozenset("的了吗呢吧啊呀哦嗯么嘛啦呗")


class BigramAnalyzer:
    """CJK as overlapping character bigrams; everything else by ``porter unicode61``."""

    name = "bigram"
    tokenize = "porter unicode61 remove_diacritics 2"

    def document(self, text: str) -> str:
        """Each CJK run is replaced by its bigrams separated by spaces."""
        if text.isascii():
            return text
        return _CJK_RUN.sub(lambda m: " " + " ".join(_bigrams(m.group(0))) + " ", text)

    def query(self, text: str) -> MatchQuery:
        """English words minus stopwords; CJK bigrams of the content segments."""
        terms: list[str] = list(_english_terms(_non_cjk(text)))
        for run in _cjk_runs(text):
            for segment in _cjk_segments(run):
                grams = _bigrams(segment)
                terms.extend(grams)
        unique = _unique(terms)
        if not unique:
            return MatchQuery(None, ())
        parts = [_quote(t) + ("*" if len(t) == 1 and has_han_or_kana(t) else "") for t in unique]
        return MatchQuery(" OR ".join(parts), unique)


class JiebaAnalyzer:
    """CJK cut into words by jieba (search mode); everything else by ``porter unicode61``."""

    name = "jieba"
    tokenize = "porter unicode61 remove_diacritics 2"

    _lock = threading.Lock()
    _jieba: Any = None

    def __init__(self) -> None:
        self._cut = self._load()

    @classmethod
    def _load(cls) -> Any:
        with cls._lock:
            if cls._jieba is None:
                try:
                    import logging

                    import jieba
                except ImportError as exc:
                    raise MissingExtraError("jieba", "jieba", "the jieba analyzer") from exc
                jieba.setLogLevel(logging.WARNING)
                cls._jieba = jieba
            return cls._jieba

    def _words(self, run: str, *, search: bool) -> list[str]:
        with self._lock:
            words = (self._cut.cut_for_search(run) if search else self._cut.cut(run))
            return [w for w in words if w.strip()]

    def document(self, text: str) -> str:
        """Each CJK run is replaced by jieba's search-mode words separated by spaces."""
        if text.isascii():
            return text
        return _CJK_RUN.sub(
            lambda m: " " + " ".join(self._words(m.group(0), search=True)) + " ", text
        )

    def query(self, text: str) -> MatchQuery:
        """English words minus stopwords; jieba words of CJK runs minus stopwords."""
        terms: list[str] = list(_english_terms(_non_cjk(text)))
        for run in _cjk_runs(text):
            for word in self._words(run, search=True):
                if word not in CHINESE_STOPWORDS and not (
                    len(word) == 1 and word in _CJK_PARTICLES
                ):
                    terms.append(word)
        unique = _unique(terms)
        if not unique:
            return MatchQuery(None, ())
        return MatchQuery(" OR ".join(_quote(t) for t in unique), unique)


class TrigramAnalyzer:
    """FTS5's trigram tokenizer over raw text; terms under three characters go to LIKE."""

    name = "trigram"
    tokenize = "trigram"

    def document(self, text: str) -> str:
        """Return the text as it is."""
        return text

    def query(self, text: str) -> MatchQuery:
        """English words (three or more characters) and CJK content segments.

        A CJK segment longer than three characters is searched as its overlapping
        trigrams (partial matches still score); one of two characters goes to LIKE.
        """
        terms: list[str] = []
        short: list[str] = []
        for word in _english_terms(_non_cjk(text)):
            (terms if len(word) >= 3 else short).append(word)
        for run in _cjk_runs(text):
            for segment in _cjk_segments(run):
                if len(segment) < 3:
                    short.append(segment)
                else:
                    terms.extend(segment[i:i + 3] for i in range(len(segment) - 2))
        unique, few = _unique(terms), _unique(short)
        match = " OR ".join(_quote(t) for t in unique) if unique else None
        return MatchQuery(match, unique + few, few)


ANALYZERS: tuple[str, ...] = ("bigram", "jieba", "trigram")


def get_analyzer(name: str) -> Analyzer:
    """Return the analyzer called ``name`` (one of :data:`ANALYZERS`)."""
    if name == "bigram":
        return BigramAnalyzer()
    if name == "jieba":
        return JiebaAnalyzer()
    if name == "trigram":
        return TrigramAnalyzer()
    raise ConfigError(f"unknown analyzer {name!r}: use one of {', '.join(ANALYZERS)}")
