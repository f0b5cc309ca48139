"""A fake OpenAI- and Anthropic-compatible model server for tests and benchmarks.

Standard library only: a ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) in a
background thread. It serves

- ``POST /v1/chat/completions`` and ``POST /chat/completions`` — OpenAI Chat Completions;
- ``POST /v1/messages`` — Anthropic Messages;
- ``POST /v1/responses`` and ``POST /responses`` — OpenAI Responses, answered as a
  reasoning model answers: a ``reasoning`` item (with ``encrypted_content``), a
  ``message`` with the reply's text and one ``function_call`` per call the reply
  scripts (``Reply(text, calls=(("name", {...}),))``; Chat Completions answer those
  with ``tool_calls``, Anthropic with ``tool_use`` blocks);
- ``POST /v1/embeddings`` and ``POST /embeddings`` — OpenAI embeddings: one vector of
  :data:`EMBEDDING_DIM` per input, a function of the text alone (:func:`fake_embedding`),
  returned in reverse order with their ``index`` as a real server may;

so ``fake.base_url`` works as the base URL of both ``OpenAIChatClient`` (it appends
``/chat/completions``) and ``AnthropicClient`` (it appends ``/v1/messages``), and
``fake.openai_base_url`` as the ``base_url`` of the ``openai`` SDK.

Scripting: each request takes the next behaviour from a FIFO queue the test fills
(``reply``, ``slow``, ``status``, ``rate_limit``, ``server_error``, ``malformed``,
``json``, ``drop``, or ``push`` of behaviour objects); with the queue empty it asks
``planner(request)`` for the behaviour when one is given (an agent loop that answers
what it reads), else replies ``"summary: " + the first 50 characters of the last user
message``. Every request is
recorded (path, lower-cased headers, raw body, decoded JSON) before it is answered, and
``count`` / ``requests`` / ``last`` / ``wait_for`` read the records. ``delay`` adds
seconds to every answer (for benchmarks).

Invariants: all state is guarded by one lock, so tests may push and read while client
threads send; ``close()`` wakes delayed answers, closes every open connection, joins every
handler thread and closes the listening socket, so nothing outlives the ``with`` block
and no ``ResourceWarning`` is left behind. With ``strict=True`` (the default) requests
that the real APIs would reject (no model, no messages, Anthropic turns out of order or
without ``max_tokens`` / ``anthropic-version``) get a 400 without consuming a behaviour.
Responses requests are held to the rules the real API enforces on ``input`` and
``tools``: content types by role, item id prefixes, every ``function_call_output``
answering an earlier ``function_call``, a reasoning item passed back only right before
the item it came before (as this server issued them, paired by id) and an item id passed
back only after its reasoning, ids it never issued refused, and function tools that are
strict (the API's default) only with a strict schema. Chat Completions and Anthropic
requests are held to the tool rules too: every tool call answered right after it (by
``tool`` messages; by ``tool_result`` blocks first in the next user message), every
result answering such a call, and tools well formed with unique names.

Example::

    with FakeLLM() as fake:
        fake.rate_limit(retry_after=1).reply("hello")
        client = OpenAIChatClient("m", base_url=fake.base_url)
        ...
        assert fake.count == 2 and fake.last.json["model"] == "m"
"""

from __future__ import annotations

import hashlib
import itertools
import json
import socket
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self

__all__ = [
    "EMBEDDING_DIM",
    "Drop",
    "FakeLLM",
    "JSONReply",
    "Malformed",
    "RecordedRequest",
    "Reply",
    "Status",
    "echo_reply",
    "fake_embedding",
]

Provider = Literal["openai", "anthropic", "responses", "embeddings"]
OPENAI_PATHS = ("/v1/chat/completions", "/chat/completions")
ANTHROPIC_PATHS = ("/v1/messages",)
RESPONSES_PATHS = ("/v1/responses", "/responses")
EMBEDDINGS_PATHS = ("/v1/embeddings", "/embeddings")
EMBEDDING_DIM = 8


