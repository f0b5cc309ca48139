"""The document and code index (seed 003's File and Doc RAG, and Code Index).

:meth:`DocIndex.index_path` walks a file or a folder and indexes text, Markdown and code
files as chunks (see :mod:`memci.text._chunk`). It is incremental: a file whose size and
modification time are unchanged is not read; one whose content hash is unchanged is not
re-chunked; files gone from the folder are dropped from the index. Each file is indexed
in one transaction, so an interrupted run leaves every file either old or new.

:meth:`DocIndex.search_docs` fuses keyword (over chunk text and titles) and dense
retrieval; a hit carries the path and the 1-based line range, ready for ``file_snippet``.
Files and chunks are kept by the store's document part (``store.docs(analyzer)``, a
:class:`~memci.store.DocStore`).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from memci import _trace
from memci._dataclasses import dataclass
from memci.errors import InvalidInputError
from memci.memory._embed import Embedder, embedder_from_env, query_vector, speaks
from memci.memory._hit import fuse
from memci.store import DocStore, Store, VectorStore
from memci.text import CODE_SUFFIXES, TEXT_SUFFIXES, Analyzer, chunk_file, get_analyzer

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
        store: Store,
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
        self.vectors: VectorStore | None = (
            store.vectors(self.embedder.name) if self.embedder is not None else None)
        self.min_tokens, self.max_tokens = min_tokens, max_tokens
        self.max_file_bytes = max_file_bytes
        self.rows: DocStore = store.docs(self.analyzer)

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
        row = self.rows.file(key)
        if row is not None and row.mtime_ns == stat.st_mtime_ns and row.size == stat.st_size:
            return "unchanged", 0
        if stat.st_size > self.max_file_bytes:
            return "skipped", 0
        data = file.read_bytes()
        if b"\x00" in data[:8192]:
            return "skipped", 0
        digest = hashlib.sha256(data).hexdigest()
        if row is not None and row.sha256 == digest:
            self.rows.touch(row.id, mtime_ns=stat.st_mtime_ns, size=stat.st_size)
            return "unchanged", 0
        text = data.decode("utf-8", errors="replace")
        pieces = chunk_file(file.suffix, text, name=file.name,
                            min_tokens=self.min_tokens, max_tokens=self.max_tokens)
        kind = "code" if file.suffix.lower() in CODE_SUFFIXES else "doc"
        self.rows.put_file(key, kind=kind, mtime_ns=stat.st_mtime_ns, size=stat.st_size,
                           sha256=digest, chunks=pieces, indexed=time.time())
        return "indexed", len(pieces)

    def _drop_missing(self, root: Path, seen: set[str]) -> int:
        prefix = str(root) if root.is_file() else str(root).rstrip(os.sep) + os.sep
        with self.store.atomic():
            gone = [f.id for f in self.rows.files_under(str(root), prefix)
                    if f.path not in seen]
            self.rows.remove(gone)
        return len(gone)

    def embed_pending(self, *, batch: int = 128) -> int:
        """Embed chunks that have no vector yet (a no-op without an embedder)."""
        if self.vectors is None or self.embedder is None:
            return 0
        done = 0
        while True:
            chunks = self.rows.chunks(self.vectors.missing("chunk", batch))
            if not chunks:
                return done
            vectors = _trace.embed(self.embedder, [f"{c.title}\n{c.text}"[:_EMBED_LIMIT]
                                           for c in chunks])
            self.vectors.add("chunk", [(c.id, None) for c in chunks], vectors)
            done += len(chunks)

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
        depth = max(50, 3 * k)
        plan = self.analyzer.query(query)
        lists: dict[str, list[int]] = {}
        if plan.match is not None or plan.short_terms:
            lists["keyword"] = self.rows.keyword(plan, kind=kind, depth=depth)
        allowed = self.rows.of_kind(kind) if kind is not None else None
        if (self.vectors is not None and self.embedder is not None
                and speaks(self.embedder, query)):
            self.embed_pending()
            vector = query_vector(self.embedder, query)
            lists["dense"] = [ref for ref, _ in self.vectors.search(
                "chunk", vector, depth, refs=allowed)]
        fused = fuse(lists)[:k]
        chunks = {c.id: c for c in self.rows.chunks([chunk_id for chunk_id, _, _ in fused])}
        hits: list[DocHit] = []
        for chunk_id, score, names in fused:
            c = chunks.get(chunk_id)
            if c is not None:
                hits.append(DocHit(c.path, c.start_line, c.end_line, c.title, c.symbol,
                                   c.kind, c.text, score, names))
        return hits

    def files(self) -> list[str]:
        """Paths of every indexed file."""
        return self.rows.paths()
