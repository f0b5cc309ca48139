"""memci under the OpenAI Agents SDK: a Session, a model-input filter, and memci's tools.

::

    from agents import Agent, RunConfig, Runner
    from memci.integrations.openai_agents import MemciSession

    memory = MemciSession(engine.session("chat-1"))
    agent = Agent(name="a", instructions="…", tools=[*my_tools, *memory.tools()])
    await Runner.run(agent, "hi", session=memory,
                     run_config=RunConfig(call_model_input_filter=memory.call_model_input_filter))

It behaves as the SDK's ``SQLiteSession`` does, and keeps the budget through the filter:

- ``get_items()`` is the conversation as stored: the items ``add_items`` was given, in the
  shape they were given (the newest ``session_settings.limit`` of them, or ``limit``).
  Each stored message keeps its items in its metadata (``openai_agents_items``; a long
  text the message holds itself is not kept twice). A message stored another way
  (``session.add``) reads back as :func:`memci.messages.to_responses` writes it.
- ``add_items`` stores the items of a call in one batch (one turn, one message).
- ``call_model_input_filter`` runs before every model call, tool loops included: the
  model's input becomes memci's context, built within the budget less the agent's
  instructions, the schemas of the agent's other function tools and the items of the
  run memci does not hold yet (a streamed run's new input, which the SDK adds after this
  call), which are sent after the context as they are. The filter never stores: what the
  SDK adds is stored by ``add_items`` alone, so no item is stored twice, whatever the
  SDK or a ``session_input_callback`` repeats.
- ``pop_item`` and ``clear_session`` delete nothing: they move the session to a branch
  without the newest item (``Session.fork``); what was there stays searchable.
- ``tools()``: memci's tools as ``FunctionTool`` objects, each enabled while the session offers it.

Async methods reach the session through :mod:`memci.integrations._aio`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from memci import Context, Session, ToolSpec
from memci.errors import InvalidMessageError
from memci.integrations import _aio
from memci.integrations._common import (
    Ledger,
    build_within,
    call_tool,
    every_tool,
    fill_shape,
    keep_shape,
    key_of,
    missing_extra,
    offered_names,
    registered_tools,
    schema_tokens,
    text_tokens,
)
from memci.messages import Message, coerce_many, to_responses

try:
    from agents import AgentBase, FunctionTool, RunContextWrapper, TResponseInputItem
    from agents.memory import Session as AgentsSession
    from agents.memory import SessionSettings
    from agents.memory.session_settings import coerce_session_settings
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the extra
    raise missing_extra("openai-agents", "openai-agents", "openai_agents") from exc

__all__ = ["ITEMS", "MemciSession"]

ITEMS = "openai_agents_items"
"""The metadata key under which a stored message keeps the items it was read from."""

_INDEX = "openai_agents_index"  # an item's place in its batch, while the batch is read


def _plain(item: object) -> dict[str, Any]:
    """An input item as a plain dict (the SDK hands back dicts, sometimes its models)."""
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        item = dump(exclude_unset=True)
    if not isinstance(item, Mapping):
        return {"type": "message", "role": "user", "content": str(item)}
    return dict(item)


# -- items kept with their messages ------------------------------------------------------


def items_of(message: Message) -> list[dict[str, Any]]:
    """The items ``message`` was stored from; for one stored otherwise, memci's own writing."""
    kept = message.metadata.get(ITEMS)
    if isinstance(kept, list | tuple):
        return [fill_shape(entry, message.content) for entry in kept]
    if message.role == "system":
        return []
    result = message.tool_result if message.role == "tool" else None
    if result is not None:
        return [{"type": "function_call_output", "call_id": result.call_id,
                 "output": result.content}]
    return to_responses([message])[1]


def stored_messages(items: Sequence[dict[str, Any]]) -> list[Message]:
    """``items`` read as memci reads a batch, each message keeping the items it came from.

    An item's place in the batch rides in its metadata while the batch is read: a
    message's items run from the place after the one before it to its own (a turn's
    items merge their metadata, the last one's place winning).
    """
    tagged = [{**item, "metadata": {**dict(item.get("metadata") or {}), _INDEX: i}}
              for i, item in enumerate(items)]
    out: list[Message] = []
    start = 0
    for message in coerce_many(tagged):
        end = int(message.metadata[_INDEX]) + 1
        metadata = {k: v for k, v in message.metadata.items() if k != _INDEX}
        metadata[ITEMS] = [keep_shape(item, message.content) for item in items[start:end]]
        out.append(replace(message, metadata=MappingProxyType(metadata)))
        start = max(start, end)
    return out


