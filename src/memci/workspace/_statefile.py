"""``context_state.json``: the versioned export and import of one session's working state.

Version 1 holds::

    {
      "format": "memci.context_state", "version": 1,
      "session": "chat-1", "exported_at": "2025-06-01T12:00:00+00:00",
      "round": 12, "next_ids": {"pin": 4, "plan": 3, "note": 9, "memo": 7},
      "limits": {... WorkspaceLimits ...},
      "pins": [{"id": 1, "type": "constraint", "title": "...", "summary": "...",
                "source": "tool:call_12", "artifact_ref": null, "ttl": {"seconds": 604800},
                "created_at": "...", "updated_at": "...", "created_round": 0,
                "expires_at": "...", "expires_round": null, "actor": "main"}],
      "plan": [{"id": 1, "text": "...", "done": false, "source": "...", ...}],
      "notebook": [{"id": 3, "summary": "...", "source": "tool:12", "milestone": false, ...}],
      "fastmemo": {"user": [{"id": 1, "text": "...", "source": "..."}], "pool": [...]}
    }

An export holds exactly what is stored, so export → import → export gives the same object
(but for ``session`` and ``exported_at``). Import is lenient where a hand-written file
would be short (seed 004's sketch: a pin of id, type, summary, source; a note of ts,
summary, source): missing optional fields get defaults; but an unknown key, a wrong type,
a bad source, a passed limit or an unknown version is refused with
:class:`InvalidStateFileError` naming the place (``pins[2].summary: …``). The keys seed
004 gives for files the caller owns (``base_prompt_ref``, ``tool_contract_ref``,
``fastmemo_ref``, ``fastmemo_dynamic_pool_ref``, ``recent_window_policy``) are kept as
they are and exported back.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memci._dataclasses import dataclass
from memci.errors import ConfigError, InvalidStateFileError, WorkspaceError
from memci.workspace._items import check_artifact_ref, check_line, check_pin_source, check_source
from memci.workspace._limits import WorkspaceLimits, parse_ttl

__all__ = [
    "STATE_FORMAT",
    "STATE_VERSION",
    "ParsedState",
    "build_state",
    "parse_state",
    "read_state_file",
    "write_state_file",
]

STATE_FORMAT = "memci.context_state"
STATE_VERSION = 1
PASSTHROUGH_KEYS = frozenset({
    "base_prompt_ref", "tool_contract_ref", "fastmemo_ref", "fastmemo_dynamic_pool_ref",
    "recent_window_policy",
})
_TOP_KEYS = frozenset({
    "format", "version", "session", "exported_at", "round", "next_ids", "limits", "pins",
    "plan", "notebook", "fastmemo",
}) | PASSTHROUGH_KEYS
_KINDS = ("pin", "plan", "note", "memo")
_PIN_KEYS = frozenset({
    "id", "type", "title", "summary", "source", "artifact_ref", "ttl", "created_at",
    "updated_at", "created_round", "expires_at", "expires_round", "actor",
})
_PLAN_KEYS = frozenset({"id", "text", "done", "source", "created_at", "updated_at", "actor"})
_NOTE_KEYS = frozenset({
    "id", "summary", "source", "artifact_ref", "milestone", "covers", "pos", "created_at",
    "ts", "actor",
})
_MEMO_KEYS = frozenset({"id", "section", "text", "source", "covers", "pos", "created_at",
                        "actor"})
_TYPE_MAX = 40

Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ParsedState:
    """A checked ``context_state.json``: what an import will store."""

    limits: WorkspaceLimits
    round: int
    next_ids: dict[str, int]
    items: dict[str, list[Json]]
    refs: dict[str, Any]


def build_state(
    *, session: str, exported_at: datetime, limits: WorkspaceLimits, round: int,
    next_ids: Mapping[str, int], items: Mapping[str, list[Json]], refs: Mapping[str, Any],
) -> dict[str, Any]:
    """Return the ``context_state.json`` object of a working state (see the module docstring)."""
    fastmemo: dict[str, list[Json]] = {s: [] for s in limits.fastmemo_sections}
    for entry in items["memo"]:
        fastmemo.setdefault(entry["section"], []).append(
            {k: v for k, v in entry.items() if k != "section"})
    return {
        "format": STATE_FORMAT, "version": STATE_VERSION, "session": session,
        "exported_at": exported_at.astimezone(UTC).isoformat(), "round": round,
        "next_ids": dict(next_ids), "limits": limits.to_json(),
        "pins": list(items["pin"]), "plan": list(items["plan"]),
        "notebook": list(items["note"]), "fastmemo": fastmemo,
        **dict(refs),
    }


def read_state_file(path: str | Path) -> Any:
    """Read the JSON of a ``context_state.json`` file; unreadable or not JSON is refused."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidStateFileError(f"cannot read state file {path}: {exc}") from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidStateFileError(f"state file {path} is not valid JSON: {exc}") from exc


