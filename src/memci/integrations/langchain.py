"""memci under LangChain v1: an agent middleware, memci's tools, and a chat message history.

::

    from langchain.agents import create_agent
    from memci.integrations.langchain import MemciMiddleware

    agent = create_agent(model, tools=my_tools, system_prompt="…",
                         middleware=[MemciMiddleware(engine.session("chat-1"))])
    agent.invoke({"messages": [{"role": "user", "content": "hi"}]})

- :class:`MemciMiddleware` wraps every model call, sync (``wrap_model_call``) and async
  (``awrap_model_call``): it stores the agent state's messages memci has not stored yet
  (known by their LangChain ids, kept in each message's metadata as ``langchain_id``),
  then sends memci's context in place of the state's list: the system prompt with memci's
  system text after it, and the turns, within the session's budget less the system prompt
  and the schemas of the agent's other tools. The model's reply is stored as soon as it
  comes back. The state itself is left as LangChain keeps it. The middleware registers
  memci's tools (``middleware.tools``) and sends only those the session offers now.
- :func:`memci_tools`: memci's tools as ``StructuredTool`` objects (sync and async).
- :class:`MemciChatMessageHistory`: a ``BaseChatMessageHistory`` that behaves as
  ``InMemoryChatMessageHistory``: ``messages`` are the messages added, in the form they
  were given (``message_to_dict``, kept in each stored message's metadata as
  ``langchain_message``; a long text is not kept twice); ``context=True`` makes them
  memci's context, within the session's budget, for a chain that sends its history to
  the model as it is (``RunnableWithMessageHistory``); ``clear`` starts over on a new
  branch and deletes nothing.

Async methods reach the session through :mod:`memci.integrations._aio`.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from memci import Context, Session, ToolSpec
from memci.integrations import _aio
from memci.integrations._common import (
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
    split_system,
    text_tokens,
)
from memci.messages import Message, coerce_many, to_openai, to_openai_message

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        SystemMessage,
        convert_to_messages,
        convert_to_openai_messages,
        message_to_dict,
        messages_from_dict,
    )
    from langchain_core.tools import BaseTool, StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the extra
    raise missing_extra("langchain", "langchain", "langchain") from exc

__all__ = ["MemciChatMessageHistory", "MemciMiddleware", "memci_tools"]

ID_KEY = "langchain_id"
"""The metadata key under which a stored message keeps its LangChain message id."""

MESSAGE_KEY = "langchain_message"
"""The metadata key under which a stored message keeps its LangChain form (``message_to_dict``)."""

_Handler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
_AsyncHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]


def _key(message: BaseMessage) -> str:
    """A message's id; its content when it has none (a message not from the agent state)."""
    if message.id:
        return message.id
    return "content:" + key_of(convert_to_openai_messages(message))


def stored_messages(messages: Sequence[BaseMessage]) -> list[Message]:
    """Messages as memci stores them, each keeping its LangChain id and form in metadata."""
    out: list[Message] = []
    for message in messages:
        data = convert_to_openai_messages(message)
        data.pop("id", None)
        read = coerce_many([data])
        shape = keep_shape(message_to_dict(message), read[0].content)
        for n, one in enumerate(read):  # one, but for tool results inside a user message
            kept = {**one.metadata, ID_KEY: _key(message), MESSAGE_KEY: shape if n == 0 else None}
            out.append(replace(one, metadata=MappingProxyType(kept)))
    return out


def langchain_messages(messages: Sequence[Message]) -> list[BaseMessage]:
    """Stored messages as LangChain messages: in the form they were given, where kept."""
    out: list[BaseMessage] = []
    for message in messages:
        if MESSAGE_KEY not in message.metadata:
            out.extend(convert_to_messages([to_openai_message(message)]))
            continue
        kept = message.metadata[MESSAGE_KEY]
        if isinstance(kept, Mapping):
            out.extend(messages_from_dict([fill_shape(kept, message.content)]))
    return out


def context_messages(ctx: Context, system_prompt: str | None = None) -> list[BaseMessage]:
    """A context as LangChain messages: one system message first (the prompt, then memci's)."""
    memci_system, turns = split_system(ctx.messages)
    system = "\n\n".join(t for t in (system_prompt, memci_system) if t)
    out: list[BaseMessage] = [SystemMessage(system)] if system else []
    return out + convert_to_messages(to_openai(turns))


