"""The working state of one session: pins, plan, notebook and fastmemo, with an audit log.

Invariants:

- the state changes only through the methods here (structured actions); each change is
  one transaction that also writes one event to the audit log: who, when, what action,
  which keys, and the JSON value of each key before and after;
- every part is bounded (:class:`WorkspaceLimits`); a write that would pass a hard limit
  (pin count, summary length …) is refused with :class:`WorkspaceLimitError` and changes
  nothing; the notebook and the fastmemo do not refuse when full, they compress;
- every entry has a source (a pin's must cite evidence; otherwise the writer);
- ids are per session and kind, and never reused, so a rolled-back record gets its id back;
- **rollback rule**: an event can be rolled back while every key it touched still holds
  the value the event left there. Otherwise a later event depends on it (a pin updated
  and then removed, an entry folded into a milestone) and the rollback is refused with
  :class:`RollbackConflictError` naming that event: roll back the later one first. A
  rollback is itself an event (``action="rollback"``, ``reverts`` = the event), so it can
  be rolled back too (a redo). A rollback that would pass the pin or plan limit is refused.

Compression (the notebook past ``notebook_max``, the fastmemo when a section reaches
``fastmemo_section_max``) runs right after the write that triggered it, in its own
transaction, calling the compressor outside any transaction so an LLM compressor never
holds the database's write lock.

What is stored goes through the store's working-state part (``store.work``, a
:class:`~memci.store.WorkStore`); a change is one ``store.atomic()`` block. Inside
:meth:`WorkState.writing`, the values and the items (once read) are written when the
block ends, each key once, in the same transaction as its events: several adds and a
compaction in one block write ``next_memo`` once, not at each step. The block's events
are written together too (one statement), when it ends or when one's id is wanted first
(:meth:`WorkState.version`, a method that returns its event).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from memci._dataclasses import dataclass, field
from memci.errors import (
    RollbackConflictError,
    UnknownItemError,
    UnknownSessionError,
    WorkspaceError,
    WorkspaceLimitError,
)
from memci.store import SessionRecord, Store, WorkStore
from memci.workspace._compress import Compressor, extractive_compress
from memci.workspace._items import (
    MemoEntry,
    NoteEntry,
    Pin,
    PlanItem,
    WorkEvent,
    check_artifact_ref,
    check_line,
    check_pin_source,
    check_source,
)
from memci.workspace._limits import (
    ENGLISH_TITLES,
    SectionTitles,
    TTLSpec,
    WorkspaceLimits,
    parse_ttl,
)
from memci.workspace._render import (
    render_context_pool,
    render_fastmemo,
    render_notebook,
    render_pins,
    render_plan,
)
from memci.workspace._text import clip

__all__ = ["WorkState"]

_KINDS = ("pin", "plan", "note", "memo")
_PIN_FIELDS = frozenset({"type", "title", "summary", "source", "artifact_ref", "ttl"})
_TYPE_MAX = 40
_ACTOR_MAX = 64
_RETRIES = 3

Json = dict[str, Any]


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class _Logged:
    """An event a writing block recorded: ``draft`` (id 0) until written, then ``event``."""

    draft: WorkEvent
    event: WorkEvent | None = None


@dataclass(slots=True)
class _Read:
    """What a :meth:`WorkState.reading` block read: items by kind and id, values by name."""

    writing: bool = False  # inside one write transaction (its writes applied here)
    items: dict[str, dict[int, Json]] | None = None  # read with every value (meta whole)
    meta: dict[str, Any] = field(default_factory=dict)
    latest_event: int | None = None  # writing: the id of the last event it wrote
    unsaved_events: list[_Logged] = field(default_factory=list)  # writing: in order
    # writing: what the block changed, written when it ends (None deletes)
    unsaved_meta: dict[str, Any] = field(default_factory=dict)
    unsaved_items: dict[tuple[str, int], Any] = field(default_factory=dict)


def _folded(entries: list[Json]) -> list[int]:
    """The ``covers`` of a fastmemo entry compacting ``entries``: their ids.

    Compactions nest: an entry compacted again is listed by its own id, not by the ids it
    covers (its text carries theirs). Listing every id ever compacted made each
    compaction's entry, and its event's before and after, as long as the whole history:
    the context pool of a 100k-message import wrote 734 MB of events. (A notebook
    milestone still lists every note it stands for: the request shows them.)
    """
    return sorted(int(d["id"]) for d in entries)


def _ordered(rows: list[Json]) -> list[Json]:
    return sorted(rows, key=lambda d: (int(d["pos"]), int(d["id"])))


class WorkState:
    """Pins, plan, notebook and fastmemo of one session, persisted and audited.

    ``limits`` given here win over limits saved with the session (by an import), which
    win over the defaults. ``compress`` folds notebook entries into a milestone and
    ``fastmemo_compress`` (default: ``compress``) compacts fastmemo sections. ``actor``
    is recorded on every event (``"main"``, ``"dog"``, ``"user"`` …; see
    :meth:`with_actor`). ``clock`` gives the current time (UTC).
    """

    def __init__(
        self, store: Store, session: SessionRecord, *,
        limits: WorkspaceLimits | None = None, compress: Compressor = extractive_compress,
        fastmemo_compress: Compressor | None = None, titles: SectionTitles = ENGLISH_TITLES,
        actor: str = "main", clock: Callable[[], datetime] | None = None,
        auto_compact: bool = True,
    ) -> None:
        self.rows: WorkStore = store.work
        if not self.rows.has_session(session.id):
            raise UnknownSessionError(f"session {session.name!r} (id {session.id}) is not "
                                      f"in the store {store.location}")
        self.store = store
        self.session = session
        self.compress = compress
        self.fastmemo_compress = fastmemo_compress or compress
        self.titles = titles
        self.actor = check_line(actor, "actor", _ACTOR_MAX)
        self.auto_compact = auto_compact
        self._explicit_limits = limits
        self._clock = clock or _utcnow
        # While reading() or writing(): what was read (each kind's items by id, values by
        # name), kept up to date by the writes made inside writing().
        self._read: _Read | None = None

    def with_actor(self, actor: str) -> WorkState:
        """Return the same state, recording ``actor`` on the events it writes."""
        other = copy.copy(self)  # the same session, checked once already
        other.actor = check_line(actor, "actor", _ACTOR_MAX)
        return other

    @contextmanager
    def reading(self) -> Iterator[WorkState]:
        """Read each kind of item and each value once inside (for rendering; write nothing)."""
        if self._read is not None:  # inside writing() or reading() already: the same reads
            yield self
            return
        self._read = _Read()
        try:
            yield self
        finally:
            self._read = None

    @contextmanager
    def writing(self) -> Iterator[WorkState]:
        """One transaction in which each kind of item and each value is read once.

        What the writes inside change is applied to what was read, so several adds in a
        row read nothing again: nothing else changes the session's state meanwhile (the
        block holds the session's row before it reads: another server's writer of it
        waits, as SQLite's one writer at a time does). The values, and the items once
        every item was read, are written when the block ends (each key once); the events
        as they are made.
        """
        with self.store.atomic():
            outer = self._read
            if outer is not None and outer.writing:  # the same transaction: the same reads
                yield self
                return
            self.rows.hold(self.session.id)
            self._read = read = _Read(writing=True)
            try:
                yield self
                self._save(read)
            finally:
                # A reading() around this block read before these writes: read again.
                self._read = None if outer is None else _Read()

    def _save(self, read: _Read) -> None:
        """Write what a writing block changed: each value once, the items in one batch."""
        for name, value in read.unsaved_meta.items():
            self.rows.put_meta(self.session.id, name, value)
        if read.unsaved_items:
            self.rows.put_items(self.session.id, read.unsaved_items)
        self._write_events(read)

    def _write_events(self, read: _Read) -> None:
        """Write the events ``read``'s block recorded and has not written, in one statement."""
        if not read.unsaved_events:
            return
        logged, read.unsaved_events = read.unsaved_events, []
        written = self.rows.add_events([entry.draft for entry in logged])
        for entry, event in zip(logged, written, strict=True):
            entry.event = event
        read.latest_event = written[-1].id

    def _logged_now(self) -> None:
        """Inside a writing block: write its waiting events (the log is read next)."""
        if self._read is not None and self._read.writing:
            self._write_events(self._read)

    def _event(self, logged: _Logged) -> WorkEvent:
        """``logged`` as written, with its id (written now with the others waiting, if not)."""
        if logged.event is None:
            assert self._read is not None  # recorded in the writing block still open
            self._write_events(self._read)
        assert logged.event is not None
        return logged.event

    # -- storage primitives --------------------------------------------------------------

    def _now(self) -> datetime:
        return self._clock().astimezone(UTC)

    def _get(self, key: str) -> Any:
        kind, _, ident = key.partition(":")
        if kind == "meta":
            if self._read is None:
                return self.rows.meta(self.session.id, ident)
            return self._read_all().meta.get(ident)
        if self._read is not None and self._read.items is not None:
            return self._read.items.get(kind, {}).get(int(ident))
        return self.rows.item(self.session.id, kind, int(ident))

    def _put(self, key: str, value: Any) -> None:
        kind, _, ident = key.partition(":")
        if kind == "meta":
            if self._read is not None and self._read.writing:
                self._read.unsaved_meta[ident] = value  # written when the block ends
            else:
                self.rows.put_meta(self.session.id, ident, value)
            if self._read is not None:
                self._read.meta[ident] = value
        else:
            self._put_items({(kind, int(ident)): value})

    def _put_items(self, values: Mapping[tuple[str, int], Any]) -> None:
        if self._read is not None and self._read.writing and self._read.items is not None:
            # Every item is read in this block, and reads come from it: written at its end.
            self._read.unsaved_items.update(values)
        else:
            self.rows.put_items(self.session.id, values)
        if self._read is not None and self._read.items is not None:
            for (kind, item_id), value in values.items():
                held = self._read.items.setdefault(kind, {})
                if value is None:
                    held.pop(item_id, None)
                else:
                    held[item_id] = value
                    if next(reversed(held)) != item_id:  # kept in id order
                        self._read.items[kind] = dict(sorted(held.items()))

    def _stored(self, kind: str) -> dict[int, Json]:
        """Every item of ``kind`` by id, in id order (read once inside reading())."""
        if self._read is None:
            return {int(d["id"]): d for d in self.rows.items(self.session.id, kind)}
        items = self._read_all().items
        assert items is not None
        return items.get(kind, {})

    def _read_all(self) -> _Read:
        """What the open block read: every item and every value, in one read at first use.

        A value the block wrote before that read is kept as written.
        """
        read = self._read
        assert read is not None
        if read.items is None:
            read.items, meta = self.rows.every_value(self.session.id)
            read.meta = {**meta, **read.meta}
        return read

    def _rows(self, kind: str) -> list[Json]:
        stored = (self.rows.items(self.session.id, kind) if self._read is None
                  else self._stored(kind).values())
        items = [dict(d) for d in stored]
        return _ordered(items) if kind in ("note", "memo") else items

    def _item(self, kind: str, item_id: Any, what: str) -> Json:
        if isinstance(item_id, bool) or not isinstance(item_id, int):
            raise WorkspaceError(f"{what} id must be a whole number, not {item_id!r}")
        data = self._get(f"{kind}:{item_id}")
        if data is None:
            raise UnknownItemError(f"no {what} {item_id} in session {self.session.name!r}"
                                   f" (list them with {what.split()[0]}_list)")
        return dict(data)

    def _current(self, kind: str, read: Sequence[Json]) -> dict[str, Json] | None:
        """``read``'s items by key if each is still stored as read (one statement), else None."""
        stored = self._stored(kind)
        if any(stored.get(d["id"]) != d for d in read):
            return None
        return {f"{kind}:{d['id']}": d for d in read}

    def _set_meta(self, name: str, value: Any) -> None:
        self._put(f"meta:{name}", value)

    def _next_id(self, kind: str) -> int:
        value = self._next_free(kind)
        self._set_meta(f"next_{kind}", value + 1)
        return value

    def _next_free(self, kind: str) -> int:
        stored = self._get(f"meta:next_{kind}") or 1
        if self._read is not None and self._read.items is not None:
            top = max(self._read.items.get(kind, {}), default=0)
        else:
            top = self.rows.top_item_id(self.session.id, kind)
        return max(int(stored), top + 1)

    def _round_in(self) -> int:
        return int(self._get("meta:round") or 0)

    def _limits_in(self) -> WorkspaceLimits:
        if self._explicit_limits is not None:
            return self._explicit_limits
        saved = self._get("meta:limits")
        return WorkspaceLimits.from_json(saved) if saved else WorkspaceLimits()

    def _record(
        self, action: str, changes: Mapping[str, Any], *, reverts: int | None = None,
        before: Mapping[str, Any] | None = None,
    ) -> _Logged:
        """Apply ``changes`` (key → new JSON value, None to delete) and log the event.

        Called inside :meth:`writing`: the changes and their event commit together; the
        event is written with the block's others (see :meth:`_event` for its id).
        ``before`` holds the keys' values the caller read in this transaction (else read).
        """
        read = self._read
        assert read is not None and read.writing
        before = {k: before[k] if before is not None and k in before else self._get(k)
                  for k in changes}
        items: dict[tuple[str, int], Any] = {}
        for key, value in changes.items():
            kind, _, ident = key.partition(":")
            if kind == "meta":
                self._put(key, value)
            else:
                items[kind, int(ident)] = value
        if items:
            self._put_items(items)
        logged = _Logged(WorkEvent(
            id=0, session_id=self.session.id, at=self._now(), actor=self.actor, action=action,
            target=",".join(changes), before=before, after=dict(changes), reverts=reverts))
        read.unsaved_events.append(logged)
        return logged

    def _check_artifact(self, ref: str | None, what: str) -> None:
        if ref is None or not ref.startswith("artifact:"):
            return
        if not self.store.artifact_rows.exists(ref[len("artifact:"):]):
            raise WorkspaceError(f"{what} {ref} names no stored artifact: cite the id shown "
                                 "in the context, or store the text as an artifact first")

    # -- limits and round ----------------------------------------------------------------

    @property
    def limits(self) -> WorkspaceLimits:
        """The limits in force for this session."""
        return self._limits_in()

    @property
    def round(self) -> int:
        """The latest round number given to :meth:`expire` (0 before any)."""
        return self._round_in()

    def version(self) -> int:
        """A number that grows with every change of this working state (for caches).

        Inside a writing block that wrote an event: that event's id (the newest, read
        with nothing else changing the state until the block's transaction ends).
        """
        self._logged_now()
        if self._read is not None and self._read.latest_event is not None:
            return self._read.latest_event
        return self.store.work.latest_event(self.session.id)

    # -- pins ----------------------------------------------------------------------------

    def _pin_values(self, lim: WorkspaceLimits, values: Mapping[str, Any]) -> Json:
        out: Json = {}
        if "type" in values:
            out["type"] = check_line(values["type"], "pin type", _TYPE_MAX)
        if "title" in values:
            out["title"] = check_line(values["title"], "pin title", lim.pin_title_max)
        if "summary" in values:
            out["summary"] = check_line(
                values["summary"], "pin summary", lim.pin_summary_max,
                limit_hint="store the full text as an artifact and pin a short summary with "
                           "artifact_ref=artifact:<id>",
            )
        if "source" in values:
            out["source"] = check_pin_source(values["source"])
            self._check_artifact(out["source"], "pin source")
        if "artifact_ref" in values:
            out["artifact_ref"] = check_artifact_ref(values["artifact_ref"])
            self._check_artifact(out["artifact_ref"], "artifact_ref")
        return out

    def _with_ttl(self, data: Json, ttl: TTLSpec, now: datetime) -> Json:
        parsed = parse_ttl(ttl)
        round_now = self._round_in()
        data["ttl"] = parsed.to_json()
        data["created_round"] = data.get("created_round", round_now)
        data["expires_at"] = (
            None if parsed.seconds is None
            else (now + timedelta(seconds=parsed.seconds)).isoformat()
        )
        data["expires_round"] = None if parsed.rounds is None else round_now + parsed.rounds
        return data

    def pin_add(
        self, type: str, title: str, summary: str, source: str,
        artifact_ref: str | None = None, ttl: TTLSpec | None = None,
    ) -> Pin:
        """Pin an important fact. Source required; summary short; limited count; a TTL.

        ``ttl`` defaults to the limits' ``pin_default_ttl`` (7 days).
        """
        now = self._now()
        with self.writing():
            lim = self._limits_in()
            values = self._pin_values(lim, {
                "type": type, "title": title, "summary": summary, "source": source,
                "artifact_ref": artifact_ref})
            count = len(self._rows("pin"))
            if count >= lim.pins_max:
                raise WorkspaceLimitError(
                    f"{count} pins already, the limit is {lim.pins_max}: remove one with "
                    "pin_remove first (pin_list shows them)"
                )
            pin_id = self._next_id("pin")
            data: Json = {"id": pin_id, **values, "created_at": now.isoformat(),
                          "updated_at": now.isoformat(), "actor": self.actor}
            self._with_ttl(data, ttl if ttl is not None else lim.pin_default_ttl, now)
            self._record("pin_add", {f"pin:{pin_id}": data})
        return Pin.from_json(data)

    def pin_update(self, id: int, **fields: Any) -> Pin:
        """Change fields of a pin (type, title, summary, source, artifact_ref, ttl).

        A new ``ttl`` renews the pin: it counts from now (and the current round).
        """
        unknown = sorted(set(fields) - _PIN_FIELDS)
        if unknown or not fields:
            raise WorkspaceError(f"pin_update takes {', '.join(sorted(_PIN_FIELDS))}; got "
                                 f"{', '.join(unknown) or 'nothing to change'}")
        now = self._now()
        with self.writing():
            lim = self._limits_in()
            data = self._item("pin", id, "pin")
            if "source" in fields and fields["source"] is None:
                raise WorkspaceError("a pin's source cannot be removed, only replaced")
            new = {**data, **self._pin_values(lim, fields)}
            if "ttl" in fields:
                if fields["ttl"] is None:
                    raise WorkspaceError("a pin must have a TTL; give a new one to renew it")
                new["created_round"] = self._round_in()
                self._with_ttl(new, fields["ttl"], now)
            if new == data:
                return Pin.from_json(data)
            new["updated_at"] = now.isoformat()
            self._record("pin_update", {f"pin:{id}": new})
        return Pin.from_json(new)

    def pin_remove(self, ids: int | Iterable[int]) -> list[Pin]:
        """Unpin one or several pins (all or none: an unknown id removes nothing)."""
        wanted = [ids] if isinstance(ids, int) else list(dict.fromkeys(ids))
        if not wanted:
            raise WorkspaceError("pin_remove needs at least one pin id")
        with self.writing():
            removed = [self._item("pin", i, "pin") for i in wanted]
            self._record("pin_remove", {f"pin:{i}": None for i in wanted})
        return [Pin.from_json(d) for d in removed]

    def pin_get(self, id: int) -> Pin:
        """One pin by id."""
        return Pin.from_json(self._item("pin", id, "pin"))

    def pin_list(self) -> list[Pin]:
        """Every pin, oldest first."""
        return [Pin.from_json(d) for d in self._rows("pin")]

    def expire(self, now: datetime | None = None, round: int | None = None) -> list[WorkEvent]:
        """Demote pins whose TTL has passed to notebook entries; one event per pin.

        ``round`` (the caller's round or session counter) is remembered: TTLs in rounds
        count against it, and pins added later start from it.
        """
        moment = (now or self._clock()).astimezone(UTC)
        logged: list[_Logged] = []
        with self.writing():
            if round is not None:
                if isinstance(round, bool) or not isinstance(round, int) or round < 0:
                    raise WorkspaceError(f"round must be a whole number, 0 or more, not {round!r}")
                self._set_meta("round", max(round, self._round_in()))
            round_now = self._round_in()
            lim = self._limits_in()
            for pin in self._rows("pin"):
                at = pin.get("expires_at")
                rounds = pin.get("expires_round")
                if not ((at and datetime.fromisoformat(at) <= moment)
                        or (rounds is not None and rounds <= round_now)):
                    continue
                note_id = self._next_id("note")
                text = f"expired pin {pin['id']} ({pin['type']}) {pin['title']}: {pin['summary']}"
                note = {
                    "id": note_id, "summary": clip(text, lim.notebook_entry_max),
                    "source": pin["source"], "artifact_ref": pin.get("artifact_ref"),
                    "milestone": False, "covers": [], "pos": note_id,
                    "created_at": moment.isoformat(), "actor": self.actor,
                }
                logged.append(self._record(
                    "pin_expire", {f"pin:{pin['id']}": None, f"note:{note_id}": note}))
        if logged and self.auto_compact:
            self._compact_notebook()
        return [self._event(entry) for entry in logged]

    # -- plan ----------------------------------------------------------------------------

    def plan_add(self, text: str, source: str | None = None) -> PlanItem:
        """Add a TODO to the plan."""
        now = self._now()
        with self.writing():
            lim = self._limits_in()
            clean = check_line(text, "plan item", lim.plan_text_max,
                               limit_hint="keep plan items short; put details in the notebook")
            count = len(self._rows("plan"))
            if count >= lim.plan_max:
                raise WorkspaceLimitError(f"{count} plan items already, the limit is "
                                          f"{lim.plan_max}: remove finished ones with plan_remove")
            item_id = self._next_id("plan")
            data = {"id": item_id, "text": clean, "done": False,
                    "source": check_source(source, self.actor), "created_at": now.isoformat(),
                    "updated_at": now.isoformat(), "actor": self.actor}
            self._record("plan_add", {f"plan:{item_id}": data})
        return PlanItem.from_json(data)

    def plan_done(self, id: int, done: bool = True) -> PlanItem:
        """Tick (or untick) a plan item."""
        with self.writing():
            data = self._item("plan", id, "plan item")
            if data["done"] == bool(done):
                return PlanItem.from_json(data)
            new = {**data, "done": bool(done), "updated_at": self._now().isoformat()}
            self._record("plan_done" if done else "plan_undone", {f"plan:{id}": new})
        return PlanItem.from_json(new)

    def plan_remove(self, id: int) -> PlanItem:
        """Remove a plan item."""
        with self.writing():
            data = self._item("plan", id, "plan item")
            self._record("plan_remove", {f"plan:{id}": None})
        return PlanItem.from_json(data)

    def plan_list(self) -> list[PlanItem]:
        """Return the plan, in the order items were added."""
        return [PlanItem.from_json(d) for d in self._rows("plan")]

    # -- notebook ------------------------------------------------------------------------

    def notebook_add(
        self, summary: str, source: str | None = None, artifact_ref: str | None = None
    ) -> NoteEntry:
        """Add a short note; past ``notebook_max`` entries the oldest become a milestone."""
        return self.notebook_add_many([(summary, source, artifact_ref)])[0]

    def notebook_add_many(
        self, entries: Sequence[tuple[str, str | None, str | None]],
    ) -> list[NoteEntry]:
        """Add several ``(summary, source, artifact_ref)`` notes, as one add after another.

        Notes go in batches, one event each, up to where the notebook passes its limit:
        there it compacts before the rest go in, as it would between single adds. All are
        checked before any is stored.
        """
        lim = self._limits_in()
        rest: list[tuple[str, str, str | None]] = []
        for summary, source, artifact_ref in entries:
            text = check_line(summary, "notebook entry", lim.notebook_entry_max,
                              limit_hint="store the long text as an artifact and note a "
                                         "short summary with artifact_ref=artifact:<id>")
            ref = check_artifact_ref(artifact_ref)
            if ref not in (r for _, _, r in rest):  # each artifact looked up once
                self._check_artifact(ref, "artifact_ref")
            rest.append((text, check_source(source, self.actor), ref))
        added: list[NoteEntry] = []
        while rest:
            batch, over = self._note_batch(rest)
            added += batch
            rest = rest[len(batch):]
            if self.auto_compact and over:
                self._compact_notebook()
        return added

    def _note_batch(
        self, entries: Sequence[tuple[str, str, str | None]],
    ) -> tuple[list[NoteEntry], bool]:
        """Add the notes that fit before the notebook passes its limit; whether it has."""
        now = self._now()
        with self.writing():
            lim = self._limits_in()
            held = len(self._rows("note"))
            batch = entries[:max(1, lim.notebook_max + 1 - held)]
            first = self._next_free("note")
            self._set_meta("next_note", first + len(batch))
            added: dict[str, Json] = {f"note:{first + i}": {
                "id": first + i, "summary": text, "source": source, "artifact_ref": ref,
                "milestone": False, "covers": [], "pos": first + i,
                "created_at": now.isoformat(), "actor": self.actor}
                for i, (text, source, ref) in enumerate(batch)}
            # Ids above every stored one: nothing to read as their "before".
            self._record("notebook_add", added, before=dict.fromkeys(added))
        over = held + len(batch) > lim.notebook_max
        return [NoteEntry.from_json(data) for data in added.values()], over

    def notebook_remove(self, id: int) -> NoteEntry:
        """Remove a notebook entry."""
        with self.writing():
            data = self._item("note", id, "notebook entry")
            self._record("notebook_remove", {f"note:{id}": None})
        return NoteEntry.from_json(data)

    def notebook_list(self) -> list[NoteEntry]:
        """Return the notebook, oldest first (milestones where the entries they fold were)."""
        return [NoteEntry.from_json(d) for d in self._rows("note")]

    def compact_notebook(self) -> WorkEvent | None:
        """Fold the oldest entries into one milestone while the notebook is over its limit."""
        logged = self._compact_notebook()
        return None if logged is None else self._event(logged)

    def _compact_notebook(self) -> _Logged | None:
        """:meth:`compact_notebook`, its event written with the block's others."""
        for _ in range(_RETRIES):
            lim = self._limits_in()
            notes = self._rows("note")
            if len(notes) <= lim.notebook_max:
                return None
            n = min(len(notes), max(lim.notebook_compress_batch, len(notes) - lim.notebook_max + 1))
            chosen = notes[:n]
            text = self._compressed(self.compress, [d["summary"] for d in chosen],
                                    lim.milestone_max)
            with self.writing():
                current = self._current("note", chosen)
                if current is None:
                    continue  # changed meanwhile; look again
                note_id = self._next_id("note")
                # Flattened: the request shows the notes a milestone stands for.
                covers = sorted({i for d in chosen for i in (d["covers"] or [d["id"]])})
                milestone = {
                    "id": note_id, "summary": text, "source": f"actor:{self.actor}",
                    "artifact_ref": None, "milestone": True, "covers": covers,
                    "pos": min(int(d["pos"]) for d in chosen),
                    "created_at": self._now().isoformat(), "actor": self.actor,
                }
                changes: dict[str, Any] = {f"note:{d['id']}": None for d in chosen}
                changes[f"note:{note_id}"] = milestone
                return self._record("notebook_compress", changes,
                                    before={**current, f"note:{note_id}": None})
        return None

    @staticmethod
    def _compressed(compress: Compressor, texts: list[str], max_chars: int) -> str:
        text = " ".join(str(compress(texts)).split())
        if not text:
            text = " ".join(extractive_compress(texts).split())
        return clip(text, max_chars)

    # -- fastmemo ------------------------------------------------------------------------

    def fastmemo_add(self, section: str, text: str, source: str | None = None) -> MemoEntry:
        """Add an entry to a fastmemo section; at the section limit the fastmemo compacts."""
        return self.fastmemo_add_many(section, [(text, source)])[0]

    def fastmemo_add_many(
        self, section: str, entries: Sequence[tuple[str, str | None]],
    ) -> list[MemoEntry]:
        """Add several ``(text, source)`` entries to a section, as one add after another.

        Entries go in batches, one event each, up to where the section fills: there the
        fastmemo compacts before the rest go in, as it would between single adds. All are
        checked before any is stored.
        """
        lim = self._limits_in()
        if section not in lim.fastmemo_sections:
            raise WorkspaceError(f"no fastmemo section {section!r}; the sections are "
                                 f"{', '.join(lim.fastmemo_sections)}")
        rest = [(check_line(text, f"fastmemo entry ({section})", lim.fastmemo_entry_max),
                 check_source(source, self.actor)) for text, source in entries]
        added: list[MemoEntry] = []
        while rest:
            batch, full = self._memo_batch(section, rest)
            added += batch
            rest = rest[len(batch):]
            if self.auto_compact and full:
                self._compact_fastmemo()
        return added

    def _memo_batch(
        self, section: str, entries: Sequence[tuple[str, str]],
    ) -> tuple[list[MemoEntry], bool]:
        """Add the entries that fit before ``section`` fills; whether it is full now."""
        now = self._now()
        with self.writing():
            lim = self._limits_in()
            held = sum(1 for d in self._rows("memo") if d["section"] == section)
            batch = entries[:max(1, lim.fastmemo_section_max - held)]
            first = self._next_free("memo")
            self._set_meta("next_memo", first + len(batch))
            added = {f"memo:{first + i}": {
                "id": first + i, "section": section, "text": clean, "source": source,
                "covers": [], "pos": first + i, "created_at": now.isoformat(),
                "actor": self.actor} for i, (clean, source) in enumerate(batch)}
            # Ids above every stored one: nothing to read as their "before".
            self._record("fastmemo_add", added, before=dict.fromkeys(added))
        full = held + len(batch) >= lim.fastmemo_section_max
        return [MemoEntry.from_json(data) for data in added.values()], full

    def pool_add(self, text: str, source: str | None = None) -> MemoEntry:
        """Add compressed chat history to the context pool (the fastmemo's pool section)."""
        return self.fastmemo_add(self.limits.pool_section, text, source)

    def fastmemo_remove(self, id: int) -> MemoEntry:
        """Remove a fastmemo entry."""
        with self.writing():
            data = self._item("memo", id, "fastmemo entry")
            self._record("fastmemo_remove", {f"memo:{id}": None})
        return MemoEntry.from_json(data)

    def fastmemo_list(self, section: str | None = None) -> list[MemoEntry]:
        """Fastmemo entries (of one section, or all in section order), oldest first."""
        order = {s: i for i, s in enumerate(self._limits_in().fastmemo_sections)}
        rows = self._rows("memo")
        rows = [d for d in rows if section is None or d["section"] == section]
        rows.sort(key=lambda d: order.get(d["section"], len(order)))
        return [MemoEntry.from_json(d) for d in rows]

    def fastmemo(self) -> dict[str, list[MemoEntry]]:
        """Every fastmemo section (empty ones too) with its entries, oldest first."""
        out: dict[str, list[MemoEntry]] = {s: [] for s in self.limits.fastmemo_sections}
        for entry in self.fastmemo_list():
            out.setdefault(entry.section, []).append(entry)
        return out

    def compact_fastmemo(self) -> WorkEvent | None:
        """Compact the whole fastmemo: in each section, all but the newest few become one."""
        logged = self._compact_fastmemo()
        return None if logged is None else self._event(logged)

    def _compact_fastmemo(self) -> _Logged | None:
        """:meth:`compact_fastmemo`, its event written with the block's others."""
        for _ in range(_RETRIES):
            lim = self._limits_in()
            rows = self._rows("memo")
            groups: dict[str, list[Json]] = {}
            for d in rows:
                groups.setdefault(d["section"], []).append(d)
            plan = {s: g[:len(g) - lim.fastmemo_keep_recent] for s, g in groups.items()
                    if len(g) - lim.fastmemo_keep_recent >= 2}
            if not plan:
                return None
            texts = {s: self._compressed(self.fastmemo_compress, [d["text"] for d in g],
                                         lim.fastmemo_entry_max) for s, g in plan.items()}
            with self.writing():
                current = self._current("memo", [d for g in plan.values() for d in g])
                if current is None:
                    continue  # changed meanwhile; look again
                changes: dict[str, Any] = {}
                for section, group in plan.items():
                    changes.update({f"memo:{d['id']}": None for d in group})
                    memo_id = self._next_id("memo")
                    changes[f"memo:{memo_id}"] = {
                        "id": memo_id, "section": section, "text": texts[section],
                        "source": f"actor:{self.actor}",
                        "covers": _folded(group),
                        "pos": min(int(d["pos"]) for d in group),
                        "created_at": self._now().isoformat(), "actor": self.actor,
                    }
                return self._record("fastmemo_compact", changes,
                                    before={**current, **dict.fromkeys(changes.keys() - current)})
        return None

    # -- audit log and rollback ----------------------------------------------------------

    def events(self, *, after: int = 0, limit: int | None = None) -> list[WorkEvent]:
        """Return the audit log of the session (events with id > ``after``), oldest first."""
        self._logged_now()
        found = self.rows.events(self.session.id, after=after)
        return found if limit is None else found[:limit]

    def event(self, event_id: int) -> WorkEvent:
        """One event of the session's audit log."""
        self._logged_now()
        found = self.rows.event(self.session.id, event_id)
        if found is None:
            raise UnknownItemError(f"no event {event_id} in session {self.session.name!r}")
        return found

    def rollback(self, event_id: int) -> WorkEvent:
        """Undo one event (see the rollback rule in the module's docstring); logged too."""
        with self.writing():
            event = self.event(event_id)
            changed = [k for k, v in event.after.items() if self._get(k) != v]
            if changed:
                later = [e for e in self.rows.events(self.session.id, after=event_id)
                         if set(e.after) & set(changed)]
                blame = (", ".join(f"{e.id} ({e.action})" for e in later[-3:])
                         or "a change outside the audit log")
                raise RollbackConflictError(
                    f"cannot roll back event {event_id} ({event.action}): "
                    f"{', '.join(changed[:5])} changed since, by event {blame}; "
                    "roll back the later event(s) first"
                )
            logged = self._record("rollback", dict(event.before), reverts=event_id)
            lim = self._limits_in()
            for kind, most in (("pin", lim.pins_max), ("plan", lim.plan_max)):
                count = len(self._rows(kind))
                if count > most and any(k.startswith(kind + ":") for k in event.before):
                    raise WorkspaceLimitError(
                        f"rolling back event {event_id} would make {count} {kind}s, over the "
                        f"limit of {most}: remove one first"
                    )
        return self._event(logged)

    # -- context_state.json --------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """Return the working state as a ``context_state.json`` object (see :func:`build_state`)."""
        from memci.workspace._statefile import build_state  # the state file's: when asked

        lim = self._limits_in()
        return build_state(
            session=self.session.name, exported_at=self._now(), limits=lim,
            round=self._round_in(),
            next_ids={k: self._next_free(k) for k in _KINDS},
            items={k: self._rows(k) for k in _KINDS},
            refs=self._get("meta:refs") or {},
        )

    def import_state(self, data: Any) -> WorkEvent:
        """Replace the working state with a ``context_state.json`` object, in one transaction.

        An unknown version or malformed data raises :class:`InvalidStateFileError` and
        changes nothing. The import is one event, so it can be rolled back. Ids in the file
        are kept; ids are never reused, so the counters only move forward.
        """
        from memci.workspace._statefile import parse_state

        parsed = parse_state(data, now=self._now(), actor=self.actor)
        with self.writing():
            changes: dict[str, Any] = {}
            for kind in _KINDS:
                for d in self._rows(kind):
                    changes[f"{kind}:{d['id']}"] = None
                for d in parsed.items[kind]:
                    changes[f"{kind}:{d['id']}"] = d
            changes["meta:limits"] = parsed.limits.to_json()
            changes["meta:refs"] = parsed.refs or None
            for kind in _KINDS:
                self._set_meta(f"next_{kind}",
                               max(self._next_free(kind), parsed.next_ids[kind]))
            self._set_meta("round", parsed.round)
            logged = self._record("import", changes)
        return self._event(logged)

    # -- rendering -----------------------------------------------------------------------

    def render_pins(self) -> str:
        """Return the pins block (empty text when there are none)."""
        return render_pins(self.pin_list(), self.titles)

    def render_plan(self) -> str:
        """Return the plan block (empty text when there is no plan)."""
        return render_plan(self.plan_list(), self.titles)

    def render_notebook(self) -> str:
        """Return the notebook block (empty text when the notebook is empty)."""
        return render_notebook(self.notebook_list(), self.titles)

    def render_fastmemo(self) -> str:
        """Return the fastmemo block without the context pool (empty text when empty)."""
        lim = self.limits
        sections = {s: e for s, e in self.fastmemo().items() if s != lim.pool_section}
        return render_fastmemo(sections, self.titles)

    def render_context_pool(self) -> str:
        """Return the context pool block: compressed chat history (empty text when empty)."""
        return render_context_pool(self.fastmemo_list(self.limits.pool_section), self.titles)

