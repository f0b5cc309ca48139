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

Everything a public method of these classes returns is importable from here (what a
build, a search, the working state and long-term memory give back), and so is every
error memci raises (the tree is drawn in :mod:`memci.errors`).

``import memci`` loads what a build needs and nothing more: what only some processes,
engines or sessions use (asyncio for :class:`AsyncEngine` and :class:`AsyncSession`, the
HTTP clients, the summary jobs, the docs index behind :class:`IndexReport`, the server,
the CLI, the adapters, the store's deletions, jobs and API keys) is imported on first
use (``__getattr__``, PEP 562, through :func:`memci._lazy.lazy_names`), so a CLI call or
a fresh worker does not pay for it (``tests/test_coldstart.py``). What it does load is
made cheaply: its dataclasses and named tuples compile nothing (:mod:`memci._dataclasses`,
:mod:`memci._records`).
"""

from typing import TYPE_CHECKING

from memci import messages, tokens
from memci._lazy import lazy_names
from memci._session import Session, SessionStats
from memci._version import __version__
from memci.context import Context, ContextStats, PageInfo, Segment, ToolSpec
from memci.context._settings import SessionSettings
from memci.engine import Engine
from memci.errors import (
    ArtifactNotFoundError,
    BudgetTooSmallError,
    ConfigError,
    InvalidFileError,
    InvalidInputError,
    InvalidMessageError,
    InvalidStateFileError,
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
    OwnerConflictError,
    RollbackConflictError,
    StoreCorruptError,
    StoreError,
    StoreFullError,
    TokenizerUnavailableError,
    ToolNameClashError,
    UnknownItemError,
    UnknownMessageError,
    UnknownRoleError,
    UnknownSessionError,
    UnknownToolError,
    WorkspaceError,
    WorkspaceLimitError,
)
from memci.memory import (
    Gatherer,
    Hit,
    Memory,
    MemoryItem,
    RetrievalResult,
    Retrieved,
)
from memci.messages import (
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from memci.store import SessionRecord
from memci.workspace import (
    TTL,
    MemoEntry,
    NoteEntry,
    Pin,
    PlanItem,
    WorkEvent,
    WorkspaceLimits,
    WorkState,
)

if TYPE_CHECKING:
    from memci._async import AsyncEngine, AsyncSession
    from memci.memory import IndexReport
    from memci.store import Erasure
else:
    # Imported when first asked for: the asyncio faces (asyncio costs a sync process) and
    # what indexing files returns (the docs index and its chunkers).
    __getattr__, __dir__ = lazy_names(__name__, {
        "memci._async": ("AsyncEngine", "AsyncSession"),
        "memci.memory._docs": ("IndexReport",),
        "memci.store._erase": ("Erasure",),
    })


__all__ = [
    "TTL",
    "ArtifactNotFoundError",
    "AsyncEngine",
    "AsyncSession",
    "BudgetTooSmallError",
    "ConfigError",
    "Context",
    "ContextStats",
    "Engine",
    "Erasure",
    "Gatherer",
    "Hit",
    "ImagePart",
    "IndexReport",
    "InvalidFileError",
    "InvalidInputError",
    "InvalidMessageError",
    "InvalidStateFileError",
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
    "MemoEntry",
    "Memory",
    "MemoryItem",
    "Message",
    "MessageTooLargeError",
    "MissingExtraError",
    "NoteEntry",
    "OrphanToolResultError",
    "OwnerConflictError",
    "PageInfo",
    "Pin",
    "PlanItem",
    "ReasoningPart",
    "RetrievalResult",
    "Retrieved",
    "RollbackConflictError",
    "Segment",
    "Session",
    "SessionRecord",
    "SessionSettings",
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
    "UnknownItemError",
    "UnknownMessageError",
    "UnknownRoleError",
    "UnknownSessionError",
    "UnknownToolError",
    "WorkEvent",
    "WorkState",
    "WorkspaceError",
    "WorkspaceLimitError",
    "WorkspaceLimits",
    "__version__",
    "messages",
    "tokens",
]
