"""The OpenAI-compatible proxy on a real uvicorn server, with a fake upstream on loopback.

FakeLLM (tests/fakellm.py) is the upstream of the non-streaming tests; the streaming
tests use a small scripted SSE upstream defined here (FakeLLM answers JSON only).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs memci[server]")

import anyio
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
    # memci offers recall_page and search_memory only once pages have left the window;
    # these conversations are short, so the session offers them by its tools setting.
    engine.session("chat", tenant="acme", tools=("recall_page", "search_memory"))
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
    assert stored(engine) == []  # bad requests store nothing
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
        self.delays: deque[float] = deque()  # seconds before a reply's first chunk
        self.requests: list[dict[str, Any]] = []

    def app(self) -> Starlette:
        async def completions(request: Request) -> Response:
            self.requests.append(await request.json())
            chunks = self.script.popleft()
            delay = self.delays.popleft() if self.delays else 0.0

            async def events() -> AsyncIterator[str]:
                await anyio.sleep(delay)
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
    from memci.server._overlap import BranchView, Placement, placement

    def k(*names: str) -> list[tuple[str, str, tuple[str, ...], None]]:
        return [("user" if n.startswith("u") else "assistant", n, (), None) for n in names]

    def place(branch: list[str], sent: list[str], history: bool = False) -> tuple[int, int | None]:
        """The rule on a short branch (read whole); seqs are 1, 2, 3 … along it."""
        seen = list(zip(k(*branch), range(1, len(branch) + 1), strict=True))
        found = placement(BranchView(seen, seen, True, history), k(*sent))
        return found.start, found.after

    log = ["u1", "a1", "u2", "a2"]
    assert place(log, ["u3"]) == (0, None)                          # new messages only
    assert place(log, ["u1", "a1", "u2", "a2", "u3"]) == (4, None)  # whole history
    assert place(log, ["u2", "a2", "u3"]) == (2, None)              # a window of it
    assert place(log, ["a2"]) == (1, None)                          # a resend: nothing new
    assert place(log, ["u1", "a1", "u2"]) == (3, 3)                 # regenerate / lost reply
    assert place(log, ["u1", "a1", "u2x"]) == (2, 2)                # an edit of u2
    assert place(log, ["u1", "a1", "u2", "u3"]) == (3, 3)           # a2 dropped
    assert place(log, ["u1", "a1", "u2", "b2", "u3"]) == (3, 3)     # another a2
    assert place(log, ["u1", "a1x", "u2", "u3"]) == (1, 1)          # an edit of a1
    assert place([], ["u1"]) == (0, None)
    assert place(["u1", "a1", "u1", "a1"], ["u1", "a1", "u1", "a1", "u9"]) == (4, None)
    # a repeated exchange: the history from the start wins over the run at the end
    assert place(["u1", "a1", "u1", "a1"], ["u1", "a1", "u1"]) == (3, 3)
    # the first turn asked again forks; a repeated first message later in a chat does not,
    # unless the client is known to send its history
    assert place(["u1", "a1"], ["u1"]) == (1, 1)
    assert place(log, ["u1"]) == (0, None)
    assert place(log, ["u1"], history=True) == (1, 1)
    # an edited first message: new, or a branch from the start for a history client
    assert place(log, ["u1x"]) == (0, None)
    assert place(log, ["u1x"], history=True) == (0, 0)
    assert place(log, ["u2", "a2", "u3"], history=True) == (2, None)  # still a window
    # a window client that regenerates (a run of two or more inside the branch)
    long = ["u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4"]
    assert place(long, ["u3", "a3", "u4"]) == (3, 7)
    assert place(long, ["u3", "a3", "u4x"]) == (2, 6)
    assert place(long, ["a3", "u4x"]) == (0, None)  # one message in common: all new
    assert place(long, ["u4"]) == (0, None)  # one message: as new, never a rewind
    # only the ends of a long branch are read: the rule works on head and tail alone
    head = list(zip(k("u1", "a1", "u2"), [1, 2, 3], strict=True))
    tail = list(zip(k("u50", "a50"), [99, 100], strict=True))
    assert placement(BranchView(head, tail, False), k("u1", "a1")) == Placement(2, 2, "history")
    assert placement(BranchView(head, tail, False), k("u1")) == Placement(0)
    assert placement(BranchView(head, tail, False), k("a50", "u51")) == Placement(1, kind="tail")


# -- branches: a history that leaves the stored log is a fork or a retry ----------------------
#
# Each scenario runs on both endpoints, with and without streaming, against a real upstream
# on loopback (FakeLLM; the OpenAI stream against the scripted SSE upstream above).


class Chat:
    """One way of talking to the proxy: endpoint × streaming, with its upstream."""

    def __init__(self, mode: str, http: httpx.Client, fake: FakeLLM,
                 sse: SSEUpstream) -> None:
        self.mode, self.http, self.fake, self.sse = mode, http, fake, sse

    def script(self, text: str, *, delay: float = 0.0) -> None:
        if self.mode == "openai-stream":
            self.sse.script.append([chunk(text[:2]), chunk(text[2:]), chunk(finish="stop")])
            self.sse.delays.append(delay)
        elif delay:
            self.fake.slow(delay, text)
        else:
            self.fake.reply(text)

    @property
    def upstream(self) -> list[dict[str, Any]]:
        """The bodies the upstream received, in order."""
        if self.mode == "openai-stream":
            return list(self.sse.requests)
        return [r.json for r in self.fake.requests]

    def request(self, history: list[tuple[str, str]], *, timeout: float | None = None
                ) -> httpx.Response:
        messages = [{"role": r, "content": c} for r, c in history]
        stream = self.mode.endswith("-stream")
        if self.mode.startswith("anthropic"):
            path, body = "/v1/messages", {"model": "claude-x", "max_tokens": 64}
        else:
            path, body = "/v1/chat/completions", {"model": "fake-model"}
        body.update(messages=messages, stream=stream)
        return self.http.post(path, json=body, timeout=timeout or 30)

    def ask(self, history: list[tuple[str, str]]) -> str:
        """Send ``history``; the reply's text, as the client reads it."""
        r = self.request(history)
        assert r.status_code == 200, r.text
        if not self.mode.endswith("-stream"):
            data = r.json()
            if self.mode == "anthropic":
                return "".join(b["text"] for b in data["content"] if b["type"] == "text")
            return str(data["choices"][0]["message"]["content"])
        events = [json.loads(line[6:]) for line in r.text.splitlines()
                  if line.startswith("data: ") and line != "data: [DONE]"]
        if self.mode == "anthropic-stream":
            return "".join(e["delta"]["text"] for e in events
                           if e["type"] == "content_block_delta")
        return "".join(e["choices"][0]["delta"].get("content") or "" for e in events)


