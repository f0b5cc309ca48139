"""OpenTelemetry spans of memci: one helper, and nothing at all when no tracer is set.

memci traces through the OpenTelemetry API (``pip install 'memci[otel]'``) and the
global tracer provider the application sets (``opentelemetry.trace.set_tracer_provider``);
it never sets one itself, never exports, and does no work at import.

Every traced point calls :func:`span` (a context manager) and, only when it yields a
span, describes it with one of the ``describe_*`` functions::

    with span("memci.build") as traced:
        context = ...
        if traced is not None:
            describe_build(traced, session, context, before)

Invariants:

- **no cost when not traced**: without the ``opentelemetry`` package, while nothing has
  imported its API (memci does not import it for the application), or while the
  global provider is the API's default (a proxy: nothing set yet) or a no-op one,
  :func:`span` returns one shared null context: no span, no attributes, no allocation;
  what it costs is a function call and a look at the global provider (tens of
  nanoseconds; ``bench/bench_otel.py``);
- a span that is not recording (sampled out) yields None, so attributes are computed
  only for spans that keep them;
- an exception inside a span is recorded on it and sets its status to ERROR, then
  propagates unchanged; tracing never changes what memci does or returns;
- attributes hold figures and names only (session, tenant, model, tool, token counts):
  never the text of a message, a query or a tool's output;
- a span that ends with an exception carries ``error.type`` (the exception's class).

Span kinds and attributes follow the OpenTelemetry GenAI semantic conventions: a call to a
model over the network (memci's own upkeep calls: ``chat {model}``, and ``embeddings
{model}`` of a remote embedder) is a CLIENT span with ``gen_ai.operation.name``,
``gen_ai.provider.name``, the request and response model, ``server.address`` and the
usage the provider reported (``gen_ai.usage.*``, from its answer only). memci's own work
(``memci.add``, ``memci.build``, ``memci.search``, ``execute_tool {name}``, jobs, a local
embedder) is INTERNAL and described with ``memci.*`` attributes: the size of a built
context is ``memci.context.tokens``, never a model's ``gen_ai.usage.*``. Every session
span carries ``gen_ai.conversation.id`` (the session's name), the key an agent's own GenAI
spans of the same conversation carry (see ``docs/integrations/otel.md``).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Literal, Protocol

from memci._version import __version__

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "describe_add",
    "describe_build",
    "describe_chat",
    "describe_chat_request",
    "describe_job",
    "describe_search",
    "describe_tool",
    "embed",
    "span",
]

_OFF: AbstractContextManager[None] = nullcontext()
_UNKNOWN = object()
_api: Any = None  # opentelemetry.trace once imported; False when it cannot be
_ENV_PROVIDER = "OTEL_PYTHON_TRACER_PROVIDER"
# (the global provider last seen, the tracer made from it, or None when it is a no-op)
_seen: tuple[object, Tracer | None] = (None, None)


def _tracer() -> Tracer | None:
    """memci's tracer from the global provider, or None while there is nothing to trace to."""
    global _api, _seen
    api = _api
    if api is None:
        api = _opentelemetry()
        if api is None:
            return None
        _api = api
    if api is False:
        return None
    # The provider the application set, read where the API keeps it: while none is set,
    # get_tracer_provider() looks the environment up and raises and catches a KeyError on
    # every call (over a microsecond). The public call stands in if the API moves it.
    provider: Any = getattr(api, "_TRACER_PROVIDER", _UNKNOWN)
    if provider is None:
        return None
    if provider is _UNKNOWN:
        provider = api.get_tracer_provider()
    seen = _seen
    if provider is seen[0]:
        return seen[1]
    # The API's proxy stands in until an application sets a provider; a span from it
    # would be a no-op object, made and dropped on every call.
    if isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider):
        tracer = None
    else:
        tracer = provider.get_tracer("memci", __version__)
    _seen = (provider, tracer)
    return tracer


