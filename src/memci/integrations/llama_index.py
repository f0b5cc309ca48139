"""memci under LlamaIndex: a ``BaseMemory`` backed by a memci session.

::

    from llama_index.core.chat_engine import SimpleChatEngine
    from memci.integrations.llama_index import MemciMemory

    memory = MemciMemory(engine.session("chat-1"))
    chat = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="…")
    chat.chat("hi")

- ``put`` / ``aput`` (and ``put_messages``) store a message; it is durable when they return.
- ``get`` / ``aget`` answer with memci's context: memci's system text as one system message
  first, then the turns, within the session's budget less ``initial_token_count`` (the
  tokens a chat engine adds in front: its system prompt; the engines count it with
  :attr:`MemciMemory.tokenizer_fn`, memci's tokenizer) and less ``reserve_tokens``.
- ``get_all`` is the conversation as stored (the branch the context follows).
- ``reset`` and ``set`` delete nothing: the conversation continues on a new branch
  (``Session.fork``), ``set`` with the messages it is given; what was there stays searchable.

Tool calls and results travel in ``additional_kwargs`` as OpenAI's LlamaIndex classes put
them (``tool_calls``, ``tool_call_id``). Async methods reach the session through
:mod:`memci.integrations._aio`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memci import Context, Session
from memci.errors import ConfigError
from memci.integrations import _aio
from memci.integrations._common import missing_extra, split_system
from memci.messages import to_openai

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.memory.types import BaseMemory
    from pydantic import ConfigDict, PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the extra
    raise missing_extra("llama-index", "llama-index-core", "llama_index") from exc

__all__ = ["MemciMemory"]


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def stored_form(message: ChatMessage) -> dict[str, Any]:
    """A LlamaIndex chat message as memci reads it (an OpenAI dict)."""
    role = message.role.value if isinstance(message.role, MessageRole) else str(message.role)
    role = {"chatbot": "assistant", "model": "assistant", "function": "tool"}.get(role, role)
    out: dict[str, Any] = {"role": role, "content": message.content or ""}
    extra = message.additional_kwargs or {}
    if role == "assistant" and extra.get("tool_calls"):
        out["tool_calls"] = [_plain(c) for c in extra["tool_calls"]]
        out["content"] = message.content or None
    if role == "tool":
        out["tool_call_id"] = extra.get("tool_call_id")
    return out


def chat_messages(rows: Sequence[dict[str, Any]]) -> list[ChatMessage]:
    """OpenAI dicts as LlamaIndex chat messages (tool fields in ``additional_kwargs``)."""
    out = []
    for row in rows:
        extra: dict[str, Any] = {}
        if row.get("tool_calls"):
            extra["tool_calls"] = row["tool_calls"]
        if row.get("tool_call_id"):
            extra["tool_call_id"] = row["tool_call_id"]
        content = row.get("content")
        if isinstance(content, list):
            content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
        out.append(ChatMessage(role=MessageRole(row["role"]), content=content or "",
                               additional_kwargs=extra))
    return out


def context_messages(ctx: Context) -> list[ChatMessage]:
    """A context as chat messages: memci's system text first, then the turns."""
    system, turns = split_system(ctx.messages)
    head = [ChatMessage(role=MessageRole.SYSTEM, content=system)] if system else []
    return head + chat_messages(to_openai(turns))


class MemciMemory(BaseMemory):
    """A LlamaIndex memory whose history is a memci session's context."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    recipe: str = "chat"
    reserve_tokens: int = 0
    _session: Session = PrivateAttr()

    def __init__(self, session: Session, *, recipe: str = "chat", reserve_tokens: int = 0,
                 **data: Any) -> None:
        super().__init__(**data)
        self.recipe = recipe
        self.reserve_tokens = reserve_tokens
        self._session = session

    @property
    def session(self) -> Session:
        """The memci session behind this memory."""
        return self._session

    @classmethod
    def class_name(cls) -> str:
        """The class's name in LlamaIndex's registry."""
        return "MemciMemory"

    @classmethod
    def from_defaults(cls, **kwargs: Any) -> MemciMemory:
        """``MemciMemory(session, ...)``; ``session=`` is required."""
        session = kwargs.pop("session", None)
        if not isinstance(session, Session):
            raise ConfigError("MemciMemory.from_defaults needs session=<a memci Session>, "
                              "e.g. engine.session('chat-1')")
        return cls(session, **kwargs)

    def tokenizer_fn(self, text: str) -> list[int]:
        """One entry per token of ``text`` by memci's tokenizer (chat engines take its len)."""
        return [0] * self._session.tokenizer.count(text)

    # -- reading -------------------------------------------------------------------------

    def _get(self, initial_token_count: int) -> list[ChatMessage]:
        own = self.reserve_tokens + (initial_token_count + 4 if initial_token_count else 0)
        budget = self._session.settings.budget - own
        if budget < 256:
            raise ConfigError(
                f"session {self._session.name!r}: a budget of {self._session.settings.budget} "
                f"tokens leaves {budget} for memci's context after {own} the chat engine adds; "
                "raise context_window or max_tokens")
        return context_messages(self._session.build(budget=budget, recipe=self.recipe))

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """memci's context now, within the budget less ``initial_token_count``."""
        return _aio.run(self._session, self._get, int(kwargs.get("initial_token_count", 0)))

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """The async form of :meth:`get`."""
        return await _aio.call(self._session, self._get,
                               int(kwargs.get("initial_token_count", 0)))

    def _all(self) -> list[ChatMessage]:
        return chat_messages(to_openai(self._session.branch()))

    def get_all(self) -> list[ChatMessage]:
        """The conversation as stored (the branch the context follows)."""
        return _aio.run(self._session, self._all)

    async def aget_all(self) -> list[ChatMessage]:
        """The async form of :meth:`get_all`."""
        return await _aio.call(self._session, self._all)

    # -- writing -------------------------------------------------------------------------

    def _put(self, messages: Sequence[ChatMessage]) -> None:
        if messages:
            self._session.add_many([stored_form(m) for m in messages])

    def put(self, message: ChatMessage) -> None:
        """Store ``message`` (durable when this returns)."""
        _aio.run(self._session, self._put, [message])

    async def aput(self, message: ChatMessage) -> None:
        """The async form of :meth:`put`."""
        await _aio.call(self._session, self._put, [message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store ``messages`` in one transaction."""
        _aio.run(self._session, self._put, messages)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """The async form of :meth:`put_messages`."""
        await _aio.call(self._session, self._put, messages)

    def _set(self, messages: Sequence[ChatMessage]) -> None:
        self._session.fork(0)
        self._put(messages)

    def set(self, messages: list[ChatMessage]) -> None:
        """Continue from ``messages`` on a new branch (the old one stays in the store)."""
        _aio.run(self._session, self._set, messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """The async form of :meth:`set`."""
        await _aio.call(self._session, self._set, messages)

    def reset(self) -> None:
        """Start over on a new branch; the store keeps every message."""
        _aio.run(self._session, self._session.fork, 0)

    async def areset(self) -> None:
        """The async form of :meth:`reset`."""
        await _aio.call(self._session, self._session.fork, 0)
