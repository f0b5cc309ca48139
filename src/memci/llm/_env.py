"""Building memci's upkeep client from explicit settings and ``MEMCI_LLM_*`` variables.

Explicit arguments win over the environment, and the environment is read when
:func:`client_from_env` is called, never at import. No setting at all means "memci runs
without an LLM" (None); a partial setting is a mistake and raises
:class:`~memci.errors.ConfigError` naming the variable to set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from memci.errors import ConfigError

if TYPE_CHECKING:
    from memci.llm._aclient import AsyncLLMClient
    from memci.llm._client import SyncLLMClient

__all__ = [
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ENV_PROVIDER",
    "async_client_from_env",
    "client_from_env",
]

ENV_PROVIDER = "MEMCI_LLM_PROVIDER"
ENV_BASE_URL = "MEMCI_LLM_BASE_URL"
ENV_API_KEY = "MEMCI_LLM_API_KEY"
ENV_MODEL = "MEMCI_LLM_MODEL"

#: The providers memci has a client for: the keys of ``memci.llm.PROVIDERS``. The clients
#: themselves (and httpx) are imported only once an LLM is configured: an engine that
#: runs without one never loads them.
PROVIDER_NAMES: Final = ("anthropic", "openai")


def client_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    **options: Any,
) -> SyncLLMClient | None:
    """Return the configured upkeep client, or None when no LLM is configured.

    Each of ``provider``, ``base_url``, ``api_key`` and ``model`` is taken from the
    argument when given, else from ``MEMCI_LLM_PROVIDER``, ``MEMCI_LLM_BASE_URL``,
    ``MEMCI_LLM_API_KEY``, ``MEMCI_LLM_MODEL`` in ``environ`` (default ``os.environ``);
    empty values count as unset. ``options`` go to the client's constructor
    (``http_client``, ``read_timeout``, ``max_retries`` …).

    The provider defaults to ``openai``, or ``anthropic`` when the base URL's host is
    ``anthropic.com``. A model is always required; so is an API key unless a base URL is
    given (a local server may need none). Raises :class:`~memci.errors.ConfigError`
    naming the missing variable, or for an unknown provider.
    """
    found = _resolve(environ, provider, base_url, api_key, model)
    if found is None:
        return None
    from memci.llm._client import PROVIDERS

    name, settings = found
    return PROVIDERS[name](**settings, **options)


def async_client_from_env(
    environ: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    **options: Any,
) -> AsyncLLMClient | None:
    """:func:`client_from_env` for asyncio: the same settings, an async client."""
    found = _resolve(environ, provider, base_url, api_key, model)
    if found is None:
        return None
    from memci.llm._aclient import ASYNC_PROVIDERS

    name, settings = found
    return ASYNC_PROVIDERS[name](**settings, **options)


def _resolve(
    environ: Mapping[str, str] | None, provider: str | None, base_url: str | None,
    api_key: str | None, model: str | None,
) -> tuple[str, dict[str, Any]] | None:
    """The provider and the client's settings, or None when no LLM is configured."""
    env = os.environ if environ is None else environ

    def pick(given: str | None, name: str) -> str | None:
        value = given if given is not None else env.get(name)
        value = value.strip() if isinstance(value, str) else None
        return value or None

    chosen_provider = pick(provider, ENV_PROVIDER)
    chosen_url = pick(base_url, ENV_BASE_URL)
    chosen_key = pick(api_key, ENV_API_KEY)
    chosen_model = pick(model, ENV_MODEL)
    if not (chosen_provider or chosen_url or chosen_key or chosen_model):
        return None

    name = (chosen_provider or _guess_provider(chosen_url)).lower()
    if name not in PROVIDER_NAMES:
        raise ConfigError(
            f"{ENV_PROVIDER}={chosen_provider!r} is not a known provider: "
            f"use one of {', '.join(PROVIDER_NAMES)}"
        )
    given = ", ".join(
        var for var, value in ((ENV_PROVIDER, chosen_provider), (ENV_BASE_URL, chosen_url),
                               (ENV_API_KEY, chosen_key), (ENV_MODEL, chosen_model))
        if value
    )
    if chosen_model is None:
        raise ConfigError(
            f"{ENV_MODEL} is not set: memci's LLM is partly configured ({given} set); "
            f"set {ENV_MODEL} (or pass model=) to the model memci should call"
        )
    if chosen_url is None and chosen_key is None:
        raise ConfigError(
            f"{ENV_API_KEY} is not set: memci's LLM is partly configured ({given} set); "
            f"set {ENV_API_KEY} for the provider's public endpoint, or {ENV_BASE_URL} "
            "for a local server that needs no key"
        )
    return name, {"model": chosen_model, "api_key": chosen_key, "base_url": chosen_url}


def _guess_provider(base_url: str | None) -> str:
    # Pointing the base URL at Anthropic and forgetting the provider would otherwise
    # send Chat Completions requests there; nothing else is guessed.
    from urllib.parse import urlsplit  # with a model configured: import memci does not need it

    host = (urlsplit(base_url).hostname or "") if base_url else ""
    return "anthropic" if host == "anthropic.com" or host.endswith(".anthropic.com") else "openai"
