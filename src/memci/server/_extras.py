"""Optional dependencies of the server: import them, or say which extra to install.

The REST server and the proxy need ``fastapi`` and ``uvicorn`` (``memci[server]``); the
MCP server needs ``mcp`` (``memci[mcp]``). Nothing here imports them at import time.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from memci.errors import MissingExtraError

__all__ = ["require"]


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``memci[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(extra, module.split(".")[0], feature) from exc
