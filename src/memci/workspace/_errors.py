"""The errors the workspace raises: refusals of a workspace action, all caller mistakes.

Every one is an :class:`memci.errors.InvalidInputError`; when one is raised nothing has
been written (each action is one transaction)::

    InvalidInputError
    └── WorkspaceError              a workspace action refused; the message says what to fix
        ├── ArtifactNotFoundError   no artifact with that id
        ├── UnknownItemError        no pin / plan item / note / fastmemo entry / event with that id
        ├── WorkspaceLimitError     a limit would be passed (count, length)
        ├── RollbackConflictError   a later event changed what the rollback would restore
        └── InvalidStateFileError   a context_state.json that cannot be imported
                                    (also an InvalidFileError)
"""

from __future__ import annotations

from memci.errors import InvalidFileError, InvalidInputError

__all__ = [
    "ArtifactNotFoundError",
    "InvalidStateFileError",
    "RollbackConflictError",
    "UnknownItemError",
    "WorkspaceError",
    "WorkspaceLimitError",
]


class WorkspaceError(InvalidInputError):
    """A workspace action was refused; the message says what to fix."""


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
