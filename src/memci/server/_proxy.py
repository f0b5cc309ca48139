"""The model proxies (OpenAI, Anthropic): memci's context in place of the client's history.

``POST /v1/chat/completions`` with ``X-Memci-Session: <name>`` does one turn:

1. store what the client sent that the session has not seen, in one transaction. The
   overlap rule (:mod:`memci.server._overlap`) places what was sent on the session's
   branch: a history that continues it appends its new messages; one that leaves it
   (a regenerated or lost reply, an edited message, a dropped reply) forks the session
   after the last message they share (:meth:`memci.Session.fork`), so the new messages,
   or only the reply when nothing is new, continue that message, and the context sent
   upstream is the client's branch. Nothing stored is removed. The reply to a request
   that sent the client's history is marked ``history``: the rule then knows that the
   client sends its history;
2. build the context (``session.build()``, with the budget less the client's tool schemas)
   and send it upstream with the client's tools and memci's own (a memci tool whose name
   a client tool also uses is not offered);
3. store the model's reply. When it calls memci's own tools only, memci runs them, stores
   the call and the results (marked ``internal``: the client never sees that round),
   rebuilds and asks again, at most ``max_tool_rounds`` times (the last round offers
   memci's tools no more). A reply that calls a client tool is returned to the client
   (memci's calls in it, if any, are run by memci and left out of what the client gets).

With ``stream: true`` every round streams from the upstream; text is passed through to
the client as it comes until a tool call starts, then the round is held back until it
ends: memci's own tool rounds are not forwarded, and the final round's held part is.
The text the client was sent across rounds is recorded on the final reply
(``client_text``) so a whole-history client's next request still matches the log.

``POST /v1/messages`` does the same for Anthropic's Messages API (``tool_use`` and
``tool_result`` blocks); its rounds are made without streaming upstream, and with
``stream: true`` the final message is sent as Anthropic's event stream.

Invariants: a message is stored once (a retried or regenerated turn stores only its new
reply); the upstream gets the client's branch, never the conversation twice; a request
whose messages cannot be read stores nothing (400) and forks nothing; an upstream error is
passed through with its status and body before anything is streamed, and as an SSE
``error`` event after.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

import anyio.to_thread
import httpx
from pydantic import ValidationError
from starlette.responses import JSONResponse, Response, StreamingResponse

from memci._dataclasses import dataclass, replace
from memci._session import Session
from memci.context._branches import BRANCH_META, runs
from memci.errors import MemciError
from memci.messages import Message, ToolCallPart, coerce
from memci.server._config import ServerConfig
from memci.server._errors import ApiError, classify, error_body, problems
from memci.server._models import AnthropicRequest, ChatRequest
from memci.server._overlap import (
    PROXY_META,
    BranchView,
    Seen,
    message_key,
    placement,
    proxy_meta,
    visible_key,
)
from memci.server._sessions import SessionHub, read_messages
from memci.server._sse import (
    Chunks,
    anthropic_events,
    as_chunks,
    drop_calls,
    sse,
    sse_data,
)
from memci.server._threads import ToolThreads

__all__ = ["ChatProxy"]

T = TypeVar("T")


async def _run(func: Callable[..., T], *args: Any) -> T:
    return await anyio.to_thread.run_sync(func, *args)


@dataclass
class _Turn:
    """One proxied request: its session, the client's body and tools."""

    session: Session
    body: dict[str, Any]
    client_tools: list[Any]
    client_names: frozenset[str]
    budget: int
    shown_text: str = ""  # text streamed to the client in rounds memci kept to itself
    history: bool = False  # the client sent its history: its reply says so (_overlap)


def _request_parts(body: Any, shape: type[ChatRequest | AnthropicRequest],
                   ) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """The body, its messages and its tools, checked against the shape the schema shows.

    The fields memci reads (``messages``, ``tools``, ``stream``, ``system`` …) are held to
    the request model of :mod:`memci.server._models`, the one the OpenAPI document
    publishes; the messages themselves are read later by the same reader as
    ``session.add``. The body goes upstream as it was sent.
    """
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request", "the body must be a JSON object")
    try:
        shape.model_validate(body)
    except ValidationError as exc:
        raise ApiError(400, "invalid_request", problems(exc.errors())) from exc
    return body, body["messages"], body.get("tools") or []


