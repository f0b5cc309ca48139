"""Artifacts: every tool output stored whole, content-addressed, and pointed to by id.

A tool output is stored once per distinct content: its id is the first 12 hex digits of
the SHA-256 of its UTF-8 bytes (longer in the astronomically rare case that 12 collide),
so the same output of two calls is one blob linked to two calls. Each link row keeps
the call's tool name, call id, arguments, exit code, owner, session, time and summary.

Small outputs (up to ``inline_max_bytes``) live inline in the store's rows; larger ones
in the artifact store's *contents* (:class:`~memci.store.OutputContents`): files in a
folder, ``<folder>/<first two hex digits>/<id>.txt`` (:class:`ArtifactFolder`, beside a
SQLite database, or a folder several servers share), or the database itself (a
PostgreSQL store's). The rows go through the store's artifact part
(``store.artifact_rows``, an :class:`~memci.store.ArtifactRows`). Storing is two steps:
:meth:`ArtifactStore.prepare` (outside any transaction) hashes, summarizes and, for a
folder, writes the file atomically (temporary file, fsync, rename to its content address,
fsync of the folder); :meth:`ArtifactStore.link` writes the rows (and a content the
database keeps) in one ``store.atomic()`` block, which joins the caller's transaction — the
one that stores the tool message, so the message, its artifact and its content are stored
together or not at all. Invariants:

- a committed row always names a complete content;
- no file without its row: a tool result that answers no open call is refused before its
  file is written; the files written inside a :meth:`ArtifactStore.writing` block (the
  one around the transaction that names them) are held until the block ends, and removed
  then if the transaction failed; a file left by a process that died in between is
  removed by the next :meth:`ArtifactStore.sweep` (the engine sweeps when it opens, after
  a deletion and when it scrubs), while a file another writer holds is never removed (a
  content in the database is written with its rows: there is none without one);
- a large output is processed in bounded memory: hashed, written and read in chunks;
  reading a range (:meth:`ArtifactStore.read`, :meth:`ArtifactStore.read_lines`) reads
  only as much of the content as the range needs (an ASCII one is read at the offset).

Context text refers to an artifact as ``artifact:<id>`` (:func:`pointer`); the model
reads more of it through the ``artifact_get`` tool. :func:`render_tool_result` is how a
tool result appears in a context: its summary, its pointer and, when asked, the head of
the output cut at a line boundary with a note of what was cut and how to get more.
"""

from __future__ import annotations

import codecs
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal

from memci._lazy import LazyPattern, pathlib
from memci._records import NamedTuple
from memci.errors import ArtifactNotFoundError, InvalidTextError, StoreError, WorkspaceError
from memci.store import Artifact, ArtifactRows, Blob, OutputContents, SessionRecord, Store
from memci.workspace._folder import ArtifactFolder
from memci.workspace._summary import (
    SUMMARY_LINE_WIDTH,
    ToolOutputSummarizer,
    parse_exit_code,
    summarize_tool_output,
)
from memci.workspace._text import count_lines, shorten

__all__ = [
    "ARTIFACT_ID_LENGTH",
    "Artifact",
    "ArtifactFolder",
    "ArtifactStore",
    "PreparedOutput",
    "parse_artifact_ref",
    "pointer",
    "render_tool_result",
    "slice_lines",
]

ARTIFACT_ID_LENGTH = 12
"""Hex digits of an artifact id (a prefix of the SHA-256 of the content)."""

_ID = LazyPattern(r"[0-9a-f]{12,64}")
_CACHE_CHARS = 32 * 1024 * 1024
_CHUNK = 1 << 18  # characters (or bytes) per step when hashing, writing or reading a file
_SWEEP_AGE = 3600.0


def pointer(artifact_id: str) -> str:
    """How context text refers to an artifact: ``artifact:<id>``."""
    return f"artifact:{artifact_id}"


