"""memci: a context and memory engine for LLM agents.

Every turn an agent asks memci "what do I send to the model now?", and memci answers with
a provider-ready message list that fits the budget, keeps what matters, points to what was
put aside, and never loses a message::

    import memci

    engine = memci.Engine.open()
    session = engine.session("chat-1", user="u1", model="gpt-4o-mini")
    session.set_system("You are a helpful assistant.")
    session.add({"role": "user", "content": "hi"})
    payload = session.build(tools=[...]).to_openai()   # the agent's tools with memci's

and the same with ``await`` on :class:`AsyncEngine` / :class:`AsyncSession`.
"""

from memci import messages, tokens
from memci._async import AsyncEngine, AsyncSession
from memci._session import Session, SessionStats
from memci._version import __version__
from memci.context import Context, ContextStats, Segment, ToolSpec
from memci.engine import Engine
from memci.errors import (
    BudgetTooSmallError,
    ConfigError,
    InvalidFileError,
    InvalidInputError,
    InvalidMessageError,
    InvalidTextError,
    InvalidTimestampError,
    InvalidToolArgumentsError,
    InvalidToolError,
    LLMConnectionError,
    LLMError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    MemciError,
    MessageTooLargeError,
    MissingExtraError,
    OrphanToolResultError,
    StoreCorruptError,
    StoreError,
    StoreFullError,
    TokenizerUnavailableError,
    ToolNameClashError,
    UnknownMessageError,
    UnknownRoleError,
    UnknownSessionError,
)
from memci.messages import (
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from memci.store import Erasure

__all__ = [
    "AsyncEngine",
    "AsyncSession",
    "BudgetTooSmallError",
    "ConfigError",
    "Context",
    "ContextStats",
    "Engine",
    "Erasure",
    "ImagePart",
    "InvalidFileError",
    "InvalidInputError",
    "InvalidMessageError",
    "InvalidTextError",
    "InvalidTimestampError",
    "InvalidToolArgumentsError",
    "InvalidToolError",
    "LLMConnectionError",
    "LLMError",
    "LLMHTTPError",
    "LLMResponseError",
    "LLMTimeoutError",
    "MemciError",
    "Message",
    "MessageTooLargeError",
    "MissingExtraError",
    "OrphanToolResultError",
    "ReasoningPart",
    "Segment",
    "Session",
    "SessionStats",
    "StoreCorruptError",
    "StoreError",
    "StoreFullError",
    "TextPart",
    "TokenizerUnavailableError",
    "ToolCallPart",
    "ToolNameClashError",
    "ToolResultPart",
    "ToolSpec",
    "UnknownMessageError",
    "UnknownRoleError",
    "UnknownSessionError",
    "__version__",
    "messages",
    "tokens",
]