def said(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The conversation in an upstream request: (role, text), system left out."""
    out: list[tuple[str, str]] = []
    for m in body["messages"]:
        if m["role"] == "system":
            continue
        content = m.get("content")
        if isinstance(content, str):
            out.append((m["role"], content))
            continue
        out += [(m["role"], b["text"]) for b in content or () if b.get("type") == "text"]
    return out


MODES = ["openai", "openai-stream", "anthropic", "anthropic-stream"]


@pytest.fixture(params=MODES)
def chat(request: pytest.FixtureRequest, engine: memci.Engine, key: str, fake: FakeLLM,
         sse: SSEUpstream) -> Iterator[Chat]:
    with LiveServer(sse.app()) as upstream:
        config = ServerConfig(upstream_base_url=(upstream.url + "/v1"
                                                 if request.param == "openai-stream"
                                                 else fake.openai_base_url),
                              upstream_anthropic_base_url=fake.anthropic_base_url)
        headers = {**auth(key), "X-Memci-Session": "chat"}
        if request.param.startswith("anthropic"):
            headers = {"x-api-key": key, "anthropic-version": "2023-06-01",
                       "X-Memci-Session": "chat"}
        with LiveServer(create_app(engine, config)) as server, httpx.Client(
                base_url=server.url, timeout=30, headers=headers) as http:
            yield Chat(request.param, http, fake, sse)


def branch(engine: memci.Engine) -> list[tuple[str, str]]:
    """The conversation the session's context follows now."""
    return [(m.role, m.content) for m in engine.session("chat", tenant="acme").branch()]


U1, A1, U2, A2 = ("user", "u1"), ("assistant", "a1"), ("user", "u2"), ("assistant", "a2")


def two_turns(chat: Chat) -> None:
    chat.script("a1")
    assert chat.ask([U1]) == "a1"
    chat.script("a2")
    assert chat.ask([U1, A1, U2]) == "a2"


def test_plain_continuation_appends_only_the_new_messages(
        chat: Chat, engine: memci.Engine) -> None:
    two_turns(chat)
    chat.script("a3")
    assert chat.ask([U1, A1, U2, A2, ("user", "u3")]) == "a3"
    assert stored(engine) == [U1, A1, U2, A2, ("user", "u3"), ("assistant", "a3")]
    assert said(chat.upstream[-1]) == [U1, A1, U2, A2, ("user", "u3")]


def test_regenerate_keeps_both_replies_and_sends_the_history_once(
        chat: Chat, engine: memci.Engine) -> None:
    two_turns(chat)
    chat.script("a2 again")
    assert chat.ask([U1, A1, U2]) == "a2 again"  # the same request, sent again
    assert said(chat.upstream[-1]) == [U1, A1, U2]
    assert stored(engine) == [U1, A1, U2, A2, ("assistant", "a2 again")]
    assert branch(engine) == [U1, A1, U2, ("assistant", "a2 again")]
    # a third time, then the client goes on from the reply it kept
    chat.script("a2 third")
    chat.ask([U1, A1, U2])
    assert said(chat.upstream[-1]) == [U1, A1, U2]
    chat.script("a3")
    chat.ask([U1, A1, U2, ("assistant", "a2 third"), ("user", "u3")])
    assert said(chat.upstream[-1]) == [U1, A1, U2, ("assistant", "a2 third"), ("user", "u3")]
    assert stored(engine) == [U1, A1, U2, A2, ("assistant", "a2 again"),
                              ("assistant", "a2 third"), ("user", "u3"), ("assistant", "a3")]


def test_lost_reply_is_asked_again_without_storing_the_history_twice(
        chat: Chat, engine: memci.Engine) -> None:
    chat.script("a1")
    chat.ask([U1])
    chat.script("a2", delay=1.0)
    with pytest.raises(httpx.TimeoutException):  # the client never sees a2
        chat.request([U1, A1, U2], timeout=0.3)
    if chat.mode != "openai-stream":
        # the proxy finishes the turn without its client: a2 is stored, not lost
        deadline = time.monotonic() + 60
        while stored(engine)[-1:] != [A2] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stored(engine) == [U1, A1, U2, A2]
    chat.script("a2, once more")
    assert chat.ask([U1, A1, U2]) == "a2, once more"
    assert said(chat.upstream[-1]) == [U1, A1, U2]
    log = stored(engine)
    assert [c for r, c in log if r == "user"] == ["u1", "u2"]
    assert log[-1] == ("assistant", "a2, once more")
    assert branch(engine) == [U1, A1, U2, ("assistant", "a2, once more")]


def test_edited_message_is_a_branch(chat: Chat, engine: memci.Engine) -> None:
    two_turns(chat)
    edited = ("user", "u2, edited")
    chat.script("b2")
    assert chat.ask([U1, A1, edited]) == "b2"
    assert said(chat.upstream[-1]) == [U1, A1, edited]
    assert stored(engine) == [U1, A1, U2, A2, edited, ("assistant", "b2")]
    assert branch(engine) == [U1, A1, edited, ("assistant", "b2")]
    chat.script("b3")
    chat.ask([U1, A1, edited, ("assistant", "b2"), ("user", "u3")])
    assert said(chat.upstream[-1]) == [U1, A1, edited, ("assistant", "b2"), ("user", "u3")]
    assert len(stored(engine)) == 8


def test_edited_first_message_is_a_branch_from_the_start(
        chat: Chat, engine: memci.Engine) -> None:
    two_turns(chat)  # the client sent its history: memci knows it does
    chat.script("b1")
    assert chat.ask([("user", "u1, edited")]) == "b1"
    assert said(chat.upstream[-1]) == [("user", "u1, edited")]
    assert stored(engine) == [U1, A1, U2, A2, ("user", "u1, edited"), ("assistant", "b1")]
    chat.script("b2")
    chat.ask([("user", "u1, edited"), ("assistant", "b1"), U2])
    assert said(chat.upstream[-1]) == [("user", "u1, edited"), ("assistant", "b1"), U2]
    assert branch(engine) == [("user", "u1, edited"), ("assistant", "b1"), U2,
                              ("assistant", "b2")]


def test_dropped_reply_then_a_new_message(chat: Chat, engine: memci.Engine) -> None:
    two_turns(chat)
    chat.script("a3")
    assert chat.ask([U1, A1, U2, ("user", "u3")]) == "a3"
    assert said(chat.upstream[-1]) == [U1, A1, U2, ("user", "u3")]
    assert stored(engine) == [U1, A1, U2, A2, ("user", "u3"), ("assistant", "a3")]
    assert branch(engine) == [U1, A1, U2, ("user", "u3"), ("assistant", "a3")]


def test_regenerate_after_a_memci_tool_round_drops_that_round_from_the_context(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    fake.json(completion(None, ("call_r", "search_memory", {"query": "x"}))).reply("a1")
    ask(proxy, [{"role": "user", "content": "u1"}])
    fake.reply("a1 again")
    assert answer(ask(proxy, [{"role": "user", "content": "u1"}]))["content"] == "a1 again"
    assert said(fake.requests[-1].json) == [U1]
    assert "tool" not in [m["role"] for m in fake.requests[-1].messages]
    assert [r for r, _ in stored(engine)] == ["user", "assistant", "tool", "assistant",
                                              "assistant"]
    assert branch(engine) == [U1, ("assistant", "a1 again")]


def test_a_failed_regenerate_is_retried_on_the_same_branch(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    history: list[dict[str, Any]] = []
    for n in (1, 2):
        fake.reply(f"a{n}")
        history.append({"role": "user", "content": f"u{n}"})
        history.append(answer(ask(proxy, history)))
    fake.server_error(503)
    r = proxy.post("/v1/chat/completions", json={"model": "m", "messages": history[:3]})
    assert r.status_code == 503
    assert stored(engine) == [U1, A1, U2, A2]
    fake.reply("a2 again")
    assert answer(ask(proxy, history[:3]))["content"] == "a2 again"
    assert [said(r.json) for r in fake.requests[-2:]] == [[U1, A1, U2]] * 2
    assert stored(engine) == [U1, A1, U2, A2, ("assistant", "a2 again")]
    assert branch(engine) == [U1, A1, U2, ("assistant", "a2 again")]


def test_a_client_that_keeps_a_window_regenerates_and_edits(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    history: list[dict[str, Any]] = []
    for n in (1, 2, 3):
        fake.reply(f"a{n}")
        history.append({"role": "user", "content": f"u{n}"})
        history.append(answer(ask(proxy, history[-3:])))  # a window of three messages
    assert len(stored(engine)) == 6
    fake.reply("a3 again")
    ask(proxy, history[-4:-1])  # [u2, a2, u3] again
    assert said(fake.requests[-1].json) == [U1, A1, U2, A2, ("user", "u3")]
    fake.reply("b3")
    ask(proxy, [*history[-4:-2], {"role": "user", "content": "u3, edited"}])
    assert said(fake.requests[-1].json) == [U1, A1, U2, A2, ("user", "u3, edited")]
    assert stored(engine) == [U1, A1, U2, A2, ("user", "u3"), ("assistant", "a3"),
                              ("assistant", "a3 again"), ("user", "u3, edited"),
                              ("assistant", "b3")]


def test_an_edited_tool_result_is_refused_and_leaves_the_branch_as_it_was(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    user = {"role": "user", "content": "weather in Paris?"}
    fake.json(completion(None, ("call_w", "get_weather", {"city": "Paris"})))
    call = answer(ask(proxy, [user], tools=[WEATHER]))
    fake.reply("Sunny.")
    result = {"role": "tool", "tool_call_id": "call_w", "content": "sunny"}
    reply = answer(ask(proxy, [user, call, result], tools=[WEATHER]))
    before = stored(engine)
    r = proxy.post("/v1/chat/completions", json={"model": "m", "tools": [WEATHER], "messages": [
        user, call, {**result, "content": "rainy"}]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "orphan_tool_result"
    assert stored(engine) == before and fake.count == 2
    fake.reply("You are welcome.")
    ask(proxy, [user, call, result, reply, {"role": "user", "content": "thanks"}],
        tools=[WEATHER])
    assert said(fake.requests[-1].json)[-2:] == [("assistant", "Sunny."), ("user", "thanks")]
    assert stored(engine) == [*before, ("user", "thanks"), ("assistant", "You are welcome.")]


def test_a_client_sending_only_new_messages_may_repeat_itself(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    for text in ("hi", "what is memci?", "hi"):
        fake.reply(f"re: {text}")
        ask(proxy, [{"role": "user", "content": text}])
    assert said(fake.requests[-1].json) == [
        ("user", "hi"), ("assistant", "re: hi"), ("user", "what is memci?"),
        ("assistant", "re: what is memci?"), ("user", "hi")]
    assert len(stored(engine)) == 6


def test_regenerating_the_first_reply_after_later_turns(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    history: list[dict[str, Any]] = []
    for n in (1, 2):
        fake.reply(f"a{n}")
        history.append({"role": "user", "content": f"u{n}"})
        history.append(answer(ask(proxy, history)))
    fake.reply("a1 again")
    ask(proxy, history[:1])  # the client went back to its first message
    assert said(fake.requests[-1].json) == [U1]
    assert stored(engine) == [U1, A1, U2, A2, ("assistant", "a1 again")]
    log = engine.session("chat", tenant="acme").messages()
    assert log[3].metadata["memci_proxy"] == {"history": True}  # a2 answered a history


def test_an_edit_far_back_in_a_long_conversation(
        proxy: httpx.Client, fake: FakeLLM, engine: memci.Engine) -> None:
    history: list[dict[str, Any]] = []
    for n in range(1, 31):
        fake.reply(f"a{n}")
        history.append({"role": "user", "content": f"u{n}"})
        history.append(answer(ask(proxy, history)))
    fake.reply("b10")
    ask(proxy, [*history[:18], {"role": "user", "content": "u10, edited"}])
    got = said(fake.requests[-1].json)
    assert got[-1] == ("user", "u10, edited") and len(got) == 19
    assert [c for r, c in got if r == "user"].count("u10") == 0
    assert len(stored(engine)) == 62
    fake.reply("b1")
    ask(proxy, history[:1])  # then the first turn asked again: the branch is long
    assert said(fake.requests[-1].json) == [U1]
    assert len(stored(engine)) == 63
