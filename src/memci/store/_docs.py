"""What the store keeps of indexed files: one row per file, its chunks and their keyword text.

A file is kept by its path with the modification time, size and SHA-256 it had when it was
indexed; its chunks (see :mod:`memci.text._chunk`) keep their kind, title, symbol and
line range. Keyword text (of the index's analyzer) covers a chunk's text and its title.

Invariants every backend keeps:

- one row per path; :meth:`DocStore.put_file` replaces every chunk of the file (and their
  keyword text and vectors, in every vector space), so a file is old or new, never mixed;
- a chunk id names one chunk while it is stored (an id may be given again once its chunk
  is gone: its keyword text and vectors went with it);
- every write is one transaction of its own or joins the store's open ``atomic()``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Protocol

from memci._records import NamedTuple

if TYPE_CHECKING:
    from memci.text import Analyzer, Chunk, MatchQuery

__all__ = ["DocChunk", "DocFile", "DocStore"]


class DocFile(NamedTuple):
    """An indexed file as it was when indexed."""

    id: int
    path: str
    kind: str
    mtime_ns: int
    size: int
    sha256: str


class DocChunk(NamedTuple):
    """A stored chunk with its file's path; lines are 1-based and inclusive."""

    id: int
    path: str
    start_line: int
    end_line: int
    title: str
    symbol: str | None
    kind: str
    text: str


class DocStore(Protocol):
    """Indexed files and their chunks (keyword text of one analyzer)."""

    analyzer: Analyzer

    def file(self, path: str) -> DocFile | None:
        """The indexed file at ``path``, or None."""
        ...

    def touch(self, file_id: int, *, mtime_ns: int, size: int) -> None:
        """Record a new modification time and size of a file whose content is unchanged."""
        ...

    def put_file(
        self, path: str, *, kind: str, mtime_ns: int, size: int, sha256: str,
        chunks: Sequence[Chunk], indexed: float,
    ) -> int:
        """Store the file at ``path`` with ``chunks`` in place of what it had; its id."""
        ...

    def files_under(self, path: str, prefix: str) -> list[DocFile]:
        """Files at ``path`` or whose path starts with ``prefix``."""
        ...

    def remove(self, file_ids: Collection[int]) -> None:
        """Forget the files, their chunks, keyword text and vectors."""
        ...

    def chunks(self, chunk_ids: Sequence[int]) -> list[DocChunk]:
        """The chunks still stored, in the order asked."""
        ...

    def keyword(self, plan: MatchQuery, *, kind: str | None, depth: int) -> list[int]:
        """Up to ``depth`` chunk ids matching ``plan`` (and its short terms), best first.

        ``kind``: ``"doc"`` (Markdown and text), ``"code"``, ``"markdown"``, ``"text"``,
        or None for all.
        """
        ...

    def of_kind(self, kind: str) -> list[int]:
        """Ids of every chunk of ``kind`` (as in :meth:`keyword`)."""
        ...

    def paths(self) -> list[str]:
        """Paths of every indexed file, sorted."""
        ...
