"""memci under LlamaIndex: a ``BaseMemory`` backed by a memci session.

::

    from llama_index.core.chat_engine import SimpleChatEngine
    from memci.integrations.llama_index import MemciMemory

    memory = MemciMemory(engine.session("chat-1"))
    chat = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="…")
    chat.chat("hi")

- ``put`` / ``aput`` (and ``put_messages``) store a message; it is durable when they return.
- ``get`` / ``aget`` answer with memci's context: memci's system text as one system message
  first, then the turns, within the session's budget (or ``token_limit``, when smaller)
  less ``initial_token_count`` (the tokens a chat engine adds in front: its system
  prompt; the engines count it with :attr:`MemciMemory.tokenizer_fn`, memci's tokenizer)
  and less ``reserve_tokens``. A budget below what the newest message needs raises
  :class:`~memci.errors.BudgetTooSmallError` (a ``ValueError``) naming the least one.
- ``get_all`` is the conversation as stored (the branch the context follows).
- ``reset`` and ``set`` delete nothing: the conversation continues on a new branch
  (``Session.fork``), ``set`` with the messages it is given; what was there stays searchable.
- ``from_defaults`` makes a memory as LlamaIndex's chat engines do
  (``SimpleChatEngine.from_defaults(memory_cls=MemciMemory)``); ``to_dict`` /
  ``to_string`` / pickling keep where the conversation is stored, and a memory made from
  them reopens it.

Tool calls and results travel in ``additional_kwargs`` as OpenAI's LlamaIndex classes put
them (``tool_calls``, ``tool_call_id``). Async methods reach the session through
:mod:`memci.integrations._aio`.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Sequence
from typing import Any

from memci import Context, Engine, Session
from memci.errors import ConfigError
from memci.integrations import _aio
from memci.integrations._common import build_within, key_of, missing_extra, split_system
from memci.messages import to_openai, to_openai_message

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.memory.types import BaseMemory
    from llama_index.core.schema import BaseComponent
    from pydantic import ConfigDict, PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised in a subprocess without the extra
    raise missing_extra("llama-index", "llama-index-core", "llama_index") from exc

__all__ = ["MemciMemory"]

_SETTINGS = "the session's context_window or max_tokens"


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
    """A LlamaIndex memory whose history is a memci session's context.

    Its fields say where the conversation lives (``store``, ``session_id``, ``tenant``,
    ``user``) and how ``get`` builds (``token_limit``, ``recipe``, ``reserve_tokens``), so
    ``to_dict`` / ``to_string`` / pickling carry a reference to the stored conversation,
    never its messages, and a memory rebuilt from one reopens the same session. The store
    it opened itself (``from_defaults`` without ``session=``, or rebuilt) closes with
    :meth:`close` or when the memory is collected.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    store: str | None = None
    session_id: str = ""
    tenant: str = "default"
    user: str | None = None
    token_limit: int | None = None
    recipe: str = "chat"
    reserve_tokens: int = 0
    _session: Session | None = PrivateAttr(default=None)
    _engine: Engine | None = PrivateAttr(default=None)

    def __init__(self, session: Session | None = None, **data: Any) -> None:
        if session is not None:
            data.update(session_id=session.name, tenant=session.tenant, user=session.user,
                        store=session.engine.store.location)
        if not data.get("session_id"):
            raise ConfigError("MemciMemory needs a session (MemciMemory(engine.session('chat-1')))"
                              " or session_id= (with store=, the path or URL of its store)")
        super().__init__(**data)
        self._session = session

    @property
    def session(self) -> Session:
        """The memci session behind this memory (its store opened on first use if need be)."""
        if self._session is None:
            engine = Engine.open(self.store)
            weakref.finalize(self, engine.close)
            self._engine = engine
            self.store = engine.store.location
            self._session = engine.session(self.session_id, user=self.user, tenant=self.tenant)
        return self._session

    def __getstate__(self) -> dict[str, Any]:
        """Pickled as its fields: the session (and a store it opened) are opened again."""
        state = dict(super(BaseComponent, self).__getstate__())
        state["__pydantic_private__"] = dict.fromkeys(state.get("__pydantic_private__") or {})
        return state

    def close(self) -> None:
        """Close the store this memory opened itself (a session it was given stays open)."""
        if self._engine is not None:
            self._engine.close()
            self._engine = None
            self._session = None

    @classmethod
    def class_name(cls) -> str:
        """The class's name in LlamaIndex's registry."""
        return "MemciMemory"

    @classmethod
    def from_defaults(cls, chat_history: list[ChatMessage] | None = None, llm: Any = None,
                      **kwargs: Any) -> MemciMemory:
        """A memory as chat engines make one (``memory_cls.from_defaults(...)``).

        ``session=`` a memci session, or ``session_id=`` (and ``store=``, default the
        default store: ``$MEMCI_DB``, ``$MEMCI_HOME/memci.db`` or ``./.memci/memci.db``);
        without either, a new conversation in the default store, as ChatMemoryBuffer
        starts an empty one. ``chat_history`` is added to it; ``token_limit`` bounds
        ``get``. ``llm`` is accepted as LlamaIndex passes it, and not used.
        """
        session = kwargs.pop("session", None)
        if session is not None and not isinstance(session, Session):
            raise ConfigError("MemciMemory.from_defaults: session= must be a memci Session, "
                              "e.g. engine.session('chat-1')")
        if session is None:
            kwargs.setdefault("session_id", f"llama-index-{uuid.uuid4().hex}")
        memory = cls(session, **kwargs)
        if chat_history:
            memory.put_messages(chat_history)
        return memory

    def to_string(self) -> str:
        """The memory's reference as JSON (:meth:`from_string` reopens its session)."""
        return self.to_json()

    @classmethod
    def from_string(cls, json_str: str) -> MemciMemory:
        """A memory from :meth:`to_string`."""
        return cls.from_json(json_str)

    def tokenizer_fn(self, text: str) -> list[int]:
        """One entry per token of ``text`` by memci's tokenizer (chat engines take its len)."""
        return [0] * self.session.tokenizer.count(text)

    # -- reading -------------------------------------------------------------------------

    def _get(self, initial_token_count: int) -> list[ChatMessage]:
        session = self.session
        limit = session.settings.budget if self.token_limit is None else min(
            self.token_limit, session.settings.budget)
        own = self.reserve_tokens + (initial_token_count + 4 if initial_token_count else 0)
        setting = "token_limit" if limit == self.token_limit else _SETTINGS
        return context_messages(build_within(session, own, recipe=self.recipe, budget=limit,
                                             setting=setting))

    def get(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """memci's context now, within the budget less ``initial_token_count``."""
        return _aio.run(self.session, self._get, int(kwargs.get("initial_token_count", 0)))

    async def aget(self, input: str | None = None, **kwargs: Any) -> list[ChatMessage]:
        """The async form of :meth:`get`."""
        return await _aio.call(self.session, self._get,
                               int(kwargs.get("initial_token_count", 0)))

    def _all(self) -> list[ChatMessage]:
        return chat_messages(to_openai(self.session.branch()))

    def get_all(self) -> list[ChatMessage]:
        """The conversation as stored (the branch the context follows)."""
        return _aio.run(self.session, self._all)

    async def aget_all(self) -> list[ChatMessage]:
        """The async form of :meth:`get_all`."""
        return await _aio.call(self.session, self._all)

    # -- writing -------------------------------------------------------------------------

    def _put(self, messages: Sequence[ChatMessage]) -> None:
        if messages:
            self.session.add_many([stored_form(m) for m in messages])

    def put(self, message: ChatMessage) -> None:
        """Store ``message`` (durable when this returns)."""
        _aio.run(self.session, self._put, [message])

    async def aput(self, message: ChatMessage) -> None:
        """The async form of :meth:`put`."""
        await _aio.call(self.session, self._put, [message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Store ``messages`` in one transaction."""
        _aio.run(self.session, self._put, messages)

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """The async form of :meth:`put_messages`."""
        await _aio.call(self.session, self._put, messages)

    def _set(self, messages: Sequence[ChatMessage]) -> None:
        session = self.session
        turns = [m for m in session.branch() if m.role != "system"]
        held = [key_of(stored_form(c)) for c in chat_messages(
            [to_openai_message(m) for m in turns])]
        same = 0  # how many of ``messages`` the branch already opens with
        for have, given in zip(held, messages, strict=False):
            if have != key_of(stored_form(given)):
                break
            same += 1
        if same < len(turns):
            after = turns[same - 1].seq if same else None
            session.fork(after or 0)
        self._put(messages[same:])

    def set(self, messages: list[ChatMessage]) -> None:
        """Make the conversation ``messages``, on a new branch where it differs.

        What the branch already opens with is kept; the rest continues on a new branch
        (the old one stays in the store). A chat engine given ``chat_history`` sets it
        before every call: the history the memory holds already is not stored again.
        """
        _aio.run(self.session, self._set, messages)

    async def aset(self, messages: list[ChatMessage]) -> None:
        """The async form of :meth:`set`."""
        await _aio.call(self.session, self._set, messages)

    def reset(self) -> None:
        """Start over on a new branch; the store keeps every message."""
        _aio.run(self.session, self.session.fork, 0)

    async def areset(self) -> None:
        """The async form of :meth:`reset`."""
        await _aio.call(self.session, self.session.fork, 0)
