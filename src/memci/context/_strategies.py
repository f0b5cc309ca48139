"""The simple truncation strategies of seed 001, as modes of the same machinery.

- ``oldest``: the system message, then the newest messages that fit;
- ``sliding_window``: the same, with at most ``max_messages`` messages;
- ``summarize``: what is cut is folded into a rolling summary placed after the system
  message. The cut moves in batches (between a high and a low watermark), so the summary
  and the start of the window stay the same between two cuts.

Every mode cuts only before a message that is not a tool result, so a tool call is never
split from its results; the newest unit is shrunk (never dropped) when it alone is too big.
A plan runs on a :meth:`draft` (the summarize window's cut and summary are copied), and
the build adopts it once its changes are committed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memci.context._fit import fit_messages, floor_tokens, newest_that_fit
from memci.context._log import TOOL, LogIndex
from memci.messages import Message
from memci.tokens import Tokenizer

__all__ = ["OldestWindow", "SummarizeWindow", "WindowLoader"]


class WindowLoader:
    """Loads messages of the window by position, keeping the last window cached."""

    def __init__(self, log: LogIndex, load: Callable[[int, int], list[Message]]) -> None:
        self.log = log
        self.load = load
        self._cache: dict[int, Message] = {}

    def prefetch(self, start: int) -> None:
        """Load the messages from position ``start`` on, so a plan reads nothing more."""
        if start < len(self.log):
            self.positions(start)

    def positions(self, start: int, end: int | None = None) -> list[Message]:
        """Messages at log positions ``[start, end)``."""
        seqs = self.log.seqs[start:end]
        missing = [s for s in seqs if s not in self._cache]
        if missing:
            for message in self.load(missing[0], missing[-1]):
                self._cache[message.seq or 0] = message
        window = [self._cache[s] for s in seqs]
        if len(self._cache) > 2 * len(seqs) + 64:
            keep = set(seqs)
            self._cache = {s: m for s, m in self._cache.items() if s in keep}
        return window


def _newest_unit_start(log: LogIndex) -> int:
    start = len(log) - 1
    while start > 0 and log.roles[start] == TOOL:
        start -= 1
    return max(start, 0)


def _shrunk_unit(loader: WindowLoader, room: int, tokenizer: Tokenizer) -> list[Message]:
    """The newest message with the calls it answers, cut to ``room`` (for this request)."""
    return fit_messages(loader.positions(_newest_unit_start(loader.log)), room, tokenizer)


class OldestWindow:
    """``oldest`` and ``sliding_window``: the newest messages that fit."""

    def __init__(self, loader: WindowLoader, tokenizer: Tokenizer, max_messages: int) -> None:
        self.loader = loader
        self.tokenizer = tokenizer
        self.max_messages = max_messages

    def draft(self) -> OldestWindow:
        """A plan over this window: it keeps no state, so itself."""
        return self

    def plan(self, room: int) -> list[Message]:
        """The window for ``room`` tokens."""
        log = self.loader.log
        if not len(log):
            return []
        start = newest_that_fit(log.roles, log.tokens, room, max_messages=self.max_messages)
        if start >= len(log):
            return _shrunk_unit(self.loader, room, self.tokenizer)
        return self.loader.positions(start)


class SummarizeWindow:
    """``summarize``: a rolling summary of what was cut, then the newest messages."""

    def __init__(
        self, loader: WindowLoader, tokenizer: Tokenizer,
        summarize: Callable[[Sequence[str], int], str], *, low_watermark: float,
        title: str = "## Summary of the earlier conversation",
    ) -> None:
        self.loader = loader
        self.tokenizer = tokenizer
        self.summarize = summarize
        self.low_watermark = low_watermark
        self.title = title
        self.cut = 0
        self.summary: Message | None = None
        self.changed = False

    def restore(self, cut: int, text: str) -> None:
        """Load a saved cut and summary."""
        self.cut = cut
        self.summary = self._message(text) if text else None

    def draft(self) -> SummarizeWindow:
        """A copy to plan on: its cut and summary change, this window's do not."""
        copy = SummarizeWindow(self.loader, self.tokenizer, self.summarize,
                               low_watermark=self.low_watermark, title=self.title)
        copy.cut, copy.summary = self.cut, self.summary
        return copy

    def adopt(self, plan: SummarizeWindow) -> None:
        """Take the cut and summary of a plan whose changes were committed."""
        self.cut, self.summary = plan.cut, plan.summary

    def _message(self, text: str) -> Message:
        message = Message.system(f"{self.title}\n{text}")
        return Message("system", message.parts, tokens=self.tokenizer.count_message(message))

    def plan(self, room: int, summary_cap: int) -> list[Message]:
        """The window for ``room`` tokens, the summary taking at most ``summary_cap``."""
        log = self.loader.log
        if not len(log):
            return []
        summary_tokens = self.summary.tokens or 0 if self.summary else 0
        high = room - summary_tokens
        if log.span_tokens(self.cut, len(log)) > high:
            target = int((room - summary_cap) * self.low_watermark)
            cut = newest_that_fit(log.roles, log.tokens, target, lo=self.cut)
            if cut >= len(log):
                cut = _newest_unit_start(log)
            if cut > self.cut:
                dropped = self.loader.positions(self.cut, cut)
                texts = [self.summary.content.split("\n", 1)[1]] if self.summary else []
                texts += [f"{m.role}: {m.content}" for m in dropped if m.content]
                self.summary = self._message(self.summarize(texts, summary_cap))
                self.cut = cut
                self.changed = True
        summary_tokens = self.summary.tokens or 0 if self.summary else 0
        if log.span_tokens(self.cut, len(log)) <= room - summary_tokens:
            window = self.loader.positions(self.cut)
            return [self.summary, *window] if self.summary else window
        unit = self.loader.positions(_newest_unit_start(log))
        if sum(floor_tokens(m, self.tokenizer) for m in unit) > room - summary_tokens:
            return fit_messages(unit, room, self.tokenizer)  # the summary gives way
        window = fit_messages(unit, room - summary_tokens, self.tokenizer)
        return [self.summary, *window] if self.summary else window
