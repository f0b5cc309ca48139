"""memci's own tools: their schemas (OpenAI and Anthropic) and how they are dispatched.

A :class:`Tool` pairs a :class:`~memci.context.ToolSpec` with a handler that takes the
session and the parsed arguments and returns the text the model will read. Handlers never
raise for bad arguments or refusals: they answer with a line starting ``error:`` so the
model can correct itself. An unknown tool name is the caller's mistake and raises.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from memci.context import ToolSpec
from memci.errors import InvalidInputError

__all__ = ["Tool", "ToolArgumentError", "UnknownToolError", "parse_arguments", "run_tool"]

S = TypeVar("S")


class UnknownToolError(InvalidInputError):
    """A tool name that is not one of memci's own tools in this session."""


class ToolArgumentError(Exception):
    """Raised inside handlers for bad arguments; turned into an ``error:`` answer."""


@dataclass(frozen=True, slots=True)
class Tool(Generic[S]):
    """One of memci's own tools."""

    spec: ToolSpec
    handler: Callable[[S, Mapping[str, Any]], str]


def parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Tool arguments as a dict, from a dict or JSON text of an object."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError as exc:
            raise ToolArgumentError(f"arguments are not valid JSON: {exc}") from exc
        if not isinstance(parsed, dict):
            raise ToolArgumentError("arguments must be a JSON object")
        return parsed
    return dict(arguments)


def run_tool(
    tools: Mapping[str, Tool[S]], session: S, name: str,
    arguments: Mapping[str, Any] | str | None,
) -> str:
    """Run tool ``name``; bad arguments come back as an ``error:`` line."""
    tool = tools.get(name)
    if tool is None:
        raise UnknownToolError(
            f"{name!r} is not one of memci's tools here; available: {', '.join(sorted(tools))}"
        )
    try:
        return tool.handler(session, parse_arguments(arguments))
    except ToolArgumentError as exc:
        return f"error: {exc}"


def int_arg(args: Mapping[str, Any], name: str, *, default: int | None = None,
            minimum: int | None = None) -> int:
    """An integer argument, checked."""
    value = args.get(name, default)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolArgumentError(f"'{name}' must be an integer")
    if minimum is not None and value < minimum:
        raise ToolArgumentError(f"'{name}' must be at least {minimum}")
    return value
