"""Whether a request holds the turns that answer a question: one referee for every system.

A file that labels its answers' evidence (LoCoMo's ``qa.evidence``, LongMemEval's
``has_answer`` turns) lets ``memci replay`` say, for the request built to answer each
question, which of those turns it holds; ``bench/bench_evidence.py`` measures memci and
its baselines with the same rules, so no system is judged by its own:

- **verbatim** (strict): the turn's text, whitespace collapsed, is a substring of one
  message of the request (its text, whitespace collapsed) — the turn is there whole, on
  its own or inside a longer message (a contents page line, a retrieval section, a
  recalled page);
- **close** (fuzzy): at least 60% of the turn's distinct content words are inside ONE
  message of the request, within a run of at most twice their number of that message's
  content words. Content words are lowercased words less the English stopwords of
  :data:`STOPWORDS`, and Chinese/Japanese text as character bigrams (a lone character as
  itself). A turn with no content word is close exactly when it is verbatim. Verbatim
  implies close.

Messages whose text is the question itself are not searched: the question is not its own
evidence, and its words would fuzzily match short evidence turns for every system alike.
The rules are fixed here (the stopword list included) so a measure never changes with a
library's version. Nothing here does I/O.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from memci._dataclasses import dataclass
from memci._lazy import compile_pattern

__all__ = ["STOPWORDS", "EvidenceHeld", "RequestText", "collapse_spaces", "content_words",
           "words_close"]

# A fixed list (the NLTK English list, with the contractions' parts), so the measure never
# changes with a library version.
STOPWORDS = frozenset("""
a about above after again against ain all am an and any are aren aren't as at be because
been before being below between both but by can couldn couldn't d did didn didn't do does
doesn doesn't doing don don't down during each few for from further had hadn hadn't has
hasn hasn't have haven haven't having he he'd he'll he's her here hers herself him himself
his how i i'd i'll i'm i've if in into is isn isn't it it'd it'll it's its itself just ll
m ma me mightn mightn't more most mustn mustn't my myself needn needn't no nor not now o of
off on once only or other our ours ourselves out over own re s same shan shan't she she'd
she'll she's should should've shouldn shouldn't so some such t than that that'll the their
theirs them themselves then there these they they'd they'll they're they've this those
through to too under until up ve very was wasn wasn't we we'd we'll we're we've were weren
weren't what when where which while who whom why will with won won't wouldn wouldn't y you
you'd you'll you're you've your yours yourself yourselves
""".split())

_WORD = compile_pattern(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"  # CJK run -> bigrams
    r"|[0-9a-z\u00c0-\u024f\uac00-\ud7af]+(?:['’][a-z]+)?"  # a word, with its contraction
)
_CJK = compile_pattern(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE = compile_pattern(r"\s+")
_CLOSE_SHARE = 0.6


def collapse_spaces(text: str) -> str:
    """``text`` with whitespace runs collapsed to one space and its ends stripped."""
    return _SPACE.sub(" ", text).strip()


def content_words(text: str) -> list[str]:
    """The content words of ``text`` in order (see the module notes)."""
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group().replace("’", "'")
        if _CJK.match(word):
            out.extend([word] if len(word) == 1 else
                       [word[i:i + 2] for i in range(len(word) - 1)])
        elif word not in STOPWORDS:
            out.append(word)
    return out


def words_close(words: Sequence[str], sequence: Sequence[str],
                share: float = _CLOSE_SHARE) -> bool:
    """Whether ``share`` of the distinct ``words`` occur within 2x their number of ``sequence``."""
    wanted = set(words)
    n = len(wanted)
    if n == 0:
        return False
    need = math.ceil(share * n - 1e-9)
    width = 2 * n
    seen: Counter[str] = Counter()
    distinct = 0
    for i, word in enumerate(sequence):
        if i >= width:  # the run is sequence[i - width + 1 : i + 1]
            old = sequence[i - width]
            if old in wanted:
                seen[old] -= 1
                if seen[old] == 0:
                    distinct -= 1
        if word in wanted:
            seen[word] += 1
            if seen[word] == 1:
                distinct += 1
                if distinct >= need:
                    return True
    return False


class RequestText:
    """The texts of one request's messages, prepared once to check many turns against.

    ``texts`` are the messages' texts in order; those equal to ``question`` (whitespace
    collapsed) are left out (see the module notes).
    """

    def __init__(self, texts: Sequence[str], question: str | None = None) -> None:
        asked = collapse_spaces(question) if question else None
        kept = [t for t in texts if collapse_spaces(t) != asked]
        self.texts = [collapse_spaces(t) for t in kept]
        self.words = [content_words(t) for t in kept]

    def verbatim(self, turn_text: str) -> bool:
        """The turn is inside one message, whole."""
        needle = collapse_spaces(turn_text)
        return bool(needle) and any(needle in t for t in self.texts)

    def close(self, turn_text: str) -> bool:
        """Verbatim, or 60% of its content words close together in one message."""
        if self.verbatim(turn_text):
            return True
        words = content_words(turn_text)
        return bool(words) and any(words_close(words, seq) for seq in self.words)


@dataclass(frozen=True, slots=True)
class EvidenceHeld:
    """What one request holds of one question's evidence turns (named by origin)."""

    question: str
    evidence: tuple[str, ...]
    """Every evidence turn of the question, by where it is in the file (``D3:7``)."""
    verbatim: tuple[str, ...]
    close: tuple[str, ...]
    """The turns held verbatim, and those held at least closely (a superset)."""

    @property
    def share(self) -> float:
        """The share of the evidence turns held verbatim (1.0 when there are none)."""
        return len(self.verbatim) / len(self.evidence) if self.evidence else 1.0

    @property
    def whole(self) -> bool:
        """Every evidence turn is held verbatim."""
        return len(self.verbatim) == len(self.evidence)

    @classmethod
    def check(cls, request: RequestText, question: str,
              evidence: Sequence[tuple[str, str]]) -> EvidenceHeld:
        """Check ``evidence`` ((origin, text) of each turn) against ``request``."""
        verbatim = tuple(o for o, text in evidence if request.verbatim(text))
        close = tuple(o for o, text in evidence if o in verbatim or request.close(text))
        return cls(question, tuple(o for o, _ in evidence), verbatim, close)
