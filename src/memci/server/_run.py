"""Running the server: one Engine for the process, uvicorn in front, the store closed last.

uvicorn speaks HTTP through :mod:`memci.server._connections` (h11 with read timeouts and
connection caps), so slow clients cannot hold the server.

uvicorn handles SIGINT / SIGTERM (finish the requests in flight, then stop); the engine
is closed after it returns, so every acknowledged message is already committed (each add
commits before it answers). A killed process loses nothing acknowledged either: SQLite's
WAL is replayed when the store is opened again.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn

from memci.engine import Engine
from memci.server._app import create_app
from memci.server._config import ServerConfig
from memci.server._connections import ConnectionGuard, default_max_connections, guarded_protocol

__all__ = ["run"]


class _Server(uvicorn.Server):
    """uvicorn's server, saying where it listens once it does (port 0 picks a free one)."""

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        for server in self.servers:
            for sock in server.sockets:
                host, port = sock.getsockname()[:2]
                print(f"memci serve: listening on http://{host}:{port}", file=sys.stderr,
                      flush=True)


def _exit_quietly(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def run(
    db: str | Path | None, *, host: str, port: int, config: ServerConfig | None,
    log_level: str = "warning", synchronous: str = "FULL",
    artifacts_dir: str | Path | None = None,
) -> None:
    """Serve ``db`` on ``host:port`` until interrupted."""
    config = config or ServerConfig.resolve()
    engine = Engine.open(db, synchronous=synchronous, artifacts_dir=artifacts_dir)
    try:
        app = create_app(engine, config)
        guard = ConnectionGuard(
            header_timeout=config.header_timeout, body_timeout=config.body_timeout,
            per_client=config.max_connections_per_client,
            total=config.max_connections or default_max_connections())
        # h11 with the guard (slow clients, connection caps); no WebSockets are served.
        server = _Server(uvicorn.Config(
            app, host=host, port=port, log_level=log_level, access_log=False,
            timeout_graceful_shutdown=10, backlog=1024, http=guarded_protocol(guard),
            ws="none",
        ))
        # uvicorn stops gracefully on SIGINT / SIGTERM, then raises the signal again for
        # the handler it found; this one ends the process normally, after the finally.
        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous = {sig: signal.signal(sig, _exit_quietly)
                        for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            server.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        engine.close()
