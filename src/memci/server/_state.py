"""What one app of ``memci serve`` holds: its engine, configuration, keys and shared parts.

:class:`ServerState` is made once per :func:`~memci.server.create_app` and kept on the
app (``app.state.server``); the routers read it through a FastAPI dependency
(:mod:`memci.server.routes._common`), never through closures. Making it applies the
operator's policy: the file roots are checked (a bad configuration raises
:class:`~memci.errors.ConfigError` before any route exists) and every session of the
engine, however reached (REST, proxy, MCP), gets its tenant's limits.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from memci._dataclasses import dataclass
from memci.engine import Engine
from memci.server._config import ServerConfig
from memci.server._keys import KeyStore
from memci.server._policy import HostPolicy, guarded_paths
from memci.server._proxy import ChatProxy
from memci.server._sessions import SessionHub
from memci.server._threads import ToolThreads

if TYPE_CHECKING:
    from memci.server._mcp_http import McpEndpoint

__all__ = ["ServerState"]


@dataclass(frozen=True, slots=True)
class ServerState:
    """The parts every request of one app shares."""

    engine: Engine
    config: ServerConfig
    keys: KeyStore
    policy: HostPolicy
    hub: SessionHub
    tool_threads: ToolThreads
    proxy: ChatProxy
    mcp: McpEndpoint | None  # None without memci[mcp]: /mcp answers 501

    @classmethod
    def start(cls, engine: Engine, config: ServerConfig | None = None,
              keys: KeyStore | None = None) -> ServerState:
        """The state of a new app over ``engine``, its policy checked and applied."""
        config = config or ServerConfig.resolve()
        keys = keys or KeyStore(engine.store)
        policy = HostPolicy(config, keys, guarded_paths(engine))
        policy.check()
        engine.host_limits = policy.limits
        hub = SessionHub(engine)
        tool_threads = ToolThreads()
        return cls(engine=engine, config=config, keys=keys, policy=policy, hub=hub,
                   tool_threads=tool_threads, proxy=ChatProxy(hub, config, tool_threads),
                   mcp=_mcp_endpoint(hub, keys, config))


def _mcp_endpoint(hub: SessionHub, keys: KeyStore, config: ServerConfig) -> McpEndpoint | None:
    """The endpoint of MCP over HTTP, or None without ``memci[mcp]`` installed."""
    if importlib.util.find_spec("mcp") is None:
        return None
    from memci.server._mcp_http import McpEndpoint

    return McpEndpoint(hub, keys, config)
