"""The OpenAI-compatible proxy on a real uvicorn server, with a fake upstream on loopback.

FakeLLM (tests/fakellm.py) is the upstream of the non-streaming tests; the streaming
tests use a small scripted SSE upstream defined here (FakeLLM answers JSON only).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import memci
from memci.server import KeyStore, ServerConfig, create_app

from .fakellm import FakeLLM
from .test_server import LiveServer, auth

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}


def completion(content: str | None = None, *calls: tuple[str, str, dict[str, Any]]
               ) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for cid, name, args in calls]
    return {"id": "chatcmpl-x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def stored(engine: memci.Engine, name: str = "chat") -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in engine.session(name, tenant="acme").messages()]


@pytest.fixture
def key(engine: memci.Engine) -> str:
    return KeyStore(engine.store).create("acme")[1]


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def proxy(engine: memci.Engine, fake: FakeLLM, key: str) -> Iterator[httpx.Client]:
    config = ServerConfig(upstream_base_url=fake.openai_base_url, upstream_api_key="up-key",
                          max_tool_rounds=3)
    with LiveServer(create_app(engine, config)) as server, httpx.Client(
            base_url=server.url, timeout=30,
            headers={**auth(key), "X-Memci-Session": "chat"}) as http:
        yield http


def ask(http: httpx.Client, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    r = http.post("/v1/chat/completions", json={"model": "fake-model", "messages": messages,
                                                **extra})
    assert r.status_code == 200, r.text
    data: dict[str, Any] = r.json()
    return data


def answer(data: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = data["choices"][0]["message"]
    return message


# -- storing each message once ----------------------------------------------------------------


def test_new_messages_only_client_stores_each_message_once(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    fake.reply("a1").reply("a2").reply("a3")
    sys_msg = {"role": "system", "content": "You are terse."}
    assert answer(ask(proxy, [sys_msg, {"role": "user", "content": "u1"}]))["content"] == "a1"
    assert answer(ask(proxy, [{"role": "user", "content": "u2"}]))["content"] == "a2"
    assert answer(ask(proxy, [{"role": "user", "content": "u3"}]))["content"] == "a3"
    assert stored(engine) == [("system", "You are terse."), ("user", "u1"), ("assistant", "a1"),
                              ("user", "u2"), ("assistant", "a2"), ("user", "u3"),
                              ("assistant", "a3")]
    last = fake.requests[-1]
    assert [m["content"] for m in last.messages] == ["You are terse.", "u1", "a1", "u2", "a2",
                                                     "u3"]
    assert last.json["model"] == "fake-model"
    assert last.headers["authorization"] == "Bearer up-key"
    assert "recall_page" in [t["function"]["name"] for t in last.json["tools"]]


def test_whole_history_client_stores_each_message_once_and_retries_cleanly(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be kind."}]
    for n in range(1, 4):
        fake.reply(f"a{n}")
        history.append({"role": "user", "content": f"u{n}"})
        history.append(answer(ask(proxy, history)))
    assert stored(engine) == [("system", "Be kind."), ("user", "u1"), ("assistant", "a1"),
                              ("user", "u2"), ("assistant", "a2"), ("user", "u3"),
                              ("assistant", "a3")]
    # the upstream fails: the client's message is kept; the retry does not store it twice
    fake.server_error(503)
    history.append({"role": "user", "content": "u4"})
    r = proxy.post("/v1/chat/completions", json={"model": "fake-model", "messages": history})
    assert r.status_code == 503 and "error" in r.json()
    fake.reply("a4")
    assert answer(ask(proxy, history))["content"] == "a4"
    assert stored(engine)[-3:] == [("assistant", "a3"), ("user", "u4"), ("assistant", "a4")]
    # a client that keeps only a window of its history matches that window
    fake.reply("a5")
    ask(proxy, [history[0], {"role": "assistant", "content": "a4"},
                {"role": "user", "content": "u5"}])
    assert stored(engine)[-4:] == [("user", "u4"), ("assistant", "a4"), ("user", "u5"),
                                   ("assistant", "a5")]
    assert len(stored(engine)) == 11
    # a changed system prompt is stored once, and becomes the prompt
    fake.reply("a6")
    ask(proxy, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "u6"}])
    ask_again = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "u6"},
                 {"role": "assistant", "content": "a6"}, {"role": "user", "content": "u7"}]
    fake.reply("a7")
    ask(proxy, ask_again)
    systems = [c for r, c in stored(engine) if r == "system"]
    assert systems == ["Be kind.", "Be brief."]
    assert fake.requests[-1].messages[0] == {"role": "system", "content": "Be brief."}


# -- tools ------------------------------------------------------------------------------------


def test_memci_tool_call_is_run_in_a_loop(proxy: httpx.Client, fake: FakeLLM,
                                          engine: memci.Engine) -> None:
    fake.json(completion(None, ("call_r", "recall_page", {"index": 1}))).reply("final answer")
    data = ask(proxy, [{"role": "user", "content": "what did we decide?"}])
    assert answer(data) == {"role": "assistant", "content": "final answer"}
    assert fake.count == 2
    second = fake.requests[1].messages
    assert second[-2]["tool_calls"][0]["id"] == "call_r"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_r"
    log = engine.session("chat", tenant="acme").messages()
    assert [m.role for m in log] == ["user", "assistant", "tool", "assistant"]
    assert log[1].metadata["memci_proxy"] == {"internal": True}
    assert log[2].metadata["memci_proxy"] == {"internal": True}
    # a whole-history client never saw that round and still matches the log
    fake.reply("second answer")
    ask(proxy, [{"role": "user", "content": "what did we decide?"},
                {"role": "assistant", "content": "final answer"},
                {"role": "user", "content": "thanks"}])
    assert [m.content for m in engine.session("chat", tenant="acme").messages()][-3:] == [
        "final answer", "thanks", "second answer"]


def test_client_tool_call_is_returned_and_its_result_stored(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    fake.json(completion(None, ("call_w", "get_weather", {"city": "Paris"})))
    data = ask(proxy, [{"role": "user", "content": "weather in Paris?"}], tools=[WEATHER])
    calls = answer(data)["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather"]
    sent_tools = [t["function"]["name"] for t in fake.requests[0].json["tools"]]
    assert sent_tools[0] == "get_weather" and "recall_page" in sent_tools
    fake.reply("It is sunny in Paris.")
    data = ask(proxy, [{"role": "tool", "tool_call_id": "call_w", "content": "sunny, 24C"}],
               tools=[WEATHER])
    assert answer(data)["content"] == "It is sunny in Paris."
    assert [r for r, _ in stored(engine)] == ["user", "assistant", "tool", "assistant"]
    result = fake.requests[1].messages[-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "call_w"
    assert "sunny, 24C" in result["content"]  # whole, or summarized with its artifact


def test_mixed_call_runs_memci_part_and_returns_client_part(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    fake.json(completion("Let me look.", ("call_r", "recall_page", {"index": 1}),
                         ("call_w", "get_weather", {"city": "Oslo"})))
    user = {"role": "user", "content": "weather in Oslo, as last time?"}
    message = answer(ask(proxy, [user], tools=[WEATHER]))
    assert [c["id"] for c in message["tool_calls"]] == ["call_w"]
    log = engine.session("chat", tenant="acme").messages()
    assert [m.role for m in log] == ["user", "assistant", "tool"]
    assert log[1].metadata["memci_proxy"] == {"internal_calls": ["call_r"]}
    assert [c.id for c in log[1].tool_calls] == ["call_r", "call_w"]
    # the whole-history client sends back what it saw, plus its tool's result
    fake.reply("Cold in Oslo.")
    ask(proxy, [user, message, {"role": "tool", "tool_call_id": "call_w", "content": "-3C"}],
        tools=[WEATHER])
    assert [r for r, _ in stored(engine)] == ["user", "assistant", "tool", "tool", "assistant"]
    upstream = fake.requests[-1].messages
    assert [m["role"] for m in upstream if m["role"] != "system"] == [
        "user", "assistant", "tool", "tool"]


def test_tool_rounds_are_bounded(proxy: httpx.Client, fake: FakeLLM) -> None:
    fake.json(completion(None, ("c", "recall_page", {"index": 1})), times=10)
    data = ask(proxy, [{"role": "user", "content": "loop forever"}])
    assert fake.count == 4  # max_tool_rounds=3, then a round without memci's tools
    assert "tools" not in fake.requests[-1].json
    assert answer(data)["tool_calls"][0]["function"]["name"] == "recall_page"


# -- errors and auth --------------------------------------------------------------------------


def test_proxy_auth_header_and_upstream_errors(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    r = proxy.post("/v1/chat/completions", json=body, headers={"Authorization": ""})
    assert r.status_code == 401
    r = proxy.post("/v1/chat/completions", json=body, headers={"X-Memci-Session": ""})
    assert r.status_code == 400 and r.json()["error"]["code"] == "missing_session"
    for bad in ({"model": "m"}, {"model": "m", "messages": [{"role": "wizard"}]}, [1]):
        r = proxy.post("/v1/chat/completions", json=bad)
        assert r.status_code == 400, bad
    assert engine.store.session("acme", "chat") is None
    fake.rate_limit(retry_after=3)
    r = proxy.post("/v1/chat/completions", json=body)
    assert r.status_code == 429 and r.json()["error"]["type"] == "rate_limit_error"
    fake.malformed()
    r = proxy.post("/v1/chat/completions", json=body)
    assert r.status_code == 502 and r.json()["error"]["code"] == "upstream_bad_reply"
    assert stored(engine) == [("user", "hi")]


def test_unreachable_or_missing_upstream(engine: memci.Engine, key: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    headers = {**auth(key), "X-Memci-Session": "chat"}
    with FakeLLM() as gone:
        url = gone.openai_base_url
    for config, status, code in [
            (ServerConfig(), 503, "no_upstream"),
            (ServerConfig(upstream_base_url=url), 502, "upstream_unreachable")]:
        with LiveServer(create_app(engine, config)) as server, httpx.Client(
                base_url=server.url, timeout=30, headers=headers) as http:
            r = http.post("/v1/chat/completions", json=body)
            assert r.status_code == status and r.json()["error"]["code"] == code


# -- streaming --------------------------------------------------------------------------------


class SSEUpstream:
    """A scripted streaming upstream: each request takes the next list of chunks."""

    def __init__(self) -> None:
        self.script: deque[list[dict[str, Any]]] = deque()
        self.requests: list[dict[str, Any]] = []

    def app(self) -> Starlette:
        async def completions(request: Request) -> Response:
            self.requests.append(await request.json())
            chunks = self.script.popleft()

            async def events() -> AsyncIterator[str]:
                for c in chunks:
                    yield f"data: {json.dumps(c)}\n\n"
                yield "data: [DONE]\n\n"

            if not self.requests[-1].get("stream"):
                return JSONResponse({"error": {"message": "expected stream"}}, 400)
            return StreamingResponse(events(), media_type="text/event-stream")

        return Starlette(routes=[Route("/v1/chat/completions", completions,
                                       methods=["POST"])])


def chunk(content: str | None = None, call: dict[str, Any] | None = None,
          finish: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if call is not None:
        delta["tool_calls"] = [call]
    return {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def call_chunks(index: int, cid: str, name: str, args: str) -> list[dict[str, Any]]:
    return [chunk(call={"index": index, "id": cid, "type": "function",
                        "function": {"name": name, "arguments": ""}}),
            chunk(call={"index": index, "function": {"arguments": args}})]


@pytest.fixture
def sse() -> SSEUpstream:
    return SSEUpstream()


@pytest.fixture
def streaming(engine: memci.Engine, key: str, sse: SSEUpstream) -> Iterator[httpx.Client]:
    with LiveServer(sse.app()) as upstream:
        config = ServerConfig(upstream_base_url=upstream.url + "/v1")
        with LiveServer(create_app(engine, config)) as server, httpx.Client(
                base_url=server.url, timeout=30,
                headers={**auth(key), "X-Memci-Session": "chat"}) as http:
            yield http


def stream(http: httpx.Client, messages: list[dict[str, Any]], **extra: Any) -> list[str]:
    body = {"model": "m", "messages": messages, "stream": True, **extra}
    with http.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        return [line[6:] for line in r.iter_lines() if line.startswith("data: ")]


def test_sse_passes_through(streaming: httpx.Client, sse: SSEUpstream,
                            engine: memci.Engine) -> None:
    chunks = [chunk("Hel"), chunk("lo!"), chunk(finish="stop")]
    sse.script.append(chunks)
    got = stream(streaming, [{"role": "user", "content": "hi"}])
    assert got[-1] == "[DONE]"
    assert [json.loads(d) for d in got[:-1]] == chunks
    assert stored(engine) == [("user", "hi"), ("assistant", "Hello!")]
    assert sse.requests[0]["stream"] is True


def test_sse_memci_tool_round_is_not_forwarded(streaming: httpx.Client, sse: SSEUpstream,
                                               engine: memci.Engine) -> None:
    sse.script.append([*call_chunks(0, "call_r", "recall_page", '{"index": 1}'),
                       chunk(finish="tool_calls")])
    sse.script.append([chunk("Found it."), chunk(finish="stop")])
    got = stream(streaming, [{"role": "user", "content": "recall"}])
    assert [json.loads(d)["choices"][0]["delta"] for d in got[:-1]] == [
        {"content": "Found it."}, {}]
    assert len(sse.requests) == 2 and sse.requests[1]["messages"][-1]["role"] == "tool"
    assert [r for r, _ in stored(engine)] == ["user", "assistant", "tool", "assistant"]


def test_sse_text_before_a_memci_call_is_recorded_for_the_client(
        streaming: httpx.Client, sse: SSEUpstream, engine: memci.Engine) -> None:
    sse.script.append([chunk("Let me check. "),
                       *call_chunks(0, "call_r", "recall_page", '{"index": 1}'),
                       chunk(finish="tool_calls")])
    sse.script.append([chunk("It was blue."), chunk(finish="stop")])
    got = stream(streaming, [{"role": "user", "content": "colour?"}])
    text = "".join(json.loads(d)["choices"][0]["delta"].get("content", "") for d in got[:-1])
    assert text == "Let me check. It was blue."
    assert not any("tool_calls" in json.loads(d)["choices"][0]["delta"] for d in got[:-1])
    log = engine.session("chat", tenant="acme").messages()
    assert log[-1].metadata["memci_proxy"] == {"client_text": text}
    sse.script.append([chunk("You are welcome."), chunk(finish="stop")])
    stream(streaming, [{"role": "user", "content": "colour?"},
                       {"role": "assistant", "content": text},
                       {"role": "user", "content": "thanks"}])
    assert [r for r, _ in stored(engine)] == ["user", "assistant", "tool", "assistant", "user",
                                              "assistant"]


def test_sse_client_tool_call_is_forwarded_without_memci_calls(
        streaming: httpx.Client, sse: SSEUpstream, engine: memci.Engine) -> None:
    sse.script.append([*call_chunks(0, "call_r", "recall_page", '{"index": 1}'),
                       *call_chunks(1, "call_w", "get_weather", '{"city": "Rome"}'),
                       chunk(finish="tool_calls")])
    got = stream(streaming, [{"role": "user", "content": "weather?"}], tools=[WEATHER])
    deltas = [json.loads(d)["choices"][0]["delta"] for d in got[:-1]]
    calls = [c for d in deltas for c in d.get("tool_calls", ())]
    assert {c.get("id") for c in calls} == {"call_w", None}
    assert all(c["index"] == 0 for c in calls)
    assert [r for r, _ in stored(engine)] == ["user", "assistant", "tool"]


# -- Anthropic --------------------------------------------------------------------------------


@pytest.fixture
def anthropic(engine: memci.Engine, fake: FakeLLM, key: str) -> Iterator[httpx.Client]:
    config = ServerConfig(upstream_anthropic_base_url=fake.anthropic_base_url,
                          upstream_anthropic_api_key="ant-key")
    with LiveServer(create_app(engine, config)) as server, httpx.Client(
            base_url=server.url, timeout=30,
            headers={"x-api-key": key, "anthropic-version": "2023-06-01",
                     "X-Memci-Session": "chat"}) as http:
        yield http


def anthropic_message(*blocks: dict[str, Any], stop: str = "end_turn") -> dict[str, Any]:
    return {"id": "msg_x", "type": "message", "role": "assistant", "model": "claude-x",
            "content": list(blocks), "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 3}}


def test_anthropic_messages_with_a_memci_tool_round(
        anthropic: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    fake.json(anthropic_message(
        {"type": "tool_use", "id": "tu_1", "name": "recall_page", "input": {"index": 1}},
        stop="tool_use")).reply("All done.")
    r = anthropic.post("/v1/messages", json={
        "model": "claude-x", "max_tokens": 100, "system": "Be brief.",
        "messages": [{"role": "user", "content": "what was page 1?"}]})
    assert r.status_code == 200, r.text
    assert r.json()["content"] == [{"type": "text", "text": "All done."}]
    first, second = fake.requests
    assert first.path == "/v1/messages" and first.headers["x-api-key"] == "ant-key"
    assert first.json["system"] == "Be brief." and first.headers["anthropic-version"]
    assert "recall_page" in [t["name"] for t in first.json["tools"]]
    assert second.messages[-1]["content"][0]["type"] == "tool_result"
    assert [r for r, _ in stored(engine)] == ["system", "user", "assistant", "tool",
                                              "assistant"]
    # the whole-history client (system as a field, as Anthropic's SDK sends it)
    fake.reply("Sure.")
    r = anthropic.post("/v1/messages", json={
        "model": "claude-x", "max_tokens": 100, "system": "Be brief.",
        "messages": [{"role": "user", "content": "what was page 1?"},
                     {"role": "assistant", "content": [{"type": "text", "text": "All done."}]},
                     {"role": "user", "content": "thanks"}]})
    assert r.status_code == 200
    assert [c for _, c in stored(engine)][-2:] == ["thanks", "Sure."]
    assert len(stored(engine)) == 7


def test_anthropic_stream_sends_the_final_message_as_events(
        anthropic: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    fake.json(anthropic_message({"type": "text", "text": "Hello there."}))
    body = {"model": "claude-x", "max_tokens": 50, "stream": True,
            "messages": [{"role": "user", "content": "hi"}]}
    with anthropic.stream("POST", "/v1/messages", json=body) as r:
        assert r.status_code == 200
        events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
    assert [e["type"] for e in events] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop",
        "message_delta", "message_stop"]
    assert events[2]["delta"] == {"type": "text_delta", "text": "Hello there."}
    assert "stream" not in fake.last.json
    assert stored(engine) == [("user", "hi"), ("assistant", "Hello there.")]


# -- the overlap rule (pure) ------------------------------------------------------------------


def test_overlap_rule_cases() -> None:
    from memci.server._overlap import new_start

    def k(*names: str) -> list[tuple[str, str, tuple[str, ...], None]]:
        return [("user" if n.startswith("u") else "assistant", n, (), None) for n in names]

    log = k("u1", "a1", "u2", "a2")
    assert new_start(log, k("u3")) == 0                          # new messages only
    assert new_start(log, k("u1", "a1", "u2", "a2", "u3")) == 4   # whole history
    assert new_start(log, k("u2", "a2", "u3")) == 2               # a window of it
    assert new_start(log, k("a2")) == 1                           # a resend: nothing new
    assert new_start(log, k("u1", "a1", "u2", "b2", "u3")) == 0   # a branch: all new
    assert new_start([], k("u1")) == 0
    assert new_start(k("u1", "a1", "u1", "a1"), k("u1", "a1", "u1", "a1", "u9")) == 4