class _Stored:
    """Which LangChain messages the session holds (ids from its metadata, read once)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._keys: set[str] | None = None

    def keys(self) -> set[str]:
        if self._keys is None:
            self._keys = {str(m.metadata[ID_KEY]) for m in self.session.messages()
                          if ID_KEY in m.metadata}
        return self._keys

    def store(self, messages: Sequence[BaseMessage], *, every: bool = False) -> None:
        """Store the messages not stored yet (``every``: all of them), in one transaction.

        Without ``every`` (the agent's state), system messages are the agent's own prompt
        and are not stored.
        """
        known = self.keys()
        todo = [m for m in messages if every or (
            not isinstance(m, SystemMessage) and _key(m) not in known)]
        if todo:
            self.session.add_many(stored_messages(todo))
            known.update(_key(m) for m in todo)


class MemciMiddleware(AgentMiddleware[Any, Any, Any]):
    """Sends memci's context on every model call of a ``create_agent`` agent."""

    def __init__(self, session: Session, *, recipe: str = "auto", tools: bool = True) -> None:
        super().__init__()
        self.session = session
        self.recipe = recipe
        self.tools = memci_tools(session) if tools else []
        self._stored = _Stored(session)
        self._mine = {s.name for s in every_tool(session)}

    @property
    def name(self) -> str:
        """The middleware's name in the agent graph."""
        return "MemciMiddleware"

    def _prepare(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        self._stored.store(request.messages)
        schemas = {id(t): convert_to_openai_tool(t) for t in request.tools}
        own_tools = [schemas[id(t)] for t in request.tools
                     if schemas[id(t)]["function"]["name"] not in self._mine]
        own = text_tokens(self.session, request.system_prompt) + schema_tokens(
            self.session, own_tools)
        names = [schemas[id(t)]["function"]["name"] for t in request.tools]
        # memci's tools go out when the session offers them (now, or in this build).
        likely = offered_names(self.session)
        ctx = build_within(self.session, own, sent_tools=[n for n in names if n in likely],
                           recipe=self.recipe)
        offered = {t.name for t in ctx.tools} | likely
        messages = context_messages(ctx, request.system_prompt)
        first = messages[0] if messages else None
        system = first if isinstance(first, SystemMessage) else None
        if system is not None:
            messages.pop(0)
        tools = [t for t, n in zip(request.tools, names, strict=True)
                 if n not in self._mine or n in offered]
        return request.override(messages=_as_any(messages), system_message=system, tools=tools)

    def _keep(self, response: ModelResponse[Any]) -> None:
        replies = [m for m in response.result if isinstance(m, AIMessage)]
        for reply in replies:
            if not reply.id:
                reply.id = str(uuid.uuid4())  # the state keeps it, so it is known next call
        self._stored.store(replies)

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: _Handler
    ) -> ModelResponse[Any]:
        """Store what is new, send memci's context, store the reply."""
        ready = _aio.run(self.session, self._prepare, request)
        response = handler(ready)
        _aio.run(self.session, self._keep, response)
        return response

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: _AsyncHandler
    ) -> ModelResponse[Any]:
        """The async form of :meth:`wrap_model_call`."""
        ready = await _aio.call(self.session, self._prepare, request)
        response = await handler(ready)
        await _aio.call(self.session, self._keep, response)
        return response


def _as_any(messages: list[BaseMessage]) -> list[AnyMessage]:
    # convert_to_messages gives the concrete message classes AnyMessage is the union of.
    return messages  # type: ignore[return-value]


def memci_tools(session: Session) -> list[BaseTool]:
    """memci's tools as ``StructuredTool`` objects (the model's arguments as JSON Schema)."""
    return [_tool(session, spec) for spec in registered_tools(session)]


def _tool(session: Session, spec: ToolSpec) -> BaseTool:
    name = spec.name

    def run(**arguments: Any) -> str:
        return _aio.run(session, call_tool, session, name, arguments)

    async def arun(**arguments: Any) -> str:
        return await _aio.call(session, call_tool, session, name, arguments)

    return StructuredTool.from_function(func=run, coroutine=arun, name=name,
                                        description=spec.description,
                                        args_schema=dict(spec.parameters))


class MemciChatMessageHistory(BaseChatMessageHistory):
    """A chat message history over a memci session, as ``InMemoryChatMessageHistory`` is.

    ``messages`` are the messages added, in the form they were given (the branch the
    session follows); with ``context=True`` they are memci's context instead, built within
    the session's budget, for a chain that sends its history to the model as it is.
    """

    def __init__(self, session: Session, *, recipe: str = "chat", context: bool = False) -> None:
        self.session = session
        self.recipe = recipe
        self.context = context
        self._stored = _Stored(session)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The messages added (or, with ``context=True``, memci's context now)."""
        return _aio.run(self.session, self._messages)

    def _messages(self) -> list[BaseMessage]:
        if self.context:
            return context_messages(self.session.build(recipe=self.recipe))
        return langchain_messages(self.session.branch())

    async def aget_messages(self) -> list[BaseMessage]:
        """The async form of :attr:`messages`."""
        return await _aio.call(self.session, self._messages)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store ``messages`` in one transaction (durable when this returns)."""
        _aio.run(self.session, self._stored.store, messages, every=True)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """The async form of :meth:`add_messages`."""
        await _aio.call(self.session, self._stored.store, messages, every=True)

    def clear(self) -> None:
        """Start over: the history is empty; the store keeps every message."""
        _aio.run(self.session, self.session.fork, 0)

    async def aclear(self) -> None:
        """The async form of :meth:`clear`."""
        await _aio.call(self.session, self.session.fork, 0)