# -- recorded requests ---------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    index: int
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any
    provider: Provider | None
    received_at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``messages`` of the JSON body (Responses: ``input``; empty when none)."""
        key = "input" if self.provider == "responses" else "messages"
        if isinstance(self.json, dict) and isinstance(self.json.get(key), list):
            return list(self.json[key])
        return []

    @property
    def last_user_text(self) -> str:
        """Text of the last user message (tool results left out)."""
        for message in reversed(self.messages):
            if isinstance(message, dict) and message.get("role") == "user":
                return _text_of(message.get("content"))
        return ""


# -- behaviours ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A successful reply; ``text=None`` uses the server's responder (the echo)."""

    text: str | None = None
    delay: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    stop_reason: str | None = None
    usage: bool = True
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()  # tool calls: (name, arguments)


@dataclass(frozen=True)
class Status:
    """An error status; ``body=None`` sends the provider's own error shape."""

    status: int
    body: str | Mapping[str, Any] | None = None
    retry_after: float | str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body is not JSON (by default a truncated object)."""

    body: str = '{"choices": [{"message": {"content": "cut sh'
    delay: float = 0.0


@dataclass(frozen=True)
class JSONReply:
    """Any JSON value as the body, e.g. a 200 with no ``choices``."""

    data: Any
    status: int = 200
    delay: float = 0.0


@dataclass(frozen=True)
class Drop:
    """Close the connection without sending anything (after ``delay`` seconds)."""

    delay: float = 0.0


Behaviour = Reply | Status | Malformed | JSONReply | Drop


def echo_reply(request: RecordedRequest) -> str:
    """The default reply: ``"summary: "`` and 50 characters of the last user message."""
    return "summary: " + request.last_user_text[:50]


# -- the server ----------------------------------------------------------------------------


class FakeLLM:
    """A scripted model endpoint on 127.0.0.1; use as a context manager."""

    def __init__(
        self,
        *,
        delay: float = 0.0,
        model: str = "fake-model",
        api_key: str | None = None,
        strict: bool = True,
        responder: Callable[[RecordedRequest], str] = echo_reply,
        host: str = "127.0.0.1",
        planner: Callable[[RecordedRequest], Behaviour] | None = None,
    ) -> None:
        self.delay = delay
        self.model = model
        self.api_key = api_key
        self.strict = strict
        self.responder = responder
        self.planner = planner
        self._host = host
        self._lock = threading.Condition()
        self._queue: deque[Behaviour] = deque()
        self._requests: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._stopping = threading.Event()
        # Responses item ids issued after a reasoning item: item id -> reasoning id; and
        # reasoning id -> the id of the item right after it.
        self._reasoning_of: dict[str, str] = {}
        self._follower_of: dict[str, str] = {}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> Self:
        """Start serving (``with`` does this); returns self."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self._host, 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02},
            name=f"FakeLLM:{server.server_address[1]}", daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, close every connection, join every thread (idempotent)."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if thread is not None:
            thread.join()
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # addresses

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._server is None:
            raise RuntimeError("FakeLLM is not running; use `with FakeLLM() as fake:`")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the base URL for either client."""
        return f"http://{self._host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, as an OpenAI base URL is usually written."""
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """Same as :attr:`base_url` (Anthropic clients append ``/v1/messages``)."""
        return self.base_url

    # scripting (each returns self, so calls chain)

    def push(self, *behaviours: Behaviour, times: int = 1) -> Self:
        """Queue ``behaviours`` (in order), the whole group ``times`` times."""
        with self._lock:
            for _ in range(times):
                self._queue.extend(behaviours)
        return self

    def reply(self, text: str | None = None, *, times: int = 1, **options: Any) -> Self:
        """Queue a successful reply (``text=None``: the responder's); see :class:`Reply`."""
        return self.push(Reply(text, **options), times=times)

    def slow(self, seconds: float, text: str | None = None, *, times: int = 1) -> Self:
        """Queue a successful reply sent after ``seconds``."""
        return self.push(Reply(text, delay=seconds), times=times)

    def status(
        self,
        status: int,
        *,
        body: str | Mapping[str, Any] | None = None,
        retry_after: float | str | None = None,
        headers: Mapping[str, str] | None = None,
        times: int = 1,
    ) -> Self:
        """Queue an error status (the provider's error JSON unless ``body`` is given)."""
        return self.push(Status(status, body, retry_after, dict(headers or {})), times=times)

    def rate_limit(self, retry_after: float | str | None = None, *, times: int = 1) -> Self:
        """Queue a 429, with ``Retry-After`` when given."""
        return self.status(429, retry_after=retry_after, times=times)

    def server_error(self, status: int = 500, *, times: int = 1) -> Self:
        """Queue a 5xx (500 by default)."""
        return self.status(status, times=times)

    def malformed(self, body: str | None = None, *, times: int = 1) -> Self:
        """Queue a 200 whose body is not JSON."""
        return self.push(Malformed() if body is None else Malformed(body), times=times)

    def json(self, data: Any, *, status: int = 200, times: int = 1) -> Self:
        """Queue a reply whose body is ``data`` as JSON."""
        return self.push(JSONReply(data, status), times=times)

    def drop(self, *, delay: float = 0.0, times: int = 1) -> Self:
        """Queue a dropped connection: closed without any response."""
        return self.push(Drop(delay), times=times)

    def reset(self) -> None:
        """Forget queued behaviours and recorded requests."""
        with self._lock:
            self._queue.clear()
            self._requests.clear()
            self._errors.clear()

    # reading the records

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        """How many requests arrived."""
        with self._lock:
            return len(self._requests)

    @property
    def last(self) -> RecordedRequest:
        """The latest request."""
        with self._lock:
            if not self._requests:
                raise LookupError("FakeLLM has received no request")
            return self._requests[-1]

    @property
    def pending(self) -> int:
        """Behaviours still queued."""
        with self._lock:
            return len(self._queue)

    @property
    def server_errors(self) -> list[BaseException]:
        """Unexpected exceptions in handlers (dropped client connections not counted)."""
        with self._lock:
            return list(self._errors)

    def wait_for(self, count: int, timeout: float = 30.0) -> bool:
        """Block until ``count`` requests have arrived; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= count, timeout)

    # used by the handler

    def _record(self, request: RecordedRequest) -> RecordedRequest:
        with self._lock:
            request = replace(request, index=len(self._requests))
            self._requests.append(request)
            self._lock.notify_all()
            return request

    def _next(self, request: RecordedRequest) -> Behaviour:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        # Outside the lock: a planner may read the server's records.
        return self.planner(request) if self.planner is not None else Reply()

    def _issue(self, reasoning_id: str, item_ids: list[str]) -> None:
        with self._lock:
            if item_ids:
                self._follower_of[reasoning_id] = item_ids[0]
            for item_id in item_ids:
                self._reasoning_of[item_id] = reasoning_id

    def _issued(self) -> tuple[dict[str, str], dict[str, str]]:
        with self._lock:
            return dict(self._reasoning_of), dict(self._follower_of)

    def _record_error(self, error: BaseException) -> None:
        with self._lock:
            self._errors.append(error)


class _Server(ThreadingHTTPServer):
    # Handler threads are joined on close (not daemons), so none outlives the server.
    daemon_threads = False
    block_on_close = True
    # The default backlog of 5 drops the SYNs of a burst of clients, which then wait a
    # full second to retransmit: benchmarks and concurrency tests would measure that.
    request_queue_size = 128
    fake: FakeLLM

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]):
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        # Idle keep-alive connections block their handler in a read; shutting the
        # socket down makes that read return so the handler thread can end.
        with self._open_lock:
            sockets = list(self._open)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | TimeoutError) or error is None:
            return  # the client went away (e.g. it timed out first): expected in tests
        self.fake._record_error(error)
        traceback.print_exc()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "FakeLLM/1.0"
    timeout = 30  # a safety net: no connection stays open longer when idle
    # Headers and body go out in two writes; with Nagle on, the client's delayed ACK
    # would add ~40 ms to every reply.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_GET(self) -> None:
        self._send_json(405, {"error": {"message": "use POST", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        fake = self.server.fake
        body = self._read_body()
        path = self.path.split("?", 1)[0]
        provider: Provider | None = (
            "openai" if path in OPENAI_PATHS else "anthropic" if path in ANTHROPIC_PATHS
            else "responses" if path in RESPONSES_PATHS
            else "embeddings" if path in EMBEDDINGS_PATHS else None
        )
        try:
            decoded: Any = json.loads(body) if body else None
        except ValueError:
            decoded = None
        request = fake._record(RecordedRequest(
            index=-1, method="POST", path=path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body, json=decoded, provider=provider, received_at=time.monotonic(),
        ))
        if provider is None:
            self._send_json(404, _error_body("openai", 404, f"no route for POST {path}"))
            return
        problem = self._auth_problem(request) or (
            (_responses_problem(request, *fake._issued()) if provider == "responses"
             else _embeddings_problem(request) if provider == "embeddings"
             else _shape_problem(request)) if fake.strict else None
        )
        if problem is not None:
            status, message = problem
            self._send_json(status, _error_body(provider, status, message))
            return
        behaviour = fake._next(request)
        if fake._stopping.wait(fake.delay + behaviour.delay):
            self.close_connection = True  # shutting down: answer nothing
            return
        self._perform(behaviour, request, provider)

    def _perform(self, behaviour: Behaviour, request: RecordedRequest, provider: Provider) -> None:
        fake = self.server.fake
        if isinstance(behaviour, Drop):
            self.close_connection = True
        elif isinstance(behaviour, Malformed):
            self._send(200, behaviour.body.encode(), "application/json")
        elif isinstance(behaviour, JSONReply):
            self._send_json(behaviour.status, behaviour.data)
        elif isinstance(behaviour, Status):
            headers = dict(behaviour.headers)
            if behaviour.retry_after is not None:
                headers["Retry-After"] = _header_number(behaviour.retry_after)
            if behaviour.body is None:
                self._send_json(behaviour.status, _error_body(
                    provider, behaviour.status, f"scripted HTTP {behaviour.status}"
                ), headers)
            elif isinstance(behaviour.body, str):
                self._send(behaviour.status, behaviour.body.encode(), "text/plain", headers)
            else:
                self._send_json(behaviour.status, behaviour.body, headers)
        else:
            if provider == "embeddings":
                inputs = request.json["input"]
                data = [{"object": "embedding", "index": i, "embedding": fake_embedding(t)}
                        for i, t in enumerate([inputs] if isinstance(inputs, str) else inputs)]
                self._send_json(200, {"object": "list", "data": data[::-1],
                                      "model": request.json["model"]})
                return
            text = behaviour.text if behaviour.text is not None else fake.responder(request)
            if provider == "responses":
                body = _response_body(request, behaviour, text, fake.model)
                output = body["output"]
                fake._issue(output[0]["id"], [item["id"] for item in output[1:]])
                self._send_json(200, body)
                return
            self._send_json(200, _success_body(provider, request, behaviour, text, fake.model))

    def _auth_problem(self, request: RecordedRequest) -> tuple[int, str] | None:
        key = self.server.fake.api_key
        if key is None:
            return None
        sent = request.headers.get("x-api-key") or request.headers.get(
            "authorization", ""
        ).removeprefix("Bearer ")
        return None if sent == key else (401, "invalid api key")

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(
        self, status: int, data: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        self._send(status, json.dumps(data).encode(), "application/json", headers)

    def _send(
        self, status: int, body: bytes, content_type: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


# -- reply bodies --------------------------------------------------------------------------


def _success_body(
    provider: Provider, request: RecordedRequest, reply: Reply, text: str, default_model: str
) -> dict[str, Any]:
    asked = request.json.get("model") if isinstance(request.json, dict) else None
    model = reply.model or (asked if isinstance(asked, str) else default_model)
    input_tokens = reply.input_tokens if reply.input_tokens is not None else _estimate(
        _request_texts(request)
    )
    output_tokens = reply.output_tokens if reply.output_tokens is not None else _estimate([text])
    n = request.index
    if provider == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if reply.calls:
            message["content"] = text or None
            message["tool_calls"] = [
                {"id": f"call_fake_{n}_{i}", "type": "function",
                 "function": {"name": name, "arguments": json.dumps(dict(arguments))}}
                for i, (name, arguments) in enumerate(reply.calls)]
        body: dict[str, Any] = {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{
                "index": 0,
                "message": message,
                "finish_reason": reply.stop_reason or ("tool_calls" if reply.calls
                                                       else "stop"),
            }],
        }
        if reply.usage:
            body["usage"] = {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                             "total_tokens": input_tokens + output_tokens}
        return body
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text or not (
        reply.calls) else []
    blocks += [{"type": "tool_use", "id": f"toolu_fake_{n}_{i}", "name": name,
                "input": dict(arguments)} for i, (name, arguments) in enumerate(reply.calls)]
    body = {
        "id": f"msg_fake_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": reply.stop_reason or ("tool_use" if reply.calls else "end_turn"),
        "stop_sequence": None,
    }
    if reply.usage:
        body["usage"] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return body


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 429: "rate_limit_error",
                529: "overloaded_error"}


def _response_body(
    request: RecordedRequest, reply: Reply, text: str, default_model: str
) -> dict[str, Any]:
    """A completed Response: reasoning, the text as a message (if any), the calls."""
    data = request.json
    asked = data.get("model")
    model = reply.model or (asked if isinstance(asked, str) else default_model)
    n = request.index
    output: list[dict[str, Any]] = [{
        "type": "reasoning", "id": f"rs_fake_{n}",
        "summary": [{"type": "summary_text", "text": f"thought about request {n}"}],
        "encrypted_content": f"opaque-reasoning-{n}-" + "x" * 40,
    }]
    if text:
        output.append({"type": "message", "id": f"msg_fake_{n}", "role": "assistant",
                       "status": "completed", "content": [
                           {"type": "output_text", "text": text, "annotations": []}]})
    for i, (name, arguments) in enumerate(reply.calls):
        output.append({"type": "function_call", "id": f"fc_fake_{n}_{i}",
                       "call_id": f"call_fake_{n}_{i}", "name": name,
                       "arguments": json.dumps(dict(arguments)), "status": "completed"})
    input_tokens = reply.input_tokens if reply.input_tokens is not None else _estimate(
        _request_texts(request))
    output_tokens = reply.output_tokens if reply.output_tokens is not None else _estimate(
        [text])
    body: dict[str, Any] = {
        "id": f"resp_fake_{n}", "object": "response", "created_at": time.time(),
        "status": "completed", "model": model, "output": output,
        "instructions": data.get("instructions"), "tools": data.get("tools") or [],
        "tool_choice": "auto", "parallel_tool_calls": True, "error": None,
        "incomplete_details": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0,
    }
    if reply.usage:
        body["usage"] = {
            "input_tokens": input_tokens, "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 1},
        }
    return body


def fake_embedding(text: str) -> list[float]:
    """The fake server's embedding of ``text``: :data:`EMBEDDING_DIM` numbers from its hash."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    return [(b - 127.5) / 127.5 for b in digest[:EMBEDDING_DIM]]


