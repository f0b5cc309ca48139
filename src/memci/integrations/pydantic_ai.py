"""memci under pydantic-ai: a capability, a history processor, and memci's tools as a toolset.

::

    from pydantic_ai import Agent
    from memci.integrations.pydantic_ai import MemciCapability

    agent = Agent(model, instructions="…", capabilities=[MemciCapability(session)])
    await agent.run("hi")          # no message_history: memci holds the conversation

- :class:`MemciCapability` stores, before every model request, what memci has not stored
  yet of the run's messages, and sends memci's context in their place for this request:
  the agent's system prompt parts first, memci's system text after them, then the turns,
  within the session's budget less the agent's instructions and the schemas of its other
  tools. The run's own history stays as pydantic-ai keeps it; its final answer is stored
  when the run ends. It brings memci's tools (:func:`toolset`).
- :func:`history_processor`: the same as a history processor, for
  ``capabilities=[ProcessHistory(history_processor(session))]``; it cannot see the tools,
  so it budgets the system prompt only, and the run's history becomes memci's context
  (messages marked ``metadata={"memci_context": True}``, never stored again).

Each message is stored once per time it occurs: a response is keyed by a hash of its
parts, timestamp and provider response id, each part of a request by a hash of the part
(which carries its timestamp); the key is kept in the stored message's metadata as
``pydantic_ai_key``. So the same answer, or the same tool call id (pydantic-ai's test
models number calls from ``call_0`` in every run), in two runs is two messages, while a
history passed back (``message_history=result.all_messages()``) is known and not stored
again.
- :func:`toolset`: memci's tools, each offered while the session offers it.

pydantic-ai's reasoning (``ThinkingPart``) and built-in tool parts are not stored.
Async methods reach the session through :mod:`memci.integrations._aio`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memci import Context, Session
from memci.integrations import _aio
from memci.integrations._common import (
    Ledger,
    build_within,
    call_tool,
    every_tool,
    key_of,
    missing_extra,
    offered_names,
    registered_tools,
    schema_tokens,
    split_system,
    text_tokens,
)
from memci.messages import to_openai

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import (
        ImageUrl,
        ModelMessage,
        ModelMessagesTypeAdapter,
        ModelRequest,
        ModelRequestPart,
        ModelResponse,
        ModelResponsePart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import ModelRequestContext
    from pydantic_ai.run import AgentRunResult
    from pydantic_ai.tools import Tool, ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, FunctionToolset
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the extra
    raise missing_extra("pydantic-ai", "pydantic-ai-slim", "pydantic_ai") from exc

__all__ = ["MemciCapability", "history_processor", "toolset"]

KEY = "pydantic_ai_key"
"""The metadata key under which a stored message keeps the key of its pydantic-ai message."""

CONTEXT = "memci_context"
"""The metadata key of the pydantic-ai messages memci makes of its context (never stored)."""


def _hash(value: object) -> str:
    return hashlib.sha256(key_of(value).encode()).hexdigest()[:32]


def message_keys(message: ModelMessage) -> list[str]:
    """The keys of what memci stores of a pydantic-ai message.

    A response is one key: a hash of its parts and of when and where it was made (its
    timestamp and provider response id), so the same words answered in two runs are two
    responses. A request is one key a part (each part carries its own timestamp), since
    pydantic-ai adds parts to a request already sent (a notice of tools added) and fills
    its ``instructions`` in after the call.
    """
    dumped = ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
    if isinstance(message, ModelResponse):
        return [_hash(["response", dumped.get("timestamp"), dumped.get("provider_response_id"),
                       dumped["parts"]])]
    return [_hash(["request-part", part]) for part in dumped["parts"]]


def _user_content(part: UserPromptPart) -> str | list[dict[str, Any]]:
    if isinstance(part.content, str):
        return part.content
    blocks: list[dict[str, Any]] = []
    for item in part.content:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif isinstance(item, ImageUrl):
            blocks.append({"type": "image_url", "image_url": {"url": item.url}})
        else:
            blocks.append({"type": "text", "text": str(item)})
    return blocks


def stored_form(message: ModelMessage, fresh: set[int]) -> list[dict[str, Any]]:
    """What memci stores of a pydantic-ai message, as OpenAI dicts: the keys at ``fresh``.

    ``fresh`` holds positions in :func:`message_keys` (0 for a response). Kept: user
    prompts, tool returns, retries (a retry of a call answers that call; other feedback is
    the app's words to the model). Left out: system prompts (the agent's own, sent with
    every request) and pydantic-ai's notices (such as tools added).
    """
    keys = message_keys(message)
    if isinstance(message, ModelResponse):
        if 0 not in fresh:
            return []
        text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
        calls = [{"id": p.tool_call_id, "type": "function", "function": {
                    "name": p.tool_name, "arguments": p.args_as_json_str()}}
                 for p in message.parts if isinstance(p, ToolCallPart)]
        if not text and not calls:
            return []
        out: dict[str, Any] = {"role": "assistant", "content": text or None,
                               "metadata": {KEY: keys[0]}}
        if calls:
            out["tool_calls"] = calls
        return [out]
    rows: list[dict[str, Any]] = []
    for i, (part, key) in enumerate(zip(message.parts, keys, strict=True)):
        meta = {KEY: key}
        if i not in fresh:
            continue
        if isinstance(part, UserPromptPart):
            rows.append({"role": "user", "content": _user_content(part), "metadata": meta})
        elif isinstance(part, ToolReturnPart):
            rows.append({"role": "tool", "tool_call_id": part.tool_call_id,
                         "content": part.model_response_str(), "metadata": meta})
        elif getattr(part, "part_kind", "") in ("retry-prompt", "retry-feedback"):
            answer = getattr(part, "model_response", None)
            text = answer() if callable(answer) else str(getattr(part, "content", ""))
            call_id, tool = getattr(part, "tool_call_id", None), getattr(part, "tool_name", None)
            rows.append({"role": "tool", "tool_call_id": call_id, "content": text,
                         "metadata": meta} if call_id and tool else
                        {"role": "user", "content": text, "metadata": meta})
    return rows


def context_messages(ctx: Context, system: Sequence[str] = ()) -> list[ModelMessage]:
    """A context as pydantic-ai messages; the system texts (then memci's) open the first.

    Each carries ``metadata={"memci_context": True}``: handed back (a run's history after
    the history processor, passed back as ``message_history``), it is known as memci's.
    """
    memci_system, turns = split_system(ctx.messages)
    pending: list[ModelRequestPart] = [
        SystemPromptPart(t) for t in (*system, memci_system) if t]
    out: list[ModelMessage] = []
    names: dict[str, str] = {}
    for row in to_openai(turns):
        if row["role"] == "assistant":
            if pending:
                out.append(ModelRequest(pending, metadata=_MARK))
                pending = []
            parts: list[ModelResponsePart] = [TextPart(row["content"])] if row.get(
                "content") else []
            for call in row.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                parts.append(ToolCallPart(call["function"]["name"], call["function"]["arguments"],
                                          tool_call_id=call["id"]))
            out.append(ModelResponse(parts, metadata=_MARK))
        elif row["role"] == "tool":
            pending.append(ToolReturnPart(names.get(row["tool_call_id"], "tool"), row["content"],
                                          tool_call_id=row["tool_call_id"]))
        else:
            content = row["content"]
            if isinstance(content, list):
                content = [b["text"] if b.get("type") == "text" else
                           ImageUrl(b["image_url"]["url"]) for b in content]
            pending.append(UserPromptPart(content))
    if pending:
        out.append(ModelRequest(pending, metadata=_MARK))
    return out


_MARK = {CONTEXT: True}


def _is_context(message: ModelMessage) -> bool:
    """Whether ``message`` is memci's rendering of its context (never stored).

    A run's history after the history processor is made of these: memci holds what it shows.
    """
    return bool(message.metadata and message.metadata.get(CONTEXT))


class _Keeper:
    """Stores what memci has not stored yet of a run's messages; builds the context.

    What memci holds is a multiset of keys (:class:`~memci.integrations._common.Ledger`):
    each stored message's key once per time it was stored. A message of the run's list is
    stored once per time it occurs beyond that; memci's own context messages, handed back
    as a run's history, are never stored.
    """

    def __init__(self, session: Session, recipe: str) -> None:
        self.session = session
        self.recipe = recipe
        self._stored: Ledger | None = None

    def _ledger(self) -> Ledger:
        if self._stored is None:
            self._stored = Ledger()
            self._stored.note(str(m.metadata[KEY]) for m in self.session.messages()
                              if KEY in m.metadata)
        return self._stored

    def store(self, messages: Sequence[ModelMessage]) -> None:
        ledger = self._ledger()
        theirs = [m for m in messages if not _is_context(m)]
        keys = [message_keys(m) for m in theirs]
        flat = [k for ks in keys for k in ks]
        fresh = set(ledger.fresh(flat))
        rows: list[dict[str, Any]] = []
        at = 0
        for message, ks in zip(theirs, keys, strict=True):
            mine = {i - at for i in range(at, at + len(ks)) if i in fresh}
            at += len(ks)
            if mine:
                rows.extend(stored_form(message, mine))
        if rows:
            self.session.add_many(rows)
        ledger.note(flat[i] for i in sorted(fresh))

    def prepare(self, messages: Sequence[ModelMessage], own_tools: list[dict[str, Any]],
                instructions: str | None, sent: list[str]) -> list[ModelMessage]:
        self.store(messages)
        system = [p.content for m in messages if isinstance(m, ModelRequest)
                  for p in m.parts if isinstance(p, SystemPromptPart)]
        own = (text_tokens(self.session, instructions)
               + sum(text_tokens(self.session, s) for s in system)
               + schema_tokens(self.session, own_tools))
        ctx = build_within(self.session, own, sent_tools=sent, recipe=self.recipe)
        return context_messages(ctx, system)


def _schema(tool: ToolDefinition) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool.name,
            "description": tool.description or "", "parameters": tool.parameters_json_schema}}


@dataclass
class MemciCapability(AbstractCapability[Any]):
    """memci's context on every model request of an agent, and memci's tools."""

    session: Session
    recipe: str = "auto"
    tools: bool = True
    _keeper: _Keeper | None = field(default=None, repr=False)

    def _keep(self) -> _Keeper:
        if self._keeper is None:
            self._keeper = _Keeper(self.session, self.recipe)
        return self._keeper

    @classmethod
    def get_serialization_name(cls) -> str | None:
        """Not serializable (it holds a live session)."""
        return None

    def get_toolset(self) -> AbstractToolset[Any] | None:
        """memci's tools, when ``tools`` is on."""
        return toolset(self.session) if self.tools else None

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        """Store what is new; send memci's context for this request."""
        params = request_context.model_request_parameters
        mine = {s.name for s in every_tool(self.session)}
        tools = [*params.function_tools, *params.output_tools]
        own_tools = [_schema(t) for t in tools if t.name not in mine]
        instructions = "\n\n".join(p.content for p in params.instruction_parts or ())
        sent = [t.name for t in tools if t.name in mine]
        request_context.messages = await _aio.call(
            self.session, self._keep().prepare, list(request_context.messages), own_tools,
            instructions or None, sent)
        return request_context

    async def after_run(
        self, ctx: RunContext[Any], *, result: AgentRunResult[Any]
    ) -> AgentRunResult[Any]:
        """Store what the run ended with (its final answer)."""
        await _aio.call(self.session, self._keep().store, result.all_messages())
        return result


def history_processor(
    session: Session, *, recipe: str = "auto"
) -> Callable[[RunContext[Any], list[ModelMessage]], Awaitable[list[ModelMessage]]]:
    """A history processor (``ProcessHistory``): store what is new, answer memci's context.

    A processor runs only before model requests, so a run's final answer comes after its
    last call: it is stored when this processor runs next (the next run's first request),
    from the run's own message list, or at once when that list is passed back as
    ``message_history``. :class:`MemciCapability` stores it when the run ends.
    """
    keeper = _Keeper(session, recipe)
    last_run: list[list[ModelMessage]] = []  # the list of the run processed last

    def work(run: list[ModelMessage], messages: list[ModelMessage]) -> list[ModelMessage]:
        if last_run and last_run[0] is not run:
            keeper.store(last_run[0])  # what that run added after its last request
        last_run[:] = [run]
        return keeper.prepare(messages, [], None, [])

    async def process(ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        return await _aio.call(session, work, ctx.messages, messages)

    return process


def toolset(session: Session) -> AbstractToolset[Any]:
    """memci's tools as a toolset; each is offered while the session offers it."""

    def make(name: str) -> Callable[..., Awaitable[str]]:
        async def run(**arguments: Any) -> str:
            return await _aio.call(session, call_tool, session, name, arguments)
        return run

    tools = [Tool.from_schema(make(s.name), s.name, s.description, dict(s.parameters))
             for s in registered_tools(session)]

    async def offered(_ctx: RunContext[Any], tool: ToolDefinition) -> bool:
        return tool.name in await _aio.call(session, offered_names, session)

    return FunctionToolset(tools).filtered(offered)
