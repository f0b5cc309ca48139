"""The message search index: keyword (FTS5) and dense retrieval over stored messages.

:class:`MessageIndex` keeps, through the store's search part (``store.search(analyzer)``,
a :class:`~memci.store.MessageSearch`), one entry per message (session, seq, role, page,
time) with its analyzer's keyword text, and, when an embedder is configured, one vector
per message (``store.vectors(name)``). Search fuses the retrievers by reciprocal rank
and favours messages inside the time range a question names.

Invariants:

- the index is derived from the store: :meth:`MessageIndex.sync` (run before every search)
  indexes whatever the store holds that the index does not, so an append that was not
  indexed (crash, another process, an index opened later) is caught up, never lost;
- :meth:`MessageIndex.index` inside the caller's ``store.atomic()`` block (the append's
  transaction) joins it, so a message and its index entry are committed together;
  indexing a message twice is a no-op;
- system messages are recorded (so catching up knows where it stands) but never searched;
- a message is indexed with the tail of the messages before it (its context), back to a
  pause of more than ``_CONTEXT_GAP`` between two of them, however it is indexed (with its
  append, caught up, or for a new analyzer);
- user text never reaches FTS5 unquoted (see :mod:`memci.memory._text`).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Literal

from memci import _trace
from memci._records import NamedTuple
from memci.memory._answer import ANSWER_WEIGHT, answer_kinds, holds_answer
from memci.memory._embed import Embedder, embedder_from_env, query_vector, speaks
from memci.memory._hit import Hit, fuse
from memci.memory._speaker import SPEAKER_WEIGHT, named, speaker_role, without_names
from memci.memory._time import TimeRange, time_hint, without_time
from memci.messages import Message, TextPart, ToolCallPart, ToolResultPart
from memci.messages._tools import OWN_TOOL_NAMES
from memci.store import (
    Candidate,
    MemoryVersion,
    MessageSearch,
    SearchDoc,
    SearchFilter,
    SessionRecord,
    Store,
    VectorStore,
)
from memci.text import Analyzer, MatchQuery, get_analyzer, has_han_or_kana

__all__ = [
    "DEFAULT_ANALYZER",
    "RETRIEVERS",
    "Candidate",
    "IndexStats",
    "MessageIndex",
    "TimeMode",
    "message_text",
    "paused",
]

DEFAULT_ANALYZER = "bigram"
RETRIEVERS: tuple[str, ...] = ("keyword", "dense")
# The dense list only adds to the others (see memci.memory._hit.fuse): fused in, on real
# conversations (LoCoMo) it pushed down the keyword matches that held the evidence (61.3
# → 45.1% of it in a 2k request); added after, it costs none of it and still adds 13-20
# points over keyword alone on paraphrased questions (bench/bench_evidence.py,
# bench/bench_retrieval.py --dense; docs/retrieval.md).
DENSE_ADDS: tuple[str, ...] = ("dense", "items:dense")
# What was said in a named time that matches none of the words only adds too: a time in a
# question narrows or boosts its words, it never replaces them. Fused in at 0.9, those
# messages took every other place from the third on, before the word matches that held
# the answer (docs/retrieval.md, "Only matches").
ADDS: tuple[str, ...] = (*DENSE_ADDS, "dated")
TimeMode = Literal["boost", "filter", "off"]

_BODY_LIMIT = 20_000  # characters of one message that are indexed (tool output is long)
_CONTEXT_LIMIT = 300  # characters of the previous message indexed as context
_EMBED_LIMIT = 2_000  # characters embedded (models read ~256-512 tokens anyway)
_CONTEXT_MESSAGES = 8  # messages read back for the context of the first one indexed
_CONTEXT_MESSAGES_MOST = 128  # read back at first at most, however short the messages
DENSE_FLOOR = 0.25  # cosine below which a nearest message is no match (see docs/retrieval.md)
_DATED_WEIGHT = 0.9  # what was said in a named time, when none of it matches the words
_CALL_LOOKBACK = 64  # messages read back for the call a tool result answers
_CALLS_KEPT = 512  # tool calls remembered per session (see _OwnCalls)
_SESSIONS_KEPT = 256  # sessions _OwnCalls remembers calls of (the most recently indexed)
_CONTEXT_WEIGHT = 0.5  # BM25 weight of the previous messages' text
# A pause after which a conversation is taken up again, not continued: the messages before
# it are no context of the ones after (a session resumed the next day talks of other
# things; LongMemEval's haystacks put unrelated sessions one after the other).
_CONTEXT_GAP = timedelta(hours=3)
_TIME_WEIGHT = 2.0  # RRF weight of the list of messages inside a time the question names


def _flatten(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _flatten(item)
    elif isinstance(value, list):
        for item in value:
            yield from _flatten(item)
    elif value is not None:
        yield str(value)


def message_text(message: Message, own_calls: Collection[str] = ()) -> str:
    """Return the searchable text of a message: text, tool call names and arguments, results.

    memci's own tool calls, and the results of the calls whose ids are in ``own_calls``,
    are left out: their answers are memci's, not the conversation's (see
    :mod:`memci.tools._names`).
    """
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ToolCallPart):
            if part.name in OWN_TOOL_NAMES:
                continue
            try:
                args = " ".join(_flatten(json.loads(part.arguments)))
            except (ValueError, RecursionError):  # RecursionError: older rows nest deeper
                args = part.arguments
            if "\\u" in part.arguments:
                # Arguments an older memci stored may escape a lone surrogate ("\\ud800");
                # the index holds UTF-8, so such a character is searched as "?".
                args = args.encode("utf-8", "replace").decode("utf-8")
            pieces.append(f"{part.name} {args}")
        elif isinstance(part, ToolResultPart):
            if part.call_id not in own_calls:
                pieces.append(part.content)
    return "\n".join(pieces)[:_BODY_LIMIT]


class _OwnCalls:
    """Which tool results answer one of memci's own tools, per session.

    The call comes before its result, usually in an earlier ``add``: calls seen while
    indexing are remembered (the newest few hundred per session, for the sessions indexed
    most recently, so a process over many sessions holds a bounded amount), and a result
    whose call was not seen looks back over the messages before it once.
    """

    def __init__(self, recent: Callable[[int, int, int], list[Message]]) -> None:
        self.recent = recent
        self.calls: OrderedDict[int, dict[str, bool]] = OrderedDict()
        self._lock = threading.Lock()  # several stores' transactions index at once

    def _of(self, session_id: int) -> dict[str, bool]:
        """The calls remembered of a session, which becomes the most recent one."""
        with self._lock:
            calls = self.calls.setdefault(session_id, {})
            self.calls.move_to_end(session_id)
            while len(self.calls) > _SESSIONS_KEPT:
                self.calls.popitem(last=False)
            return calls

    def see(self, session_id: int, message: Message) -> None:
        calls = self._of(session_id)
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                calls[part.id] = part.name in OWN_TOOL_NAMES
        if len(calls) > _CALLS_KEPT:
            for call_id in list(calls)[:len(calls) - _CALLS_KEPT // 2]:
                del calls[call_id]

    def of(self, session_id: int, message: Message) -> frozenset[str]:
        """The ids of memci's own calls that ``message``'s results answer (usually none)."""
        results = [p.call_id for p in message.parts if isinstance(p, ToolResultPart)]
        if not results:
            return frozenset()
        calls = self._of(session_id)
        if any(r not in calls for r in results) and message.seq is not None:
            for earlier in reversed(self.recent(session_id, message.seq, _CALL_LOOKBACK)):
                self.see(session_id, earlier)
            calls = self._of(session_id)
        return frozenset(r for r in results if calls.get(r, False))

    def text(self, session_id: int, message: Message) -> str:
        """``message``'s searchable text (memci's own tool answers left out)."""
        own = self.of(session_id, message)
        self.see(session_id, message)
        return message_text(message, own)


def paused(before: datetime | None, after: datetime | None) -> bool:
    """Whether the conversation paused between two messages said at these times."""
    if before is None or after is None:
        return False
    if before.tzinfo is None:
        before = before.replace(tzinfo=UTC)
    if after.tzinfo is None:
        after = after.replace(tzinfo=UTC)
    return after - before > _CONTEXT_GAP


def _epoch(moment: datetime | None) -> float:
    if moment is None:
        return time.time()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


class _Rolled(NamedTuple):
    """Where indexing a session's batch ended: the next message's start (see ``index``).

    The log's epoch it was read in, the batch's last seq and when it was said, the page
    it is on, and the context the next message gets.
    """

    epoch: int
    seq: int
    said: datetime | None
    page: int
    context: str


class IndexStats(NamedTuple):
    """What the index holds and how it searches."""

    analyzer: str
    messages: int
    embedder: str | None
    vectors: int
    vector_backend: str | None


class MessageIndex:
    """Keyword and dense search over a store's messages.

    ``analyzer`` is ``"bigram"`` (default), ``"jieba"`` or ``"trigram"``; ``embedder`` is
    an :class:`~memci.memory.Embedder`, None for keyword only, or ``"env"`` to read
    ``MEMCI_EMBEDDER``. ``time_mode`` says what a time named in a question does: ``boost``
    (default: messages in the range get an extra ranked list in the fusion), ``filter``
    (only messages in the range, unless none match) or ``off``. ``answer_weight``: the
    fusion weight of the matches holding the kind of fact a question asks (0: not looked
    for; see :mod:`memci.memory._answer`).
    """

    def __init__(
        self,
        store: Store,
        *,
        analyzer: str | Analyzer | None = None,
        embedder: Embedder | Literal["env"] | None = "env",
        time_mode: TimeMode = "boost",
        context_weight: float = _CONTEXT_WEIGHT,
        context_chars: int = _CONTEXT_LIMIT,
        time_weight: float = _TIME_WEIGHT,
        page_of: Callable[[int, int], int] | None = None,
        dense_floor: float = DENSE_FLOOR,
        answer_weight: float = ANSWER_WEIGHT,
    ) -> None:
        self.store = store
        self.analyzer = (get_analyzer(analyzer or DEFAULT_ANALYZER)
                         if analyzer is None or isinstance(analyzer, str) else analyzer)
        self.embedder = embedder_from_env() if embedder == "env" else embedder
        self.vectors: VectorStore | None = (
            store.vectors(self.embedder.name) if self.embedder is not None else None)
        self.time_mode: TimeMode = time_mode
        self.context_weight = context_weight
        self.context_chars = context_chars
        self.time_weight = time_weight
        self.dense_floor = dense_floor
        self.answer_weight = answer_weight
        self.page_of = page_of
        self.rows: MessageSearch = store.search(self.analyzer)
        self._roles: OrderedDict[tuple[str, tuple[int, ...] | None, MemoryVersion],
                                 str | None] = OrderedDict()
        self._lock = threading.Lock()
        self._own = _OwnCalls(self.rows.recent)
        # Messages read back at first for a context (see _context_before).
        self._context_messages = _CONTEXT_MESSAGES
        # Per session, where this process's last committed batch ended (see _start).
        self._rolled: OrderedDict[int, _Rolled] = OrderedDict()
        with store.atomic():
            self._catch_up_keyword()

    # -- writing -------------------------------------------------------------------------

    def index(self, session: SessionRecord, messages: Sequence[Message]) -> int:
        """Index stored ``messages`` of ``session``, in one transaction.

        Messages need their ``seq`` (as returned by the store's ``append``); ones already
        indexed are skipped. Inside the caller's ``store.atomic()`` block (the append's
        transaction) the entries commit with it. Returns how many were added.
        """
        todo = sorted((m for m in messages if m.seq is not None), key=lambda m: m.seq or 0)
        if not todo:
            return 0
        rows = self.rows
        with self.store.atomic():
            first = todo[0].seq or 0
            epoch, page, previous, said = self._start(session, first, todo[0].created_at)
            docs: list[SearchDoc] = []
            last = first - 1
            for message in todo:
                assert message.seq is not None
                if message.seq != last + 1:  # a gap: recount, and no context across it
                    epoch, page, previous = self._before(session.id, message.seq,
                                                         message.created_at)
                elif paused(said, message.created_at):
                    previous = ""
                last, said = message.seq, message.created_at
                if message.role == "user":
                    page += 1
                text = self._own.text(session.id, message)
                # Nothing of its own to find (memci's tool answers): no neighbours' text
                # either, so it is never a hit.
                docs.append(SearchDoc(session.id, message.seq, message.role, page,
                                      _epoch(message.created_at), text,
                                      previous if text.strip() else ""))
                if message.role != "system" and text.strip():
                    previous = self._roll(previous, text)
            # Where the next batch of this session starts, once this one is committed.
            rolled = _Rolled(epoch, last, said, page, previous)
            self.store.on_commit(lambda: self._keep(session.id, rolled))
            # One batch: the entries' rows and keyword text go in a few statements.
            return rows.add_many(docs)

    def _start(self, session: SessionRecord, seq: int, said: datetime | None
               ) -> tuple[int, int, str, datetime | None]:
        """``(epoch, page, context, said)`` before message ``seq`` of ``session``.

        Where this process's last committed batch of the session ended when it ended just
        before ``seq`` in the same epoch (nothing deleted since: the log's epoch is read,
        one short statement): the next ``add`` reads nothing back. Else read from the
        log (:meth:`_before`). ``said``: when the message before it was said, or None.
        """
        with self._lock:
            rolled = self._rolled.pop(session.id, None)
        if rolled is not None and rolled.seq == seq - 1:
            epoch, _ = self.store.log_head(session)
            if epoch == rolled.epoch:
                return epoch, rolled.page, rolled.context, rolled.said
        epoch, page, context = self._before(session.id, seq, said)
        return epoch, page, context, None

    def _keep(self, session_id: int, rolled: _Rolled) -> None:
        with self._lock:
            self._rolled[session_id] = rolled
            self._rolled.move_to_end(session_id)
            while len(self._rolled) > _SESSIONS_KEPT:
                self._rolled.popitem(last=False)

    def _roll(self, context: str, text: str) -> str:
        """Return the context for the next message: the tail of what came before it."""
        if self.context_chars <= 0:
            return ""
        return (f"{context}\n{text}" if context else text)[-self.context_chars:]

    def _before(self, session_id: int, seq: int, said: datetime | None
                ) -> tuple[int, int, str]:
        """The log's epoch, the page of the message before ``seq`` and the context of ``seq``.

        ``said``: when message ``seq`` was said. Read together
        (:meth:`MessageSearch.before`): one statement of the batch's write, where the page
        and the context were one each (and a second for the context of short messages,
        see :meth:`_context_before`).
        """
        if self.context_chars <= 0:
            found = self.rows.before(session_id, seq, 0)
            return found.epoch, found.page, ""
        found = self.rows.before(session_id, seq, self._context_messages)
        return (found.epoch, found.page,
                self._context_before(session_id, seq, said, found.recent))

    def _context_before(
        self, session_id: int, seq: int, said: datetime | None,
        recent: Sequence[Message] | None = None,
    ) -> str:
        """Return the context of message ``seq``, said at ``said``.

        It is the tail of the messages before it, back to a pause (see ``_CONTEXT_GAP``),
        the same text :meth:`index` rolls through a batch: a message indexed on its own
        (an ``add``) gets the context it would get imported with the ones before it.
        ``recent``: the newest messages before it, read already. Messages are read back
        ``_context_messages`` at first, four times more while short ones leave the tail
        unfilled; the number that filled it is read at first from then on (short Chinese
        turns: 8 never filled 300 characters, and every batch read its context twice).
        """
        if self.context_chars <= 0:
            return ""
        limit = self._context_messages
        while True:
            if recent is None:
                recent = self.rows.recent(session_id, seq, limit)
            texts, filled = self._tail(recent, said)
            if filled or len(recent) < limit:
                break
            limit *= 4
            self._context_messages = min(limit, _CONTEXT_MESSAGES_MOST)
            recent = None
        context = ""
        for text in reversed(texts):
            context = self._roll(context, text)
        return context

    def _tail(self, recent: Sequence[Message], said: datetime | None) -> tuple[list[str], bool]:
        """The texts of ``recent`` (newest first) that a context holds; whether it is full.

        Full: the texts fill ``context_chars`` or reach a pause, so older messages add
        nothing. Blank texts are skipped, as :meth:`index` skips them.
        """
        own = {p.id for m in recent for p in m.parts
               if isinstance(p, ToolCallPart) and p.name in OWN_TOOL_NAMES}
        texts: list[str] = []
        size = 0
        for message in recent:
            if paused(message.created_at, said):
                return texts, True
            said = message.created_at
            text = message_text(message, own)
            if not text.strip():
                continue
            texts.append(text)
            size += len(text) + 1
            if size >= self.context_chars:
                return texts, True
        return texts, False

    def _catch_up_keyword(self) -> None:
        """Give keyword text to entries without it (a new analyzer's table, or a stale one)."""
        # session -> (last seq, when it was said, rolling context)
        context: dict[int, tuple[int, datetime | None, str]] = {}
        for entry in self.rows.keyword_backlog():
            sid, seq, said = entry.session_id, entry.message.seq or 0, entry.message.created_at
            last = context.get(sid)
            if last is None or last[0] != seq - 1:
                previous = self._context_before(sid, seq, said)
            else:
                previous = "" if paused(last[1], said) else last[2]
            text = self._own.text(sid, entry.message)
            self.rows.add_keyword(entry.doc, sid, text, previous if text.strip() else "")
            context[sid] = (seq, said,
                            self._roll(previous, text) if text.strip() else previous)

    def sync(self, sessions: Collection[int] | None = None) -> int:
        """Index what the store holds for ``sessions`` (ids; all when None) and the index not.

        Cheap when nothing is missing: one statement, two indexed lookups per session.
        """
        return self.catch_up(self.rows.behind(sessions))

    def catch_up(self, behind: Iterable[tuple[int, int]]) -> int:
        """Index the messages of each ``(session id, last indexed seq)`` after that seq."""
        added = 0
        for sid, after in behind:
            with self.store.atomic():
                record = SessionRecord(sid, "", self.rows.session_name(sid), None,
                                       MappingProxyType({}), datetime.now(UTC))
                added += self.index(record, self.rows.unindexed(sid, after))
        return added

    def embed_pending(self, *, batch: int = 256, limit: int | None = None) -> int:
        """Embed messages that have no vector yet (a no-op without an embedder).

        Runs the model outside any transaction; call it from a background worker after
        appends, or let :meth:`search` catch up. Returns how many were embedded.
        """
        if self.vectors is None or self.embedder is None:
            return 0
        done = 0
        while limit is None or done < limit:
            size = batch if limit is None else min(batch, limit - done)
            # Messages are embedded in doc order, one committed batch at a time, so
            # everything up to the newest vector has one: only newer docs are pending.
            after = self.vectors.newest_ref("message")
            rows = self.rows.embed_backlog(after, size)
            if not rows:
                break
            texts = [self._own.text(r.session_id, r.message)[:_EMBED_LIMIT] or " "
                     for r in rows]
            vectors = _trace.embed(self.embedder, texts)
            self.vectors.add("message", [(r.doc, r.session_id) for r in rows], vectors)
            done += len(rows)
        return done

    # -- reading -------------------------------------------------------------------------

    def match_query(self, query: str) -> MatchQuery:
        """How ``query`` is searched by this index's analyzer."""
        return self.analyzer.query(query)

    def keyword(
        self,
        query: str | MatchQuery,
        *,
        k: int = 50,
        sessions: Collection[int] | None = None,
        time_range: TimeRange | None = None,
        roles: Collection[str] | None = None,
        below: int | None = None,
    ) -> list[Candidate]:
        """BM25-ranked messages matching ``query`` (best first); ``below``: doc bound."""
        plan = self.match_query(query) if isinstance(query, str) else query
        return self.rows.keyword(plan, k=k, where=_filter(sessions, time_range, roles, below),
                                 context_weight=self.context_weight)

    def fusion_weights(self) -> dict[str, float]:
        """Return the RRF weight of each list.

        Keyword and dense 1, ``time`` (matches inside a named time) ``time_weight``,
        ``dated`` (what was said then, matching none of the words) ``_DATED_WEIGHT``,
        ``answer`` (matches holding the kind of fact asked) ``answer_weight``, ``speaker``
        (matches spoken by the person a question names) ``SPEAKER_WEIGHT``.
        """
        return {"time": self.time_weight, "dated": _DATED_WEIGHT,
                "answer": self.answer_weight, "speaker": SPEAKER_WEIGHT}

    def dense(
        self,
        query: str,
        *,
        k: int = 50,
        sessions: Collection[int] | None = None,
        time_range: TimeRange | None = None,
        roles: Collection[str] | None = None,
    ) -> list[Candidate]:
        """Messages nearest to ``query`` by embedding (empty without an embedder)."""
        if self.vectors is None or not query.strip() or k <= 0:
            return []
        assert self.embedder is not None
        vector = query_vector(self.embedder, query)
        filtered = time_range is not None or roles is not None
        depth = k * 4 if filtered else k
        found = self.vectors.search("message", vector, depth, sessions=sessions)
        if not found:
            return []
        rows = self.rows.among([ref for ref, _ in found], _filter(None, time_range, roles))
        if filtered and len(rows) < k and len(found) == depth:
            # Too few of the nearest pass the time and role filters: search among the
            # messages that pass them, so the k nearest of those come back.
            rows = self.rows.matching(_filter(sessions, time_range, roles))
            found = self.vectors.search("message", vector, k, refs=[c.doc for c in rows])
        keep = {c.doc: c for c in rows}
        # The nearest are not matches when nothing is near: below the floor they are left
        # out rather than returned to fill k.
        return [keep[ref] for ref, cosine in found
                if ref in keep and cosine >= self.dense_floor][:k]

    def in_range(
        self, *, k: int, sessions: Collection[int] | None, time_range: TimeRange,
        roles: Collection[str] | None = None, below: int | None = None,
    ) -> list[Candidate]:
        """Messages inside ``time_range``, oldest first; ``below``: doc bound."""
        return self.rows.in_range(_filter(sessions, time_range, roles, below), k)

    def ranked_lists(
        self,
        query: str,
        *,
        depth: int,
        sessions: Collection[int] | None = None,
        time_range: TimeRange | None = None,
        roles: Collection[str] | None = None,
        time_mode: TimeMode | None = None,
        retrievers: Collection[str] = RETRIEVERS,
        below: int | None = None,
        read: dict[int, tuple[Message, int]] | None = None,
        version: MemoryVersion | None = None,
    ) -> dict[str, list[Candidate]]:
        """Return the lists to fuse: ``keyword``, ``dense``, ``time``, ``answer``, ``speaker``.

        ``dense`` runs with an embedder; ``time`` holds the matches inside a time the
        question names (see _word_and_time_lists); ``answer`` the keyword matches that
        hold the kind of fact the question asks (a time, a place, a price, a duration, a
        phone number, what is near a place; see :mod:`memci.memory._answer`), in their
        keyword order. When the question also names a time, what was said then and holds
        that kind of fact follows in ``answer`` and joins ``time``, its words matched or
        not ("昨天说的那个地方，游玩时长是什么？" finds yesterday's "可以玩1小时 - 2小时").
        ``speaker`` the keyword matches spoken by the person the question names (see
        :mod:`memci.memory._speaker`), in their keyword order; when a role speaks as that
        person, the question's words are searched without the name (said mostly *to* the
        person, it matches the other speaker's turns, not the answer).

        ``below``: keyword and time matches only among entries with a smaller doc number
        (a session's window left out, see :meth:`Memory.search`). ``read``: gets the
        messages read for the answer and speaker lists, by doc (pass it to
        :meth:`load_docs`: the hits are mostly among them, and are not read twice).
        ``version``: memory's, when the caller has read it (else read if a name needs it).
        """
        names = named(query)
        found = {self._role_of(name, sessions, version) for name in names}
        role = found.pop() if len(found) == 1 else None
        lists = self._word_and_time_lists(query, depth, sessions, time_range, roles,
                                          time_mode, retrievers, below,
                                          names if role else ())
        matches = lists.get("keyword")
        if not matches:
            return lists
        kinds = answer_kinds(query) if self.answer_weight else ()
        if kinds or role:
            # What was said in the time the question names (its words or not): those
            # holding the kind of fact asked join the matches inside that time.
            said = ((lists.get("dated") or self.in_range(
                k=depth, sessions=sessions, time_range=time_range, roles=roles, below=below))
                if kinds and "time" in lists and time_range is not None else [])
            loaded = self.rows.load([*matches, *said])
            if read is not None:
                read.update(loaded)

            def holds(c: Candidate) -> bool:
                return c.doc in loaded and holds_answer(
                    kinds, message_text(loaded[c.doc][0]), query)

            if kinds:
                lists["answer"] = [c for c in (*matches, *said) if holds(c)]
            if said:
                inside = {c.doc for c in lists["time"]}
                lists["time"] = [*lists["time"],
                                 *(c for c in said if c.doc not in inside and holds(c))]
            if role:
                lists["speaker"] = [c for c in matches
                                    if c.doc in loaded and loaded[c.doc][0].role == role]
        return lists

    def _role_of(self, name: str, sessions: Collection[int] | None,
                 version: MemoryVersion | None = None) -> str | None:
        """The role that speaks as ``name`` in ``sessions`` (see :mod:`memci.memory._speaker`).

        One search of the name and one read of its matches, kept while memory's version
        stays (:meth:`~memci.store.MessageSearch.memory_version`: until a message is
        indexed, on PostgreSQL also while a write was in flight).
        """
        key = (name, None if sessions is None else tuple(sorted(sessions)),
               version if version is not None else self.rows.memory_version())
        with self._lock:
            if key in self._roles:
                self._roles.move_to_end(key)
                return self._roles[key]
        said = self.rows.load(self.keyword(name, k=50, sessions=sessions))
        role = speaker_role(name, ((m.role, message_text(m)) for m, _ in said.values()))
        with self._lock:
            self._roles[key] = role
            while len(self._roles) > 256:
                self._roles.popitem(last=False)
        return role

    def _word_and_time_lists(
        self, query: str, depth: int, sessions: Collection[int] | None,
        time_range: TimeRange | None, roles: Collection[str] | None,
        time_mode: TimeMode | None, retrievers: Collection[str], below: int | None,
        names: Sequence[str] = (),
    ) -> dict[str, list[Candidate]]:
        """The lists of the question's words and of the time it names (see ranked_lists).

        ``time`` (boost mode, when a range is given) ranks the messages inside the range
        by the same retrievers; when the question has no words besides the time, it lists
        the messages inside the range, oldest first. ``names``: searched without them
        first; when that finds fewer than ``depth``, the matches of all the words follow.
        """
        mode = time_mode or self.time_mode
        # The words of the time the question names are not searched: the range stands for
        # them ("last week" would match every "try it for a week").
        topic = without_time(query, time_range) if mode != "off" else query
        plan = self.match_query(topic)
        if names:
            topic = without_names(topic, names)
            plan, named_plan = self.match_query(topic), plan
        use_keyword = "keyword" in retrievers
        use_dense = ("dense" in retrievers and self.vectors is not None
                     and self.embedder is not None and speaks(self.embedder, topic))

        def run(window: TimeRange | None) -> dict[str, list[Candidate]]:
            found: dict[str, list[Candidate]] = {}
            if use_keyword:
                found["keyword"] = self.keyword(plan, k=depth, sessions=sessions,
                                                time_range=window, roles=roles, below=below)
                if names and len(found["keyword"]) < depth:
                    # With fewer words there are fewer matches: the turns the name
                    # brought come after them.
                    have = {c.doc for c in found["keyword"]}
                    found["keyword"] += [c for c in self.keyword(
                        named_plan, k=depth, sessions=sessions, time_range=window,
                        roles=roles, below=below) if c.doc not in have]
                    del found["keyword"][depth:]
            if use_dense:
                found["dense"] = self.dense(topic, k=depth, sessions=sessions,
                                            time_range=window, roles=roles)
            return found

        if time_range is None or mode == "off":
            return run(None)
        if mode == "filter":
            lists = run(time_range)
            if any(lists.values()):
                return lists
            return run(None)
        lists = run(None)
        inside = [c for c, _, _ in fuse(run(time_range), after=DENSE_ADDS)]
        if not inside:
            dated = self.in_range(k=depth, sessions=sessions, time_range=time_range,
                                  roles=roles, below=below)
            if _asks_what_was_said(plan):
                # The question names only a time ("what did we discuss yesterday?"): what
                # was said then is the answer.
                inside = dated
            else:
                # A question with words of its own keeps matching them: a date boosts,
                # it never replaces the text ("Sunday mass" finds mass first). What was
                # said then comes after every match of the words (see ADDS).
                lists["dated"] = dated
        lists["time"] = inside
        return lists

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        sessions: Sequence[int] | None = None,
        time_range: TimeRange | None = None,
        roles: Collection[str] | None = None,
        now: datetime | None = None,
        time_mode: TimeMode | None = None,
        retrievers: Collection[str] = RETRIEVERS,
    ) -> list[Hit]:
        """Return the ``k`` best messages for ``query`` in ``sessions`` (ids; None: all).

        ``time_range`` restricts or favours a period; when it is None and time handling is
        on, the period the question names (relative to ``now``) is used. ``retrievers``
        limits which of ``keyword`` and ``dense`` run.
        """
        if k <= 0:
            return []
        mode = time_mode or self.time_mode
        self.sync(sessions)
        if self.vectors is not None and "dense" in retrievers:
            self.embed_pending()
        if time_range is None and mode != "off":
            time_range = time_hint(query, now=now)
        read: dict[int, tuple[Message, int]] = {}
        lists = self.ranked_lists(query, depth=max(50, 3 * k), sessions=sessions,
                                  time_range=time_range, roles=roles, time_mode=mode,
                                  retrievers=retrievers, read=read)
        fused = fuse({name: [c.doc for c in found] for name, found in lists.items()},
                     weights=self.fusion_weights(), after=ADDS)
        by_doc = {c.doc: c for found in lists.values() for c in found}
        return list(self.load_docs([(by_doc[doc], score, names)
                                    for doc, score, names in fused[:k]], read).values())

    def load(self, ranked: Sequence[tuple[Candidate, float, tuple[str, ...]]]) -> list[Hit]:
        """Hits for ranked candidates: their messages, pages and session names, in order."""
        return list(self.load_docs(ranked).values())

    def load_docs(
        self, ranked: Sequence[tuple[Candidate, float, tuple[str, ...]]],
        read: Mapping[int, tuple[Message, int]] | None = None,
    ) -> dict[int, Hit]:
        """Hits for ranked candidates by doc id, in order (a vanished message is left out).

        ``read``: messages this search read already, by doc (see :meth:`ranked_lists`).
        """
        known = read or {}
        loaded = {**known, **self.rows.load([cand for cand, _, _ in ranked
                                             if cand.doc not in known])}
        hits: dict[int, Hit] = {}
        for cand, score, names in ranked:
            found = loaded.get(cand.doc)
            if found is None:
                continue
            message, page = found
            if self.page_of is not None:
                page = self.page_of(cand.session_id, cand.seq)
            hits[cand.doc] = Hit(message=message, page=page, score=score, retrievers=names,
                                 session=message.session)
        return hits

    def stats(self) -> IndexStats:
        """How many messages and vectors the index holds, and how it searches."""
        vectors = self.vectors.count("message") if self.vectors is not None else 0
        return IndexStats(
            analyzer=self.analyzer.name, messages=self.rows.count(),
            embedder=self.embedder.name if self.embedder is not None else None,
            vectors=vectors,
            vector_backend=self.vectors.backend if self.vectors is not None else None,
        )

    def version(self) -> int:
        """Return a number that grows whenever a message is indexed (for caches)."""
        return self.rows.version()


def _filter(
    sessions: Collection[int] | None, time_range: TimeRange | None,
    roles: Collection[str] | None, below: int | None = None,
) -> SearchFilter:
    if time_range is None:
        return SearchFilter(sessions, None, None, roles, below)
    return SearchFilter(sessions, time_range.start.timestamp(), time_range.end.timestamp(),
                        roles, below)


# Words that ask *that* something was said, not what about: a question made of these and a
# time ("what did we talk about yesterday?", "昨天聊了什么") asks for what was said then.
_TALK_WORDS = frozenset("""
talk talked talking talks discuss discussed discussing discussion discussions chat chatted
chatting chats say speak spoke spoken speaking happen happened happening conversation
conversations topic topics go went going do doing done
""".split())
_TALK_CHARS = frozenset("聊天说讲谈讨论发生过了做干")


def _asks_what_was_said(plan: MatchQuery) -> bool:
    """Whether a query's terms only ask what was said (or it has none)."""
    return all(term in _TALK_WORDS or (has_han_or_kana(term) and set(term) <= _TALK_CHARS)
               for term in (*plan.terms, *plan.short_terms))
