"""The schemas of the file tools (``artifact_get``, ``file_snippet``, ``grep``).

What a request offers the model, apart from the tools' code (:mod:`memci.tools._files`,
with its confinement and RE2): a session loads that only when a file tool is called.
"""

from __future__ import annotations

from typing import Any

from memci.messages import ToolSpec

__all__ = ["FILE_TOOL_SPECS"]


def _schema(properties: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


FILE_TOOL_SPECS: tuple[ToolSpec, ...] = (
    # Terse: these schemas ride on every request that offers them. Bounds the tools
    # enforce themselves (minimums, maximums) are not repeated here.
    ToolSpec(
        "artifact_get",
        "Read a stored tool output (artifact:<id>) exactly: characters from offset "
        "(from 0), or lines from start_line (from 1).",
        _schema({"id": {"type": "string"}, "offset": {"type": "integer"},
                 "length": {"type": "integer"}, "start_line": {"type": "integer"},
                 "line_count": {"type": "integer"}}, ("id",)),
    ),
    ToolSpec(
        "file_snippet",
        "Read numbered lines of a file under the file roots (default 50, at most 200).",
        _schema({"path": {"type": "string"}, "start": {"type": "integer"},
                 "length": {"type": "integer"}}, ("path",)),
    ),
    ToolSpec(
        "grep",
        "Lines matching an RE2 regex in artifact:<id>, or in a file or directory under the "
        "file roots (limit: default 20, at most 100).",
        _schema({"target": {"type": "string"}, "pattern": {"type": "string"},
                 "limit": {"type": "integer"}, "ignore_case": {"type": "boolean"}},
                ("target", "pattern")),
    ),
)