def _upstream_error(status: int, content: bytes) -> Response:
    """The upstream's error answer, passed through (its JSON, or ours around its text)."""
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if not isinstance(data, dict) or "error" not in data:
        text = content.decode("utf-8", "replace")[:2000]
        data = error_body("upstream_error", f"the upstream model answered HTTP {status}: {text}")
    return JSONResponse(data, status_code=status)


def _read_reply(message: Any) -> Message:
    if not isinstance(message, dict):
        raise ApiError(502, "upstream_bad_reply", "the upstream reply has no message")
    try:
        (reply,) = coerce({**message, "role": "assistant"})
    except (MemciError, ValueError) as exc:
        raise ApiError(502, "upstream_bad_reply",
                       f"the upstream reply cannot be read: {exc}") from exc
    return reply


def _with_meta(message: Message, note: Mapping[str, Any]) -> Message:
    return replace(message, metadata={**message.metadata, PROXY_META: dict(note)})


class ChatProxy:
    """Proxies chat completions to an upstream, with memci's context and tools."""

    def __init__(
        self, hub: SessionHub, config: ServerConfig, tool_threads: ToolThreads | None = None
    ) -> None:
        self.hub = hub
        self.config = config
        self.http: httpx.AsyncClient | None = None
        # memci's own tools run in the server's tool threads (see memci.server._threads)
        self.tool_threads = tool_threads or ToolThreads()

    # -- the turn ------------------------------------------------------------------------

    async def openai(
        self, tenant: str, name: str, user: str | None, body: Any
    ) -> Response:
        """Answer one ``POST /v1/chat/completions``."""
        body, messages, tools = _request_parts(body, ChatRequest)
        if not self.config.upstream_base_url:
            raise ApiError(503, "no_upstream",
                           "this server has no upstream model: set MEMCI_UPSTREAM_BASE_URL "
                           "or start it with --upstream-base-url")
        names = frozenset(
            str(t["function"]["name"]) for t in tools
            if isinstance(t, dict) and isinstance(t.get("function"), dict)
            and "name" in t["function"])
        try:
            turn = await _run(self._begin, tenant, name, user, body, messages, tools, names)
        except MemciError as exc:
            raise classify(exc) from exc
        if body.get("stream"):
            return await self._stream(turn)
        return await self._complete(turn)

    async def anthropic(
        self, tenant: str, name: str, user: str | None, body: Any,
        version: str | None, beta: str | None,
    ) -> Response:
        """Answer one ``POST /v1/messages`` (Anthropic Messages).

        memci's tool rounds and the final round are done without streaming upstream; with
        ``stream: true`` the final message is sent as Anthropic's stream of events.
        """
        body, messages, tools = _request_parts(body, AnthropicRequest)
        if not self.config.upstream_anthropic_base_url:
            raise ApiError(503, "no_upstream",
                           "this server has no Anthropic upstream: set "
                           "MEMCI_UPSTREAM_ANTHROPIC_BASE_URL or start it with "
                           "--upstream-anthropic-base-url")
        system = body.get("system")
        if isinstance(system, list):
            system = "\n\n".join(b.get("text", "") for b in system if isinstance(b, dict))
        if isinstance(system, str) and system:
            messages = [{"role": "system", "content": system}, *messages]
        names = frozenset(str(t["name"]) for t in tools if isinstance(t, dict) and "name" in t)
        try:
            turn = await _run(self._begin, tenant, name, user, body, messages, tools, names)
        except MemciError as exc:
            raise classify(exc) from exc
        headers = {"Content-Type": "application/json",
                   "anthropic-version": version or "2023-06-01"}
        if beta:
            headers["anthropic-beta"] = beta
        if self.config.upstream_anthropic_api_key:
            headers["x-api-key"] = self.config.upstream_anthropic_api_key
        url = self.config.upstream_anthropic_base_url.rstrip("/") + "/v1/messages"
        rounds = self.config.max_tool_rounds
        for number in range(rounds + 1):
            out, own_names = await _run(self._anthropic_request, turn, number < rounds)
            response = await self._send(out, stream=False, url=url, headers=headers)
            if response.status_code >= 400:
                return _upstream_error(response.status_code, response.content)
            try:
                data = response.json()
                blocks = data["content"]
            except (ValueError, LookupError, TypeError) as exc:
                raise ApiError(502, "upstream_bad_reply",
                               f"the upstream reply is not an Anthropic message: {exc!r}"
                               ) from exc
            reply = _read_reply({"role": "assistant", "content": blocks})
            own = [c for c in reply.tool_calls if c.name in own_names]
            if not own:
                await _run(self._store_reply, turn, reply)
                break
            final = len(own) < len(reply.tool_calls)
            await self.tool_threads.run(partial(self._run_own, turn, reply, own, final))
            if final:
                ids = {c.id for c in own}
                data["content"] = [b for b in blocks
                                   if not (isinstance(b, dict) and b.get("id") in ids)]
                break
        if body.get("stream"):
            return StreamingResponse(iter(anthropic_events(data)),
                                     media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        return JSONResponse(data)

    def _anthropic_request(
        self, turn: _Turn, offer_own: bool
    ) -> tuple[dict[str, Any], frozenset[str]]:
        """The upstream Anthropic request of one round, and memci's tool names in it."""
        context = turn.session.build(budget=turn.budget)
        own = [t for t in turn.session.tools("anthropic")
               if offer_own and t["name"] not in turn.client_names]
        out = {k: v for k, v in turn.body.items()
               if k not in ("messages", "tools", "system", "stream")}
        out.update(context.to_anthropic())
        out.pop("tools", None)
        tools = [*turn.client_tools, *own]
        if tools:
            out["tools"] = tools
        else:
            out.pop("tool_choice", None)
        return out, frozenset(t["name"] for t in own)

    def _begin(
        self, tenant: str, name: str, user: str | None, body: dict[str, Any],
        messages: list[Any], tools: list[Any], names: frozenset[str],
    ) -> _Turn:
        new_session = not self.hub.exists(tenant, name)
        sent = read_messages(messages, new_session=new_session)
        model = body.get("model")
        settings = {"model": model} if isinstance(model, str) and model and new_session else None
        session = self.hub.open(tenant, name, user=user, settings=settings)
        with self.hub.turn_lock(session):
            history = self._store_unseen(session, sent)
        schema_tokens = session.tokenizer.count(json.dumps(tools)) if tools else 0
        budget = max(256, session.settings.budget - schema_tokens)
        return _Turn(session, body, tools, names, budget, history=history)

    def _store_unseen(self, session: Session, sent: Sequence[Message]) -> bool:
        """Store what is new (forking when the client's history left the branch).

        Returns whether the client sent its history (two messages or more, from the start).
        """
        new: list[Message] = []
        systems = [m for m in sent if m.role == "system"]
        if systems and session.system_prompt != systems[-1].content:
            new.append(systems[-1])
        rest = [m for m in sent if m.role != "system"]
        place = placement(_branch_view(session, len(rest)), [message_key(m) for m in rest])
        unseen = rest[place.start:]
        if place.after is not None:
            point = _fork_point(session, place.after)
            if unseen:
                # The link goes in with the messages: all stored, or none and no fork.
                unseen[0] = replace(unseen[0], metadata={
                    **unseen[0].metadata, BRANCH_META: {"after": point}})
            else:
                session.fork(point)  # only the reply is new: it will record the link
        new.extend(unseen)
        if new:
            session.add_many(new)
        return place.kind == "history" and len(rest) >= 2

    def _request(self, turn: _Turn, offer_own: bool) -> tuple[dict[str, Any], frozenset[str]]:
        """The upstream request body of one round, and memci's tool names offered in it."""
        context = turn.session.build(budget=turn.budget)
        own = [t for t in turn.session.tools("openai")
               if offer_own and t["function"]["name"] not in turn.client_names]
        out = {k: v for k, v in turn.body.items() if k not in ("messages", "tools")}
        out["messages"] = context.to_openai()["messages"]
        tools = [*turn.client_tools, *own]
        if tools:
            out["tools"] = tools
        else:
            out.pop("tool_choice", None)
            out.pop("parallel_tool_calls", None)
        return out, frozenset(t["function"]["name"] for t in own)

    def _store_reply(self, turn: _Turn, reply: Message) -> None:
        note: dict[str, Any] = {"history": True} if turn.history else {}
        if turn.shown_text:
            note["client_text"] = turn.shown_text + reply.content
        turn.session.add(_with_meta(reply, note) if note else reply)

    def _run_own(
        self, turn: _Turn, reply: Message, own: Sequence[ToolCallPart], final: bool
    ) -> None:
        """Run memci's tools the model called; store the call and results together."""
        results = []
        for call in own:
            try:
                text = turn.session.call_tool(call.name, call.arguments)
            except MemciError as exc:
                text = f"error: {exc}"
            results.append(_with_meta(Message.tool(call.id, text), {"internal": True}))
        if final:
            note: dict[str, Any] = {"internal_calls": [c.id for c in own]}
            if turn.history:
                note["history"] = True
            if turn.shown_text:
                note["client_text"] = turn.shown_text + reply.content
            reply = _with_meta(reply, note)
        else:
            reply = _with_meta(reply, {"internal": True})
        turn.session.add_many([reply, *results])

    # -- upstream I/O --------------------------------------------------------------------

    def _url(self) -> str:
        assert self.config.upstream_base_url
        return self.config.upstream_base_url.rstrip("/") + "/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.config.upstream_api_key:
            headers["Authorization"] = f"Bearer {self.config.upstream_api_key}"
        return headers

    def _client(self) -> httpx.AsyncClient:
        if self.http is None:
            raise ApiError(503, "not_ready", "the proxy is not started (no HTTP client)")
        return self.http

    async def _send(
        self, body: dict[str, Any], *, stream: bool, url: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        request = self._client().build_request(
            "POST", url or self._url(), headers=dict(headers or self._headers()),
            content=json.dumps(body, ensure_ascii=False).encode())
        try:
            return await self._client().send(request, stream=stream)
        except httpx.TimeoutException as exc:
            raise ApiError(504, "upstream_timeout",
                           f"the upstream model did not answer in time: {exc!r}") from exc
        except httpx.HTTPError as exc:
            raise ApiError(502, "upstream_unreachable",
                           f"cannot reach the upstream model: {exc!r}") from exc

    # -- non-streaming -------------------------------------------------------------------

    async def _complete(self, turn: _Turn) -> Response:
        rounds = self.config.max_tool_rounds
        for number in range(rounds + 1):
            body, own_names = await _run(self._request, turn, number < rounds)
            body.pop("stream", None)
            body.pop("stream_options", None)
            response = await self._send(body, stream=False)
            if response.status_code >= 400:
                return _upstream_error(response.status_code, response.content)
            try:
                data = response.json()
                message = data["choices"][0]["message"]
            except (ValueError, LookupError, TypeError) as exc:
                raise ApiError(502, "upstream_bad_reply",
                               f"the upstream reply is not a chat completion: {exc!r}") from exc
            reply = _read_reply(message)
            own = [c for c in reply.tool_calls if c.name in own_names]
            if not own:
                await _run(self._store_reply, turn, reply)
                return JSONResponse(data)
            final = len(own) < len(reply.tool_calls)
            await self.tool_threads.run(partial(self._run_own, turn, reply, own, final))
            if final:
                ids = {c.id for c in own}
                message["tool_calls"] = [c for c in message.get("tool_calls") or ()
                                         if c.get("id") not in ids]
                return JSONResponse(data)
        raise AssertionError("the last round offers no memci tool")  # pragma: no cover

    # -- streaming -----------------------------------------------------------------------

    async def _stream(self, turn: _Turn) -> Response:
        body, own_names = await _run(self._request, turn, self.config.max_tool_rounds > 0)
        upstream = await self._send(body, stream=True)
        if upstream.status_code >= 400:
            content = await upstream.aread()
            await upstream.aclose()
            return _upstream_error(upstream.status_code, content)
        return StreamingResponse(self._rounds(turn, upstream, own_names),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    async def _rounds(
        self, turn: _Turn, upstream: httpx.Response, own_names: frozenset[str]
    ) -> AsyncIterator[str]:
        number = 0
        try:
            while True:
                chunks = Chunks()
                held: list[str] = []
                passing = True
                shown = ""
                async for data in self._chunks_of(upstream):
                    if data == "[DONE]":
                        break
                    before = len(chunks.text)
                    try:
                        chunks.add(json.loads(data))
                    except ValueError:
                        pass
                    if passing and chunks.calls:
                        passing = False  # a tool call starts: hold the rest of the round
                        shown = "".join(chunks.text[:before])
                    if passing:
                        yield sse(data)
                    else:
                        held.append(data)
                await upstream.aclose()
                if passing:
                    shown = "".join(chunks.text)
                reply = _read_reply(chunks.message())
                own = [c for c in reply.tool_calls if c.name in own_names]
                if not own:
                    for data in held:
                        yield sse(data)
                    yield sse("[DONE]")
                    await _run(self._store_reply, turn, reply)
                    return
                final = len(own) < len(reply.tool_calls)
                await self.tool_threads.run(partial(self._run_own, turn, reply, own, final))
                if final:
                    drop = {i for i, c in chunks.calls.items() if c["id"] in {o.id for o in own}}
                    index_of = {i: n for n, i in enumerate(sorted(set(chunks.calls) - drop))}
                    for data in held:
                        yield sse(drop_calls(data, drop, index_of))
                    yield sse("[DONE]")
                    return
                turn.shown_text += shown
                number += 1
                body, own_names = await _run(self._request, turn,
                                             number < self.config.max_tool_rounds)
                upstream = await self._send(body, stream=True)
                if upstream.status_code >= 400:
                    content = await upstream.aread()
                    error = _upstream_error(upstream.status_code, content)
                    yield sse(bytes(error.body).decode())
                    yield sse("[DONE]")
                    return
        except ApiError as exc:
            yield sse(json.dumps(error_body(exc.code, exc.message)))
            yield sse("[DONE]")
        except MemciError as exc:
            problem = classify(exc)
            yield sse(json.dumps(error_body(problem.code, problem.message)))
            yield sse("[DONE]")
        finally:
            await upstream.aclose()

    async def _chunks_of(self, upstream: httpx.Response) -> AsyncIterator[str]:
        """Stream chunk payloads; a JSON answer (stream ignored upstream) becomes chunks."""
        if "text/event-stream" not in upstream.headers.get("content-type", ""):
            content = await upstream.aread()
            try:
                data = json.loads(content)
            except ValueError as exc:
                raise ApiError(502, "upstream_bad_reply",
                               "the upstream stream is neither SSE nor JSON") from exc
            for chunk in as_chunks(data):
                yield chunk
            return
        async for data in sse_data(upstream):
            yield data


def _load(session: Session, seqs: Sequence[int]) -> list[Message]:
    """The messages with these seqs (increasing), read in few queries."""
    wanted = set(seqs)
    out: list[Message] = []
    for first, last in runs(seqs):
        out += [m for m in session.engine.store.messages(session.record, after=first - 1,
                                                         upto=last) if m.seq in wanted]
    return out


def _visible(messages: Sequence[Message]) -> list[Seen]:
    return [(k, m.seq or 0) for m in messages if (k := visible_key(m)) is not None]


def _branch_view(session: Session, sent: int) -> BranchView:
    """The overlap rule's view of the session's branch (see memci.server._overlap).

    A long branch is read at its two ends only.
    """
    seqs = session.branch_seqs()
    want_head, want_tail = sent + 1, 2 * sent + 16
    span = want_tail + 16
    while True:
        loaded = _load(session, seqs[:span])
        head = _visible(loaded)
        if span >= len(seqs):
            return BranchView(head, head, True, _sent_history(loaded))
        if len(head) >= want_head:
            break
        span *= 4
    span = want_tail + 16
    while True:
        loaded = _load(session, seqs[-span:])
        tail = _visible(loaded)
        if len(tail) >= want_tail or span >= len(seqs):
            return BranchView(head[:want_head], tail[-want_tail:], False,
                              _sent_history(loaded))
        span *= 4


def _sent_history(messages: Sequence[Message]) -> bool:
    """Whether the newest reply among ``messages`` answered a client that sent its history."""
    for message in reversed(messages):
        meta = proxy_meta(message)
        if message.role == "assistant" and not meta.get("internal"):
            return meta.get("history") is True
    return False


def _fork_point(session: Session, after: int) -> int:
    """Where a fork after the visible message ``after`` starts.

    After it and after the results of memci's own calls it made: they belong to it, and
    the client never saw them.
    """
    if after == 0:
        return 0
    seqs = session.branch_seqs()
    at = bisect_left(seqs, after)
    (message,) = _load(session, [after])
    own = set(proxy_meta(message).get("internal_calls") or ())
    point = after
    for follower in _load(session, seqs[at + 1:at + 1 + len(own)]) if own else ():
        result = follower.tool_result
        if result is None or not proxy_meta(follower).get("internal") \
                or result.call_id not in own:
            break
        point = follower.seq or point
    return point