def _embeddings_problem(request: RecordedRequest) -> tuple[int, str] | None:
    data = request.json
    if not isinstance(data, dict) or not isinstance(data.get("model"), str):
        return 400, "model: field required"
    inputs = data.get("input")
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs or not all(
            isinstance(t, str) and t for t in inputs):
        return 400, "input: a non-empty string or array of non-empty strings is required"
    return None


def _error_body(provider: Provider, status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error")
    if provider == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "code": status}}


def _shape_problem(request: RecordedRequest) -> tuple[int, str] | None:
    data = request.json
    if not isinstance(data, dict):
        return 400, "the body must be a JSON object"
    if not isinstance(data.get("model"), str) or not data["model"]:
        return 400, "model: field required"
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        return 400, "messages: at least one message is required"
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
        return 400, "messages: each message needs a role"
    if request.provider == "anthropic":
        if "anthropic-version" not in request.headers:
            return 400, "anthropic-version: header is required"
        tokens = data.get("max_tokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
            return 400, "max_tokens: field required (an integer >= 1)"
        roles = [m["role"] for m in messages]
        if roles[0] != "user":
            return 400, "messages: the first message must use the user role"
        if any(r not in ("user", "assistant") for r in roles):
            return 400, "messages: roles must be user or assistant (system goes in 'system')"
        if any(a == b for a, b in itertools.pairwise(roles)):
            return 400, "messages: roles must alternate between user and assistant"
        return _anthropic_tools_problem(data.get("tools"), messages)
    return _chat_tools_problem(data.get("tools"), messages)


def _unique_names(names: list[Any], where: str) -> str | None:
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            return f"{where}[{i}]: a tool needs a name"
        if name in names[:i]:
            return f"{where}: tool names must be unique ({name!r} is repeated)"
    return None


def _chat_tools_problem(tools: Any, messages: list[dict[str, Any]]) -> tuple[int, str] | None:
    """What Chat Completions refuses about tools: malformed tools, unpaired calls."""
    if tools is not None:
        if not isinstance(tools, list) or not all(
                isinstance(t, dict) and t.get("type") == "function"
                and isinstance(t.get("function"), dict) for t in tools):
            return 400, "tools: each tool must be {'type': 'function', 'function': {...}}"
        problem = _unique_names([t["function"].get("name") for t in tools], "tools")
        if problem is not None:
            return 400, problem
    open_calls: set[str] = set()
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            if message.get("tool_call_id") not in open_calls:
                return 400, (f"messages[{i}]: messages with role 'tool' must be a response to "
                             "a preceding message with 'tool_calls'")
            open_calls.discard(message["tool_call_id"])
            continue
        if open_calls:
            return 400, ("An assistant message with 'tool_calls' must be followed by tool "
                         "messages responding to each 'tool_call_id'. The following "
                         f"tool_call_ids did not have response messages: {sorted(open_calls)}")
        open_calls = {c.get("id") for c in message.get("tool_calls") or []
                      if isinstance(c, dict)}
    return None


def _anthropic_tools_problem(
    tools: Any, messages: list[dict[str, Any]]
) -> tuple[int, str] | None:
    """What Anthropic refuses about tools: malformed tools, unanswered tool_use blocks."""
    if tools is not None:
        if not isinstance(tools, list) or not all(
                isinstance(t, dict) and ("input_schema" in t or "type" in t) for t in tools):
            return 400, "tools: each custom tool needs 'name' and 'input_schema'"
        problem = _unique_names([t.get("name") for t in tools], "tools")
        if problem is not None:
            return 400, problem
    asked: set[str] = set()
    for i, message in enumerate(messages):
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        kinds = [b.get("type") for b in blocks]
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if message["role"] == "user":
            if asked and (set(results) != asked
                          or kinds[:len(results)] != ["tool_result"] * len(results)):
                return 400, (f"messages.{i}: tool_use ids were found without tool_result "
                             f"blocks immediately after: {sorted(asked - set(results))}")
            if not asked and results:
                return 400, (f"messages.{i}.content: unexpected tool_use_id found in "
                             "tool_result blocks: each tool_result block must have a "
                             "corresponding tool_use block in the previous message")
            asked = set()
        else:
            asked = {b.get("id") for b in blocks if b.get("type") == "tool_use"}
    return None


_ID_PREFIX = {"message": "msg_", "function_call": "fc_", "reasoning": "rs_"}
_BLOCKS = {"assistant": ("output_text", "refusal")}
_INPUT_BLOCKS = ("input_text", "input_image", "input_file")


def _responses_problem(
    request: RecordedRequest, reasoning_of: Mapping[str, str], follower_of: Mapping[str, str]
) -> tuple[int, str] | None:
    """What the Responses API would refuse in this request (its message), or None."""
    data = request.json
    if not isinstance(data, dict):
        return 400, "the body must be a JSON object"
    if not isinstance(data.get("model"), str) or not data["model"]:
        return 400, "Missing required parameter: 'model'."
    if data.get("instructions") is not None and not isinstance(data["instructions"], str):
        return 400, "Invalid type for 'instructions': expected a string."
    problem = _tools_problem(data.get("tools"))
    if problem is not None:
        return 400, problem
    items = data.get("input")
    if isinstance(items, str):
        return None if items else (400, "Invalid 'input': empty string.")
    if not isinstance(items, list) or not items:
        return 400, "Invalid 'input': expected a string or a non-empty array of items."
    calls: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return 400, f"Invalid 'input[{i}]': expected an object."
        kind = item.get("type", "message" if "role" in item else None)
        item_id = item.get("id")
        if item_id is not None:
            prefix = _ID_PREFIX.get(str(kind))
            if prefix is None or not isinstance(item_id, str) or not item_id.startswith(prefix):
                return 400, (f"Invalid 'input[{i}].id': {item_id!r}. Expected an ID that "
                             f"begins with '{(prefix or '?')[:-1]}'.")
            if item_id not in reasoning_of and item_id not in follower_of:
                return 404, f"Item with id '{item_id}' not found."
        if kind == "message":
            problem = _message_problem(item, i)
        elif kind == "function_call":
            problem = _call_problem(item, i)
            calls.add(item.get("call_id"))
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                problem = ("No tool call found for function call output with call_id "
                           f"{item.get('call_id')}.")
            elif not isinstance(item.get("output"), str | list):
                problem = f"Missing required parameter: 'input[{i}].output'."
        elif kind == "reasoning":
            problem = _reasoning_problem(items, i, follower_of)
        else:
            problem = f"Invalid value: {kind!r} at 'input[{i}].type'."
        if problem is None and item_id in reasoning_of and kind != "reasoning":
            problem = _paired_problem(items, i, reasoning_of[item_id], str(kind))
        if problem is not None:
            return 400, problem
    return None


def _message_problem(item: dict[str, Any], i: int) -> str | None:
    role, content = item.get("role"), item.get("content")
    if role not in ("user", "assistant", "system", "developer"):
        return f"Invalid value: {role!r} at 'input[{i}].role'."
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return f"Invalid type for 'input[{i}].content': expected a string or an array."
    allowed = _BLOCKS.get(role, _INPUT_BLOCKS)
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind not in allowed:
            return (f"Invalid value: {kind!r} at 'input[{i}].content[{j}].type'. Supported "
                    f"values are: {', '.join(repr(a) for a in allowed)}.")
        if kind == "input_image" and block.get("detail") not in ("low", "high", "auto",
                                                                 "original"):
            return f"Invalid value for 'input[{i}].content[{j}].detail'."
    return None


def _call_problem(item: dict[str, Any], i: int) -> str | None:
    for key in ("call_id", "name", "arguments"):
        if not isinstance(item.get(key), str):
            return f"Missing required parameter: 'input[{i}].{key}'."
    return None


def _reasoning_problem(
    items: list[Any], i: int, follower_of: Mapping[str, str]
) -> str | None:
    item = items[i]
    if not isinstance(item.get("summary"), list):
        return f"Missing required parameter: 'input[{i}].summary'."
    after = items[i + 1] if i + 1 < len(items) else None
    needed = follower_of.get(item.get("id", ""))
    if not isinstance(after, dict) or after.get("type") == "reasoning" or (
            needed is not None and after.get("id") != needed):
        return (f"Item '{item.get('id')}' of type 'reasoning' was provided without its "
                "required following item.")
    return None


def _paired_problem(items: list[Any], i: int, reasoning_id: str, kind: str) -> str | None:
    """An item issued after a reasoning item must come after it, in the same run."""
    for before in reversed(items[:i]):
        if not isinstance(before, dict) or before.get("type") not in (
                "reasoning", "function_call", "message") or before.get("role") == "user":
            break
        if before.get("type") == "reasoning" and before.get("id") == reasoning_id:
            return None
    return (f"Item '{items[i].get('id')}' of type '{kind}' was provided without its "
            f"required 'reasoning' item: '{reasoning_id}'.")


def _tools_problem(tools: Any) -> str | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "Invalid type for 'tools': expected an array."
    problem = _unique_names([t.get("name") if isinstance(t, dict) else None for t in tools],
                            "tools")
    if problem is not None:
        return problem
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or tool.get("type") != "function":
            return f"Invalid value at 'tools[{i}].type': this server knows function tools."
        if not isinstance(tool.get("name"), str) or not isinstance(tool.get("parameters"),
                                                                   dict):
            return f"Missing required parameter: 'tools[{i}].name' or 'parameters'."
        schema = tool["parameters"]
        properties = schema.get("properties") or {}
        if tool.get("strict", True) and (schema.get("additionalProperties") is not False
                                         or set(schema.get("required") or ()) != set(
                                             properties)):
            return (f"Invalid schema for function '{tool['name']}': In context=(), 'required' "
                    "is required to be supplied and to be an array including every key in "
                    "properties, and 'additionalProperties' must be false (strict mode).")
    return None


# -- helpers -------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block.get("text", "") for block in content
            if isinstance(block, dict) and block.get("type") in ("text", "input_text")
        )
    return ""


def _request_texts(request: RecordedRequest) -> Iterable[str]:
    data = request.json if isinstance(request.json, dict) else {}
    for key in ("system", "instructions"):
        if isinstance(data.get(key), str):
            yield data[key]
    for message in request.messages:
        if isinstance(message, dict):
            yield _text_of(message.get("content"))


def _estimate(texts: Iterable[str]) -> int:
    # Deterministic and roughly token-sized: a token per four characters, at least one.
    return max(1, sum(len(t) for t in texts) // 4)


def _header_number(value: float | str) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