def parse_artifact_ref(ref: str) -> str:
    """Return the id in ``artifact:<id>`` or a bare id; raises :class:`ArtifactNotFoundError`."""
    text = ref.strip()
    if text.startswith("artifact:"):
        text = text[len("artifact:"):]
    text = text.lower()
    if not _ID.fullmatch(text):
        raise ArtifactNotFoundError(
            f"{ref!r} is not an artifact id: write artifact:<id> with the 12 (or more) hex "
            "digits shown in the context, e.g. artifact:0123456789ab"
        )
    return text


def _not_found(aid: str) -> ArtifactNotFoundError:
    return ArtifactNotFoundError(
        f"no artifact {pointer(aid)}: check the id in the context "
        "(ids are the 12 hex digits after 'artifact:')"
    )


def _session_id(session: SessionRecord | int) -> int:
    return session.id if isinstance(session, SessionRecord) else int(session)


def _clean_summary(
    lines: Sequence[str], content: str, *, fallback: str | None = None
) -> tuple[str, ...]:
    """Summary lines as stored: 1 to 6 single lines, whatever a summarizer returned."""
    out = [shorten(str(line), SUMMARY_LINE_WIDTH) for line in lines if str(line).strip()]
    if not out:
        out = [fallback or f"{count_lines(content):,} lines, {len(content):,} chars"]
    return tuple(out[:6])


class PreparedOutput(NamedTuple):
    """A tool output made ready by :meth:`ArtifactStore.prepare`, before its rows exist.

    ``stored`` says where it will live; ``file_written`` whether its file was written
    (False for an inline output, or when its blob was already stored).
    """

    content: str
    sha256: str
    size: int
    chars: int
    lines: int
    exit_code: int | None
    summary: tuple[str, ...]
    tool_name: str | None
    arguments: str | None
    stored: Literal["inline", "file"]
    file_written: bool


def _utf8(content: str) -> Iterator[bytes]:
    """``content`` as UTF-8, one chunk at a time (a large output is never copied whole)."""
    for start in range(0, len(content), _CHUNK):
        try:
            yield content[start:start + _CHUNK].encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidTextError(
                f"tool output is not valid Unicode ({exc.reason} at {start + exc.start}): "
                "decode it with errors='replace' first"
            ) from exc


