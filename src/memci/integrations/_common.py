"""What the framework adapters share: keys of what a framework already holds, budgets, tools.

- :class:`Ledger` answers "has memci stored this already?" for what a framework hands back
  on every model call (its whole list so far), as a multiset of keys: a message is known
  once per time it was stored, so the same message twice in the list is two messages.
- :func:`build_within` builds the session's context within its budget less the tokens the
  framework adds around it; :func:`every_tool` lists every tool the session may offer.
- :func:`split_system` separates the system messages of a context (memci's head, contents
  page, working state, retrieved memory), which frameworks take apart from the turns.
- :func:`keep_shape` and :func:`fill_shape` keep a framework's own form of a message in
  the stored message's metadata, so that it reads back as it was given; a long text the
  message holds itself is pointed at, not kept twice.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memci import Context, Session, ToolSpec
from memci.errors import BudgetTooSmallError, MissingExtraError, UnknownToolError
from memci.messages import Message, offerable_tools

__all__ = [
    "Ledger",
    "build_within",
    "call_tool",
    "every_tool",
    "fill_shape",
    "keep_shape",
    "key_of",
    "missing_extra",
    "offered_names",
    "registered_tools",
    "schema_tokens",
    "split_system",
    "text_tokens",
]

# A message's framing beyond its text, as memci counts it for OpenAI (tokens._overhead).
_PER_MESSAGE = 4
_PER_TOOL = 4
_HOLE_MIN = 64  # a text shorter than this is kept twice rather than pointed at


def missing_extra(extra: str, package: str, module: str) -> MissingExtraError:
    """The error an adapter module raises when its framework is not installed."""
    return MissingExtraError(extra, package, f"memci.integrations.{module}")


def key_of(value: object) -> str:
    """A content key for a framework's message or item (JSON of its plain form)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)


class Ledger:
    """A multiset of keys of what memci holds of what the framework will hand back."""

    def __init__(self) -> None:
        self._known: Counter[str] = Counter()

    def note(self, keys: Iterable[str]) -> None:
        """Know ``keys`` once more each."""
        self._known.update(keys)

    def fresh(self, keys: Sequence[str]) -> list[int]:
        """Positions of ``keys`` memci does not hold yet (each known key is used once)."""
        used: Counter[str] = Counter()
        out: list[int] = []
        for i, key in enumerate(keys):
            if used[key] < self._known[key]:
                used[key] += 1
            else:
                out.append(i)
        return out


