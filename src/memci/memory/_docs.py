"""The document and code index (seed 003's File and Doc RAG, and Code Index).

:meth:`DocIndex.index_path` walks a file or a folder and indexes text, Markdown and code
files as chunks (see :mod:`memci.memory._chunk`). It is incremental: a file whose size and
modification time are unchanged is not read; one whose content hash is unchanged is not
re-chunked; files gone from the folder are dropped from the index. Each file is indexed
in one transaction, so an interrupted run leaves every file either old or new.

:meth:`DocIndex.search_docs` fuses keyword (FTS5 over chunk text and titles) and dense
retrieval; a hit carries the path and the 1-based line range, ready for ``file_snippet``.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memci.errors import InvalidInputError
from memci.memory._chunk import CODE_SUFFIXES, TEXT_SUFFIXES, Chunk, chunk_file
from memci.memory._embed import Embedder, embedder_from_env, speaks
from memci.memory._hit import fuse
from memci.memory._schema import MEMORY_MIGRATIONS, ensure_fts, fts_name
from memci.memory._text import Analyzer, get_analyzer
from memci.memory._vectors import VectorIndex, forget_vectors
from memci.store import SQLiteStore

__all__ = ["DocHit", "DocIndex", "IndexReport", "Progress"]

Progress = Callable[[int, int, str], None]
"""Called as ``progress(done, total, path)`` after each file is handled."""

_SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
    ".mypy_cache", ".ruff_cache", ".pytest_cache", "dist", "build", ".memci", "target",
    ".idea", ".vscode", ".next", ".cache",
})
_EMBED_LIMIT = 2_000


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What one :meth:`DocIndex.index_path` run did."""

    files_seen: int
    files_indexed: int
    files_unchanged: int
    files_removed: int
    files_skipped: int
    chunks_written: int
    seconds: float


@dataclass(frozen=True, slots=True)
class DocHit:
    """A chunk of a file that matches a query; lines are 1-based and inclusive."""

    path: str
    start_line: int
    end_line: int
    title: str
    symbol: str | None
    kind: str
    text: str
    score: float
    retrievers: tuple[str, ...]

    @property
    def snippet_args(self) -> dict[str, str | int]:
        """Arguments for the ``file_snippet`` tool that show this chunk."""
        return {"path": self.path, "start": self.start_line,
                "length": self.end_line - self.start_line + 1}


