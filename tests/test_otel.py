"""OpenTelemetry: memci's spans in the SDK's in-memory exporter, and none without a tracer.

The spans come from real sessions over real SQLite files, a real job queue, memci's LLM
clients (sync and async) and OpenAI embedder against the fake model server on 127.0.0.1,
and a real message index with a deterministic embedder. Kinds and attributes are held to
the GenAI semantic conventions: a model call over the network is CLIENT with the usage the
provider reported; memci's own work is INTERNAL, described by ``memci.*`` attributes.
OpenTelemetry's global provider can be set once per process, so
the fixture resets the API's globals around each test, as OpenTelemetry's own test
utilities do (``opentelemetry.test.globals_test.reset_trace_globals``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs opentelemetry-sdk (the dev extra)")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util._once import Once

import memci
from memci import _trace
from memci.errors import InvalidMessageError, LLMHTTPError
from memci.llm import AsyncOpenAIChatClient, OpenAIChatClient
from memci.memory import MessageIndex, OpenAIEmbedder
from memci.store import SQLiteStore
from memci.summarize import JobQueue

from .fakellm import FakeLLM
from .test_retrieval import HashEmbedder, add
from .test_server import ROOT, subprocess_env


def _reset_globals() -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _reset_globals()
    trace.set_tracer_provider(provider)
    try:
        yield exporter
    finally:
        _reset_globals()
        provider.shutdown()


@pytest.fixture
def untraced() -> Iterator[None]:
    _reset_globals()
    yield
    _reset_globals()


def _named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _no_model_usage_on_memcis_own_spans(exporter: InMemorySpanExporter) -> None:
    """Only a CLIENT span (a model's answer) may carry gen_ai.usage.* or a request model."""
    for span in exporter.get_finished_spans():
        if span.kind is SpanKind.CLIENT:
            continue
        assert span.kind is SpanKind.INTERNAL, span.name
        model_keys = [k for k in _attrs(span)
                      if k.startswith(("gen_ai.usage.", "gen_ai.request.", "gen_ai.response."))]
        assert model_keys == [], (span.name, model_keys)


def _chat(session: memci.Session, rounds: int) -> None:
    session.set_system("You are terse.")
    for i in range(rounds):
        session.add({"role": "user", "content": f"question {i} " + "about rivers " * 40})
        session.add({"role": "assistant", "content": f"answer {i} " + "water flows " * 40})


def test_add_build_search_and_tool_spans(
    spans: InMemorySpanExporter, engine: memci.Engine
) -> None:
    session = engine.session("chat-1", model="gpt-4o-mini")
    _chat(session, 30)
    context = session.build(budget=3000)
    hits = session.search("rivers", k=5)
    recalled = session.call_tool("recall_page", {"index": 1})
    refused = session.call_tool("recall_page", {"index": 10_000})

    adds = _named(spans, "memci.add")
    assert len(adds) == 61  # the system message and 30 rounds, one add each
    assert _attrs(adds[-1])["gen_ai.conversation.id"] == "chat-1"
    assert _attrs(adds[-1])["memci.messages"] == 1
    assert _attrs(adds[-1])["memci.seq"] == 61
    assert _attrs(adds[-1])["memci.tokens"] == session.messages()[-1].tokens

    (build,) = _named(spans, "memci.build")
    got = _attrs(build)
    stats = context.stats
    assert build.kind is SpanKind.INTERNAL
    assert got["gen_ai.conversation.id"] == "chat-1"
    assert got["memci.tenant"] == "default"
    # the built context is memci's own figure, not a model's usage
    assert got["memci.model"] == "gpt-4o-mini"
    assert got["memci.context.tokens"] == stats.total_tokens
    assert got["memci.budget"] == 3000 == stats.budget
    assert got["memci.tokens_saved"] == stats.saved_tokens > 0
    for segment, tokens in stats.sections.items():
        assert got[f"memci.tokens.{segment}"] == tokens
    assert {"memci.tokens.system", "memci.tokens.recent"} <= set(got)
    after = session.stats()
    assert got["memci.archived"] == after.archived > 0
    assert got["memci.evicted"] == after.evicted
    assert got["memci.recalled"] == 0
    assert list(got["memci.events"]) == list(stats.events)
    assert any(e.startswith("archive") for e in got["memci.events"])

    (search,) = _named(spans, "memci.search")
    assert _attrs(search)["memci.search.hits"] == len(hits) > 0
    assert _attrs(search)["memci.search.k"] == 5
    assert "rivers" not in str(_attrs(search))  # figures only, never the query

    ok, bad = _named(spans, "execute_tool recall_page")
    assert _attrs(ok)["gen_ai.operation.name"] == "execute_tool"
    assert _attrs(ok)["gen_ai.tool.name"] == "recall_page"
    assert _attrs(ok)["memci.tool.result_chars"] == len(recalled)
    assert ok.status.status_code == StatusCode.UNSET
    assert refused.startswith("error:")
    assert bad.status.status_code == StatusCode.ERROR
    assert _attrs(bad)["error.type"] == "tool_error"

    # the recall shows in the session's counts on the next build
    session.build(budget=3000)
    assert _attrs(_named(spans, "memci.build")[-1])["memci.recalled"] == 1
    assert {s.kind for s in spans.get_finished_spans()} == {SpanKind.INTERNAL}
    _no_model_usage_on_memcis_own_spans(spans)


def test_a_refused_add_is_an_error_span_and_stores_nothing(
    spans: InMemorySpanExporter, engine: memci.Engine
) -> None:
    session = engine.session("s")
    with pytest.raises(InvalidMessageError):
        session.add_many([{"role": "user", "content": "fine"}, {"role": "wizard"}])
    (span,) = _named(spans, "memci.add")
    assert span.status.status_code == StatusCode.ERROR
    assert [e.name for e in span.events] == ["exception"]
    assert _attrs(span)["error.type"] == "UnknownRoleError"
    assert session.messages() == []


def test_background_job_spans(spans: InMemorySpanExporter, store: SQLiteStore) -> None:
    queue = JobQueue(store, backoff=0.0)
    queue.register("double", lambda job: job.payload["n"] * 2)

    def broken(job: Any) -> Any:
        raise RuntimeError("no luck")

    queue.register("broken", broken)
    queue.submit("double", "d1", {"n": 21})
    queue.submit("broken", "b1", {}, max_attempts=1)
    assert queue.run_pending() == 2
    (done,) = _named(spans, "memci.job double")
    assert _attrs(done) == {"memci.job.kind": "double", "memci.job.key": "d1",
                            "memci.job.attempt": 1, "memci.job.outcome": "done"}
    (failed,) = _named(spans, "memci.job broken")
    assert _attrs(failed)["memci.job.outcome"] == "failed"


def _check_chat_span(chat: ReadableSpan, fake: FakeLLM, reply: Any) -> None:
    got = _attrs(chat)
    assert chat.kind is SpanKind.CLIENT
    assert got["gen_ai.operation.name"] == "chat"
    assert got["gen_ai.provider.name"] == "openai"
    assert got["gen_ai.request.model"] == "small-model"
    assert got["gen_ai.request.max_tokens"] == 64
    assert got["gen_ai.request.temperature"] == 0.5
    assert got["gen_ai.response.model"] == reply.model
    assert got["server.address"] == "127.0.0.1" and got["server.port"] == fake.port
    # the usage is the provider's own answer, read from its reply
    usage = fake.requests[-1]
    assert usage.path.endswith("/chat/completions")
    assert got["gen_ai.usage.input_tokens"] == reply.input_tokens is not None
    assert got["gen_ai.usage.output_tokens"] == reply.output_tokens is not None
    assert got["gen_ai.response.id"] == reply.raw["id"]
    assert "summarize" not in str(got)


def test_chat_span_of_memcis_own_model_call(spans: InMemorySpanExporter) -> None:
    with FakeLLM() as fake, OpenAIChatClient("small-model", base_url=fake.base_url,
                                             api_key="k") as client:
        reply = client.complete([{"role": "user", "content": "summarize this"}],
                                max_tokens=64, temperature=0.5)
        (chat,) = _named(spans, "chat small-model")
        _check_chat_span(chat, fake, reply)


def test_chat_span_of_the_async_client(spans: InMemorySpanExporter) -> None:
    async def call(fake: FakeLLM) -> Any:
        async with AsyncOpenAIChatClient("small-model", base_url=fake.base_url,
                                         api_key="k") as client:
            return await client.complete([{"role": "user", "content": "summarize this"}],
                                         max_tokens=64, temperature=0.5)

    with FakeLLM() as fake:
        reply = anyio.run(call, fake)
        (chat,) = _named(spans, "chat small-model")
        _check_chat_span(chat, fake, reply)


def test_a_failed_model_call_is_a_client_span_with_its_error_type(
    spans: InMemorySpanExporter
) -> None:
    with FakeLLM() as fake, OpenAIChatClient("small-model", base_url=fake.base_url,
                                             api_key="k", max_retries=0) as client:
        fake.status(400)
        with pytest.raises(LLMHTTPError):
            client.complete([{"role": "user", "content": "x"}])
    (chat,) = _named(spans, "chat small-model")
    assert chat.kind is SpanKind.CLIENT
    assert chat.status.status_code == StatusCode.ERROR
    assert _attrs(chat)["error.type"] == "LLMHTTPError"
    assert not [k for k in _attrs(chat) if k.startswith("gen_ai.usage.")]


def test_embedding_spans(spans: InMemorySpanExporter, store: SQLiteStore) -> None:
    record = store.ensure_session("t", "dense", "u", {})
    index = MessageIndex(store, embedder=HashEmbedder())
    add(store, record, index, "kayak trip on the fjord", "ok", "apples and pears", "fine")
    assert index.embed_pending() == 4
    index.search("fjord kayak", sessions=[record.id])
    backlog, query = _named(spans, "embeddings hash")
    # a model in this process: memci's own work, not a call over the network
    assert backlog.kind is SpanKind.INTERNAL
    assert _attrs(backlog)["gen_ai.operation.name"] == "embeddings"
    assert _attrs(backlog)["gen_ai.provider.name"] == "test"
    assert _attrs(backlog)["memci.texts"] == 4
    assert _attrs(backlog)["gen_ai.embeddings.dimension.count"] == 64
    assert _attrs(query)["memci.texts"] == 1


def test_a_remote_embedder_is_a_client_span(spans: InMemorySpanExporter) -> None:
    with FakeLLM() as fake, httpx.Client() as http:
        embedder = OpenAIEmbedder("tiny-embed", base_url=fake.openai_base_url, api_key="k",
                                  http_client=http)
        vectors = _trace.embed(embedder, ["one", "two"])
        (span,) = _named(spans, "embeddings tiny-embed")
        got = _attrs(span)
        assert span.kind is SpanKind.CLIENT
        assert got["gen_ai.provider.name"] == "openai"
        assert got["gen_ai.request.model"] == "tiny-embed"
        assert got["server.address"] == "127.0.0.1" and got["server.port"] == fake.port
        assert got["gen_ai.embeddings.dimension.count"] == len(vectors[0])


def test_no_tracer_provider_means_no_spans_and_no_work(
    untraced: None, engine: memci.Engine
) -> None:
    # The API's default provider is a proxy; memci makes no span and no tracer from it.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert _trace.span("memci.build") is _trace.span("execute_tool", "grep") is _trace._OFF
    session = engine.session("quiet")
    _chat(session, 3)
    session.build()
    assert _trace._tracer() is None
    # A no-op provider set on purpose is the same as none.
    trace.set_tracer_provider(trace.NoOpTracerProvider())
    assert _trace.span("memci.build") is _trace._OFF
    session.build()
    assert _trace._tracer() is None
    assert _trace._seen == (trace.get_tracer_provider(), None)
    # A provider set later, while memci runs, is used from the next call on.
    _reset_globals()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    session.build()
    assert [s.name for s in exporter.get_finished_spans()] == ["memci.build"]
    provider.shutdown()


def test_memci_runs_without_opentelemetry_installed(tmp_path: Path) -> None:
    script = f"""
import sys
sys.modules["opentelemetry"] = None  # as if not installed: importing it fails
import memci
from memci import _trace
with memci.Engine.open({str(tmp_path / "n.db")!r}) as engine:
    s = engine.session("s")
    s.add({{"role": "user", "content": "hi"}})
    s.build(); s.search("hi"); s.call_tool("recall_page", {{"index": 1}})
assert _trace.span("memci.build") is _trace._OFF
assert _trace._api is None  # nothing imported the API: memci never tried to
import os
os.environ["OTEL_PYTHON_TRACER_PROVIDER"] = "sdk_tracer_provider"  # now it must try
assert _trace.span("memci.build") is _trace._OFF
assert _trace._api is False
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=subprocess_env(), cwd=str(ROOT), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_the_example_runs_offline() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "otel_spans.py")],
                          capture_output=True, text=True, env=subprocess_env(), cwd=str(ROOT),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "memci.build INTERNAL {" in done.stdout and "'memci.archived'" in done.stdout
    assert "execute_tool recall_page" in done.stdout
