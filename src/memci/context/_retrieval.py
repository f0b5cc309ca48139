"""The retrieval segment of a build: long-term memory for the question the page opened with.

Memory is gathered once per page, for the user message that opened it (seed 002: episodes
and preferences; the query analyzer adds documents and code, seed 003), and saved with the
page, so the requests of a tool loop and a reopened session carry the same text. What the
window holds is not searched: a memory line would only repeat it. When a build archives
pages the gather left out, the load phase gathers again without them left out (the
builder runs a draft plan to learn which pages leave), so retrieval is decided after what
is archived, and the plan reads nothing.

Memory is shown only for a page whose opener asks something (a question, a request to be
told or reminded, a tool loop's task: :func:`memci.memory._query.asks`), as titled
user-role messages of whole lines, best first, leaving out what the window shows. Its best
lines (:data:`KEPT_TOKENS` at most) are the page's :class:`Block`: placed right after the
opener and saved (:data:`BLOCKS`), it stays there, unchanged, while the page is in the
window, and leaves with it; the next turn appends its page after it, so the request before
it is an exact prefix a provider can cache. The rest of the page's lines close its request
only, in proportion to what the opener asks of memory (:attr:`Gathered.relevance`): all
the room the window leaves for a question about what the talk has left or that its matches
answer, little for a turn that asks in passing about what was just said ("The lake and your
sister, wonderful! Was it cold?"), which the next request drops. No line shows twice: a
page's lines leave out what the blocks in the window show.

When the matches leave room in the request (a question with few matches after pages that
held room for many), the turns around this conversation's matches fill it, nearest first:
an answer is often the turn after or before the one the question's words match. A page
gathers as many of them as the lines of its matches leave of :data:`AROUND_TOKENS`
(matches and turns together; none, and nothing read, when the matches fill them), shared
evenly among its matches (at most
:data:`AROUND_TURNS` on each side of one), so the fewer and the shorter the matches, the
further around each one. They come after every match, so they take only what the
matches leave, and never come alone: a page without matches shows none, and neither does
a task (a tool loop keeps the memory it had). They never size the room the window leaves for memory
(:meth:`RetrievalSource.reserve` counts the matches only), so the window and its archive
events are planned as without them.

Archived pages become long-term memory when a build commits (episodes, and the user's
facts that pass the eligibility judge).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import Any

from memci._dataclasses import replace
from memci._lazy import blake2b
from memci._records import NamedTuple
from memci.context._branches import runs
from memci.context._model import SEQ, ContentsEntry
from memci.context._recipes import TITLES
from memci.context._services import SessionServices
from memci.context._session_log import SessionLog
from memci.memory import Kept, Memory, Retrieved, Scope
from memci.memory._index import paused
from memci.messages import Message
from memci.store import SessionRecord
from memci.tokens import EstimateTokenizer, Tokenizer

__all__ = [
    "AROUND_TOKENS",
    "AROUND_TURNS",
    "BLOCKS",
    "HELD_TOKENS",
    "KEPT_TOKENS",
    "LINE_CHARS",
    "Block",
    "Gathered",
    "RetrievalSource",
    "blocks_form",
    "line_key",
    "saved_blocks",
]

EPISODES_GATHERED = 40  # episodes gathered per page at least ...
EPISODES_PER_1K = 10  # ... and this many per 1,000 tokens of budget (a large one shows many)
EPISODES_MAX = 80  # ... at most (each one costs a page's first build: 200 doubled it at 100k)
LINE_CHARS = 600  # characters of one memory line at most
BLOCKS = "retrieval.blocks"  # the context value that keeps each page's block
KEPT_TOKENS = 100  # tokens of the block a page keeps while it is in the window, at most
HELD_TOKENS = 2000  # tokens the window leaves for memory at most (its share, when smaller)
AROUND_TURNS = 10  # turns on each side of a match, at most, that fill what matches leave
AROUND_TOKENS = 4000  # tokens of lines, a page's matches and the turns around them, at most
RECENT = 6  # messages before a page's opener that say what the talk already holds
TALKED = 0.5  # share of the opener's terms they hold from which it asks memory nothing



class Gathered(NamedTuple):
    """A page's memory: the candidates, their saved form, whether this load gathered them.

    ``share``: whether memory takes its share of the page's requests (decided by the
    page's first gather and saved with it, so a gather again does not change how the
    page's requests are planned). ``around``: the turns around the matches, shown after
    every candidate in the room the candidates leave (never reserved for).
    """

    candidates: tuple[Retrieved, ...] = ()
    saved: Mapping[str, Any] | None = None
    gathered: bool = False
    around: tuple[Retrieved, ...] = ()

    @property
    def share(self) -> bool:
        """Whether memory takes its share of the budget on this page."""
        if self.saved is not None and "share" in self.saved:
            return bool(self.saved["share"])
        return bool(self.candidates)

    @property
    def asks(self) -> bool:
        """Whether the page's opener asks something (then memory shows all that fits).

        Decided by the page's first gather and saved with it; a page gathered before this
        was saved shows its memory as it did.
        """
        return self.saved is None or bool(self.saved.get("asks", True))

    @property
    def relevance(self) -> float:
        """How much of the room the window leaves the page's memory closing its request takes.

        0 to 1, decided by the page's first gather and saved with it (a page gathered before
        this was saved takes it all): the larger of the share of the opener's terms its
        questions hold (the rest is remarks: what memory finds for a remark's words is not
        needed to answer it, see :attr:`asks`) and how little of them the talk just before
        it (:data:`RECENT` messages) holds (none from :data:`TALKED` on). A question, or a
        turn about something the talk has left, takes all the room; a remark that asks in
        passing about what was just said ("The lake and your sister, wonderful! Was it
        cold?") takes little.
        """
        if self.saved is None:
            return 1.0
        return float(self.saved.get("relevance", 1.0))

    @property
    def left_out_from(self) -> int:
        """The seq from which the gather left the window out."""
        if self.saved is None:
            return 0
        return int(self.saved.get("from", self.saved["opener"]))


class Block(NamedTuple):
    """A page's memory block as placed: its message, the keys of the lines it shows.

    ``opener``: the seq of the user message that opened its page (the block sits right
    after it).
    """

    message: Message
    keys: frozenset[str]
    opener: int

    @classmethod
    def made(cls, message: Message, items: Sequence[Retrieved], opener: int) -> Block:
        """The block of ``message``, which shows ``items``, after message ``opener``."""
        return cls(message, frozenset(map(line_key, items)), opener)


def line_key(item: Retrieved) -> str:
    """What a memory line shows, as a short key (a block saves these, not its items)."""
    return blake2b(item.text.casefold().encode(), digest_size=8).hexdigest()


def saved_blocks(saved: object, opener_of: Callable[[int], int | None]) -> dict[int, Block]:
    """The blocks saved with their pages (the session's ``retrieval.blocks`` value).

    A block whose page no longer opens with the message it was placed after (a message
    retracted, a branch followed) is left out. ``opener_of``: a page's opener seq.
    """
    if not isinstance(saved, Mapping):
        return {}
    out: dict[int, Block] = {}
    for page, b in saved.items():
        if opener_of(int(page)) == b["opener"]:
            message = replace(Message.user(b["text"]), tokens=int(b["tokens"]))
            out[int(page)] = Block(message, frozenset(b["keys"]), int(b["opener"]))
    return out


def blocks_form(blocks: Mapping[int, Block]) -> dict[str, Any]:
    """The saved form of pages' blocks (read back by :func:`saved_blocks`)."""
    return {str(page): {"text": b.message.content, "tokens": b.message.tokens,
                        "keys": sorted(b.keys), "opener": b.opener}
            for page, b in sorted(blocks.items())}


class RetrievalSource:
    """Gathers a page's memory (load), renders its block (plan), remembers pages (commit)."""

    def __init__(self, services: SessionServices, record: SessionRecord, log: SessionLog,
                 tokenizer: Tokenizer, *, enabled: bool) -> None:
        self.services = services
        self.record = record
        self.log = log
        self.tokenizer = tokenizer
        self.enabled = enabled
        # a memory text -> what its line shows; (that, kind, source, date) -> the line
        # and its tokens
        self._shown: dict[str, str] = {}
        self._lines: dict[tuple[str, str, str, datetime | None], tuple[str, int]] = {}
        self._said: dict[str, frozenset[str]] = {}  # a message's terms (see _relevance)

    # -- load ----------------------------------------------------------------------------

    def reading(self) -> AbstractContextManager[None]:
        """A build's load phase: its gathers read memory once (see :meth:`Memory.reading`)."""
        return self.services.memory.reading() if self.enabled else nullcontext()

    def gather(self, saved: object, window_seq: int,
               archived: Callable[[int], bool], *, task: bool = False,
               budget: int = 0) -> Gathered:
        """Memory for the user message that opened the current page.

        ``saved``: what the page's last gather saved; it holds while the page is the same
        and the window starts where it did (or later). ``window_seq``: the seq the window
        starts at (not searched). ``archived``: whether a page of the followed branch has
        left the window. ``task``: this build is a tool loop's. Many more episodes are
        gathered than a small budget shows: the plan shows, best first, what fits.

        A task keeps to its own past (seed 004 keeps a tool loop's context apart from
        other conversations'): other sessions' memory comes in only when the page's
        opener refers to earlier work ("as last time", "上次"). Once a page or a session
        has been a task it stays one, so its requests do not change back.
        """
        index = self.log.index
        if not self.enabled or not index.pages:
            return Gathered(saved=saved if isinstance(saved, Mapping) else None)
        start, _ = index.page_span(index.pages)
        opener = index.seqs[start]
        task = task or (isinstance(saved, Mapping) and bool(saved.get("task")))
        if (isinstance(saved, Mapping) and saved.get("opener") == opener
                and int(saved.get("from", opener)) >= window_seq):
            known = tuple(_retrieved_from(t) for t in saved["texts"])
            if task and not saved.get("task"):
                # The page turned out a task's: from now on it keeps to its own past, and
                # the memory its matches had.
                turned = {**saved, "task": True, "asks": True, "around": []}
                kept = self._kept(known, turned)
                return Gathered(kept, {**turned, "share": bool(kept)}, gathered=True)
            around = tuple(_retrieved_from(t) for t in saved.get("around", ()))
            return Gathered(self._kept(known, saved), saved, around=around)
        # The query's analysis loads with the first page that gathers (the docs index with
        # the first query that consults documents or code).
        from memci.memory._query import analyze_query, asks
        from memci.memory._speaker import named, without_names
        from memci.memory._time import without_time

        *recent, first = self.log.load_seqs(max(1, opener - RECENT), opener)
        found: tuple[Retrieved, ...] = ()
        asked = ""  # what the matches are to answer (see _relevance)
        earlier = False
        wants = task
        if first.role == "user" and first.content.strip():
            query = first.content[:500]
            # "Yesterday" counts from when the question was asked (a replayed or imported
            # conversation keeps its own dates), not from the wall clock.
            gathered = self.services.gatherer.gather(
                query, session=self.record, scope="user", exclude_from_seq=window_seq,
                max_episodes=episodes_gathered(budget), now=first.created_at)
            found = _deduped(replace(gathered, episodes=tuple(
                h for h in gathered.episodes if self.log.on_branch(h, archived))).texts,
                self._shown)
            # The query analyzer (rules: a build never waits on a model) says which other
            # sources this input needs: earlier work, documents, code (seed 003).
            analysis = analyze_query(query, now=first.created_at)
            earlier = analysis.consults("history")
            asked = without_time(without_names(query, named(query)), analysis.time_range)
            wants = (wants or asks(query) or analysis.consults("documents")
                     or analysis.consults("code"))
            if analysis.consults("documents") or analysis.consults("code"):
                from memci.memory import DocIndex

                # Memory's embedder: the question's vector is the one its search asked for.
                docs = DocIndex(self.services.store, embedder=self.services.memory.embedder
                                ).search_docs(query, k=3)
                found += tuple(
                    Retrieved(h.text[:600], f"{h.path}#L{h.start_line}-{h.end_line}",
                              "document", h.score) for h in docs)
        kept = self._kept(found, {"task": task, "earlier": earlier})
        relevance = self._relevance(asked, recent) if kept else 0.0
        # As many tokens as the matches leave of AROUND_TOKENS: none when they fill them (and
        # none read), more the fewer and the shorter they are.
        around = () if task else self._around(kept, window_seq, AROUND_TOKENS)
        form = {**_saved(found, opener, window_seq), "task": task, "earlier": earlier,
                "asks": wants, "around": _texts_form(around), "relevance": relevance}
        return Gathered(kept, {**form, "share": bool(kept)}, gathered=True, around=around)

    def _relevance(self, query: str, recent: Sequence[Message]) -> float:
        """How much of the room its memory earns: see :attr:`Gathered.relevance`.

        ``query``: the opener without the people it names (both speakers say the names) and
        its time (the matches' dates hold it); ``recent``: the turns before it. Terms are
        compared as the index cuts them (stemmed: "painted" is "paint").
        """
        from memci.memory._query import asks
        from memci.text import split_sentences
        from memci.text._terms import terms  # with the first page that gathers

        analyzer = self.services.memory.messages.analyzer

        def cut(text: str) -> frozenset[str]:
            return frozenset(terms(analyzer.tokenize, analyzer.document(text)))

        asked = cut(" ".join(analyzer.query(query).terms))
        if not asked:
            return 1.0
        questions = cut("\n".join(s for s in split_sentences(query) if asks(s)))
        said: set[str] = set()
        if len(self._said) > 4096:
            self._said.clear()
        for m in recent:  # each message is among the recent ones of several pages
            if m.role in ("user", "assistant"):
                kept = self._said.get(m.content)
                if kept is None:  # cut once, even when it holds no term
                    kept = self._said[m.content] = cut(m.content)
                said |= kept
        return max(len(asked & questions) / len(asked),
                   1.0 - len(asked & said) / len(asked) / TALKED, 0.0)

    def _around(self, found: Sequence[Retrieved], window_seq: int,
                room: int) -> tuple[Retrieved, ...]:
        """The turns around this conversation's matches in ``found``, nearest first.

        Their lines take what the matches' lines leave of ``room`` tokens; as
        many turns are read on each side of each match as lines of the matches' mean
        length fill it (at most :data:`AROUND_TURNS`), within the same stretch of talk
        (a pause of hours ends it, as it ends a message's context in the index: the
        session before it talked of other things), the best match's first at each
        distance (the turn after it, then the one before); only what left the window
        (before ``window_seq``), on the followed branch, said by the user or the
        assistant, and not shown by a line of ``found``.
        """
        # ``count`` turns of the matches' mean length fill the room, nearest first: the
        # first count/2 matches' next turns already make it, and each reaches as far as
        # makes it (matches close together share their neighbours).
        ours = [r.seq for r in found if r.session == self.record.name and r.seq is not None]
        if not ours:
            return ()
        used = self._tokens(found, 0, room)
        if used >= room:
            return ()
        room -= used
        count = room * len(found) // used
        matched = ours[:count // 2]
        if count < 2:
            return ()
        near, reach = set(matched), 0
        while reach < AROUND_TURNS and len(near.difference(ours)) < count:
            reach += 1
            near.update(seq for m in matched for seq in (m - reach, m + reach)
                        if 0 < seq < window_seq)
        loaded = {m.seq or 0: m for first, last in runs(sorted(near))
                  for m in self.log.load(first, last)}
        sides = [_side(loaded, m, step, reach) for m in matched if m in loaded
                 for step in (1, -1)]
        taken = set(matched)
        turns: list[Retrieved] = []
        index, name = self.log.index, self.record.name
        for distance in range(reach):
            for side in sides:
                if distance < len(side) and side[distance].seq not in taken:
                    turn = side[distance]
                    seq = turn.seq or 0
                    taken.add(seq)
                    if turn.role in ("user", "assistant") and turn.content.strip():
                        page = index.page_of_seq(seq)
                        turns.append(Retrieved(turn.content, f"{name}#p{page}/{seq}",
                                               "episode", 0.0, name, seq, turn.created_at,
                                               page))
        shown = {r.text.casefold() for r in found}
        out: list[Retrieved] = []
        for item in _deduped(turns, self._shown):
            if item.text.casefold() not in shown:
                room -= self._line(item)[1]
                if room < 0:
                    break
                out.append(item)
        return tuple(out)

    def _kept(self, found: tuple[Retrieved, ...],
              saved: Mapping[str, Any]) -> tuple[Retrieved, ...]:
        """What a page shows of its memory: a task's, without other sessions' past."""
        if not saved.get("task") or saved.get("earlier"):
            return found
        return tuple(r for r in found if r.session in (None, self.record.name))

    # -- plan ----------------------------------------------------------------------------

    def reserve(self, found: Sequence[Retrieved], cap: int, language: str) -> int:
        """Tokens held for memory before the window is planned: every line found, to ``cap``.

        What was found matches the question (a search returns only matches), so memory
        takes the room its matches need, up to its share, and the window gives way: memory
        no longer takes only what the window happens to leave, which depended on where the
        window sat between its watermarks (a chat built turn by turn, near the high one,
        held three lines where the same history imported held twenty).
        """
        if not found or cap <= 0:
            return 0
        return self._tokens(found, self.tokenizer.count(TITLES[language].retrieval) + 8, cap)

    def _tokens(self, found: Sequence[Retrieved], start: int, cap: int) -> int:
        """``start`` and the tokens of the lines of ``found``, counted up to ``cap``."""
        used = start
        for item in found:
            used += self._line(item)[1]
            if used >= cap:
                return cap
        return used

    def message(self, found: Sequence[Retrieved], window: Sequence[Message], room: int,
                language: str, *, placed: frozenset[str] = frozenset()
                ) -> tuple[Message | None, tuple[Retrieved, ...]]:
        """A titled user-role block of the best lines that fit ``room``.

        With the items its lines show. Lines go in rank order, leaving out what the window
        shows and what a block ``placed`` in it shows (the keys of its lines, see
        :func:`line_key`); each line is whole or left out, never cut.
        """
        if not found or room <= 0:
            return None, ()
        shown = set(map(SEQ, window))
        shown.discard(None)  # messages memci wrote (a contents page) have no seq
        title = TITLES[language].retrieval
        used = self.tokenizer.count(title) + 8
        lines = [title]
        items: list[Retrieved] = []
        for item in found:
            if ((item.session == self.record.name and item.seq in shown)
                    or line_key(item) in placed):
                continue
            line, tokens = self._line(item)
            if used + tokens > room:
                continue
            lines.append(line)
            items.append(item)
            used += tokens
        if not items:
            return None, ()
        # A message's framing and its text count apart (count_message adds them).
        tokens = self.tokenizer.count_message(Message.user("")) + self._lines_tokens(lines)
        return replace(Message.user("\n".join(lines)), tokens=tokens), tuple(items)

    def _line(self, item: Retrieved) -> tuple[str, int]:
        """One line of the segment for ``item``, and its tokens (made once)."""
        key = (item.text, item.kind, item.source, item.created_at)
        made = self._lines.get(key)
        if made is None:
            when = f"{item.created_at:%Y-%m-%d} · " if item.created_at is not None else ""
            line = f"- [{when}{item.kind} · {item.source}] {_squeezed(item.text, LINE_CHARS)}"
            made = (line, self._lines_tokens((line,)) + 1)
            if len(self._lines) > 4096:
                self._lines.clear()
            self._lines[key] = made
        return made

    def _lines_tokens(self, lines: Sequence[str]) -> int:
        """Tokens of ``lines`` joined by newlines.

        The estimator sums the lines' kept estimates (memory lines recur from build to
        build): each line is estimated once, for its own count and for the block's.
        """
        if isinstance(self.tokenizer, EstimateTokenizer):
            return self.tokenizer.count_lines(lines)
        return self.tokenizer.count("\n".join(lines))

    # -- commit --------------------------------------------------------------------------

    def remember(self, memory: Memory, pages: Sequence[tuple[int, list[Message]]],
                 listed: Mapping[int, ContentsEntry]) -> None:
        """Keep archived pages as episodic memory, and the user's facts at user scope.

        What the user states about themselves, their preferences, decisions, constraints
        and corrections passes the eligibility judge (seed 003) into long-term memory,
        with the judge's reason in its source. The judge here is the rule-based one:
        a build never waits on a model. Pages archived with a backlog, never loaded, stay
        findable as messages. ``listed``: the contents page's entries after the plan.
        """
        if not pages:
            return
        from memci.memory._judge import judge  # with the LLM answers: once pages archive

        scope = Scope.of(self.record, "user")
        kept: list[tuple[int, str, str | None]] = []
        said_at: dict[int, datetime] = {}
        for page, messages in pages:
            said = "\n".join(m.content for m in messages if m.role in ("user", "assistant"))
            if said.strip():
                entry = listed.get(page)
                kept.append((page, said, "\n".join(entry.lines) if entry is not None else ""))
                # The page holds from when it was said (a replayed chat keeps its dates), so
                # its memory line shows that date and a time in a question can match it.
                when = next((m.created_at for m in messages if m.created_at is not None), None)
                if when is not None:
                    said_at[page] = when
        memory.remember_pages(self.record, kept, said_at=said_at)  # one batch an event
        facts: dict[str, list[Kept]] = {}  # by kind: one batch each
        for page, messages in pages:
            users = "\n".join(m.content for m in messages if m.role == "user")
            verdict = judge(users)
            if not verdict.eligible:
                continue
            source = f"{self.record.name}#p{page} · {verdict.source}: {verdict.reason}"
            facts.setdefault(verdict.kind, []).extend(
                Kept(fact, source=source[:300]) for fact in verdict.facts[:5])
        for kind, entries in facts.items():
            memory.remember_many(scope, kind, entries)


def episodes_gathered(budget: int) -> int:
    """How many episodes a page gathers for a request of ``budget`` tokens."""
    return max(EPISODES_GATHERED, min(EPISODES_MAX, budget * EPISODES_PER_1K // 1000))


def _saved(found: Sequence[Retrieved], opener: int, start: int) -> dict[str, Any]:
    """The saved form of a page's memory.

    Its opener, the seq from which the window was left out of the search, the texts.
    """
    return {"opener": opener, "from": start, "share": bool(found),
            "texts": _texts_form(found)}


def _texts_form(found: Sequence[Retrieved]) -> list[dict[str, Any]]:
    """The saved form of memory texts (read back by :func:`_retrieved_from`)."""
    return [{"text": r.text, "source": r.source, "kind": r.kind, "score": r.score,
             "session": r.session, "seq": r.seq, "page": r.page,
             "at": r.created_at.isoformat() if r.created_at is not None else None}
            for r in found]


def _side(loaded: Mapping[int, Message], seq: int, step: int, reach: int) -> list[Message]:
    """The messages after (``step`` 1) or before (-1) message ``seq``, nearest first.

    Up to ``reach``, stopping at a message not ``loaded`` and at a pause.
    """
    out: list[Message] = []
    last = loaded[seq]
    for distance in range(1, reach + 1):
        m = loaded.get(seq + step * distance)
        if m is None or (paused(last.created_at, m.created_at) if step > 0
                         else paused(m.created_at, last.created_at)):
            break
        out.append(m)
        last = m
    return out


def _retrieved_from(saved: Mapping[str, Any]) -> Retrieved:
    at = saved.get("at")
    return Retrieved(saved["text"], saved["source"], saved["kind"], saved["score"],
                     saved.get("session"), saved.get("seq"),
                     datetime.fromisoformat(at) if isinstance(at, str) else None,
                     saved.get("page"))


def _deduped(found: Sequence[Retrieved], shown_of: dict[str, str]) -> tuple[Retrieved, ...]:
    """Memory without repeats, each text as its line shows it.

    A page's summary is left out when one of its messages was found, and so is a text
    whose line would show what a line before shows (spaces squeezed, cut to
    :data:`LINE_CHARS`, case aside). A text keeps what its line shows: only that is
    saved with the page and read again. ``shown_of`` keeps what a text shows (the same
    messages are found again and again).
    """
    pages = {(r.session, r.page) for r in found if r.seq is not None and r.page is not None}
    seen: set[str] = set()
    out: list[Retrieved] = []
    if len(shown_of) > 4096:
        shown_of.clear()
    for r in found:
        shown = shown_of.get(r.text)
        if shown is None:
            shown = shown_of[r.text] = _squeezed(r.text, LINE_CHARS)
        key = shown.casefold()
        if key in seen or (r.seq is None and r.kind == "episode"
                           and (r.session, r.page) in pages):
            continue
        seen.add(key)
        out.append(r if shown == r.text else Retrieved(
            shown, r.source, r.kind, r.score, r.session, r.seq, r.created_at, r.page))
    return tuple(out)


def _squeezed(text: str, limit: int) -> str:
    """``" ".join(text.split())[:limit]``, reading about as much of ``text`` as it needs."""
    n = 2 * limit
    while n < len(text):
        words = text[:n].split()
        head = " ".join(words[:-1])  # the last word may be cut: the rest is the text's
        if len(head) >= limit:
            return head[:limit]
        n *= 2
    return " ".join(text.split())[:limit]
