"""Where a request may come from: a browser page's ``Origin`` and the ``Host`` it names.

A web page can make a browser send requests to ``memci serve`` (on the user's machine, or
on a network the browser reaches): a simple cross-site POST needs no preflight, and DNS
rebinding makes the page's own name point at the server. :class:`OriginGuard` answers
those before any route runs:

- **Origin**, on every route, with or without keys (MCP 2025-11-25, Streamable HTTP:
  servers MUST validate it): a request without one (not from a browser page) passes; one
  from a loopback origin (``http://localhost:*``, ``127.0.0.1``, ``[::1]``) passes; any
  other passes only when the operator named it (``--allowed-origin``, or ``*``), else
  **403** ``forbidden_origin``.
- **Host**, on ``/mcp`` always and on every route of a server without keys: loopback
  names and IP addresses pass (a rebinding page reaches the server by a DNS name, never
  by an address), any other name only when the operator named it (``--allowed-host``,
  or ``*``), else **421** ``misdirected_request``. With keys the REST API takes any
  Host: a page cannot send a key it does not know, and no browser sends one across
  origins without a preflight memci never grants.

The policy is the operator's (:class:`~memci.server._config.ServerConfig`:
``allowed_origins``, ``allowed_hosts``), checked when the server starts.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from memci._dataclasses import dataclass
from memci.errors import ConfigError
from memci.server._errors import ApiError, error_response

__all__ = ["OriginGuard", "OriginPolicy", "origin_of", "read_hosts", "read_origins"]

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin_of(text: str) -> str | None:
    """``scheme://host[:port]`` of an origin, lower case, default port left out (None: none)."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.fragment or parts.username is not None:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    shown_port = "" if port in (None, _DEFAULT_PORTS[parts.scheme]) else f":{port}"
    return f"{parts.scheme}://{host.lower()}{shown_port}"


def read_origins(values: tuple[str, ...]) -> tuple[str, ...]:
    """The operator's allowed origins, normalized; ConfigError names a bad one."""
    out = []
    for value in values:
        if value.strip() in ("*", "null"):
            out.append(value.strip())
            continue
        origin = origin_of(value)
        if origin is None:
            raise ConfigError(f"allowed origin {value!r} is not an origin: give "
                              "scheme://host[:port] (http or https, no path), 'null' or '*'")
        out.append(origin)
    return tuple(out)


def _host_name(host: str) -> tuple[str, str | None]:
    """The name and port of a ``Host`` value (``[::1]:8080`` → ``::1``, ``8080``)."""
    host = host.strip().lower()
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else None
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        return name, port
    return host, None


def read_hosts(values: tuple[str, ...]) -> tuple[str, ...]:
    """The operator's allowed hosts (``name`` or ``name:port``), lower case."""
    out = []
    for value in values:
        text = value.strip().lower()
        name, _ = _host_name(text)
        if text != "*" and (not name or "/" in text or " " in text):
            raise ConfigError(f"allowed host {value!r} is not a host name: give a name "
                              "(memci.example.com), name:port, or '*'")
        out.append(text)
    return tuple(out)


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """The origins and hosts a server answers, besides the loopback ones."""

    origins: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()

    def origin_refused(self, origin: str | None) -> ApiError | None:
        """403 for an ``Origin`` this server does not answer; None when it may call."""
        if origin is None or "*" in self.origins:
            return None
        text = origin.strip()
        normal = "null" if text == "null" else origin_of(text)
        if normal is not None and normal in self.origins:
            return None
        if normal not in (None, "null") and urlsplit(normal).hostname in _LOOPBACK:
            return None
        shown = origin if len(origin) <= 100 else origin[:97] + "..."
        return ApiError(403, "forbidden_origin",
                        f"requests from origin {shown!r} are refused: a browser page may call "
                        "this server only from a loopback origin or one the operator allows "
                        "(memci serve --allowed-origin, MEMCI_SERVER_ALLOWED_ORIGINS)")

    def host_refused(self, host: str | None) -> ApiError | None:
        """421 for a ``Host`` this server does not answer to; None when it does."""
        if host is None or "*" in self.hosts:
            return None
        name, port = _host_name(host)
        if name in _LOOPBACK or _is_address(name):
            return None
        if name in self.hosts or (port is not None and f"{name}:{port}" in self.hosts):
            return None
        shown = host if len(host) <= 100 else host[:97] + "..."
        return ApiError(421, "misdirected_request",
                        f"this server does not answer to host {shown!r} (a page reaching it "
                        "by DNS rebinding would); name the hosts it serves with "
                        "memci serve --allowed-host (MEMCI_SERVER_ALLOWED_HOSTS)")


class OriginGuard:
    """ASGI middleware: refuse a request from an origin, or to a host, it may not use."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy, *, every_host: bool) -> None:
        self.app = app
        self.policy = policy
        # With keys, the Host is checked on /mcp only (see the module).
        self.every_host = every_host

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = Headers(scope=scope)
            refused = self.policy.origin_refused(headers.get("origin"))
            path = scope["path"]
            mcp = path == "/mcp" or path.startswith("/mcp/")
            if refused is None and (self.every_host or mcp):
                refused = self.policy.host_refused(headers.get("host"))
            if refused is not None:
                await error_response(refused)(scope, receive, send)
                return
        await self.app(scope, receive, send)
