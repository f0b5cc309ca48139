"""A copy of a session's planning index kept in the store: opening a session reads one value.

A process that opens a session indexes its log (seq, role and tokens as shown of every
non-system message, see :class:`~memci.context._session_log.SessionLog`). Read as rows,
that is one row a message (100k messages: ~140 ms CPU). :class:`LogCopy` is what the index
holds after the rows up to ``last_seq``, saved under :data:`~memci.store.LOG_INDEX_KEY` as
one JSON value made to decode in C: seqs as runs of consecutive seqs, roles as the
index's letters (one a message), and its other int columns (tokens, their running sums,
where pages start) as little-endian integers of the index's arrays' widths in base64,
read straight into arrays (nothing made per message but its seq).

Invariants: a copy is a cache, derived from the log alone and never the only record of
anything. It holds for the log's ``epoch`` it was made at (any deletion grows the epoch,
and the copy is then ignored), for the messages up to its ``last_seq`` (later ones are read
as rows), and only for a log whose every message continues the one before it (no branch
links): the index is then the whole log, in seq order. A value of another format, or one
that does not decode, is ignored like a stale one: the rows are read instead.
"""

from __future__ import annotations

import sys
from array import array
from base64 import b64decode, b64encode
from binascii import Error as Base64Error
from collections.abc import Sequence
from itertools import chain
from typing import Any

from memci._records import NamedTuple
from memci.context._log import ROLE_LETTERS, USER

__all__ = ["LogCopy", "decode_copy", "encode_copy"]

# Grows when what a copy holds, or how an index counts a message, changes: an older copy
# is then ignored and made again.
# 1: the sums and pages not kept; 1 and 2: roles coded by a list of their names.
_FORMAT = 3


class LogCopy(NamedTuple):
    """A session's planning index as of ``last_seq``, with the sums kept beside it."""

    epoch: int
    last_seq: int
    held: int  # messages stored up to last_seq, system ones too
    system_seq: int  # the newest system message (the prompt), 0 for none
    raw_total: int  # tokens of the indexed messages as stored
    has_tool_results: bool
    hides_output: bool
    seqs: array[int]
    roles: bytearray  # a letter a message (see LogIndex)
    tokens: array[int]  # as shown: a tool result's view's
    cum: array[int]  # the running sums of tokens, from 0 (one more than the seqs)
    page_starts: array[int]  # the positions that open a page


def encode_copy(copy: LogCopy) -> dict[str, Any]:
    """The JSON value that stores ``copy``."""
    return {"format": _FORMAT, "epoch": copy.epoch, "last_seq": copy.last_seq,
            "held": copy.held, "system_seq": copy.system_seq, "raw_total": copy.raw_total,
            "has_tool_results": copy.has_tool_results, "hides_output": copy.hides_output,
            "runs": _runs(copy.seqs), "roles": copy.roles.decode("ascii"),
            "tokens": _packed(copy.tokens, "i"), "cum": _packed(copy.cum, "q"),
            "page_starts": _packed(copy.page_starts, "i")}


def decode_copy(value: Any) -> LogCopy | None:
    """The copy ``value`` stores; None when there is none or it is not of this format."""
    if not isinstance(value, dict) or value.get("format") != _FORMAT:
        return None
    try:
        runs = value["runs"]
        seqs = array("q")
        seqs.fromlist(list(chain.from_iterable(
            range(first, first + n) for first, n in zip(runs[::2], runs[1::2], strict=True))))
        copy = LogCopy(int(value["epoch"]), int(value["last_seq"]), int(value["held"]),
                       int(value["system_seq"]), int(value["raw_total"]),
                       bool(value["has_tool_results"]), bool(value["hides_output"]),
                       seqs, bytearray(value["roles"], "ascii"),
                       _unpacked(value["tokens"], "i"), _unpacked(value["cum"], "q"),
                       _unpacked(value["page_starts"], "i"))
    except (KeyError, TypeError, ValueError, Base64Error):
        return None
    n = len(copy.seqs)
    # What a damaged or cut value breaks (the sums and pages are taken as they are).
    pages = copy.roles.count(USER) + (1 if n and copy.roles[0] != USER else 0)
    if not (len(copy.roles) == len(copy.tokens) == n == len(copy.cum) - 1
            and not copy.roles.translate(None, ROLE_LETTERS)
            and copy.cum[0] == 0 and len(copy.page_starts) == pages
            and (not pages or (copy.page_starts[0] == 0 and copy.page_starts[-1] < n))):
        return None
    return copy


def _runs(seqs: Sequence[int]) -> list[int]:
    """``seqs`` (increasing) as ``[first, count, first, count, …]`` of consecutive runs."""
    out: list[int] = []
    for seq in seqs:
        if out and out[-2] + out[-1] == seq:
            out[-1] += 1
        else:
            out += (seq, 1)
    return out


def _packed(values: array[int], typecode: str) -> str:
    """Ints as little-endian integers of array ``typecode`` (``i``: 32 bits) in base64."""
    if values.typecode != typecode or sys.byteorder == "big":
        values = _little_endian(array(typecode, values))
    return b64encode(values).decode("ascii")


def _unpacked(text: str, typecode: str) -> array[int]:
    """:func:`_packed`'s ints back (a length not of whole integers raises)."""
    values = array(typecode)
    values.frombytes(b64decode(text, validate=True))
    return _little_endian(values)


def _little_endian(values: array[int]) -> array[int]:
    """``values`` in little-endian order (a copy may be read on another machine)."""
    if sys.byteorder == "big":
        values.byteswap()
    return values
