"""Context: the build's home — from the stored messages to the payload a model is sent.

What a build returns (:class:`Context`, its :class:`ContextStats` and :class:`Segment`
labels) and the paged model it is built from (:class:`PageInfo` says where each page is).
The builder (:mod:`memci.context._builder`) runs the segment sources in three phases —
load, a pure plan, commit — and assembles the request; see docs/architecture.md.
"""

from memci.context._context import SEGMENTS, Context, ContextStats, Segment, ToolSpec
from memci.context._model import PageInfo

__all__ = ["SEGMENTS", "Context", "ContextStats", "PageInfo", "Segment", "ToolSpec"]
