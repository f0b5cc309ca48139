"""memci.llm against a real local HTTP server (tests/fakellm.py): shapes, retries, errors, env."""

from __future__ import annotations

import email.utils
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from memci.errors import (
    ConfigError,
    InvalidInputError,
    LLMConnectionError,
    LLMError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
)
from memci.llm import (
    AnthropicClient,
    Completion,
    LLMClient,
    OpenAIChatClient,
    client_from_env,
    parse_retry_after,
)
from memci.messages import Message, ToolCallPart
from tests.fakellm import FakeLLM, Reply

# Tiny backoff so retry tests take milliseconds; Retry-After tests set their own cap.
FAST = {"backoff": 0.001, "max_backoff": 0.005}


def openai_client(fake: FakeLLM, **options: Any) -> OpenAIChatClient:
    settings: dict[str, Any] = {"api_key": "sk-test", "base_url": fake.openai_base_url, **FAST}
    settings.update(options)
    return OpenAIChatClient("gpt-test", **settings)


def anthropic_client(fake: FakeLLM, **options: Any) -> AnthropicClient:
    settings: dict[str, Any] = {"api_key": "ak-test", "base_url": fake.base_url, **FAST}
    settings.update(options)
    return AnthropicClient("claude-test", **settings)


CONVERSATION = [
    Message.system("Summarize tersely."),
    Message.user("What is in the build log?"),
    Message.assistant("Let me look.", ToolCallPart("call_1", "read_log", '{"lines": 20}')),
    Message.tool("call_1", "error: missing semicolon"),
    Message.user("Please summarize the failure for the notebook."),
]


# -- happy paths ---------------------------------------------------------------------------


def test_openai_request_shape_and_reply(fake: FakeLLM) -> None:
    fake.reply("the build failed", input_tokens=42, output_tokens=7)
    with openai_client(fake) as client:
        result = client.complete(CONVERSATION, system="You keep notes.", max_tokens=64,
                                 temperature=0.2)

    assert result == Completion(text="the build failed", model="gpt-test", input_tokens=42,
                                output_tokens=7, raw={}, stop_reason="stop")
    assert result.raw["choices"][0]["message"]["content"] == "the build failed"
    request = fake.last
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["content-type"] == "application/json"
    body = request.json
    assert body["model"] == "gpt-test"
    assert body["max_tokens"] == 64
    assert body["temperature"] == 0.2
    messages = body["messages"]
    assert messages[0] == {"role": "system", "content": "You keep notes."}
    assert messages[1] == {"role": "system", "content": "Summarize tersely."}
    assert messages[3]["tool_calls"][0]["function"] == {
        "name": "read_log", "arguments": '{"lines": 20}'
    }
    assert messages[4] == {"role": "tool", "tool_call_id": "call_1",
                           "content": "error: missing semicolon"}
    assert messages[-1]["content"] == "Please summarize the failure for the notebook."


def test_openai_defaults_echo_reply_no_key_and_root_base_url(fake: FakeLLM) -> None:
    with OpenAIChatClient("local-model", base_url=fake.base_url + "/") as client:
        result = client.complete([Message.user("hello there, fake server")])
    assert result.text == "summary: hello there, fake server"
    assert result.input_tokens is not None and result.output_tokens is not None
    request = fake.last
    assert request.path == "/chat/completions"
    assert "authorization" not in request.headers
    assert "temperature" not in request.json
    assert request.json["max_tokens"] == 512


def test_anthropic_request_shape_and_reply(fake: FakeLLM) -> None:
    fake.push(Reply("noted", input_tokens=30, output_tokens=3, stop_reason="max_tokens"))
    with anthropic_client(fake) as client:
        result = client.complete(CONVERSATION, system="You keep notes.", max_tokens=100)

    assert (result.text, result.model, result.input_tokens, result.output_tokens,
            result.stop_reason) == ("noted", "claude-test", 30, 3, "max_tokens")
    request = fake.last
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "ak-test"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    body = request.json
    assert list(body) == ["model", "max_tokens", "system", "messages"]
    assert body["system"] == "You keep notes.\n\nSummarize tersely."
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][1] == {
        "type": "tool_use", "id": "call_1", "name": "read_log", "input": {"lines": 20}
    }
    last_blocks = body["messages"][2]["content"]
    assert last_blocks[0]["type"] == "tool_result"
    assert last_blocks[0]["tool_use_id"] == "call_1"
    assert last_blocks[-1] == {"type": "text",
                               "text": "Please summarize the failure for the notebook."}