class ArtifactStore:
    """Tool outputs, stored whole and content-addressed, in a store and its contents.

    ``files_dir`` is where large outputs go: a folder (a path), or an
    :class:`~memci.store.OutputContents` (e.g. ``store.output_contents`` of a PostgreSQL
    store). :attr:`files_dir` is the folder, None when the contents are not files.
    """

    def __init__(
        self, store: Store, files_dir: str | pathlib.Path | OutputContents, *,
        inline_max_bytes: int = 64 * 1024,
        summarize: ToolOutputSummarizer = summarize_tool_output,
    ) -> None:
        if inline_max_bytes < 0:
            raise WorkspaceError(f"inline_max_bytes must be 0 or more, not {inline_max_bytes}")
        self.store = store
        self.contents: OutputContents = (ArtifactFolder(files_dir)
                                         if isinstance(files_dir, str | os.PathLike)
                                         else files_dir)
        self.files_dir: pathlib.Path | None = (self.contents.folder
                                       if isinstance(self.contents, ArtifactFolder) else None)
        self.inline_max_bytes = inline_max_bytes
        self.summarize = summarize
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cache_chars = 0
        self._cache_lock = threading.Lock()
        self.rows: ArtifactRows = store.artifact_rows
        # The ids of the contents written in this thread's open writing() block.
        self._writing = threading.local()
        if store.output_reader is None:
            # Message rows of large tool outputs hold only a head; the whole is read here.
            store.output_reader = self.content_by_sha

    # -- writing -------------------------------------------------------------------------

    def prepare(
        self, content: str, *, tool_name: str | None = None,
        arguments: str | Mapping[str, Any] | None = None,
    ) -> PreparedOutput:
        """Hash and summarize one tool output and, when it is large, write its file.

        Runs outside any transaction (the write lock is not held during an fsync); the
        rows are written by :meth:`link`. Inside a :meth:`writing` block the file stays
        held until the block ends. ``arguments`` is the call's arguments as JSON
        text (or a mapping, stored as JSON); they and ``tool_name`` help the summary.
        """
        import hashlib  # with OpenSSL's: loaded by the first output stored, not by an import

        if not isinstance(content, str):
            raise WorkspaceError(f"tool output must be text, not {type(content).__name__}")
        args_text = (
            json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True)
            if isinstance(arguments, Mapping) else arguments
        )
        digest = hashlib.sha256()
        size = 0
        for piece in _utf8(content):
            digest.update(piece)
            size += len(piece)
        sha = digest.hexdigest()
        large = size > self.inline_max_bytes
        summary = _clean_summary(
            self.summarize(content, tool_name=tool_name, arguments=args_text), content)
        written = False
        if large and not self.contents.in_transaction and self.rows.blob_id(sha) is None:
            # The name is final unless the 12-digit id turns out to be taken (see link).
            self._write_content(sha[:ARTIFACT_ID_LENGTH], content, size, sha)
            written = True
        return PreparedOutput(
            content=content, sha256=sha, size=size, chars=len(content),
            lines=count_lines(content), exit_code=parse_exit_code(content), summary=summary,
            tool_name=tool_name, arguments=args_text, stored="file" if large else "inline",
            file_written=written,
        )

    def link(
        self, prepared: PreparedOutput, *, session: SessionRecord | int, call_id: str | None,
        owner: str = "main", created_at: datetime | None = None, is_error: bool = False,
    ) -> Artifact:
        """Store a prepared output (once per content) and link it to its call.

        Writes in one ``store.atomic()`` block, so inside the caller's (the one that
        stores the tool message) the rows commit with it or not at all.
        """
        sid = _session_id(session)
        when = (created_at or datetime.now(UTC)).astimezone(UTC)
        sha = prepared.sha256
        with self.store.atomic():
            artifact_id = self.rows.blob_id(sha)
            if artifact_id is None:
                artifact_id = self._free_id(sha)
                large = prepared.stored == "file"
                if large and (artifact_id != sha[:ARTIFACT_ID_LENGTH]
                              or not prepared.file_written):
                    self._write_content(artifact_id, prepared.content, prepared.size, sha)
                self.rows.add_blob(Blob(
                    id=artifact_id, sha256=sha, size=prepared.size, chars=prepared.chars,
                    lines=prepared.lines, content=None if large else prepared.content,
                ), created_at=when)
            return self.rows.link(
                artifact_id, session_id=sid, call_id=call_id, tool_name=prepared.tool_name,
                arguments=prepared.arguments, exit_code=prepared.exit_code,
                is_error=is_error, summary=prepared.summary, owner=owner, created_at=when,
            )

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the contents written inside the block until it ends; drop them on failure.

        Wrap it around :meth:`prepare` and the transaction that :meth:`link` joins: until
        that transaction ended, no sweep or discard (of any process) removes what it wrote;
        when the block raises, the contents it wrote that no row names go. A block inside
        a block of the same thread joins the outer one. Writes outside any block are not
        held: a sweep may remove such a file before the row that names it commits.
        """
        if getattr(self._writing, "ids", None) is not None:
            yield
            return
        written: list[str] = []
        self._writing.ids = written
        done = False
        try:
            yield
            done = True
        finally:
            self._writing.ids = None
            for aid in written:
                self.contents.release(aid)
            if not done:
                for aid in dict.fromkeys(written):
                    self.contents.discard(aid, self.rows.exists)

    def put(
        self, content: str, *, session: SessionRecord | int, tool_name: str | None,
        call_id: str | None, arguments: str | Mapping[str, Any] | None = None,
        owner: str = "main", created_at: datetime | None = None, is_error: bool = False,
    ) -> Artifact:
        """Store one tool output (once per distinct content) and link it to its call.

        :meth:`prepare` then :meth:`link` in a transaction of its own. The exit code is
        read from the output where it reports one; the summary is made by ``summarize``
        (by default :func:`summarize_tool_output`).
        """
        with self.writing():
            prepared = self.prepare(content, tool_name=tool_name, arguments=arguments)
            return self.link(prepared, session=session, call_id=call_id, owner=owner,
                             created_at=created_at, is_error=is_error)

    def set_summary(self, artifact: Artifact, lines: Sequence[str]) -> Artifact:
        """Replace the summary of one link (e.g. with an LLM's, made later); 1 to 6 lines."""
        summary = _clean_summary(lines, "", fallback=f"{artifact.lines:,} lines, "
                                                     f"{artifact.chars:,} chars")
        self.rows.set_summary(artifact.seq, summary)
        return artifact._replace(summary=summary)

    def sweep(self, *, older_than: float = _SWEEP_AGE) -> int:
        """Remove the artifact files no row names and no writer holds; how many went.

        Such files are left when a process died between writing a file and committing its
        row (a failed transaction removes its own). A file another writer holds (its row
        is about to commit) stays. Temporary files of a write that never finished go once
        older than ``older_than`` seconds. Contents kept in the database are written with
        their rows and need no sweeping.
        """
        if self.contents.in_transaction:
            return 0
        return self.contents.sweep(self.rows.file_ids, self.rows.exists,
                                   older_than=older_than)

    def remove_files(self, artifact_ids: Sequence[str]) -> int:
        """Remove the contents of blobs whose rows a deletion removed; forget cached text.

        Called after the deletion committed: a file goes only once no row names it, and
        not while another writer holds it (the same output, about to be stored again by
        another call). A file already gone is fine. Returns how many files were removed.
        """
        self.clear_cache()
        return sum(1 for aid in artifact_ids if self.contents.discard(aid, self.rows.exists))

    def clear_cache(self) -> None:
        """Forget every output read and kept in memory (after a deletion)."""
        with self._cache_lock:
            self._cache.clear()
            self._cache_chars = 0

    def _free_id(self, sha: str) -> str:
        for length in range(ARTIFACT_ID_LENGTH, 65, 4):
            candidate = sha[:length]
            if not self.rows.exists(candidate):
                return candidate
        raise StoreError(f"no free artifact id for sha256 {sha}")  # pragma: no cover

    def _write_content(self, artifact_id: str, content: str, size: int, sha: str) -> None:
        """Store ``content`` as the content of ``artifact_id`` (complete, or not at all).

        Held until this thread's :meth:`writing` block ends; outside one, not held.
        """
        self.contents.write(artifact_id, _utf8(content), size, sha)
        written: list[str] | None = getattr(self._writing, "ids", None)
        if written is None:
            self.contents.release(artifact_id)
        else:
            written.append(artifact_id)

    # -- reading -------------------------------------------------------------------------

    def get(self, artifact_id: str) -> Artifact:
        """Return the artifact (as linked to its latest call); ``artifact:<id>`` is accepted too."""
        aid = parse_artifact_ref(artifact_id)
        found = self.rows.latest(aid)
        if found is None:
            raise _not_found(aid)
        return found

    def exists(self, artifact_id: str) -> bool:
        """Whether an artifact with this id is stored."""
        try:
            aid = parse_artifact_ref(artifact_id)
        except ArtifactNotFoundError:
            return False
        return self.rows.exists(aid)

    def calls(self, artifact_id: str) -> list[Artifact]:
        """Every call linked to this content, oldest first."""
        return self.rows.calls(self.get(artifact_id).id)

    def for_call(self, session: SessionRecord | int, call_id: str) -> Artifact | None:
        """Return the artifact of the latest call ``call_id`` of the session, or None."""
        return self.rows.for_call(_session_id(session), call_id)

    def for_calls(self, session: SessionRecord | int,
                  call_ids: Collection[str]) -> dict[str, Artifact]:
        """The artifact of the latest call of each of ``call_ids`` of the session, by call id."""
        return self.rows.for_calls(_session_id(session), call_ids)

    def for_session(self, session: SessionRecord | int) -> list[Artifact]:
        """Every artifact link of the session, oldest first."""
        return self.rows.for_session(_session_id(session))

    def content(self, artifact_id: str) -> str:
        """Return the whole stored output, exactly as it was put."""
        aid = parse_artifact_ref(artifact_id)
        with self._cache_lock:
            cached = self._cache.get(aid)
            if cached is not None:
                self._cache.move_to_end(aid)
                return cached
        content, size, _ = self._blob(aid)
        if content is not None:
            return content
        with self.contents.open(aid, size) as handle:
            data = handle.read()
        if len(data) != size:
            raise StoreError(f"artifact {pointer(aid)} has {len(data)} bytes in "
                             f"{self.contents.location}, not {size}")
        text = data.decode("utf-8")
        self._remember(aid, text)
        return text

    def content_by_sha(self, sha256: str) -> str:
        """The whole output whose SHA-256 is ``sha256`` (how message rows name their file)."""
        return self.content(self.id_by_sha(sha256))

    def id_by_sha(self, sha256: str) -> str:
        """The id of the output whose SHA-256 is ``sha256``; a missing one is damage."""
        found = self.rows.blob_id(sha256)
        if found is None:
            raise StoreError(f"{self.store.location} names a tool output (sha256 {sha256}) that "
                             "no artifact holds: the store is damaged; restore it from a backup")
        return found

    def _blob(self, aid: str) -> tuple[str | None, int, int]:
        """The inline content (None: in a file), the bytes and the characters of a blob."""
        blob = self.rows.blob(aid)
        if blob is None:
            raise _not_found(aid)
        return blob.content, blob.size, blob.chars

    def _remember(self, aid: str, text: str) -> None:
        if len(text) > _CACHE_CHARS // 4:
            return
        with self._cache_lock:
            self._cache[aid] = text
            self._cache_chars += len(text)
            while self._cache_chars > _CACHE_CHARS:
                _, dropped = self._cache.popitem(last=False)
                self._cache_chars -= len(dropped)

    def read(self, artifact_id: str, offset: int = 0, length: int | None = None) -> str:
        """Exactly the characters ``offset`` … ``offset + length`` of the output.

        Reads only what the range needs: a file is never loaded whole for a range (an
        ASCII file is read at the offset; others are decoded up to the end of the range).
        """
        if offset < 0:
            raise WorkspaceError(f"offset must be 0 or more, not {offset}")
        if length is not None and length < 0:
            raise WorkspaceError(f"length must be 0 or more, not {length}")
        aid = parse_artifact_ref(artifact_id)
        with self._cache_lock:
            cached = self._cache.get(aid)
        if cached is not None:
            return cached[offset:] if length is None else cached[offset:offset + length]
        content, size, chars = self._blob(aid)
        if content is not None:
            return content[offset:] if length is None else content[offset:offset + length]
        want = chars - offset if length is None else min(length, chars - offset)
        if want <= 0:
            return ""
        with self.contents.open(aid, size) as handle:
            if size == chars:  # ASCII: one byte a character
                handle.seek(offset)
                return bytes(handle.read(want)).decode("utf-8")
            return _decode_range(handle, offset, want)

    def read_lines(self, artifact_id: str, start: int = 1, count: int | None = None) -> str:
        """Lines ``start`` … ``start + count - 1`` (numbered from 1), with their newlines.

        Like :meth:`read`, a large file is read only up to the last line asked for.
        """
        if start < 1:
            raise WorkspaceError(f"start line must be 1 or more, not {start}")
        if count is not None and count < 1:
            raise WorkspaceError(f"line count must be 1 or more, not {count}")
        aid = parse_artifact_ref(artifact_id)
        with self._cache_lock:
            cached = self._cache.get(aid)
        if cached is not None:
            return slice_lines(cached, start, count)
        content, size, _ = self._blob(aid)
        if content is not None:
            return slice_lines(content, start, count)
        with self.contents.open(aid, size) as handle:
            return _line_range(handle, start, count)

    def render_tool_result(self, artifact: Artifact | str, *, head_chars: int = 0) -> str:
        """:func:`render_tool_result` for a stored artifact (reads the head it needs)."""
        found = self.get(artifact) if isinstance(artifact, str) else artifact
        head = self.read(found.id, 0, head_chars) if head_chars > 0 else None
        return render_tool_result(found, head_chars=head_chars, head=head)


def slice_lines(text: str, start: int, count: int | None) -> str:
    """Lines ``start`` … ``start + count - 1`` of ``text`` (from 1), newlines kept."""
    at = 0
    for _ in range(start - 1):
        nl = text.find("\n", at)
        if nl < 0:
            return ""
        at = nl + 1
    if count is None:
        return text[at:]
    end = at
    for _ in range(count):
        nl = text.find("\n", end)
        if nl < 0:
            return text[at:]
        end = nl + 1
    return text[at:end]


def render_tool_result(
    artifact: Artifact, *, head_chars: int = 0, head: str | None = None
) -> str:
    """How a tool result appears in a context: summary, pointer, and maybe the head.

    ``head`` is the start of the output (at least ``head_chars`` characters of it, or
    all of it); with ``head_chars > 0`` it is shown cut at a line boundary, followed by
    a note of what was cut and how to read more with ``artifact_get`` or ``grep``.
    """
    label = " · ".join(x for x in (
        artifact.tool_name, f"call {artifact.call_id}" if artifact.call_id else None,
        artifact.pointer) if x)
    out = [f"[tool result · {label}]", *artifact.summary]
    if head_chars <= 0 or head is None:
        return "\n".join(out)
    shown = head[:head_chars]
    if len(shown) >= artifact.chars:
        out += ["--- output (complete) ---", shown.rstrip("\n")]
        return "\n".join(out)
    mid_line = False
    newline = shown.rfind("\n")
    if newline >= 0:
        shown = shown[:newline + 1]
    else:
        mid_line = True
    shown_lines = shown.count("\n") + (1 if mid_line else 0)
    cut_chars = artifact.chars - len(shown)
    next_line = shown_lines if mid_line else shown_lines + 1
    out.append(
        f"--- output head: lines 1-{shown_lines} of {artifact.lines:,}, "
        f"{len(shown):,} of {artifact.chars:,} chars ---"
    )
    out.append(shown.rstrip("\n") + (" …" if mid_line else ""))
    out.append(
        f"--- cut: {cut_chars:,} chars (lines {next_line:,}-{artifact.lines:,}"
        f"{', from mid-line' if mid_line else ''}). Read more with "
        f"artifact_get(id=\"{artifact.id}\", offset={len(shown)}, length=N) or "
        f"artifact_get(id=\"{artifact.id}\", start_line={next_line}, line_count=N); "
        f"search with grep(target=\"{artifact.pointer}\", pattern=...) ---"
    )
    return "\n".join(out)


def _decode_range(handle: Any, offset: int, length: int, *, chunk: int = _CHUNK) -> str:
    """Characters ``offset`` … ``offset + length`` of a UTF-8 file, decoded chunk by chunk."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    skip, out, need = offset, [], length
    while need > 0:
        block = handle.read(chunk)
        text = decoder.decode(block, final=not block)
        if skip:
            if len(text) <= skip:
                skip -= len(text)
                if not block:
                    break
                continue
            text, skip = text[skip:], 0
        out.append(text[:need])
        need -= len(out[-1])
        if not block:
            break
    return "".join(out)


def _line_range(handle: Any, start: int, count: int | None, *, chunk: int = _CHUNK) -> str:
    """Lines ``start`` … ``start + count - 1`` of a UTF-8 file (as :func:`slice_lines`)."""
    skip = start - 1
    kept: list[bytes] = []
    while block := handle.read(chunk):
        at = 0
        while skip and at < len(block):
            nl = block.find(b"\n", at)
            if nl < 0:
                at = len(block)
                break
            at, skip = nl + 1, skip - 1
        if skip:
            continue
        block = block[at:]
        if count is not None:
            nl = -1
            while count and (nl := block.find(b"\n", nl + 1)) >= 0:
                count -= 1
            if count == 0:
                kept.append(block[:nl + 1])
                break
        kept.append(block)
    return b"".join(kept).decode("utf-8")
