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

from typing import TYPE_CHECKING

from memci._lazy import lazy_names

if TYPE_CHECKING:
    from memci.llm._aclient import AsyncAnthropicClient, AsyncLLMClient, AsyncOpenAIChatClient
    from memci.llm._answers import answer_bool, answer_json, clean_answer, is_refusal
    from memci.llm._base import (
        DEFAULT_CONNECT_TIMEOUT,
        DEFAULT_MAX_RETRIES,
        DEFAULT_READ_TIMEOUT,
        RETRY_STATUSES,
        BaseLLMClient,
        parse_retry_after,
    )
    from memci.llm._client import PROVIDERS, AnthropicClient, OpenAIChatClient, SyncLLMClient
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
else:
    # Each name loads with its module when first read (memci._lazy).
    __getattr__, __dir__ = lazy_names(__name__, {
        "memci.llm._answers": ("answer_bool", "answer_json", "clean_answer", "is_refusal"),
        "memci.llm._env": (
            "ENV_API_KEY", "ENV_BASE_URL", "ENV_MODEL", "ENV_PROVIDER", "async_client_from_env",
            "client_from_env",
        ),
        "memci.llm._formats": ("ANTHROPIC_VERSION",),
        "memci.llm._types": ("Completion", "LLMClient"),
        "memci.llm._aclient": ("AsyncAnthropicClient", "AsyncLLMClient", "AsyncOpenAIChatClient"),
        "memci.llm._base": (
            "DEFAULT_CONNECT_TIMEOUT", "DEFAULT_MAX_RETRIES", "DEFAULT_READ_TIMEOUT",
            "RETRY_STATUSES", "BaseLLMClient", "parse_retry_after",
        ),
        "memci.llm._client": ("PROVIDERS", "AnthropicClient", "OpenAIChatClient", "SyncLLMClient"),
    })

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
