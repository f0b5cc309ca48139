"""Deleting what must go, with everything derived from it: messages, sessions, users.

:class:`Deleter` turns a request (retract these messages, clear a session, delete it,
erase a user) into one transaction over the store's :class:`~memci.store.Eraser`, with
what the store alone cannot know: which pages, notes, context-pool entries, memory items,
summary jobs and cached values were derived from what goes. After the commit it removes
the artifact files no row names any more and forgets what this process cached.

Invariants:

- one deletion is one transaction (``store.atomic()``): all of it or nothing, and its
  audit record (ids and counts, never content) commits with it;
- derived state stays consistent: a retract drops the saved rows of the page holding the
  first message that goes and of every later page (they are plainly active again, and
  the next build archives them anew, with new contents entries, episodes and summaries),
  the items, summary jobs and notebook lines derived from them, the context pool's chat
  history (made again from the evicted pages that stay), and the cached retrieval of
  every session of the user; a clear drops all of it;
- every process notices: the session's log epoch and context version grow (its copies
  are read again), and the store's erasure epoch grows (caches keyed on memory's
  version miss);
- a tool call goes with its results: retracting an assistant message retracts the tool
  results that answer its calls (a result without its call cannot be sent to a model);
- a committed deletion is reported as committed: what runs after the commit (removing
  files, the scrub) never raises; when it fails, the erasure's scrub stays pending
  (:attr:`~memci.store.Erasure.scrubbed` None) for the next scrub to cover;
- ``erase_user`` and ``delete_session`` end with a scrub (:meth:`Deleter.scrub`), unless
  they removed nothing: no byte of what went stays in the store's files, and no other
  writer waits on it long (a large session's search entries go ahead, in short steps,
  and :meth:`~memci.store.Eraser.scrub` holds no writer long).
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memci._dataclasses import replace
from memci._lazy import LazyLogger
from memci._records import NamedTuple
from memci.context._session_log import SessionLog
from memci.errors import MemciError, StoreError, UnknownMessageError, UnknownSessionError
from memci.memory import Memory
from memci.messages import Message
from memci.store import LOG_INDEX_KEY, SessionRecord, Store
from memci.workspace import ArtifactStore, WorkState

if TYPE_CHECKING:
    from memci.store import Erasure, Removed

__all__ = ["Deleter"]

logger = LazyLogger("memci")

# The working state's kinds, and the keys of context values that hold derived text.
_WORK_KINDS = ("pin", "plan", "note", "memo")
# How many seqs after a deleted message are looked at for search contexts quoting it.
_QUOTED_SCAN = 512
# Search entries deleted ahead of a deletion: entries in the first step, at most in one,
# and how long a step aims to hold the store (see Deleter._unindex).
_STEP_FIRST, _STEP_MOST, _STEP_SECONDS = 32, 4096, 0.05


def _now() -> datetime:
    return datetime.now(UTC)


def _pointer_ids(item: Mapping[str, Any]) -> set[str]:
    """Artifact ids an item of the working state cites (``artifact:<id>``)."""
    found: set[str] = set()
    for field in ("artifact_ref", "source"):
        value = item.get(field)
        if isinstance(value, str) and value.startswith("artifact:"):
            found.add(value.partition(":")[2])
    return found


class _Retraction(NamedTuple):
    """What one retract removes and what it must drop with it."""

    seqs: list[int]
    first_page: int  # the first page whose saved state goes (beyond ``pages``: none)
    pages: int  # pages of the followed branch before the retract
    call_ids: set[str]  # calls answered by the tool results that go
    artifacts: set[str]  # artifacts shown for the tool results that go


class Deleter:
    """Deletions over one store, its artifact files and the caches of this process."""

    def __init__(
        self, store: Store, artifacts: ArtifactStore, memory: Callable[[], Memory],
        forget_caches: Callable[[], None],
    ) -> None:
        self.store = store
        self.artifacts = artifacts
        self.memory = memory
        self.forget_caches = forget_caches

    # -- messages ------------------------------------------------------------------------

    def retract(
        self, record: SessionRecord, log: SessionLog, seqs: Collection[int], *, actor: str,
    ) -> tuple[list[Message], Erasure]:
        """Delete the messages ``seqs`` (with the results of their tool calls).

        Raises UnknownMessageError, deleting nothing, when the session has no message
        with one of the seqs. Returns the messages deleted, oldest first.
        """
        log.sync()
        found = self._messages(record, log, seqs)
        plan = self._plan(log, found)
        store, eraser = self.store, self.store.eraser
        state = store.context.load(record)
        values: dict[str, Any] = {}
        # The copy of the log's index holds the deleted messages' seqs, roles and tokens.
        forget = ["retrieval", LOG_INDEX_KEY]
        cut = state.values.get("paged.cut")
        if isinstance(cut, Mapping) and int(cut.get("page", 0)) >= plan.first_page:
            forget.append("paged.cut")
        summary = state.values.get("summarize")
        if isinstance(summary, Mapping) and (summary.get("through") is None
                                             or int(summary["through"]) >= plan.seqs[0]):
            forget.append("summarize")
        base = state.values.get("paged.base")
        if (plan.first_page <= plan.pages and isinstance(base, Mapping)
                and int(base.get("first_active", 1)) > plan.first_page):
            # Pages before it stay as they were (evicted ones stay evicted); from it on
            # they are active again.
            values["paged.base"] = {"first_active": plan.first_page, "at": None}
        quoting = self._quoting(record, plan.seqs)
        memory = self.memory()
        with store.atomic():
            removed = eraser.retract(record, plan.seqs)
            # The search entries of the messages right after quote what went (their
            # context): they are made again without it.
            if quoting:
                eraser.unindex(record, [m.seq or 0 for m in quoting])
                memory.index(record, quoting)
            counts = dict(removed.counts)
            if plan.first_page <= plan.pages:
                counts["state"] = counts.get("state", 0) + eraser.forget_pages(
                    record, plan.first_page)
                counts["items"] = counts.get("items", 0) + eraser.erase_items(
                    eraser.derived_items(record, plan.first_page))
                counts["jobs"] = counts.get("jobs", 0) + eraser.erase_jobs(
                    [f"session:{record.id}:page:{p}:"
                     for p in range(plan.first_page, plan.pages + 1)])
            counts["state"] = counts.get("state", 0) + eraser.forget_values(
                [record.id], forget) + eraser.forget_values(self._neighbours(record),
                                                            ["retrieval"])
            for key, value in values.items():
                store.context.put(record, key, value)
            keys, pool_redone = self._work_keys(record, plan)
            counts["work"] = counts.get("work", 0) + eraser.forget_work(record.id, keys)
            if pool_redone:
                self._pool_again(record, plan.first_page)
            erasure = eraser.record(
                "retract", actor=actor, tenant=record.tenant, user=record.user,
                sessions=[record.id], counts=counts, at=_now())
        erasure = self._settle(erasure, removed, scrub=False)
        self._sync(log)
        return found, erasure

    def _messages(
        self, record: SessionRecord, log: SessionLog, seqs: Collection[int],
    ) -> list[Message]:
        """The messages ``seqs`` and the tool results answering their calls, in order."""
        wanted = sorted(set(seqs))
        if not wanted:
            raise UnknownMessageError("retract needs at least one message seq")
        stored = {m.seq: m for m in self.store.messages(
            record, after=wanted[0] - 1, upto=wanted[-1], whole=False) if m.seq in wanted}
        missing = [s for s in wanted if s not in stored]
        if missing:
            raise UnknownMessageError(
                f"session {record.name!r} holds no message with seq {missing[0]} (it holds "
                f"{log.held} messages, the newest is seq {log.last_seq}); pass the .seq of "
                "a stored message")
        calls = {c.id: seq for seq, m in stored.items() for c in m.tool_calls}
        if calls:
            # The first answer to each call after it (a call id may be used again later).
            for message in self.store.messages(record, after=min(calls.values()),
                                               whole=False):
                result = message.tool_result
                if (message.role == "tool" and result is not None
                        and calls.get(result.call_id, message.seq or 0) < (message.seq or 0)):
                    stored[message.seq or 0] = message
                    calls.pop(result.call_id)
                if not calls:
                    break
        return [stored[s] for s in sorted(stored) if s is not None]

    @staticmethod
    def _plan(log: SessionLog, messages: list[Message]) -> _Retraction:
        index = log.index
        first = index.pages + 1
        for message in messages:
            if message.role == "system":
                continue
            # A message off the followed branch counts from the page it branched from.
            position = bisect_right(index.seqs, message.seq or 0) - 1
            first = min(first, max(1, index.page_of_position(max(position, 0))))
        results = [m for m in messages if m.role == "tool" and m.tool_result is not None]
        views = {} if not results else log.store.views(
            log.record, results[0].seq or 0, results[-1].seq or 0)
        wanted = {m.seq for m in results}
        return _Retraction(
            seqs=[m.seq or 0 for m in messages], first_page=first, pages=index.pages,
            call_ids={m.tool_result.call_id for m in results if m.tool_result is not None},
            artifacts={a for s, a in views.items() if s in wanted})

    def _quoting(self, record: SessionRecord, seqs: list[int]) -> list[Message]:
        """The messages that stay whose search context may quote one of ``seqs``.

        A context is the tail (``context_chars``) of the text before a message: the
        messages after a deleted one, until their own text fills that tail.
        """
        gone = set(seqs)
        room = max(0, self.memory().messages.context_chars)
        later = [m for m in self.store.messages(record, after=seqs[0],
                                                upto=seqs[-1] + _QUOTED_SCAN)
                 if m.seq not in gone and m.role != "system"]
        wanted: dict[int, Message] = {}
        for seq in seqs:
            size = 0
            for message in later:
                if (message.seq or 0) < seq:
                    continue
                if size >= room:
                    break
                wanted[message.seq or 0] = message
                size += len(message.content) + 1
        return [wanted[s] for s in sorted(wanted)]

    def _work_keys(self, record: SessionRecord, plan: _Retraction) -> tuple[list[str], bool]:
        """Working-state items derived from what a retract removes; whether the pool goes.

        Notebook lines of its tool results, anything citing one of its messages
        (``chat:<seq>``) or artifacts, and the context pool's chat history when it holds
        a page whose saved state goes: a pool compacted by memci no longer says which
        pages it covers, so all of memci's chat history goes and is made again from the
        pages that stay (:meth:`_pool_again`).
        """
        pool_section = WorkState(self.store, record).limits.pool_section
        tools = {f"tool:{c}" for c in plan.call_ids} | {f"chat:{s}" for s in plan.seqs}
        keys: list[str] = []
        history: list[str] = []
        touched = False
        for kind in _WORK_KINDS:
            for item in self.store.work.items(record.id, kind):
                if not isinstance(item, Mapping) or "id" not in item:
                    continue
                key, source = f"{kind}:{item['id']}", str(item.get("source") or "")
                if source in tools or _pointer_ids(item) & plan.artifacts:
                    keys.append(key)
                elif kind == "memo" and item.get("section") == pool_section and (
                        source.startswith("chat:page-") or item.get("actor") == "memci"):
                    history.append(key)
                    page = source.removeprefix("chat:page-")
                    touched |= (not page.isdigit()) or int(page) >= plan.first_page
        if touched and plan.first_page <= plan.pages:
            return keys + history, True
        return keys, False

    def _pool_again(self, record: SessionRecord, first_page: int) -> None:
        """Fold the evicted pages before ``first_page`` into the context pool again."""
        state = WorkState(self.store, record).with_actor("memci")
        for row in self.store.context.page_rows(record, state="evicted"):
            if row.page < first_page and row.lines:
                # As the builder folds an evicted page (ContextBuilder._pool_evicted).
                text = f"Page {row.page}: " + " / ".join(row.lines[:3])
                state.pool_add(text[:380], source=f"chat:page-{row.page}")

    def _neighbours(self, record: SessionRecord) -> list[int]:
        """The other sessions whose cached retrieval may quote this one (same user)."""
        if record.user is None:
            return []
        return [s.id for s in self.store.eraser.user_sessions(record.tenant, record.user)
                if s.id != record.id]

    # -- sessions ------------------------------------------------------------------------

    def clear(self, record: SessionRecord, log: SessionLog, *, actor: str) -> Erasure:
        """Delete every message of the session and everything derived; keep the session."""
        purged = self._unindex([record])
        with self._restoring([record]), self.store.atomic():
            removed = purged + self._empty(record)
            erasure = self.store.eraser.record(
                "clear", actor=actor, tenant=record.tenant, user=record.user,
                sessions=[record.id], counts=removed.counts, at=_now())
        erasure = self._settle(erasure, removed, scrub=False)
        self._sync(log)
        return erasure

    def _empty(self, record: SessionRecord) -> Removed:
        """Clear the session's data and what was derived from it elsewhere (in a transaction)."""
        eraser = self.store.eraser
        removed = eraser.clear(record)
        items = eraser.erase_items(eraser.derived_items(record, 1))
        jobs = eraser.erase_jobs([f"session:{record.id}:"])
        state = eraser.forget_values(self._neighbours(record), ["retrieval"])
        from memci.store import Removed  # the eraser's module: loaded by self.store.eraser

        return removed + Removed({"items": items, "jobs": jobs, "state": state})

    def delete_session(self, tenant: str, name: str, *, actor: str, scrub: bool) -> Erasure:
        """Delete the session ``name`` of ``tenant`` and everything of it."""
        record = self.store.session(tenant, name)
        if record is None:
            raise UnknownSessionError(f"tenant {tenant!r} has no session {name!r}; list them "
                                      "with engine.sessions()")
        purged = self._unindex([record])
        with self._restoring([record]), self.store.atomic():
            removed = purged + self._empty(record) + self._tombstone(record)
            erasure = self.store.eraser.record(
                "delete_session", actor=actor, tenant=tenant, user=record.user,
                sessions=[record.id], counts=removed.counts, at=_now())
        return self._settle(erasure, removed, scrub=scrub)

    def _tombstone(self, record: SessionRecord) -> Removed:
        eraser = self.store.eraser
        # The session's data is gone already: this leaves only the row no name finds.
        return eraser.delete_session(record)

    def erase_user(self, tenant: str, user: str, *, actor: str) -> Erasure:
        """Delete every session, item and job of ``user`` in ``tenant``; leave no trace.

        A user with nothing stored is recorded with no counts, scrubbed: nothing is
        scrubbed for it. Otherwise the store is scrubbed after the commit; the record says
        whether that completed (see :meth:`_settle`).
        """
        eraser = self.store.eraser
        sessions = eraser.user_sessions(tenant, user)
        purged = self._unindex(sessions)
        with self._restoring(sessions), self.store.atomic():
            removed = purged
            for record in sessions:
                removed = removed + self._empty(record) + self._tombstone(record)
            removed = removed + eraser.erase_user_items(tenant, user)
            erasure = eraser.record(
                "erase_user", actor=actor, tenant=tenant, user=user,
                sessions=[s.id for s in sessions], counts=removed.counts, at=_now())
        return self._settle(erasure, removed, scrub=True)

    # -- in short steps, ahead of a deletion ---------------------------------------------

    def _unindex(self, sessions: list[SessionRecord]) -> Removed:
        """Delete the search entries of ``sessions`` ahead of deleting them, in short steps.

        Keyword text is deleted securely (its terms leave the index at once), which costs
        milliseconds an entry on a large store: thousands of them in the deletion's one
        transaction would hold every other writer, of every tenant, for seconds. So they
        go in transactions of about :data:`_STEP_SECONDS` each, with as long a pause
        after each for the writers that waited. The messages stay until the deletion. A
        session with a step's worth of messages or fewer is left whole to the deletion.
        """
        from memci.store import Removed  # deletions load on their first use (memci.store)

        removed = Removed()
        size = _STEP_FIRST
        for record in sessions:
            if self.store.last_seq(record) <= _STEP_FIRST:
                continue  # one step's worth: it goes with the deletion, all or nothing
            while True:
                started = time.monotonic()
                some = self.store.eraser.unindex_some(record, size)
                took = time.monotonic() - started
                if not some.counts:
                    break
                removed = removed + some
                size = max(1, min(_STEP_MOST, int(size * _STEP_SECONDS / max(took, 1e-4))))
                time.sleep(min(took, 2 * _STEP_SECONDS))
        return removed

    @contextmanager
    def _restoring(self, sessions: list[SessionRecord]) -> Iterator[None]:
        """Index ``sessions`` again when the deletion in the block fails (it unindexed them).

        The deletion stored nothing; its messages stay, and are found by search again.
        Best effort: when that fails too (the store is full, say), it is logged, and the
        messages stay unsearchable until the deletion is tried again.
        """
        try:
            yield
        except BaseException:
            for record in sessions:
                try:
                    self.memory().index(record, self.store.messages(record, whole=False))
                except MemciError as exc:
                    logger.warning("a failed deletion left session %s unindexed: %s",
                                   record.id, exc)
            raise

    # -- after the commit ----------------------------------------------------------------

    def _settle(self, erasure: Erasure, removed: Removed, *, scrub: bool) -> Erasure:
        """Once committed: remove the files, forget the caches, scrub if asked.

        The deletion is committed whatever happens here, so nothing here raises: a step
        that fails (a full disk, a folder that cannot be written) is logged and leaves the
        erasure's scrub pending (:attr:`Erasure.scrubbed` None), for the next scrub to
        cover. The sweep also removes files a process that died before its commit left
        (an output of the user refused, say).
        """
        self.forget_caches()
        try:
            self.artifacts.remove_files(removed.files)
            self.artifacts.sweep()
        except StoreError as exc:
            logger.warning("erasure %s is committed; its files are left for the next sweep:"
                           " %s", erasure.id, exc)
            return erasure
        if not scrub or erasure.scrubbed is not None:
            return erasure
        try:
            when = self.scrub()
        except StoreError as exc:
            logger.warning("erasure %s is committed; its scrub is pending: %s", erasure.id, exc)
            return erasure
        return erasure if when is None else replace(erasure, scrubbed=when)

    def scrub(self, *, full: bool = False) -> datetime | None:
        """Scrub the store and sweep the artifact files; when done, mark what it covered.

        Every erasure committed before it began is marked scrubbed; returns when, or None
        when it could not complete (a reader kept the log). Raises StoreError on failure.
        """
        eraser = self.store.eraser
        pending = eraser.pending_scrub()
        done = eraser.scrub(full=full)
        self.artifacts.sweep()
        if not done:
            return None
        when = _now()
        eraser.mark_scrubbed(pending, when)
        return when

    @staticmethod
    def _sync(log: SessionLog) -> None:
        """Read the log again after a committed deletion (a failure: at its next call)."""
        try:
            log.sync()
        except StoreError as exc:
            logger.warning("the log of session %s is read again at its next call: %s",
                           log.record.id, exc)
