r"""Tool arguments, checked once for every memci tool against the tool's own schema.

Whatever arrives — a dict from Python, JSON text a model wrote, a body from REST or MCP —
:func:`check_arguments` reads it before any handler runs, so every tool, present and
future, gets the same checks from its :class:`~memci.messages.ToolSpec` alone:

- the arguments are a JSON object; ``None`` and ``""`` mean ``{}``; anything else (``5``,
  a list, JSON text of an array) is refused;
- the value is JSON memci can keep (:mod:`memci._jsonvalues`): nested at most 64 levels,
  no lone surrogate (also not as a ``\ud800`` escape), finite numbers, integers within
  SQLite's 64-bit range;
- required arguments are present; ``null`` counts as absent; unknown names are refused
  when the schema says ``additionalProperties: false``;
- each declared argument conforms to its schema: ``type`` (one or a list of ``integer``,
  ``number``, ``string``, ``boolean``, ``array``, ``object``), ``enum``, ``minimum``
  (refused below), ``maximum`` (capped: the tools' maxima are counts, "at most this
  many"), ``minItems``, ``maxItems`` and the ``items`` of an array. Text length limits are
  the tools' own (they can be configured), so ``maxLength`` is left to them.

Integers are read the way models write them: ``7``, ``7.0`` or ``"7"`` — ASCII digits
only, at most 18 of them (``"²"``, ``"٣"`` and ``"9" * 5000`` are refused, never passed
to ``int()``).

A refusal raises :class:`ToolArgumentError`, whose message names the argument and what to
send; :func:`memci.tools._registry.run_tool` answers it as ``error: …``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, cast

from memci import _jsonvalues
from memci._lazy import LazyPattern

__all__ = ["MAX_INT", "ToolArgumentError", "check_arguments"]

MAX_INT = 2**63 - 1  # SQLite's integers are 64-bit
_QUOTED_INT = LazyPattern(r"[+-]?[0-9]{1,18}", re.ASCII)
_JSON_TYPES = {"integer": "a whole number", "number": "a number", "string": "text",
               "boolean": "true or false", "array": "a list", "object": "an object"}


class ToolArgumentError(Exception):
    """Bad arguments for one of memci's tools; answered as ``error: …``, never raised on."""


def check_arguments(schema: Mapping[str, Any], arguments: object) -> dict[str, Any]:
    """The arguments as a plain dict conforming to ``schema``; or raise ToolArgumentError."""
    args = _as_object(arguments)
    properties = cast(Mapping[str, Any], schema.get("properties") or {})
    if schema.get("additionalProperties") is False:
        unknown = sorted(set(args) - set(properties))
        if unknown:
            takes = ", ".join(properties) or "no arguments"
            raise ToolArgumentError(
                f"unknown argument(s) {', '.join(map(_brief, unknown))}; this tool takes "
                f"{takes}")
    missing = [name for name in schema.get("required") or () if args.get(name) is None]
    if missing:
        raise ToolArgumentError(f"missing required argument(s) {', '.join(missing)}")
    out: dict[str, Any] = {}
    for name, value in args.items():
        if value is None:
            continue  # null: the argument's default
        rule = properties.get(name)
        out[name] = _conform(value, rule, repr(name)) if isinstance(rule, Mapping) else value
    return out


def _as_object(arguments: object) -> dict[str, Any]:
    """The arguments as a checked JSON object (a fresh dict; nothing of the caller's)."""
    if arguments is None or (isinstance(arguments, str | bytes | bytearray)
                             and not arguments):
        return {}
    try:
        if isinstance(arguments, bytes | bytearray):
            arguments = bytes(arguments).decode("utf-8")
        if isinstance(arguments, str):
            value = _jsonvalues.loads(arguments, max_int=MAX_INT)
        elif isinstance(arguments, Mapping):
            value = _jsonvalues.loads(_jsonvalues.dumps(_plain(arguments)), max_int=MAX_INT)
        else:
            raise ToolArgumentError(
                f"arguments must be a JSON object, not {type(arguments).__name__}")
    except UnicodeDecodeError as exc:
        raise ToolArgumentError(f"arguments are not UTF-8 text: {exc}") from exc
    except _jsonvalues.JSONValueError as exc:
        raise ToolArgumentError(f"arguments: {exc}") from exc
    if not isinstance(value, dict):
        raise ToolArgumentError(
            f"arguments must be a JSON object, not {_JSON_NAMES.get(type(value), 'that')}")
    return cast(dict[str, Any], value)


def _plain(arguments: Mapping[Any, Any]) -> dict[Any, Any]:
    try:
        return dict(arguments)
    except Exception as exc:  # a caller's Mapping whose iteration or lookup raises
        raise ToolArgumentError(f"arguments cannot be read as an object: {exc}") from exc


_JSON_NAMES: dict[type, str] = {list: "an array", str: "a string", int: "a number",
                                float: "a number", bool: "true or false"}


def _conform(value: Any, rule: Mapping[str, Any], where: str) -> Any:
    kinds = rule.get("type")
    names = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if names:
        for kind in names:
            read = _read_as(kind, value)
            if read is not _NO:
                value = read
                break
        else:
            wanted = " or ".join(_JSON_TYPES.get(k, str(k)) for k in names)
            hint = f" ({rule['description']})" if isinstance(rule.get("description"),
                                                             str) else ""
            raise ToolArgumentError(f"{where} must be {wanted}{hint}, not {_brief(value)}")
    enum = rule.get("enum")
    if isinstance(enum, list) and value not in enum:
        raise ToolArgumentError(
            f"{where} must be one of {', '.join(map(_brief, enum))}, not {_brief(value)}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = _in_range(value, rule, where)
    if isinstance(value, list):
        value = _conform_items(value, rule, where)
    return value


def _in_range(value: int | float, rule: Mapping[str, Any], where: str) -> int | float:
    low, high = rule.get("minimum"), rule.get("maximum")
    if isinstance(low, int | float) and value < low:
        raise ToolArgumentError(f"{where} must be at least {low}, not {_brief(value)}")
    if isinstance(high, int | float) and value > high:
        return type(value)(high)  # a count over the maximum: the most the tool gives
    return value


def _conform_items(items: list[Any], rule: Mapping[str, Any], where: str) -> list[Any]:
    fewest, most = rule.get("minItems"), rule.get("maxItems")
    if isinstance(fewest, int) and len(items) < fewest:
        raise ToolArgumentError(f"{where} needs at least {fewest} item(s)")
    if isinstance(most, int) and len(items) > most:
        raise ToolArgumentError(f"{where} takes at most {most} item(s), not {len(items)}")
    each = rule.get("items")
    if not isinstance(each, Mapping):
        return items
    return [_conform(item, each, f"{where}[{i}]") for i, item in enumerate(items)]


_NO = object()  # a value that does not read as the kind asked for


def _read_as(kind: str, value: Any) -> Any:
    """``value`` read as JSON Schema type ``kind`` (a quoted integer is an integer)."""
    if isinstance(value, bool):
        return value if kind == "boolean" else _NO
    if kind == "integer":
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _QUOTED_INT.fullmatch(value.strip()):
            return int(value.strip())  # models often quote numbers: "5"
        return _NO
    if kind == "number":
        return value if isinstance(value, int | float) else _NO
    expected = {"string": str, "array": list, "object": dict}.get(kind)
    return value if expected is not None and isinstance(value, expected) else _NO


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."
