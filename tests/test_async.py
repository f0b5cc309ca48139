"""AsyncEngine / AsyncSession (issue 15 item 2): the sync classes' results, awaited.

The parity test runs one whole scenario (the agent's loop with its own tools and memci's,
through the official SDKs' sync and async clients, in Chat Completions, Anthropic and
Responses form, archiving on a small window, searching, memci's tools, refusals) through
Engine / Session and through AsyncEngine / AsyncSession, each on its own store, and
compares everything: what reached the model server, what was stored, every context,
hit, tool output, error and figure. Then what only async has: the event loop is never
blocked (a slow-callback detector that does catch a blocking build), 50 sessions at
once, calls on one session kept in order, and a cancelled call that stores all or nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import memci
from memci.messages import to_wire
from tests.fakellm import FakeLLM, Reply

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
TIME_TOOL = {"name": "get_time", "description": "Local time in a city",
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
HISTORY = [m for i in range(24) for m in (
    {"role": "user", "content": f"Note {i}: the meeting about project {i} moved to room {i}."},
    {"role": "assistant", "content": f"Noted: project {i} meets in room {i} from now on."})]


def get_weather(city: str) -> str:
    """The agent's own tool."""
    return f"Sunny in {city}, 21 °C"


def _script(fake: FakeLLM) -> None:
    """Each turn: the model calls the agent's tool and memci's, then answers."""
    for city in ("Paris", "Rome", "Oslo"):
        fake.push(Reply("", calls=(("get_weather", {"city": city}),
                                   ("search_memory", {"query": f"room {city}"}))),
                  Reply(f"It is sunny in {city}."))


# -- the agent's loop, written as an agent writes it: once for sync, once for async ----------


def chat_turn(s: memci.Session, client: openai.OpenAI, question: str) -> str:
    s.add({"role": "user", "content": question})
    while True:
        ctx = s.build()
        reply = client.chat.completions.create(model="m", **ctx.to_openai()).choices[0].message
        s.add(reply)
        if not reply.tool_calls:
            return reply.content or ""
        for call in reply.tool_calls:
            assert call.type == "function"
            output = (s.call_tool(call.function.name, call.function.arguments)
                      if s.handles(call) else get_weather(**json.loads(call.function.arguments)))
            s.add({"role": "tool", "tool_call_id": call.id, "content": output})


async def achat_turn(s: memci.AsyncSession, client: openai.AsyncOpenAI, question: str) -> str:
    await s.add({"role": "user", "content": question})
    while True:
        ctx = await s.build()
        reply = (await client.chat.completions.create(model="m", **ctx.to_openai())
                 ).choices[0].message
        await s.add(reply)
        if not reply.tool_calls:
            return reply.content or ""
        for call in reply.tool_calls:
            assert call.type == "function"
            output = (await s.call_tool(call.function.name, call.function.arguments)
                      if s.handles(call) else get_weather(**json.loads(call.function.arguments)))
            await s.add({"role": "tool", "tool_call_id": call.id, "content": output})


def claude_turn(s: memci.Session, client: anthropic.Anthropic, question: str) -> str:
    s.add({"role": "user", "content": question})
    while True:
        ctx = s.build()
        reply = client.messages.create(model="m", max_tokens=200, **ctx.to_anthropic())
        s.add(reply)
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in reply.content if b.type == "text")
        results = [{"type": "tool_result", "tool_use_id": b.id,
                    "content": s.call_tool(b.name, b.input) if s.handles(b)
                    else get_weather(**b.input)} for b in calls]
        s.add({"role": "user", "content": results})


async def aclaude_turn(
    s: memci.AsyncSession, client: anthropic.AsyncAnthropic, question: str
) -> str:
    await s.add({"role": "user", "content": question})
    while True:
        ctx = await s.build()
        reply = await client.messages.create(model="m", max_tokens=200, **ctx.to_anthropic())
        await s.add(reply)
        calls = [b for b in reply.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in reply.content if b.type == "text")
        results = [{"type": "tool_result", "tool_use_id": b.id,
                    "content": await s.call_tool(b.name, b.input) if s.handles(b)
                    else get_weather(**b.input)} for b in calls]
        await s.add({"role": "user", "content": results})


