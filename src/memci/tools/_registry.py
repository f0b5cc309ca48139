"""memci's own tools: their schemas (OpenAI and Anthropic) and how they are dispatched.

A :class:`Tool` pairs a :class:`~memci.messages.ToolSpec` with a handler that takes the
session and the parsed arguments and returns the text the model will read.

:func:`run_tool` checks the arguments against the tool's schema before the handler runs
(:mod:`memci.tools._arguments`: JSON object, types, ranges, depth, text), so a handler
gets a plain dict that conforms and every tool gets the same checks. Bad arguments and
refusals never raise: they are answered with a line starting ``error:`` so the model can
correct itself — a :class:`ToolArgumentError` or an
:class:`~memci.errors.InvalidInputError` from the handler alike. An unknown tool name is
the caller's mistake and raises :class:`UnknownToolError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from memci._dataclasses import dataclass
from memci.errors import InvalidInputError, UnknownToolError
from memci.messages import ToolSpec
from memci.tools._arguments import MAX_INT, ToolArgumentError, check_arguments

__all__ = ["Tool", "ToolArgumentError", "UnknownToolError", "check_arguments", "int_arg",
           "run_tool"]

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Tool(Generic[S]):
    """One of memci's own tools."""

    spec: ToolSpec
    handler: Callable[[S, Mapping[str, Any]], str]


def run_tool(tools: Mapping[str, Tool[S]], session: S, name: str, arguments: object) -> str:
    """Run tool ``name``; bad arguments and refusals come back as an ``error:`` line."""
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None:
        shown = repr(name) if len(repr(name)) <= 60 else repr(name)[:57] + "..."
        raise UnknownToolError(
            f"{shown} is not one of memci's tools here; available: {', '.join(sorted(tools))}"
        )
    try:
        return tool.handler(session, check_arguments(tool.spec.parameters, arguments))
    except (ToolArgumentError, InvalidInputError) as exc:
        return f"error: {exc}"


def int_arg(args: Mapping[str, Any], name: str, *, default: int | None = None,
            minimum: int | None = None) -> int:
    """An integer argument already checked by :func:`check_arguments` (or its default)."""
    value = args.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or abs(value) > MAX_INT:
        raise ToolArgumentError(f"'{name}' must be a whole number")
    if minimum is not None and value < minimum:
        raise ToolArgumentError(f"'{name}' must be at least {minimum}, not {value}")
    return value
