"""The PostgreSQL backend: several stateless memci servers over one database.

Behind the ``postgres`` extra (psycopg 3 with its pool; pgvector for dense vectors where
the database has the extension). Every storage protocol of :mod:`memci.store` is
implemented here and passes the same contract suite as the SQLite store. The schema is the
SQLite store's numbered migration series, step for step (:mod:`._migrations`), applied
under an advisory lock so several servers may start at once.
"""

from memci.store.postgres._store import DEFAULT_POOL_SIZE, ENV_POOL_SIZE, PostgresStore, redact

__all__ = ["DEFAULT_POOL_SIZE", "ENV_POOL_SIZE", "PostgresStore", "redact"]
