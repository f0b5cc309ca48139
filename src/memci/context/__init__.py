"""Context: what a build returns, and the paged model it is built from."""

from memci.context._context import SEGMENTS, Context, ContextStats, Segment, ToolSpec

__all__ = ["SEGMENTS", "Context", "ContextStats", "Segment", "ToolSpec"]
