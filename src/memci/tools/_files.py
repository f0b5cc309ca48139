"""On-demand reading tools: ``artifact_get``, ``file_snippet`` and ``grep``.

Point reads, never whole replays (seed 004 §4.2): each call returns a bounded piece of a
stored tool output or of files under the session's ``file_roots``.

Invariants:

- files are opened only beneath the roots, one path component at a time from the root's
  directory descriptor, never through a symbolic link, and only regular files with one link
  (see :mod:`memci.tools._confine`): ``..`` escapes, links, hard links, FIFOs and devices are
  refused, with no window between a check and the open;
- every answer is bounded: files over ``max_file_bytes`` are refused, at most
  ``max_lines`` lines and ``max_output_chars`` characters come back, long lines are cut;
- binary files (a NUL byte, or not UTF-8 text) are refused;
- ``grep`` runs RE2 patterns (see :mod:`memci.tools._grep`): linear time, a bounded program
  size, a deadline checked inside long lines too; the scan stops at ``max_scan_chars``,
  ``max_files`` or ``grep_seconds`` and says so;
- ``artifact_get`` returns exactly the requested characters (or lines) of the original
  output, nothing added;
- a refusal is a :class:`ToolResult` with ``ok=False`` and a text starting with
  ``error:`` that says what to do instead; these functions never raise for bad input.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import closing
from typing import TYPE_CHECKING, Any, Protocol

from memci._dataclasses import dataclass
from memci._lazy import LazyPattern
from memci.errors import InvalidInputError
from memci.tools._confine import FileRoots, Refused, Skipped, Target, read_bytes, walk
from memci.tools._file_specs import FILE_TOOL_SPECS
from memci.workspace import Artifact, ToolResult, parse_artifact_ref, parse_tool_arguments

if TYPE_CHECKING:
    from memci.tools._grep import LineMatcher

__all__ = [
    "FILE_TOOL_SPECS",
    "ArtifactReader",
    "FileToolLimits",
    "artifact_get",
    "call_file_tool",
    "file_snippet",
    "grep",
]


_ARTIFACT_ID = LazyPattern(r"[0-9a-f]{12,64}")  # an artifact id, or its start


class ArtifactReader(Protocol):
    """What the tools need of an artifact store (:class:`memci.workspace.ArtifactStore`)."""

    def get(self, artifact_id: str) -> Artifact:
        """Return the artifact or raise ArtifactNotFoundError."""
        ...

    def read(self, artifact_id: str, offset: int = 0, length: int | None = None) -> str:
        """Return exactly the characters ``offset`` … ``offset + length``."""
        ...

    def read_lines(self, artifact_id: str, start: int = 1, count: int | None = None) -> str:
        """Return lines ``start`` … ``start + count - 1`` (from 1), newlines kept."""
        ...


@dataclass(frozen=True, slots=True)
class FileToolLimits:
    """Bounds of the reading tools."""

    max_file_bytes: int = 8 * 1024 * 1024
    max_lines: int = 200
    max_output_chars: int = 16_000
    max_line_chars: int = 2_000
    max_pattern_chars: int = 200
    max_pattern_size: int = 4_000  # instructions of the compiled RE2 program
    max_scan_chars: int = 8 * 1024 * 1024
    max_matches: int = 100
    grep_seconds: float = 2.0
    max_path_chars: int = 4096
    max_files: int = 2_000  # files one grep over a directory searches
    max_depth: int = 32  # directory levels one grep over a directory goes down


DEFAULT_LIMITS = FileToolLimits()
_CR = "\r"  # shown lines drop a CRLF file's carriage returns
_MAX_BAD_UTF8 = 0.01


# -- reading -----------------------------------------------------------------------------


def _read_text(roots: Sequence[str | os.PathLike[str]], path: Any,
               limits: FileToolLimits) -> tuple[str, str]:
    """``(shown path, text)`` of a confined, bounded, textual file; or refuse."""
    if not isinstance(path, str) or not path.strip():
        raise Refused("path must be a non-empty text")
    with FileRoots(roots) as opened:
        target = opened.open(path, max_chars=limits.max_path_chars)
        try:
            if target.is_dir:
                raise Refused(f"{target.shown!r} is a directory; give a file path")
            return target.shown, _text_of(target, limits)
        finally:
            os.close(target.fd)


def _text_of(target: Target, limits: FileToolLimits) -> str:
    """The text of an opened regular file, or refuse (too big, binary, not UTF-8)."""
    over = (f"{target.shown!r} is {{size:,}} bytes, over the {limits.max_file_bytes:,}-byte "
            "limit of the file tools")
    if target.size > limits.max_file_bytes:
        raise Refused(over.format(size=target.size), "file over the size limit")
    data = read_bytes(target, limits.max_file_bytes)
    if len(data) > limits.max_file_bytes:  # it grew since it was opened
        raise Refused(f"{target.shown!r} is over the {limits.max_file_bytes:,}-byte limit of "
                      "the file tools", "file over the size limit")
    return _decode(data, target.shown)


def _decode(data: bytes, shown: str) -> str:
    if b"\x00" in data:
        raise Refused(f"{shown!r} is a binary file; the file tools read text only",
                      "binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        if text.count("\ufffd") > max(len(text) * _MAX_BAD_UTF8, 1):
            raise Refused(f"{shown!r} is not UTF-8 text (binary or another encoding); "
                          "the file tools read UTF-8 text only", "binary file") from None
        return text


# -- output helpers ----------------------------------------------------------------------


def _cut_line(line: str, limits: FileToolLimits) -> str:
    if len(line) <= limits.max_line_chars:
        return line
    return f"{line[:limits.max_line_chars]} …[+{len(line) - limits.max_line_chars:,} chars]"


def _whole(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise Refused(f"{name} must be a whole number, {minimum} or more")
    return value


# -- file_snippet ------------------------------------------------------------------------


def file_snippet(
    roots: Sequence[str | os.PathLike[str]], path: str, start: int = 1, length: int = 50, *,
    limits: FileToolLimits = DEFAULT_LIMITS,
) -> ToolResult:
    """Read lines ``start`` … ``start + length - 1`` (from 1) of a file under ``roots``.

    The answer starts with ``[file_snippet <path> · lines a-b of n]``, then one line a
    line: its number, a tab, its text; a note at the end says how to read on.
    """
    try:
        start = _whole(start, "start", 1)
        length = min(_whole(length, "length", 1), limits.max_lines)
        shown, text = _read_text(roots, path, limits)
    except Refused as exc:
        return ToolResult.error(str(exc))
    lines = text.split("\n") if text else []
    if text.endswith("\n"):
        lines.pop()
    total = len(lines)
    if total == 0:
        return ToolResult(True, f"[file_snippet {shown} · empty file]")
    if start > total:
        return ToolResult.error(f"{shown!r} has {total:,} lines; start must be 1-{total}")
    body: list[str] = []
    used = 0
    last = start - 1
    for number in range(start, min(start + length, total + 1)):
        row = f"{number}\t{_cut_line(lines[number - 1].rstrip(_CR), limits)}"
        if body and used + len(row) + 1 > limits.max_output_chars:
            break
        body.append(row)
        used += len(row) + 1
        last = number
    head = f"[file_snippet {shown} · lines {start}-{last} of {total:,}]"
    out = [head, *body]
    if last < total:
        out.append(f"[{total - last:,} more lines; next: file_snippet(path={shown!r}, "
                   f"start={last + 1}, length={length})]")
    return ToolResult(True, "\n".join(out))


# -- grep --------------------------------------------------------------------------------


def _resolve_target(
    target: Any, artifacts: ArtifactReader | None
) -> tuple[str, str | None]:
    """``(kind, artifact id)``: ``("artifact", id)`` or ``("file", None)``."""
    if not isinstance(target, str) or not target.strip():
        raise Refused("target must be artifact:<id>, or the path of a file or directory")
    text = target.strip()
    explicit = text.startswith("artifact:")
    bare = _ARTIFACT_ID.fullmatch(text) is not None
    if not (explicit or bare):
        return "file", None
    if artifacts is None:
        if explicit:
            raise Refused("no artifact store in this session")
        return "file", None
    try:
        found = artifacts.get(parse_artifact_ref(text))
    except InvalidInputError as exc:
        if explicit:
            raise Refused(str(exc)) from None
        return "file", None  # a bare hex name that is no artifact: try it as a file
    return "artifact", found.id


class _Hits:
    """The matching lines of one grep: all counted, the first ``limit`` kept, bounded."""

    def __init__(self, limit: int, limits: FileToolLimits) -> None:
        self.limit = limit
        self.limits = limits
        self.rows: list[str] = []
        self.total = 0
        self.files: set[str] = set()
        self._used = 0

    def add(self, where: str, number: int, line: bytes) -> None:
        self.total += 1
        self.files.add(where)
        if len(self.rows) >= self.limit:
            return
        text = _cut_line(line.decode("utf-8", errors="replace"), self.limits)
        row = f"{where}:{number}: {text}" if where else f"{number}: {text}"
        if self._used + len(row) <= self.limits.max_output_chars:
            self.rows.append(row)
            self._used += len(row) + 1

    def answer(self, head: str, notes: list[str]) -> ToolResult:
        if self.total > len(self.rows):
            head += f", showing the first {len(self.rows)}"
        notes = [n for n in notes if n]
        text = f"{head}{'; ' + '; '.join(notes) if notes else ''}]"
        return ToolResult(True, "\n".join([text, *self.rows]))


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _search(matcher: LineMatcher, where: str, text: str, hits: _Hits, deadline: float,
            limits: FileToolLimits) -> str:
    """Add the matching lines of ``text`` to ``hits``; a note if the deadline stopped it."""
    scan = matcher.scan(text.encode("utf-8"), deadline)
    for number, line in scan:
        hits.add(where, number, line)
    if scan.stopped_at is None:
        return ""
    inside = f" in {where}" if where else ""
    return f"stopped{inside} at line {scan.stopped_at:,} after {limits.grep_seconds:g} s"


def _grep_text(shown: str, text: str, matcher: LineMatcher, hits: _Hits, deadline: float,
               limits: FileToolLimits) -> ToolResult:
    cut = ""
    if len(text) > limits.max_scan_chars:
        text = text[:limits.max_scan_chars]
        cut = f"searched only the first {limits.max_scan_chars:,} characters"
    stopped = _search(matcher, "", text, hits, deadline, limits)
    head = f"[grep {shown} /{matcher.pattern}/ · {_plural(hits.total, 'matching line')}"
    return hits.answer(head, [cut, stopped])


def _grep_tree(directory: Target, matcher: LineMatcher, hits: _Hits, deadline: float,
               limits: FileToolLimits) -> ToolResult:
    """grep every readable text file under an opened directory, in name order."""
    searched = 0
    scanned = 0
    skipped: Counter[str] = Counter()
    stop = ""
    with closing(walk(directory, max_depth=limits.max_depth, deadline=deadline)) as entries:
        for entry in entries:
            if isinstance(entry, Skipped):
                skipped[entry.kind] += 1
                continue
            try:
                if searched >= limits.max_files:
                    stop = f"stopped after {_plural(limits.max_files, 'file')}"
                    break
                if time.monotonic() > deadline:
                    stop = f"stopped after {limits.grep_seconds:g} s"
                    break
                try:
                    text = _text_of(entry, limits)
                except Refused as exc:
                    skipped[exc.kind] += 1
                    continue
            finally:
                os.close(entry.fd)
            room = limits.max_scan_chars - scanned
            if len(text) > room:
                text = text[:room]
                stop = f"searched only the first {limits.max_scan_chars:,} characters"
            scanned += len(text)
            searched += 1
            stopped = _search(matcher, entry.shown, text, hits, deadline, limits)
            if stopped or stop:
                stop = stopped or stop
                break
    if not stop and time.monotonic() > deadline:
        stop = f"stopped after {limits.grep_seconds:g} s"
    shown = directory.shown
    head = (f"[grep {shown} /{matcher.pattern}/ · {_plural(hits.total, 'matching line')} in "
            f"{_plural(len(hits.files), 'file')}")
    done = f"searched {_plural(searched, 'file')}"
    if skipped:
        why = ", ".join(_plural(n, reason) for reason, n in sorted(skipped.items()))
        done += f", skipped {sum(skipped.values()):,} ({why})"
    return hits.answer(head, [done, stop])


def grep(
    target: str, pattern: str, limit: int = 20, *, roots: Sequence[str | os.PathLike[str]] = (),
    artifacts: ArtifactReader | None = None, ignore_case: bool = False,
    limits: FileToolLimits = DEFAULT_LIMITS,
) -> ToolResult:
    """Lines matching an RE2 ``pattern`` in an artifact, a file or the files of a directory.

    ``target`` is ``artifact:<id>`` (or a bare id), a file path, or a directory path under
    the roots (searched depth first, in name order). The answer starts with
    ``[grep <target> /pattern/ · N matching lines …]``, then one ``<line number>: <line>``
    (``<path>:<line number>: <line>`` in a directory) a match, at most ``limit`` of them
    (capped by ``max_matches``).
    """
    # Its patterns and RE2 load with the first grep, not with every process.
    from memci.tools._grep import LineMatcher, PatternRefused

    try:
        hits = _Hits(min(_whole(limit, "limit", 1), limits.max_matches), limits)
        matcher = LineMatcher(pattern, ignore_case=ignore_case,
                              max_chars=limits.max_pattern_chars,
                              max_size=limits.max_pattern_size)
        kind, artifact_id = _resolve_target(target, artifacts)
        deadline = time.monotonic() + limits.grep_seconds
        if kind == "artifact":
            assert artifacts is not None and artifact_id is not None
            text = artifacts.read(artifact_id, 0, limits.max_scan_chars + 1)
            return _grep_text(f"artifact:{artifact_id}", text, matcher, hits, deadline, limits)
        with FileRoots(roots) as opened:
            found = opened.open(target, max_chars=limits.max_path_chars)
            try:
                if found.is_dir:
                    return _grep_tree(found, matcher, hits, deadline, limits)
                text = _text_of(found, limits)
            finally:
                os.close(found.fd)
        return _grep_text(found.shown, text, matcher, hits, deadline, limits)
    except (Refused, PatternRefused, InvalidInputError) as exc:
        return ToolResult.error(str(exc))


# -- artifact_get ------------------------------------------------------------------------


def artifact_get(
    artifacts: ArtifactReader | None, id: str, offset: int | None = None,
    length: int | None = None, *, start_line: int | None = None,
    line_count: int | None = None, limits: FileToolLimits = DEFAULT_LIMITS,
) -> ToolResult:
    """Exactly a range of a stored tool output: characters, or lines (from 1).

    ``offset``/``length`` (default 0 and ``max_output_chars``) select characters;
    ``start_line``/``line_count`` (default ``max_lines``) select whole lines. The text
    comes back as stored, nothing added; at most ``max_output_chars`` characters.
    """
    try:
        if artifacts is None:
            raise Refused("no artifact store in this session")
        if (offset is not None or length is not None) and (
                start_line is not None or line_count is not None):
            raise Refused("give offset/length (characters) or start_line/line_count "
                           "(lines), not both")
        if not isinstance(id, str):
            raise Refused("id must be the artifact id, e.g. artifact:0123456789ab")
        found = artifacts.get(parse_artifact_ref(id))
        if start_line is not None or line_count is not None:
            first = _whole(1 if start_line is None else start_line, "start_line", 1)
            count = min(_whole(limits.max_lines if line_count is None else line_count,
                               "line_count", 1), limits.max_lines)
            if first > max(found.lines, 1):
                raise Refused(f"artifact:{found.id} has {found.lines:,} lines; start_line "
                               f"must be 1-{max(found.lines, 1)}")
            text = artifacts.read_lines(found.id, first, count)
            return ToolResult(True, text[:limits.max_output_chars])
        start = _whole(0 if offset is None else offset, "offset", 0)
        size = min(_whole(limits.max_output_chars if length is None else length, "length", 0),
                   limits.max_output_chars)
        if start > found.chars:
            raise Refused(f"artifact:{found.id} has {found.chars:,} characters; offset must "
                           f"be 0-{found.chars}")
        return ToolResult(True, artifacts.read(found.id, start, size))
    except (Refused, InvalidInputError) as exc:
        return ToolResult.error(str(exc))


# -- dispatch and schemas ----------------------------------------------------------------


def call_file_tool(
    name: str, arguments: Mapping[str, Any] | str | None, *,
    roots: Sequence[str | os.PathLike[str]] = (), artifacts: ArtifactReader | None = None,
    limits: FileToolLimits = DEFAULT_LIMITS,
) -> ToolResult:
    """Run ``artifact_get``, ``file_snippet`` or ``grep`` with a model's arguments."""
    if name == "artifact_get":
        args = parse_tool_arguments(arguments, {
            "id": str, "offset": int, "length": int, "start_line": int, "line_count": int,
        }, ("id",))
        if isinstance(args, ToolResult):
            return args
        return artifact_get(artifacts, args["id"], args.get("offset"), args.get("length"),
                            start_line=args.get("start_line"),
                            line_count=args.get("line_count"), limits=limits)
    if name == "file_snippet":
        args = parse_tool_arguments(arguments, {"path": str, "start": int, "length": int},
                                    ("path",))
        if isinstance(args, ToolResult):
            return args
        return file_snippet(roots, args["path"], args.get("start", 1), args.get("length", 50),
                            limits=limits)
    if name == "grep":
        args = parse_tool_arguments(arguments, {
            "target": str, "pattern": str, "limit": int, "ignore_case": bool,
        }, ("target", "pattern"))
        if isinstance(args, ToolResult):
            return args
        return grep(args["target"], args["pattern"], args.get("limit", 20), roots=roots,
                    artifacts=artifacts, ignore_case=args.get("ignore_case", False),
                    limits=limits)
    return ToolResult.error(f"unknown tool {name!r}; file tools: artifact_get, file_snippet, "
                            "grep")