def write_state_file(path: str | Path, state: Mapping[str, Any]) -> None:
    """Write ``state`` to ``path`` as indented JSON, atomically (temp file, fsync, rename)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle, ensure_ascii=False, indent=2, sort_keys=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Bad(Exception):
    """A problem at a place in the file; turned into InvalidStateFileError at the top."""


def parse_state(data: Any, *, now: datetime, actor: str = "import") -> ParsedState:
    """Check a ``context_state.json`` object and normalize it for import.

    Raises :class:`InvalidStateFileError` (nothing is imported) naming the first problem.
    """
    try:
        return _parse(data, now=now.astimezone(UTC), actor=actor)
    except _Bad as exc:
        raise InvalidStateFileError(f"context_state.json rejected, nothing imported: {exc}"
                                    ) from None


def _parse(data: Any, *, now: datetime, actor: str) -> ParsedState:
    if not isinstance(data, Mapping):
        raise _Bad(f"the file must hold a JSON object, not {type(data).__name__}")
    if "version" not in data:
        raise _Bad("no 'version' key: this is not a context_state.json")
    version = data["version"]
    if isinstance(version, bool) or version != STATE_VERSION:
        raise _Bad(f"version {version!r} is not supported (this memci reads version "
                   f"{STATE_VERSION})")
    if data.get("format", STATE_FORMAT) != STATE_FORMAT:
        raise _Bad(f"format {data['format']!r} is not {STATE_FORMAT!r}")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise _Bad(f"unknown key(s) {', '.join(map(repr, unknown))}")
    try:
        limits = WorkspaceLimits.from_json(_mapping(data.get("limits", {}), "limits"))
    except ConfigError as exc:
        raise _Bad(f"limits: {exc}") from None
    round_ = _whole(data.get("round", 0), "round", minimum=0)

    pins = [_pin(p, f"pins[{i}]", limits, now, actor)
            for i, p in enumerate(_list(data.get("pins", []), "pins"))]
    plan = [_plan(p, f"plan[{i}]", limits, now, actor)
            for i, p in enumerate(_list(data.get("plan", []), "plan"))]
    notes = _notes(_list(data.get("notebook", []), "notebook"), limits, now, actor)
    memos = _memos(_mapping(data.get("fastmemo", {}), "fastmemo"), limits, now, actor)
    items = {"pin": pins, "plan": plan, "note": notes, "memo": memos}
    for kind, rows in items.items():
        ids = [r["id"] for r in rows]
        if len(set(ids)) != len(ids):
            raise _Bad(f"{_label(kind)}: ids must be unique, got {sorted(ids)}")
    _check_counts(items, limits)

    given = _mapping(data.get("next_ids", {}), "next_ids")
    if set(given) - set(_KINDS):
        raise _Bad(f"next_ids: keys must be among {', '.join(_KINDS)}")
    next_ids = {
        kind: max(_whole(given.get(kind, 1), f"next_ids.{kind}", minimum=1),
                  max((r["id"] for r in items[kind]), default=0) + 1)
        for kind in _KINDS
    }
    refs = {k: data[k] for k in sorted(PASSTHROUGH_KEYS) if k in data}
    return ParsedState(limits=limits, round=round_, next_ids=next_ids, items=items, refs=refs)


def _label(kind: str) -> str:
    return {"pin": "pins", "plan": "plan", "note": "notebook", "memo": "fastmemo"}[kind]


def _check_counts(items: Mapping[str, list[Json]], limits: WorkspaceLimits) -> None:
    if len(items["pin"]) > limits.pins_max:
        raise _Bad(f"pins: {len(items['pin'])} pins, over the limit of {limits.pins_max}")
    if len(items["plan"]) > limits.plan_max:
        raise _Bad(f"plan: {len(items['plan'])} items, over the limit of {limits.plan_max}")
    if len(items["note"]) > limits.notebook_max + 1:
        raise _Bad(f"notebook: {len(items['note'])} entries, over the limit of "
                   f"{limits.notebook_max} (compress the oldest into a milestone first)")
    per_section: dict[str, int] = {}
    for entry in items["memo"]:
        per_section[entry["section"]] = per_section.get(entry["section"], 0) + 1
    for section, count in per_section.items():
        if count > limits.fastmemo_section_max:
            raise _Bad(f"fastmemo.{section}: {count} entries, over the limit of "
                       f"{limits.fastmemo_section_max}")


# -- field checks ------------------------------------------------------------------------


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _Bad(f"{where}: must be an object, not {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Bad(f"{where}: must be a list, not {type(value).__name__}")
    return value


def _whole(value: Any, where: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _Bad(f"{where}: must be a whole number, {minimum} or more, not {value!r}")
    return value


def _when(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _Bad(f"{where}: must be an ISO 8601 date-time, not {value!r}")
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise _Bad(f"{where}: {value!r} is not an ISO 8601 date-time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def _record(raw: Any, where: str, allowed: frozenset[str], required: set[str]) -> Mapping[str, Any]:
    record = _mapping(raw, where)
    unknown = sorted(set(record) - allowed)
    if unknown:
        raise _Bad(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")
    missing = sorted(required - set(record))
    if missing:
        raise _Bad(f"{where}: missing {', '.join(map(repr, missing))}")
    return record


def _checked(where: str, check: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return check(*args, **kwargs)
    except WorkspaceError as exc:
        raise _Bad(f"{where}: {exc}") from None


def _pin(raw: Any, where: str, limits: WorkspaceLimits, now: datetime, actor: str) -> Json:
    r = _record(raw, where, _PIN_KEYS, {"id", "type", "title", "summary", "source"})
    ttl = _checked(f"{where}.ttl", parse_ttl, r.get("ttl", limits.pin_default_ttl))
    created = _when(r.get("created_at", now.isoformat()), f"{where}.created_at")
    created_round = _whole(r.get("created_round", 0), f"{where}.created_round", minimum=0)
    if "expires_at" in r:
        expires_at = None if r["expires_at"] is None else _when(r["expires_at"],
                                                                  f"{where}.expires_at")
    else:
        expires_at = None if ttl.seconds is None else (
            datetime.fromisoformat(created) + timedelta(seconds=ttl.seconds)).isoformat()
    if "expires_round" in r:
        expires_round = None if r["expires_round"] is None else _whole(
            r["expires_round"], f"{where}.expires_round", minimum=0)
    else:
        expires_round = None if ttl.rounds is None else created_round + ttl.rounds
    return {
        "id": _whole(r["id"], f"{where}.id", minimum=1),
        "type": _checked(f"{where}.type", check_line, r["type"], "pin type", _TYPE_MAX),
        "title": _checked(f"{where}.title", check_line, r["title"], "pin title",
                          limits.pin_title_max),
        "summary": _checked(f"{where}.summary", check_line, r["summary"], "pin summary",
                            limits.pin_summary_max),
        "source": _checked(f"{where}.source", check_pin_source, r["source"]),
        "artifact_ref": _checked(f"{where}.artifact_ref", check_artifact_ref,
                                 r.get("artifact_ref")),
        "ttl": ttl.to_json(), "created_at": created,
        "updated_at": _when(r.get("updated_at", created), f"{where}.updated_at"),
        "created_round": created_round, "expires_at": expires_at,
        "expires_round": expires_round, "actor": _actor(r, where, actor),
    }


def _actor(r: Mapping[str, Any], where: str, default: str) -> str:
    return str(_checked(f"{where}.actor", check_line, r.get("actor", default), "actor", 64))


def _plan(raw: Any, where: str, limits: WorkspaceLimits, now: datetime, actor: str) -> Json:
    r = _record(raw, where, _PLAN_KEYS, {"id", "text"})
    done = r.get("done", False)
    if not isinstance(done, bool):
        raise _Bad(f"{where}.done: must be true or false, not {done!r}")
    created = _when(r.get("created_at", now.isoformat()), f"{where}.created_at")
    return {
        "id": _whole(r["id"], f"{where}.id", minimum=1),
        "text": _checked(f"{where}.text", check_line, r["text"], "plan item",
                         limits.plan_text_max),
        "done": done,
        "source": _checked(f"{where}.source", check_source, r.get("source"), actor),
        "created_at": created,
        "updated_at": _when(r.get("updated_at", created), f"{where}.updated_at"),
        "actor": _actor(r, where, actor),
    }


def _covers(value: Any, where: str) -> list[int]:
    return sorted(_whole(v, where, minimum=1) for v in _list(value, where))


def _notes(raw: list[Any], limits: WorkspaceLimits, now: datetime, actor: str) -> list[Json]:
    records = [_record(x, f"notebook[{i}]", _NOTE_KEYS, {"summary"}) for i, x in enumerate(raw)]
    given = [_whole(r["id"], f"notebook[{i}].id", minimum=1)
             for i, r in enumerate(records) if "id" in r]
    next_id = max(given, default=0) + 1
    out = []
    for i, r in enumerate(records):
        where = f"notebook[{i}]"
        if "id" in r:
            note_id = int(r["id"])
        else:
            note_id, next_id = next_id, next_id + 1
        milestone = r.get("milestone", False)
        if not isinstance(milestone, bool):
            raise _Bad(f"{where}.milestone: must be true or false, not {milestone!r}")
        if "ts" in r and "created_at" in r:
            raise _Bad(f"{where}: give created_at or ts, not both")
        most = limits.milestone_max if milestone else limits.notebook_entry_max
        out.append({
            "id": note_id,
            "summary": _checked(f"{where}.summary", check_line, r["summary"], "notebook entry",
                                most),
            "source": _checked(f"{where}.source", check_source, r.get("source"), actor),
            "artifact_ref": _checked(f"{where}.artifact_ref", check_artifact_ref,
                                     r.get("artifact_ref")),
            "milestone": milestone,
            "covers": _covers(r.get("covers", []), f"{where}.covers"),
            "pos": _whole(r.get("pos", note_id), f"{where}.pos", minimum=1),
            "created_at": _when(r.get("created_at", r.get("ts", now.isoformat())),
                                f"{where}.created_at"),
            "actor": _actor(r, where, actor),
        })
    return sorted(out, key=lambda d: (d["pos"], d["id"]))


def _memos(
    raw: Mapping[str, Any], limits: WorkspaceLimits, now: datetime, actor: str
) -> list[Json]:
    unknown = sorted(set(raw) - set(limits.fastmemo_sections))
    if unknown:
        raise _Bad(f"fastmemo: unknown section(s) {', '.join(map(repr, unknown))}; the "
                   f"sections are {', '.join(limits.fastmemo_sections)}")
    records = []
    for section in limits.fastmemo_sections:
        entries = _list(raw.get(section, []), f"fastmemo.{section}")
        for i, x in enumerate(entries):
            where = f"fastmemo.{section}[{i}]"
            r = _record(x, where, _MEMO_KEYS, {"text"})
            if r.get("section", section) != section:
                raise _Bad(f"{where}.section: {r['section']!r} but listed under {section!r}")
            records.append((where, section, r))
    given = [_whole(r["id"], f"{w}.id", minimum=1) for w, _, r in records if "id" in r]
    next_id = max(given, default=0) + 1
    out = []
    for where, section, r in records:
        if "id" in r:
            memo_id = int(r["id"])
        else:
            memo_id, next_id = next_id, next_id + 1
        out.append({
            "id": memo_id, "section": section,
            "text": _checked(f"{where}.text", check_line, r["text"],
                             f"fastmemo entry ({section})", limits.fastmemo_entry_max),
            "source": _checked(f"{where}.source", check_source, r.get("source"), actor),
            "covers": _covers(r.get("covers", []), f"{where}.covers"),
            "pos": _whole(r.get("pos", memo_id), f"{where}.pos", minimum=1),
            "created_at": _when(r.get("created_at", now.isoformat()), f"{where}.created_at"),
            "actor": _actor(r, where, actor),
        })
    return out