def _opentelemetry() -> Any:
    """``opentelemetry.trace`` once there can be something to trace to; False: not installed.

    None while nothing can have set a provider: an application that traces imports the
    API to set one, or names one in ``OTEL_PYTHON_TRACER_PROVIDER``. Until then the API
    is not imported here: that would cost every untraced process (and every CLI call) a
    few tens of milliseconds at its first build.
    """
    api = sys.modules.get("opentelemetry.trace")
    if api is None:
        if _ENV_PROVIDER not in os.environ:
            return None
        try:
            api = importlib.import_module("opentelemetry.trace")
        except ImportError:
            return False
    api.get_tracer_provider()  # sets the provider named by the environment, if any
    return api


Kind = Literal["internal", "client"]
"""``client``: a call to a model over the network; ``internal``: memci's own work."""


def span(name: str, detail: object = None, *,
         kind: Kind = "internal") -> AbstractContextManager[Span | None]:
    """A span around the block, yielded when it records (else None).

    It is named ``name``, or ``"{name} {detail}"`` when ``detail`` is given (the name
    is made only when there is a tracer, so an untraced call builds no string).
    """
    tracer = _tracer()
    if tracer is None:
        return _OFF
    return _recording(tracer, name if detail is None else f"{name} {detail}", kind)


@contextmanager
def _recording(tracer: Tracer, name: str, kind: Kind) -> Iterator[Span | None]:
    span_kind = _api.SpanKind.CLIENT if kind == "client" else _api.SpanKind.INTERNAL
    with tracer.start_as_current_span(name, kind=span_kind, record_exception=True,
                                      set_status_on_exception=True) as current:
        try:
            yield current if current.is_recording() else None
        except BaseException as exc:
            if current.is_recording():
                current.set_attribute("error.type", type(exc).__qualname__)
            raise


# -- what each span says -----------------------------------------------------------------


