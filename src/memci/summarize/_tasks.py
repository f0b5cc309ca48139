"""Summaries as background jobs, and the never-waiting reader ``build`` uses.

Job kinds (payloads are JSON; messages travel in memci's wire form):

- ``summarize_page``: ``{"messages": [...]}`` → ``{"title", "lines", "source", "form"}``
  (``form`` ``"entries"``: one line per message; ``"page"``: 1 to len(messages) lines
  about the whole page, what a model that answers in prose or bullets wrote);
- ``summarize_text``: ``{"texts": [...], "max_tokens": n}`` → ``{"text", "source"}``;
- ``handoff``: ``{"messages": [...], "max_tokens": n}`` → ``{"text", "source"}``.

:class:`SummaryJobs` is the build side: :meth:`SummaryJobs.submit_page` when a page is
archived (one write, idempotent), :meth:`SummaryJobs.page` on every build (one indexed
read, never a write, never a wait): the model's summary when its job is done, else the
extractive stand-in, computed once per page and cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memci._lazy import blake2b
from memci._records import NamedTuple
from memci.errors import InvalidInputError
from memci.messages import Message, from_wire, to_wire
from memci.summarize._extractive import ExtractiveSummarizer
from memci.summarize._protocol import Summarizer

if TYPE_CHECKING:
    from memci.llm import LLMClient
    from memci.summarize._jobs import Effect, Job, JobQueue

__all__ = [
    "HANDOFF",
    "SUMMARIZE_PAGE",
    "SUMMARIZE_TEXT",
    "PageSummary",
    "SummaryJobs",
    "default_summarizer",
    "page_key",
    "register_summary_handlers",
]

SUMMARIZE_PAGE = "summarize_page"
SUMMARIZE_TEXT = "summarize_text"
HANDOFF = "handoff"


class PageSummary(NamedTuple):
    """A page's title and lines; ``source`` says who wrote them, ``form`` what they are.

    ``form`` ``"entries"``: one line per message, in order; ``"page"``: 1 to len(page)
    lines about the page as a whole (a model's prose or bullets), shown without roles.
    """

    title: str
    lines: tuple[str, ...]
    source: str
    form: str = "entries"

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form stored as a job's result."""
        return {"title": self.title, "lines": list(self.lines), "source": self.source,
                "form": self.form}

    @classmethod
    def from_json(cls, data: Any, entries: int | None = None) -> PageSummary | None:
        """Read a stored result; None when it is not one (or its lines do not fit the page).

        A result stored before ``form`` existed is one line per message.
        """
        if not isinstance(data, Mapping):
            return None
        title, lines, source = data.get("title"), data.get("lines"), data.get("source")
        form = data.get("form", "entries")
        if not isinstance(title, str) or not isinstance(lines, list) or not all(
            isinstance(line, str) for line in lines
        ) or form not in ("entries", "page"):
            return None
        if entries is not None and not (
                len(lines) == entries if form == "entries" else 1 <= len(lines) <= entries):
            return None
        return cls(title, tuple(lines), source if isinstance(source, str) else "llm", form)


def page_key(messages: Sequence[Message], *, session: str | None = None) -> str:
    """Return the idempotency key of a page's summary job: session, seq range, content."""
    digest = blake2b(digest_size=8)
    for m in messages:
        digest.update(m.role.encode())
        digest.update(b"\x00")
        digest.update(m.content.encode("utf-8", "surrogatepass"))
        for call in m.tool_calls:
            digest.update(b"\x01" + call.name.encode() + b"\x02" + call.arguments.encode())
        digest.update(b"\x03")
    seqs = [m.seq for m in messages if m.seq is not None]
    where = session or next((m.session for m in messages if m.session), None) or "-"
    span = f"{min(seqs)}-{max(seqs)}" if seqs else "-"
    return f"{SUMMARIZE_PAGE}:{where}:{span}:{digest.hexdigest()}"


def _messages(payload: Mapping[str, Any]) -> list[Message]:
    raw = payload.get("messages")
    if not isinstance(raw, list):
        raise InvalidInputError("the job payload has no 'messages' list")
    return [from_wire(item) for item in raw]


def _budget(payload: Mapping[str, Any]) -> int:
    value = payload.get("max_tokens")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError("the job payload needs 'max_tokens', an integer >= 1")
    return value


def register_summary_handlers(
    queue: JobQueue, summarizer: Summarizer, *, effect: Effect | None = None
) -> None:
    """Register the three summary kinds on ``queue``, answered by ``summarizer``.

    ``effect`` (optional) runs in the transaction that marks each job done, e.g. to copy
    a page summary into the caller's own table exactly once.
    """
    from memci.summarize._llm import LLMSummarizer  # with the LLM answers: queues only

    source = str(getattr(summarizer, "name", type(summarizer).__name__))

    def page(job: Job) -> dict[str, Any]:
        messages = _messages(job.payload)
        if isinstance(summarizer, LLMSummarizer):
            title, lines, form = summarizer.page_summary(messages)
            return PageSummary(title, tuple(lines), source, form).to_json()
        title, lines = summarizer.page_title(messages), summarizer.summarize_page(messages)
        return PageSummary(title, tuple(lines), source).to_json()

    def text(job: Job) -> dict[str, Any]:
        texts = job.payload.get("texts")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("the job payload needs 'texts', a list of strings")
        return {"text": summarizer.summarize_text(texts, _budget(job.payload)),
                "source": source}

    def handoff(job: Job) -> dict[str, Any]:
        return {"text": summarizer.handoff(_messages(job.payload), _budget(job.payload)),
                "source": source}

    queue.register(SUMMARIZE_PAGE, page, effect=effect)
    queue.register(SUMMARIZE_TEXT, text, effect=effect)
    queue.register(HANDOFF, handoff, effect=effect)


def default_summarizer(client: LLMClient | None = None, *, from_env: bool = True) -> Summarizer:
    """Return the summarizer a worker uses: the model when configured, else extractive.

    The model summarizer is strict (errors raise, so the job is retried and its failure
    recorded) because the extractive stand-in already serves until a job is done.
    """
    from memci.llm import client_from_env
    from memci.summarize._llm import LLMSummarizer

    chosen = client if client is not None else (client_from_env() if from_env else None)
    if chosen is None:
        return ExtractiveSummarizer()
    return LLMSummarizer(chosen, strict=True)


class SummaryJobs:
    """Page summaries for ``build``: the job's result when ready, else the stand-in.

    ``queue`` may be None (no background summaries: always the stand-in). The stand-in
    for a page is computed once and kept in an LRU of ``cache_size`` pages.
    """

    def __init__(
        self,
        queue: JobQueue | None,
        *,
        stand_in: Summarizer | None = None,
        cache_size: int = 4096,
        max_attempts: int | None = None,
    ) -> None:
        self.queue = queue
        self.stand_in: Summarizer = stand_in or ExtractiveSummarizer()
        self._cache: OrderedDict[str, PageSummary] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._max_attempts = max_attempts

    def submit_page(self, messages: Sequence[Message], *, session: str | None = None) -> str:
        """Queue the model summary of a page (idempotent); returns its key."""
        key = page_key(messages, session=session)
        if self.queue is not None:
            self.queue.submit(
                SUMMARIZE_PAGE, key, {"messages": [to_wire(m) for m in messages]},
                max_attempts=self._max_attempts,
            )
        return key

    def submit_pages(
        self, pages: Sequence[Sequence[Message]], *, session: str | None = None
    ) -> list[str]:
        """Queue the model summaries of many pages in one transaction; returns their keys."""
        keys = [page_key(p, session=session) for p in pages]
        if self.queue is not None and pages:
            self.queue.submit_many(
                [(SUMMARIZE_PAGE, key, {"messages": [to_wire(m) for m in p]})
                 for key, p in zip(keys, pages, strict=True)],
                max_attempts=self._max_attempts,
            )
        return keys

    def submit_keyed(self, pages: Sequence[tuple[str, Sequence[Message]]]) -> None:
        """Queue the model summaries of pages the caller keys itself, in one transaction.

        A session keys a page by its number and seq range, so it can ask for the summary
        later knowing only that (:meth:`ready`).
        """
        if self.queue is not None and pages:
            self.queue.submit_many(
                [(SUMMARIZE_PAGE, key, {"messages": [to_wire(m) for m in messages]})
                 for key, messages in pages],
                max_attempts=self._max_attempts,
            )

    def ready(self, keys: Mapping[str, int]) -> dict[str, PageSummary]:
        """The model's summaries of the pages done so far, by key (``keys``: key -> entries).

        One read of the job table; never waits. A result whose lines do not fit the page's
        entries is not used.
        """
        if self.queue is None or not keys:
            return {}
        out: dict[str, PageSummary] = {}
        for key, result in self.queue.results(list(keys)).items():
            summary = PageSummary.from_json(result, keys[key])
            if summary is not None:
                out[key] = summary
        return out

    def page(self, messages: Sequence[Message], *, session: str | None = None) -> PageSummary:
        """Return the best summary ready now; never wait, never write."""
        key = page_key(messages, session=session)
        if self.queue is not None:
            ready = PageSummary.from_json(self.queue.result(key), len(messages))
            if ready is not None:
                return ready
        return self._stand_in(key, messages)

    def pages(
        self, pages: Sequence[Sequence[Message]], *, session: str | None = None
    ) -> list[PageSummary]:
        """:meth:`page` for many pages with one read of the job table."""
        keys = [page_key(p, session=session) for p in pages]
        done = self.queue.results(keys) if self.queue is not None else {}
        out = []
        for key, messages in zip(keys, pages, strict=True):
            ready = PageSummary.from_json(done.get(key), len(messages))
            out.append(ready if ready is not None else self._stand_in(key, messages))
        return out

    def _stand_in(self, key: str, messages: Sequence[Message]) -> PageSummary:
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
        made = PageSummary(
            self.stand_in.page_title(messages), tuple(self.stand_in.summarize_page(messages)),
            str(getattr(self.stand_in, "name", "extractive")),
        )
        with self._lock:
            self._cache[key] = made
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return made
