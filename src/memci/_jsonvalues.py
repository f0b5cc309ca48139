r"""JSON values that come from outside: message metadata, tool inputs and tool arguments.

What memci stores or acts on must be JSON it can always write, read back and send on, so
a value taken in is checked once, before anything is written, and refused with a message
(never a ``RecursionError``, ``UnicodeEncodeError`` or ``OverflowError`` later):

- it is nested at most :data:`MAX_DEPTH` containers deep (objects and arrays);
- its text is valid Unicode (the store and the search index encode it as UTF-8): no lone
  surrogate, also not one written in JSON text as a ``\u`` escape (``"\ud800"``);
- its numbers are finite, and integers have at most 4300 digits (Python's limit for
  turning them into text) or, where the caller asks, lie within ``max_int``;
- it holds only what JSON holds: objects, arrays, strings, numbers, true, false, null
  (a tuple is written as an array; object keys are written as strings, as ``json`` does).

:func:`dumps` turns a Python value into checked JSON text, :func:`loads` reads checked JSON
text; :func:`without_lone_surrogates` repairs JSON text stored before these checks. Both
checkers raise :class:`JSONValueError`, whose message names what is wrong ("nested more
than 64 levels deep; flatten it"); callers put what the value is in front
(``f"{what}: {exc}"``) and raise their own typed error.
"""

from __future__ import annotations

import json
import math
from typing import Any

from memci._lazy import compile_pattern

__all__ = ["MAX_DEPTH", "JSONTextError", "JSONValueError", "dumps", "loads",
           "without_lone_surrogates"]

MAX_DEPTH = 64

# A JSON escape of a UTF-16 surrogate: only then can parsed text hold one the raw text had not.
_SURROGATE_ESCAPE = compile_pattern(r"\\u[dD][89a-fA-F]")


class JSONValueError(ValueError):
    """A value that is not JSON memci can keep; the message says what and where."""


class JSONTextError(JSONValueError):
    """A value whose text is not valid Unicode (a lone surrogate)."""


def dumps(value: Any, *, max_depth: int = MAX_DEPTH) -> str:
    """``value`` as JSON text (``json.dumps`` with ``ensure_ascii=False``), checked; or raise."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except RecursionError as exc:
        raise JSONValueError(_too_deep(max_depth)) from exc
    except (TypeError, ValueError) as exc:
        # TypeError: a value JSON has no form for; ValueError: NaN or infinity, a circular
        # reference, an integer too long to write.
        raise JSONValueError(f"not JSON: {exc}") from exc
    _check_unicode(text)
    # Read back to check depth and numbers on a plain tree (no cycles, no custom types).
    loads(text, max_depth=max_depth)
    return text


def loads(text: str, *, max_depth: int = MAX_DEPTH, max_int: int | None = None) -> Any:
    """The value of JSON text, checked as the module says; or raise.

    ``max_int`` also bounds integers (``-max_int - 1 … max_int``), for values that go
    into SQLite (whose integers are 64-bit) or a ``range``.
    """
    _check_unicode(text)
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError as exc:
        raise JSONValueError(_too_deep(max_depth)) from exc
    except ValueError as exc:
        raise JSONValueError(f"not valid JSON: {exc}") from exc
    _check_tree(value, max_depth, max_int)
    if _SURROGATE_ESCAPE.search(text):
        _check_unicode(json.dumps(value, ensure_ascii=False))
    return value


def without_lone_surrogates(text: str) -> str:
    r"""JSON text whose ``\u`` escapes of lone surrogates are replaced by U+FFFD.

    For what an older memci stored before it refused them; other text comes back as is.
    """
    if not _SURROGATE_ESCAPE.search(text):
        return text
    try:
        value = json.loads(text)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        repaired = json.dumps(value, ensure_ascii=False)
        return repaired.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    except (ValueError, RecursionError):
        pass  # not JSON at all: nothing decodes to a surrogate
    return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _too_deep(max_depth: int) -> str:
    return f"nested more than {max_depth} levels deep; flatten it"


def _check_unicode(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise JSONTextError(
            f"text that is not valid Unicode (a lone surrogate near character "
            f"{exc.start}); decode the source text as UTF-8"
        ) from exc


def _check_tree(value: Any, max_depth: int, max_int: int | None) -> None:
    """Depth and numbers of a tree read from JSON text (iterative: no recursion limit)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                raise JSONValueError(_too_deep(max_depth))
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children
                         if isinstance(child, dict | list | int | float))
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise JSONValueError("a number that is not finite; write it as a string")
        elif (isinstance(item, int) and not isinstance(item, bool) and max_int is not None
              and not -max_int - 1 <= item <= max_int):
            raise JSONValueError(f"the integer {_short(item)}, out of range "
                                 f"(at most {max_int:,})")


def _short(number: int) -> str:
    text = str(number)
    return text if len(text) <= 24 else f"{text[:10]}…({len(text)} digits)"
