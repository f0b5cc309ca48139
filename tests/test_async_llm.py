"""memci's async LLM and embedder clients against the real local server (tests/fakellm.py).

Parity first: every scripted scenario (a reply, retries, exhausted retries, a client
error, dropped connections, a malformed reply, a timeout) runs through the sync client
and the async one, and both must send the same request bytes and end in the same
Completion or the same typed error. Then what only async can show: many calls in flight
at once on one event loop, and the loop kept free while a call waits to retry.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from memci.errors import ConfigError, LLMError, LLMHTTPError
from memci.llm import (
    AnthropicClient,
    AsyncAnthropicClient,
    AsyncLLMClient,
    AsyncOpenAIChatClient,
    Completion,
    OpenAIChatClient,
    SyncLLMClient,
    async_client_from_env,
    client_from_env,
)
from memci.memory import AsyncOpenAIEmbedder, OpenAIEmbedder
from memci.messages import Message, ToolCallPart
from tests.fakellm import FakeLLM, fake_embedding

FAST: dict[str, Any] = {"backoff": 0.001, "max_backoff": 0.005}
CONVERSATION = [
    Message.system("Summarize tersely."),
    Message.user("What is in the build log?"),
    Message.assistant("Let me look.", ToolCallPart("call_1", "read_log", '{"lines": 20}')),
    Message.tool("call_1", "error: missing semicolon"),
    Message.user("Please summarize the failure for the notebook."),
]


# Each scenario scripts the server, then calls with these client options.
SCENARIOS: dict[str, tuple[Callable[[FakeLLM], object], dict[str, Any]]] = {
    "reply": (lambda f: f.reply("the build failed", input_tokens=42, output_tokens=7), {}),
    "retried": (lambda f: f.rate_limit().server_error(502).reply("finally"), {}),
    "exhausted": (lambda f: f.server_error(503, times=4), {"max_retries": 3}),
    "client error": (lambda f: f.status(422, body={"error": {"message": "bad field"}}), {}),
    "dropped": (lambda f: f.drop().reply("second time lucky"), {}),
    "drops exhausted": (lambda f: f.drop(times=3), {"max_retries": 2}),
    "malformed": (lambda f: f.malformed("{not json"), {}),
    "timeout": (lambda f: f.slow(3.0, times=2), {"read_timeout": 0.2, "max_retries": 1}),
}


def _error(exc: LLMError) -> tuple[str, Any]:
    # httpx words its sync and async transport errors differently ("ReadTimeout: timed
    # out" / "ReadTimeout"); what memci says is all before that.
    said = re.sub(r"(\w+(?:Error|Timeout))(: .*)?$", r"\1", str(exc))
    return type(exc).__name__, (said, getattr(exc, "status", None))


def _outcome(call: Callable[[], Completion]) -> tuple[str, Any]:
    try:
        return "completion", call()
    except LLMError as exc:
        return _error(exc)


async def _async_outcome(client: AsyncLLMClient) -> tuple[str, Any]:
    try:
        return "completion", await client.complete(CONVERSATION, system="You keep notes.",
                                                   max_tokens=64, temperature=0.2)
    except LLMError as exc:
        return _error(exc)


def _sent(fake: FakeLLM) -> list[tuple[str, bytes, dict[str, str]]]:
    keep = ("authorization", "x-api-key", "anthropic-version", "content-type")
    return [(r.path, r.body, {k: v for k, v in r.headers.items() if k in keep})
            for r in fake.requests]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_async_clients_do_exactly_what_the_sync_ones_do(
    fake: FakeLLM, provider: str, scenario: str
) -> None:
    script, options = SCENARIOS[scenario]
    settings = {"api_key": "sk-test", "base_url": fake.base_url, **FAST, **options}
    sync_class, async_class = ((OpenAIChatClient, AsyncOpenAIChatClient) if provider == "openai"
                               else (AnthropicClient, AsyncAnthropicClient))
    script(fake)
    sync_client: SyncLLMClient = sync_class("m", **settings)
    with sync_client:
        expected = _outcome(lambda: sync_client.complete(
            CONVERSATION, system="You keep notes.", max_tokens=64, temperature=0.2))
    sent = _sent(fake)
    fake.reset()

    async def run() -> tuple[str, Any]:
        async with async_class("m", **settings) as client:
            return await _async_outcome(client)

    script(fake)
    assert asyncio.run(run()) == expected
    assert _sent(fake) == sent


def test_many_calls_are_in_flight_at_once_on_one_loop(fake: FakeLLM) -> None:
    fake.delay = 3.0

    async def run() -> list[Completion]:
        async with AsyncOpenAIChatClient("m", base_url=fake.base_url, **FAST) as client:
            return await asyncio.gather(*(client.complete([Message.user(f"question {i}")])
                                          for i in range(20)))

    results = asyncio.run(run())
    assert sorted(r.text for r in results) == sorted(f"summary: question {i}"
                                                     for i in range(20))
    # all 20 reached the model before the first could have been answered (one after
    # another, each would arrive 3 s after the one before)
    arrived = [r.received_at for r in fake.requests]
    assert max(arrived) - min(arrived) < fake.delay, arrived


def test_waiting_to_retry_leaves_the_loop_free(fake: FakeLLM) -> None:
    fake.rate_limit(retry_after=2).reply("after the wait")

    async def run() -> tuple[str, float, int]:
        ticks = 0
        lag = 0.0

        async def ticker() -> None:
            nonlocal ticks, lag
            while True:
                before = time.monotonic()
                await asyncio.sleep(0.01)
                lag = max(lag, time.monotonic() - before - 0.01)
                ticks += 1

        tick = asyncio.create_task(ticker())
        async with AsyncOpenAIChatClient("m", base_url=fake.base_url, **FAST) as client:
            text = (await client.complete([Message.user("hi")])).text
        tick.cancel()
        return text, lag, ticks

    text, lag, ticks = asyncio.run(run())
    assert text == "after the wait" and fake.count == 2
    assert ticks > 5  # the loop kept running through the two-second wait
    assert lag < 1.5, lag  # a loop blocked by the wait would lag 2 s


def test_injected_async_client_is_used_and_left_open(fake: FakeLLM) -> None:
    async def run() -> bool:
        async with httpx.AsyncClient(headers={"x-test": "injected"}) as http:
            async with AsyncOpenAIChatClient("m", base_url=fake.base_url,
                                             http_client=http) as client:
                await client.complete([Message.user("hi")])
            return http.is_closed

    assert asyncio.run(run()) is False
    assert fake.last.headers["x-test"] == "injected"


def test_own_async_pool_is_closed_and_reopened(fake: FakeLLM) -> None:
    async def run() -> list[str]:
        client = AsyncAnthropicClient("m", base_url=fake.base_url, **FAST)
        first = (await client.complete([Message.user("one")])).text
        await client.aclose()
        second = (await client.complete([Message.user("two")])).text  # a new pool
        await client.aclose()
        return [first, second]

    assert asyncio.run(run()) == ["summary: one", "summary: two"]


def test_a_sync_http_client_is_refused_up_front() -> None:
    with httpx.Client() as http, pytest.raises(ConfigError, match=r"httpx\.AsyncClient"):
        AsyncOpenAIChatClient("m", http_client=http)  # type: ignore[arg-type]


@pytest.mark.parametrize("options", [{"max_retries": -1}, {"backoff": -1.0},
                                     {"base_url": "ftp://x"}, {"read_timeout": 0}])
def test_bad_settings_raise_config_error_as_in_sync(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as sync_error:
        OpenAIChatClient("m", **options)
    with pytest.raises(ConfigError) as async_error:
        AsyncOpenAIChatClient("m", **options)
    assert str(async_error.value) == str(sync_error.value)


def test_async_client_from_env_reads_the_same_settings(fake: FakeLLM) -> None:
    env = {"MEMCI_LLM_PROVIDER": "anthropic", "MEMCI_LLM_BASE_URL": fake.base_url,
           "MEMCI_LLM_MODEL": "claude-test", "MEMCI_LLM_API_KEY": "ak"}
    sync_client = client_from_env(env)
    async_client = async_client_from_env(env)
    assert isinstance(async_client, AsyncAnthropicClient)
    assert sync_client is not None and repr(async_client) == "Async" + repr(sync_client)
    assert async_client_from_env({}) is None
    with pytest.raises(ConfigError, match="MEMCI_LLM_PROVIDER"):
        async_client_from_env({**env, "MEMCI_LLM_PROVIDER": "nope"})

    async def run() -> str:
        assert async_client is not None
        async with async_client:
            return (await async_client.complete([Message.user("hi")])).text

    assert asyncio.run(run()) == "summary: hi"
    assert fake.last.headers["x-api-key"] == "ak"


# -- the embedder ----------------------------------------------------------------------------


def test_async_embedder_gives_the_sync_embedders_vectors(fake: FakeLLM) -> None:
    texts = ["alpha", "beta", "中文文本", "gamma", "delta"]
    settings: dict[str, Any] = {"base_url": fake.openai_base_url, "api_key": "k",
                                "batch_size": 2}
    with httpx.Client() as http:
        expected = OpenAIEmbedder("m", **settings, http_client=http).embed(texts)
    sync_bodies = [r.body for r in fake.requests]
    fake.reset()

    async def run() -> list[list[float]]:
        embedder = AsyncOpenAIEmbedder("m", **settings)
        try:
            return await embedder.embed(texts)
        finally:
            await embedder.aclose()

    vectors = asyncio.run(run())
    assert vectors == expected
    assert [r.body for r in fake.requests] == sync_bodies
    assert len(sync_bodies) == 3  # batches of 2, 2 and 1
    # The fake's vectors, normalized, in the order of the texts (it answers in reverse).
    raw = fake_embedding("beta")
    norm = sum(x * x for x in raw) ** 0.5
    assert vectors[1] == pytest.approx([x / norm for x in raw])


def test_async_embedder_errors_are_the_sync_ones(fake: FakeLLM) -> None:
    fake.server_error(500)
    with httpx.Client() as http, pytest.raises(LLMHTTPError) as sync_error:
        OpenAIEmbedder("m", base_url=fake.openai_base_url, http_client=http).embed(["a"])
    fake.server_error(500)

    async def run() -> None:
        embedder = AsyncOpenAIEmbedder("m", base_url=fake.openai_base_url)
        try:
            await embedder.embed(["a"])
        finally:
            await embedder.aclose()

    with pytest.raises(LLMHTTPError) as async_error:
        asyncio.run(run())
    assert str(async_error.value) == str(sync_error.value)
    assert async_error.value.status == sync_error.value.status == 500