def responses_turn(s: memci.Session, client: openai.OpenAI, question: str) -> str:
    s.add({"role": "user", "content": question})
    while True:
        reply = client.responses.create(model="m", **s.build().to_responses())
        s.add(reply.output)
        calls = [i for i in reply.output if i.type == "function_call"]
        if not calls:
            return reply.output_text
        s.add_many([{"type": "function_call_output", "call_id": c.call_id,
                     "output": s.call_tool(c.name, c.arguments) if s.handles(c)
                     else get_weather(**json.loads(c.arguments))} for c in calls])


async def aresponses_turn(
    s: memci.AsyncSession, client: openai.AsyncOpenAI, question: str
) -> str:
    await s.add({"role": "user", "content": question})
    while True:
        reply = await client.responses.create(model="m", **(await s.build()).to_responses())
        await s.add(reply.output)
        calls = [i for i in reply.output if i.type == "function_call"]
        if not calls:
            return reply.output_text
        await s.add_many([{"type": "function_call_output", "call_id": c.call_id,
                           "output": await s.call_tool(c.name, c.arguments) if s.handles(c)
                           else get_weather(**json.loads(c.arguments))} for c in calls])


# -- comparing results ------------------------------------------------------------------------

# Wall-clock values: when a message was stored, how long a build took.
_TIMES = {"created_at", "build_ms", "mean_build_ms", "at", "updated_at", "expires_at",
          "created", "updated", "valid_from", "exported_at"}


def plain(value: Any) -> Any:
    """``value`` as comparable plain data, wall-clock fields left out."""
    if isinstance(value, memci.Message):
        return plain(to_wire(value))
    if isinstance(value, memci.Context):
        return {"openai": value.to_openai(), "anthropic": value.to_anthropic(),
                "responses": value.to_responses(), "stats": plain(value.stats),
                "segments": plain(list(value.segments))}
    if isinstance(value, BaseException):
        return {"error": type(value).__name__, "says": str(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items() if k not in _TIMES}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


Step = Callable[[Any], Any]


def _record(results: list[Any], value: Any) -> None:
    results.append(plain(value))


def run_sync(path: Path, fake: FakeLLM) -> tuple[list[Any], list[Any]]:
    results: list[Any] = []
    engine = memci.Engine.open(path, workers=0)
    try:
        s = engine.session("parity", user="u1", context_window=2400, tools=[WEATHER])
        _record(results, s.set_system("You are a helpful assistant."))
        _record(results, s.add_many(HISTORY))
        with openai.OpenAI(base_url=fake.openai_base_url, api_key="k", max_retries=0) as oai, \
                anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key="k",
                                    max_retries=0) as claude:
            _record(results, chat_turn(s, oai, "Weather in Paris?"))
            _record(results, claude_turn(s, claude, "And in Rome?"))
            _record(results, responses_turn(s, oai, "And in Oslo?"))
        _record(results, s.build(tools=[WEATHER, TIME_TOOL], recipe="chat"))
        _record(results, s.build(budget=1500))
        _record(results, s.search("room 7 meeting", k=5, now=NOW))
        _record(results, s.search("Paris", k=3, scope="user", now=NOW))
        _record(results, s.call_tool("recall_page", {"page": 2}))
        _record(results, s.call_tool("search_memory", {"query": "project 3"}))
        _record(results, s.build())
        for bad in (lambda: s.add({"role": "nobody", "content": "x"}),
                    lambda: s.build(tools=[{"name": "search_memory", "input_schema": {
                        "type": "object"}}]),
                    lambda: s.build(budget=-1),
                    lambda: s.call_tool("recall_page", {"page": "x"})):
            try:
                _record(results, bad())
            except memci.MemciError as exc:
                _record(results, exc)
        _record(results, s.messages())
        _record(results, [s.count(), s.branch_seqs(), s.page_of(20), s.place_of_page(1)])
        _record(results, [s.pages(), s.events(), s.stats(), s.export_state()])
        _record(results, [s.tools("anthropic"), s.agent_tools, s.system_prompt,
                          s.tools("responses", every=True), s.tool_specs(every=True)])
    finally:
        engine.close()
    return results, [r.json for r in fake.requests]


