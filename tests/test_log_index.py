"""The log index built in bulk (``LogIndex.extend``, what opening a session uses) is the one
built a message at a time (``append``, what a session's own adds use), in any split."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from memci.context._log import LogIndex

ROLES = st.sampled_from(["user", "assistant", "tool"])
MESSAGES = st.lists(st.tuples(ROLES, st.integers(0, 500)), max_size=60)


def _fields(log: LogIndex) -> tuple[Sequence[int], bytearray, Sequence[int], Sequence[int],
                                   Sequence[int]]:
    return log.seqs, log.roles, log.tokens, log.cum, log.page_starts


@given(MESSAGES, st.lists(st.integers(0, 60), max_size=4))
def test_extend_in_any_split_is_append_one_by_one(
    messages: list[tuple[str, int]], cuts: list[int],
) -> None:
    one_by_one, bulk = LogIndex(), LogIndex()
    for seq, (role, tokens) in enumerate(messages, start=1):
        one_by_one.append(seq, role, tokens)
    bounds = sorted({0, len(messages), *(min(c, len(messages)) for c in cuts)})
    for a, b in pairwise(bounds):
        part = messages[a:b]
        bulk.extend(list(range(a + 1, b + 1)), [r for r, _ in part], [t for _, t in part])
    assert _fields(bulk) == _fields(one_by_one)
    assert bulk.pages == one_by_one.pages
    if messages:
        assert bulk.page_span(bulk.pages) == one_by_one.page_span(one_by_one.pages)