def test_anthropic_usage_counts_cached_input(fake: FakeLLM) -> None:
    fake.json({"type": "message", "model": "claude-x", "stop_reason": "end_turn",
               "content": [{"type": "thinking", "thinking": "hm"},
                           {"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
               "usage": {"input_tokens": 5, "cache_read_input_tokens": 100,
                         "cache_creation_input_tokens": 20, "output_tokens": 2}})
    with anthropic_client(fake) as client:
        result = client.complete([Message.user("hi")])
    assert (result.text, result.model, result.input_tokens, result.output_tokens) == (
        "ab", "claude-x", 125, 2)


def test_missing_usage_gives_none(fake: FakeLLM) -> None:
    fake.reply("x", usage=False).reply("y", usage=False)
    with openai_client(fake) as oa, anthropic_client(fake) as an:
        for client in (oa, an):
            result = client.complete([Message.user("hi")])
            assert result.input_tokens is None and result.output_tokens is None


def test_dict_messages_are_accepted(fake: FakeLLM) -> None:
    with openai_client(fake) as client:
        client.complete([{"role": "user", "content": "as a dict"}])
    assert fake.last.json["messages"] == [{"role": "user", "content": "as a dict"}]


def test_extra_body_headers_and_max_tokens_param(fake: FakeLLM) -> None:
    with openai_client(fake, headers={"x-team": "memci"},
                       extra_body={"enable_thinking": False},
                       max_tokens_param="max_completion_tokens") as client:
        client.complete([Message.user("hi")], max_tokens=9)
    request = fake.last
    assert request.headers["x-team"] == "memci"
    assert request.json["enable_thinking"] is False
    assert request.json["max_completion_tokens"] == 9
    assert "max_tokens" not in request.json


# -- retries -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 529])
def test_transient_status_is_retried_then_succeeds(fake: FakeLLM, status: int) -> None:
    fake.status(status, times=2).reply("finally")
    with openai_client(fake) as client:
        assert client.complete([Message.user("hi")]).text == "finally"
    assert fake.count == 3
    bodies = {r.body for r in fake.requests}
    assert len(bodies) == 1  # resent byte-identical


def test_anthropic_retries_too(fake: FakeLLM) -> None:
    fake.rate_limit().server_error().reply("ok")
    with anthropic_client(fake) as client:
        assert client.complete([Message.user("hi")]).text == "ok"
    assert fake.count == 3


def test_retry_after_is_honoured(fake: FakeLLM) -> None:
    fake.rate_limit(retry_after=1).reply("after the wait")
    with openai_client(fake) as client:
        started = time.monotonic()
        assert client.complete([Message.user("hi")]).text == "after the wait"
        elapsed = time.monotonic() - started
    assert fake.count == 2
    gap = fake.requests[1].received_at - fake.requests[0].received_at
    assert gap >= 0.95, gap
    assert elapsed < 30  # it waited the second asked for, not a long backoff of its own


def test_retry_after_is_capped(fake: FakeLLM) -> None:
    fake.rate_limit(retry_after=3600).reply("ok")
    with openai_client(fake, max_retry_after=0.05) as client:
        assert client.complete([Message.user("hi")]).text == "ok"
    gap = fake.requests[1].received_at - fake.requests[0].received_at
    assert gap < 60, gap  # capped: nowhere near the hour asked for


def test_exhausted_retries_raise_http_error_with_status_and_body(fake: FakeLLM) -> None:
    fake.server_error(503, times=4)
    with openai_client(fake, max_retries=3) as client, pytest.raises(LLMHTTPError) as info:
        client.complete([Message.user("hi")])
    assert info.value.status == 503
    assert "scripted HTTP 503" in info.value.body
    assert "4 attempts" in str(info.value)
    assert fake.count == 4


def test_zero_retries_means_one_attempt(fake: FakeLLM) -> None:
    fake.rate_limit(times=2)
    with openai_client(fake, max_retries=0) as client, pytest.raises(LLMHTTPError) as info:
        client.complete([Message.user("hi")])
    assert info.value.status == 429
    assert fake.count == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(fake: FakeLLM, status: int) -> None:
    fake.status(status, body={"error": {"message": "bad request field"}})
    with anthropic_client(fake) as client, pytest.raises(LLMHTTPError) as info:
        client.complete([Message.user("hi")])
    assert info.value.status == status
    assert "bad request field" in info.value.body
    assert fake.count == 1


def test_wrong_api_key_is_a_401_and_the_key_is_never_shown() -> None:
    with FakeLLM(api_key="right-key") as fake, OpenAIChatClient(
        "m", api_key="sk-secret-123", base_url=fake.base_url, **FAST
    ) as client:
        with pytest.raises(LLMHTTPError) as info:
            client.complete([Message.user("hi")])
        assert info.value.status == 401
        assert fake.count == 1
        assert "sk-secret-123" not in str(info.value) + repr(client)


def test_dropped_connection_is_retried_then_succeeds(fake: FakeLLM) -> None:
    fake.drop().reply("second time lucky")
    with openai_client(fake) as client:
        assert client.complete([Message.user("hi")]).text == "second time lucky"
    assert fake.count == 2


def test_dropped_connections_exhaust_into_connection_error(fake: FakeLLM) -> None:
    fake.drop(times=3)
    with anthropic_client(fake, max_retries=2) as client, pytest.raises(LLMConnectionError):
        client.complete([Message.user("hi")])
    assert fake.count == 3


def test_unreachable_endpoint_raises_connection_error() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with OpenAIChatClient("m", base_url=f"http://127.0.0.1:{port}", max_retries=1,
                          **FAST) as client, pytest.raises(LLMConnectionError) as info:
        client.complete([Message.user("hi")])
    assert "2 attempts" in str(info.value)


def test_slow_reply_raises_timeout_error_after_retries(fake: FakeLLM) -> None:
    fake.slow(30.0, times=2)
    with openai_client(fake, read_timeout=0.2, max_retries=1) as client:
        started = time.monotonic()
        with pytest.raises(LLMTimeoutError) as info:
            client.complete([Message.user("hi")])
        elapsed = time.monotonic() - started
    assert isinstance(info.value, LLMError)
    assert fake.count == 2
    assert 0.35 < elapsed < 20  # two timed-out attempts, not the 60 s of two slow replies


def test_slow_reply_within_timeout_succeeds(fake: FakeLLM) -> None:
    fake.slow(0.1, "took a moment")
    with openai_client(fake, read_timeout=2.0) as client:
        assert client.complete([Message.user("hi")]).text == "took a moment"


# -- malformed replies ---------------------------------------------------------------------


def test_non_json_reply_raises_response_error_without_retry(fake: FakeLLM) -> None:
    fake.malformed()
    with openai_client(fake) as client, pytest.raises(LLMResponseError) as info:
        client.complete([Message.user("hi")])
    assert "not JSON" in str(info.value)
    assert info.value.body.startswith('{"choices"')
    assert fake.count == 1


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"id": "x"}, "'choices'"),
        ({"choices": []}, "'choices'"),
        ({"error": {"message": "quota exceeded"}}, "quota exceeded"),
        ({"choices": [{"finish_reason": "stop"}]}, "'message'"),
        ({"choices": [{"message": {"role": "assistant", "content": None}}]}, "content"),
        ({"choices": [{"message": {"role": "assistant", "content": 3}}]}, "content"),
        (["not", "an", "object"], "not an object"),
    ],
)
def test_openai_reply_missing_pieces_is_named(fake: FakeLLM, data: Any, named: str) -> None:
    fake.json(data)
    with openai_client(fake) as client, pytest.raises(LLMResponseError) as info:
        client.complete([Message.user("hi")])
    assert named in str(info.value)


