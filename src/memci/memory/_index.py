"""The message search index: keyword (FTS5) and dense retrieval over stored messages.

:class:`MessageIndex` keeps ``memory_docs`` (one row per message: session, seq, role, page,
time) and a derived FTS5 table for its analyzer, and, when an embedder is configured, one
vector per message. Search fuses the retrievers by reciprocal rank and favours messages
inside the time range a question names.

Invariants:

- the index is derived from the store: :meth:`MessageIndex.sync` (run before every search)
  indexes whatever the store holds that the index does not, so an append that was not
  indexed (crash, another process, an index opened later) is caught up, never lost;
- :meth:`MessageIndex.index_in` writes inside the caller's transaction, so a message and
  its index entry are committed together; indexing a message twice is a no-op;
- system messages are recorded (so catching up knows where it stands) but never searched;
- user text never reaches FTS5 unquoted (see :mod:`memci.memory._text`).
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Literal

from memci.memory._embed import Embedder, embedder_from_env, speaks
from memci.memory._hit import Hit, fuse
from memci.memory._schema import MEMORY_MIGRATIONS, ensure_fts, fts_name
from memci.memory._text import Analyzer, MatchPlan, get_analyzer
from memci.memory._time import TimeRange, time_hint, without_time
from memci.memory._vectors import VectorIndex
from memci.messages import (
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    loads_parts,
)
from memci.store import SessionRecord, SQLiteStore, message_from_row

__all__ = [
    "DEFAULT_ANALYZER",
    "RETRIEVERS",
    "Candidate",
    "IndexStats",
    "MessageIndex",
    "TimeMode",
    "message_text",
]

DEFAULT_ANALYZER = "bigram"
RETRIEVERS: tuple[str, ...] = ("keyword", "dense")
TimeMode = Literal["boost", "filter", "off"]

_BODY_LIMIT = 20_000  # characters of one message that are indexed (tool output is long)
_CONTEXT_LIMIT = 300  # characters of the previous message indexed as context
_EMBED_LIMIT = 2_000  # characters embedded (models read ~256-512 tokens anyway)
_SCOPE_TERMS_MAX = 20  # up to this many sessions are always filtered inside FTS5
_CONTEXT_WEIGHT = 0.5  # BM25 weight of the previous messages' text
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


def message_text(message: Message) -> str:
    """Return the searchable text of a message: text, tool call names and arguments, results."""
    pieces: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ToolCallPart):
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
            pieces.append(part.content)
    return "\n".join(pieces)[:_BODY_LIMIT]


def _epoch(moment: datetime | None) -> float:
    if moment is None:
        return time.time()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


@dataclass(frozen=True, slots=True)
class Candidate:
    """A ranked message before it is loaded: its doc id, session id and seq."""

    doc: int
    session_id: int
    seq: int


@dataclass(frozen=True, slots=True)
class IndexStats:
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
    (only messages in the range, unless none match) or ``off``.
    """

    def __init__(
        self,
        store: SQLiteStore,
        *,
        analyzer: str | Analyzer | None = None,
        embedder: Embedder | Literal["env"] | None = "env",
        time_mode: TimeMode = "boost",
        context_weight: float = _CONTEXT_WEIGHT,
        context_chars: int = _CONTEXT_LIMIT,
        time_weight: float = _TIME_WEIGHT,
        page_of: Callable[[int, int], int] | None = None,
    ) -> None:
        self.store = store
        self.analyzer = (get_analyzer(analyzer or DEFAULT_ANALYZER)
                         if analyzer is None or isinstance(analyzer, str) else analyzer)
        self.embedder = embedder_from_env() if embedder == "env" else embedder
        self.vectors = (VectorIndex(self.embedder, store) if self.embedder is not None
                        else None)
        self.time_mode: TimeMode = time_mode
        self.context_weight = context_weight
        self.context_chars = context_chars
        self.time_weight = time_weight
        self.page_of = page_of
        self.table = fts_name("memory_fts", self.analyzer)
        self._names: dict[int, str] = {}
        self._query_vectors: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        store.migrate("memory", MEMORY_MIGRATIONS)
        with store.write() as db:
            created = ensure_fts(db, "memory_fts", self.analyzer)
            self._catch_up_fts(db, rebuild=created)

    # -- writing -------------------------------------------------------------------------

    def index(self, session: SessionRecord, messages: Sequence[Message]) -> int:
        """Index stored ``messages`` of ``session`` in a transaction of its own."""
        with self.store.write() as db:
            return self.index_in(db, session, messages)

    def index_in(
        self, db: sqlite3.Connection, session: SessionRecord, messages: Sequence[Message]
    ) -> int:
        """Index stored ``messages`` inside the caller's write transaction ``db``.

        Messages need their ``seq`` (as returned by the store's ``append``); ones already
        indexed are skipped. Returns how many were added.
        """
        todo = sorted((m for m in messages if m.seq is not None), key=lambda m: m.seq or 0)
        if not todo:
            return 0
        first = todo[0].seq or 0
        page = self._page_before(db, session.id, first)
        previous = self._context_before(db, session.id, first)
        added = 0
        last = first - 1
        for message in todo:
            assert message.seq is not None
            if message.seq != last + 1:  # a gap: recount, and no context across it
                page = self._page_before(db, session.id, message.seq)
                previous = self._context_before(db, session.id, message.seq)
            last = message.seq
            if message.role == "user":
                page += 1
            text = message_text(message)
            added += self._add(db, session.id, message.seq, message.role, page,
                               _epoch(message.created_at), text, previous)
            if message.role != "system":
                previous = self._roll(previous, text)
        return added

    @staticmethod
    def _page_before(db: sqlite3.Connection, session_id: int, seq: int) -> int:
        """The page number of the message before ``seq`` (user messages up to it).

        Read from the indexed message just before, when it is the one right before (an
        index lookup); counted over the log otherwise (the first message indexed).
        """
        row = db.execute(
            "SELECT seq, page FROM memory_docs WHERE session_id = ? AND seq < ?"
            " ORDER BY seq DESC LIMIT 1", (session_id, seq),
        ).fetchone()
        if row is not None and int(row[0]) == seq - 1:
            return int(row[1])
        return int(db.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND role = 'user' AND seq < ?",
            (session_id, seq),
        ).fetchone()[0])

    def _roll(self, context: str, text: str) -> str:
        """Return the context for the next message: the tail of what came before it."""
        if self.context_chars <= 0:
            return ""
        return (f"{context}\n{text}" if context else text)[-self.context_chars:]

    def _context_before(self, db: sqlite3.Connection, session_id: int, seq: int) -> str:
        """Return the context of message ``seq``: the tail of the messages before it."""
        if self.context_chars <= 0:
            return ""
        texts: list[str] = []
        size = 0
        for role, parts in db.execute(
            "SELECT role, parts FROM messages WHERE session_id = ? AND seq < ?"
            " AND role != 'system' ORDER BY seq DESC LIMIT 8", (session_id, seq),
        ):
            texts.append(message_text(Message(role, loads_parts(parts))))
            size += len(texts[-1])
            if size >= self.context_chars:
                break
        context = ""
        for text in reversed(texts):
            context = self._roll(context, text)
        return context

    def _add(
        self, db: sqlite3.Connection, session_id: int, seq: int, role: str, page: int,
        created: float, text: str, previous: str,
    ) -> int:
        cursor = db.execute(
            "INSERT OR IGNORE INTO memory_docs (session_id, seq, role, page, created)"
            " VALUES (?, ?, ?, ?, ?)", (session_id, seq, role, page, created),
        )
        if cursor.rowcount == 0:
            return 0
        if role != "system":
            self._add_fts(db, int(cursor.lastrowid or 0), session_id, text, previous)
        return 1

    def _add_fts(
        self, db: sqlite3.Connection, doc: int, session_id: int, text: str, previous: str
    ) -> None:
        a = self.analyzer
        db.execute(
            f"INSERT INTO {self.table} (rowid, body, context, scope) VALUES (?, ?, ?, ?)",
            (doc, a.document(text), a.document(previous), f"s{session_id}x"),
        )

    def _catch_up_fts(self, db: sqlite3.Connection, *, rebuild: bool) -> None:
        """Fill this analyzer's FTS table with docs it lacks (new table, or stale one)."""
        if rebuild:
            after = 0
        else:
            after = int(db.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {self.table}")
                        .fetchone()[0])
            top = db.execute("SELECT MAX(id) FROM memory_docs WHERE role != 'system'"
                             ).fetchone()[0]
            if top is None or int(top) <= after:
                return
        rows = db.execute(
            "SELECT d.id, d.session_id, d.seq, d.role, m.parts FROM memory_docs d"
            " JOIN messages m ON m.session_id = d.session_id AND m.seq = d.seq"
            " WHERE d.id > ? AND d.role != 'system' ORDER BY d.session_id, d.seq", (after,),
        ).fetchall()
        context: dict[int, tuple[int, str]] = {}  # session -> (last seq, rolling context)
        for doc, session_id, seq, role, parts in rows:
            last = context.get(session_id)
            previous = (last[1] if last is not None and last[0] == seq - 1
                        else self._context_before(db, session_id, seq))
            text = message_text(Message(role, loads_parts(parts)))
            self._add_fts(db, int(doc), int(session_id), text, previous)
            context[session_id] = (seq, self._roll(previous, text))

    def sync(self, sessions: Collection[int] | None = None) -> int:
        """Index what the store holds for ``sessions`` (ids; all when None) and the index not.

        Cheap when nothing is missing: one statement, two indexed lookups per session.
        """
        source, args = "SELECT id AS sid FROM sessions", list[Any]()
        if sessions is not None:
            source, args = "SELECT value AS sid FROM json_each(?)", [json.dumps(list(sessions))]
        with self.store.read() as db:
            tops = db.execute(
                "SELECT s.sid, (SELECT MAX(seq) FROM messages WHERE session_id = s.sid),"
                " (SELECT MAX(seq) FROM memory_docs WHERE session_id = s.sid)"
                f" FROM ({source}) s", args).fetchall()
        behind = [(int(sid), int(done or 0)) for sid, top, done in tops
                  if top is not None and int(done or 0) < int(top)]
        added = 0
        for sid, after in behind:
            with self.store.write() as db:
                record = SessionRecord(sid, "", self._name(db, sid), None,
                                       MappingProxyType({}), datetime.now(UTC))
                rows = db.execute(
                    "SELECT seq, role, parts, name, metadata, created_at, tokens FROM messages"
                    " WHERE session_id = ? AND seq > ? ORDER BY seq", (sid, after),
                ).fetchall()
                messages = [message_from_row(record.name, r) for r in rows]
                added += self.index_in(db, record, messages)
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
            with self.store.read() as db:
                # Messages are embedded in id order, one committed batch at a time, so
                # everything up to the newest vector has one: only newer ids are pending.
                after = self.vectors.newest_ref(db, "message")
                rows = db.execute(
                    "SELECT d.id, d.session_id, m.role, m.parts FROM memory_docs d JOIN"
                    " messages m ON m.session_id = d.session_id AND m.seq = d.seq"
                    " WHERE d.id > ? AND d.role != 'system' ORDER BY d.id LIMIT ?",
                    (after, size)).fetchall()
            if not rows:
                break
            texts = [message_text(Message(r[2], loads_parts(r[3])))[:_EMBED_LIMIT] or " "
                     for r in rows]
            vectors = self.embedder.embed(texts)
            with self.store.write() as db:
                self.vectors.add(db, "message", [(int(r[0]), int(r[1])) for r in rows],
                                 vectors)
            done += len(rows)
        return done

    # -- reading -------------------------------------------------------------------------

    def plan(self, query: str) -> MatchPlan:
        """How ``query`` is searched by this index's analyzer."""
        return self.analyzer.query(query)

    def keyword(
        self,
        query: str | MatchPlan,
        *,
        k: int = 50,
        sessions: Collection[int] | None = None,
        time_range: TimeRange | None = None,
        roles: Collection[str] | None = None,
    ) -> list[Candidate]:
        """BM25-ranked messages matching ``query`` (best first)."""
        plan = self.plan(query) if isinstance(query, str) else query
        if plan.empty or k <= 0:
            return []
        with self.store.read() as db:
            ranked: dict[int, tuple[float, Candidate]] = {}
            if plan.match is not None:
                for score, cand in self._match(db, plan.match, k * 2 if plan.short_terms else k,
                                               sessions, time_range, roles):
                    ranked[cand.doc] = (score, cand)
            if plan.short_terms:
                self._short(db, plan, k, sessions, time_range, roles, ranked)
        best = sorted(ranked.values(), key=lambda t: (-t[0], t[1].doc))
        return [cand for _, cand in best[:k]]

    def _filters(
        self, sessions: Collection[int] | None, time_range: TimeRange | None,
        roles: Collection[str] | None,
    ) -> tuple[str, list[Any]]:
        sql, args = "", list[Any]()
        if sessions is not None:  # one JSON parameter: no limit on how many sessions
            sql += " AND d.session_id IN (SELECT value FROM json_each(?))"
            args.append(json.dumps(list(sessions)))
        if time_range is not None:
            sql += " AND d.created >= ? AND d.created < ?"
            args.extend((time_range.start.timestamp(), time_range.end.timestamp()))
        if roles is not None:
            sql += f" AND d.role IN ({','.join('?' * len(roles))})"
            args.extend(roles)
        return sql, args

    def _match(
        self, db: sqlite3.Connection, match: str, k: int, sessions: Collection[int] | None,
        time_range: TimeRange | None, roles: Collection[str] | None,
    ) -> list[tuple[float, Candidate]]:
        expr = f"{{body context}} : ({match})"
        if sessions is not None and not sessions:
            return []
        if sessions is not None and self._scope_in_fts(db, sessions):
            scope = " OR ".join(f'"s{int(s)}x"' for s in sessions)
            expr = f"({expr}) AND (scope : ({scope}))"
            sessions = None
        where, args = self._filters(sessions, time_range, roles)
        t = self.table
        if where:
            rows = db.execute(
                f"SELECT d.id, d.session_id, d.seq, bm25({t}, 1.0, ?, 0.0) AS s FROM {t}"
                f" JOIN memory_docs d ON d.id = {t}.rowid WHERE {t} MATCH ?{where}"
                " ORDER BY s, d.id LIMIT ?", (self.context_weight, expr, *args, k),
            ).fetchall()
        else:
            # Rank inside FTS5 first and join only the k best: the join no longer runs
            # for every matching row, which is what made a search grow with the history.
            rows = db.execute(
                f"SELECT d.id, d.session_id, d.seq, r.s FROM (SELECT rowid AS id,"
                f" bm25({t}, 1.0, ?, 0.0) AS s FROM {t} WHERE {t} MATCH ?"
                " ORDER BY s, rowid LIMIT ?) r JOIN memory_docs d ON d.id = r.id"
                " ORDER BY r.s, d.id", (self.context_weight, expr, k),
            ).fetchall()
        return [(-float(r[3]), Candidate(int(r[0]), int(r[1]), int(r[2]))) for r in rows]

    @staticmethod
    def _scope_in_fts(db: sqlite3.Connection, sessions: Collection[int]) -> bool:
        """Whether to filter by ``sessions`` inside FTS5 (scope terms) rather than by a join.

        FTS5 merges one posting list per session, so scope terms cost more with every
        session; the join ranks every match in the store, then drops the ones outside. Terms
        win for a few sessions, or for sessions that hold a small part of the store (one
        user of many); the join wins when they hold most of it (one user's own store).
        """
        if len(sessions) <= _SCOPE_TERMS_MAX:
            return True
        total = int(db.execute("SELECT COALESCE(MAX(id), 0) FROM memory_docs").fetchone()[0])
        inside = int(db.execute(
            "SELECT COUNT(*) FROM memory_docs WHERE session_id IN"
            " (SELECT value FROM json_each(?))", (json.dumps(list(sessions)),)).fetchone()[0])
        return inside * 4 < total

    def _short(
        self, db: sqlite3.Connection, plan: MatchPlan, k: int, sessions: Collection[int] | None,
        time_range: TimeRange | None, roles: Collection[str] | None,
        ranked: dict[int, tuple[float, Candidate]],
    ) -> None:
        """Terms too short for the trigram index, matched by scanning (``instr``).

        A match adds the term's IDF (``ln(1 + N/df)``) to the BM25 score, so a message
        matching more and rarer short terms ranks higher.
        """
        where, args = self._filters(sessions, time_range, roles)
        t = self.table
        total = max(1, int(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]))
        for term in plan.short_terms:
            rows = db.execute(
                f"SELECT d.id, d.session_id, d.seq FROM {t} JOIN memory_docs d ON"
                f" d.id = {t}.rowid WHERE instr(lower({t}.body), ?) > 0{where}"
                " ORDER BY d.id DESC", (term.lower(), *args),
            ).fetchall()
            if not rows:
                continue
            idf = math.log(1 + total / len(rows))
            for doc, sid, seq in rows:
                score, cand = ranked.get(int(doc), (0.0, Candidate(int(doc), int(sid), int(seq))))
                ranked[int(doc)] = (score + idf, cand)

    def fusion_weights(self) -> dict[str, float]:
        """Return the RRF weight of each list (keyword and dense 1, time ``time_weight``)."""
        return {"time": self.time_weight}

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
        vector = self._query_vector(query)
        with self.store.read() as db:
            filtered = time_range is not None or roles is not None
            depth = k * 4 if filtered else k
            found = self.vectors.search(db, "message", vector, depth, sessions=sessions)
            if not found:
                return []
            where, args = self._filters(None, time_range, roles)
            rows = db.execute(
                "SELECT d.id, d.session_id, d.seq FROM memory_docs d WHERE d.id IN"
                f" (SELECT value FROM json_each(?)){where}",
                (json.dumps([ref for ref, _ in found]), *args),
            ).fetchall()
            if filtered and len(rows) < k and len(found) == depth:
                # Too few of the nearest pass the time and role filters: search among the
                # messages that pass them, so the k nearest of those come back.
                where, args = self._filters(sessions, time_range, roles)
                rows = db.execute("SELECT d.id, d.session_id, d.seq FROM memory_docs d"
                                  f" WHERE d.role != 'system'{where}", args).fetchall()
                found = self.vectors.search(db, "message", vector, k,
                                            refs=[int(r[0]) for r in rows])
        keep = {int(r[0]): Candidate(int(r[0]), int(r[1]), int(r[2])) for r in rows}
        return [keep[ref] for ref, _ in found if ref in keep][:k]

    def _query_vector(self, query: str) -> list[float]:
        with self._lock:
            cached = self._query_vectors.get(query)
            if cached is not None:
                self._query_vectors.move_to_end(query)
                return cached
        assert self.embedder is not None
        vector = self.embedder.embed([query])[0]
        with self._lock:
            self._query_vectors[query] = vector
            while len(self._query_vectors) > 256:
                self._query_vectors.popitem(last=False)
        return vector

    def in_range(
        self, *, k: int, sessions: Collection[int] | None, time_range: TimeRange,
        roles: Collection[str] | None = None,
    ) -> list[Candidate]:
        """Messages inside ``time_range``, oldest first (for questions naming only a time)."""
        where, args = self._filters(sessions, time_range, roles)
        with self.store.read() as db:
            rows = db.execute(
                "SELECT d.id, d.session_id, d.seq FROM memory_docs d WHERE d.role != 'system'"
                f"{where} ORDER BY d.created, d.id LIMIT ?", (*args, k),
            ).fetchall()
        return [Candidate(int(r[0]), int(r[1]), int(r[2])) for r in rows]

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
    ) -> dict[str, list[Candidate]]:
        """Return the lists to fuse: ``keyword``, ``dense`` (with an embedder), ``time``.

        ``time`` (boost mode, when a range is given) ranks the messages inside the range
        by the same retrievers, or, when nothing inside matches, lists them oldest first.
        """
        mode = time_mode or self.time_mode
        # The words of the time the question names are not searched: the range stands for
        # them ("last week" would match every "try it for a week").
        topic = without_time(query, time_range) if mode != "off" else query
        plan = self.plan(topic)
        use_keyword = "keyword" in retrievers
        use_dense = ("dense" in retrievers and self.vectors is not None
                     and self.embedder is not None and speaks(self.embedder, topic))

        def run(window: TimeRange | None) -> dict[str, list[Candidate]]:
            found: dict[str, list[Candidate]] = {}
            if use_keyword:
                found["keyword"] = self.keyword(plan, k=depth, sessions=sessions,
                                                time_range=window, roles=roles)
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
        inside_lists = run(time_range)
        inside = [c for c, _, _ in fuse(inside_lists)]
        if not inside:
            inside = self.in_range(k=depth, sessions=sessions, time_range=time_range,
                                   roles=roles)
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
        lists = self.ranked_lists(query, depth=max(50, 3 * k), sessions=sessions,
                                  time_range=time_range, roles=roles, time_mode=mode,
                                  retrievers=retrievers)
        fused = fuse({name: [c.doc for c in found] for name, found in lists.items()},
                     weights=self.fusion_weights())
        by_doc = {c.doc: c for found in lists.values() for c in found}
        return self.load([(by_doc[doc], score, names) for doc, score, names in fused[:k]])

    def load(self, ranked: Sequence[tuple[Candidate, float, tuple[str, ...]]]) -> list[Hit]:
        """Hits for ranked candidates: their messages, pages and session names, in order."""
        return list(self.load_docs(ranked).values())

    def load_docs(
        self, ranked: Sequence[tuple[Candidate, float, tuple[str, ...]]]
    ) -> dict[int, Hit]:
        """Hits for ranked candidates by doc id, in order (a vanished message is left out)."""
        hits: dict[int, Hit] = {}
        with self.store.read() as db:
            for cand, score, names in ranked:
                row = db.execute(
                    "SELECT m.seq, m.role, m.parts, m.name, m.metadata, m.created_at, m.tokens,"
                    " d.page FROM messages m JOIN memory_docs d ON d.session_id = m.session_id"
                    " AND d.seq = m.seq WHERE m.session_id = ? AND m.seq = ?",
                    (cand.session_id, cand.seq),
                ).fetchone()
                if row is None:
                    continue
                name = self._name(db, cand.session_id)
                page = (self.page_of(cand.session_id, cand.seq) if self.page_of is not None
                        else int(row[7]))
                hits[cand.doc] = Hit(message=message_from_row(name, row[:7]), page=page,
                                     score=score, retrievers=names, session=name)
        return hits

    def _name(self, db: sqlite3.Connection, session_id: int) -> str:
        name = self._names.get(session_id)
        if name is None:
            row = db.execute("SELECT name FROM sessions WHERE id = ?", (session_id,)).fetchone()
            name = str(row[0]) if row else str(session_id)
            self._names[session_id] = name
        return name

    def stats(self) -> IndexStats:
        """How many messages and vectors the index holds, and how it searches."""
        with self.store.read() as db:
            count = int(db.execute("SELECT COUNT(*) FROM memory_docs WHERE role != 'system'"
                                   ).fetchone()[0])
            vectors = self.vectors.count(db, "message") if self.vectors is not None else 0
        return IndexStats(
            analyzer=self.analyzer.name, messages=count,
            embedder=self.embedder.name if self.embedder is not None else None,
            vectors=vectors,
            vector_backend=self.vectors.backend if self.vectors is not None else None,
        )

    def version(self) -> int:
        """Return a number that grows whenever a message is indexed (for caches)."""
        with self.store.read() as db:
            return int(db.execute("SELECT COALESCE(MAX(id), 0) FROM memory_docs").fetchone()[0])


