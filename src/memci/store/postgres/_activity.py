"""Who else is connected to a PostgreSQL database: the clients ``pg_stat_activity`` lists.

Asked on a connection of its own, before this process opens the store, so every client
listed is another one: a ``memci serve``, a worker, a console. Only client backends of the
same database count (not the server's own processes).
"""

from __future__ import annotations

import psycopg

from memci.store.postgres._failures import store_error
from memci.store.postgres._store import redact

__all__ = ["other_clients"]

_CONNECT_TIMEOUT = 15  # seconds to reach the server

_OTHERS = """
SELECT pid, application_name, coalesce(client_addr::text, 'local socket'), state,
       to_char(backend_start, 'YYYY-MM-DD HH24:MI:SS')
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
  AND backend_type = 'client backend'
ORDER BY backend_start
"""


def other_clients(url: str) -> list[str]:
    """One line per other client connected to the database of ``url``."""
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT) as conn:
            rows = conn.execute(_OTHERS).fetchall()
    except psycopg.Error as exc:
        raise store_error(exc, redact(url), "look at the connections of") from exc
    return [f"pid {pid} ({name or 'no application name'}, {addr}, {state or 'idle'} since "
            f"{since})" for pid, name, addr, state, since in rows]