def test_anthropic_reply_without_content_is_named(fake: FakeLLM) -> None:
    fake.json({"type": "message", "role": "assistant"})
    with anthropic_client(fake) as client, pytest.raises(LLMResponseError, match="'content'"):
        client.complete([Message.user("hi")])


# -- the caller's mistakes, checked before any request ------------------------------------


def test_bad_calls_raise_before_sending(fake: FakeLLM) -> None:
    with anthropic_client(fake) as anthropic, openai_client(fake) as openai:
        with pytest.raises(InvalidInputError, match="at least one user or assistant"):
            anthropic.complete([Message.system("only system")])
        with pytest.raises(InvalidInputError, match="nothing to send"):
            openai.complete([])
        with pytest.raises(InvalidInputError, match="max_tokens"):
            openai.complete([Message.user("hi")], max_tokens=0)
        with pytest.raises(InvalidInputError, match="list of messages"):
            openai.complete(Message.user("hi"))  # type: ignore[arg-type]
    assert fake.count == 0


@pytest.mark.parametrize(
    "options",
    [
        {"base_url": "localhost:8000"},
        {"max_retries": -1},
        {"read_timeout": 0},
        {"connect_timeout": float("nan")},
        {"backoff": -1},
        {"http_client": object()},
    ],
)
def test_bad_settings_raise_config_error(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        OpenAIChatClient("m", **options)


def test_empty_model_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="MEMCI_LLM_MODEL"):
        AnthropicClient(" ")


# -- http client injection and lifecycle ---------------------------------------------------


