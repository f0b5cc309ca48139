"""Indexed files and their chunks (:class:`~memci.store.DocStore`): the row statements.

``doc_files`` and ``doc_chunks`` (migration series ``memory``). A file's chunks, their
keyword text and vectors are replaced in one transaction; two writers indexing one path
at once: the second waits (or, in SQLite, takes its turn), then replaces. Keyword text and
its ranking are each backend's own (:meth:`SqlDocStore._index`,
:meth:`SqlDocStore._unindex`, :meth:`SqlDocStore._ranked`); terms too short for the index
are matched by scanning the chunks' text, the same statement on both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from memci.store._docs import DocChunk, DocFile
from memci.store._sql._conn import Sql, Transactions

if TYPE_CHECKING:
    from memci.text import Analyzer, Chunk, MatchQuery

__all__ = ["SqlDocStore", "kind_filter"]

_FILE = "SELECT id, path, kind, mtime_ns, size, sha256 FROM doc_files"


def _file(row: Sequence[Any]) -> DocFile:
    return DocFile(id=int(row[0]), path=str(row[1]), kind=str(row[2]), mtime_ns=int(row[3]),
                   size=int(row[4]), sha256=str(row[5]))


def kind_filter(kind: str | None) -> tuple[str, list[Any]]:
    """Conditions on ``doc_chunks c`` (starting with `` AND``) for chunks of ``kind``."""
    if kind == "doc":
        return " AND c.kind IN ('markdown', 'text')", []
    if kind is not None:
        return " AND c.kind = ?", [kind]
    return "", []


class SqlDocStore(ABC):
    """The indexed files of one store, with the keyword text of one analyzer."""

    def __init__(self, db: Transactions, analyzer: Analyzer) -> None:
        db.ready("memory")
        self._db = db
        self.analyzer = analyzer

    # -- what each backend does its own way ----------------------------------------------

    @abstractmethod
    def _index(self, sql: Sql, chunk_id: int, file_id: int, title: str, text: str) -> None:
        """Give the chunk its keyword text (its text, and its title and symbol)."""

    @abstractmethod
    def _unindex(self, sql: Sql, chunk_ids: list[int]) -> None:
        """Forget the chunks' keyword text and vectors (before their rows go)."""

    @abstractmethod
    def _ranked(self, sql: Sql, match: str, where: str, args: list[Any], depth: int,
                ) -> list[int]:
        """Up to ``depth`` chunk ids matching the ``MATCH`` text, best first (BM25)."""

    def _prepare_write(self) -> None:  # noqa: B027 (a hook: most backends need nothing)
        """Before a write of chunks: make what their keyword text goes in, if not made."""

    def _delete_chunks(self, sql: Sql, file_id: int) -> None:
        ids = [int(r[0]) for r in sql.all("SELECT id FROM doc_chunks WHERE file_id = ?",
                                          (file_id,))]
        self._unindex(sql, ids)
        sql.run("DELETE FROM doc_chunks WHERE file_id = ?", (file_id,))

    # -- writing -------------------------------------------------------------------------

    def file(self, path: str) -> DocFile | None:
        """The indexed file at ``path``, or None."""
        with self._db.read() as sql:
            row = sql.one(_FILE + " WHERE path = ?", (path,))
        return None if row is None else _file(row)

    def touch(self, file_id: int, *, mtime_ns: int, size: int) -> None:
        """Record a new modification time and size of a file whose content is unchanged."""
        with self._db.write() as sql:
            sql.run("UPDATE doc_files SET mtime_ns = ?, size = ? WHERE id = ?",
                    (mtime_ns, size, file_id))

    def put_file(
        self, path: str, *, kind: str, mtime_ns: int, size: int, sha256: str,
        chunks: Sequence[Chunk], indexed: float,
    ) -> int:
        """Store the file at ``path`` with ``chunks`` in place of what it had; its id."""
        self._prepare_write()
        with self._db.write() as sql:
            file_id = int(sql.value(
                "INSERT INTO doc_files (path, kind, mtime_ns, size, sha256, indexed)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (path) DO UPDATE SET"
                " kind = excluded.kind, mtime_ns = excluded.mtime_ns, size = excluded.size,"
                " sha256 = excluded.sha256, indexed = excluded.indexed RETURNING id",
                (path, kind, mtime_ns, size, sha256, indexed)))
            self._delete_chunks(sql, file_id)
            for ordinal, chunk in enumerate(chunks):
                made = sql.value(
                    "INSERT INTO doc_chunks (file_id, ordinal, kind, title, symbol, start_line,"
                    " end_line, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (file_id, ordinal, chunk.kind, chunk.title, chunk.symbol, chunk.start_line,
                     chunk.end_line, chunk.text))
                self._index(sql, int(made), file_id,
                            f"{chunk.title} {chunk.symbol or ''}".strip(), chunk.text)
        return file_id

    def files_under(self, path: str, prefix: str) -> list[DocFile]:
        """Files at ``path`` or whose path starts with ``prefix``."""
        with self._db.read() as sql:
            rows = sql.all(_FILE + " WHERE path = ? OR substr(path, 1, ?) = ?",
                           (path, len(prefix), prefix))
        return [_file(r) for r in rows]

    def remove(self, file_ids: Collection[int]) -> None:
        """Forget the files, their chunks, keyword text and vectors."""
        self._prepare_write()
        with self._db.write() as sql:
            for file_id in file_ids:
                self._delete_chunks(sql, file_id)
                sql.run("DELETE FROM doc_files WHERE id = ?", (file_id,))

    # -- reading -------------------------------------------------------------------------

    def chunks(self, chunk_ids: Sequence[int]) -> list[DocChunk]:
        """The chunks still stored, in the order asked."""
        if not chunk_ids:
            return []
        with self._db.read() as sql:
            d = sql.dialect
            rows = sql.all(
                "SELECT c.id, f.path, c.start_line, c.end_line, c.title, c.symbol, c.kind,"
                " c.text FROM doc_chunks c JOIN doc_files f ON f.id = c.file_id"
                f" WHERE {d.in_array('c.id')}", (d.array(int(i) for i in chunk_ids),))
        found = {int(r[0]): DocChunk(int(r[0]), str(r[1]), int(r[2]), int(r[3]), r[4], r[5],
                                     r[6], r[7]) for r in rows}
        return [found[i] for i in chunk_ids if i in found]

    def keyword(self, plan: MatchQuery, *, kind: str | None, depth: int) -> list[int]:
        """Up to ``depth`` chunk ids matching ``plan`` (BM25; then its short terms)."""
        where, args = kind_filter(kind)
        found: list[int] = []
        with self._db.snapshot() as sql:
            if plan.match is not None:
                found = self._ranked(sql, plan.match, where, args, depth)
            if plan.short_terms:
                likes = " OR ".join(sql.dialect.contains("lower(c.text)")
                                    for _ in plan.short_terms)
                extra = [int(r[0]) for r in sql.all(
                    f"SELECT c.id FROM doc_chunks c WHERE ({likes}){where} ORDER BY c.id"
                    " LIMIT ?", (*[s.lower() for s in plan.short_terms], *args, depth))]
                found = list(dict.fromkeys([*found, *extra]))
        return found

    def of_kind(self, kind: str) -> list[int]:
        """Ids of every chunk of ``kind``."""
        where, args = kind_filter(kind)
        with self._db.read() as sql:
            return [int(r[0]) for r in sql.all(
                f"SELECT c.id FROM doc_chunks c WHERE TRUE{where} ORDER BY c.id", args)]

    def paths(self) -> list[str]:
        """Paths of every indexed file, sorted."""
        with self._db.read() as sql:
            return [str(r[0]) for r in sql.all("SELECT path FROM doc_files ORDER BY path")]
