"""What the store keeps of artifacts: one blob per distinct tool output, one link per call.

An artifact's content lives inline in its blob, or, when large, in the store's
:class:`OutputContents`: a folder of files beside the store (the SQLite default; see
:mod:`memci.workspace`), a folder shared by several servers, or the database itself
(PostgreSQL). The rows keep which, with the output's size and address. A link ties a blob
to one tool call of one session, with the call's tool name, arguments, exit code, owner,
time and summary.

Invariants every backend keeps:

- one blob per SHA-256, and one blob per id (:meth:`ArtifactRows.add_blob` of a taken
  id or SHA-256 fails);
- a link's ``seq`` grows: a later link has a larger ``seq`` (in the whole store);
- :meth:`ArtifactRows.link` refuses (:class:`~memci.errors.UnknownSessionError`) a session
  that is not stored, and leaves nothing;
- every method is one transaction of its own or joins the store's open ``atomic()``
  block: the message that carries an output, its blob and its link commit together.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from typing import BinaryIO, Literal, Protocol

from memci._records import NamedTuple

__all__ = ["Artifact", "ArtifactRows", "Blob", "OutputContents"]


class Artifact(NamedTuple):
    """One stored tool output as linked to one tool call.

    ``size`` is in UTF-8 bytes, ``chars`` in characters; ``lines`` counts lines (split
    on newlines only). ``summary`` holds the 1 to 6 summary lines. ``seq`` numbers the
    link (the same content linked to several calls has one ``id`` and several ``seq``).
    """

    id: str
    size: int
    chars: int
    lines: int
    exit_code: int | None
    summary: tuple[str, ...]
    tool_name: str | None
    call_id: str | None
    arguments: str | None
    owner: str
    session_id: int
    created_at: datetime
    stored: Literal["inline", "file"]
    sha256: str
    is_error: bool
    seq: int

    @property
    def pointer(self) -> str:
        """``artifact:<id>``: how context text refers to it."""
        return f"artifact:{self.id}"


class Blob(NamedTuple):
    """One distinct tool output: its id, address and size; ``content`` None: in a file."""

    id: str
    sha256: str
    size: int
    chars: int
    lines: int
    content: str | None


class ArtifactRows(Protocol):
    """Blobs and their links to tool calls."""

    def blob(self, artifact_id: str) -> Blob | None:
        """The blob with this id, or None."""
        ...

    def blob_id(self, sha256: str) -> str | None:
        """The id of the blob whose content has this SHA-256, or None."""
        ...

    def exists(self, artifact_id: str) -> bool:
        """Whether a blob has this id."""
        ...

    def add_blob(self, blob: Blob, *, created_at: datetime) -> None:
        """Store a new blob."""
        ...

    def link(
        self, artifact_id: str, *, session_id: int, call_id: str | None,
        tool_name: str | None, arguments: str | None, exit_code: int | None,
        is_error: bool, summary: Sequence[str], owner: str, created_at: datetime,
    ) -> Artifact:
        """Link a stored blob to one tool call of a session; return the artifact."""
        ...

    def set_summary(self, seq: int, summary: Sequence[str]) -> None:
        """Replace the summary of the link ``seq``."""
        ...

    def file_ids(self) -> set[str]:
        """Ids of every blob whose content is in a file."""
        ...

    def latest(self, artifact_id: str) -> Artifact | None:
        """The blob as linked to its latest call, or None."""
        ...

    def calls(self, artifact_id: str) -> list[Artifact]:
        """Every link of the blob, oldest first."""
        ...

    def for_call(self, session_id: int, call_id: str) -> Artifact | None:
        """The latest link of the call ``call_id`` of the session, or None."""
        ...

    def for_calls(self, session_id: int, call_ids: Collection[str]) -> dict[str, Artifact]:
        """The latest link of each of the calls ``call_ids`` of the session, by call id."""
        ...

    def for_session(self, session_id: int) -> list[Artifact]:
        """Every link of the session, oldest first."""
        ...


class OutputContents(Protocol):
    """Where whole tool outputs too large for their rows live, by artifact id.

    A content is written once under its id and never changed; reading it gives back the
    exact UTF-8 bytes written. ``in_transaction`` says when a write happens:

    - True (the database): inside the store's open ``atomic()`` block, with the rows that
      name it, so a rolled-back write leaves nothing and nothing needs sweeping;
    - False (a folder): before that transaction (no lock is held during an fsync); a
      content is complete under its name or absent. The writer *holds* what it wrote
      until :meth:`release`: no :meth:`discard` or :meth:`sweep` of any process removes a
      held content, so one whose rows are about to commit stays, and one no row names and
      no writer holds (its transaction failed, its process died) is removed by either.

    ``location`` names where the contents are, in messages.
    """

    location: str
    in_transaction: bool

    def write(self, artifact_id: str, chunks: Iterable[bytes], size: int, sha256: str) -> None:
        """Store the content of ``artifact_id``: ``chunks`` of its UTF-8, ``size`` bytes.

        A folder keeps the content held by this writer until :meth:`release`.
        """
        ...

    def release(self, artifact_id: str) -> None:
        """Let go of one hold :meth:`write` took on the content (none held: nothing)."""
        ...

    def discard(self, artifact_id: str, named: Callable[[str], bool]) -> bool:
        """Remove the content unless ``named(artifact_id)`` or a writer holds it; whether it went.

        For what a write whose transaction failed left (release it first), and for the
        content of a blob a deletion removed (once committed): a content another writer
        reused meanwhile, or one a committed row names again, stays; one already gone is
        fine.
        """
        ...

    def open(self, artifact_id: str, size: int) -> BinaryIO:
        """A seekable reader of the content (checked to hold ``size`` bytes).

        Raises :class:`~memci.errors.StoreError` when it is missing or of another size.
        """
        ...

    def sweep(
        self, named: Callable[[], Collection[str]], is_named: Callable[[str], bool], *,
        older_than: float,
    ) -> int:
        """Remove every content no row names and no writer holds; how many went.

        ``named()`` reads the ids the rows name, called once and only when there is a
        content to check (a store's rows are not read when it has none outside them,
        as when it opens); a content outside them is asked
        about again (``is_named``) once nothing can take it any more. Temporary files of a
        write that never finished go once older than ``older_than`` seconds. Contents
        written ``in_transaction`` are always named: there is nothing to sweep.
        """
        ...