def test_injected_http_client_is_used_and_left_open(fake: FakeLLM) -> None:
    seen: list[str] = []
    http = httpx.Client(event_hooks={"request": [lambda r: seen.append(str(r.url))]},
                        headers={"x-from-injected": "yes"})
    try:
        client = openai_client(fake, http_client=http)
        client.complete([Message.user("hi")])
        client.close()
        assert seen == [fake.openai_base_url + "/chat/completions"]
        assert fake.last.headers["x-from-injected"] == "yes"
        assert not http.is_closed
        client.complete([Message.user("again")])  # still the same client
        assert len(seen) == 2
    finally:
        http.close()


def test_own_http_client_is_closed_and_reopened(fake: FakeLLM) -> None:
    client = openai_client(fake)
    client.complete([Message.user("one")])
    client.close()
    client.complete([Message.user("two")])  # a fresh pool after close
    client.close()
    client.close()
    assert fake.count == 2


def test_client_is_thread_safe(fake: FakeLLM) -> None:
    results: list[str] = []
    lock = threading.Lock()
    with openai_client(fake) as client:

        def call(i: int) -> None:
            text = client.complete([Message.user(f"worker {i}")]).text
            with lock:
                results.append(text)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(results) == sorted(f"summary: worker {i}" for i in range(8))
    assert fake.count == 8


def test_clients_satisfy_the_protocol(fake: FakeLLM) -> None:
    with openai_client(fake) as a, anthropic_client(fake) as b:
        assert isinstance(a, LLMClient) and isinstance(b, LLMClient)
        assert (a.provider, b.provider) == ("openai", "anthropic")
        assert repr(a) == f"OpenAIChatClient(model='gpt-test', base_url='{fake.openai_base_url}')"


# -- configuration from the environment ----------------------------------------------------


def test_env_nothing_configured_gives_none() -> None:
    assert client_from_env({}) is None
    assert client_from_env({"MEMCI_LLM_MODEL": "  ", "OTHER": "x"}) is None


def test_env_full_openai_configuration_works_end_to_end(fake: FakeLLM) -> None:
    env = {"MEMCI_LLM_PROVIDER": "openai", "MEMCI_LLM_BASE_URL": fake.openai_base_url,
           "MEMCI_LLM_API_KEY": "sk-env", "MEMCI_LLM_MODEL": "qwen-plus"}
    client = client_from_env(env, **FAST)
    assert isinstance(client, OpenAIChatClient)
    with client:
        assert client.complete([Message.user("from env")]).text == "summary: from env"
    assert fake.last.json["model"] == "qwen-plus"
    assert fake.last.headers["authorization"] == "Bearer sk-env"


def test_env_anthropic_and_defaults() -> None:
    client = client_from_env({"MEMCI_LLM_PROVIDER": "Anthropic", "MEMCI_LLM_API_KEY": "k",
                              "MEMCI_LLM_MODEL": "claude-x"})
    assert isinstance(client, AnthropicClient)
    assert client.base_url == "https://api.anthropic.com"
    client = client_from_env({"MEMCI_LLM_API_KEY": "k", "MEMCI_LLM_MODEL": "gpt-x"})
    assert isinstance(client, OpenAIChatClient)
    assert client.base_url == "https://api.openai.com/v1"
    # Pointing at Anthropic without naming the provider picks the right format.
    client = client_from_env({"MEMCI_LLM_BASE_URL": "https://api.anthropic.com",
                              "MEMCI_LLM_API_KEY": "k", "MEMCI_LLM_MODEL": "claude-x"})
    assert isinstance(client, AnthropicClient)


def test_env_local_server_needs_no_key() -> None:
    client = client_from_env({"MEMCI_LLM_BASE_URL": "http://localhost:11434/v1",
                              "MEMCI_LLM_MODEL": "qwen2.5"})
    assert isinstance(client, OpenAIChatClient) and client.model == "qwen2.5"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"MEMCI_LLM_PROVIDER": "openai"}, "MEMCI_LLM_MODEL"),
        ({"MEMCI_LLM_API_KEY": "k"}, "MEMCI_LLM_MODEL"),
        ({"MEMCI_LLM_BASE_URL": "http://localhost:8000/v1"}, "MEMCI_LLM_MODEL"),
        ({"MEMCI_LLM_MODEL": "gpt-x"}, "MEMCI_LLM_API_KEY"),
        ({"MEMCI_LLM_PROVIDER": "gemini", "MEMCI_LLM_MODEL": "g", "MEMCI_LLM_API_KEY": "k"},
         "MEMCI_LLM_PROVIDER"),
        ({"MEMCI_LLM_MODEL": "m", "MEMCI_LLM_BASE_URL": "ftp://x"}, "base_url"),
    ],
)
def test_env_partial_or_unknown_raises_config_error(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        client_from_env(env)


def test_env_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="anthropic, openai"):
        client_from_env({"MEMCI_LLM_PROVIDER": "gemini"})


