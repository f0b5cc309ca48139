"""A state machine drives a session with random sequences of operations (issue 11 §4, §5).

Valid operations — add in every accepted form (OpenAI and Anthropic dicts, SDK-like
objects, memci.Message), set_system at any time, add_many, build with every recipe and
small budgets, call_tool with any arguments, search, reopen — never raise. Invalid input
raises a MemciError and stores nothing. After every step the store holds exactly what
was acknowledged, and it stays loadable: a reopened engine counts, builds and exports it.

Deterministic in CI (the tests' hypothesis profile, tests/conftest.py), with a bounded
number of examples and steps (about 20 s). To search harder, run it with
HYPOTHESIS_PROFILE=explore, as often as you like.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import memci
from memci.messages import TextPart, ToolCallPart

# Durability on power loss is not what this machine checks (test_faults does): without an
# fsync per commit it runs three times as many steps in the same time.
SYNC = "NORMAL"
ALL_TOOLS = ["recall_page", "search_memory", "pin_add", "pin_remove", "pin_update",
             "pin_list", "plan_add", "plan_done", "plan_remove", "plan_list", "notebook_add",
             "artifact_get", "file_snippet", "grep"]

# -- values ------------------------------------------------------------------------------

texts = st.text(max_size=40)
said = st.text(min_size=1, max_size=40)  # what a message says: an empty one is refused
words = st.text("abcdefg 汉字上周yesterday", max_size=30)
json_leaves = (st.none() | st.booleans() | st.integers() | texts
               | st.floats(allow_nan=False, allow_infinity=False))
json_values = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(texts, inner, max_size=3), max_leaves=8)
# The caller's own metadata. memci's branch link (``memci_branch``) is refused unless it
# names an earlier message (tests/test_branches.py), and Hypothesis draws the string
# constants of the code it tests as keys: the model leaves that key out.
metadata = st.none() | st.dictionaries(texts.filter(lambda key: key != "memci_branch"),
                                       json_values, max_size=3)
offsets = st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes)))
# Any datetime, with any offset, also at the calendar's ends (where some are out of range).
stamps = (st.datetimes(timezones=st.none() | offsets)
          | st.datetimes(datetime(1, 1, 1), datetime(1, 1, 2), timezones=offsets)
          | st.datetimes(datetime(9999, 12, 30), datetime(9999, 12, 31, 23, 59),
                         timezones=offsets))


def in_range(stamp: datetime) -> bool:
    """The documented rule: accepted when its instant lies within years 1-9999 in UTC."""
    try:
        (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:
        return False
    return True


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"k": value}
    return value


class Attack:
    """A value too deep or too long to print: made when used, shown by its name."""

    def __init__(self, name: str, make: Any) -> None:
        self.name, self.make = name, make

    def __repr__(self) -> str:
        return self.name


def made(value: Any) -> Any:
    return value.make() if isinstance(value, Attack) else value


# Arguments for memci's tools: anything at all, and the wrong things the issue names.
tool_arguments = (
    st.none() | json_values | st.integers() | st.binary(max_size=8)
    | st.dictionaries(st.sampled_from(["index", "query", "k", "id", "ids", "text", "type",
                                       "title", "summary", "source", "ttl", "offset",
                                       "length", "path", "target", "pattern", "scope",
                                       "since", "done", "junk"]),
                      json_values | st.sampled_from(["²", "٣", 2**70, "\ud800", "7", "-1",
                                                     1.0, "2026-01-01", "9" * 30]),
                      max_size=4)
    | st.sampled_from([
        5, [1], '{"a": "\\ud800"}',
        Attack("deep JSON text", lambda: "[" * 100_000 + "]" * 100_000),
        Attack("deep index", lambda: {"index": deep(100_000)}),
        Attack("5000-digit index", lambda: '{"index": ' + "9" * 5000 + "}"),
        Attack("5000-digit quoted index", lambda: {"index": "9" * 5000}),
    ])
)


class SDKMessage:
    """What an SDK's response object looks like to memci: it has ``model_dump``."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def model_dump(self) -> dict[str, Any]:
        return self.data


