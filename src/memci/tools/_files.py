"""On-demand reading tools: ``artifact_get``, ``file_snippet`` and ``grep``.

Point reads, never whole replays (seed 004 §4.2): each call returns a bounded piece of a
stored tool output or of a file under the session's ``file_roots``.

Invariants:

- a file is read only if its real path (symlinks resolved) lies inside one of the roots:
  ``..`` escapes, symlinks pointing out and absolute paths elsewhere are refused, and the
  file is opened without following a symlink swapped in after the check, then checked to
  be the regular file that was resolved;
- every answer is bounded: files over ``max_file_bytes`` are refused, at most
  ``max_lines`` lines and ``max_output_chars`` characters come back, long lines are cut;
- binary files (a NUL byte, or not UTF-8 text) are refused;
- ``grep`` patterns are bounded (length, no nested or too many unbounded repeats, no
  backreferences), lines are searched only up to ``max_line_chars``, the scan stops at
  ``max_scan_chars`` or ``grep_seconds``;
- ``artifact_get`` returns exactly the requested characters (or lines) of the original
  output, nothing added;
- a refusal is a :class:`ToolResult` with ``ok=False`` and a text starting with
  ``error:`` that says what to do instead; these functions never raise for bad input.
"""

from __future__ import annotations

import importlib
import os
import re
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memci.context import ToolSpec
from memci.errors import InvalidInputError
from memci.workspace import Artifact, ToolResult, parse_artifact_ref, parse_tool_arguments

__all__ = [
    "FILE_TOOL_SPECS",
    "ArtifactReader",
    "FileToolLimits",
    "artifact_get",
    "call_file_tool",
    "file_snippet",
    "grep",
]


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
    max_pattern_repeats: int = 6
    max_scan_chars: int = 8 * 1024 * 1024
    max_matches: int = 100
    grep_seconds: float = 2.0
    max_path_chars: int = 4096


DEFAULT_LIMITS = FileToolLimits()
_CR = "\r"  # shown lines drop a CRLF file's carriage returns
_MAX_BAD_UTF8 = 0.01


# -- confinement -------------------------------------------------------------------------


class _Refused(Exception):
    """A refusal on the way to an answer; becomes an ``error:`` ToolResult."""


def _roots(roots: Sequence[str | os.PathLike[str]]) -> list[Path]:
    resolved = []
    for root in roots:
        try:
            resolved.append(Path(root).resolve(strict=True))
        except (OSError, RuntimeError):
            continue  # a root that does not exist confines nothing and grants nothing
    if not resolved:
        raise _Refused("no file roots are configured for this session, so files cannot be "
                       "read; use artifact_get for stored tool outputs")
    return resolved


def _inside(path: Path, roots: list[Path]) -> Path | None:
    for root in roots:
        if path == root or path.is_relative_to(root):
            return root
    return None


def _locate(roots: Sequence[str | os.PathLike[str]], path: Any,
            limits: FileToolLimits) -> tuple[Path, str, os.stat_result]:
    """Find ``path`` under a root: its real path, how to show it, its stat; or refuse."""
    if not isinstance(path, str) or not path.strip():
        raise _Refused("path must be a non-empty text")
    if "\x00" in path or len(path) > limits.max_path_chars:
        raise _Refused("path is not a usable file path")
    allowed = _roots(roots)
    given = Path(path)
    candidates = [given] if given.is_absolute() else [root / given for root in allowed]
    outside = False
    for candidate in candidates:
        try:
            real = candidate.resolve(strict=False)
        except (OSError, RuntimeError):  # a symlink loop
            continue
        root = _inside(real, allowed)
        if root is None:
            outside = True
            continue
        try:
            info = real.stat()
        except OSError:
            continue
        shown = real.relative_to(root).as_posix() or "."
        return real, shown, info
    if outside:
        raise _Refused(f"{path!r} is outside the session's file roots; only files under "
                       f"them can be read (paths relative to a root, no '..' escapes, no "
                       f"links pointing out)")
    raise _Refused(f"no file {path!r} under the session's file roots")


def _read_text(roots: Sequence[str | os.PathLike[str]], path: Any,
               limits: FileToolLimits) -> tuple[str, str]:
    """``(shown path, text)`` of a confined, bounded, textual file; or refuse."""
    real, shown, info = _locate(roots, path, limits)
    if stat.S_ISDIR(info.st_mode):
        raise _Refused(f"{shown!r} is a directory; give a file path")
    if not stat.S_ISREG(info.st_mode):
        raise _Refused(f"{shown!r} is not a regular file")
    if info.st_size > limits.max_file_bytes:
        raise _Refused(f"{shown!r} is {info.st_size:,} bytes, over the {limits.max_file_bytes:,}"
                       "-byte limit of the file tools")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise _Refused(f"cannot open {shown!r}: {exc.strerror}") from None
    try:
        opened = os.fstat(fd)
        if (not stat.S_ISREG(opened.st_mode)
                or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino)):
            raise _Refused(f"{shown!r} changed while it was being opened; try again")
        chunks = []
        remaining = limits.max_file_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limits.max_file_bytes:
        raise _Refused(f"{shown!r} is over the {limits.max_file_bytes:,}-byte limit of the "
                       "file tools")
    return shown, _decode(data, shown)