def test_explicit_arguments_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMCI_LLM_PROVIDER", "anthropic")
    monkeypatch.setenv("MEMCI_LLM_API_KEY", "env-key")
    monkeypatch.setenv("MEMCI_LLM_MODEL", "env-model")
    monkeypatch.delenv("MEMCI_LLM_BASE_URL", raising=False)
    # Read at call time from os.environ (nothing was read at import).
    from_env = client_from_env()
    assert isinstance(from_env, AnthropicClient) and from_env.model == "env-model"
    explicit = client_from_env(provider="openai", model="arg-model",
                               base_url="http://127.0.0.1:9/v1", max_retries=0)
    assert isinstance(explicit, OpenAIChatClient)
    assert (explicit.model, explicit.base_url, explicit.max_retries) == (
        "arg-model", "http://127.0.0.1:9/v1", 0)


# -- Retry-After parsing -------------------------------------------------------------------


def test_parse_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = email.utils.format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after(httpx.Headers({"Retry-After": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"Retry-After": "0.5"})) == 0.5
    assert parse_retry_after(httpx.Headers({"Retry-After": later}), now) == 30.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert parse_retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse_retry_after(httpx.Headers({"Retry-After": "-3"})) is None
    assert parse_retry_after(httpx.Headers({})) is None


# -- the fake server itself ----------------------------------------------------------------


def test_fake_rejects_what_the_real_apis_reject(fake: FakeLLM) -> None:
    fake.reply("kept for later")
    with httpx.Client(base_url=fake.base_url) as http:
        bad = http.post("/v1/messages", json={"model": "m", "max_tokens": 5,
                                               "messages": [{"role": "assistant",
                                                             "content": "x"}]},
                        headers={"anthropic-version": "2023-06-01"})
        assert bad.status_code == 400 and "user role" in bad.json()["error"]["message"]
        assert http.post("/v1/chat/completions", json={"messages": []}).status_code == 400
        assert http.post("/nowhere", json={}).status_code == 404
    assert fake.pending == 1  # rejected requests do not consume a behaviour
    assert fake.count == 3


def test_fake_delay_knob_wait_for_and_reset(fake: FakeLLM) -> None:
    fake.delay = 0.2
    with openai_client(fake) as client:
        started = time.monotonic()
        client.complete([Message.user("hi")])
        assert time.monotonic() - started >= 0.2
    assert fake.wait_for(1, timeout=0.1)
    assert not fake.wait_for(2, timeout=0.05)
    fake.reply("queued")
    fake.reset()
    assert (fake.count, fake.pending) == (0, 0)


def test_fake_shuts_down_with_a_delayed_reply_in_flight() -> None:
    fake = FakeLLM().start()
    fake.slow(30)
    errors: list[BaseException] = []

    def call() -> None:
        with OpenAIChatClient("m", base_url=fake.base_url, max_retries=0) as client:
            try:
                client.complete([Message.user("hi")])
            except LLMError as exc:
                errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    assert fake.wait_for(1)
    started = time.monotonic()
    fake.close()
    thread.join(25)
    assert time.monotonic() - started < 20  # not the 30 s of the reply in flight
    assert len(errors) == 1 and isinstance(errors[0], LLMConnectionError)


# -- public surface ------------------------------------------------------------------------


def test_public_names_exist_and_are_documented() -> None:
    import memci.errors
    import memci.llm

    docs = (Path(__file__).resolve().parents[1] / "docs" / "llm.md").read_text()
    for name in memci.llm.__all__:
        assert hasattr(memci.llm, name), name
    for name in ("OpenAIChatClient", "AnthropicClient", "client_from_env", "Completion",
                 "LLMClient", "MEMCI_LLM_PROVIDER", "MEMCI_LLM_BASE_URL", "MEMCI_LLM_API_KEY",
                 "MEMCI_LLM_MODEL", "LLMHTTPError", "LLMTimeoutError", "LLMConnectionError",
                 "LLMResponseError", "Retry-After"):
        assert name in docs, name
    for error in (LLMHTTPError, LLMTimeoutError, LLMConnectionError, LLMResponseError):
        assert issubclass(error, LLMError)
        assert error.__name__ in memci.errors.__all__
        assert error.__name__ in (memci.errors.__doc__ or "")