def keep_shape(value: Mapping[str, Any], text: str) -> dict[str, Any]:
    """``value`` (a JSON object) as a stored message keeps it in its metadata.

    A long string equal to the message's own text is left empty and its place noted
    (``holes``), so a long output or prompt is not stored twice.
    """
    holes: list[list[str | int]] = []

    def walk(node: Any, path: list[str | int]) -> Any:
        if isinstance(node, str) and len(node) >= _HOLE_MIN and node == text:
            holes.append(path)
            return ""
        if isinstance(node, Mapping):
            return {k: walk(v, [*path, k]) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [walk(v, [*path, i]) for i, v in enumerate(node)]
        return node

    hollow = walk(value, [])
    return {"value": hollow, "holes": holes} if holes else {"value": hollow}


def fill_shape(kept: Mapping[str, Any], text: str) -> dict[str, Any]:
    """The value :func:`keep_shape` kept (a fresh copy), its holes filled with ``text``."""
    value: dict[str, Any] = json.loads(json.dumps(kept["value"]))
    for path in kept.get("holes") or ():
        at: Any = value
        for step in path[:-1]:
            at = at[step]
        at[path[-1]] = text
    return value


def text_tokens(session: Session, text: str | None) -> int:
    """Tokens of a text sent as one message (an instruction, a system prompt)."""
    return session.tokenizer.count(text) + _PER_MESSAGE if text else 0


def schema_tokens(session: Session, tools: Sequence[Mapping[str, Any]]) -> int:
    """Tokens of function tools in OpenAI form, counted as memci counts its own."""
    if not tools:
        return 0
    return session.tokenizer.count(json.dumps(list(tools))) + _PER_TOOL * len(tools)


_SETTINGS = "the session's context_window or max_tokens"


def build_within(
    session: Session, own: int, *, sent_tools: Iterable[str] = (), recipe: str = "auto",
    budget: int | None = None, setting: str = _SETTINGS,
) -> Context:
    """The context within the session's budget (or ``budget``) less ``own`` tokens.

    ``own`` is what the framework adds around memci's context. ``sent_tools``: names of
    memci's tools the framework sends whatever the build says (a build that leaves some
    out, on a small budget, pays for them with less context). A budget too small for the
    framework's part and the newest message raises
    :class:`~memci.errors.BudgetTooSmallError` naming the least budget that builds and
    the ``setting`` that sets it.
    """
    whole = session.settings.budget if budget is None else budget
    ctx = _build(session, whole, own, recipe, setting)
    shown = {t.name for t in ctx.tools}
    left_out = [s.to_openai() for s in every_tool(session)
                if s.name in set(sent_tools) and s.name not in shown]
    if left_out:
        ctx = _build(session, whole, own + schema_tokens(session, left_out), recipe, setting)
    return ctx


def _build(session: Session, whole: int, own: int, recipe: str, setting: str) -> Context:
    """A build within ``whole - own``; a refusal names the least ``whole`` that builds."""
    if whole - own < 1:
        raise _too_small(session, whole, own, own + _least(session, recipe), setting)
    try:
        return session.build(budget=whole - own, recipe=recipe)
    except BudgetTooSmallError as exc:
        raise _too_small(session, whole, own, exc.needed + own, setting) from exc


def _least(session: Session, recipe: str) -> int:
    """The least budget a build of the session needs (what a build of 1 token says)."""
    try:
        return max(session.build(budget=1, recipe=recipe).stats.total_tokens, 1)
    except BudgetTooSmallError as exc:
        return exc.needed


def _too_small(session: Session, budget: int, own: int, needed: int,
               setting: str) -> BudgetTooSmallError:
    return BudgetTooSmallError(
        f"session {session.name!r}: a budget of {budget} tokens cannot hold the "
        f"framework's own {own} (its instructions, system prompt and tool schemas) and the "
        f"newest message; raise {setting} to at least {needed}, or send less",
        budget=budget, needed=needed)


def every_tool(session: Session) -> tuple[ToolSpec, ...]:
    """Every tool the session can run; which are offered now is ``session.tool_specs()``."""
    return session.tool_specs(every=True)


def registered_tools(session: Session) -> tuple[ToolSpec, ...]:
    """The tools a framework registers: every one the session may offer its model.

    A framework registers tools once and enables them per call. The nine working-state
    tools are offered as ``working_state`` (they stay callable by name, and are still
    memci's: :func:`every_tool`).
    """
    return offerable_tools(session.tool_specs(every=True))


def offered_names(session: Session) -> set[str]:
    """The tools a framework should offer on its next model call.

    What the session offers now, and recall_page and search_memory always (when the
    session has them): a framework fixes its tool list before memci builds the request,
    and the build that moves the first pages out of the window puts a contents page in
    that very request, which tells the model to call recall_page.
    """
    names = {s.name for s in session.tool_specs()}
    return names | ({"recall_page", "search_memory"} & {s.name for s in every_tool(session)})


def call_tool(session: Session, name: str, arguments: Mapping[str, Any] | str | None) -> str:
    """Run one of memci's tools for a framework; one not offered now answers ``error: …``.

    A framework registers every tool once (:func:`every_tool`), so a model may call one the
    session does not offer at this point (no tool output yet for ``artifact_get``): the
    model gets the reason, as for any refused call, and the run goes on.
    """
    try:
        return session.call_tool(name, arguments)
    except UnknownToolError as exc:
        return f"error: {exc}"


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """The text of a context's system messages (joined by blank lines) and the others."""
    texts = [m.content for m in messages if m.role == "system" and m.content]
    return ("\n\n".join(texts) if texts else None), [m for m in messages if m.role != "system"]
