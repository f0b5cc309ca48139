"""Everything a model client does except I/O: settings, requests, retry policy, replies.

:class:`BaseLLMClient` holds a client's settings (validated once, in the constructor) and
the decisions shared by every transport: how a call becomes a request, which outcomes are
retried and after how long, and how a reply or a failure becomes a :class:`Completion` or
a typed :class:`~memci.errors.LLMError`. A transport (the sync clients in ``_client``, the
async ones in ``_aclient``) only sends bytes, sleeps, and loops on these decisions, so the
two can never disagree about what a reply means.

Invariants: the API key never appears in a repr, log line or error message; a request is
serialized once and resent byte-identical on every retry; only transient failures are
retried (the statuses in :data:`RETRY_STATUSES`, timeouts, dropped or refused
connections), at most ``max_retries`` times.
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal

import httpx

from memci._dataclasses import dataclass
from memci.errors import (
    ConfigError,
    InvalidInputError,
    LLMConnectionError,
    LLMError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
)
from memci.llm._formats import ChatFormat, MalformedReply
from memci.llm._types import Completion
from memci.messages import Message, coerce

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_READ_TIMEOUT",
    "RETRY_STATUSES",
    "BaseLLMClient",
    "Failure",
    "PreparedRequest",
    "parse_retry_after",
]

logger = logging.getLogger("memci.llm")

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 3

#: Statuses worth another try: the five the HTTP spec and providers use for "later",
#: plus 408 (request timeout) and Anthropic's 529 (overloaded).
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})

# Transport errors that say nothing about the request itself, so resending may work.
_RETRYABLE_TRANSPORT = (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """One serialized request, resent unchanged on every retry."""

    url: str
    headers: Mapping[str, str]
    content: bytes


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt: what happened, whether to retry, and any server-given wait."""

    kind: Literal["status", "timeout", "connection", "response"]
    detail: str
    retryable: bool
    status: int = 0
    body: str = ""
    retry_after: float | None = None