def _decode(data: bytes, shown: str) -> str:
    if b"\x00" in data:
        raise _Refused(f"{shown!r} is a binary file; the file tools read text only")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        if text.count("\ufffd") > max(len(text) * _MAX_BAD_UTF8, 1):
            raise _Refused(f"{shown!r} is not UTF-8 text (binary or another encoding); "
                           "the file tools read UTF-8 text only") from None
        return text


# -- output helpers ----------------------------------------------------------------------


def _cut_line(line: str, limits: FileToolLimits) -> str:
    if len(line) <= limits.max_line_chars:
        return line
    return f"{line[:limits.max_line_chars]} …[+{len(line) - limits.max_line_chars:,} chars]"


def _whole(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _Refused(f"{name} must be a whole number, {minimum} or more")
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
    except _Refused as exc:
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

_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
_SMALL_REPEAT = 10


def _check_pattern(pattern: Any, ignore_case: bool, limits: FileToolLimits) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not pattern:
        raise _Refused("pattern must be a non-empty regular expression")
    if len(pattern) > limits.max_pattern_chars:
        raise _Refused(f"pattern is {len(pattern)} characters, over the limit of "
                       f"{limits.max_pattern_chars}")
    flags = re.IGNORECASE if ignore_case else 0
    try:
        compiled = re.compile(pattern, flags)
    except re.error as exc:
        raise _Refused(f"bad regular expression {pattern!r}: {exc}") from None
    _check_structure(pattern, flags, limits)
    return compiled


def _check_structure(pattern: str, flags: int, limits: FileToolLimits) -> None:
    """Refuse patterns that can backtrack catastrophically (nested repeats, backrefs)."""
    try:
        parser: Any = importlib.import_module("re._parser")
        tree = parser.parse(pattern, flags)
        huge = int(parser.MAXREPEAT)
    except (ImportError, AttributeError):  # pragma: no cover - another Python's internals
        if re.search(r"\([^)]*[+*][^)]*\)\s*[+*{]", pattern):
            raise _Refused("nested repeats like (a+)+ are not allowed in grep patterns"
                           ) from None
        return
    unbounded = 0

    def walk(items: Any, in_repeat: bool) -> None:
        nonlocal unbounded
        for op, av in items:
            name = str(op)
            if name in _REPEATS:
                _low, high, sub = av
                if high >= huge or high > _SMALL_REPEAT:
                    unbounded += 1
                    if in_repeat:
                        raise _Refused("nested repeats like (a+)+ or (\\w+\\s?)* can take "
                                       "forever; write the pattern without a repeat inside "
                                       "a repeat")
                walk(sub, in_repeat or high > 1)
            elif name == "SUBPATTERN":
                walk(av[3], in_repeat)
            elif name == "BRANCH":
                for branch in av[1]:
                    walk(branch, in_repeat)
            elif name in ("ASSERT", "ASSERT_NOT"):
                walk(av[1], in_repeat)
            elif name == "ATOMIC_GROUP":
                walk(av, in_repeat)
            elif name in ("GROUPREF", "GROUPREF_EXISTS", "GROUPREF_IGNORE", "GROUPREF_LOC_IGNORE",
                          "GROUPREF_UNI_IGNORE"):
                raise _Refused("backreferences (\\1, (?P=name)) are not allowed in grep patterns")

    walk(tree, False)
    if unbounded > limits.max_pattern_repeats:
        raise _Refused(f"pattern has {unbounded} unbounded repeats (*, +, {{n,}}), more than "
                       f"{limits.max_pattern_repeats}; simplify it")


def _resolve_target(
    target: Any, artifacts: ArtifactReader | None
) -> tuple[str, str | None]:
    """``(kind, artifact id)``: ``("artifact", id)`` or ``("file", None)``."""
    if not isinstance(target, str) or not target.strip():
        raise _Refused("target must be artifact:<id> or a file path")
    text = target.strip()
    explicit = text.startswith("artifact:")
    bare = re.fullmatch(r"[0-9a-f]{12,64}", text) is not None
    if not (explicit or bare):
        return "file", None
    if artifacts is None:
        if explicit:
            raise _Refused("no artifact store in this session")
        return "file", None
    try:
        found = artifacts.get(parse_artifact_ref(text))
    except InvalidInputError as exc:
        if explicit:
            raise _Refused(str(exc)) from None
        return "file", None  # a bare hex name that is no artifact: try it as a file
    return "artifact", found.id


def grep(
    target: str, pattern: str, limit: int = 20, *, roots: Sequence[str | os.PathLike[str]] = (),
    artifacts: ArtifactReader | None = None, ignore_case: bool = False,
    limits: FileToolLimits = DEFAULT_LIMITS,
) -> ToolResult:
    """Lines of an artifact (``artifact:<id>`` or a bare id) or a file matching ``pattern``.

    The answer starts with ``[grep <target> /pattern/ · N matching lines …]``, then one
    ``<line number>: <line>`` a match (at most ``limit``, capped by ``max_matches``).
    """
    try:
        limit = min(_whole(limit, "limit", 1), limits.max_matches)
        compiled = _check_pattern(pattern, ignore_case, limits)
        kind, artifact_id = _resolve_target(target, artifacts)
        if kind == "artifact":
            assert artifacts is not None and artifact_id is not None
            shown = f"artifact:{artifact_id}"
            text = artifacts.read(artifact_id, 0, limits.max_scan_chars + 1)
        else:
            shown, text = _read_text(roots, target, limits)
    except _Refused as exc:
        return ToolResult.error(str(exc))
    except InvalidInputError as exc:
        return ToolResult.error(str(exc))

    partial = ""
    if len(text) > limits.max_scan_chars:
        text = text[:limits.max_scan_chars]
        partial = f"searched only the first {limits.max_scan_chars:,} characters"
    deadline = time.monotonic() + limits.grep_seconds
    hits: list[str] = []
    total = 0
    used = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if number % 256 == 0 and time.monotonic() > deadline:
            partial = f"stopped at line {number:,} after {limits.grep_seconds:g} s"
            break
        if line.endswith(_CR):
            line = line[:-1]  # a CRLF line ends before its carriage return, also for "$"
        if compiled.search(line, 0, limits.max_line_chars) is None:
            continue
        total += 1
        row = f"{number}: {_cut_line(line, limits)}"
        if len(hits) < limit and used + len(row) <= limits.max_output_chars:
            hits.append(row)
            used += len(row) + 1
    head = f"[grep {shown} /{pattern}/ · {total:,} matching line{'s' if total != 1 else ''}"
    if total > len(hits):
        head += f", showing the first {len(hits)}"
    head += f"{'; ' + partial if partial else ''}]"
    return ToolResult(True, "\n".join([head, *hits]) if hits else head)


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
            raise _Refused("no artifact store in this session")
        if (offset is not None or length is not None) and (
                start_line is not None or line_count is not None):
            raise _Refused("give offset/length (characters) or start_line/line_count "
                           "(lines), not both")
        if not isinstance(id, str):
            raise _Refused("id must be the artifact id, e.g. artifact:0123456789ab")
        found = artifacts.get(parse_artifact_ref(id))
        if start_line is not None or line_count is not None:
            first = _whole(1 if start_line is None else start_line, "start_line", 1)
            count = min(_whole(limits.max_lines if line_count is None else line_count,
                               "line_count", 1), limits.max_lines)
            if first > max(found.lines, 1):
                raise _Refused(f"artifact:{found.id} has {found.lines:,} lines; start_line "
                               f"must be 1-{max(found.lines, 1)}")
            text = artifacts.read_lines(found.id, first, count)
            return ToolResult(True, text[:limits.max_output_chars])
        start = _whole(0 if offset is None else offset, "offset", 0)
        size = min(_whole(limits.max_output_chars if length is None else length, "length", 0),
                   limits.max_output_chars)
        if start > found.chars:
            raise _Refused(f"artifact:{found.id} has {found.chars:,} characters; offset must "
                           f"be 0-{found.chars}")
        return ToolResult(True, artifacts.read(found.id, start, size))
    except _Refused as exc:
        return ToolResult.error(str(exc))
    except InvalidInputError as exc:
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


def _schema(properties: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


FILE_TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "artifact_get",
        "Read part of a stored tool output (shown in context as artifact:<id>), exactly as "
        "it was: characters offset..offset+length, or lines start_line.. (from 1).",
        _schema({
            "id": {"type": "string", "description": "artifact:<id> or the bare id"},
            "offset": {"type": "integer", "minimum": 0,
                       "description": "first character (from 0)"},
            "length": {"type": "integer", "minimum": 0, "description": "characters to read"},
            "start_line": {"type": "integer", "minimum": 1,
                           "description": "first line (from 1); instead of offset"},
            "line_count": {"type": "integer", "minimum": 1, "description": "lines to read"},
        }, ("id",)),
    ),
    ToolSpec(
        "file_snippet",
        "Read numbered lines of a file under the session's file roots.",
        _schema({
            "path": {"type": "string", "description": "path relative to a file root"},
            "start": {"type": "integer", "minimum": 1, "description": "first line (from 1)"},
            "length": {"type": "integer", "minimum": 1, "maximum": 200,
                       "description": "number of lines (default 50)"},
        }, ("path",)),
    ),
    ToolSpec(
        "grep",
        "Find the lines matching a regular expression in a stored tool output "
        "(artifact:<id>) or in a file under the session's file roots.",
        _schema({
            "target": {"type": "string", "description": "artifact:<id> or a file path"},
            "pattern": {"type": "string", "maxLength": 200,
                        "description": "Python regular expression"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                      "description": "most matching lines to show (default 20)"},
            "ignore_case": {"type": "boolean"},
        }, ("target", "pattern")),
    ),
)