class MemciSession:
    """An OpenAI Agents SDK ``Session`` over a memci session (``SQLiteSession``'s contract)."""

    def __init__(self, session: Session, *, recipe: str = "auto",
                 session_settings: SessionSettings | dict[str, Any] | None = None) -> None:
        self.session = session
        self.session_id = session.name
        self.recipe = recipe
        self.session_settings: SessionSettings | None = (
            coerce_session_settings(session_settings) if session_settings is not None
            else SessionSettings())
        # Keys of the branch's items (a multiset), and the session's count they are of.
        self._held: Ledger | None = None
        self._held_count = -1

    # -- the Session protocol ------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The items stored, in the shape given: the newest ``limit`` (or the settings')."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items = await _aio.call(self.session, self._items, limit)
        return items  # type: ignore[return-value]  # plain dicts of the item TypedDicts

    def _items(self, limit: int | None) -> list[dict[str, Any]]:
        if limit is not None and limit <= 0:
            return []
        items = [i for m in self._branch() for i in items_of(m)]
        return items if limit is None else items[-limit:]

    def _branch(self) -> list[Message]:
        return [m for m in self.session.branch() if m.role != "system"]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store ``items`` in one batch (durable when this returns)."""
        await _aio.call(self.session, self._add, [_plain(i) for i in items])

    def _add(self, items: list[dict[str, Any]]) -> None:
        if not items:
            return
        held = self._holding()
        self.session.add_many(stored_messages(items))
        held.note(key_of(i) for i in items)
        self._held_count = self.session.count()

    async def pop_item(self) -> TResponseInputItem | None:
        """Take the newest item off the conversation (kept in the store, off the branch)."""
        item = await _aio.call(self.session, self._pop)
        return item  # type: ignore[return-value]

    def _pop(self) -> dict[str, Any] | None:
        branch = self._branch()
        at = len(branch) - 1
        while at >= 0 and not items_of(branch[at]):
            at -= 1
        if at < 0:
            return None
        items = items_of(branch[at])
        before = branch[at - 1].seq if at > 0 else None
        self.session.fork(before or 0)
        self._held = None
        if len(items) > 1:
            self._add(items[:-1])  # the message less its last item
        return items[-1]

    async def clear_session(self) -> None:
        """Start the conversation over (the stored messages stay, off the branch)."""
        await _aio.call(self.session, self._clear)

    def _clear(self) -> None:
        self.session.fork(0)
        self._held = None

    def _holding(self) -> Ledger:
        """Keys of the branch's items; read again when another writer changed the session."""
        count = self.session.count()
        if self._held is None or count != self._held_count:
            self._held = Ledger()
            self._held.note(key_of(i) for m in self._branch() for i in items_of(m))
            self._held_count = count
        return self._held

    # -- before every model call ---------------------------------------------------------

    async def call_model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """``RunConfig.call_model_input_filter``: memci's context in place of the run's list."""
        items = [_plain(i) for i in data.model_data.input]
        instructions = data.model_data.instructions
        own = text_tokens(self.session, instructions) + schema_tokens(
            self.session, self._own_tools(data.agent))
        sent = [t.name for t in data.agent.tools if isinstance(t, FunctionTool)]
        ctx, pending = await _aio.call(self.session, self._filter, items, own, sent)
        payload = ctx.to_responses()
        memci_head = payload.get("instructions")
        joined = "\n\n".join(t for t in (instructions, memci_head) if t) or None
        return ModelInputData(input=[*payload["input"], *pending],  # type: ignore[list-item]
                              instructions=joined)

    def _filter(self, items: list[dict[str, Any]], own: int, sent: list[str]
                ) -> tuple[Context, list[dict[str, Any]]]:
        pending = [items[i] for i in self._holding().fresh([key_of(i) for i in items])]
        ctx = build_within(self.session, own + self._tokens(pending), sent_tools=sent,
                           recipe=self.recipe)
        return ctx, pending

    def _tokens(self, items: list[dict[str, Any]]) -> int:
        """Tokens of items sent as they are, as memci counts a message."""
        if not items:
            return 0
        try:
            return sum(self.session.tokenizer.count_message(m) for m in coerce_many(items))
        except InvalidMessageError:  # an item memci does not read: count its JSON text
            return sum(text_tokens(self.session, json.dumps(i)) for i in items)

    def _own_tools(self, agent: AgentBase) -> list[dict[str, Any]]:
        mine = {s.name for s in every_tool(self.session)}
        return [{"type": "function", "function": {
                    "name": t.name, "description": t.description,
                    "parameters": t.params_json_schema}}
                for t in agent.tools if isinstance(t, FunctionTool) and t.name not in mine]

    # -- memci's tools -------------------------------------------------------------------

    def tools(self) -> list[FunctionTool]:
        """memci's tools as ``FunctionTool`` objects, each enabled while the session offers it."""
        return [self._tool(spec) for spec in registered_tools(self.session)]

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

