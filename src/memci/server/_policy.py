"""Who sets what on the server: what a request may choose, and what only the operator grants.

Settings that reach the host (:data:`~memci.context._settings.HOST_SETTINGS`: ``file_roots``,
``max_message_bytes``) come from the operator only, from two places:

- the server's configuration (``memci serve --file-root DIR --max-message-bytes N``): the
  default for every tenant;
- the policy kept with a tenant's API keys (``memci keys create|policy TENANT --file-root
  DIR``): replaces that default for the tenant. A tenant's keys share its sessions, so
  they share one policy (:class:`~memci.server.KeyStore` keeps them equal).

A request (``"settings"`` of ``POST …/messages``, the proxy's ``model``) may set the
other session settings, each checked by name and type, and may only narrow the host ones.
:class:`HostPolicy` turns both sources into the :class:`~memci.context._settings.HostLimits` of a
tenant, which the engine applies to every session of that tenant.

Invariants, whatever the configuration says:

- no file root reaches memci's own files (the database, its journal files, the artifacts
  folder): such a root is refused when configured and dropped if met at run time;
- a tenant's own roots (its policy) overlap no other tenant's own roots, and roots shared
  through the server's default are cut where they meet a tenant's own: refused when
  configured, dropped if met at run time.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from memci._dataclasses import dataclass
from memci.context._settings import HOST_SETTINGS, NAMES, HostLimits, check_setting, within
from memci.errors import ConfigError

if TYPE_CHECKING:
    from memci.engine import Engine
    from memci.server._config import ServerConfig

__all__ = [
    "REQUEST_SETTINGS",
    "HostPolicy",
    "KeyPolicy",
    "guarded_paths",
    "request_settings",
    "root_problem",
]


class TenantPolicies(Protocol):
    """Where the tenants' policies are kept (:class:`~memci.server.KeyStore`)."""

    cache_seconds: float

    def policy(self, tenant: str) -> KeyPolicy:
        """The policy of ``tenant``'s keys (the default when it has none)."""
        ...

    def policies(self) -> dict[str, KeyPolicy]:
        """Every tenant's policy."""
        ...

REQUEST_SETTINGS: tuple[str, ...] = tuple(sorted(NAMES - set(HOST_SETTINGS)))
"""Session settings a request may set freely (checked by name and type)."""

_WHO = {
    "tenant": "the tenant is the API key's",
    "user": "set the user with the body's \"user\" or ?user=",
    "name": "the session's name is in the URL",
    "session": "the session's name is in the URL",
}


def request_settings(value: object) -> dict[str, Any]:
    """The ``settings`` of a request, checked: ConfigError names the first bad key."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError("settings must be a JSON object of session settings")
    for key in value:
        if key in _WHO:
            raise ConfigError(f"settings.{key}: not a session setting; {_WHO[key]}")
        if key not in NAMES:
            raise ConfigError(
                f"settings.{str(key)[:80]!r}: not a session setting; a request may set "
                f"{', '.join(REQUEST_SETTINGS)}, and narrow {', '.join(HOST_SETTINGS)}")
    out = {}
    for key, item in value.items():
        if item is None:
            continue
        try:
            out[key] = check_setting(key, item)
        except ConfigError as exc:
            raise ConfigError(f"settings.{exc}") from None
    return out


@dataclass(frozen=True, slots=True)
class KeyPolicy:
    """What the operator grants a tenant through its keys; None: the server's default."""

    file_roots: tuple[str, ...] | None = None
    max_message_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.file_roots is not None:
            for root in self.file_roots:
                check_setting("file_roots", [root])
                if not os.path.isabs(root):
                    raise ConfigError(f"a file root of a key policy must be an absolute "
                                      f"path, not {root!r}")
        if self.max_message_bytes is not None:
            check_setting("max_message_bytes", self.max_message_bytes)

    @property
    def empty(self) -> bool:
        """True when the policy sets nothing (the server's defaults apply)."""
        return self.file_roots is None and self.max_message_bytes is None

    def to_json(self) -> str | None:
        """The policy as stored (None when empty)."""
        if self.empty:
            return None
        data: dict[str, Any] = {}
        if self.file_roots is not None:
            data["file_roots"] = list(self.file_roots)
        if self.max_message_bytes is not None:
            data["max_message_bytes"] = self.max_message_bytes
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> KeyPolicy:
        """The stored policy; one that cannot be read grants no file roots (fails closed)."""
        if not text:
            return cls()
        try:
            data = json.loads(text)
            roots = data.get("file_roots")
            return cls(tuple(roots) if roots is not None else None,
                       data.get("max_message_bytes"))
        except (ValueError, TypeError, AttributeError, ConfigError):
            return cls(file_roots=())


