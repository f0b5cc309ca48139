"""The workspace of seed 004: artifacts, pins, plan, notebook, fastmemo, context_state.json.

- :class:`ArtifactStore` keeps every tool output whole and content-addressed (large ones
  in a folder, :class:`ArtifactFolder`, or in the store's database); a context shows its
  summary (:func:`summarize_tool_output`) and pointer ``artifact:<id>``
  (:func:`render_tool_result`);
- :class:`WorkState` is a session's pins, plan, notebook and fastmemo: bounded, sourced,
  audited, and rolled back event by event;
- ``context_state.json`` is its versioned export (:meth:`WorkState.export_state`,
  :meth:`WorkState.import_state`);
- :class:`Workspace` holds both for one store;
- :data:`WORKSPACE_TOOL_SPECS` and :func:`call_workspace_tool` offer the working state
  to a model as tools (pin_*, plan_*, notebook_add); :data:`WORKING_STATE_SPEC` is all of
  them as one schema, the one a model is offered.
"""

from typing import TYPE_CHECKING

from memci._lazy import lazy_names

if TYPE_CHECKING:
    from memci.errors import (
        ArtifactNotFoundError,
        InvalidStateFileError,
        RollbackConflictError,
        UnknownItemError,
        WorkspaceError,
        WorkspaceLimitError,
    )
    from memci.workspace._artifacts import (
        ARTIFACT_ID_LENGTH,
        Artifact,
        ArtifactFolder,
        ArtifactStore,
        PreparedOutput,
        parse_artifact_ref,
        pointer,
        render_tool_result,
        slice_lines,
    )
    from memci.workspace._compress import Compressor, extractive_compress
    from memci.workspace._folder import contents_for
    from memci.workspace._items import MemoEntry, NoteEntry, Pin, PlanItem, WorkEvent
    from memci.workspace._limits import (
        CHINESE_TITLES,
        ENGLISH_TITLES,
        TTL,
        SectionTitles,
        TTLSpec,
        WorkspaceLimits,
        parse_ttl,
    )
    from memci.workspace._render import (
        render_context_pool,
        render_fastmemo,
        render_notebook,
        render_pins,
        render_plan,
    )
    from memci.workspace._state import WorkState
    from memci.workspace._statefile import (
        STATE_FORMAT,
        STATE_VERSION,
        read_state_file,
        write_state_file,
    )
    from memci.workspace._summary import (
        ToolOutputSummarizer,
        parse_exit_code,
        summarize_tool_output,
    )
    from memci.workspace._tools import (
        WORKING_STATE_SPEC,
        WORKSPACE_TOOL_SPECS,
        ToolResult,
        call_workspace_tool,
        parse_tool_arguments,
    )
    from memci.workspace._workspace import Workspace
else:
    # Each name loads with its module when first read (memci._lazy).
    __getattr__, __dir__ = lazy_names(__name__, {
        "memci.errors": (
            "ArtifactNotFoundError", "InvalidStateFileError", "RollbackConflictError",
            "UnknownItemError", "WorkspaceError", "WorkspaceLimitError",
        ),
        "memci.workspace._artifacts": (
            "ARTIFACT_ID_LENGTH", "Artifact", "ArtifactFolder", "ArtifactStore", "PreparedOutput",
            "parse_artifact_ref", "pointer", "render_tool_result", "slice_lines",
        ),
        "memci.workspace._compress": ("Compressor", "extractive_compress"),
        "memci.workspace._folder": ("contents_for",),
        "memci.workspace._items": ("MemoEntry", "NoteEntry", "Pin", "PlanItem", "WorkEvent"),
        "memci.workspace._limits": (
            "CHINESE_TITLES", "ENGLISH_TITLES", "TTL", "SectionTitles", "TTLSpec",
            "WorkspaceLimits", "parse_ttl",
        ),
        "memci.workspace._render": (
            "render_context_pool", "render_fastmemo", "render_notebook", "render_pins",
            "render_plan",
        ),
        "memci.workspace._state": ("WorkState",),
        "memci.workspace._statefile": (
            "STATE_FORMAT", "STATE_VERSION", "read_state_file", "write_state_file",
        ),
        "memci.workspace._summary": (
            "ToolOutputSummarizer", "parse_exit_code", "summarize_tool_output",
        ),
        "memci.workspace._tools": (
            "WORKING_STATE_SPEC", "WORKSPACE_TOOL_SPECS", "ToolResult", "call_workspace_tool",
            "parse_tool_arguments",
        ),
        "memci.workspace._workspace": ("Workspace",),
    })

__all__ = [
    "ARTIFACT_ID_LENGTH",
    "CHINESE_TITLES",
    "ENGLISH_TITLES",
    "STATE_FORMAT",
    "STATE_VERSION",
    "TTL",
    "WORKING_STATE_SPEC",
    "WORKSPACE_TOOL_SPECS",
    "Artifact",
    "ArtifactFolder",
    "ArtifactNotFoundError",
    "ArtifactStore",
    "Compressor",
    "InvalidStateFileError",
    "MemoEntry",
    "NoteEntry",
    "Pin",
    "PlanItem",
    "PreparedOutput",
    "RollbackConflictError",
    "SectionTitles",
    "TTLSpec",
    "ToolOutputSummarizer",
    "ToolResult",
    "UnknownItemError",
    "WorkEvent",
    "WorkState",
    "Workspace",
    "WorkspaceError",
    "WorkspaceLimitError",
    "WorkspaceLimits",
    "call_workspace_tool",
    "contents_for",
    "extractive_compress",
    "parse_artifact_ref",
    "parse_exit_code",
    "parse_tool_arguments",
    "parse_ttl",
    "pointer",
    "read_state_file",
    "render_context_pool",
    "render_fastmemo",
    "render_notebook",
    "render_pins",
    "render_plan",
    "render_tool_result",
    "slice_lines",
    "summarize_tool_output",
    "write_state_file",
]
