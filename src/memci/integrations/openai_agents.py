"""memci under the OpenAI Agents SDK: a Session, a model-input filter, and memci's tools.

::

    from agents import Agent, RunConfig, Runner
    from memci.integrations.openai_agents import MemciSession

    memory = MemciSession(engine.session("chat-1"))
    agent = Agent(name="a", instructions="…", tools=[*my_tools, *memory.tools()])
    await Runner.run(agent, "hi", session=memory,
                     run_config=RunConfig(call_model_input_filter=memory.call_model_input_filter))

- ``get_items()`` answers with memci's budgeted context as Responses items (memci's
  system messages as one ``developer`` item first); ``get_items(limit=n)`` with the newest
  ``n`` items of the conversation as stored (the SDK compares that tail with what it added).
- ``add_items`` stores the items of a call in one batch (one turn, one message).
- ``call_model_input_filter`` runs before every model call, tool loops included: it stores
  what the run holds that memci has not seen yet, then replaces the input with memci's
  context, built within the budget less the agent's instructions and the schemas of the
  agent's other function tools. So every request fits, however long the loop.
- ``pop_item`` and ``clear_session`` delete nothing: they move the session to a branch
  without the newest item (``Session.fork``); what was there stays searchable.
- ``tools()``: memci's tools as ``FunctionTool`` objects, each enabled while the session offers it.

Async methods reach the session through :mod:`memci.integrations._aio`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memci import Context, Session, ToolSpec
from memci.integrations import _aio
from memci.integrations._common import (
    Ledger,
    build_within,
    call_tool,
    every_tool,
    key_of,
    missing_extra,
    offered_names,
    schema_tokens,
    text_tokens,
)
from memci.messages import Message, to_responses

try:
    from agents import AgentBase, FunctionTool, RunContextWrapper, TResponseInputItem
    from agents.memory import Session as AgentsSession
    from agents.memory import SessionSettings
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the extra
    raise missing_extra("openai-agents", "openai-agents", "openai_agents") from exc

__all__ = ["MemciSession"]


def _plain(item: object) -> dict[str, Any]:
    """An input item as a plain dict (the SDK hands back dicts, sometimes its models)."""
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        item = dump(exclude_unset=True)
    if not isinstance(item, Mapping):
        return {"type": "message", "role": "user", "content": str(item)}
    return dict(item)


def context_items(ctx: Context) -> list[dict[str, Any]]:
    """A context as Responses input items: memci's system text as a ``developer`` item."""
    payload = ctx.to_responses()
    head = payload.get("instructions")
    items: list[dict[str, Any]] = list(payload["input"])
    return ([{"role": "developer", "content": head}] if head else []) + items


