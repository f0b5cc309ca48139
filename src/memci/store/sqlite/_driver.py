"""The SQLite driver memci talks to, and loading sqlite-vec (vector search) into it.

sqlite-vec is a loadable SQLite extension; some Pythons (pyenv's builds, some system ones)
ship a ``sqlite3`` module that cannot load extensions. ``pysqlite3-binary`` (in the extra
``memci[vectors]`` on Linux) bundles a recent SQLite that can. The driver is chosen once
per process, when the first store opens, and ``MEMCI_SQLITE_DRIVER`` is read then:

- ``sqlite3``: the standard library's module, whatever it can do;
- ``pysqlite3``: ``pysqlite3.dbapi2`` (an error when it is not installed);
- unset, empty or ``auto``: the standard library's module when it can load extensions
  (and loads sqlite-vec, when that is installed); else ``pysqlite3.dbapi2`` when
  installed; else the standard library's module (everything but vector search works).

Invariant: one process uses one driver. Two copies of SQLite in one process must not open
the same file (closing a file in one releases the POSIX locks the other holds on it).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sqlite3
from types import ModuleType
from typing import Any, cast

from memci._lazy import pathlib
from memci.errors import ConfigError, MissingExtraError

__all__ = [
    "ENV_SQLITE_DRIVER",
    "connect",
    "driver",
    "errors",
    "load_sqlite_vec",
    "sqlite_vec_missing",
]

ENV_SQLITE_DRIVER = "MEMCI_SQLITE_DRIVER"

_CHOICES = ("sqlite3", "pysqlite3", "auto")


def _import(name: str) -> Any:
    """Return module ``name``, or None when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _can_load_extensions(module: ModuleType) -> bool:
    return hasattr(module.Connection, "enable_load_extension")


def _loads_sqlite_vec(module: ModuleType) -> bool:
    """Whether a connection of ``module`` loads sqlite-vec (True when it is not installed)."""
    if _extension_path() is None:
        return True
    db = module.connect(":memory:")
    try:
        return _load(db)
    finally:
        db.close()


def _choose() -> tuple[ModuleType, bool]:
    """Return the driver module and whether the environment forced it."""
    wanted = (os.environ.get(ENV_SQLITE_DRIVER) or "auto").strip().lower() or "auto"
    if wanted not in _CHOICES:
        raise ConfigError(f"{ENV_SQLITE_DRIVER}={wanted!r}: use 'sqlite3', 'pysqlite3' "
                          "or 'auto'")
    if wanted == "sqlite3":
        return sqlite3, True
    pysqlite3: ModuleType | None = _import("pysqlite3.dbapi2")
    if wanted == "pysqlite3":
        if pysqlite3 is None:
            raise MissingExtraError("vectors", "pysqlite3-binary",
                                    f"{ENV_SQLITE_DRIVER}=pysqlite3")
        return pysqlite3, True
    if _can_load_extensions(sqlite3) and _loads_sqlite_vec(sqlite3):
        return sqlite3, False
    if pysqlite3 is not None:
        return pysqlite3, False
    return sqlite3, False


@functools.cache
def _chosen() -> tuple[ModuleType, bool]:
    return _choose()


def driver() -> ModuleType:
    """Return the DB-API module in use: ``sqlite3`` or ``pysqlite3.dbapi2``."""
    return _chosen()[0]


@functools.cache
def errors() -> tuple[type[Exception], ...]:
    """Return the ``Error`` classes of the drivers in use (to catch either one's errors)."""
    found: list[type[Exception]] = [sqlite3.Error]
    chosen = driver()
    if chosen is not sqlite3:
        found.append(cast(type[Exception], chosen.Error))
    return tuple(found)


def connect(path: str | pathlib.Path, **options: Any) -> sqlite3.Connection:
    """Open ``path`` with the driver in use (``options`` as for :func:`sqlite3.connect`).

    The connection is typed as the standard library's: both drivers have its API.
    """
    return cast(sqlite3.Connection, driver().connect(str(path), **options))


@functools.cache
def _extension_path() -> str | None:
    """The sqlite-vec library to load, or None when sqlite-vec is not installed.

    Found beside the package (where its ``loadable_path()`` points) without importing it:
    its ``__init__`` imports numpy, a tenth of a second that every store's opening paid.
    A package laid out otherwise is imported and asked.
    """
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or spec.origin is None:
        return None
    base = pathlib.Path(spec.origin).with_name("vec0")
    if any(base.with_suffix(s).is_file() for s in (".so", ".dylib", ".dll")):
        return str(base)
    module = _import("sqlite_vec")
    return None if module is None else str(module.loadable_path())


def _load(db: Any) -> bool:
    path = _extension_path()
    if path is None or not hasattr(db, "enable_load_extension"):
        return False
    try:
        db.enable_load_extension(True)
        try:
            db.load_extension(path)
        finally:
            db.enable_load_extension(False)
    except (sqlite3.Error, db.Error):  # the connection's own driver's errors
        return False
    return True


def load_sqlite_vec(db: sqlite3.Connection) -> bool:
    """Load sqlite-vec into ``db``; return whether it worked (False: no vector search)."""
    return _load(db)


def sqlite_vec_missing(feature: str = "dense retrieval") -> MissingExtraError:
    """Return the error for ``feature`` when sqlite-vec cannot be loaded, naming the fix."""
    if _extension_path() is None:
        return MissingExtraError("vectors", "sqlite-vec", feature)
    module, forced = _chosen()
    if module is sqlite3 and not _can_load_extensions(sqlite3):
        if forced:
            return MissingExtraError(
                "vectors", "pysqlite3-binary", feature,
                hint=f"{ENV_SQLITE_DRIVER}=sqlite3 chose this Python's sqlite3, which cannot "
                     f"load extensions: unset {ENV_SQLITE_DRIVER}",
            )
        return MissingExtraError("vectors", "pysqlite3-binary", feature,
                                 hint="this Python's sqlite3 cannot load extensions")
    return MissingExtraError(
        "vectors", "sqlite-vec", feature,
        hint=f"it is installed but does not load into SQLite {module.sqlite_version}",
    )
