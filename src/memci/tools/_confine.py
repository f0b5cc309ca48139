"""Files under the session's ``file_roots``, opened without a window between check and use.

A path from the model is never checked and then opened by name: that leaves a window in
which a directory on the way can be swapped for a symbolic link to anywhere. Instead the path
is split into names lexically (``.`` dropped, ``..`` taken back within the root and refused
above it), and each name is opened relative to the directory descriptor opened before it,
starting at the root's own descriptor, with ``O_NOFOLLOW``. Directories are walked the same
way for ``grep``.

Invariants:

- nothing outside a root is opened: every open is ``openat(parent, name, O_NOFOLLOW)`` where
  ``parent`` was reached from the root through real directory entries, so a symbolic link
  swapped in at any moment is refused, never followed;
- symbolic links are refused at every component, the last one included, whether they point
  in or out (a link can be retargeted between two calls);
- only regular files with one link are read: a hard link (``st_nlink > 1``) can make a file
  from outside the root appear inside it;
- FIFOs, sockets and devices are refused before they are opened, and every open is
  ``O_NONBLOCK``, so a FIFO swapped in at the last moment cannot hang the call; the opened
  file is checked (``fstat``) to be the regular, single-link file that was looked at;
- every descriptor opened here is closed, also when the caller stops a walk half-way.

A directory moved into or out of a root while it is being read is read as it was when it was
opened; that is the only view of the file system this module promises.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Generator, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path

from memci._dataclasses import dataclass

__all__ = ["FileRoots", "Refused", "Skipped", "Target", "open_entry", "read_bytes", "walk"]

_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
_COMMON = (os.O_RDONLY | _O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
           | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
_DIR_FLAGS = _COMMON | _O_DIRECTORY
_FILE_FLAGS = _COMMON
# Walking a directory skips what is version-control or tool state, never the user's text.
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})


class Refused(Exception):
    """A path the file tools will not read; the message says why and what to do instead.

    ``kind`` names what was refused in a few words (``symbolic link``, ``special file`` …),
    for a directory walk's tally of what it skipped.
    """

    def __init__(self, message: str, kind: str = "unreadable file") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file a directory walk passed over, and why (``symbolic link``, ``special file`` …)."""

    shown: str
    kind: str


def _supported() -> bool:
    return bool(_O_NOFOLLOW and _O_DIRECTORY) and os.open in os.supports_dir_fd


def _lexical_parts(path: str) -> list[str] | None:
    """The names of a relative path, ``.`` dropped and ``..`` taken back; None above the top."""
    parts: list[str] = []
    for name in path.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(name)
    return parts


def _close(fd: int) -> None:
    os.close(fd)


def _link_refusal(shown: str) -> Refused:
    return Refused(f"{shown!r} is a symbolic link; the file tools never follow links (a link "
                   "can point out of the file roots or be swapped while it is read): give "
                   "the path of the file itself", "symbolic link")


@dataclass(frozen=True, slots=True)
class Target:
    """What a path names under a root, opened: a directory (``is_dir``) or a regular file."""

    shown: str
    fd: int
    is_dir: bool
    size: int


class FileRoots:
    """The session's file roots, each opened once as a directory descriptor.

    Use it as a context manager: the descriptors close on exit. A root that does not exist
    (or is not a directory) confines nothing and grants nothing.
    """

    def __init__(self, roots: Sequence[str | os.PathLike[str]]) -> None:
        self._given = list(roots)
        self._stack = ExitStack()
        self._roots: list[tuple[Path, Path, int]] = []  # (as given, absolute; real; fd)

    def __enter__(self) -> FileRoots:
        if not _supported():  # pragma: no cover - Windows
            raise Refused("the file tools need openat() and O_NOFOLLOW, which this system "
                          "lacks; read files through your own tools")
        for root in self._given:
            try:
                real = Path(root).resolve(strict=True)
                # The operator chose the root: links in its own path are followed, once, here.
                fd = os.open(real, _DIR_FLAGS & ~_O_NOFOLLOW)
            except (OSError, RuntimeError):
                continue
            self._stack.callback(_close, fd)
            self._roots.append((Path(os.path.abspath(root)), real, fd))
        if not self._roots:
            self._stack.close()
            raise Refused("no file roots are configured for this session, so files cannot "
                          "be read; use artifact_get for stored tool outputs")
        return self

    def __exit__(self, *_: object) -> None:
        self._stack.close()

    # -- finding ---------------------------------------------------------------------------

    def _candidates(self, path: str) -> list[tuple[int, list[str]]]:
        """``(root index, names under it)`` to try, in order; refuses paths that leave."""
        outside = Refused(f"{path!r} is outside the session's file roots; only files under "
                          "them can be read (paths relative to a root, no '..' escapes)")
        if not path.startswith("/"):
            parts = _lexical_parts(path)
            if parts is None:
                raise outside
            return [(index, parts) for index in range(len(self._roots))]
        normal = os.path.normpath(path)  # lexical: no link is followed, so none can mislead
        found: list[tuple[int, list[str]]] = []
        for index, (given, real, _) in enumerate(self._roots):
            for form in (given, real):
                top = str(form)
                if normal == top or normal.startswith(top.rstrip("/") + "/"):
                    rest = normal[len(top):].lstrip("/")
                    found.append((index, [p for p in rest.split("/") if p]))
                    break
        if not found:
            raise outside
        return found

    def open(self, path: str, *, max_chars: int) -> Target:
        """Open what ``path`` names under a root: a directory or a regular single-link file.

        The caller closes ``Target.fd``.
        """
        if "\x00" in path or len(path) > max_chars:
            raise Refused("path is not a usable file path")
        for index, parts in self._candidates(path):
            target = self._open_under(self._roots[index][2], parts)
            if target is not None:
                return target
        raise Refused(f"no file {path!r} under the session's file roots")

    def _open_under(self, root_fd: int, parts: list[str]) -> Target | None:
        """Open ``parts`` beneath ``root_fd``, one name at a time; None when it does not exist."""
        fd = os.open(".", _DIR_FLAGS, dir_fd=root_fd)
        try:
            walked: list[str] = []
            for name in parts[:-1]:
                walked.append(name)
                shown = "/".join(walked)
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno == errno.ENOENT:
                        return None
                    raise self._why(fd, name, shown, exc) from None
                _close(fd)
                fd = child
            if not parts:
                return Target(".", os.open(".", _DIR_FLAGS, dir_fd=fd), True, 0)
            try:
                return open_entry(fd, parts[-1], "/".join(parts))
            except FileNotFoundError:
                return None
        finally:
            _close(fd)

    @staticmethod
    def _why(parent: int, name: str, shown: str, exc: OSError) -> Refused:
        """The refusal for a directory on the way that could not be opened."""
        try:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode) or exc.errno == errno.ELOOP:
            return _link_refusal(shown)
        if exc.errno == errno.ENOTDIR:
            return Refused(f"{shown!r} is not a directory")
        if exc.errno == errno.ENAMETOOLONG:
            return Refused("path is not a usable file path")
        return Refused(f"cannot open {shown!r}: {exc.strerror}")


