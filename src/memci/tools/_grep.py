r"""grep's matcher: RE2 patterns, searched line by line in bounded time.

Python's ``re`` backtracks: ``(a|aa)+$`` or ``a*a*a*c`` on one long line can run for
minutes while holding the GIL, so one request stalls a whole server. grep uses RE2 instead
(``google-re2``), which matches in time linear in the text and releases the GIL while it
searches.

Invariants:

- a pattern is compiled by RE2 or refused with a message that names the construct RE2 lacks
  (backreferences, lookaround, possessive repeats, atomic groups …) and what to write instead;
- a pattern's compiled program has at most ``max_size`` instructions: RE2's time per byte
  grows with the program, so this bounds the time per byte whatever the pattern;
- a match never spans lines (RE2's ``never_nl``): ``^`` and ``$`` match at each line's start
  and end, ``\A`` and ``\z`` at the start and end of the whole text; a CRLF line ends before
  its carriage return;
- the text is searched in windows and the deadline is checked before each one, so a scan
  runs at most its deadline plus one window, however long its lines. A window holds at
  most :data:`WINDOW_BUDGET` bytes × program instructions (1 MiB for simple patterns, down
  to 4 KiB for the most complex), which bounds one RE2 call to about 0.2 s on the worst
  patterns measured; consecutive windows overlap by :data:`OVERLAP_BYTES`, so a match up
  to that long is found wherever it lies, and a longer one whenever it fits in a window;
- lines are yielded in order, each at most once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from memci._lazy import LazyPattern

__all__ = ["OVERLAP_BYTES", "WINDOW_BUDGET", "LineMatcher", "LineScan", "PatternRefused"]

# RE2's worst time per byte grows with the program size: about 12 ns × instructions when
# its DFA keeps running out of cache (measured on (?:a|b)*a(?:a|b){k}c over random a/b).
WINDOW_BUDGET = 1 << 24
MAX_WINDOW_BYTES = 1 << 20
OVERLAP_BYTES = 2 * 1024
MIN_WINDOW_BYTES = 2 * OVERLAP_BYTES
_RE2_MAX_MEM = 8 * 1024 * 1024
_SYNTAX = "https://github.com/google/re2/wiki/Syntax"


class PatternRefused(Exception):
    """A pattern grep will not run; the message says why and what to write instead."""


# A construct counts only where its first character is not escaped by a backslash.
_UNESCAPED = r"(?<!\\)(?:\\\\)*"
# (what RE2 lacks, where it shows in a pattern, what to write instead); checked in order.
_LACKING: tuple[tuple[str, LazyPattern, str], ...] = tuple(
    (name, LazyPattern(_UNESCAPED + where), instead) for name, where, instead in (
        ("lookbehind (?<=…) / (?<!…)", r"\(\?<[=!]",
         "match what comes before as part of the pattern: (?<=foo)bar → foobar"),
        ("lookahead (?=…) / (?!…)", r"\(\?[=!]",
         "match what follows as part of the pattern: foo(?=bar) → foobar, or grep twice"),
        ("backreferences (\\1, (?P=name), \\k<name>, \\g<1>)",
         r"(?:\\(?:[1-9]|k[<{']|g[<{\d-])|\(\?P=)",
         "write the repeated text out, or grep for its first part and read the hits"),
        ("possessive repeats (a++, a*+, a?+, a{2}+)", r"(?:[*+?}])\+",
         "write a+, a*, a? or a{2}: RE2 never backtracks, so they are not needed"),
        ("atomic groups (?>…)", r"\(\?>",
         "write (?:…): RE2 never backtracks, so they are not needed"),
        ("conditionals (?(1)…|…)", r"\(\?\(", "write an alternation (a|b), or grep twice"),
        ("recursion ((?R), (?1), (?&name), (?P>name))", r"\(\?(?:R|[+-]?\d|&|P>)",
         "grep for a simpler pattern"),
        ("comments (?#…)", r"\(\?#", "leave the comment out"),
        ("flags x, a, u or L", r"\(\?[imsU-]*[xauL]",
         "leave them out; RE2 knows the flags i, m, s and U"),
        ("\\Z", r"\\Z", "write \\z for the end of the text, or $ for the end of a line"),
        ("\\h (horizontal space)", r"\\[hH]", "write [ \\t]"),
        ("\\R (a line break)", r"\\R", "grep matches within one line: write $"),
        ("\\K and \\G", r"\\[KG]", "leave it out and match the whole text"),
        ("\\e and \\cX", r"\\(?:e|c.)", "write the control character as \\x1b, \\x01 …"),
        ("\\N{…}, \\u… and \\U…", r"\\(?:N\{|[uU][0-9a-fA-F])",
         "write the character itself, or \\x{e9}"),
    )
)
_NEWLINE = LazyPattern(_UNESCAPED + r"\\(?:n|x0[aA]|x\{0*[aA]\}|0?12(?![0-7]))")


def _explain(pattern: str, problem: str) -> str:
    """The refusal for a pattern RE2 could not compile, naming what it lacks if we can."""
    if "invalid repetition size" in problem:
        return (f"pattern {pattern!r} repeats too many times: counted repeats go up to 1000 "
                "(x{n,m} with m ≤ 1000, also multiplied when nested, as in (x{100}){100}); "
                "use a smaller count, or * and +")
    if "pattern too large" in problem:
        return (f"pattern {pattern!r} is too complex for grep; use smaller counted repeats "
                "(x{1,100} rather than x{1,1000}) or * and +")
    for name, where, instead in _LACKING:
        if where.search(pattern):
            return (f"grep uses RE2, which matches in linear time and has no {name}; "
                    f"{instead}")
    return f"bad regular expression {pattern!r}: {problem} (grep uses RE2 syntax: {_SYNTAX})"


class LineMatcher:
    """A grep pattern compiled by RE2 for matching within lines."""

    def __init__(self, pattern: Any, *, ignore_case: bool, max_chars: int,
                 max_size: int) -> None:
        """Compile ``pattern`` or raise :class:`PatternRefused` saying what to change."""
        if not isinstance(pattern, str) or not pattern:
            raise PatternRefused("pattern must be a non-empty regular expression")
        if len(pattern) > max_chars:
            raise PatternRefused(f"pattern is {len(pattern)} characters, over the limit of "
                                 f"{max_chars}")
        if "\n" in pattern or _NEWLINE.search(pattern):
            raise PatternRefused("grep matches within one line, so a line break (\\n) in the "
                                 "pattern never matches; search for text on one line, then "
                                 "read around a hit with file_snippet or artifact_get")
        # RE2 (a C++ extension) loads with the first grep, not with every process.
        import re2

        options = re2.Options()
        options.log_errors = False  # a refusal is answered to the model, not logged
        options.never_capture = True  # grep needs where a line matches, not groups
        options.never_nl = True  # a match stays within one line
        options.case_sensitive = not ignore_case
        options.max_mem = _RE2_MAX_MEM
        try:
            regexp = re2.compile(("(?m)" + pattern).encode("utf-8"), options)
        except re2.error as exc:
            raw = exc.args[0] if exc.args else ""
            problem = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            problem = problem.replace(": (?m)", ": ", 1)  # our prefix, not the user's text
            raise PatternRefused(_explain(pattern, problem)) from None
        finally:
            # re2.compile caches its last 128 patterns, each with a DFA cache of up to
            # max_mem; a grep pattern serves one call, so a stream of distinct patterns
            # must not pin that memory.
            re2.purge()
        size = int(regexp.programsize)
        if size > max_size:
            raise PatternRefused(
                f"pattern {pattern!r} is too complex for grep (an RE2 program of {size:,} "
                f"steps, over {max_size:,}); use smaller counted repeats (x{{1,100}} rather "
                "than x{1,1000}), fewer nested repeats, or * and +")
        self.pattern = pattern
        self.window = min(MAX_WINDOW_BYTES, max(MIN_WINDOW_BYTES, WINDOW_BUDGET // size))
        self._regexp = regexp

    def first_match(self, data: bytes, start: int, end: int) -> int | None:
        """Where the first match in ``data[start:end]`` starts (the rest is context), or None."""
        found = self._regexp.search(data, start, end)
        return None if found is None else int(found.start())

    def scan(self, data: bytes, deadline: float) -> LineScan:
        """The lines of ``data`` (UTF-8 text) that match, searched until ``deadline``."""
        return LineScan(self, data, deadline)


class LineScan:
    r"""Iterates ``(line number, line)`` of the matching lines; ``stopped_at`` after a deadline.

    Lines are numbered from 1 and split at ``\n``; a final ``\n`` ends the last line
    (it does not start an empty one), and a line's ``\r\n`` ending is left out.
    """

    def __init__(self, matcher: LineMatcher, data: bytes, deadline: float) -> None:
        self._matcher = matcher
        data = data.replace(b"\r\n", b"\n")
        self._data = data[:-1] if data.endswith(b"\r") else data
        self._deadline = deadline
        self.stopped_at: int | None = None  # the line the deadline stopped the scan at

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        data = self._data
        size = len(data)
        # A final "\n" ends the last line; a match at the very end would be a phantom line.
        last = size - 1 if data.endswith(b"\n") else size
        pos = 0
        line = 1
        counted = 0  # line numbers are counted up to here
        while pos <= last and size:
            if time.monotonic() > self._deadline:
                self.stopped_at = line + data.count(b"\n", counted, pos)
                return
            end = _char_start(data, min(pos + self._matcher.window, size))
            hit = self._matcher.first_match(data, pos, end)
            if hit is None or hit > last:
                if end >= size:
                    return
                # Step back so a match across the window's edge is found in the next one.
                pos = max(_char_start(data, end - OVERLAP_BYTES), pos + 1)
                continue
            start = data.rfind(b"\n", 0, hit) + 1
            stop = data.find(b"\n", hit)
            stop = size if stop < 0 else stop
            line += data.count(b"\n", counted, start)
            counted = start
            yield line, data[start:stop]
            pos = stop + 1


def _char_start(data: bytes, index: int) -> int:
    """``index`` moved back to the first byte of the UTF-8 character it falls in."""
    while 0 < index < len(data) and data[index] & 0xC0 == 0x80:
        index -= 1
    return index
