"""Artifacts: every tool output stored whole, content-addressed, and pointed to by id.

A tool output is stored once per distinct content: its id is the first 12 hex digits of
the SHA-256 of its UTF-8 bytes (longer in the astronomically rare case that 12 collide),
so the same output of two calls is one blob linked to two calls. Each link row keeps
the call's tool name, call id, arguments, exit code, owner, session, time and summary.

Small outputs (up to ``inline_max_bytes``) live inline in SQLite; larger ones are files
beside the database, ``files_dir/<first two hex digits>/<id>.txt``, written atomically
(temporary file, fsync, rename, fsync of the folder) before the row that names them
commits. So a committed row always names a complete file, and a crash leaves at most an
unreferenced temporary file.

Context text refers to an artifact as ``artifact:<id>`` (:func:`pointer`); the model
reads more of it through the ``artifact_get`` tool. :func:`render_tool_result` is how a
tool result appears in a context: its summary, its pointer and, when asked, the head of
the output cut at a line boundary with a note of what was cut and how to get more.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from memci.errors import InvalidTextError, StoreError, UnknownSessionError
from memci.store import SessionRecord, SQLiteStore
from memci.workspace._errors import ArtifactNotFoundError, WorkspaceError
from memci.workspace._migrations import WORKSPACE_MIGRATIONS
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
    "ArtifactStore",
    "parse_artifact_ref",
    "pointer",
    "render_tool_result",
    "slice_lines",
]

ARTIFACT_ID_LENGTH = 12
"""Hex digits of an artifact id (a prefix of the SHA-256 of the content)."""

_ID = re.compile(r"[0-9a-f]{12,64}")
_CACHE_CHARS = 32 * 1024 * 1024


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


@dataclass(frozen=True, slots=True)
class Artifact:
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
        """``artifact:<id>``."""
        return pointer(self.id)


_SELECT = (
    "SELECT b.id, b.bytes, b.chars, b.lines, a.exit_code, a.summary, a.tool_name, a.call_id,"
    " a.arguments, a.owner, a.session_id, a.created_at, b.content IS NULL, b.sha256,"
    " a.is_error, a.seq FROM workspace_artifacts a JOIN workspace_blobs b"
    " ON b.id = a.artifact_id"
)


def _artifact(row: Sequence[Any]) -> Artifact:
    return Artifact(
        id=str(row[0]), size=int(row[1]), chars=int(row[2]), lines=int(row[3]),
        exit_code=None if row[4] is None else int(row[4]),
        summary=tuple(json.loads(row[5])), tool_name=row[6], call_id=row[7],
        arguments=row[8], owner=str(row[9]), session_id=int(row[10]),
        created_at=datetime.fromisoformat(row[11]), stored="file" if row[12] else "inline",
        sha256=str(row[13]), is_error=bool(row[14]), seq=int(row[15]),
    )


def _clean_summary(lines: Sequence[str], content: str) -> tuple[str, ...]:
    """Summary lines as stored: 1 to 6 single lines, whatever a summarizer returned."""
    out = [shorten(str(line), SUMMARY_LINE_WIDTH) for line in lines if str(line).strip()]
    if not out:
        n = count_lines(content)
        out = [f"{n:,} lines, {len(content):,} chars"]
    return tuple(out[:6])


class ArtifactStore:
    """Tool outputs, stored whole and content-addressed, in a store and a folder of files."""

    def __init__(
        self, store: SQLiteStore, files_dir: str | Path, *,
        inline_max_bytes: int = 64 * 1024,
        summarize: ToolOutputSummarizer = summarize_tool_output,
    ) -> None:
        if inline_max_bytes < 0:
            raise WorkspaceError(f"inline_max_bytes must be 0 or more, not {inline_max_bytes}")
        self.store = store
        self.files_dir = Path(files_dir)
        self.inline_max_bytes = inline_max_bytes
        self.summarize = summarize
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cache_chars = 0
        self._cache_lock = threading.Lock()
        store.migrate("workspace", WORKSPACE_MIGRATIONS)

    # -- writing -------------------------------------------------------------------------

    def put(
        self, content: str, *, session: SessionRecord | int, tool_name: str | None,
        call_id: str | None, arguments: str | Mapping[str, Any] | None = None,
        owner: str = "main", created_at: datetime | None = None, is_error: bool = False,
    ) -> Artifact:
        """Store one tool output (once per distinct content) and link it to its call.

        ``arguments`` is the call's arguments as JSON text (or a mapping, stored as JSON).
        The exit code is read from the output where it reports one; the summary is made
        by ``summarize`` (by default :func:`summarize_tool_output`).
        """
        if not isinstance(content, str):
            raise WorkspaceError(f"tool output must be text, not {type(content).__name__}")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidTextError(
                f"tool output is not valid Unicode ({exc.reason} at {exc.start}): "
                "decode it with errors='replace' first"
            ) from exc
        args_text = (
            json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True)
            if isinstance(arguments, Mapping) else arguments
        )
        sha = hashlib.sha256(data).hexdigest()
        large = len(data) > self.inline_max_bytes
        summary = _clean_summary(
            self.summarize(content, tool_name=tool_name, arguments=args_text), content)
        exit_code = parse_exit_code(content)
        when = (created_at or datetime.now(UTC)).astimezone(UTC)
        sid = _session_id(session)

        if large and self._blob_id(sha) is None:
            # Written before the transaction so the write lock is not held during fsync;
            # the name is final unless the 12-digit id turns out to be taken (see below).
            self._write_file(sha[:ARTIFACT_ID_LENGTH], data)
        with self.store.write() as db:
            if db.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone() is None:
                raise UnknownSessionError(f"no session with id {sid} in the store "
                                          f"{self.store.path}: create the session first")
            row = db.execute("SELECT id FROM workspace_blobs WHERE sha256 = ?", (sha,)).fetchone()
            if row is not None:
                artifact_id = str(row[0])
            else:
                artifact_id = self._free_id(db, sha)
                if large and artifact_id != sha[:ARTIFACT_ID_LENGTH]:
                    self._write_file(artifact_id, data)
                db.execute(
                    "INSERT INTO workspace_blobs (id, sha256, bytes, chars, lines, content,"
                    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (artifact_id, sha, len(data), len(content), count_lines(content),
                     None if large else content, when.isoformat()),
                )
            cursor = db.execute(
                "INSERT INTO workspace_artifacts (artifact_id, session_id, call_id, tool_name,"
                " arguments, exit_code, is_error, summary, owner, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (artifact_id, sid, call_id, tool_name, args_text, exit_code, int(is_error),
                 json.dumps(list(summary), ensure_ascii=False), owner, when.isoformat()),
            )
            seq = cursor.lastrowid
            found = db.execute(_SELECT + " WHERE a.seq = ?", (seq,)).fetchone()
        return _artifact(found)

    def set_summary(self, artifact: Artifact, lines: Sequence[str]) -> Artifact:
        """Replace the summary of one link (e.g. with an LLM's, made later); 1 to 6 lines."""
        content = self.read(artifact.id)
        summary = _clean_summary(lines, content)
        with self.store.write() as db:
            db.execute("UPDATE workspace_artifacts SET summary = ? WHERE seq = ?",
                       (json.dumps(list(summary), ensure_ascii=False), artifact.seq))
        return replace(artifact, summary=summary)

    @staticmethod
    def _free_id(db: Any, sha: str) -> str:
        for length in range(ARTIFACT_ID_LENGTH, 65, 4):
            candidate = sha[:length]
            if db.execute("SELECT 1 FROM workspace_blobs WHERE id = ?",
                          (candidate,)).fetchone() is None:
                return candidate
        raise StoreError(f"no free artifact id for sha256 {sha}")  # pragma: no cover

    def _blob_id(self, sha: str) -> str | None:
        with self.store.read() as db:
            row = db.execute("SELECT id FROM workspace_blobs WHERE sha256 = ?", (sha,)).fetchone()
        return None if row is None else str(row[0])

    def _path(self, artifact_id: str) -> Path:
        return self.files_dir / artifact_id[:2] / f"{artifact_id}.txt"

    def _write_file(self, artifact_id: str, data: bytes) -> None:
        path = self._path(artifact_id)
        try:
            if path.is_file() and path.stat().st_size == len(data):
                return  # content-addressed: a complete file of this id is this content
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{artifact_id}.", suffix=".tmp",
                                       dir=path.parent)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            _fsync_dir(path.parent)
        except OSError as exc:
            raise StoreError(f"cannot write artifact file {path}: {exc}") from exc

    # -- reading -------------------------------------------------------------------------

    def get(self, artifact_id: str) -> Artifact:
        """Return the artifact (as linked to its latest call); ``artifact:<id>`` is accepted too."""
        aid = parse_artifact_ref(artifact_id)
        with self.store.read() as db:
            row = db.execute(_SELECT + " WHERE b.id = ? ORDER BY a.seq DESC LIMIT 1",
                             (aid,)).fetchone()
        if row is None:
            raise _not_found(aid)
        return _artifact(row)

    def exists(self, artifact_id: str) -> bool:
        """Whether an artifact with this id is stored."""
        try:
            aid = parse_artifact_ref(artifact_id)
        except ArtifactNotFoundError:
            return False
        with self.store.read() as db:
            row = db.execute("SELECT 1 FROM workspace_blobs WHERE id = ?", (aid,)).fetchone()
        return row is not None

    def calls(self, artifact_id: str) -> list[Artifact]:
        """Every call linked to this content, oldest first."""
        aid = self.get(artifact_id).id
        with self.store.read() as db:
            rows = db.execute(_SELECT + " WHERE b.id = ? ORDER BY a.seq", (aid,)).fetchall()
        return [_artifact(r) for r in rows]

    def for_call(self, session: SessionRecord | int, call_id: str) -> Artifact | None:
        """Return the artifact of the latest call ``call_id`` of the session, or None."""
        with self.store.read() as db:
            row = db.execute(
                _SELECT + " WHERE a.session_id = ? AND a.call_id = ? ORDER BY a.seq DESC LIMIT 1",
                (_session_id(session), call_id),
            ).fetchone()
        return None if row is None else _artifact(row)

    def for_session(self, session: SessionRecord | int) -> list[Artifact]:
        """Every artifact link of the session, oldest first."""
        with self.store.read() as db:
            rows = db.execute(_SELECT + " WHERE a.session_id = ? ORDER BY a.seq",
                              (_session_id(session),)).fetchall()
        return [_artifact(r) for r in rows]

    def content(self, artifact_id: str) -> str:
        """Return the whole stored output, exactly as it was put."""
        aid = parse_artifact_ref(artifact_id)
        with self._cache_lock:
            cached = self._cache.get(aid)
            if cached is not None:
                self._cache.move_to_end(aid)
                return cached
        with self.store.read() as db:
            row = db.execute("SELECT content, bytes FROM workspace_blobs WHERE id = ?",
                             (aid,)).fetchone()
        if row is None:
            raise _not_found(aid)
        if row[0] is not None:
            return str(row[0])
        path = self._path(aid)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise StoreError(f"artifact {pointer(aid)} is recorded but its file {path} "
                             f"cannot be read: {exc}") from exc
        if len(data) != int(row[1]):
            raise StoreError(f"artifact file {path} has {len(data)} bytes, not {row[1]}")
        text = data.decode("utf-8")
        self._remember(aid, text)
        return text

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
        """Exactly the characters ``offset`` … ``offset + length`` of the output."""
        if offset < 0:
            raise WorkspaceError(f"offset must be 0 or more, not {offset}")
        if length is not None and length < 0:
            raise WorkspaceError(f"length must be 0 or more, not {length}")
        text = self.content(artifact_id)
        return text[offset:] if length is None else text[offset:offset + length]

    def read_lines(self, artifact_id: str, start: int = 1, count: int | None = None) -> str:
        """Lines ``start`` … ``start + count - 1`` (numbered from 1), with their newlines."""
        if start < 1:
            raise WorkspaceError(f"start line must be 1 or more, not {start}")
        if count is not None and count < 1:
            raise WorkspaceError(f"line count must be 1 or more, not {count}")
        return slice_lines(self.content(artifact_id), start, count)

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


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
