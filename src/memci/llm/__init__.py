"""Minimal model clients for memci's own upkeep calls (summaries, compaction, judging).

The agent's own LLM calls stay the agent's; these clients serve only memci's background
work, and memci runs fully without one. Two wire formats, one behaviour:

- :class:`OpenAIChatClient` — OpenAI-compatible Chat Completions (OpenAI, vLLM, Ollama,
  DeepSeek, Qwen compatible mode);
- :class:`AnthropicClient` — Anthropic Messages.

Both answer ``complete(messages, *, system=None, max_tokens=512, temperature=None)``
with a :class:`Completion`, retry transient failures (429, 5xx, timeouts, dropped
connections) with exponential backoff and jitter, honour ``Retry-After``, and raise a
typed :class:`~memci.errors.LLMError` for the rest. :class:`LLMClient` is the protocol a
summarizer accepts, so any object with that ``complete`` method will do.
:func:`client_from_env` builds the configured client from ``MEMCI_LLM_*`` variables.

For asyncio, :class:`AsyncOpenAIChatClient` and :class:`AsyncAnthropicClient` (and
:func:`async_client_from_env`) do the same over ``httpx.AsyncClient``: ``await
client.complete(...)``. Everything but the I/O is shared (``BaseLLMClient``), so both
make the same requests and read the same replies.

What a model wrote is read through :func:`clean_answer` (the answer without reasoning,
fences, preamble or closing offer; a refusal or error report raises) and
:func:`answer_json` (the first JSON object in it), so every upkeep call tolerates the
same habits of real models.
"""

from typing import TYPE_CHECKING, Any

from memci.llm._answers import answer_bool, answer_json, clean_answer, is_refusal
from memci.llm._env import (
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MODEL,
    ENV_PROVIDER,
    async_client_from_env,
    client_from_env,
)
from memci.llm._formats import ANTHROPIC_VERSION
from memci.llm._types import Completion, LLMClient

if TYPE_CHECKING:
    from memci.llm._aclient import AsyncAnthropicClient, AsyncLLMClient, AsyncOpenAIChatClient
    from memci.llm._base import (
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_MAX_RETRIES,
        DEFAULT_READ_TIMEOUT,
        RETRY_STATUSES,
        BaseLLMClient,
        parse_retry_after,
    )
    from memci.llm._client import PROVIDERS, AnthropicClient, OpenAIChatClient, SyncLLMClient

# The clients' modules import httpx (and asyncio): they load when one of their names is
# first asked for, so an engine without an LLM never pays for them.
_SYNC = frozenset({"PROVIDERS", "AnthropicClient", "OpenAIChatClient", "SyncLLMClient"})
_ASYNC = frozenset({"AsyncAnthropicClient", "AsyncLLMClient", "AsyncOpenAIChatClient"})
_BASE = frozenset({"DEFAULT_CONNECT_TIMEOUT", "DEFAULT_MAX_RETRIES", "DEFAULT_READ_TIMEOUT",
                   "RETRY_STATUSES", "BaseLLMClient", "parse_retry_after"})


def __getattr__(name: str) -> Any:
    """A client's name, imported with its module on first use."""
    if name in _SYNC:
        from memci.llm import _client

        value = getattr(_client, name)
    elif name in _ASYNC:
        from memci.llm import _aclient

        value = getattr(_aclient, name)
    elif name in _BASE:
        from memci.llm import _base

        value = getattr(_base, name)
    else:
        raise AttributeError(f"module 'memci.llm' has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_READ_TIMEOUT",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ENV_PROVIDER",
    "PROVIDERS",
    "RETRY_STATUSES",
    "AnthropicClient",
    "AsyncAnthropicClient",
    "AsyncLLMClient",
    "AsyncOpenAIChatClient",
    "BaseLLMClient",
    "Completion",
    "LLMClient",
    "OpenAIChatClient",
    "SyncLLMClient",
    "answer_bool",
    "answer_json",
    "async_client_from_env",
    "clean_answer",
    "client_from_env",
    "is_refusal",
    "parse_retry_after",
]
