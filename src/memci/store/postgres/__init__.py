"""The PostgreSQL backend: several stateless memci servers over one database.

Behind the ``postgres`` extra (psycopg 3 with its pool; pgvector for dense vectors where
the database has the extension). Every storage protocol of :mod:`memci.store` is
implemented by the statements both backends share (:mod:`memci.store._sql`, run in
PostgreSQL's dialect, :mod:`._dialect`) and what this package adds: the connection pool
and its transactions, keyword tables ranked by FTS5's BM25 (:mod:`._keyword`), pgvector,
large outputs in the database, ``VACUUM`` scrubs. It passes the same contract suite as
the SQLite store. The schema is the SQLite store's numbered migration series, step for
step (:mod:`._migrations`), applied under an advisory lock so several servers may start
at once.
"""

from memci.store.postgres._store import DEFAULT_POOL_SIZE, ENV_POOL_SIZE, PostgresStore, redact

__all__ = ["DEFAULT_POOL_SIZE", "ENV_POOL_SIZE", "PostgresStore", "redact"]
