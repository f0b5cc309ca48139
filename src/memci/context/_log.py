"""An in-memory index of a session's log: enough to plan a build without reading messages.

For every non-system message it holds seq, role and tokens, cumulative token sums and the
page boundaries (a page opens at each user message; messages before the first user
message form page 1). Planning reads only this; message bodies are loaded on demand,
by seq range, through the store.

Invariants: positions are 0-based in log order; ``page_starts[k - 1]`` is the position of
the first message of page ``k``; ``cum[i]`` is the sum of tokens of positions ``< i``.
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate, compress, count, repeat
from operator import eq

__all__ = ["LogIndex"]


class LogIndex:
    """seq, role and tokens of every non-system message, with pages and token sums."""

    __slots__ = ("cum", "page_starts", "roles", "seqs", "tokens")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.roles: list[str] = []
        self.tokens: list[int] = []
        self.cum: list[int] = [0]
        self.page_starts: list[int] = []

    def __len__(self) -> int:
        return len(self.seqs)

    def append(self, seq: int, role: str, tokens: int) -> None:
        """Add the next message of the log."""
        if role == "user" or not self.page_starts:
            self.page_starts.append(len(self.seqs))
        self.seqs.append(seq)
        self.roles.append(role)
        self.tokens.append(tokens)
        self.cum.append(self.cum[-1] + tokens)

    def extend(self, seqs: list[int], roles: list[str], tokens: list[int]) -> None:
        """Add the next messages of the log, as :meth:`append` does one (a whole log, in C)."""
        if not seqs:
            return
        base = len(self.seqs)
        if not self.page_starts and roles[0] != "user":
            self.page_starts.append(base)
        self.page_starts += compress(count(base), map(eq, roles, repeat("user")))
        self.seqs += seqs
        self.roles += roles
        self.tokens += tokens
        self.cum += accumulate(tokens, initial=self.cum[-1])
        del self.cum[base]  # accumulate gave the running total it started from again

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
