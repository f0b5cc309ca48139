"""memci as a service: the REST API, the OpenAI-compatible proxy and the MCP server.

- :func:`create_app` — the FastAPI app of ``memci serve`` over an :class:`~memci.Engine`
  (REST API under ``/v1/sessions``, proxy at ``/v1/chat/completions``, MCP over
  Streamable HTTP at ``/mcp``);
- :func:`serve` — run it with uvicorn (what ``memci serve`` does);
- :func:`create_mcp_server` / :func:`run_mcp` — the MCP server of ``memci mcp`` (calls go
  to :data:`DEFAULT_MCP_SESSION` unless the command or the call names a session);
- :class:`KeyStore` — API keys per tenant (``memci keys``), stored as SHA-256 hashes,
  with the operator's :class:`KeyPolicy` of the tenant (file roots, largest message);
- :class:`ServerConfig` — limits, auth, the default file roots and the proxy's upstream.

The server needs ``pip install 'memci[server]'`` (fastapi, uvicorn) and the MCP server
``pip install 'memci[mcp]'``; without them these functions raise
:class:`~memci.errors.MissingExtraError`. Importing this package imports neither.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memci.server._config import DEFAULT_MAX_BODY_BYTES, DEFAULT_MCP_SESSION, ServerConfig
from memci.server._extras import require
from memci.server._keys import ApiKey, KeyStore
from memci.server._policy import KeyPolicy

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.lowlevel import Server

    from memci.engine import Engine

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MCP_SESSION",
    "ApiKey",
    "KeyPolicy",
    "KeyStore",
    "ServerConfig",
    "create_app",
    "create_mcp_server",
    "run_mcp",
    "serve",
]


def create_app(
    engine: Engine, config: ServerConfig | None = None, *, keys: KeyStore | None = None
) -> FastAPI:
    """The ASGI app of ``memci serve`` over ``engine`` (the caller closes the engine)."""
    require("fastapi", extra="server", feature="memci serve")
    from memci.server._app import create_app as make

    return make(engine, config, keys=keys)


def serve(
    db: str | Path | None = None, *, host: str = "127.0.0.1", port: int = 8080,
    config: ServerConfig | None = None, log_level: str = "warning", synchronous: str = "FULL",
    artifacts_dir: str | Path | None = None,
) -> None:
    """Run the REST API and proxy with uvicorn until interrupted; then close the store."""
    require("fastapi", extra="server", feature="memci serve")
    require("uvicorn", extra="server", feature="memci serve")
    from memci.server._run import run

    run(db, host=host, port=port, config=config, log_level=log_level, synchronous=synchronous,
        artifacts_dir=artifacts_dir)


def create_mcp_server(
    engine: Engine, session: str = DEFAULT_MCP_SESSION, **options: Any
) -> Server[Any]:
    """The MCP server of ``memci mcp`` over ``engine``.

    Calls go to ``session`` unless they name another (their ``session`` argument).
    """
    require("mcp", extra="mcp", feature="memci mcp")
    from memci.server._mcp import create_mcp_server as make

    return make(engine, session, **options)


def run_mcp(db: str | Path | None, session: str = DEFAULT_MCP_SESSION, **options: Any) -> None:
    """Serve memci over MCP on standard input and output until the client leaves."""
    require("mcp", extra="mcp", feature="memci mcp")
    from memci.server._mcp import run_stdio

    run_stdio(db, session, **options)