class MemciSession:
    """An OpenAI Agents SDK ``Session`` whose history is a memci session's context."""

    session_settings: SessionSettings | None = None

    def __init__(self, session: Session, *, recipe: str = "auto") -> None:
        self.session = session
        self.session_id = session.name
        self.recipe = recipe
        # What the running Runner holds that memci has stored or shown it (see Ledger).
        self._ledger = Ledger()
        # Items the filter stored before the SDK's own add_items (streamed runs).
        self._ahead = Ledger()

    # -- the Session protocol ------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """memci's context as items; with ``limit``, the newest ``limit`` items stored."""
        items = await _aio.call(self.session, self._items, limit)
        return items  # type: ignore[return-value]  # plain dicts of the item TypedDicts

    def _items(self, limit: int | None) -> list[dict[str, Any]]:
        if limit is not None:
            items = self._tail(limit)[0] if limit > 0 else []
            self._ledger.note(key_of(i) for i in items)
            return items
        items = context_items(self.session.build(recipe=self.recipe))
        self._ledger.reset(key_of(i) for i in items)  # a run starts from this
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store ``items`` in one batch (durable when this returns)."""
        await _aio.call(self.session, self._add, [_plain(i) for i in items])

    def _add(self, items: list[dict[str, Any]]) -> None:
        keys = [key_of(i) for i in items]
        todo = [i for i, k in zip(items, keys, strict=True) if not self._ahead.take(k)]
        if todo:
            self.session.add_many(todo)
        self._ledger.note(keys)

    async def pop_item(self) -> TResponseInputItem | None:
        """Take the newest item off the conversation (kept in the store, off the branch)."""
        item = await _aio.call(self.session, self._pop)
        return item  # type: ignore[return-value]

    def _pop(self) -> dict[str, Any] | None:
        items, last, rest = self._tail(1)
        if not items or last is None:
            return None
        branch = self.session.branch_seqs()
        before = branch[-2] if len(branch) > 1 else 0
        self.session.fork(before)
        if rest:
            self.session.add_many(rest)  # the newest message less its last item
        return items[-1]

    async def clear_session(self) -> None:
        """Start the conversation over (the stored messages stay, off the branch)."""
        await _aio.call(self.session, self.session.fork, 0)

    def _tail(self, n: int) -> tuple[list[dict[str, Any]], Message | None, list[dict[str, Any]]]:
        """The newest ``n`` items; the newest message; its items but the last."""
        branch = [m for m in self.session.branch() if m.role != "system"]
        if not branch:
            return [], None, []
        # Whole pages from the newest user message back, so results stay with their calls.
        start, count = len(branch), 0
        while start > 0 and count < n:
            start -= 1
            while start > 0 and branch[start].role != "user":
                start -= 1
            count = len(to_responses(branch[start:])[1])
        items = to_responses(branch[start:])[1]
        before = to_responses(branch[start:-1])[1] if len(branch) - start > 1 else []
        return items[-n:], branch[-1], items[len(before):-1]

    # -- before every model call ---------------------------------------------------------

    async def call_model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """``RunConfig.call_model_input_filter``: memci's context in place of the run's list."""
        items = [_plain(i) for i in data.model_data.input]
        instructions = data.model_data.instructions
        own = text_tokens(self.session, instructions) + schema_tokens(
            self.session, self._own_tools(data.agent))
        sent = [t.name for t in data.agent.tools if isinstance(t, FunctionTool)]
        ctx = await _aio.call(self.session, self._filter, items, own, sent)
        payload = ctx.to_responses()
        memci_head = payload.get("instructions")
        joined = "\n\n".join(t for t in (instructions, memci_head) if t) or None
        return ModelInputData(input=payload["input"], instructions=joined)

    def _filter(self, items: list[dict[str, Any]], own: int, sent: list[str]) -> Context:
        keys = [key_of(i) for i in items]
        fresh = self._ledger.fresh(keys)
        if fresh:
            # Not stored yet (a streamed run calls the model before add_items): store it
            # now, and let add_items skip it when it comes.
            self.session.add_many([items[i] for i in fresh])
            self._ahead.note(keys[i] for i in fresh)
            self._ledger.note(keys[i] for i in fresh)
        return build_within(self.session, own, sent_tools=sent, recipe=self.recipe)

    def _own_tools(self, agent: AgentBase) -> list[dict[str, Any]]:
        mine = {s.name for s in every_tool(self.session)}
        return [{"type": "function", "function": {
                    "name": t.name, "description": t.description,
                    "parameters": t.params_json_schema}}
                for t in agent.tools if isinstance(t, FunctionTool) and t.name not in mine]

    # -- memci's tools -------------------------------------------------------------------

    def tools(self) -> list[FunctionTool]:
        """memci's tools as ``FunctionTool`` objects, each enabled while the session offers it."""
        return [self._tool(spec) for spec in every_tool(self.session)]

    def _tool(self, spec: ToolSpec) -> FunctionTool:
        session, name = self.session, spec.name

        async def invoke(_ctx: RunContextWrapper[Any], arguments: str) -> str:
            return await _aio.call(session, call_tool, session, name, arguments)

        async def enabled(_ctx: RunContextWrapper[Any], _agent: AgentBase) -> bool:
            return name in await _aio.call(session, offered_names, session)

        return FunctionTool(name=name, description=spec.description,
                            params_json_schema=dict(spec.parameters), on_invoke_tool=invoke,
                            strict_json_schema=False, is_enabled=enabled)


def _conforms(session: MemciSession) -> AgentsSession:
    """Checked by mypy: MemciSession implements the SDK's Session protocol."""
    return session

