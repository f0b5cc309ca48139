"""Context: what a build returns, and the paged model it is built from."""

from memci.context._context import Context, ContextStats, ToolSpec

__all__ = ["Context", "ContextStats", "ToolSpec"]
