"""Who is calling: the tenant of a request's API key, for the REST API, proxy and ``/mcp``.

One check for every route, so the REST API and MCP over HTTP accept exactly the same keys
and refuse exactly the same requests: 401, whose ``WWW-Authenticate: Bearer realm="memci"``
challenge (RFC 6750) and body say that the server takes static API keys and does no OAuth
(there is no authorization server to discover, so no protected-resource metadata is
published; a client that starts OAuth on a 401 learns from this answer what to send):

- a key is sent as ``Authorization: Bearer <key>`` or as ``x-api-key`` (Anthropic's SDK);
- two different keys on one request are refused (answering as either could act for the
  wrong tenant), and so is an ``Authorization`` header that is not ``Bearer <key>`` (a
  credential the server cannot read is never passed over for another it can);
- an unknown or revoked key is refused; a known key's tenant is the only tenant the
  request sees;
- with ``auth=False`` (``memci serve --no-auth``, loopback only) every request is the
  server's default tenant.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio.to_thread

from memci.server._config import ServerConfig
from memci.server._errors import ApiError
from memci.server._keys import KeyStore

__all__ = ["revoked", "sent_key", "tenant_of"]


_STATIC_KEYS = ("this server takes static API keys (made with `memci keys create TENANT`), "
                "not OAuth")


def _refused(problem: str, *, sent: bool) -> ApiError:
    """A 401 that says what to send: a static key (RFC 6750's challenge, and the body)."""
    challenge = f'Bearer realm="memci", error_description="{_STATIC_KEYS}"'
    if sent:  # RFC 6750 3.1: an error code only when a credential was presented
        challenge = f'Bearer realm="memci", error="invalid_token", ' \
                    f'error_description="{_STATIC_KEYS}"'
    return ApiError(401, "unauthorized", f"{problem}; {_STATIC_KEYS}",
                    {"WWW-Authenticate": challenge})


def sent_key(headers: Mapping[str, str]) -> str | None:
    """The API key a request carries (None when it carries none).

    Raises ApiError 401 when ``Authorization`` and ``x-api-key`` hold two different keys,
    or ``Authorization`` is sent but is not ``Bearer <key>``.
    """
    bearer: str | None = None
    authorization = headers.get("authorization")
    if authorization is not None:
        scheme, _, credentials = authorization.strip().partition(" ")
        bearer = credentials.strip()
        if scheme.lower() != "bearer" or not bearer:
            raise _refused("the Authorization header is not 'Bearer <key>'", sent=True)
    other = headers.get("x-api-key")  # also when empty: an empty header is not "no header"
    if bearer is not None and other is not None and other != bearer:
        raise _refused("the request carries two different API keys (Authorization and "
                       "x-api-key); send one", sent=True)
    return bearer if bearer is not None else (other or None)


async def tenant_of(keys: KeyStore, config: ServerConfig, headers: Mapping[str, str]) -> str:
    """The tenant of the request's key; ApiError 401 when there is no valid key."""
    if not config.auth:
        return config.default_tenant
    key = sent_key(headers)
    if not key:
        raise _refused("send an API key as 'Authorization: Bearer <key>'", sent=False)
    found, tenant = keys.cached(key)  # most requests: no thread, no store read
    if not found:
        tenant = await anyio.to_thread.run_sync(keys.tenant_of, key)
    if tenant is None:
        raise revoked()
    return tenant


def revoked() -> ApiError:
    """The 401 of a key that is unknown, or was revoked (perhaps while a stream was open)."""
    return _refused("the API key is unknown or revoked", sent=True)

