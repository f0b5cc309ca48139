"""Every error memci raises, as one tree rooted at :class:`MemciError`.

The caller's mistakes (bad input, bad settings) are kept apart from runtime failures
(a store that cannot be written, an endpoint that does not answer). When an error is
raised while storing, nothing has been written: the store is as it was before the call.

::

    MemciError
    ├── InvalidInputError            the caller's mistake; the message says what to fix
    │   ├── InvalidMessageError      a message that cannot be stored
    │   │   ├── UnknownRoleError
    │   │   ├── InvalidToolArgumentsError
    │   │   ├── OrphanToolResultError
    │   │   ├── InvalidTextError
    │   │   ├── MessageTooLargeError
    │   │   └── InvalidTimestampError
    │   ├── InvalidToolError         an agent's tool definition memci cannot send
    │   │   └── ToolNameClashError   named like one of memci's own tools (names both)
    │   ├── ConfigError              a setting that is out of range or unknown
    │   │   └── BudgetTooSmallError  a budget below the system prompt + the newest message
    │   ├── UnknownSessionError
    │   ├── OwnerConflictError       a session written or read as another user than its own
    │   ├── UnknownMessageError      a seq the session does not hold (retract, pop)
    │   ├── UnknownToolError         a tool name that is not one of memci's own tools
    │   ├── InvalidFileError         an import or trace file that cannot be read
    │   │   └── InvalidStateFileError    (also a WorkspaceError, below)
    │   └── WorkspaceError           a workspace action refused; the message says what to fix
    │       ├── ArtifactNotFoundError    no artifact with that id
    │       ├── UnknownItemError         no pin, plan item, note, memo or event with that id
    │       ├── WorkspaceLimitError      a limit would be passed (count, length)
    │       ├── RollbackConflictError    a later event changed what the rollback restores
    │       └── InvalidStateFileError    a context_state.json that cannot be imported
    ├── MissingExtraError            an optional part is not installed; names the pip command
    ├── TokenizerUnavailableError    an exact tokenizer whose encoding is not available offline
    ├── StoreError                   the store cannot be opened, read, migrated or written
    │   ├── StoreFullError           the disk (or the store's size limit) is full
    │   └── StoreCorruptError        the store's file is damaged or not a memci store
    └── LLMError                     memci's own upkeep calls to a model endpoint
        ├── LLMHTTPError             carries .status and .body
        ├── LLMTimeoutError          no answer within the timeout (after retries)
        ├── LLMConnectionError       unreachable, or the connection dropped (after retries)
        └── LLMResponseError         a 2xx reply that cannot be read; carries .body
"""

from __future__ import annotations

__all__ = [
    "ArtifactNotFoundError",
    "BudgetTooSmallError",
    "ConfigError",
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
    "MessageTooLargeError",
    "MissingExtraError",
    "OrphanToolResultError",
    "OwnerConflictError",
    "RollbackConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreFullError",
    "TokenizerUnavailableError",
    "ToolNameClashError",
    "UnknownItemError",
    "UnknownMessageError",
    "UnknownRoleError",
    "UnknownSessionError",
    "UnknownToolError",
    "WorkspaceError",
    "WorkspaceLimitError",
]


class MemciError(Exception):
    """The root of every error memci raises."""


class InvalidInputError(MemciError, ValueError):
    """The caller passed something memci cannot accept; the message says what to fix."""


class InvalidMessageError(InvalidInputError):
    """A message that cannot be stored (wrong shape, wrong type, missing field)."""


class UnknownRoleError(InvalidMessageError):
    """A role other than system, user, assistant or tool."""


class InvalidToolArgumentsError(InvalidMessageError):
    """Tool call arguments that are not a JSON object (or JSON text of one)."""


class OrphanToolResultError(InvalidMessageError):
    """A tool result whose call id matches no tool call of the session (or was answered)."""


class InvalidTextError(InvalidMessageError):
    """Text that is not valid Unicode (lone surrogates, undecodable bytes)."""


class MessageTooLargeError(InvalidMessageError):
    """A message whose content passes the configured size limit."""