def guarded_paths(engine: Engine) -> tuple[Path, ...]:
    """memci's own files of ``engine``: no file root may reach them."""
    folder = engine.workspace.artifacts.files_dir  # None: the outputs are in the database
    files = [] if folder is None else [Path(folder)]
    db = Path(engine.store.location)
    if db.exists():  # a file store: the database and its journals (a server URL has none)
        files += [db, *(db.with_name(db.name + s) for s in ("-wal", "-shm", "-journal"))]
    return tuple(files)


def _real(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(path))


def _overlap(a: str, b: str) -> bool:
    return within(a, b) or within(b, a)


def root_problem(
    root: str, guarded: Sequence[Path], others: Mapping[str, Sequence[str]]
) -> str | None:
    """Why ``root`` may not be a file root (None when it may).

    ``others`` are the own roots of the other tenants, by tenant.
    """
    real = _real(root)
    for path in guarded:
        if _overlap(real, _real(path)):
            return (f"file root {root!r} reaches memci's own file {_real(path)!r}: the file "
                    "tools would expose the database or every tenant's artifacts; choose "
                    "a directory that holds no memci store")
    for tenant, roots in others.items():
        for other in roots:
            if _overlap(real, _real(other)):
                return (f"file root {root!r} overlaps {other!r}, a file root of tenant "
                        f"{tenant!r}: each tenant's files are reachable by that tenant only")
    return None


class HostPolicy:
    """The :class:`HostLimits` of each tenant, from the server config and the keys' policies.

    Answers are kept for the key store's ``cache_seconds``, like its keys, so a policy
    changed by ``memci keys policy`` while the server runs applies within that time.
    """

    def __init__(
        self, config: ServerConfig, keys: TenantPolicies | None, guarded: Sequence[Path]
    ) -> None:
        self.config = config
        self.keys = keys
        self.guarded = tuple(guarded)
        self._cache: dict[str, tuple[HostLimits, float]] = {}
        self._lock = threading.Lock()

    def check(self) -> None:
        """Refuse a server configuration whose file roots break the invariants."""
        own = self._own_roots()
        for root in self.config.file_roots:
            problem = root_problem(root, self.guarded, own)
            if problem:
                raise ConfigError(problem)

    def limits(self, tenant: str) -> HostLimits:
        """What ``tenant``'s sessions may reach now."""
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(tenant)
        if cached is not None and cached[1] > now:
            return cached[0]
        policy = self.keys.policy(tenant) if self.keys is not None else KeyPolicy()
        roots = (policy.file_roots if policy.file_roots is not None
                 else self.config.file_roots)
        others = {t: r for t, r in self._own_roots().items() if t != tenant}
        found = HostLimits(
            file_roots=tuple(r for r in roots if root_problem(r, self.guarded, others) is None),
            max_message_bytes=policy.max_message_bytes or self.config.max_message_bytes)
        ttl = self.keys.cache_seconds if self.keys is not None else 1.0
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[tenant] = (found, now + ttl)
        return found

    def _own_roots(self) -> dict[str, tuple[str, ...]]:
        if self.keys is None:
            return {}
        return {t: p.file_roots for t, p in self.keys.policies().items() if p.file_roots}
