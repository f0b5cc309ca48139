"""How a failure of PostgreSQL becomes a :class:`~memci.errors.StoreError` that says what to do.

Every error psycopg or its pool raises on any path of the store (connecting, migrating,
each read, each write, committing) is mapped here, by SQLSTATE class:

- the server cannot be reached, or drops the connection (class ``08``, ``57P01``…), or no
  pooled connection is free in time: a :class:`StoreError` naming the server and the fix;
- ``53100`` (disk full) and the other ``53`` classes: :class:`StoreFullError` (or a
  :class:`StoreError` saying which resource ran out);
- ``23505`` (a unique key taken): a :class:`StoreError` saying what is stored already;
- ``40001`` / ``40P01`` (a serialization failure, a deadlock): a :class:`StoreError`
  saying nothing was stored and the call can be retried;
- ``42501`` / ``28xxx`` (privileges, authentication): what the user needs;
- text with a NUL character (PostgreSQL's text cannot hold U+0000):
  :class:`~memci.errors.InvalidTextError`;
- anything else: a :class:`StoreError` naming the server and PostgreSQL's message.

The driver's exception is kept as ``__cause__``. Nothing of a failed write's transaction is
kept: PostgreSQL rolls it back.
"""

from __future__ import annotations

from memci.errors import InvalidTextError, StoreError, StoreFullError

__all__ = ["store_error"]


def _sqlstate(exc: BaseException) -> str:
    state = getattr(exc, "sqlstate", None)
    return state if isinstance(state, str) else ""


def store_error(exc: BaseException, where: str, doing: str) -> StoreError | InvalidTextError:
    """The error for ``exc``, raised while ``doing`` (e.g. "write to") the store at ``where``."""
    state = _sqlstate(exc)
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    kind = type(exc).__name__
    if kind == "PoolTimeout":
        return StoreError(
            f"cannot {doing} {where}: every pooled connection stayed busy ({detail}); raise "
            "MEMCI_PG_POOL_SIZE, or check for slow queries and locks held on the server")
    if "NUL" in detail and ("0x00" in detail or "NUL (0x00)" in detail):
        return InvalidTextError(
            f"cannot {doing} {where}: PostgreSQL text cannot hold the NUL character (U+0000); "
            "remove it from the text (nothing of this call was stored)")
    if state.startswith("08") or state in ("57P01", "57P02", "57P03") or (kind in (
            "OperationalError", "PoolClosed") and not state):
        return StoreError(
            f"cannot {doing} {where}: the PostgreSQL server cannot be reached ({detail}); "
            "check that it runs, that the URL (host, port, database, user) is right, and "
            "that this machine may connect to it")
    if state == "53100":
        return StoreFullError(
            f"cannot {doing} {where}: the database server's disk is full: nothing of this "
            "call was stored; free disk space on the server and retry")
    if state.startswith("53"):
        return StoreError(f"cannot {doing} {where}: the server ran out of a resource "
                          f"({detail}); nothing of this call was stored; retry later")
    if state == "23505":
        return StoreError(f"cannot {doing} {where}: it is stored already ({detail}); "
                          "nothing of this call was stored")
    if state in ("40001", "40P01"):
        return StoreError(f"cannot {doing} {where}: the write conflicted with another one "
                          f"({detail}); nothing of this call was stored: retry it")
    if state == "42501" or state.startswith("28"):
        return StoreError(f"cannot {doing} {where}: {detail}; the database user needs the "
                          "right to connect and to create and write memci's tables")
    if state == "3D000":
        return StoreError(f"cannot {doing} {where}: {detail}; create the database first "
                          "(createdb NAME), or name one that exists in the URL")
    return StoreError(f"cannot {doing} {where}: {detail} ({kind}"
                      + (f", SQLSTATE {state})" if state else ")"))
