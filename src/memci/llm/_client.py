"""The synchronous clients: :class:`OpenAIChatClient` and :class:`AnthropicClient`.

Only I/O lives here: send the prepared request with ``httpx``, sleep between retries, and
raise what :class:`~memci.llm._base.BaseLLMClient` decided. An injected ``http_client``
is used as given and never closed by memci; without one, each client opens its own
connection pool on first use and :meth:`SyncLLMClient.close` (or ``with``) releases it.
A client is safe to share between threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import httpx

from memci import _trace
from memci.errors import ConfigError
from memci.llm._base import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_READ_TIMEOUT,
    BaseLLMClient,
    Failure,
)
from memci.llm._formats import AnthropicFormat, ChatFormat, OpenAIFormat
from memci.llm._types import Completion
from memci.messages import Message

__all__ = ["PROVIDERS", "AnthropicClient", "OpenAIChatClient", "SyncLLMClient"]


class SyncLLMClient(BaseLLMClient):
    """A blocking client over ``httpx.Client``; the provider comes from its format."""

    def __init__(
        self,
        chat_format: ChatFormat,
        model: str,
        *,
        http_client: httpx.Client | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(chat_format, model, **settings)
        if http_client is not None and not isinstance(http_client, httpx.Client):
            # An httpx.AsyncClient here would fail on first use with a confusing error.
            raise ConfigError(
                f"http_client must be an httpx.Client, got {type(http_client).__name__}"
            )
        self._http_client = http_client
        self._owns_http = http_client is None
        self._lock = threading.Lock()

    def complete(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        system: str | None = None,
        max_tokens: int = 512,
        temperature: float | None = None,
    ) -> Completion:
        """Send ``messages`` (after ``system``) and return the model's reply.

        ``messages`` are memci messages (or dicts :func:`memci.messages.coerce` reads).
        Transient failures are retried with backoff; what is left raises an
        :class:`~memci.errors.LLMError` subclass.
        """
        with _trace.span("chat", self.model, kind="client") as traced:
            if traced is not None:
                _trace.describe_chat_request(traced, self, max_tokens, temperature)
            reply = self._complete(messages, system=system, max_tokens=max_tokens,
                                   temperature=temperature)
            if traced is not None:
                _trace.describe_chat(traced, reply)
            return reply

    def _complete(
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
                response = http.post(
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
            time.sleep(delay)
            retry += 1

    def close(self) -> None:
        """Release the connection pool this client opened (an injected one is left open).

        The client stays usable: a later call opens a new pool.
        """
        with self._lock:
            http, self._http_client = self._http_client, None
            if not self._owns_http:
                self._http_client = http
                return
        if http is not None:
            http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _http(self) -> httpx.Client:
        with self._lock:
            if self._http_client is None:
                # Redirects are not followed: a POST that is redirected is a
                # misconfigured base URL, better reported than silently resent.
                self._http_client = httpx.Client(timeout=self._timeout)
            return self._http_client


class OpenAIChatClient(SyncLLMClient):
    """A client for OpenAI-compatible Chat Completions: ``POST {base_url}/chat/completions``.

    Works with OpenAI, vLLM, Ollama (``http://localhost:11434/v1``), DeepSeek, Qwen's
    compatible mode and other servers of that shape. ``api_key`` is sent as
    ``Authorization: Bearer``; local servers usually need none.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.Client | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 30.0,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_tokens_param: str = "max_tokens",
    ) -> None:
        super().__init__(
            OpenAIFormat(max_tokens_param=max_tokens_param),
            model,
            http_client=http_client,
            api_key=api_key,
            base_url=base_url,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            max_retry_after=max_retry_after,
            headers=headers,
            extra_body=extra_body,
        )


class AnthropicClient(SyncLLMClient):
    """A client for Anthropic Messages: ``POST {base_url}/v1/messages``.

    ``api_key`` is sent as ``x-api-key`` with ``anthropic-version: 2023-06-01``; system
    text (the ``system`` argument, then any system messages) goes to the ``system`` field.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: httpx.Client | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 30.0,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            AnthropicFormat(),
            model,
            http_client=http_client,
            api_key=api_key,
            base_url=base_url,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            max_retry_after=max_retry_after,
            headers=headers,
            extra_body=extra_body,
        )


#: The client of each provider ``client_from_env`` knows (``PROVIDER_NAMES``), by name.
PROVIDERS: Mapping[str, type[OpenAIChatClient] | type[AnthropicClient]] = {
    "openai": OpenAIChatClient,
    "anthropic": AnthropicClient,
}
