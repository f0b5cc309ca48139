"""What a request holds: is a turn in it (strict, fuzzy), and how many tokens it costs.

One referee for every system, so no system is measured by its own rules:

- **strict**: the turn's text, whitespace collapsed, is a substring of one message of the
  request (its text, whitespace collapsed) — the turn is there verbatim, whole or inside a
  longer message (a contents page line, a retrieval section, a recalled page);
- **fuzzy**: at least 60% of the turn's distinct content words are inside ONE message of
  the request, within a run of at most twice their number of that message's content words.
  Content words are lowercased words with the English stopwords of :data:`STOPWORDS`
  removed, and Chinese/Japanese text as character bigrams (a lone character as itself). A
  turn with no content word is fuzzy-found exactly when it is strictly found. Strict implies
  fuzzy;
- **tokens sent**: cl100k_base (tiktoken) over the whole request as OpenAI bills it: per
  message 4 tokens of framing, its text, its ``name`` (+1), each tool call's name and
  arguments (+10), plus 3 for the reply priming, plus the JSON of the ``tools`` list.

Counts are cached by text, so counting the same message twice costs one encode.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import memci

__all__ = [
    "STOPWORDS",
    "Request",
    "content_words",
    "count_text",
    "fuzzy_in",
    "message_text",
    "message_tokens",
    "normalize",
    "request_tokens",
]

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

_WORD = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+"  # CJK run -> bigrams
    r"|[0-9a-z\u00c0-\u024f\uac00-\ud7af]+(?:['’][a-z]+)?"  # a word, with its contraction
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Whitespace runs collapsed to one space, ends stripped."""
    return _SPACE.sub(" ", text).strip()


def content_words(text: str) -> list[str]:
    """The content words of ``text`` in order (see the module docstring)."""
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group().replace("’", "'")
        if _CJK.match(word):
            out.extend([word] if len(word) == 1 else
                       [word[i:i + 2] for i in range(len(word) - 1)])
        elif word not in STOPWORDS:
            out.append(word)
    return out


def fuzzy_in(words: Sequence[str], sequence: Sequence[str], share: float = 0.6) -> bool:
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


def message_text(message: Mapping[str, Any]) -> str:
    """The text of an OpenAI chat message (string content or text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, Mapping) and p.get("type") in ("text", "input_text"))
    return ""


@lru_cache(maxsize=200_000)
def count_text(text: str) -> int:
    """cl100k_base tokens of ``text``."""
    return memci.tokens.get_tokenizer("cl100k_base").count(text)


def message_tokens(message: Mapping[str, Any]) -> int:
    """Tokens of one OpenAI chat message, framing included (see the module docstring)."""
    total = 4 + count_text(message_text(message))
    name = message.get("name")
    if name:
        total += count_text(str(name)) + 1
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        total += 10 + count_text(str(function.get("name", "")))
        total += count_text(str(function.get("arguments", "")))
    return total


def request_tokens(payload: Mapping[str, Any]) -> int:
    """Tokens of a whole ``{"messages": [...], "tools": [...]}`` request."""
    total = 3 + sum(message_tokens(m) for m in payload["messages"])
    tools = payload.get("tools")
    if tools:
        total += count_text(json.dumps(tools, ensure_ascii=False))
    return total


class Request:
    """One request, prepared once for checking many turns against it.

    Messages whose text is ``question`` (the question just asked, which every system
    sends) are not searched: the question is not its own evidence, and its words would
    fuzzy-match short evidence turns for every system alike.
    """

    def __init__(self, payload: Mapping[str, Any], question: str | None = None) -> None:
        asked = normalize(question) if question else None
        texts = [message_text(m) for m in payload["messages"]]
        texts = [t for t in texts if normalize(t) != asked]
        self.texts = [normalize(t) for t in texts]
        self.words = [content_words(t) for t in texts]

    def strict(self, turn_text: str) -> bool:
        """The turn is verbatim inside one message."""
        needle = normalize(turn_text)
        return bool(needle) and any(needle in t for t in self.texts)

    def fuzzy(self, turn_text: str) -> bool:
        """Strictly found, or 60% of its content words close together in one message."""
        if self.strict(turn_text):
            return True
        words = content_words(turn_text)
        return bool(words) and any(fuzzy_in(words, seq) for seq in self.words)