class InvalidTimestampError(InvalidMessageError):
    """A ``created_at`` that is not an ISO 8601 date-time."""


class InvalidToolError(InvalidInputError):
    """An agent's tool definition that memci cannot read or send; the message names it."""


class ToolNameClashError(InvalidToolError):
    """An agent's tool has the name of one of memci's own tools; the message names both."""


class ConfigError(InvalidInputError):
    """A setting that is unknown or out of range."""


class BudgetTooSmallError(ConfigError):
    """A budget smaller than the system prompt and the newest message together.

    memci never sends over the budget silently: raise the budget or shorten them.
    ``budget`` is the budget asked for, ``needed`` the least budget that builds.
    """

    def __init__(self, message: str, *, budget: int = 0, needed: int = 0) -> None:
        self.budget = budget
        self.needed = needed
        super().__init__(message)


class UnknownSessionError(InvalidInputError):
    """A session that does not exist where one was required."""


class OwnerConflictError(InvalidInputError):
    """A session asked for as another user than the one it belongs to.

    A session's user is set once (when it is made, or by the first call that names one)
    and never changes: its messages stay that user's, so erasing the user reaches them.
    Nothing was stored or changed when it is raised.
    """


class UnknownMessageError(InvalidInputError):
    """A message (by seq) that the session does not hold where one was required."""


class UnknownToolError(InvalidInputError):
    """A tool name that is not one of memci's own tools in this session."""


class InvalidFileError(InvalidInputError):
    """A file (trace, export, state) that cannot be read as what it claims to be."""


class WorkspaceError(InvalidInputError):
    """A workspace action was refused; the message says what to fix.

    Every workspace action is one transaction: when one is refused nothing was written.
    """


class ArtifactNotFoundError(WorkspaceError):
    """No artifact has that id."""


class UnknownItemError(WorkspaceError):
    """No pin, plan item, note, fastmemo entry or event has that id in this session."""


class WorkspaceLimitError(WorkspaceError):
    """The action would pass a limit (how many pins, how long a summary …)."""


class RollbackConflictError(WorkspaceError):
    """A later event changed what the rollback would restore; roll that one back first."""


class InvalidStateFileError(WorkspaceError, InvalidFileError):
    """A ``context_state.json`` of an unknown version or a malformed one."""


class MissingExtraError(MemciError, ImportError):
    """An optional dependency is not installed; the message names the pip command.

    ``hint``, when given, is added in parentheses: what else stands in the way.
    """

    def __init__(self, extra: str, package: str, feature: str, *, hint: str = "") -> None:
        self.extra = extra
        self.package = package
        super().__init__(
            f"{feature} needs the optional package {package!r}: "
            f"install it with  pip install 'memci[{extra}]'" + (f" ({hint})" if hint else "")
        )


class TokenizerUnavailableError(MemciError):
    """An exact tokenizer was asked for but its encoding cannot be loaded offline."""


class StoreError(MemciError):
    """The store cannot be opened, read, migrated or written; the message says why."""


class StoreFullError(StoreError):
    """The disk holding the store is full (or the store reached its size limit).

    Nothing of the call that raised it was stored; what was stored before stays.
    """


class StoreCorruptError(StoreError):
    """The store's file is damaged, or is not a memci store; the message says how to recover."""


class LLMError(MemciError):
    """A call memci made to a model endpoint for its own upkeep failed."""


class LLMHTTPError(LLMError):
    """The endpoint answered with an error status; ``status`` and ``body`` say what."""

    def __init__(self, message: str, *, status: int, body: str) -> None:
        self.status = status
        self.body = body
        super().__init__(f"{message} (HTTP {status}): {body[:500]}")


class LLMTimeoutError(LLMError):
    """The endpoint did not answer within the timeout, on every attempt."""


class LLMConnectionError(LLMError):
    """The endpoint could not be reached or dropped the connection, on every attempt."""


class LLMResponseError(LLMError):
    """The endpoint answered 2xx with a reply that cannot be read; ``body`` holds it."""

    def __init__(self, message: str, *, body: str) -> None:
        self.body = body
        super().__init__(f"{message}: {body[:500]!r}")
