"""An in-memory index of a session's log: enough to plan a build without reading messages.

For every non-system message it holds seq, role and tokens, cumulative token sums and the
page boundaries (a page opens at each user message; messages before the first user
message form page 1). Planning reads only this; message bodies are loaded on demand,
by seq range, through the store.

Invariants: positions are 0-based in log order; ``page_starts[k - 1]`` is the position of
the first message of page ``k``; ``cum[i]`` is the sum of tokens of positions ``< i``.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from itertools import accumulate, compress, count, repeat
from operator import eq

__all__ = ["ASSISTANT", "ROLE_LETTERS", "TOOL", "USER", "LogIndex", "role_name"]

#: A message's role as :attr:`LogIndex.roles` holds it: one ASCII letter.
ROLE_LETTERS = b"uat"
USER, ASSISTANT, TOOL = ROLE_LETTERS
_CODES = {"user": USER, "assistant": ASSISTANT, "tool": TOOL}
_NAMES = {code: name for name, code in _CODES.items()}


def role_name(code: int) -> str:
    """The name of a role as :attr:`LogIndex.roles` holds it."""
    return _NAMES[code]


class LogIndex:
    """seq, role and tokens of every non-system message, with pages and token sums."""

    __slots__ = ("cum", "page_starts", "roles", "seqs", "tokens")

    def __init__(self) -> None:
        # The int columns are arrays: a list of a 100k-message log is 100k references
        # the garbage collector walks in every pass while it is young (~1 ms a column a
        # pass, ~7 ms of a fresh process's first build at 100k); an array holds none.
        # A message's tokens and a position fit 32 bits; seqs and sums get 64. The roles
        # are a letter each (USER, ASSISTANT, TOOL), the page starts where a USER is.
        self.seqs = array("q")
        self.roles = bytearray()
        self.tokens = array("i")
        self.cum = array("q", (0,))
        self.page_starts = array("i")

    def __len__(self) -> int:
        return len(self.seqs)

    def append(self, seq: int, role: str, tokens: int) -> None:
        """Add the next message of the log."""
        if role == "user" or not self.page_starts:
            self.page_starts.append(len(self.seqs))
        self.seqs.append(seq)
        self.roles.append(_CODES[role])
        self.tokens.append(tokens)
        self.cum.append(self.cum[-1] + tokens)

    def extend(self, seqs: list[int], roles: list[str], tokens: list[int]) -> None:
        """Add the next messages of the log, as :meth:`append` does one (a whole log, in C).

        The columns are made as lists and taken in by ``fromlist`` (an array's ``extend``
        of an iterator converts each item apart: ~2x slower).
        """
        if not seqs:
            return
        base = len(self.seqs)
        if not self.page_starts and roles[0] != "user":
            self.page_starts.append(base)
        self.page_starts.fromlist(list(compress(count(base), map(eq, roles, repeat("user")))))
        self.seqs.fromlist(seqs)
        self.roles += bytes(map(_CODES.__getitem__, roles))
        self.tokens.fromlist(tokens)
        self.cum.fromlist(list(accumulate(tokens, initial=self.cum[-1])))
        del self.cum[base]  # accumulate gave the running total it started from again

    def fill(self, seqs: array[int], roles: bytearray, tokens: array[int], cum: array[int],
             page_starts: array[int]) -> None:
        """Take a whole log's columns as they are (an empty index; a saved copy's).

        The caller vouches for them: ``cum`` the running sums of ``tokens`` from 0, and
        ``page_starts`` the positions :meth:`append` would have opened pages at.
        """
        assert not self.seqs, "fill() takes a whole log: the index must be empty"
        self.seqs, self.roles, self.tokens = seqs, roles, tokens
        self.cum, self.page_starts = cum, page_starts

    @property
    def pages(self) -> int:
        """How many pages the log holds (the newest page's number)."""
        return len(self.page_starts)

    def page_span(self, page: int) -> tuple[int, int]:
        """Positions ``[start, end)`` of page ``page`` (1-based)."""
        start = self.page_starts[page - 1]
        end = self.page_starts[page] if page < len(self.page_starts) else len(self.seqs)
        return start, end

    def page_tokens(self, page: int) -> int:
        """Tokens of page ``page``."""
        start, end = self.page_span(page)
        return self.cum[end] - self.cum[start]

    def span_tokens(self, start: int, end: int) -> int:
        """Tokens of positions ``[start, end)``."""
        return self.cum[end] - self.cum[start]

    def page_seqs(self, page: int) -> tuple[int, int]:
        """First and last seq of page ``page``."""
        start, end = self.page_span(page)
        return self.seqs[start], self.seqs[end - 1]

    def page_of_position(self, position: int) -> int:
        """The number of the page holding ``position``."""
        return bisect_right(self.page_starts, position)

    def page_of_seq(self, seq: int) -> int:
        """The number of the page holding the message ``seq`` (0 for a system message)."""
        position = bisect_right(self.seqs, seq) - 1
        if position < 0 or self.seqs[position] != seq:
            return 0
        return self.page_of_position(position)

    def total(self) -> int:
        """Tokens of the whole log (system messages aside)."""
        return self.cum[-1]