class BaseLLMClient:
    """Settings and the non-I/O half of a call, shared by every transport."""

    def __init__(
        self,
        chat_format: ChatFormat,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_retry_after: float = 30.0,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("model is required: pass model= or set MEMCI_LLM_MODEL")
        url = (base_url or chat_format.default_base_url).strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"base_url {base_url!r} is not an http(s) URL "
                f"(for example {chat_format.default_base_url})"
            )
        for name, value in (("connect_timeout", connect_timeout),
                            ("read_timeout", read_timeout)):
            if not _positive(value):
                raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        for name, value in (("backoff", backoff), ("max_backoff", max_backoff),
                            ("max_retry_after", max_retry_after)):
            if not (_positive(value) or value == 0):
                raise ConfigError(f"{name} must be a number of seconds >= 0, got {value!r}")
        self._format = chat_format
        self._model = model.strip()
        self._api_key = api_key or None
        self._base_url = url
        self._url = url + chat_format.path
        self._timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
        self._max_retries = max_retries
        self._backoff = float(backoff)
        self._max_backoff = float(max_backoff)
        self._max_retry_after = float(max_retry_after)
        self._extra_headers = dict(headers or {})
        self._extra_body = dict(extra_body or {})

    @property
    def provider(self) -> str:
        """The wire format: ``openai`` or ``anthropic``."""
        return self._format.name

    @property
    def model(self) -> str:
        """The model every request names."""
        return self._model

    @property
    def base_url(self) -> str:
        """The endpoint's base URL, without a trailing slash."""
        return self._base_url

    @property
    def max_retries(self) -> int:
        """How many times a transient failure is retried before it is raised."""
        return self._max_retries

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r})"

    # -- building a request ----------------------------------------------------------------

    def _prepare(
        self,
        messages: Sequence[Message | Mapping[str, Any]],
        *,
        system: str | None,
        max_tokens: int,
        temperature: float | None,
    ) -> PreparedRequest:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise InvalidInputError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        if temperature is not None and not (
            isinstance(temperature, int | float) and math.isfinite(temperature)
        ):
            raise InvalidInputError(f"temperature must be a number, got {temperature!r}")
        if isinstance(messages, Message | str | bytes | Mapping):
            raise InvalidInputError("messages must be a list of messages, not one message")
        converted: list[Message] = []
        for message in messages:
            converted.extend(coerce(message))
        if not converted and not system:
            raise InvalidInputError("nothing to send: give at least one message or a system text")
        body = self._format.body(
            self._model, converted, system=system, max_tokens=max_tokens,
            temperature=temperature,
        )
        # Caller extras (e.g. an Ollama "options" or Qwen "enable_thinking") win over
        # ours, so any server-specific knob can be set without a new argument here.
        body.update(self._extra_body)
        headers = {"content-type": "application/json", "accept": "application/json"}
        headers.update(self._format.headers(self._api_key))
        headers.update(self._extra_headers)
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        return PreparedRequest(self._url, headers, content)

    # -- reading what came back ------------------------------------------------------------

    def _read_reply(
        self, status: int, headers: Mapping[str, str], content: bytes
    ) -> Completion | Failure:
        """Read a reply: a completion, or the failure it stands for."""
        if not 200 <= status < 300:
            return Failure(
                "status",
                f"HTTP {status}",
                retryable=status in RETRY_STATUSES,
                status=status,
                body=content.decode("utf-8", "replace"),
                retry_after=parse_retry_after(headers),
            )
        text = content.decode("utf-8", "replace")
        try:
            data = json.loads(content)
        except ValueError:
            return Failure("response", "the reply is not JSON", retryable=False, body=text)
        try:
            return self._format.parse(data, model=self._model)
        except MalformedReply as exc:
            return Failure("response", str(exc), retryable=False, body=text)

    def _transport_failure(self, exc: httpx.HTTPError) -> Failure:
        """Classify an httpx exception (timeouts and dropped connections are transient)."""
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if isinstance(exc, httpx.TimeoutException):
            return Failure("timeout", detail, retryable=True)
        if isinstance(exc, httpx.DecodingError):
            return Failure("response", f"the reply cannot be decoded ({detail})",
                           retryable=False)
        return Failure("connection", detail, retryable=isinstance(exc, _RETRYABLE_TRANSPORT))

    def _retry_delay(self, retry: int, failure: Failure) -> float | None:
        """Seconds to wait before retry number ``retry`` (0-based), or None to give up."""
        if not failure.retryable or retry >= self._max_retries:
            return None
        if failure.retry_after is not None:
            return min(failure.retry_after, self._max_retry_after)
        # Exponential backoff with "equal jitter": never zero, and spread so that many
        # workers hit by the same outage do not come back in step.
        step = min(self._max_backoff, self._backoff * 2.0**retry)
        return step / 2 + random.uniform(0, step / 2)

    def _error(self, failure: Failure, attempts: int) -> LLMError:
        """Build the exception to raise for ``failure`` after ``attempts`` tries."""
        where = f"POST {self._url}"
        if attempts > 1:
            where += f" (gave up after {attempts} attempts)"
        if failure.kind == "status":
            return LLMHTTPError(where, status=failure.status, body=failure.body)
        if failure.kind == "timeout":
            return LLMTimeoutError(f"{where}: no answer in time: {failure.detail}")
        if failure.kind == "connection":
            return LLMConnectionError(f"{where}: {failure.detail}")
        return LLMResponseError(f"{where}: malformed reply: {failure.detail}",
                                body=failure.body)

    def _log_retry(self, failure: Failure, retry: int, delay: float) -> None:
        logger.info(
            "%s %s failed (%s); retry %d of %d in %.2fs",
            self._format.name, self._url, failure.detail, retry + 1, self._max_retries, delay,
        )


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds a server asked us to wait, from ``Retry-After`` (or ``retry-after-ms``).

    ``Retry-After`` may be seconds or an HTTP date; anything unreadable or negative
    counts as absent, so the backoff applies instead.
    """
    headers = {name.lower(): value for name, value in headers.items()}
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            value = -1.0
        if _positive(value) or value == 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
    return seconds if _positive(seconds) or seconds == 0 else None


def _positive(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and value > 0)
