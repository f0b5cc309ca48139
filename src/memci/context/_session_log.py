"""A session's log as its builds see it: the followed branch, in memory, kept in step.

:class:`SessionLog` holds a :class:`~memci.context._log.LogIndex` of the branch the context
follows (seq, role and tokens as shown of every non-system message: a few integers each,
so planning reads no message), the log's tree (:mod:`memci.context._branches`), the system
prompt and the session's tool calls. It catches up with the store before every use
(:meth:`sync`: appends made by other processes are read, nothing else, while the log's
epoch is the one it read; a deletion by any process grows the epoch, and the copy is then
read again from the start), and loads message bodies on demand, by seq range, as a
context shows them (tool results as their views).

It keeps the newest stored messages it has seen (a run of consecutive seqs, as their rows
hold them: a large output's head): a stored message never changes, so the builds that read
the newest messages again and again (the newest unit, the current page, a tool output's
head) read them once.

Everything in it is derived from the store and rebuilt from it when a session is opened:
from the copy of the index the store keeps (:mod:`memci.context._log_copy`, saved by a
process that indexed many messages since the last copy) and the rows after it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import compress, count, repeat
from operator import is_not, lt, ne
from typing import Any, cast

from memci._dataclasses import replace
from memci.context._branches import (
    BRANCH_META,
    Branches,
    check_links,
    cut_fits,
    link_of,
    runs,
    seqs_between,
)
from memci.context._log import ASSISTANT, LogIndex
from memci.context._log_copy import LogCopy, decode_copy, encode_copy
from memci.context._tool_views import ToolViews
from memci.errors import ConfigError
from memci.memory import Hit
from memci.messages import Message, ToolCallPart
from memci.store import LOG_INDEX_KEY, ROW_HEAD_CHARS, LogColumns, SessionRecord, Store
from memci.text import language_of

__all__ = ["SessionLog"]

_KEPT_MESSAGES = 256  # the newest messages kept as loaded (their seqs consecutive)
# A copy of the index is saved once this many messages were indexed since the last one
# (a copy of 100k messages is ~0.7 MB: saved every few thousand, its cost is spread thin).
_COPY_AFTER = 4096


class SessionLog:
    """The followed branch of one session's log, with its system prompt and tool calls."""

    def __init__(self, store: Store, record: SessionRecord, views: ToolViews) -> None:
        self.store = store
        self.record = record
        self.views = views
        self.generation = 0  # grows whenever ``index`` is rebuilt (another branch, a deletion)
        self._empty(0)
        self.sync()

    def _empty(self, epoch: int) -> None:
        """Forget the copy (the log's ``epoch`` is the one it will be read at)."""
        self.epoch = epoch
        self.index = LogIndex()
        self.system: Message | None = None
        self.last_seq = 0
        self.held = 0  # how many messages the log holds (system ones too)
        self.raw_total = 0  # tokens of the followed branch as stored (the full history)
        self.has_tool_results = False
        # whether a tool result's view leaves part of its output out (costs less than it):
        # only then can artifact_get and grep on artifacts show the model something new
        self.hides_output = False
        self.calls: dict[str, ToolCallPart] = {}
        self.branches = Branches()  # the log's tree; ``index`` is the branch followed
        self._followed = 0  # positions of ``index`` checked against the branches
        self.at: int | None = None  # the message fork() continues from, until an add
        self._pending = (0, False)  # (newest seq, whether its calls await results)
        # every stored message with ``_kept_from <= seq <= _kept_to``, by seq
        self._kept: dict[int, Message] = {}
        self._kept_from, self._kept_to = 1, 0
        # the followed branch's messages as stored, whole, by seq (see whole())
        self._whole: dict[int, Message] = {}
        self._copied = 0  # messages in the index when its copy was last saved or read

    # -- keeping in step -----------------------------------------------------------------

    def sync(self, head: tuple[int, int] | None = None) -> bool:
        """Catch up with the store (other processes may have appended); True if it changed.

        When messages were deleted since it was read (another epoch), the copy is read
        again from the start. Raises UnknownSessionError when the session was deleted.
        ``head``: the log's ``(epoch, last seq)`` when the caller has just read it.
        """
        epoch, last = self.store.log_head(self.record) if head is None else head
        if epoch != self.epoch:
            self._empty(epoch)
            self.generation += 1
            if not last:
                return True
        elif last <= self.last_seq:
            return False
        if not self.last_seq and self._restore(epoch, last) and last <= self.last_seq:
            return True
        rows = self.store.log_columns(self.record, after=self.last_seq)
        if not rows.seqs:
            return True
        first, newest = rows.seqs[0], rows.seqs[-1]
        self.held += len(rows.seqs)
        self._keep_from_scratch(newest + 1)
        if "system" in rows.roles:
            rows = self._without_systems(rows)
        self._index(rows)
        self.last_seq = newest
        self._follow(self.store.branch_links(self.record, after=first - 1))
        self._save_copy()
        return True

    def _restore(self, epoch: int, last: int) -> bool:
        """Index the copy the store keeps, when it holds for this epoch; whether it did."""
        copy = decode_copy(self.store.context.get(self.record, LOG_INDEX_KEY))
        if copy is None or copy.epoch != epoch or not 0 < copy.last_seq <= last:
            return False
        self.held, self.raw_total = copy.held, copy.raw_total
        self.has_tool_results, self.hides_output = copy.has_tool_results, copy.hides_output
        self.index.fill(copy.seqs, copy.roles, copy.tokens, copy.cum, copy.page_starts)
        self.last_seq = copy.last_seq
        self._keep_from_scratch(copy.last_seq + 1)
        if copy.system_seq:
            self.system = self.load_seqs(copy.system_seq, copy.system_seq)[0]
        self._follow({})
        self._copied = len(self.index)
        return True

    def _save_copy(self) -> None:
        """Save a copy of the index when many messages were indexed since the last one.

        Only a log with no branch links is copied (the index is then the whole log).
        """
        if (len(self.index) - self._copied < _COPY_AFTER or self.branches.linked
                or self.off_branch or self.at is not None):
            return
        log = self.index
        copy = LogCopy(self.epoch, self.last_seq, self.held,
                       self.system.seq or 0 if self.system is not None else 0,
                       self.raw_total, self.has_tool_results, self.hides_output,
                       log.seqs, log.roles, log.tokens, log.cum, log.page_starts)
        self.store.context.put(self.record, LOG_INDEX_KEY, encode_copy(copy))
        self._copied = len(log)

    def _without_systems(self, rows: LogColumns) -> LogColumns:
        """``rows`` less system messages (not part of pages); the newest is the prompt."""
        keep = list(map(ne, rows.roles, repeat("system")))
        newest = rows.seqs[len(keep) - 1 - keep[::-1].index(False)]
        self.system = self.load(newest, newest)[0]
        return LogColumns(list(compress(rows.seqs, keep)), list(compress(rows.roles, keep)),
                          list(compress(rows.tokens, keep)), list(compress(rows.shown, keep)))

    def _index(self, rows: LogColumns) -> None:
        """Index messages read from the store (tool results as their views' tokens)."""
        if not rows.seqs:
            return
        shown: list[int | None] = rows.shown
        unseen = ([s for s, r, v in zip(rows.seqs, rows.roles, shown, strict=True)
                   if r == "tool" and v is None] if "tool" in rows.roles else [])
        if unseen:  # tool results with no view saved yet: made now
            made = {m.seq or 0: m.tokens or 0 for m in self.views.views_of(
                self.load(unseen[0], unseen[-1])) if m.role == "tool"}
            shown = [made.get(s, v) if v is None else v for s, v in zip(rows.seqs, shown,
                                                                        strict=True)]
        # A tool result counts as its view; any other message (no view) as itself.
        views = list(rows.tokens)
        for i in compress(count(), map(is_not, shown, repeat(None))):
            views[i] = cast(int, shown[i])
        self.raw_total += sum(rows.tokens)
        self.has_tool_results |= "tool" in rows.roles
        # Only a tool result's view can cost less than the message: C compares them all.
        self.hides_output |= any(map(lt, views, rows.tokens))
        self.index.extend(rows.seqs, rows.roles, views)

    def stored(self, stored: list[Message], linked: list[tuple[Message, Message]],
               rows: list[Message] | None = None) -> None:
        """Take in messages this process just stored (``linked``: tool results and their views).

        ``rows``: the messages as their rows hold them (a large output's head), kept. When
        another process appended in between, the gap is read from the store instead.
        """
        if not stored:
            return
        if stored[0].seq != self.last_seq + 1:
            self.sync()
            return
        self._keep(rows if rows is not None else stored)
        self.held += len(stored)
        for message in stored:
            for call in message.tool_calls:
                self.calls[call.id] = call
        shown = {m.seq: view.tokens or 0 for m, view in linked}
        for message in stored:
            if message.role == "system":
                self.system = message
                continue
            tokens = message.tokens or 0
            self.raw_total += tokens
            self.has_tool_results |= message.role == "tool"
            view_tokens = shown.get(message.seq, tokens)
            self.hides_output |= view_tokens < tokens
            self.index.append(message.seq or 0, message.role, view_tokens)
        self.last_seq = stored[-1].seq or self.last_seq
        self._follow({m.seq: after for m in stored
                      if m.seq is not None and (after := link_of(m.metadata)) is not None})
        self._save_copy()

    # -- branches ------------------------------------------------------------------------

    def fork(self, after: int) -> None:
        """Follow the branch that ends at ``after`` until the next message is added."""
        if after != 0 and after not in self.branches:
            raise ConfigError(
                f"after={after} is not the seq of a user, assistant or tool message of "
                f"session {self.record.name!r}: pass one of those seqs, or 0 for the start")
        self.at = after
        self._follow({})

    def linked(self, ready: list[Message]) -> list[Message]:
        """Messages to store, checked for branch links; after ``fork`` the first one links."""
        if self.at is not None:
            first = next((i for i, m in enumerate(ready) if m.role != "system"), None)
            if first is not None and BRANCH_META not in ready[first].metadata:
                message = ready[first]
                ready = [*ready[:first], replace(message, metadata={
                    **message.metadata, BRANCH_META: {"after": self.at}}), *ready[first + 1:]]
        if any(BRANCH_META in m.metadata for m in ready):
            check_links(ready, self.branches, self.last_seq)
        return ready

    @property
    def off_branch(self) -> bool:
        """Whether the log holds non-system messages that the followed branch leaves out."""
        return len(self.index) < len(self.branches)

    def _follow(self, links: Mapping[int, int]) -> None:
        """Record the messages just indexed in the tree; keep the index on the followed branch.

        Messages that continue the followed branch were appended to the index already;
        anything else (a link to an earlier message, a message added elsewhere while this
        session was on a forked branch) rebuilds the index from the store.
        """
        log = self.index
        tip = log.seqs[self._followed - 1] if self._followed else 0
        continues = True
        new = log.seqs[self._followed:]
        if not links and tip == self.branches.newest:
            self.branches.extend(new)  # the plain case, in bulk: each continues the last
            tip = new[-1] if new else tip
        else:
            for seq in new:
                parent = self.branches.add(seq, links.get(seq))
                continues = continues and parent == tip
                tip = seq
        if new:
            self.at = None  # a message was added: follow the newest from now on
        self._followed = len(log)
        target = self.at if self.at is not None else self.branches.newest
        if not continues or tip != target:
            self._rebuild(target)

    def _rebuild(self, tip: int) -> None:
        """Index the branch that ends at ``tip``."""
        keep = set(self.branches.chain(tip))
        log = LogIndex()
        raw = 0
        for r in self.store.log_rows(self.record):
            if r.seq in keep:
                raw += r.tokens
                log.append(r.seq, r.role, r.shown if r.shown is not None else r.tokens)
        self.index, self.raw_total, self._followed = log, raw, len(log)
        self.generation += 1

    def cut_holds(self, saved: Mapping[str, Any]) -> bool:
        """Whether a saved cut of a page holds on the followed branch."""
        page, hidden = int(saved["page"]), int(saved["hidden"])
        if not self.off_branch or hidden == 0:
            return True
        if not 0 < page <= self.index.pages:
            return False
        start, end = self.index.page_span(page)
        return start + 1 + hidden <= end and cut_fits(self.index, start + 1, hidden,
                                                        saved.get("through"))

    def on_branch(self, hit: Hit, archived: Callable[[int], bool]) -> bool:
        """Whether a retrieved hit is not this session's past that left the branch.

        Another branch of this very conversation is not an earlier conversation: its
        messages, and the episodes remembered of its archived pages, are not retrieved.
        ``archived`` says whether a page of the followed branch left the window.
        """
        if not self.off_branch:
            return True
        item = hit.item
        if item is None:
            return (hit.session != self.record.name
                    or bool(self.index.page_of_seq(hit.message.seq or 0)))
        if item.session_id != self.record.id or item.page is None:
            return True
        return archived(item.page)

    # -- reading -------------------------------------------------------------------------

    def load_seqs(self, first: int, last: int) -> list[Message]:
        """Stored messages with ``first <= seq <= last`` (large outputs: their heads)."""
        if self._kept_from <= first and last <= self._kept_to:
            kept = self._kept
            return [kept[seq] for seq in range(first, last + 1) if seq in kept]
        # A large tool output comes with the head its row holds: contexts show its view.
        loaded = self.store.messages(self.record, after=first - 1, upto=last, whole=False)
        if last >= self._kept_from - 1 and first < self._kept_from and last <= self._kept_to:
            # The run kept reaches down to ``first`` now.
            self._kept.update((m.seq or 0, m) for m in loaded)
            self._kept_from = first
            self._trim()
        return loaded

    def _keep(self, rows: list[Message]) -> None:
        """Keep messages just stored (their seqs follow the newest kept, or start anew)."""
        first = rows[0].seq or 0
        if first != self._kept_to + 1:
            self._keep_from_scratch(first)
        self._kept.update((m.seq or 0, m) for m in rows)
        self._kept_to = rows[-1].seq or self._kept_to
        self._trim()

    def _keep_from_scratch(self, first: int) -> None:
        """Keep nothing older than ``first`` (the store holds what this process did not see)."""
        self._kept = {}
        self._kept_from, self._kept_to = first, first - 1

    def _trim(self) -> None:
        if len(self._kept) > _KEPT_MESSAGES:
            for seq in sorted(self._kept)[:len(self._kept) - _KEPT_MESSAGES]:
                del self._kept[seq]
            self._kept_from = min(self._kept)

    def load(self, first: int, last: int) -> list[Message]:
        """Messages with ``first <= seq <= last`` on the followed branch (and system ones)."""
        if not self.off_branch:
            return self.load_seqs(first, last)
        out: list[Message] = []
        for a, b in runs(seqs_between(self.index, first, last)):
            out += [m for m in self.load_seqs(a, b)
                    if m.role == "system" or self.index.page_of_seq(m.seq or 0)]
        return out

    def load_views(self, first: int, last: int) -> list[Message]:
        """Messages as a context shows them: tool results as their artifacts' views."""
        return self.views.views_of(self.load(first, last))

    def whole(self) -> list[Message]:
        """The followed branch as stored: every non-system message whole, oldest first.

        What an agent without memci sends (tool outputs raw, never their views). Read once
        a message and kept while the caller asks (a request that carries the whole history
        holds them anyway); :meth:`forget_whole` lets them go.
        """
        seqs = self.index.seqs
        missing = [seq for seq in seqs if seq not in self._whole]
        for seq in missing:
            kept = self._kept.get(seq)
            if kept is not None and _is_whole(kept):
                self._whole[seq] = kept
        missing = [seq for seq in missing if seq not in self._whole]
        if missing:
            wanted = set(missing)
            for message in self.store.messages(self.record, after=missing[0] - 1,
                                               upto=missing[-1]):
                if message.seq in wanted:
                    self._whole[message.seq] = message
        return [self._whole[seq] for seq in seqs]

    def forget_whole(self) -> None:
        """Let the messages :meth:`whole` kept go (the history no longer fits a request)."""
        self._whole = {}

    def call_pending(self) -> bool:
        """Whether the newest assistant message made tool calls not yet all answered."""
        roles = self.index.roles
        if not roles or roles[-1] != ASSISTANT:
            return False
        seq = self.index.seqs[-1]
        if self._pending[0] != seq:  # a stored message never changes: once per message
            message = self.load_seqs(seq, seq)
            self._pending = (seq, bool(message and message[0].tool_calls))
        return self._pending[1]

    def language(self) -> tuple[str, bool]:
        """The conversation's language from its first four messages; final once they exist.

        Derived from the log alone, so it is the same after a reopen.
        """
        if not len(self.index):
            return "en", False
        last = self.index.seqs[min(3, len(self.index) - 1)]
        texts = [m.content for m in self.load(self.index.seqs[0], last)
                 if m.role != "system"]
        return language_of(texts), len(self.index) >= 4

    def tool_results_of(self, seqs: Sequence[int]) -> list[Message]:
        """The stored tool results among ``seqs``."""
        wanted = set(seqs)
        return [m for m in self.load_seqs(seqs[0], seqs[-1])
                if m.role == "tool" and m.seq in wanted] if seqs else []


def _is_whole(message: Message) -> bool:
    """Whether a message as its row holds it is the whole message (not an output's head)."""
    result = message.tool_result
    return result is None or len(result.content) < ROW_HEAD_CHARS
