"""The working state as tools a model can call: pin_*, plan_*, notebook_add.

:data:`WORKSPACE_TOOL_SPECS` are their schemas; :data:`WORKING_STATE_SPEC` is the one
schema a model is offered for all of them (``working_state``, its ``action`` one of their
names, its arguments theirs: one schema costs a quarter of the nine).
:func:`call_workspace_tool` runs one on a :class:`WorkState`. A refusal (a passed limit, a
missing source, an unknown id, bad arguments) comes back as a :class:`ToolResult` with
``ok=False`` and a text starting with ``error:`` that tells the model what to do
instead; it is never raised.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, cast

from memci import _jsonvalues
from memci._lazy import LazyPattern
from memci._records import NamedTuple
from memci.errors import InvalidInputError
from memci.messages import ToolSpec
from memci.workspace._state import WorkState
from memci.workspace._text import format_time

__all__ = ["WORKING_STATE_SPEC", "WORKSPACE_TOOL_SPECS", "ToolResult", "call_workspace_tool",
           "parse_tool_arguments"]


class ToolResult(NamedTuple):
    """What one of memci's tools answers: ``ok`` and the text the model reads.

    A refusal has ``ok=False`` and a text starting with ``error:``; ``str()`` is the text.
    """

    ok: bool
    text: str

    def __str__(self) -> str:
        return self.text

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """Make a refusal: ``error: <message>``."""
        return cls(False, f"error: {message}")


# A quoted whole number: ASCII digits only ("²" or "٣" are not numbers to int()).
_INT = LazyPattern(r"-?[0-9]{1,18}", re.ASCII)
_MAX_INT = 2**63 - 1  # SQLite's integers are 64-bit


def parse_tool_arguments(
    arguments: object, allowed: Mapping[str, type | tuple[type, ...]],
    required: tuple[str, ...] = (),
) -> dict[str, Any] | ToolResult:
    """Check the arguments: a dict against ``allowed`` names and types, or a refusal.

    The arguments must be JSON memci can keep (:mod:`memci._jsonvalues`: nested at most 64
    levels, valid Unicode, finite numbers, integers within 64 bits).
    """
    try:
        if arguments is None or (isinstance(arguments, str) and not arguments):
            args: Any = {}
        elif isinstance(arguments, str):
            args = _jsonvalues.loads(arguments, max_int=_MAX_INT)
        elif isinstance(arguments, Mapping):
            args = _jsonvalues.loads(_jsonvalues.dumps(dict(cast(Mapping[str, Any], arguments))),
                                     max_int=_MAX_INT)
        else:
            return ToolResult.error(
                f"arguments must be a JSON object, not {type(arguments).__name__}")
    except _jsonvalues.JSONValueError as exc:
        return ToolResult.error(f"arguments: {exc}")
    if not isinstance(args, Mapping):
        return ToolResult.error("arguments must be a JSON object")
    unknown = sorted(set(args) - set(allowed))
    if unknown:
        return ToolResult.error(f"unknown argument(s) {', '.join(unknown)}; this tool takes "
                                f"{', '.join(allowed) or 'no arguments'}")
    missing = [name for name in required if args.get(name) is None]
    if missing:
        return ToolResult.error(f"missing required argument(s) {', '.join(missing)}")
    out: dict[str, Any] = {}
    for name, value in args.items():
        if value is None:
            continue
        kinds = allowed[name]
        accepted = kinds if isinstance(kinds, tuple) else (kinds,)
        if int in accepted and str not in accepted and isinstance(value, str) and _INT.fullmatch(
                value.strip()):
            value = int(value)  # models often quote numbers: "5"
        if isinstance(value, bool) and bool not in accepted:
            return ToolResult.error(f"argument {name} has the wrong type (got true/false)")
        if not isinstance(value, kinds):
            expected = kinds.__name__ if isinstance(kinds, type) else "/".join(
                k.__name__ for k in kinds)
            return ToolResult.error(f"argument {name} must be {expected}, not "
                                    f"{type(value).__name__}")
        out[name] = value
    return out


def _ttl_text(pin: Any) -> str:
    parts = []
    if pin.expires_at is not None:
        parts.append(format_time(pin.expires_at))
    if pin.expires_round is not None:
        parts.append(f"round {pin.expires_round}")
    return " or ".join(parts)


def _pin_add(state: WorkState, a: dict[str, Any]) -> str:
    pin = state.pin_add(a["type"], a["title"], a["summary"], a["source"],
                        artifact_ref=a.get("artifact_ref"), ttl=a.get("ttl"))
    return f"pinned as pin {pin.id} (expires {_ttl_text(pin)})"


def _pin_remove(state: WorkState, a: dict[str, Any]) -> str:
    ids = [int(i) if isinstance(i, str) and _INT.fullmatch(i.strip()) else i for i in a["ids"]]
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise InvalidInputError("ids must be a list of pin ids (whole numbers)")
    removed = state.pin_remove(ids)
    return "removed pin(s) " + ", ".join(str(p.id) for p in removed)


def _pin_update(state: WorkState, a: dict[str, Any]) -> str:
    pin_id = a.pop("id")
    pin = state.pin_update(pin_id, **a)
    return f"updated pin {pin.id} (expires {_ttl_text(pin)})"


def _pin_list(state: WorkState, a: dict[str, Any]) -> str:
    return state.render_pins() or "no pins"


def _plan_add(state: WorkState, a: dict[str, Any]) -> str:
    item = state.plan_add(a["text"])
    return f"added plan item {item.id}"


def _plan_done(state: WorkState, a: dict[str, Any]) -> str:
    item = state.plan_done(a["id"], a.get("done", True))
    return f"plan item {item.id} marked {'done' if item.done else 'not done'}"


def _plan_remove(state: WorkState, a: dict[str, Any]) -> str:
    item = state.plan_remove(a["id"])
    return f"removed plan item {item.id}"


def _plan_list(state: WorkState, a: dict[str, Any]) -> str:
    return state.render_plan() or "the plan is empty"


def _notebook_add(state: WorkState, a: dict[str, Any]) -> str:
    entry = state.notebook_add(a["summary"], source=a.get("source"),
                               artifact_ref=a.get("artifact_ref"))
    return f"noted as note {entry.id}"


_TTL_TYPES = (str, int, float, dict)
_TOOLS: dict[str, tuple[Callable[[WorkState, dict[str, Any]], str],
                        dict[str, type | tuple[type, ...]], tuple[str, ...]]] = {
    "pin_add": (_pin_add, {"type": str, "title": str, "summary": str, "source": str,
                           "artifact_ref": str, "ttl": _TTL_TYPES},
                ("type", "title", "summary", "source")),
    "pin_remove": (_pin_remove, {"ids": list}, ("ids",)),
    "pin_update": (_pin_update, {"id": int, "type": str, "title": str, "summary": str,
                                 "source": str, "artifact_ref": str, "ttl": _TTL_TYPES},
                   ("id",)),
    "pin_list": (_pin_list, {}, ()),
    "plan_add": (_plan_add, {"text": str}, ("text",)),
    "plan_done": (_plan_done, {"id": int, "done": bool}, ("id",)),
    "plan_remove": (_plan_remove, {"id": int}, ("id",)),
    "plan_list": (_plan_list, {}, ()),
    "notebook_add": (_notebook_add, {"summary": str, "source": str, "artifact_ref": str},
                     ("summary",)),
}


def call_workspace_tool(
    state: WorkState, name: str, arguments: Mapping[str, Any] | str | None
) -> ToolResult:
    """Run the workspace tool ``name``; refusals come back as ``error:`` results."""
    entry = _TOOLS.get(name)
    if entry is None:
        return ToolResult.error(f"unknown tool {name!r}; workspace tools: {', '.join(_TOOLS)}")
    run, allowed, required = entry
    args = parse_tool_arguments(arguments, allowed, required)
    if isinstance(args, ToolResult):
        return args
    try:
        return ToolResult(True, run(state, args))
    except InvalidInputError as exc:
        return ToolResult.error(str(exc))


_SOURCE_DOC = ("evidence for it: chat:<message id>, tool:<call id>, file:<path>#L<line> or "
               "artifact:<id>")
_TTL_DOC = "how long to keep it: '7d', '12h', '90min' or '30r' (rounds); default 7d"


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


WORKSPACE_TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("pin_add", "Pin an important fact (constraint, path, command, code interface, "
             "conclusion) so it stays in context across rounds. Short, with a source; at most "
             "20 pins; long text goes to an artifact and is referenced by artifact_ref.",
             _schema({
                 "type": {"type": "string", "description": "constraint, path, command, code, "
                                                           "conclusion, fact …"},
                 "title": {"type": "string", "description": "a few words"},
                 "summary": {"type": "string", "maxLength": 600,
                             "description": "the fact itself, at most 600 characters"},
                 "source": {"type": "string", "description": _SOURCE_DOC},
                 "artifact_ref": {"type": "string",
                                  "description": "artifact:<id> holding the full text"},
                 "ttl": {"type": "string", "description": _TTL_DOC},
             }, ("type", "title", "summary", "source"))),
    ToolSpec("pin_remove", "Unpin pins by id.",
             _schema({"ids": {"type": "array", "items": {"type": "integer"}, "minItems": 1}},
                     ("ids",))),
    ToolSpec("pin_update", "Change a pin's fields; a new ttl renews it.",
             _schema({
                 "id": {"type": "integer"}, "type": {"type": "string"},
                 "title": {"type": "string"},
                 "summary": {"type": "string", "maxLength": 600},
                 "source": {"type": "string", "description": _SOURCE_DOC},
                 "artifact_ref": {"type": "string"},
                 "ttl": {"type": "string", "description": _TTL_DOC},
             }, ("id",))),
    ToolSpec("pin_list", "List the pins with their ids, sources and expiry.", _schema({})),
    ToolSpec("plan_add", "Add a short TODO item to the plan.",
             _schema({"text": {"type": "string", "maxLength": 300}}, ("text",))),
    ToolSpec("plan_done", "Mark a plan item done (or not done with done=false).",
             _schema({"id": {"type": "integer"}, "done": {"type": "boolean"}}, ("id",))),
    ToolSpec("plan_remove", "Remove a plan item.",
             _schema({"id": {"type": "integer"}}, ("id",))),
    ToolSpec("plan_list", "Show the plan.", _schema({})),
    ToolSpec("notebook_add", "Write a short working note: why, what was found, what next. "
             "Old notes are compressed into milestones automatically.",
             _schema({
                 "summary": {"type": "string", "maxLength": 400},
                 "source": {"type": "string", "description": "where it comes from (optional)"},
                 "artifact_ref": {"type": "string",
                                  "description": "artifact:<id> with the details (optional)"},
             }, ("summary",))),
)


WORKING_STATE_SPEC = ToolSpec(
    "working_state",
    "Your pins (facts kept in context, at most 20), plan (TODO items) and notebook. "
    "Arguments by action: pin_add type title summary source [artifact_ref ttl]; pin_update "
    "id [fields]; pin_remove ids; plan_add text; plan_done id [done]; plan_remove id; "
    "notebook_add summary [source artifact_ref]; pin_list; plan_list. source: "
    "chat:<message id>, tool:<call id>, file:<path>#L<line> or artifact:<id>. ttl: 7d "
    "(default), 12h, 90min or 30r (rounds).",
    _schema({
        "action": {"type": "string", "enum": [s.name for s in WORKSPACE_TOOL_SPECS]},
        **{name: {"type": "string"} for name in (
            "type", "title", "summary", "source", "artifact_ref", "ttl", "text")},
        "id": {"type": "integer"}, "ids": {"type": "array", "items": {"type": "integer"}},
        "done": {"type": "boolean"},
    }, ("action",)))
"""The working-state tools as one: ``action`` names the tool, the rest are its arguments."""