class DocIndex:
    """Text, Markdown and code files of folders, chunked and searchable."""

    def __init__(
        self,
        store: SQLiteStore,
        *,
        analyzer: str | Analyzer | None = None,
        embedder: Embedder | Literal["env"] | None = "env",
        min_tokens: int = 300,
        max_tokens: int = 800,
        max_file_bytes: int = 2_000_000,
    ) -> None:
        from memci.memory._index import DEFAULT_ANALYZER

        if not 0 < min_tokens <= max_tokens:
            raise InvalidInputError("chunk sizes need 0 < min_tokens <= max_tokens")
        self.store = store
        self.analyzer = (get_analyzer(analyzer or DEFAULT_ANALYZER)
                         if analyzer is None or isinstance(analyzer, str) else analyzer)
        self.embedder = embedder_from_env() if embedder == "env" else embedder
        self.vectors = (VectorIndex(self.embedder, store) if self.embedder is not None
                        else None)
        self.min_tokens, self.max_tokens = min_tokens, max_tokens
        self.max_file_bytes = max_file_bytes
        self.table = fts_name("doc_chunks_fts", self.analyzer)
        store.migrate("memory", MEMORY_MIGRATIONS)
        with store.write() as db:
            if ensure_fts(db, "doc_chunks_fts", self.analyzer):
                for cid, title, text in db.execute(
                        "SELECT id, title, text FROM doc_chunks").fetchall():
                    self._add_fts(db, int(cid), title, text)

    # -- indexing ------------------------------------------------------------------------

    @staticmethod
    def _wanted(path: Path) -> bool:
        suffix = path.suffix.lower()
        return suffix in TEXT_SUFFIXES or suffix in CODE_SUFFIXES

    def _walk(self, root: Path) -> Iterator[Path]:
        if root.is_file():
            yield root
            return
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                path = Path(folder) / name
                if not name.startswith(".") and self._wanted(path):
                    yield path

    def index_path(self, path: str | Path, *, progress: Progress | None = None) -> IndexReport:
        """Index the file or folder ``path``; only new and changed files are read again."""
        started = time.perf_counter()
        root = Path(path).expanduser().resolve()
        if not root.exists():
            raise InvalidInputError(f"{root} does not exist: give a file or a folder to index")
        files = list(self._walk(root))
        indexed = unchanged = skipped = chunks = 0
        seen: set[str] = set()
        for done, file in enumerate(files, start=1):
            key = str(file)
            seen.add(key)
            try:
                outcome, written = self._index_file(file)
            except OSError:
                outcome, written = "skipped", 0
            indexed += outcome == "indexed"
            unchanged += outcome == "unchanged"
            skipped += outcome == "skipped"
            chunks += written
            if progress is not None:
                progress(done, len(files), key)
        removed = self._drop_missing(root, seen)
        return IndexReport(len(files), indexed, unchanged, removed, skipped, chunks,
                           time.perf_counter() - started)

    def _index_file(self, file: Path) -> tuple[str, int]:
        stat = file.stat()
        key = str(file)
        with self.store.read() as db:
            row = db.execute("SELECT id, mtime_ns, size, sha256 FROM doc_files WHERE path = ?",
                             (key,)).fetchone()
        if row is not None and row[1] == stat.st_mtime_ns and row[2] == stat.st_size:
            return "unchanged", 0
        if stat.st_size > self.max_file_bytes:
            return "skipped", 0
        data = file.read_bytes()
        if b"\x00" in data[:8192]:
            return "skipped", 0
        digest = hashlib.sha256(data).hexdigest()
        with self.store.write() as db:
            if row is not None and row[3] == digest:
                db.execute("UPDATE doc_files SET mtime_ns = ?, size = ? WHERE id = ?",
                           (stat.st_mtime_ns, stat.st_size, row[0]))
                return "unchanged", 0
            text = data.decode("utf-8", errors="replace")
            pieces = chunk_file(file.suffix, text, name=file.name,
                                min_tokens=self.min_tokens, max_tokens=self.max_tokens)
            kind = "code" if file.suffix.lower() in CODE_SUFFIXES else "doc"
            if row is not None:
                self._delete_chunks(db, int(row[0]))
                db.execute("UPDATE doc_files SET kind = ?, mtime_ns = ?, size = ?, sha256 = ?,"
                           " indexed = ? WHERE id = ?",
                           (kind, stat.st_mtime_ns, stat.st_size, digest, time.time(), row[0]))
                file_id = int(row[0])
            else:
                cursor = db.execute(
                    "INSERT INTO doc_files (path, kind, mtime_ns, size, sha256, indexed)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    (key, kind, stat.st_mtime_ns, stat.st_size, digest, time.time()),
                )
                file_id = int(cursor.lastrowid or 0)
            for ordinal, chunk in enumerate(pieces):
                self._add_chunk(db, file_id, ordinal, chunk)
        return "indexed", len(pieces)

    def _add_chunk(self, db: sqlite3.Connection, file_id: int, ordinal: int,
                   chunk: Chunk) -> None:
        cursor = db.execute(
            "INSERT INTO doc_chunks (file_id, ordinal, kind, title, symbol, start_line,"
            " end_line, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (file_id, ordinal, chunk.kind, chunk.title, chunk.symbol, chunk.start_line,
             chunk.end_line, chunk.text),
        )
        self._add_fts(db, int(cursor.lastrowid or 0),
                      f"{chunk.title} {chunk.symbol or ''}".strip(), chunk.text)

    def _add_fts(self, db: sqlite3.Connection, chunk_id: int, title: str, text: str) -> None:
        db.execute(f"INSERT INTO {self.table} (rowid, body, title) VALUES (?, ?, ?)",
                   (chunk_id, self.analyzer.document(text), self.analyzer.document(title)))

    def _delete_chunks(self, db: sqlite3.Connection, file_id: int) -> None:
        ids = [int(r[0]) for r in db.execute("SELECT id FROM doc_chunks WHERE file_id = ?",
                                             (file_id,))]
        db.executemany(f"DELETE FROM {self.table} WHERE rowid = ?", [(i,) for i in ids])
        forget_vectors(self.store, db, "chunk", ids)
        db.execute("DELETE FROM doc_chunks WHERE file_id = ?", (file_id,))

    def _drop_missing(self, root: Path, seen: set[str]) -> int:
        prefix = str(root) if root.is_file() else str(root).rstrip(os.sep) + os.sep
        with self.store.write() as db:
            rows = db.execute("SELECT id, path FROM doc_files WHERE path = ? OR"
                              " substr(path, 1, ?) = ?",
                              (str(root), len(prefix), prefix)).fetchall()
            gone = [(int(r[0]), r[1]) for r in rows if r[1] not in seen]
            for file_id, _ in gone:
                self._delete_chunks(db, file_id)
                db.execute("DELETE FROM doc_files WHERE id = ?", (file_id,))
        return len(gone)

    def embed_pending(self, *, batch: int = 128) -> int:
        """Embed chunks that have no vector yet (a no-op without an embedder)."""
        if self.vectors is None or self.embedder is None:
            return 0
        done = 0
        while True:
            with self.store.read() as db:
                ids = self.vectors.missing(db, "chunk", "doc_chunks", batch)
                rows = [db.execute("SELECT id, title, text FROM doc_chunks WHERE id = ?",
                                   (i,)).fetchone() for i in ids]
            if not rows:
                return done
            vectors = self.embedder.embed([f"{r[1]}\n{r[2]}"[:_EMBED_LIMIT] for r in rows])
            with self.store.write() as db:
                self.vectors.add(db, "chunk", [(int(r[0]), None) for r in rows], vectors)
            done += len(rows)

    # -- searching -----------------------------------------------------------------------

    def search_docs(self, query: str, k: int = 10, kind: str | None = None) -> list[DocHit]:
        """Return the ``k`` chunks that best match ``query``.

        ``kind`` is ``"doc"``, ``"code"``, ``"markdown"``, ``"text"`` or None for all.
        """
        if kind not in (None, "doc", "code", "markdown", "text"):
            raise InvalidInputError(f"kind must be 'doc', 'code', 'markdown' or 'text', "
                                    f"not {kind!r}")
        if k <= 0 or not query.strip():
            return []
        where, args = "", []
        if kind == "doc":
            where = " AND c.kind IN ('markdown', 'text')"
        elif kind is not None:
            where, args = " AND c.kind = ?", [kind]
        depth = max(50, 3 * k)
        plan = self.analyzer.query(query)
        lists: dict[str, list[int]] = {}
        t = self.table
        with self.store.read() as db:
            if plan.match is not None:
                lists["keyword"] = [int(r[0]) for r in db.execute(
                    f"SELECT c.id FROM {t} JOIN doc_chunks c ON c.id = {t}.rowid WHERE {t}"
                    f" MATCH ?{where} ORDER BY bm25({t}, 1.0, 2.0), c.id LIMIT ?",
                    (f"{{body title}} : ({plan.match})", *args, depth))]
            if plan.short_terms:
                likes = " OR ".join("instr(lower(c.text), ?) > 0" for _ in plan.short_terms)
                extra = [int(r[0]) for r in db.execute(
                    f"SELECT c.id FROM doc_chunks c WHERE ({likes}){where} LIMIT ?",
                    (*[s.lower() for s in plan.short_terms], *args, depth))]
                lists["keyword"] = list(dict.fromkeys([*lists.get("keyword", []), *extra]))
            allowed = None
            if where:
                allowed = [int(r[0]) for r in db.execute(
                    f"SELECT c.id FROM doc_chunks c WHERE 1 = 1{where}", args)]
        if (self.vectors is not None and self.embedder is not None
                and speaks(self.embedder, query)):
            self.embed_pending()
            vector = self.embedder.embed([query])[0]
            with self.store.read() as db:
                lists["dense"] = [ref for ref, _ in self.vectors.search(
                    db, "chunk", vector, depth, refs=allowed)]
        fused = fuse(lists)[:k]
        hits: list[DocHit] = []
        with self.store.read() as db:
            for chunk_id, score, names in fused:
                row = db.execute(
                    "SELECT f.path, c.start_line, c.end_line, c.title, c.symbol, c.kind, c.text"
                    " FROM doc_chunks c JOIN doc_files f ON f.id = c.file_id WHERE c.id = ?",
                    (chunk_id,)).fetchone()
                if row is not None:
                    hits.append(DocHit(row[0], int(row[1]), int(row[2]), row[3], row[4],
                                       row[5], row[6], score, names))
        return hits

    def files(self) -> list[str]:
        """Paths of every indexed file."""
        with self.store.read() as db:
            return [r[0] for r in db.execute("SELECT path FROM doc_files ORDER BY path")]