async def run_async(path: Path, fake: FakeLLM) -> tuple[list[Any], list[Any]]:
    results: list[Any] = []
    engine = await memci.AsyncEngine.open(path, workers=0)
    try:
        s = await engine.session("parity", user="u1", context_window=2400, tools=[WEATHER])
        _record(results, await s.set_system("You are a helpful assistant."))
        _record(results, await s.add_many(HISTORY))
        async with openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="k",
                                      max_retries=0) as oai, \
                anthropic.AsyncAnthropic(base_url=fake.anthropic_base_url, api_key="k",
                                         max_retries=0) as claude:
            _record(results, await achat_turn(s, oai, "Weather in Paris?"))
            _record(results, await aclaude_turn(s, claude, "And in Rome?"))
            _record(results, await aresponses_turn(s, oai, "And in Oslo?"))
        _record(results, await s.build(tools=[WEATHER, TIME_TOOL], recipe="chat"))
        _record(results, await s.build(budget=1500))
        _record(results, await s.search("room 7 meeting", k=5, now=NOW))
        _record(results, await s.search("Paris", k=3, scope="user", now=NOW))
        _record(results, await s.call_tool("recall_page", {"page": 2}))
        _record(results, await s.call_tool("search_memory", {"query": "project 3"}))
        _record(results, await s.build())
        bads: list[Callable[[], Awaitable[Any]]] = [
            lambda: s.add({"role": "nobody", "content": "x"}),
            lambda: s.build(tools=[{"name": "search_memory", "input_schema": {
                "type": "object"}}]),
            lambda: s.build(budget=-1),
            lambda: s.call_tool("recall_page", {"page": "x"})]
        for bad in bads:
            try:
                _record(results, await bad())
            except memci.MemciError as exc:
                _record(results, exc)
        _record(results, await s.messages())
        _record(results, [await s.count(), await s.branch_seqs(), await s.page_of(20),
                          await s.place_of_page(1)])
        _record(results, [await s.pages(), await s.events(), await s.stats(),
                          await s.export_state()])
        _record(results, [await s.tools("anthropic"), s.agent_tools, await s.system_prompt(),
                          await s.tools("responses", every=True), s.tool_specs(every=True)])
    finally:
        await engine.close()
    return results, [r.json for r in fake.requests]


def test_the_whole_loop_gives_the_same_results_sync_and_async(
    tmp_path: Path, fake: FakeLLM
) -> None:
    _script(fake)
    expected, sent = run_sync(tmp_path / "sync.db", fake)
    fake.reset()
    _script(fake)
    got, async_sent = asyncio.run(run_async(tmp_path / "async.db", fake))
    assert len(sent) == 6 and async_sent == sent  # what reached the model, byte for byte
    assert len(got) == len(expected)
    for i, (a, b) in enumerate(zip(got, expected, strict=True)):
        assert a == b, f"step {i} differs"
    # The scenario did what it is meant to exercise.
    events = expected[18][1]
    assert any(e["kind"] == "archive" for e in events)
    assert [e["error"] for e in expected if isinstance(e, dict) and "error" in e] == [
        "UnknownRoleError", "ToolNameClashError", "ConfigError"]
    assert expected[15].startswith("error:")  # recall_page with a bad page: answered
    assert expected[2:5] == ["It is sunny in Paris.", "It is sunny in Rome.",
                             "It is sunny in Oslo."]


# -- the loop is never blocked ---------------------------------------------------------------

# Seconds one step of the loop may take before asyncio's debug mode reports it: well above
# what a busy machine's scheduling adds to a step, well below a first build of the big
# session (about a second), which a blocking call would hold the loop for.
SLOW = 0.3


def _big_session(engine: memci.Engine) -> None:
    """A long session never built: its first build catches up (a page a batch is no bulk
    write, which would be paged when written)."""
    s = engine.session("big", context_window=400_000)
    history = [{"role": "user" if i % 2 == 0 else "assistant",
                "content": f"message {i}: " + "words of a long conversation " * 40}
               for i in range(3000)]
    for i in range(0, len(history), 2):
        s.add_many(history[i:i + 2])


def _slow_steps(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "asyncio" and "Executing" in r.getMessage()]


async def _in_debug_mode(work: Callable[[], Awaitable[None]]) -> None:
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = SLOW
    await work()


