"""Branches of a conversation: which stored messages a session's context follows (pure).

The log is append-only, yet a conversation branches: a reply is regenerated, a message is
edited, a reply never reached the client and the turn is asked again. Every non-system
message continues one earlier message, its *parent*: the one its metadata names with
``memci_branch: {"after": seq}`` (``0``: the start of the conversation), or else the
non-system message stored just before it. So the log is a tree, and the *branch* of a
message is that message and the chain of its parents. A session's context follows one
branch: the newest message's, or the one :meth:`memci.Session.fork` chose (until the next
message is added, which then records the link).

System messages are not part of branches: the newest one is the system prompt of all.

Invariants: a parent is 0 or an earlier non-system seq, so a branch is in increasing seq
order; a link that names anything else is refused when the message is added
(:func:`check_links`) and ignored when read (:meth:`Branches.add`), so a log is always
read the same way.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from memci.context._log import LogIndex
from memci.context._paged import PageRow
from memci.errors import InvalidMessageError
from memci.messages import Message

__all__ = ["BRANCH_META", "Branches", "check_links", "cut_fits", "link_of", "pages_on", "runs",
           "seq_at", "seqs_between"]

BRANCH_META = "memci_branch"

# Messages between two seqs of a branch are read with one query when the gap is this small
# (system messages, a short regenerated reply); a larger gap is another query.
_GAP = 16


def link_of(metadata: Mapping[str, Any]) -> int | None:
    """The seq a message's metadata says it continues; None when it names none."""
    value = metadata.get(BRANCH_META)
    if not isinstance(value, Mapping):
        return None
    after = value.get("after")
    if isinstance(after, bool) or not isinstance(after, int):
        return None
    return after


class Branches:
    """The non-system seqs of a log and the links among them, in seq order."""

    __slots__ = ("_links", "_seqs", "linked")

    def __init__(self) -> None:
        self._seqs = array("q")  # no references for the garbage collector to walk (LogIndex)
        self._links: dict[int, int] = {}
        self.linked = False  # some message continues another than the one before it

    def __len__(self) -> int:
        return len(self._seqs)

    def __contains__(self, seq: object) -> bool:
        if not isinstance(seq, int):
            return False
        i = bisect_left(self._seqs, seq)
        return i < len(self._seqs) and self._seqs[i] == seq

    @property
    def newest(self) -> int:
        """The newest non-system seq (0 when there is none)."""
        return self._seqs[-1] if self._seqs else 0

    def add(self, seq: int, after: int | None) -> int:
        """Record the next non-system message and the seq it links to; return its parent."""
        parent = self.newest
        if (after is not None and after != parent and after < seq
                and (after == 0 or after in self)):
            parent = after
            self._links[seq] = after
            self.linked = True
        self._seqs.append(seq)
        return parent

    def extend(self, seqs: Sequence[int]) -> None:
        """Record next non-system messages that each continue the one before (no links)."""
        self._seqs.extend(seqs)

    def chain(self, tip: int) -> list[int]:
        """The branch that ends at ``tip`` (a recorded seq, or 0 for none), oldest first."""
        out: list[int] = []
        if tip == 0:
            return out
        i = bisect_left(self._seqs, tip)
        if i >= len(self._seqs) or self._seqs[i] != tip:
            raise KeyError(tip)
        while i >= 0:
            seq = self._seqs[i]
            out.append(seq)
            parent = self._links.get(seq)
            if parent is None:
                i -= 1
            elif parent == 0:
                break
            else:
                i = bisect_left(self._seqs, parent)
        out.reverse()
        return out


def check_links(messages: Sequence[Message], branches: Branches, last_seq: int) -> None:
    """Refuse ``memci_branch`` metadata that names no earlier message (before any write).

    ``messages`` are about to be stored after ``last_seq``; a link may name a message of
    the session or an earlier one of the same batch.
    """
    seq = last_seq
    batch: set[int] = set()
    for message in messages:
        seq += 1
        if BRANCH_META in message.metadata:
            after = link_of(message.metadata)
            if (message.role == "system" or after is None or after < 0 or after >= seq
                    or not (after == 0 or after in branches or after in batch)):
                raise InvalidMessageError(
                    f"metadata {BRANCH_META!r} is memci's branch link: on a user, assistant "
                    "or tool message it must be {'after': seq} naming an earlier non-system "
                    "message of this session (or 0 for the start); to branch, call "
                    "session.fork(after=seq) and add the message")
        if message.role != "system":
            batch.add(seq)


def runs(seqs: Sequence[int]) -> Iterator[tuple[int, int]]:
    """``(first, last)`` ranges covering the increasing ``seqs``, split at large gaps."""
    if not seqs:
        return
    first = last = seqs[0]
    for seq in seqs[1:]:
        if seq - last > _GAP:
            yield first, last
            first = seq
        last = seq
    yield first, last


def seqs_between(log: LogIndex, first: int, last: int) -> list[int]:
    """The seqs of ``log`` with ``first <= seq <= last``."""
    return log.seqs[bisect_left(log.seqs, first):bisect_right(log.seqs, last)].tolist()


def seq_at(log: LogIndex, position: int) -> int:
    """The seq at ``position`` of ``log`` (0 when there is no such position)."""
    return log.seqs[position] if 0 <= position < len(log) else 0


def pages_on(rows: Sequence[PageRow], log: LogIndex) -> list[PageRow]:
    """The saved page states that describe pages of ``log`` (a branch) exactly.

    A page is known by its number and its first and last seq; a state saved on another
    branch names other seqs (or a page the branch does not have) and is left out.
    """
    return [r for r in rows
            if r.page <= log.pages and log.page_seqs(r.page) == (r.first_seq, r.last_seq)]


def cut_fits(log: LogIndex, start: int, hidden: int, through: object) -> bool:
    """Whether ``hidden`` messages after position ``start`` end at seq ``through`` in ``log``.

    A saved cut (of a page, or of the summarized start of the log) holds on a branch only
    when the messages it covers are that branch's; ``through`` None (saved before cuts
    recorded it) accepts any cut that fits.
    """
    if hidden < 0 or start + hidden > len(log) or (hidden and start < 0):
        return False
    if through is None or hidden == 0:
        return True
    return seq_at(log, start + hidden - 1) == through
