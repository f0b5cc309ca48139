"""How a failure of SQLite becomes a :class:`~memci.errors.StoreError` that says what to do.

Every error the SQLite driver raises on any path of the store (opening, migrating, each
read, each write, committing, closing) is mapped here, by SQLite's result code:

- ``SQLITE_FULL`` (the disk, or the file's size limit): :class:`StoreFullError`;
- ``SQLITE_CORRUPT`` and ``SQLITE_NOTADB`` (a damaged or foreign file):
  :class:`StoreCorruptError`, naming the file and how to recover it;
- a text value the driver cannot decode (bytes that are not UTF-8 in a ``TEXT`` column,
  which memci never writes): :class:`StoreCorruptError` too, naming the file and the
  column;
- I/O errors, a read-only or unopenable file, a lock held too long, no memory: a
  :class:`StoreError` naming the file, the cause and the fix;
- a search index this SQLite is too old to read (FTS5 tables that delete securely, made
  by SQLite 3.42 or later): a :class:`StoreError` naming the SQLite to use;
- anything else: a :class:`StoreError` naming the file and SQLite's message.

The driver's exception is kept as ``__cause__``. Drivers older than Python 3.11's do not
carry result codes; the message text is read then.
"""

from __future__ import annotations

from memci._lazy import pathlib
from memci.errors import StoreCorruptError, StoreError, StoreFullError
from memci.store.sqlite._driver import driver

__all__ = ["store_error"]

# SQLite's primary result codes (https://sqlite.org/rescode.html).
_PERM, _BUSY, _LOCKED, _NOMEM, _READONLY, _IOERR, _CORRUPT = 3, 5, 6, 7, 8, 10, 11
_FULL, _CANTOPEN, _NOTADB = 13, 14, 26

# What the driver says of a TEXT value that is not UTF-8 (it has no SQLite result code).
_UNDECODABLE = "could not decode to utf-8"

_BY_TEXT = (
    ("database or disk is full", _FULL),
    ("disk image is malformed", _CORRUPT),
    ("file is not a database", _NOTADB),
    ("disk i/o error", _IOERR),
    ("readonly database", _READONLY),
    ("unable to open database", _CANTOPEN),
    ("database is locked", _BUSY),
)


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF  # extended codes (SQLITE_IOERR_WRITE …) keep the primary low byte
    text = str(exc).lower()
    return next((c for words, c in _BY_TEXT if words in text), None)


def store_error(exc: BaseException, path: str | pathlib.Path, doing: str) -> StoreError:
    """The :class:`StoreError` for ``exc``, raised while ``doing`` (e.g. "write to") ``path``."""
    code = _code(exc)
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    cause = f"{exc} ({name})"
    if _UNDECODABLE in str(exc).lower():
        return StoreCorruptError(
            f"cannot {doing} {path}: a stored row is damaged: {cause}. memci did not write "
            f"it so; restore the store from a backup, or repair or delete that row with "
            f"`sqlite3 {path}`")
    if code == _FULL:
        return StoreFullError(
            f"cannot {doing} {path}: the disk is full (or the store reached its size limit): "
            "nothing of this call was stored; free disk space and retry"
        )
    if code in (_CORRUPT, _NOTADB):
        return StoreCorruptError(
            f"cannot {doing} {path}: the file is damaged or is not a memci store ({cause}). "
            f"Restore it from a backup, or save what can be read with "
            f"`sqlite3 {path} .recover | sqlite3 recovered.db` and open recovered.db"
        )
    if "invalid fts5 file format" in str(exc).lower():
        return StoreError(
            f"cannot {doing} {path}: its search index deletes securely, which needs SQLite "
            f"3.42 or later, and this process runs SQLite {driver().sqlite_version} "
            f"({cause}); use a Python whose sqlite3 is 3.42 or later, or install "
            "pysqlite3-binary (pip install 'memci[vectors]') and set "
            "MEMCI_SQLITE_DRIVER=pysqlite3")
    if code == _IOERR:
        hint = "check the disk and its free space, then retry"
    elif code in (_READONLY, _PERM, _CANTOPEN):
        hint = "check that the file and its folder exist and are writable by this user"
    elif code in (_BUSY, _LOCKED):
        hint = "another process held the store locked too long; retry, or stop that process"
    elif code == _NOMEM:
        hint = "the process ran out of memory"
    else:
        hint = f"if it persists, check the file with `sqlite3 {path} 'PRAGMA integrity_check'`"
    return StoreError(f"cannot {doing} {path}: {cause}; {hint}")