def test_a_blocking_build_is_caught_by_the_detector(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The detector works: the sync build called inside the loop is reported."""
    with memci.Engine.open(db_path, workers=0) as engine:
        _big_session(engine)

    async def work() -> None:
        async with await memci.AsyncEngine.open(db_path, workers=0) as engine:
            s = await engine.session("big")
            started = time.perf_counter()
            s.sync.build()  # blocks the loop: what the async API must never do
            assert time.perf_counter() - started > SLOW

    caplog.set_level(logging.WARNING, logger="asyncio")
    asyncio.run(_in_debug_mode(work))
    assert _slow_steps(caplog)


def test_no_call_blocks_the_event_loop(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with memci.Engine.open(db_path, workers=0) as engine:
        _big_session(engine)

    async def work() -> None:
        async with await memci.AsyncEngine.open(db_path, workers=0) as engine:
            s = await engine.session("big")
            started = time.perf_counter()
            await s.build()  # a first build of a big session: long, in a worker thread
            assert time.perf_counter() - started > SLOW
            await s.add({"role": "user", "content": "and now?"})
            await asyncio.gather(s.build(), s.search("long conversation", k=5),
                                 s.messages(), s.stats(), s.pages(), s.events())
            other = await engine.session("other", tools=[WEATHER])
            await other.add_many(HISTORY)
            await asyncio.gather(other.build(), s.build(), other.call_tool(
                "search_memory", {"query": "room 3"}))
            await engine.sessions()

    caplog.set_level(logging.WARNING, logger="asyncio")
    asyncio.run(_in_debug_mode(work))
    assert _slow_steps(caplog) == []


# -- many sessions, one session, cancellation ------------------------------------------------


def test_fifty_sessions_at_once(db_path: Path) -> None:
    async def one(engine: memci.AsyncEngine, i: int) -> tuple[int, list[str]]:
        s = await engine.session(f"s{i}", user=f"u{i % 5}")
        await s.set_system("You are a helpful assistant.")
        for turn in range(4):
            await s.add({"role": "user", "content": f"session {i} turn {turn}"})
            ctx = await s.build()
            assert ctx.stats.total_tokens <= ctx.stats.budget
            await s.add({"role": "assistant", "content": f"answer {i}.{turn}"})
        return i, [m.content for m in await s.messages()]

    async def run() -> list[tuple[int, list[str]]]:
        async with await memci.AsyncEngine.open(db_path, workers=0, threads=8) as engine:
            return await asyncio.gather(*(one(engine, i) for i in range(50)))

    for i, contents in asyncio.run(run()):
        assert contents == ["You are a helpful assistant."] + [
            text for turn in range(4)
            for text in (f"session {i} turn {turn}", f"answer {i}.{turn}")]


def test_calls_on_one_session_run_in_the_order_they_were_awaited(db_path: Path) -> None:
    async def run() -> list[str]:
        async with await memci.AsyncEngine.open(db_path, workers=0, threads=4) as engine:
            s = await engine.session("one")
            await asyncio.gather(*(s.add({"role": "user" if i % 2 == 0 else "assistant",
                                          "content": f"m{i}"}) for i in range(60)))
            return [m.content for m in await s.messages()]

    assert asyncio.run(run()) == [f"m{i}" for i in range(60)]


def test_a_cancelled_call_stores_all_or_nothing_and_the_session_goes_on(
    db_path: Path,
) -> None:
    batches = [[{"role": "user", "content": f"batch {b} message {i}"} for i in range(50)]
               for b in range(20)]

    async def run() -> tuple[list[str], list[bool]]:
        async with await memci.AsyncEngine.open(db_path, workers=0, threads=2) as engine:
            s = await engine.session("c")
            tasks = [asyncio.create_task(s.add_many(batch)) for batch in batches]
            await asyncio.sleep(0)  # batch 0 is in a worker thread; the others wait in turn
            for task in (tasks[0], *tasks[10:]):
                task.cancel()
            done = await asyncio.gather(*tasks, return_exceptions=True)
            await s.add({"role": "assistant", "content": "still here"})
            return ([m.content for m in await s.messages()],
                    [isinstance(d, asyncio.CancelledError) for d in done])

    contents, cancelled = asyncio.run(run())
    assert cancelled == [True] + [False] * 9 + [True] * 10
    # Batch 0 was under way when its task was cancelled: it was finished, whole. The
    # cancelled ones that had not started never ran. Nothing half-stored, order kept.
    assert contents == [m["content"] for batch in batches[:10] for m in batch] + ["still here"]


# -- the engine and its errors ---------------------------------------------------------------


def test_a_closed_engine_refuses_calls(db_path: Path) -> None:
    async def run() -> None:
        engine = await memci.AsyncEngine.open(db_path, workers=0)
        s = await engine.session("s")
        await engine.close()
        await engine.close()  # twice is fine
        with pytest.raises(memci.StoreError, match="closed"):
            await s.add({"role": "user", "content": "late"})
        with pytest.raises(memci.StoreError, match="closed"):
            await engine.session("t")

    asyncio.run(run())


@pytest.mark.parametrize("threads", [0, -1, True, 1.5, "4"])
def test_bad_thread_counts_are_refused(db_path: Path, threads: Any) -> None:
    async def run() -> None:
        await memci.AsyncEngine.open(db_path, threads=threads)

    with pytest.raises(memci.ConfigError, match="threads"):
        asyncio.run(run())


def test_async_methods_match_the_sync_ones() -> None:
    """Every public method of Session and Engine has its async form (or a reason not to)."""
    sync_only = {"work_state"}  # its objects do I/O: AsyncSession.run(lambda s: ...) reaches them
    for sync_class, async_class, left in ((memci.Session, memci.AsyncSession, sync_only),
                                          (memci.Engine, memci.AsyncEngine,
                                           {"memory", "gatherer"})):
        names = {n for n in vars(sync_class) if not n.startswith("_")}
        missing = names - set(dir(async_class)) - left
        assert not missing, f"{async_class.__name__} lacks {sorted(missing)}"


def test_async_methods_take_the_sync_methods_arguments() -> None:
    for sync_class, async_class in ((memci.Session, memci.AsyncSession),
                                    (memci.Engine, memci.AsyncEngine)):
        for name, member in vars(sync_class).items():
            if name.startswith("_") or not callable(member) or not hasattr(async_class, name):
                continue
            sync = inspect.signature(member).parameters
            given = inspect.signature(getattr(async_class, name)).parameters
            assert [(p.name, p.kind, p.default) for p in sync.values()] == [
                (p.name, p.kind, p.default) for p in given.values()
                if p.name in sync], f"{async_class.__name__}.{name}"
            assert set(sync) <= set(given), f"{async_class.__name__}.{name}"


def test_run_reaches_what_has_no_awaited_form(db_path: Path) -> None:
    async def run() -> list[str]:
        async with await memci.AsyncEngine.open(db_path, workers=0) as engine:
            s = await engine.session("s")
            await s.run(lambda sync: sync.work_state().pin_add(
                "fact", "deadline", "the deadline is Friday", source="chat:1"))
            return [p.summary for p in await s.run(lambda sync: sync.work_state().pin_list())]

    assert asyncio.run(run()) == ["the deadline is Friday"]


def test_async_engine_open_takes_every_argument_of_engine_open() -> None:
    sync = inspect.signature(memci.Engine.open).parameters
    given = inspect.signature(memci.AsyncEngine.open).parameters
    assert set(sync) <= set(given), set(sync) - set(given)
    for name, parameter in sync.items():
        assert given[name].default == parameter.default, name
        assert given[name].kind == parameter.kind, name


def test_deleting_through_the_async_api(tmp_path: Path) -> None:
    async def main() -> None:
        async with await memci.AsyncEngine.open(tmp_path / "m.db") as engine:
            session = await engine.session("s", user="ana")
            await session.add({"role": "user", "content": "my code is zebra-42"})
            await session.add({"role": "assistant", "content": "noted"})
            popped = await session.pop()
            assert popped.content == "noted" and await session.count() == 1
            erased = await engine.erase_user("ana")
            assert erased.action == "erase_user" and sum(erased.counts.values()) > 0
            assert "zebra" not in repr(erased) and "ana" != erased.user
            assert {e.action for e in await engine.erasures()} == {"retract", "erase_user"}
            assert await engine.sessions() == []

    asyncio.run(main())
