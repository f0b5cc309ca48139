"""Token counting: an offline estimate, or exact counts through tiktoken.

:func:`get_tokenizer` returns a :class:`Tokenizer` by name:

- ``"estimate"`` — no dependency, offline: cl100k_base's own count, in pure Python from its
  merge ranks (package data); a piece of text longer than 256 bytes with no space or
  punctuation in it is merged in parts, and may count a little more (see ``_estimate`` and
  ``bench/bench_tokens.py``). The count of no model but cl100k_base's models: an estimate
  for the others;
- ``"cl100k_base"``, ``"o200k_base"`` — exact, through tiktoken, loaded without network
  (see ``_exact``); :class:`~memci.errors.TokenizerUnavailableError` when the encoding is
  not on disk, :class:`~memci.errors.MissingExtraError` when tiktoken is not installed.

``provider`` ("openai" or "anthropic") chooses the framing added by ``count_message``
(see ``_overhead``). Tokenizers are cached: the same arguments give the same object.
:func:`tokenizer_for_model` names the encoding of a model; :func:`available` says whether a
name can be loaded here, so an engine can fall back to ``"estimate"``.

Importing this package never imports tiktoken.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Final

from memci._lazy import LazyPattern
from memci.errors import ConfigError, MissingExtraError, TokenizerUnavailableError
from memci.messages import Message
from memci.tokens._base import Tokenizer
from memci.tokens._estimate import estimate_lines, estimate_tokens
from memci.tokens._exact import EXACT, ExactTokenizer, load_encoding
from memci.tokens._overhead import PROVIDERS, Overhead, count_message, overhead_for

__all__ = [
    "NAMES",
    "PROVIDERS",
    "EstimateTokenizer",
    "ExactTokenizer",
    "Overhead",
    "Tokenizer",
    "available",
    "count_messages",
    "estimate_tokens",
    "get_tokenizer",
    "overhead_for",
    "tokenizer_for_model",
]

NAMES: Final = ("estimate", *EXACT)
"""Every name :func:`get_tokenizer` accepts."""


class EstimateTokenizer:
    """The offline estimator (:func:`estimate_tokens`) with ``overhead`` for messages."""

    name = "estimate"

    def __init__(self, overhead: Overhead) -> None:
        self.overhead = overhead

    def count(self, text: str) -> int:
        """cl100k_base's tokens of ``text`` (see :func:`estimate_tokens`)."""
        return estimate_tokens(text)

    def count_lines(self, lines: Sequence[str]) -> int:
        """The count of ``lines`` joined by newlines, summed from the lines' kept estimates."""
        return estimate_lines(lines)

    def count_message(self, message: Message) -> int:
        """Estimated tokens of ``message`` including the provider's framing."""
        return count_message(estimate_tokens, message, self.overhead)

    def __repr__(self) -> str:
        return f"EstimateTokenizer(provider={self.overhead.provider!r})"


_lock = threading.Lock()
_cache: dict[tuple[str, str], Tokenizer] = {}


def get_tokenizer(name: str, *, provider: str = "openai") -> Tokenizer:
    """The tokenizer called ``name`` (one of :data:`NAMES`), framing messages for ``provider``.

    Raises :class:`~memci.errors.ConfigError` for an unknown name or provider,
    :class:`~memci.errors.TokenizerUnavailableError` for an exact encoding that is not on
    disk, :class:`~memci.errors.MissingExtraError` when tiktoken is not installed.
    """
    key = (name, provider)
    found = _cache.get(key)
    if found is not None:
        return found
    if name not in NAMES:
        raise ConfigError(f"unknown tokenizer {name!r}; valid names: {', '.join(NAMES)}")
    overhead = overhead_for(provider)
    with _lock:
        found = _cache.get(key)
        if found is None:
            found = (
                EstimateTokenizer(overhead)
                if name == "estimate"
                else ExactTokenizer(name, overhead)
            )
            _cache[key] = found
    return found


def available(name: str) -> bool:
    """Whether :func:`get_tokenizer` can load ``name`` here (never downloads, never raises)."""
    if name == "estimate":
        return True
    if name not in EXACT:
        return False
    try:
        load_encoding(name)
    except (TokenizerUnavailableError, MissingExtraError):
        return False
    return True


_O200K: Final = LazyPattern(r"(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o[134])\b")
_CL100K: Final = LazyPattern(r"(gpt-4|gpt-3\.5|gpt-35|text-embedding-3|text-embedding-ada-002)")


def tokenizer_for_model(model: str) -> str:
    """Return the tokenizer name for ``model``.

    "o200k_base" for the gpt-4o, gpt-4.1, o1, o3 and o4 families (and later OpenAI models),
    "cl100k_base" for gpt-4 and gpt-3.5, else "estimate". A provider prefix
    ("openai/gpt-4o") is ignored. The name may not be :func:`available` here.
    """
    base = model.strip().lower().rsplit("/", 1)[-1]
    if _O200K.match(base):
        return "o200k_base"
    if _CL100K.match(base):
        return "cl100k_base"
    return "estimate"


def count_messages(tokenizer: Tokenizer, messages: Iterable[Message]) -> int:
    """Return the tokens of a request made of ``messages``.

    That is every ``count_message`` plus the reply priming of the tokenizer's provider
    (OpenAI's 3 tokens for a tokenizer that does not say).
    """
    overhead = getattr(tokenizer, "overhead", None)
    priming = overhead.reply_priming if isinstance(overhead, Overhead) else 3
    return sum(tokenizer.count_message(m) for m in messages) + priming