def open_entry(parent: int, name: str, shown: str) -> Target:
    """Open ``name`` in the directory ``parent``: a directory, or a regular single-link file.

    Raises FileNotFoundError when there is nothing by that name, Refused for anything the
    tools do not read (a link, a FIFO, a device, a file with several links).
    """
    try:
        before = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise Refused("path is not a usable file path") from None
        raise Refused(f"cannot read {shown!r}: {exc.strerror}") from None
    _check_kind(before, shown)
    is_dir = stat.S_ISDIR(before.st_mode)
    try:
        fd = os.open(name, _DIR_FLAGS if is_dir else _FILE_FLAGS, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # swapped for a link since the stat
            raise _link_refusal(shown) from None
        raise Refused(f"cannot open {shown!r}: {exc.strerror}") from None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
            raise Refused(f"{shown!r} changed while it was being opened; try again")
        _check_kind(opened, shown)
    except BaseException:
        _close(fd)
        raise
    return Target(shown, fd, is_dir, opened.st_size)


def _check_kind(info: os.stat_result, shown: str) -> None:
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        raise _link_refusal(shown)
    if stat.S_ISDIR(mode):
        return
    if not stat.S_ISREG(mode):
        raise Refused(f"{shown!r} is not a regular file (a FIFO, socket or device); the file "
                      "tools read regular text files only", "special file")
    if info.st_nlink > 1:
        raise Refused(f"{shown!r} has {info.st_nlink} hard links; the file tools read only "
                      "files with one link, since a hard link can bring a file from outside "
                      "the roots inside them: read it through its own path, or copy it",
                      "hard-linked file")


def read_bytes(target: Target, max_bytes: int) -> bytes:
    """Up to ``max_bytes + 1`` bytes of an opened file (one more tells it is over the limit)."""
    chunks: list[bytes] = []
    remaining = max_bytes + 1
    while remaining > 0:
        try:
            chunk = os.read(target.fd, min(remaining, 1 << 20))
        except OSError as exc:
            raise Refused(f"cannot read {target.shown!r}: {exc.strerror}") from None
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def walk(directory: Target, *, max_depth: int,
         deadline: float) -> Generator[Target | Skipped, None, None]:
    """The files under an opened directory, in name order, depth first, by descriptor.

    Yields each regular single-link file opened (the caller closes its ``fd``), or Skipped
    for what is not read: links, special files, files with several links, entries that
    vanish or cannot be opened, directories below ``max_depth``. Hidden entries (a leading
    ``.``), ``node_modules`` and ``__pycache__`` are passed over silently. Stopping the
    iteration closes every directory descriptor it holds. The walk ends early once
    ``time.monotonic()`` passes ``deadline`` (checked at every entry, files or not).
    """
    prefix = "" if directory.shown == "." else directory.shown + "/"
    stack: list[tuple[int, str, Iterator[str]]] = []
    try:
        top = os.open(".", _DIR_FLAGS, dir_fd=directory.fd)
        stack.append((top, prefix, iter(_names(top))))
        while stack:
            fd, base, names = stack[-1]
            name = next(names, None)
            if name is None:
                _close(stack.pop()[0])
                continue
            if time.monotonic() > deadline:
                return
            if name.startswith(".") or name in _SKIPPED_DIRS:
                continue
            shown = base + name
            try:
                entry = open_entry(fd, name, shown)
            except FileNotFoundError:
                continue  # removed while we walked
            except Refused as exc:
                yield Skipped(shown, exc.kind)
                continue
            if not entry.is_dir:
                yield entry
            elif len(stack) >= max_depth:
                _close(entry.fd)
                yield Skipped(shown, "directory too deep")
            else:
                stack.append((entry.fd, shown + "/", iter(_names(entry.fd))))
    finally:
        for fd, _, _ in stack:
            _close(fd)


def _names(fd: int) -> list[str]:
    try:
        return sorted(os.listdir(fd))
    except OSError:
        return []
