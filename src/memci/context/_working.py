"""The working-state segment of a build: fastmemo, context pool, pins, plan, notebook.

Seed 004's recipes show the session's working state under titled sections, in the
recipe's order (:mod:`memci.context._recipes`). A section over its share is summarized
down, never dropped (seed 003), and a section with nothing left under its title is not
sent; no line under a title reads as a title (a summary's line that starts with ``#`` is
escaped), and a segment too long for its share is fitted again with less room, never
cut through its titles. The segment is rendered once per change of the working state (or
of its share): between two changes every request carries the same text, byte for byte.

What a build commits into the working state also comes through here: one notebook line
per tool result that left the window (seed 004, phase 1), and the lines of evicted pages
folded into the context pool, in one :meth:`WorkingStateSource.committing` block whose
render (the segment as the commit leaves it) reads nothing the writes read already. What
is rendered inside a transaction is kept only once it commits (:meth:`keep`). Pins expire
once per round, in the load phase.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from memci._dataclasses import replace
from memci.context._model import ContentsEntry
from memci.context._recipes import TITLES, Recipe, Section
from memci.context._tool_views import ToolViews
from memci.messages import Message
from memci.store import SessionRecord, Store
from memci.tokens import Tokenizer
from memci.workspace import CHINESE_TITLES, ENGLISH_TITLES, WorkState
from memci.workspace._summary import arguments_line

__all__ = ["WorkingStateSource"]

_SOURCE_CHARS = 300  # a notebook line's source at most (a call id may be long)


class WorkingStateSource:
    """The session's working state as a segment, and what builds write into it."""

    def __init__(self, store: Store, record: SessionRecord, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.work = WorkState(store, record)
        self._cache: tuple[tuple[Any, ...], Message | None] = ((), None)
        self._expired_round = 0
        self._pinless = -1  # a version of the state at which it held no pin
        self._seen: int | None = None  # the state's version the build read (saw)

    def saw(self, version: int) -> None:
        """The state's version, read with the session's heads at the build's start."""
        self._seen = version

    def forget(self) -> None:
        """Forget what was rendered and expired (read again: a transaction was rolled back)."""
        self._cache = ((), None)
        self._expired_round = 0
        self._pinless = -1
        self._seen = None

    def state(self, language: str) -> WorkState:
        """The working state, with titles in ``language``."""
        self.work.titles = CHINESE_TITLES if language == "zh" else ENGLISH_TITLES
        return self.work

    def expire_pins(self, round: int, language: str) -> int | None:
        """Expire pins once per round (by time and by rounds): they move to the notebook.

        Only when there are pins: a chat without pins pays no write per round (the round
        a new pin starts from is recorded before a state tool runs), and no read of its
        pins while the state is at a version that held none (every change is an event).
        The version is the one :meth:`saw` gave, when given since the last call (then
        returned in a round already expired too: nothing was written since it was read).
        Returns the state's version when it was read and nothing was written since (for
        :meth:`render`), else None.
        """
        seen, self._seen = self._seen, None
        if round == self._expired_round:
            return seen
        self._expired_round = round
        state = self.state(language)
        version = state.version() if seen is None else seen
        if version == self._pinless:
            return version
        if state.pin_list():
            state.expire(round=round)
            return None
        self._pinless = version
        return version

    def render(self, recipe: Recipe, cap: int, language: str, *,
               version: int | None = None) -> Message | None:
        """The segment for ``recipe``: titled sections within ``cap`` tokens (None: empty).

        ``version``: the state's version, when the caller read it and nothing changed since.
        """
        key, message = self.rendered(self.state(language), recipe, cap, language,
                                     version=version)
        self.keep(key, message)
        return message

    def keep(self, key: tuple[Any, ...], message: Message | None) -> None:
        """Keep a render (of :meth:`rendered`) for the builds after, while its key holds."""
        self._cache = (key, message)

    def rendered(self, state: WorkState, recipe: Recipe, cap: int, language: str, *,
                 version: int | None = None) -> tuple[tuple[Any, ...], Message | None]:
        """The segment of ``state`` for ``recipe``, and its key (not kept: see :meth:`keep`).

        Inside a transaction, what it renders is kept only once the transaction commits
        (its events' ids may be given again if it rolls back). ``version``: as in
        :meth:`render`.
        """
        key = (recipe.sections, state.version() if version is None else version, cap, language)
        if self._cache[0] == key:
            return key, self._cache[1]
        render = {"fastmemo": state.render_fastmemo, "context_pool": state.render_context_pool,
                  "pins": state.render_pins, "plan": state.render_plan,
                  "notebook": state.render_notebook}
        with state.reading():
            sections = {name: text for name in recipe.sections if (text := render[name]())}
        message: Message | None = None
        if sections:
            title = TITLES[language].state
            heads = {k: v.split("\n", 1)[0] for k, v in sections.items()}
            bodies = {k: v.split("\n", 1)[1] if "\n" in v else "" for k, v in sections.items()}
            room = max(0, cap - self.tokenizer.count(title + "".join(heads.values())) - 8)
            for _ in range(4):  # fitted again with less room while it passes its share
                text = _titled(title, heads, self._fitted(bodies, room))
                over = self.tokenizer.count_message(Message.system(text)) - cap if text else 0
                if over <= 0 or room <= 0:
                    break
                room = max(0, room - over - 8)
            if text:
                built = Message.system(text)
                tokens = self.tokenizer.count_message(built)
                # Too small a share for even a line: nothing, rather than over the budget.
                message = replace(built, tokens=tokens) if tokens <= cap else None
        return key, message

    def _fitted(self, bodies: Mapping[Section, str], room: int) -> dict[Section, str]:
        """The sections' bodies within ``room``: over its share, a section is summarized."""
        from memci.summarize import ExtractiveSummarizer, fit_sections

        fitted = fit_sections(bodies, room, self.tokenizer, ExtractiveSummarizer())
        return {name: _untitled(body) for name, body in fitted.items()}

    # -- what a build commits ------------------------------------------------------------

    @contextmanager
    def committing(self, language: str) -> Iterator[WorkState]:
        """The state a build's commit writes, in one writing block (each value read once).

        Inside the build's transaction: its adds, and the render after them, share what
        the block read.
        """
        state = self.state(language).with_actor("memci")
        with state.writing():
            yield state

    def note_hidden(self, state: WorkState, results: Iterable[Message],
                    views: ToolViews) -> None:
        """One short notebook line per tool result that left the window (seed 004, phase 1).

        Steps of a tool loop leave the window in batches; the notebook keeps a sourced line
        with the pointer for each, so the notebook changes only when the window does.
        """
        entries = []
        for message in results:
            result = message.tool_result
            assert result is not None
            artifact = views.artifact_of(message)
            what = artifact.tool_name or "tool"
            asked = arguments_line(artifact.arguments)
            line = artifact.summary[0] if artifact.summary else f"{artifact.lines} lines"
            # What was done, its outcome, and where the whole output is (the pointer).
            entries.append((f"{what}({asked}) → {line}"[:300] if asked
                            else f"{what}: {line}"[:300],
                            f"tool:{result.call_id}"[:_SOURCE_CHARS], artifact.pointer))
        if entries:
            # One event for the batch: the window moved once.
            state.notebook_add_many(entries)

    def pool_evicted(self, state: WorkState, evicted: Mapping[int, ContentsEntry]) -> None:
        """Fold evicted pages into the context pool (seed 004's compressed chat history)."""
        listed = [(p, e.lines) for p, e in sorted(evicted.items()) if e.lines]
        if listed:
            state.fastmemo_add_many(state.limits.pool_section, [
                ((f"Page {page}: " + " / ".join(lines[:3]))[:380], f"chat:page-{page}")
                for page, lines in listed])


def _titled(title: str, heads: Mapping[Section, str], bodies: Mapping[Section, str]) -> str:
    """The segment's text: its title, then each section with something under its title.

    A section with nothing left under its title is not sent (no empty headings), nor the
    segment's title alone.
    """
    blocks = [f"{heads[k]}\n{body}" for k, body in bodies.items() if body.strip()]
    return "\n\n".join([title, *blocks]) if blocks else ""


def _untitled(body: str) -> str:
    """``body`` with no line that reads as a title (a summary may start one with ``#``)."""
    return "\n".join("\\" + line if line.lstrip().startswith("#") else line
                     for line in body.split("\n"))
