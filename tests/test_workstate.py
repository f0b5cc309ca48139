"""Working state: pins' hard rules, plan, notebook, fastmemo, audit log, rollback, state file."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memci.errors import ConfigError, InvalidFileError, InvalidInputError
from memci.store import SessionRecord, SQLiteStore
from memci.workspace import (
    CHINESE_TITLES,
    TTL,
    WORKSPACE_TOOL_SPECS,
    ArtifactStore,
    InvalidStateFileError,
    RollbackConflictError,
    UnknownItemError,
    Workspace,
    WorkspaceError,
    WorkspaceLimitError,
    WorkspaceLimits,
    WorkState,
    call_workspace_tool,
    parse_ttl,
)

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


@pytest.fixture
def session(store: SQLiteStore) -> SessionRecord:
    return store.ensure_session("default", "s1", "u1", {})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ws(store: SQLiteStore, session: SessionRecord, clock: Clock) -> WorkState:
    return WorkState(store, session, clock=clock)


def snapshot(state: WorkState) -> dict[str, Any]:
    data = state.export_state()
    for key in ("exported_at", "next_ids", "session"):
        data.pop(key)
    return data


def _pin(ws: WorkState, n: int = 1, **kw: Any) -> Any:
    args: dict[str, Any] = {"type": "fact", "title": f"fact {n}", "summary": f"summary {n}",
                            "source": f"chat:{n}"}
    args.update(kw)
    return ws.pin_add(**args)


# -- pins: hard rules --------------------------------------------------------------------


@pytest.mark.parametrize("source", [
    None, "", "   ", "bogus", "chat:", "tool:", "file:src/a.py", "file:#L3",
    "http://example.com", "chat:has space", "artifact:xyz",
])
def test_pin_source_is_required_and_checked(ws: WorkState, source: Any) -> None:
    with pytest.raises(WorkspaceError, match="source"):
        ws.pin_add("fact", "t", "s", source)
    assert ws.pin_list() == []
    assert ws.events() == []


@pytest.mark.parametrize("source", [
    "chat:12", "tool:call_abc", "file:src/app.py#L10", "file:docs/读我 1.md#L3-7",
    "file:/abs/path.py#L1-L20",
])
def test_pin_source_forms_accepted(ws: WorkState, source: str) -> None:
    assert ws.pin_add("fact", "t", "s", source).source == source


def test_pin_source_and_ref_may_name_an_existing_artifact(
    ws: WorkState, store: SQLiteStore, session: SessionRecord, tmp_path: Path
) -> None:
    arts = ArtifactStore(store, tmp_path / "a")
    a = arts.put("long text " * 100, session=session, tool_name="t", call_id="c")
    pin = ws.pin_add("fact", "t", "short", f"artifact:{a.id}", artifact_ref=a.id)
    assert pin.artifact_ref == f"artifact:{a.id}"
    with pytest.raises(WorkspaceError, match="no stored artifact"):
        ws.pin_add("fact", "t", "short", "chat:1", artifact_ref="artifact:0123456789ab")


def test_pin_summary_at_most_600_characters(ws: WorkState) -> None:
    ok = ws.pin_add("fact", "t", "字" * 600, "chat:1")
    assert len(ok.summary) == 600
    with pytest.raises(WorkspaceLimitError, match="artifact") as info:
        ws.pin_add("fact", "t", "字" * 601, "chat:1")
    assert "601" in str(info.value) and "600" in str(info.value)
    assert len(ws.pin_list()) == 1


def test_at_most_20_pins_until_one_is_removed(ws: WorkState) -> None:
    pins = [_pin(ws, i) for i in range(1, 21)]
    with pytest.raises(WorkspaceLimitError, match="pin_remove"):
        _pin(ws, 21)
    ws.pin_remove([pins[0].id])
    assert _pin(ws, 21).id == 21  # ids are never reused
    assert len(ws.pin_list()) == 20


def test_limits_are_configurable(store: SQLiteStore, session: SessionRecord) -> None:
    small = WorkState(store, session, limits=WorkspaceLimits(pins_max=2, pin_summary_max=10))
    _pin(small, 1)
    _pin(small, 2)
    with pytest.raises(WorkspaceLimitError):
        _pin(small, 3)
    with pytest.raises(WorkspaceLimitError):
        small.pin_update(1, summary="x" * 11)
    with pytest.raises(ConfigError):
        WorkspaceLimits(pins_max=0)
    with pytest.raises(ConfigError):
        WorkspaceLimits(fastmemo_keep_recent=9)
    with pytest.raises(ConfigError):
        WorkspaceLimits(pool_section="nope")


def test_pin_remove_is_all_or_nothing(ws: WorkState) -> None:
    _pin(ws, 1)
    _pin(ws, 2)
    with pytest.raises(UnknownItemError):
        ws.pin_remove([1, 99])
    assert [p.id for p in ws.pin_list()] == [1, 2]
    assert [p.id for p in ws.pin_remove([2, 1])] == [2, 1]
    assert ws.pin_list() == []


def test_pin_update(ws: WorkState, clock: Clock) -> None:
    pin = _pin(ws, 1, ttl="1d")
    clock.advance(hours=20)
    new = ws.pin_update(pin.id, summary="changed", ttl="2d")
    assert new.summary == "changed" and new.title == pin.title
    assert new.expires_at == clock.now + timedelta(days=2)
    assert new.updated_at == clock.now and new.created_at == pin.created_at
    with pytest.raises(WorkspaceError, match="pin_update takes"):
        ws.pin_update(pin.id, colour="red")
    with pytest.raises(WorkspaceError):
        ws.pin_update(pin.id, source=None)
    with pytest.raises(UnknownItemError):
        ws.pin_update(42, title="x")
    events = len(ws.events())
    assert ws.pin_update(pin.id, summary="changed") == new  # no change, no event
    assert len(ws.events()) == events


# -- TTL ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "ttl"), [
    ("7d", TTL(seconds=7 * 86400)), ("12h", TTL(seconds=43200)), ("90min", TTL(seconds=5400)),
    ("45sec", TTL(seconds=45)), ("2w", TTL(seconds=14 * 86400)), ("30r", TTL(rounds=30)),
    ("30 rounds", TTL(rounds=30)), (3600, TTL(seconds=3600)), ("3600", TTL(seconds=3600)),
    ({"days": 7}, TTL(seconds=7 * 86400)), ({"rounds": 30}, TTL(rounds=30)),
    ({"hours": 1, "rounds": 5}, TTL(seconds=3600, rounds=5)), ({"sessions": 3}, TTL(rounds=3)),
])
def test_ttl_forms(spec: Any, ttl: TTL) -> None:
    assert parse_ttl(spec) == ttl
    assert parse_ttl(ttl.to_json()) == ttl


@pytest.mark.parametrize("spec", ["30s", "30m", "", "soon", "-1d", "0d", "1.5r", {"years": 1},
                                  {}, True, 0, [], {"days": "7"}])
def test_bad_ttls_are_refused(spec: Any) -> None:
    with pytest.raises(WorkspaceError):
        parse_ttl(spec)


def test_ambiguous_ttl_message_says_what_to_write() -> None:
    with pytest.raises(WorkspaceError, match=r"ambiguous.*'30sec' or '30r'"):
        parse_ttl("30s")


def test_time_ttl_expiry_demotes_pin_to_notebook(ws: WorkState, clock: Clock) -> None:
    keep = _pin(ws, 1, ttl="30d")
    gone = _pin(ws, 2, ttl="7d", artifact_ref=None)
    assert ws.expire() == []
    clock.advance(days=7)
    events = ws.expire()
    assert [e.action for e in events] == ["pin_expire"]
    assert [p.id for p in ws.pin_list()] == [keep.id]
    notes = ws.notebook_list()
    assert len(notes) == 1
    assert notes[0].source == gone.source
    assert "expired pin 2" in notes[0].summary and gone.summary in notes[0].summary
    assert events[0].before[f"pin:{gone.id}"]["summary"] == gone.summary


def test_round_ttl_expiry(ws: WorkState) -> None:
    ws.expire(round=5)
    pin = _pin(ws, 1, ttl={"rounds": 3})
    assert pin.created_round == 5 and pin.expires_round == 8
    assert ws.expire(round=7) == []
    assert len(ws.expire(round=8)) == 1
    assert ws.pin_list() == [] and ws.round == 8
    assert ws.expire(round=3) == [] and ws.round == 8  # rounds never go back


def test_default_ttl_is_seven_days(ws: WorkState) -> None:
    pin = _pin(ws)
    assert pin.ttl == TTL(seconds=7 * 86400)
    assert pin.expires_at == T0 + timedelta(days=7)


# -- plan, notebook, fastmemo ------------------------------------------------------------


def test_plan(ws: WorkState) -> None:
    a = ws.plan_add("reproduce the bug")
    b = ws.plan_add("fix the serializer", source="chat:4")
    assert a.source == "actor:main" and b.source == "chat:4"
    assert ws.plan_done(a.id).done
    assert not ws.plan_done(a.id, done=False).done
    ws.plan_remove(b.id)
    assert [i.text for i in ws.plan_list()] == ["reproduce the bug"]
    with pytest.raises(UnknownItemError):
        ws.plan_done(99)
    with pytest.raises(WorkspaceError):
        ws.plan_add("   ")
    with pytest.raises(WorkspaceLimitError):
        ws.plan_add("x" * 301)


def test_notebook_rolling_compression_into_milestones(store: SQLiteStore,
                                                      session: SessionRecord) -> None:
    seen: list[list[str]] = []

    def compress(texts: list[str]) -> str:
        seen.append(list(texts))
        return "MILESTONE(" + "+".join(t.split()[-1] for t in texts) + ")"

    ws = WorkState(store, session, compress=compress)
    for i in range(1, 13):
        ws.notebook_add(f"note {i}", source=f"tool:c{i}")
    assert len(ws.notebook_list()) == 12 and seen == []
    ws.notebook_add("note 13")
    notes = ws.notebook_list()
    assert seen == [[f"note {i}" for i in range(1, 7)]]
    assert len(notes) == 8
    first = notes[0]
    assert first.milestone and first.covers == (1, 2, 3, 4, 5, 6)
    assert first.summary == "MILESTONE(1+2+3+4+5+6)"
    assert [n.summary for n in notes[1:]] == [f"note {i}" for i in range(7, 14)]
    assert notes[-1].source == "actor:main"
    for i in range(14, 40):
        ws.notebook_add(f"note {i}")
        assert len(ws.notebook_list()) <= 12
    notes = ws.notebook_list()
    assert notes[0].milestone and notes[0].covers[0] == 1  # milestones nest, oldest first
    assert "MILESTONE(" in notes[0].summary
    actions = [e.action for e in ws.events()]
    assert actions.count("notebook_compress") == len(seen)


def test_notebook_entries_are_short(ws: WorkState) -> None:
    with pytest.raises(WorkspaceLimitError, match="artifact"):
        ws.notebook_add("x" * 401)


def test_default_compression_is_extractive_and_bounded(ws: WorkState) -> None:
    for i in range(13):
        ws.notebook_add(f"entry {i}: " + "detail " * 50)
    milestone = ws.notebook_list()[0]
    assert milestone.milestone and "entry 0" in milestone.summary and "entry 5" in milestone.summary
    assert len(milestone.summary) <= ws.limits.milestone_max


def test_fastmemo_compacts_the_whole_memo_at_ten(store: SQLiteStore,
                                                 session: SessionRecord) -> None:
    ws = WorkState(store, session, compress=lambda texts: " / ".join(texts))
    for i in range(5):
        ws.fastmemo_add("task", f"task fact {i}")
    ws.fastmemo_add("environment", "linux box")
    for i in range(9):
        ws.fastmemo_add("user", f"user fact {i}")
    assert len(ws.fastmemo_list("user")) == 9
    assert not [e for e in ws.events() if e.action == "fastmemo_compact"]
    ws.fastmemo_add("user", "user fact 9")
    memo = ws.fastmemo()
    user = [e.text for e in memo["user"]]
    assert len(user) == 4
    assert user[0] == " / ".join(f"user fact {i}" for i in range(7))  # nothing dropped
    assert user[1:] == ["user fact 7", "user fact 8", "user fact 9"]
    task = [e.text for e in memo["task"]]
    assert task == ["task fact 0 / task fact 1", "task fact 2", "task fact 3", "task fact 4"]
    assert [e.text for e in memo["environment"]] == ["linux box"]
    assert memo["user"][0].covers == tuple(range(7, 14))
    compacts = [e for e in ws.events() if e.action == "fastmemo_compact"]
    assert len(compacts) == 1


def test_what_a_compaction_lists_and_logs_stays_the_size_of_one(ws: WorkState) -> None:
    # A long chat pools its pages, compacted again and again: before, each compacted
    # entry listed every id ever compacted, and each compaction's event held the list
    # twice, so the audit log grew with the square of the chat (734 MB for a
    # 100k-message import).
    for i in range(600):
        ws.pool_add(f"page {i}: the user asked about the harbor lantern")
    pool = ws.fastmemo_list(ws.limits.pool_section)
    assert len(pool[0].covers) <= ws.limits.fastmemo_section_max
    folds = [e for e in ws.events() if e.action == "fastmemo_compact"]
    sizes = [len(json.dumps([dict(e.before), dict(e.after)])) for e in folds]
    assert len(folds) > 50
    assert max(sizes[-20:]) < 2 * max(sizes[:20]), (sizes[:20], sizes[-20:])
    # Compactions nest: the oldest entry holds the one compacted before it by its id.
    made = [int(key.partition(":")[2]) for e in folds for key, value in e.after.items()
            if value is not None]
    assert pool[0].id == made[-1] and made[-2] in pool[0].covers


def test_context_pool_is_a_fastmemo_section(ws: WorkState) -> None:
    for i in range(10):
        ws.pool_add(f"summary of turns {i * 5}-{i * 5 + 4}", source=f"chat:{i}")
    pool = ws.fastmemo_list("pool")
    assert len(pool) == 4 and "summary of turns 0-4" in pool[0].text
    assert ws.render_context_pool().startswith("## Context pool\n- ")
    assert "Context pool" not in ws.render_fastmemo()
    with pytest.raises(WorkspaceError, match="sections are"):
        ws.fastmemo_add("nope", "x")


# -- rendering ---------------------------------------------------------------------------


def test_render_blocks_are_stable_titled_and_absolute(store: SQLiteStore,
                                                      session: SessionRecord,
                                                      clock: Clock) -> None:
    ws = WorkState(store, session, clock=clock)
    assert ws.render_pins() == "" and ws.render_plan() == "" and ws.render_fastmemo() == ""
    ws.pin_add("constraint", "Python", "3.11 only", "file:pyproject.toml#L5", ttl="7d")
    ws.plan_add("write tests")
    ws.plan_done(1)
    ws.notebook_add("tests pass", source="tool:c1")
    ws.fastmemo_add("user", "prefers short answers")
    pins = ws.render_pins()
    assert pins == ("## Pins\n- [pin 1] (constraint) Python: 3.11 only "
                    "(source: file:pyproject.toml#L5; expires 2025-06-08T12:00Z)")
    assert ws.render_plan() == "## Plan\n- [x] 1. write tests"
    assert ws.render_notebook() == (
        "## Notebook\n- [note 1 · 2025-06-01T12:00Z] tests pass (source: tool:c1)")
    assert ws.render_fastmemo() == "## Fastmemo\n### User\n- prefers short answers"
    clock.advance(hours=3)
    assert ws.render_pins() == pins  # no relative times
    zh = WorkState(store, session, titles=CHINESE_TITLES, clock=clock)
    assert zh.render_pins().startswith("## 重要信息\n")
    assert "来源: file:pyproject.toml#L5" in zh.render_pins()
    assert zh.render_plan().startswith("## 计划\n")
    assert zh.render_notebook().startswith("## 笔记本\n")
    assert zh.render_fastmemo().startswith("## 表层记忆\n### 用户\n")


# -- audit log and rollback --------------------------------------------------------------


def _every_action(ws: WorkState, clock: Clock) -> None:
    """Leave a state with something in every part."""
    _pin(ws, 1)
    ws.plan_add("a plan item")
    ws.notebook_add("a note")
    ws.fastmemo_add("task", "a memo")


ACTIONS: dict[str, Any] = {
    "pin_add": lambda ws, c: _pin(ws, 9),
    "pin_remove": lambda ws, c: ws.pin_remove([1]),
    "pin_update": lambda ws, c: ws.pin_update(1, title="new", ttl="1h"),
    "plan_add": lambda ws, c: ws.plan_add("another"),
    "plan_done": lambda ws, c: ws.plan_done(1),
    "plan_remove": lambda ws, c: ws.plan_remove(1),
    "notebook_add": lambda ws, c: ws.notebook_add("another note"),
    "notebook_remove": lambda ws, c: ws.notebook_remove(1),
    "fastmemo_add": lambda ws, c: ws.fastmemo_add("user", "another memo"),
    "fastmemo_remove": lambda ws, c: ws.fastmemo_remove(1),
    "pin_expire": lambda ws, c: (c.advance(days=8), ws.expire()),
}


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_every_action_is_logged_and_can_be_rolled_back(
    store: SQLiteStore, session: SessionRecord, clock: Clock, action: str
) -> None:
    ws = WorkState(store, session, clock=clock, auto_compact=False, actor="dog")
    _every_action(ws, clock)
    before = snapshot(ws)
    last = ws.events()[-1].id
    ACTIONS[action](ws, clock)
    new = ws.events(after=last)
    assert [e.action for e in new] == [action]
    event = new[0]
    assert event.actor == "dog" and event.at == clock.now
    assert event.target and set(event.before) == set(event.after) == set(event.target.split(","))
    assert snapshot(ws) != before
    undo = ws.rollback(event.id)
    assert undo.action == "rollback" and undo.reverts == event.id
    assert dict(undo.before) == dict(event.after) and dict(undo.after) == dict(event.before)
    assert snapshot(ws) == before
    redo = ws.rollback(undo.id)  # a rollback is an event too: rolling it back redoes
    assert redo.reverts == undo.id
    ws.rollback(redo.id)
    assert snapshot(ws) == before


def test_compressions_can_be_rolled_back(store: SQLiteStore, session: SessionRecord,
                                         clock: Clock) -> None:
    ws = WorkState(store, session, clock=clock)
    for i in range(12):
        ws.notebook_add(f"note {i}")
    for i in range(9):
        ws.fastmemo_add("user", f"memo {i}")
    before_notes = [n.summary for n in ws.notebook_list()]
    before_memo = [m.text for m in ws.fastmemo_list()]
    ws.notebook_add("note 12")
    ws.fastmemo_add("user", "memo 9")
    compress = next(e for e in ws.events() if e.action == "notebook_compress")
    compact = next(e for e in ws.events() if e.action == "fastmemo_compact")
    ws.rollback(compact.id)
    assert [m.text for m in ws.fastmemo_list()] == [*before_memo, "memo 9"]
    ws.rollback(compress.id)
    assert [n.summary for n in ws.notebook_list()] == [*before_notes, "note 12"]


def test_rollback_refused_when_a_later_event_depends_on_it(ws: WorkState) -> None:
    pin = _pin(ws)
    add = ws.events()[-1]
    ws.pin_update(pin.id, title="renamed")
    update = ws.events()[-1]
    ws.pin_remove([pin.id])
    remove = ws.events()[-1]
    with pytest.raises(RollbackConflictError, match=rf"event {remove.id} \(pin_remove\)"):
        ws.rollback(update.id)
    with pytest.raises(RollbackConflictError):
        ws.rollback(add.id)
    ws.rollback(remove.id)
    ws.rollback(update.id)
    ws.rollback(add.id)
    assert ws.pin_list() == []
    assert [e.action for e in ws.events()].count("rollback") == 3


def test_rollback_of_a_folded_note_is_refused(ws: WorkState) -> None:
    ws.notebook_add("first")
    first_add = ws.events()[-1]
    for i in range(12):
        ws.notebook_add(f"n{i}")
    with pytest.raises(RollbackConflictError, match="notebook_compress"):
        ws.rollback(first_add.id)


def test_rollback_refused_over_the_pin_limit(store: SQLiteStore, session: SessionRecord) -> None:
    ws = WorkState(store, session, limits=WorkspaceLimits(pins_max=2))
    _pin(ws, 1)
    ws.pin_remove([1])
    removal = ws.events()[-1]
    _pin(ws, 2)
    _pin(ws, 3)
    with pytest.raises(WorkspaceLimitError, match="over the limit"):
        ws.rollback(removal.id)
    assert [p.id for p in ws.pin_list()] == [2, 3]


def test_unknown_event(ws: WorkState, store: SQLiteStore) -> None:
    with pytest.raises(UnknownItemError):
        ws.rollback(12345)
    other = WorkState(store, store.ensure_session("default", "s2", None, {}))
    _pin(other)
    with pytest.raises(UnknownItemError):
        ws.rollback(other.events()[-1].id)  # another session's event


def test_sessions_are_separate(ws: WorkState, store: SQLiteStore) -> None:
    _pin(ws)
    other = WorkState(store, store.ensure_session("default", "s2", None, {}))
    assert other.pin_list() == []
    assert _pin(other).id == 1


# -- context_state.json ------------------------------------------------------------------


def _rich_state(ws: WorkState, store: SQLiteStore, session: SessionRecord,
                tmp_path: Path) -> None:
    arts = ArtifactStore(store, tmp_path / "arts")
    a = arts.put("x" * 100, session=session, tool_name="t", call_id="c")
    ws.expire(round=4)
    _pin(ws, 1, ttl="30r", artifact_ref=a.id)
    _pin(ws, 2, summary="中文摘要：路径 /etc/x", source="file:a.py#L3-9")
    ws.plan_add("step one")
    ws.plan_add("step two")
    ws.plan_done(2)
    for i in range(14):
        ws.notebook_add(f"note {i}", source=f"tool:c{i}")
    for i in range(10):
        ws.fastmemo_add("environment", f"env {i}")
    ws.pool_add("earlier we talked about X")


def test_state_round_trip_is_lossless(store: SQLiteStore, session: SessionRecord,
                                      clock: Clock, tmp_path: Path) -> None:
    ws = WorkState(store, session, clock=clock)
    _rich_state(ws, store, session, tmp_path)
    exported = ws.export_state()
    assert exported["version"] == 1 and exported["format"] == "memci.context_state"
    json.dumps(exported)  # JSON-ready

    target = WorkState(store, store.ensure_session("default", "s2", None, {}), clock=clock)
    target.import_state(json.loads(json.dumps(exported)))
    again = target.export_state()
    for key in ("session", "exported_at"):
        exported.pop(key)
        again.pop(key)
    assert again == exported
    assert target.render_pins() == ws.render_pins()
    assert target.render_notebook() == ws.render_notebook()
    assert target.round == 4


def test_state_file_save_and_load(store: SQLiteStore, session: SessionRecord, clock: Clock,
                                  tmp_path: Path) -> None:
    space = Workspace(store, tmp_path / "arts", clock=clock)
    ws = space.state(session)
    _rich_state(ws, store, session, tmp_path)
    path = space.save_state_file(session, tmp_path / "state" / "context_state.json")
    other = store.ensure_session("default", "s3", None, {})
    space.load_state_file(other, path)
    assert snapshot(space.state(other)) == snapshot(ws)
    assert json.loads(path.read_text(encoding="utf-8"))["pins"][1]["summary"].startswith("中文")


def test_import_keeps_limits_and_is_one_event(store: SQLiteStore, session: SessionRecord,
                                              clock: Clock) -> None:
    ws = WorkState(store, session, clock=clock)
    _pin(ws)
    data = ws.export_state()
    data["limits"]["pins_max"] = 3
    other = WorkState(store, store.ensure_session("default", "s2", None, {}), clock=clock)
    ws.notebook_add("before import")
    event = other.import_state(data)
    assert event.action == "import"
    assert other.limits.pins_max == 3
    other.rollback(event.id)
    assert other.pin_list() == [] and other.limits == WorkspaceLimits()


def test_seed_style_minimal_state_file_is_accepted(ws: WorkState) -> None:
    ws.import_state({
        "version": 1,
        "base_prompt_ref": "prompts/main.txt",
        "tool_contract_ref": "prompts/tool_contract.txt",
        "recent_window_policy": {"keep_rounds": 3},
        "limits": {"pins_max": 20, "fastmemo_section_max": 10},
        "pins": [{"id": 1, "type": "constraint", "title": "py", "summary": "...",
                  "source": "tool:12"}],
        "plan": [{"id": 1, "text": "...", "done": False}],
        "notebook": [{"ts": "2025-06-01T10:00:00Z", "summary": "...", "source": "tool:12"}],
    })
    assert ws.pin_list()[0].expires_at == T0 + timedelta(days=7)
    assert ws.notebook_list()[0].created_at == datetime(2025, 6, 1, 10, tzinfo=UTC)
    exported = ws.export_state()
    assert exported["base_prompt_ref"] == "prompts/main.txt"
    assert exported["recent_window_policy"] == {"keep_rounds": 3}


BAD_STATES: list[tuple[str, Any, str]] = [
    ("not an object", [1, 2], "JSON object"),
    ("no version", {"pins": []}, "no 'version'"),
    ("future version", {"version": 2}, "version 2 is not supported"),
    ("string version", {"version": "1"}, "not supported"),
    ("bool version", {"version": True}, "not supported"),
    ("other format", {"version": 1, "format": "x"}, "format"),
    ("unknown key", {"version": 1, "pinz": []}, "unknown key"),
    ("pins not a list", {"version": 1, "pins": {}}, "pins: must be a list"),
    ("pin missing source", {"version": 1, "pins": [
        {"id": 1, "type": "t", "title": "t", "summary": "s"}]}, r"pins\[0\]: missing 'source'"),
    ("pin bad source", {"version": 1, "pins": [
        {"id": 1, "type": "t", "title": "t", "summary": "s", "source": "nope"}]},
     r"pins\[0\].source"),
    ("pin too long", {"version": 1, "pins": [
        {"id": 1, "type": "t", "title": "t", "summary": "s" * 601, "source": "chat:1"}]},
     r"pins\[0\].summary"),
    ("duplicate ids", {"version": 1, "plan": [{"id": 1, "text": "a"}, {"id": 1, "text": "b"}]},
     "unique"),
    ("bad time", {"version": 1, "plan": [{"id": 1, "text": "a", "created_at": "yesterday"}]},
     "ISO 8601"),
    ("bad limits", {"version": 1, "limits": {"pins_max": -1}}, "limits"),
    ("too many pins", {"version": 1, "limits": {"pins_max": 1}, "pins": [
        {"id": i, "type": "t", "title": "t", "summary": "s", "source": "chat:1"}
        for i in (1, 2)]}, "over the limit"),
    ("unknown section", {"version": 1, "fastmemo": {"mood": [{"text": "x"}]}}, "section"),
    ("done not bool", {"version": 1, "plan": [{"id": 1, "text": "a", "done": "yes"}]}, "done"),
    ("bad ttl", {"version": 1, "pins": [{"id": 1, "type": "t", "title": "t", "summary": "s",
                                         "source": "chat:1", "ttl": "30s"}]}, "ambiguous"),
]


@pytest.mark.parametrize(("name", "data", "message"), BAD_STATES, ids=[b[0] for b in BAD_STATES])
def test_bad_state_is_rejected_and_changes_nothing(ws: WorkState, name: str, data: Any,
                                                   message: str) -> None:
    _pin(ws)
    ws.notebook_add("keep me")
    before = snapshot(ws)
    events = len(ws.events())
    with pytest.raises(InvalidStateFileError, match=message) as info:
        ws.import_state(data)
    assert "nothing imported" in str(info.value)
    assert isinstance(info.value, InvalidFileError) and isinstance(info.value, InvalidInputError)
    assert snapshot(ws) == before
    assert len(ws.events()) == events


def test_malformed_state_file_is_rejected(store: SQLiteStore, session: SessionRecord,
                                          tmp_path: Path) -> None:
    space = Workspace(store, tmp_path / "arts")
    bad = tmp_path / "context_state.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidStateFileError, match="not valid JSON"):
        space.load_state_file(session, bad)
    with pytest.raises(InvalidStateFileError, match="cannot read"):
        space.load_state_file(session, tmp_path / "missing.json")


# -- as tools ----------------------------------------------------------------------------


def test_workspace_tools(ws: WorkState) -> None:
    names = [s.name for s in WORKSPACE_TOOL_SPECS]
    assert names == ["pin_add", "pin_remove", "pin_update", "pin_list", "plan_add",
                     "plan_done", "plan_remove", "plan_list", "notebook_add"]
    for spec in WORKSPACE_TOOL_SPECS:
        assert spec.parameters["type"] == "object"
    ok = call_workspace_tool(ws, "pin_add", json.dumps(
        {"type": "path", "title": "config", "summary": "config at etc/app.toml",
         "source": "tool:call_1", "ttl": "12h"}))
    assert ok.ok and ok.text.startswith("pinned as pin 1 (expires 2025-06-02T00:00Z")
    refused = call_workspace_tool(ws, "pin_add", {"type": "t", "title": "t",
                                                  "summary": "x" * 700, "source": "chat:1"})
    assert not refused.ok and refused.text.startswith("error: ") and "artifact" in refused.text
    missing = call_workspace_tool(ws, "pin_add", {"type": "t", "title": "t", "summary": "s"})
    assert missing.text == "error: missing required argument(s) source"
    assert "[pin 1]" in call_workspace_tool(ws, "pin_list", {}).text
    assert call_workspace_tool(ws, "pin_update", {"id": 1, "title": "cfg"}).ok
    assert call_workspace_tool(ws, "plan_add", {"text": "do it"}).ok
    assert call_workspace_tool(ws, "plan_done", {"id": 1}).text == "plan item 1 marked done"
    assert "[x] 1. do it" in call_workspace_tool(ws, "plan_list", None).text
    assert call_workspace_tool(ws, "notebook_add", {"summary": "did it"}).ok
    assert call_workspace_tool(ws, "plan_remove", {"id": 7}).text.startswith("error: no plan")
    assert call_workspace_tool(ws, "pin_remove", {"ids": [1]}).text == "removed pin(s) 1"
    assert call_workspace_tool(ws, "pin_remove", {"ids": ["x"]}).text.startswith("error:")
    assert call_workspace_tool(ws, "plan_done", {"id": True}).text.startswith("error:")
    assert call_workspace_tool(ws, "pin_add", "{bad json").text.startswith("error:")
    assert call_workspace_tool(ws, "nope", {}).text.startswith("error: unknown tool")
    assert call_workspace_tool(ws, "pin_list", {"x": 1}).text.startswith("error: unknown arg")


def test_every_public_name_is_documented() -> None:
    import memci.tools._files as files
    import memci.workspace as workspace

    doc = (Path(__file__).resolve().parents[1] / "docs" / "workspace.md").read_text("utf-8")
    names = [*workspace.__all__, *files.__all__]
    missing = [n for n in names if not re.search(rf"`[^`\n]*\b{re.escape(n)}\b[^`\n]*`", doc)]
    assert missing == []


def test_state_needs_a_stored_session(store: SQLiteStore, session: SessionRecord) -> None:
    from dataclasses import replace

    from memci.errors import UnknownSessionError

    with pytest.raises(UnknownSessionError):
        WorkState(store, replace(session, id=999))
    assert WorkState(store, session).with_actor("dog").actor == "dog"


def _entries(state: WorkState) -> list[tuple[Any, ...]]:
    notes = [(n.id, n.summary, n.milestone, n.covers) for n in state.notebook_list()]
    memos = [(m.id, m.section, m.text, m.covers) for m in state.fastmemo_list()]
    return notes + memos


def test_adding_many_is_adding_one_after_another(store: SQLiteStore) -> None:
    """A batch compacts where single adds would have: the same entries, ids and milestones."""
    one = WorkState(store, store.ensure_session("default", "one", "u1", {}))
    many = WorkState(store, store.ensure_session("default", "many", "u1", {}))
    pool = one.limits.pool_section
    for start in (0, 5, 30):
        notes = [(f"note {i}", f"tool:c{i}", None) for i in range(start, start + 25)]
        memos = [(f"page {i} said something", f"chat:page-{i}") for i in range(start, start + 25)]
        for summary, source, ref in notes:
            one.notebook_add(summary, source=source, artifact_ref=ref)
        for text, source in memos:
            one.fastmemo_add(pool, text, source)
        assert len(many.notebook_add_many(notes)) == 25
        assert len(many.fastmemo_add_many(pool, memos)) == 25
        assert _entries(many) == _entries(one)
    assert len(many.events()) < len(one.events())  # a batch is one event until a compaction


def test_one_bad_entry_in_a_batch_stores_none(ws: WorkState) -> None:
    before = snapshot(ws)
    with pytest.raises(InvalidInputError):
        ws.notebook_add_many([("fine", None, None), ("x" * 10_000, None, None)])
    with pytest.raises(InvalidInputError):
        ws.fastmemo_add_many(ws.limits.pool_section, [("fine", None), ("y" * 10_000, None)])
    assert snapshot(ws) == before


def _twins(store: SQLiteStore, clock: Clock, tmp_path: Path) -> list[WorkState]:
    """The same session's working state in ``store`` and in a second store: one written
    in a block, the other call by call, to compare."""
    other = SQLiteStore(tmp_path / "other.db")
    return [WorkState(s, s.ensure_session("default", "s1", "u1", {}), clock=clock)
            for s in (store, other)]


def _fill_pool(state: WorkState) -> None:
    """Add pages' lines to the context pool past its section's limit (it compacts)."""
    for i in range(12):
        state.fastmemo_add_many("pool", [(f"page {i} line", None), (f"more {i}", None)])


def test_writing_reads_each_value_once_and_sees_its_own_writes(
    store: SQLiteStore, clock: Clock, tmp_path: Path
) -> None:
    """Inside writing(), adds and compactions read limits and items once, and what they
    write is what later reads inside see: the same state as the same calls one by one."""
    states = _twins(store, clock, tmp_path)
    ran: list[str] = []
    store._conn.set_trace_callback(ran.append)  # type: ignore[attr-defined]
    with states[0].writing():
        _fill_pool(states[0])  # it compacts in between
        states[0].notebook_add_many([(f"note {i}", None, None) for i in range(30)])
        states[0].plan_add("ship it")
    store._conn.set_trace_callback(None)  # type: ignore[attr-defined]
    _fill_pool(states[1])
    states[1].notebook_add_many([(f"note {i}", None, None) for i in range(30)])
    states[1].plan_add("ship it")
    assert snapshot(states[0]) == snapshot(states[1])
    assert [e.action for e in states[0].events()] == [e.action for e in states[1].events()]
    assert any(e.action == "fastmemo_compact" for e in states[0].events())
    reads = [s for s in ran if s.lstrip().startswith("SELECT")]
    # Every item and value (the limits, next_memo …) in one read.
    assert len(reads) == 1 and "workspace_meta" in reads[0], reads
    # A writer after the block reads again (nothing is kept past its transaction).
    states[0].plan_add("and test it")
    assert [p.text for p in states[0].plan_list()] == ["ship it", "and test it"]


def test_writing_writes_each_value_once_and_the_items_in_one_batch(
    store: SQLiteStore, clock: Clock, tmp_path: Path
) -> None:
    """A block of adds and compactions (one event each) writes ``next_memo`` and the
    items when it ends, once: the same state and events as the same calls one by one."""
    states = _twins(store, clock, tmp_path)
    ran: list[str] = []
    store._conn.set_trace_callback(ran.append)  # type: ignore[attr-defined]
    with states[0].writing():
        _fill_pool(states[0])  # it compacts in between
    store._conn.set_trace_callback(None)  # type: ignore[attr-defined]
    _fill_pool(states[1])
    assert snapshot(states[0]) == snapshot(states[1])
    assert [e.action for e in states[0].events()] == [e.action for e in states[1].events()]
    assert sum(e.action == "fastmemo_compact" for e in states[0].events()) >= 2
    # Before: next_memo written at every add and compaction, the items at each of them.
    assert sum(s.startswith("INSERT INTO workspace_meta") for s in ran) == 1, ran
    assert sum(s.startswith("INSERT INTO workspace_items") for s in ran) == 1, ran
    assert sum(s.startswith("DELETE FROM workspace_items") for s in ran) <= 1, ran
    # Another writer after the block reads what it wrote.
    assert WorkState(store, states[0].session).fastmemo_list() == states[0].fastmemo_list()


def test_a_writing_block_writes_its_events_in_one_statement(
        store: SQLiteStore, session: SessionRecord) -> None:
    # Adds past the section's limit compact in the same block: every event of the block
    # goes in one INSERT, each with the id the log gives it, in order.
    ws = WorkState(store, session, compress=lambda texts: " / ".join(texts))
    ws.pin_add(type="fact", title="first", summary="before the block", source="chat:1")
    ran: list[str] = []
    store._conn.set_trace_callback(ran.append)
    try:
        with ws.writing():
            ws.fastmemo_add_many("user", [(f"user fact {i}", None) for i in range(12)])
            ws.plan_add("ship it")
            inside = ws.version()
    finally:
        store._conn.set_trace_callback(None)
    inserts = [s for s in ran if s.startswith("INSERT INTO workspace_events")]
    assert len(inserts) == 1, inserts  # before: one per event
    events = ws.events()
    assert [e.action for e in events] == ["pin_add", "fastmemo_add", "fastmemo_compact",
                                          "fastmemo_add", "plan_add"]
    ids = [e.id for e in events]
    assert ids == sorted(set(ids)) and inside == ids[-1] == ws.version()
    assert ws.event(ids[2]).after == events[2].after  # each stored as recorded


def test_a_compaction_inside_a_block_returns_its_event_with_its_id(
        store: SQLiteStore, session: SessionRecord) -> None:
    ws = WorkState(store, session, compress=lambda texts: " / ".join(texts),
                   auto_compact=False)
    for i in range(10):
        ws.fastmemo_add("user", f"user fact {i}")
    with ws.writing():
        ws.fastmemo_add("user", "one more")
        event = ws.compact_fastmemo()
        assert event is not None
        assert ws.event(event.id).action == "fastmemo_compact"  # written when asked for
        after = ws.plan_add("later")
    assert ws.events()[-1].id > event.id and after.id == 1


def test_the_log_read_inside_a_writing_block_holds_the_block_s_events(ws: WorkState) -> None:
    # The block's events wait to be written together: reading the log writes them first.
    with ws.writing():
        ws.plan_add("first")
        listed = [e.action for e in ws.events()]
        ws.plan_add("second")
        newest = ws.event(ws.version())
    assert listed == ["plan_add"]
    assert newest.after == {"plan:2": newest.after["plan:2"]}
    assert [e.target for e in ws.events()] == ["plan:1", "plan:2"]
