"""The names of memci's own tools, with no imports (the index reads them; see below).

Their answers are memci's, not the conversation's: recalled pages and artifacts repeat
what is stored already, search results and "no memory found" lines are about memory, and
pin/plan/notebook confirmations restate the working state. The search index skips these
calls and their results (:mod:`memci.memory._index`), so memci never finds its own answers
as memory. ``tests/test_memory_index_own_tools.py`` checks this set equals the tools
registered in :mod:`memci.tools._builtin`.
"""

from __future__ import annotations

__all__ = ["OWN_TOOL_NAMES"]

OWN_TOOL_NAMES = frozenset({
    "recall_page", "search_memory", "artifact_get", "file_snippet", "grep",
    "notebook_add", "pin_add", "pin_list", "pin_remove", "pin_update",
    "plan_add", "plan_done", "plan_list", "plan_remove",
})
