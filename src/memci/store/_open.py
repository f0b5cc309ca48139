"""Which backend a location names, and opening it: a file path, ``sqlite:///``, ``postgresql://``.

Resolved when asked, never at import: an explicit location wins, then ``MEMCI_DB``, then
the embedded default ``$MEMCI_HOME/memci.db`` (or ``./.memci/memci.db``). A PostgreSQL
URL (``postgresql://`` or ``postgres://``) opens a
:class:`~memci.store.postgres.PostgresStore`, which needs the ``postgres`` extra: without
it a :class:`~memci.errors.MissingExtraError` names ``pip install 'memci[postgres]'``.
Any other ``scheme://`` is a :class:`~memci.errors.ConfigError` naming the ones known.
"""

from __future__ import annotations

import importlib
import os
from typing import cast

from memci._lazy import pathlib
from memci.errors import ConfigError, MissingExtraError
from memci.store._protocols import Store

__all__ = ["ENV_DB", "default_location", "is_postgres_url", "open_store", "sqlite_file"]

ENV_DB = "MEMCI_DB"
_POSTGRES = ("postgresql://", "postgres://")


def default_location() -> str:
    """``$MEMCI_DB``, else ``$MEMCI_HOME/memci.db``, else ``./.memci/memci.db``."""
    given = os.environ.get(ENV_DB, "").strip()
    if given:
        return given
    home = os.environ.get("MEMCI_HOME")
    return str((pathlib.Path(home) if home else pathlib.Path.cwd() / ".memci") / "memci.db")


def is_postgres_url(location: str | pathlib.Path) -> bool:
    """Whether ``location`` is a PostgreSQL URL."""
    return isinstance(location, str) and location.lower().startswith(_POSTGRES)


def open_store(
    location: str | pathlib.Path | None = None, *, synchronous: str = "FULL",
    pool_size: int | None = None,
) -> Store:
    """Open the store at ``location`` (see the module's text for the default).

    ``synchronous`` is SQLite's durability; ``pool_size`` the PostgreSQL connections of
    this process (default ``MEMCI_PG_POOL_SIZE``, else 10).
    """
    where: str | pathlib.Path = default_location() if location is None else location
    if is_postgres_url(where):
        try:
            module = importlib.import_module("memci.store.postgres")
        except ImportError as exc:
            raise MissingExtraError("postgres", "psycopg", "a PostgreSQL store") from exc
        return cast(Store, module.PostgresStore(str(where), pool_size=pool_size))
    from memci.store.sqlite import SQLiteStore

    return SQLiteStore(sqlite_file(where), synchronous=synchronous)


def sqlite_file(location: str | pathlib.Path) -> pathlib.Path:
    """The SQLite file a location that is not a PostgreSQL URL names (a path, sqlite:///)."""
    where = location
    if isinstance(where, str) and "://" in where:
        scheme, _, rest = where.partition("://")
        if scheme.lower() != "sqlite":
            raise ConfigError(
                f"unknown store URL scheme {scheme}://: give a file path, sqlite:///path/to.db "
                "or postgresql://user@host/db")
        # As SQLAlchemy reads it: sqlite:///rel/memci.db, sqlite:////abs/memci.db.
        where = rest[1:] if rest.startswith("/") else rest
        if not where:
            raise ConfigError("sqlite:/// needs a file path, e.g. sqlite:///memci.db "
                              "(relative) or sqlite:////var/memci.db (absolute)")
    return pathlib.Path(where)