class _Session(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def tenant(self) -> str: ...


def _conversation(traced: Span, session: _Session) -> None:
    traced.set_attribute("gen_ai.conversation.id", session.name)
    traced.set_attribute("memci.tenant", session.tenant)


def describe_add(traced: Span, session: _Session, stored: Sequence[Any]) -> None:
    """``memci.add``: how many messages were stored, their tokens, the last seq."""
    _conversation(traced, session)
    traced.set_attribute("memci.messages", len(stored))
    traced.set_attribute("memci.tokens", sum(m.tokens or 0 for m in stored))
    if stored and stored[-1].seq is not None:
        traced.set_attribute("memci.seq", stored[-1].seq)


def describe_build(
    traced: Span, session: _Session, context: Any, model: str | None,
    counts: Mapping[str, int],
) -> None:
    """``memci.build``: the context's tokens by segment, the budget, what it saved.

    The context is what memci built, not a model's usage: its size is
    ``memci.context.tokens`` and the session's model ``memci.model``. ``counts`` are the
    session's archive, recall and evict counts so far, in pages (as ``session.stats()``);
    ``memci.events`` says what this build archived or evicted.
    """
    stats = context.stats
    _conversation(traced, session)
    if model:
        traced.set_attribute("memci.model", model)
    traced.set_attribute("memci.context.tokens", stats.total_tokens)
    traced.set_attribute("memci.budget", stats.budget)
    traced.set_attribute("memci.tokens_saved", stats.saved_tokens)
    traced.set_attribute("memci.tokens.full", stats.full_tokens)
    traced.set_attribute("memci.tokens.prefix", stats.prefix_tokens)
    for segment, tokens in stats.sections.items():
        traced.set_attribute(f"memci.tokens.{segment}", tokens)
    traced.set_attribute("memci.messages", stats.messages)
    traced.set_attribute("memci.recipe", stats.recipe)
    traced.set_attribute("memci.strategy", stats.strategy)
    traced.set_attribute("memci.events", list(stats.events))
    for kind, attribute in (("archive", "memci.archived"), ("recall", "memci.recalled"),
                            ("evict", "memci.evicted")):
        traced.set_attribute(attribute, counts.get(kind, 0))


def describe_search(traced: Span, session: _Session, scope: str, k: int,
                    hits: Sequence[Any]) -> None:
    """``memci.search``: where it looked, how many it asked for and found (no query text)."""
    _conversation(traced, session)
    traced.set_attribute("memci.search.scope", scope)
    traced.set_attribute("memci.search.k", k)
    traced.set_attribute("memci.search.hits", len(hits))


def describe_tool(traced: Span, session: _Session, name: str, result: str) -> None:
    """``execute_tool {name}``: one of memci's own tools; a refusal is an error."""
    _conversation(traced, session)
    traced.set_attribute("gen_ai.operation.name", "execute_tool")
    traced.set_attribute("gen_ai.tool.name", name)
    traced.set_attribute("gen_ai.tool.type", "function")
    traced.set_attribute("memci.tool.result_chars", len(result))
    if result.startswith("error:"):
        from opentelemetry.trace import Status, StatusCode

        traced.set_attribute("error.type", "tool_error")
        traced.set_status(Status(StatusCode.ERROR, result[:200]))


def describe_job(traced: Span, kind: str, key: str, attempt: int, outcome: str) -> None:
    """``memci.job {kind}``: a background job's attempt and how it ended."""
    traced.set_attribute("memci.job.kind", kind)
    traced.set_attribute("memci.job.key", key)
    traced.set_attribute("memci.job.attempt", attempt)
    traced.set_attribute("memci.job.outcome", outcome)


def _server(traced: Span, base_url: str) -> None:
    """``server.address`` and ``server.port`` of the endpoint a model call goes to."""
    from urllib.parse import urlsplit  # a traced model call's: import memci does not need it

    parts = urlsplit(base_url)
    if parts.hostname:
        traced.set_attribute("server.address", parts.hostname)
        traced.set_attribute("server.port",
                             parts.port or (443 if parts.scheme == "https" else 80))


def describe_chat_request(traced: Span, client: Any, max_tokens: int,
                          temperature: float | None) -> None:
    """``chat {model}`` before the call: what is asked of which endpoint (CLIENT span)."""
    traced.set_attribute("gen_ai.operation.name", "chat")
    traced.set_attribute("gen_ai.provider.name", client.provider)
    traced.set_attribute("gen_ai.request.model", client.model)
    traced.set_attribute("gen_ai.request.max_tokens", max_tokens)
    if temperature is not None:
        traced.set_attribute("gen_ai.request.temperature", temperature)
    _server(traced, client.base_url)


def describe_chat(traced: Span, reply: Any) -> None:
    """``chat {model}`` after the call: the model's answer and the usage it reported."""
    traced.set_attribute("gen_ai.response.model", reply.model)
    answer_id = reply.raw.get("id") if isinstance(reply.raw, Mapping) else None
    if isinstance(answer_id, str) and answer_id:
        traced.set_attribute("gen_ai.response.id", answer_id)
    if reply.input_tokens is not None:
        traced.set_attribute("gen_ai.usage.input_tokens", reply.input_tokens)
    if reply.output_tokens is not None:
        traced.set_attribute("gen_ai.usage.output_tokens", reply.output_tokens)
    if reply.stop_reason:
        traced.set_attribute("gen_ai.response.finish_reasons", [reply.stop_reason])


class _Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def embed(embedder: _Embedder, texts: Sequence[str]) -> list[list[float]]:
    """``embedder.embed(texts)`` in an ``embeddings {model}`` span.

    CLIENT when the embedder calls an endpoint (it has a ``base_url``), INTERNAL for a
    model in this process; the provider is the embedder name's kind (``openai`` of
    ``openai:text-embedding-3-small``).
    """
    if _tracer() is None:
        return embedder.embed(texts)
    provider, _, model = embedder.name.partition(":")
    model = model or embedder.name
    base_url = getattr(embedder, "base_url", None)
    remote = isinstance(base_url, str) and bool(base_url)
    with span("embeddings", model, kind="client" if remote else "internal") as traced:
        if traced is not None:
            traced.set_attribute("gen_ai.operation.name", "embeddings")
            traced.set_attribute("gen_ai.provider.name", provider)
            traced.set_attribute("gen_ai.request.model", model)
            if remote:
                _server(traced, str(base_url))
        vectors = embedder.embed(texts)
        if traced is not None:
            traced.set_attribute("memci.texts", len(texts))
            if vectors:
                traced.set_attribute("gen_ai.embeddings.dimension.count", len(vectors[0]))
        return vectors
