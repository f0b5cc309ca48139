"""The asyncio clients: :class:`AsyncOpenAIChatClient` and :class:`AsyncAnthropicClient`.

The same clients as :mod:`memci.llm._client` over ``httpx.AsyncClient``: only I/O lives
here (send the prepared request, ``asyncio.sleep`` between retries, raise what
:class:`~memci.llm._base.BaseLLMClient` decided), so a sync and an async client make the
same request bytes, retry the same failures after the same waits and read the same reply
into the same :class:`~memci.llm.Completion`. An injected ``http_client`` is used as
given and never closed by memci; without one, each client opens its own connection pool
on first use and :meth:`AsyncLLMClient.aclose` (or ``async with``) releases it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import httpx

from memci import _trace
from memci.errors import ConfigError
from memci.llm._base import BaseLLMClient, Failure
from memci.llm._formats import AnthropicFormat, ChatFormat, OpenAIFormat
from memci.llm._types import Completion
from memci.messages import Message

__all__ = ["ASYNC_PROVIDERS", "AsyncAnthropicClient", "AsyncLLMClient", "AsyncOpenAIChatClient"]


class AsyncLLMClient(BaseLLMClient):
    """A client over ``httpx.AsyncClient``; the provider comes from its format."""

    def __init__(
        self,
        chat_format: ChatFormat,
        model: str,
        *,
        http_client: httpx.AsyncClient | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(chat_format, model, **settings)
        if http_client is not None and not isinstance(http_client, httpx.AsyncClient):
            # A sync httpx.Client here would fail on first use with a confusing error.
            raise ConfigError(
                f"http_client must be an httpx.AsyncClient, got {type(http_client).__name__}"
            )
        self._http_client = http_client
        self._owns_http = http_client is None

    async def complete(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        system: str | None = None,
        max_tokens: int = 512,
        temperature: float | None = None,
    ) -> Completion:
        """Send ``messages`` (after ``system``) and return the model's reply.

        As :meth:`memci.llm.SyncLLMClient.complete`, awaited.
        """
        with _trace.span("chat", self.model, kind="client") as traced:
            if traced is not None:
                _trace.describe_chat_request(traced, self, max_tokens, temperature)
            reply = await self._complete(messages, system=system, max_tokens=max_tokens,
                                         temperature=temperature)
            if traced is not None:
                _trace.describe_chat(traced, reply)
            return reply

    async def _complete(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        system: str | None,
        max_tokens: int,
        temperature: float | None,
    ) -> Completion:
        request = self._prepare(
            messages, system=system, max_tokens=max_tokens, temperature=temperature
        )
        http = self._http()
        retry = 0
        while True:
            outcome: Completion | Failure
            try:
                response = await http.post(
                    request.url,
                    content=request.content,
                    headers=request.headers,
                    timeout=self._timeout,
                )
            except httpx.HTTPError as exc:
                outcome = self._transport_failure(exc)
            else:
                outcome = self._read_reply(
                    response.status_code, response.headers, response.content
                )
            if isinstance(outcome, Completion):
                return outcome
            delay = self._retry_delay(retry, outcome)
            if delay is None:
                raise self._error(outcome, attempts=retry + 1)
            self._log_retry(outcome, retry, delay)
            await asyncio.sleep(delay)
            retry += 1

    async def aclose(self) -> None:
        """Release the connection pool this client opened (an injected one is left open).

        The client stays usable: a later call opens a new pool.
        """
        http, self._http_client = self._http_client, None
        if not self._owns_http:
            self._http_client = http
            return
        if http is not None:
            await http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _http(self) -> httpx.AsyncClient:
        # No await between the check and the assignment: one loop makes one pool.
        if self._http_client is None:
            # Redirects are not followed, as in the sync client.
            self._http_client = httpx.AsyncClient(timeout=self._timeout)
        return self._http_client


class AsyncOpenAIChatClient(AsyncLLMClient):
    """:class:`~memci.llm.OpenAIChatClient` for asyncio (the same arguments)."""

    def __init__(
        self,
        model: str,
        *,
        http_client: httpx.AsyncClient | None = None,
        max_tokens_param: str = "max_tokens",
        **settings: Any,
    ) -> None:
        super().__init__(OpenAIFormat(max_tokens_param=max_tokens_param), model,
                         http_client=http_client, **settings)


class AsyncAnthropicClient(AsyncLLMClient):
    """:class:`~memci.llm.AnthropicClient` for asyncio (the same arguments)."""

    def __init__(
        self, model: str, *, http_client: httpx.AsyncClient | None = None, **settings: Any
    ) -> None:
        super().__init__(AnthropicFormat(), model, http_client=http_client, **settings)


#: :data:`~memci.llm.PROVIDERS` for asyncio: the async client of each provider, by name.
ASYNC_PROVIDERS: Mapping[str, type[AsyncOpenAIChatClient] | type[AsyncAnthropicClient]] = {
    "openai": AsyncOpenAIChatClient,
    "anthropic": AsyncAnthropicClient,
}
