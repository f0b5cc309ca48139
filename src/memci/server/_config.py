"""The server's configuration: limits, auth and the upstream model endpoint of the proxy.

Resolution order (resolved when asked for, never at import): explicit arguments >
``MEMCI_*`` environment > defaults. Environment: ``MEMCI_UPSTREAM_BASE_URL`` and
``MEMCI_UPSTREAM_API_KEY`` (OpenAI-compatible upstream), ``MEMCI_UPSTREAM_ANTHROPIC_BASE_URL``
and ``MEMCI_UPSTREAM_ANTHROPIC_API_KEY`` (Anthropic upstream), ``MEMCI_SERVER_MAX_BODY_BYTES``,
``MEMCI_SERVER_FILE_ROOTS`` (directories separated by ``os.pathsep``),
``MEMCI_SERVER_MAX_MESSAGE_BYTES``, and ``MEMCI_SERVER_ALLOWED_ORIGINS`` /
``MEMCI_SERVER_ALLOWED_HOSTS`` (comma-separated; see :mod:`memci.server._origins`).

``file_roots`` and ``max_message_bytes`` are the operator's defaults for what every
tenant's sessions may reach on the host (a tenant's key policy replaces them; see
:mod:`memci.server._policy`); a request can never widen them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from memci._dataclasses import dataclass, fields, replace
from memci.context._settings import check_setting
from memci.errors import ConfigError
from memci.messages import DEFAULT_MAX_BYTES
from memci.server._origins import read_hosts, read_origins

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_MCP_SESSION", "ServerConfig"]

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
DEFAULT_MCP_SESSION = "default"
"""The session an MCP call works in when neither it nor its connection names one."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """How a memci server behaves.

    ``auth=False`` serves every request as tenant ``default_tenant`` without a key (for a
    server only its own user can reach); ``max_tool_rounds`` bounds how many times the
    proxy runs memci's own tools before the model must answer. ``file_roots`` (absolute
    directories; none by default) and ``max_message_bytes`` are what every tenant without
    a key policy of its own may reach. ``max_response_bytes`` is the byte budget of a page
    of listed things (see :mod:`memci.server._listing`). ``header_timeout``, ``body_timeout``,
    ``max_connections_per_client`` and ``max_connections`` (None: from the process's
    file-descriptor limit) guard against slow clients (:mod:`memci.server._connections`).
    ``mcp_sessions_per_key``,
    ``mcp_sessions_per_tenant`` and ``mcp_sessions`` cap the MCP sessions open over HTTP,
    which end after ``mcp_idle_seconds`` without a request (see
    :mod:`memci.server._mcp_sessions`). ``allowed_origins`` (``scheme://host[:port]``,
    ``null`` or ``*``) are the browser origins that may call the server besides loopback
    ones, ``allowed_hosts`` the host names it answers to besides loopback names and IP
    addresses (see :mod:`memci.server._origins`).
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
    file_roots: tuple[str, ...] = ()
    max_message_bytes: int = DEFAULT_MAX_BYTES
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections_per_client: int = 128
    max_connections: int | None = None
    mcp_sessions_per_key: int = 64
    mcp_sessions_per_tenant: int = 256
    mcp_sessions: int = 2048
    mcp_idle_seconds: float = 1800.0
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Normalized once, refused with what to fix (ConfigError) when not an origin / host.
        object.__setattr__(self, "allowed_origins", read_origins(tuple(self.allowed_origins)))
        object.__setattr__(self, "allowed_hosts", read_hosts(tuple(self.allowed_hosts)))
        check_setting("file_roots", list(self.file_roots))
        check_setting("max_message_bytes", self.max_message_bytes)
        relative = [r for r in self.file_roots if not os.path.isabs(r)]
        if relative:
            raise ConfigError(f"file roots of the server must be absolute paths, not "
                              f"{relative[0]!r}")
        if self.max_body_bytes < 1024:
            raise ConfigError(f"max_body_bytes must be at least 1024, not {self.max_body_bytes}")
        if self.max_response_bytes < 64 * 1024:
            raise ConfigError(f"max_response_bytes must be at least 65536, not "
                              f"{self.max_response_bytes}")
        if not 1 <= self.max_tool_rounds <= 64:
            raise ConfigError(
                f"max_tool_rounds must be between 1 and 64, not {self.max_tool_rounds}")
        if self.upstream_timeout <= 0:
            raise ConfigError(f"upstream_timeout must be positive, not {self.upstream_timeout}")
        for name in ("header_timeout", "body_timeout"):
            if not 0 < getattr(self, name) < float("inf"):
                raise ConfigError(f"{name} must be a positive number of seconds, not "
                                  f"{getattr(self, name)}")
        if self.max_connections is not None and self.max_connections < 1:
            raise ConfigError(f"max_connections must be at least 1, not {self.max_connections}")
        for name in ("max_connections_per_client", "mcp_sessions_per_key",
                     "mcp_sessions_per_tenant", "mcp_sessions"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        if not 0 < self.mcp_idle_seconds < float("inf"):
            raise ConfigError(f"mcp_idle_seconds must be a positive number of seconds, not "
                              f"{self.mcp_idle_seconds}")

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
        if env.get("MEMCI_SERVER_FILE_ROOTS"):
            values["file_roots"] = tuple(
                os.path.abspath(r) for r in env["MEMCI_SERVER_FILE_ROOTS"].split(os.pathsep)
                if r)
        if env.get("MEMCI_SERVER_MAX_MESSAGE_BYTES"):
            try:
                values["max_message_bytes"] = int(env["MEMCI_SERVER_MAX_MESSAGE_BYTES"])
            except ValueError as exc:
                raise ConfigError("MEMCI_SERVER_MAX_MESSAGE_BYTES must be an integer") from exc
        for name in ("allowed_origins", "allowed_hosts"):
            listed = env.get(f"MEMCI_SERVER_{name.upper()}")
            if listed:
                values[name] = tuple(v.strip() for v in listed.split(",") if v.strip())
        values.update({k: v for k, v in explicit.items() if v is not None})
        for name in ("file_roots", "allowed_origins", "allowed_hosts"):
            if name in values:
                values[name] = tuple(values[name])
        return replace(cls(), **values)