class BrokenSDKMessage:
    def model_dump(self) -> dict[str, Any]:
        raise ValueError("the SDK object is half-initialized")


# -- the machine ---------------------------------------------------------------------------


class SessionMachine(RuleBasedStateMachine):
    calls = Bundle("calls")  # ids of tool calls made and not answered yet

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="memci-stateful-"))
        (self.dir / "files").mkdir()
        (self.dir / "files" / "notes.txt").write_text("alpha\nbeta\n")
        self.path = self.dir / "memci.db"
        self.engine = memci.Engine.open(self.path, synchronous=SYNC)
        self.stored = 0  # messages acknowledged
        self.open: set[str] = set()
        self.next_call = 0
        self.session: memci.Session

    def teardown(self) -> None:
        self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @initialize(strategy=st.sampled_from(["paged", "oldest", "summarize"]),
                budget=st.sampled_from([400, 4000, 96_000]))
    def open_session(self, strategy: str, budget: int) -> None:
        self.budget = budget
        self.session = self.engine.session(
            "s", user="u", strategy=strategy, max_tokens=budget, tools=ALL_TOOLS,
            file_roots=[str(self.dir / "files")], max_message_bytes=64 * 1024)

    def _call_id(self) -> str:
        self.next_call += 1
        return f"call_{self.next_call}"

    def _stored(self, added: list[memci.Message]) -> None:
        self.stored += len(added)
        for message in added:
            self.open.update(c.id for c in message.tool_calls)
            if message.tool_result is not None:
                self.open.discard(message.tool_result.call_id)

    # -- valid input: never raises --

    @rule(role=st.sampled_from(["user", "assistant", "developer"]), text=said,
          meta=metadata, stamp=st.none() | stamps, name=st.none() | st.text(min_size=1,
                                                                             max_size=8))
    def add_openai(self, role: str, text: str, meta: Any, stamp: datetime | None,
                   name: str | None) -> None:
        message: dict[str, Any] = {"role": role, "content": text}
        if meta is not None:
            message["metadata"] = meta
        if name is not None:
            message["name"] = name
        if stamp is not None:
            message["created_at"] = stamp.isoformat()
        self._add_maybe_out_of_range(message, stamp)

    def _add_maybe_out_of_range(self, message: Any, stamp: datetime | None) -> None:
        if stamp is not None and not in_range(stamp):
            self._refused(message, memci.InvalidTimestampError)
            return
        self._stored([self.session.add(message)])

    @rule(text=st.none() | texts, arguments=st.dictionaries(texts, json_values, max_size=3),
          count=st.integers(1, 3), anthropic=st.booleans())
    def add_tool_calls(self, text: str | None, arguments: dict[str, Any], count: int,
                       anthropic: bool) -> None:
        ids = [self._call_id() for _ in range(count)]
        if anthropic:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            blocks += [{"type": "tool_use", "id": i, "name": "lookup", "input": arguments}
                       for i in ids]
            if text:
                blocks.append({"type": "thinking", "thinking": text, "signature": "sig"})
            message: dict[str, Any] = {"role": "assistant", "content": blocks}
        else:
            message = {"role": "assistant", "content": text, "tool_calls": [
                {"id": i, "type": "function",
                 "function": {"name": "lookup", "arguments": json.dumps(arguments)}}
                for i in ids]}
        self._stored([self.session.add(message)])

    @precondition(lambda self: self.open)
    @rule(data=st.data(), output=texts, is_error=st.booleans(), form=st.sampled_from(
        ["openai", "anthropic", "sdk", "memci"]), then=st.none() | texts)
    def answer_call(self, data: st.DataObject, output: str, is_error: bool, form: str,
                    then: str | None) -> None:
        call = data.draw(st.sampled_from(sorted(self.open)))
        if form == "openai":
            message: Any = {"role": "tool", "tool_call_id": call, "content": output}
        elif form == "anthropic":
            blocks: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": call,
                                             "content": output, "is_error": is_error}]
            if then:
                blocks.append({"type": "text", "text": then})
            message = {"role": "user", "content": blocks}
        elif form == "sdk":
            message = SDKMessage({"role": "tool", "tool_call_id": call, "content": output})
        else:
            message = memci.Message.tool(call, output, is_error=is_error)
        self._stored(self.session.add_many([message]))

    @rule(text=said, form=st.sampled_from(["user", "assistant", "system"]),
          stamp=st.none() | stamps, tokens=st.none() | st.integers(0, 5000),
          meta=metadata)
    def add_memci_message(self, text: str, form: str, stamp: datetime | None,
                          tokens: int | None, meta: Any) -> None:
        message = memci.Message(form, (TextPart(text),),  # type: ignore[arg-type]
                                metadata=meta or {}, created_at=stamp, tokens=tokens)
        self._add_maybe_out_of_range(message, stamp)

    @rule(text=texts, anthropic=st.booleans(), data_uri=st.booleans())
    def add_image(self, text: str, anthropic: bool, data_uri: bool) -> None:
        if anthropic:
            source = ({"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
                      if data_uri else {"type": "url", "url": "https://example.com/a.png"})
            image: dict[str, Any] = {"type": "image", "source": source}
        else:
            url = ("data:image/png;base64,iVBORw0KGgo=" if data_uri
                   else "https://example.com/a.png")
            image = {"type": "image_url", "image_url": {"url": url, "detail": "low"}}
        self._stored([self.session.add(
            {"role": "user", "content": [{"type": "text", "text": text}, image]})])

    @rule(text=said)
    def add_chat_completion(self, text: str) -> None:
        completion = SDKMessage({"id": "x", "object": "chat.completion", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}}]})
        self._stored([self.session.add(completion)])

    @rule(text=said)
    def set_system(self, text: str) -> None:
        self._stored([self.session.set_system(text)])

    @rule(items=st.lists(st.tuples(st.sampled_from(["user", "assistant", "system"]), said),
                         min_size=1, max_size=4), poison=st.booleans())
    def add_many(self, items: list[tuple[str, str]], poison: bool) -> None:
        batch: list[Any] = [{"role": role, "content": text} for role, text in items]
        if poison:  # all or nothing: one bad message and none is stored
            batch.insert(len(batch) // 2, {"role": "user", "content": "x",
                                           "metadata": deep(100_000)})
            self._refused(batch, memci.InvalidMessageError, many=True)
            return
        self._stored(self.session.add_many(batch))

    # -- invalid input: a MemciError, nothing stored --

    @rule(bad=st.sampled_from([
        Attack("deep metadata", lambda: {"role": "user", "content": "x",
                                         "metadata": deep(100_000)}),
        Attack("metadata over max_message_bytes", lambda: {
            "role": "user", "content": "x", "metadata": {"m": "y" * 70_000}}),
        {"role": "user", "content": "x", "created_at": "0001-01-01T00:00:00+01:00"},
        {"role": "user", "content": "x", "created_at": "soon"},
        {"role": "assistant", "tool_calls": [{"id": "z", "type": "function", "function": {
            "name": "f", "arguments": '{"q": "\\ud800"}'}}]},
        Attack("deep tool input", lambda: {"role": "assistant", "content": [
            {"type": "tool_use", "id": "z", "name": "f", "input": deep(100_000)}]}),
        {"role": "tool", "tool_call_id": "never-made", "content": "orphan"},
        {"role": "tool", "tool_call_id": "z", "content": "x", "is_error": "yes"},
        replace(memci.Message.user("x"), tokens="many"),
        replace(memci.Message.user("x"), parts=None),
        replace(memci.Message.user("x"), created_at="str"),
        memci.Message.assistant("", ToolCallPart("z", "f", "[1]")),
        {"role": "user"},  # empty: nothing to send
        {"role": "assistant", "content": ""},
        memci.Message("system", ()),
        BrokenSDKMessage(),
        5,
        "just text",
    ]))
    def add_invalid(self, bad: Any) -> None:
        self._refused(made(bad), memci.InvalidMessageError)

    def _refused(self, bad: Any, error: type[Exception], *, many: bool = False) -> None:
        before = self.session.count()
        try:
            if many:
                self.session.add_many(bad)
            else:
                self.session.add(bad)
        except memci.MemciError as exc:
            assert isinstance(exc, error), (type(exc), exc)
        else:
            raise AssertionError(f"accepted invalid input {bad!r:.80}")
        assert self.session.count() == before

    # -- reading --

    @rule(recipe=st.sampled_from(["chat", "tool_loop", "auto"]),
          budget=st.none() | st.integers(1, 3000))
    def build(self, recipe: str, budget: int | None) -> None:
        try:
            ctx = self.session.build(recipe=recipe, budget=budget)
        except memci.BudgetTooSmallError as exc:
            # Only a budget below its needs, and the budget it names builds.
            ctx = self._too_small(exc, budget, recipe)
            budget = exc.needed
        assert budget is None or ctx.stats.total_tokens <= budget
        json.dumps(ctx.to_openai(), ensure_ascii=False).encode("utf-8")
        json.dumps(ctx.to_anthropic(), ensure_ascii=False).encode("utf-8")

    def _too_small(self, exc: memci.BudgetTooSmallError, budget: int | None,
                   recipe: str = "auto") -> memci.Context:
        assert exc.budget == (budget or self.budget) < exc.needed
        # What the system prompt and the newest messages hold, whole, bounds what they need.
        messages = self.session.messages()
        held = sum(m.tokens or 0 for m in messages[-8:] if m.role != "system")
        system = next((m.tokens or 0 for m in reversed(messages) if m.role == "system"), 0)
        assert exc.needed <= held + system + 200, exc
        ctx = self.session.build(recipe=recipe, budget=exc.needed)
        assert ctx.stats.total_tokens <= exc.needed
        return ctx

    @rule(name=st.sampled_from([*ALL_TOOLS, "nope"]), arguments=tool_arguments)
    def call_tool(self, name: str, arguments: Any) -> None:
        arguments = made(arguments)
        offered = {s.name for s in self.session.tool_specs()}
        if name not in offered:
            try:
                self.session.call_tool(name, arguments)
            except memci.InvalidInputError:
                return
            raise AssertionError(f"{name} is not offered, yet it ran")
        answer = self.session.call_tool(name, arguments)
        assert isinstance(answer, str)
        answer.encode("utf-8")

    @rule(call=st.sampled_from([
        ("recall_page", {"index": 1}), ("recall_page", {"index": "2"}),
        ("pin_add", {"type": "fact", "title": "t", "summary": "s", "source": "chat:1"}),
        ("pin_remove", {"ids": [1]}), ("plan_add", {"text": "do it"}),
        ("plan_done", {"id": 1}), ("notebook_add", {"summary": "noted"}),
        ("search_memory", {"query": "alpha", "since": "2000-01-01"}),
        ("file_snippet", {"path": "notes.txt"}), ("grep", {"target": "notes.txt",
                                                           "pattern": "a"}),
    ]))
    def call_tool_validly(self, call: tuple[str, dict[str, Any]]) -> None:
        name, arguments = call
        if name in {s.name for s in self.session.tool_specs()}:
            assert isinstance(self.session.call_tool(name, arguments), str)

    @rule(query=words, k=st.integers(1, 50), scope=st.sampled_from(["session", "user",
                                                                    "tenant"]))
    def search(self, query: str, k: int, scope: str) -> None:
        for hit in self.session.search(query, k=k, scope=scope):
            assert hit.message.role in ("system", "user", "assistant", "tool")

    @rule()
    def reopen(self) -> None:
        self.engine.close()
        self.engine = memci.Engine.open(self.path, synchronous=SYNC)
        self.session = self.engine.session("s")
        out = io.StringIO()
        assert self.session.export_jsonl(out) == self.stored
        try:
            self.session.build()
        except memci.BudgetTooSmallError as exc:
            self._too_small(exc, None)

    @invariant()
    def holds_what_was_acknowledged(self) -> None:
        if hasattr(self, "session"):
            assert self.session.count() == self.stored
            assert len(self.session.messages()) == self.stored


SessionMachine.TestCase.settings = settings(
    max_examples=30, stateful_step_count=40,
    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestSessionMachine = SessionMachine.TestCase
