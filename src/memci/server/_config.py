"""The server's configuration: limits, auth and the upstream model endpoint of the proxy.

Resolution order (resolved when asked for, never at import): explicit arguments >
``MEMCI_*`` environment > defaults. Environment: ``MEMCI_UPSTREAM_BASE_URL`` and
``MEMCI_UPSTREAM_API_KEY`` (OpenAI-compatible upstream), ``MEMCI_UPSTREAM_ANTHROPIC_BASE_URL``
and ``MEMCI_UPSTREAM_ANTHROPIC_API_KEY`` (Anthropic upstream), ``MEMCI_SERVER_MAX_BODY_BYTES``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from memci.errors import ConfigError

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ServerConfig"]

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """How a memci server behaves.

    ``auth=False`` serves every request as tenant ``default_tenant`` without a key (for a
    server only its own user can reach); ``max_tool_rounds`` bounds how many times the
    proxy runs memci's own tools before the model must answer.
    """

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    auth: bool = True
    default_tenant: str = "default"
    upstream_base_url: str | None = None
    upstream_api_key: str | None = None
    upstream_anthropic_base_url: str | None = None
    upstream_anthropic_api_key: str | None = None
    upstream_timeout: float = 120.0
    max_tool_rounds: int = 8

    def __post_init__(self) -> None:
        if self.max_body_bytes < 1024:
            raise ConfigError(f"max_body_bytes must be at least 1024, not {self.max_body_bytes}")
        if not 1 <= self.max_tool_rounds <= 64:
            raise ConfigError(
                f"max_tool_rounds must be between 1 and 64, not {self.max_tool_rounds}")
        if self.upstream_timeout <= 0:
            raise ConfigError(f"upstream_timeout must be positive, not {self.upstream_timeout}")

    @classmethod
    def resolve(
        cls, environ: Mapping[str, str] | None = None, **explicit: Any
    ) -> ServerConfig:
        """Explicit values (None means unset) over ``MEMCI_*`` environment over defaults."""
        env = os.environ if environ is None else environ
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(explicit) - names)
        if unknown:
            raise ConfigError(f"unknown server setting(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        if env.get("MEMCI_UPSTREAM_BASE_URL"):
            values["upstream_base_url"] = env["MEMCI_UPSTREAM_BASE_URL"]
        if env.get("MEMCI_UPSTREAM_API_KEY"):
            values["upstream_api_key"] = env["MEMCI_UPSTREAM_API_KEY"]
        if env.get("MEMCI_UPSTREAM_ANTHROPIC_BASE_URL"):
            values["upstream_anthropic_base_url"] = env["MEMCI_UPSTREAM_ANTHROPIC_BASE_URL"]
        if env.get("MEMCI_UPSTREAM_ANTHROPIC_API_KEY"):
            values["upstream_anthropic_api_key"] = env["MEMCI_UPSTREAM_ANTHROPIC_API_KEY"]
        if env.get("MEMCI_SERVER_MAX_BODY_BYTES"):
            try:
                values["max_body_bytes"] = int(env["MEMCI_SERVER_MAX_BODY_BYTES"])
            except ValueError as exc:
                raise ConfigError("MEMCI_SERVER_MAX_BODY_BYTES must be an integer") from exc
        values.update({k: v for k, v in explicit.items() if v is not None})
        return replace(cls(), **values)
