"""Counts made ahead: memci's own tool schemas, as the estimate counts them.

The estimate counts a text it never saw piece by piece, reading the parts of its table the
pieces need (see :mod:`memci.tokens._estimate`). In a fresh process nothing is seen yet:
memci's tool schemas (about 3 KB of JSON, 800 tokens, counted by every first build that
offers them) took 6-8 ms of a first build's 50-70. Their counts are made with memci
(``python -m tests.known_counts --write`` writes :mod:`memci.tokens._known`;
``tests/test_known_counts.py`` checks every set memci offers is there, with the count the
estimate gives now) and read here by the text's digest. Any other text, and any other
tokenizer, is counted.
"""

from __future__ import annotations

import zlib

from memci.tokens import EstimateTokenizer, Tokenizer
from memci.tokens._known import COUNTS

__all__ = ["count_ahead", "text_key"]


def text_key(text: str) -> str:
    """The key of ``text`` in the counts made ahead: its CRC-32 and Adler-32, 64 bits.

    Not a hash of :mod:`hashlib`: a build that stores no tool output imports none.
    """
    data = text.encode("utf-8")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def count_ahead(tokenizer: Tokenizer, text: str) -> int:
    """``tokenizer.count(text)``, read from the counts made ahead when they hold ``text``."""
    if isinstance(tokenizer, EstimateTokenizer):  # its count, not a name
        found = COUNTS.get(text_key(text))
        if found is not None:
            return found
    return tokenizer.count(text)
