"""The agent's own tools: read from OpenAI, Anthropic or Responses form into one spec.

An agent hands ``session.build(tools=[...])`` its tool definitions in whichever form its
code already has; :func:`read_agent_tools` reads each into a
:class:`~memci.messages.ToolSpec` (``agent=True``) that the context writes back in every
form (see ``ToolSpec``), and :func:`check_no_clash` keeps them apart from memci's own.

The forms, told apart by their keys:

- OpenAI Chat Completions: ``{"type": "function", "function": {"name", "description",
  "parameters", "strict"}}``;
- OpenAI Responses: ``{"type": "function", "name", "description", "parameters",
  "strict"}`` (``strict`` defaults to true there, as the API has it);
- Anthropic Messages: ``{"name", "description", "input_schema"}`` (``type`` absent or
  ``"custom"``);
- a :class:`~memci.messages.ToolSpec`, or an SDK object of one of these forms (read
  through its ``model_dump``).

Invariants: everything is checked before a build uses it, and a problem raises
:class:`~memci.errors.InvalidToolError` naming the tool (its position and name) and what
to fix: a function tool only (a provider's built-in tool such as ``web_search`` has no
form in the other APIs), a name both providers accept (1-64 of ``a-z A-Z 0-9 _ -``)
and unique among the agent's tools, parameters that are a JSON Schema object, JSON
that memci can always write (:mod:`memci._jsonvalues`), at most :data:`MAX_TOOLS` tools
of at most ``max_bytes`` of JSON together. A name that one of memci's own tools has
raises :class:`~memci.errors.ToolNameClashError` naming both. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

from memci import _jsonvalues
from memci._lazy import LazyPattern
from memci.errors import InvalidToolError, ToolNameClashError
from memci.messages import ToolSpec

__all__ = ["MAX_TOOLS", "check_no_clash", "read_agent_tools", "tool_call_name"]

MAX_TOOLS = 512
"""The most tools one request may carry (OpenAI takes 128; more only makes a slow error)."""

_EXPECTED_CALL = (
    "expected a tool call: an OpenAI tool call ({'function': {'name': ...}}), an Anthropic "
    "tool_use block or a Responses function_call item ({'name': ...}), a memci ToolCallPart "
    "or a tool name")
_NAME = LazyPattern(r"[A-Za-z0-9_-]{1,64}")
_EMPTY_OBJECT: Mapping[str, Any] = {"type": "object", "properties": {}}


def read_agent_tools(tools: object, *, max_bytes: int) -> tuple[ToolSpec, ...]:
    """The agent's tools, checked and read into specs, in the order given.

    ``None`` means none. Raises :class:`~memci.errors.InvalidToolError` (see the module).
    """
    if tools is None:
        return ()
    if isinstance(tools, str | bytes | Mapping | ToolSpec) or not isinstance(tools, Iterable):
        raise InvalidToolError(
            f"tools takes a list of tool definitions, not {_kind(tools)}: wrap a single "
            "tool in a list, e.g. tools=[{'type': 'function', 'function': {...}}]")
    specs: list[ToolSpec] = []
    where: dict[str, int] = {}
    size = 0
    for i, tool in enumerate(tools):
        if i >= MAX_TOOLS:
            raise InvalidToolError(f"more than {MAX_TOOLS} tools in one request; send the "
                                   "ones this turn needs")
        spec = _read_one(tool, i)
        if spec.name in where:
            raise InvalidToolError(
                f"tools[{where[spec.name]}] and tools[{i}] are both named {spec.name!r}: "
                "give each tool its own name")
        where[spec.name] = i
        size += len((spec.original or json.dumps(spec.to_openai())).encode())
        if size > max_bytes:
            raise InvalidToolError(
                f"the tools take more than {max_bytes:,} bytes of JSON (max_message_bytes) "
                f"by tools[{i}] {spec.name!r}: shorten their descriptions and schemas")
        specs.append(spec)
    return tuple(specs)


def check_no_clash(agent: Iterable[ToolSpec], memci_names: Iterable[str]) -> None:
    """Raise ToolNameClashError when one of the agent's tools has a name memci's tools use."""
    own = frozenset(memci_names)
    for i, spec in enumerate(agent):
        if spec.name in own:
            raise ToolNameClashError(
                f"the agent's tool {spec.name!r} (tools[{i}]) has the name of memci's own "
                f"tool {spec.name!r}: rename the agent's tool, or leave memci's out with the "
                f"session setting tools=[...] (memci's tools here: {', '.join(sorted(own))})")


def tool_call_name(call: object) -> str:
    """The tool name of a model's tool call, in any form memci reads.

    A name; a :class:`~memci.messages.ToolCallPart`; an OpenAI Chat Completions tool call
    (``{"function": {"name", ...}}``); an Anthropic ``tool_use`` block or a Responses
    ``function_call`` item (``{"name", ...}``); or an SDK object of one of these.
    """
    from memci.messages import ToolCallPart

    if isinstance(call, str):
        return call
    if isinstance(call, ToolCallPart):
        return call.name
    try:
        data = _as_mapping(call, "a tool call")
    except InvalidToolError as exc:
        raise InvalidToolError(f"{_EXPECTED_CALL}; got {_shown(call)} ({exc})") from exc
    function = data.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        return str(function["name"])
    name = data.get("name")
    if isinstance(name, str) and data.get("type") in (None, "tool_use", "function_call",
                                                        "function", "server_tool_use"):
        return name
    raise InvalidToolError(f"{_EXPECTED_CALL}; got {_shown(data)}")


# -- one tool -------------------------------------------------------------------------------


def _read_one(tool: object, i: int) -> ToolSpec:
    if isinstance(tool, ToolSpec):
        return _checked(i, tool.name, tool.description, tool.parameters, tool.strict,
                        None, None)
    data = _as_mapping(tool, f"tools[{i}]")
    try:
        original = _jsonvalues.dumps(data)
    except _jsonvalues.JSONValueError as exc:
        raise InvalidToolError(f"tools[{i}]{_label(data)}: {exc}") from exc
    given = cast(dict[str, Any], json.loads(original))  # a plain copy, nothing shared
    kind = given.get("type")
    if "function" in given and kind in (None, "function"):
        function = given["function"]
        if not isinstance(function, Mapping):
            raise InvalidToolError(f"tools[{i}]: 'function' must be an object with 'name', "
                                   f"'description' and 'parameters', not {_kind(function)}")
        return _checked(i, function.get("name"), function.get("description"),
                        function.get("parameters"), function.get("strict"), "openai", original)
    if kind == "function":
        # The Responses API takes a function tool as strict unless it says otherwise.
        strict = given.get("strict")
        return _checked(i, given.get("name"), given.get("description"),
                        given.get("parameters"), True if strict is None else strict,
                        "responses", original)
    if "input_schema" in given and kind in (None, "custom"):
        if given.get("input_schema") is None:
            raise InvalidToolError(f"tools[{i}]{_label(given)}: input_schema must be a JSON "
                                   "Schema object, not null")
        return _checked(i, given.get("name"), given.get("description"),
                        given["input_schema"], given.get("strict"), "anthropic", original)
    if kind is not None:
        raise InvalidToolError(
            f"tools[{i}]{_label(given)} is a tool of type {_shown(kind)}: memci carries "
            "function tools (OpenAI, Responses or Anthropic form), which every provider "
            "understands. A provider's built-in tool (web search, code interpreter, MCP …) "
            "goes straight into that provider's request: add it to the payload's 'tools'")
    raise InvalidToolError(
        f"tools[{i}]{_label(given)} is not a tool definition memci reads: give "
        "{'type': 'function', 'function': {'name', 'description', 'parameters'}} (OpenAI), "
        "{'type': 'function', 'name', 'description', 'parameters'} (Responses) or "
        "{'name', 'description', 'input_schema'} (Anthropic)")


def _checked(
    i: int, name: object, description: object, parameters: object, strict: object,
    form: str | None, original: str | None,
) -> ToolSpec:
    where = f"tools[{i}]"
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidToolError(
            f"{where}: the name {_shown(name)} must be 1 to 64 letters, digits, '_' or '-' "
            "(what both OpenAI and Anthropic accept)")
    where = f"{where} {name!r}"
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise InvalidToolError(f"{where}: description must be text, not {_kind(description)}")
    if parameters is None:
        parameters = _EMPTY_OBJECT
    if not isinstance(parameters, Mapping):
        raise InvalidToolError(
            f"{where}: parameters must be a JSON Schema object "
            f"({{'type': 'object', 'properties': {{...}}}}), not {_kind(parameters)}")
    if parameters.get("type") != "object":
        raise InvalidToolError(
            f"{where}: parameters must be a JSON Schema of type 'object' (the arguments "
            f"are an object of named values), not type {_shown(parameters.get('type'))}")
    if strict is not None and not isinstance(strict, bool):
        raise InvalidToolError(f"{where}: strict must be true or false, not {_shown(strict)}")
    try:
        # Read already when the tool came as a dict; a ToolSpec made by hand is checked
        # here. Either way the spec holds a plain copy that nothing else shares.
        params = cast(dict[str, Any], json.loads(_jsonvalues.dumps(dict(parameters))))
        if original is None:
            _jsonvalues.dumps(description)
    except _jsonvalues.JSONValueError as exc:
        raise InvalidToolError(f"{where}: {exc}") from exc
    return ToolSpec(name, description, params, strict=bool(strict), agent=True, form=form,
                    original=original)


# -- reading values -------------------------------------------------------------------------


def _as_mapping(obj: object, what: str) -> dict[str, Any]:
    """A plain dict of ``obj`` (a mapping, or an SDK object through ``model_dump``)."""
    data: object = obj
    if not isinstance(obj, Mapping):
        dump = getattr(obj, "model_dump", None)
        if not callable(dump):
            raise InvalidToolError(f"{what} must be a dict (or an SDK object of one), not "
                                   f"{_kind(obj)}")
        try:
            data = dump(exclude_none=True)
        except Exception as exc:  # the caller's object could not dump itself
            raise InvalidToolError(f"{what}: {type(obj).__name__}.model_dump() failed "
                                   f"({type(exc).__name__}); pass it as a dict") from exc
    if not isinstance(data, Mapping):
        raise InvalidToolError(f"{what} must be a dict, not {_kind(data)}")
    try:
        return {str(k): v for k, v in data.items()}
    except Exception as exc:  # a mapping whose iteration raises
        raise InvalidToolError(f"{what} cannot be read as a dict ({type(exc).__name__})") \
            from exc


def _label(data: Mapping[str, Any]) -> str:
    function = data.get("function")
    name = function.get("name") if isinstance(function, Mapping) else data.get("name")
    return f" {name!r}" if isinstance(name, str) and len(name) <= 80 else ""


def _kind(value: object) -> str:
    return "None" if value is None else type(value).__name__


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
