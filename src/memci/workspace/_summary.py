"""A structured summary of a tool's output, made by rules (no LLM), in 1 to 6 lines.

:func:`summarize_tool_output` is the default of the seam an LLM summarizer may replace
(any callable of the same signature, see :class:`ToolOutputSummarizer`). Its lines, in
this order and each only when there is something to say:

1. status: exit code (when one can be read) and size — ``exit code 1 · 57 lines, 2,345 chars``;
2. counts: tests passed / failed (pytest, unittest, jest-like summaries) or matches of a
   grep-like output;
3. errors: the exception line of the last traceback, then the last other error line
   (``Error:``, ``error:``, ``FAILED``, ``fatal:``, ``错误``, ``失败``, ``异常`` …);
4. ``first:`` and 5. ``last:`` meaningful lines (blank, separator and wrapper-tag lines skipped);
6. ``paths:`` a few paths the output mentions, de-duplicated.

It is deterministic and fast: a handful of regular-expression passes over the text, well
under a millisecond for 10 KB. The passes that look at every line or word go over the text
a block at a time (cut at line or word boundaries), so the memory a summary needs beyond
the text itself is bounded whatever the size of the output. Lines are cut to
:data:`SUMMARY_LINE_WIDTH` columns, with wide (CJK) characters counted as two.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

from memci._lazy import LazyPattern
from memci.workspace._text import count_lines, shorten

__all__ = [
    "SUMMARY_LINE_WIDTH",
    "ToolOutputSummarizer",
    "arguments_line",
    "is_error_line",
    "is_exception_line",
    "is_meaningful_line",
    "parse_exit_code",
    "summarize_tool_output",
    "without_exit_tag",
]

SUMMARY_LINE_WIDTH = 160
"""Display columns of one summary line at most."""

_PATHS_SHOWN = 4
_ERRORS_SHOWN = 2
_BLOCK = 1 << 16  # characters a whole-text pass looks at in one go
_PATHS_COUNTED = 100_000  # distinct paths counted at most ("+N+ more" past it)
_WHITESPACE = LazyPattern(r"\s")


def _blocks(content: str, *, lines: bool) -> Iterator[tuple[int, str]]:
    """``(offset, block)`` of ``content``, about :data:`_BLOCK` characters each.

    Blocks end at a line end (``lines``) or at whitespace, so no line (or word) is split
    across two; one longer than a block is a block of its own.
    """
    start, end = 0, len(content)
    while start < end:
        stop = start + _BLOCK
        if stop >= end:
            yield start, content[start:]
            return
        cut = content.rfind("\n", start, stop) if lines else max(
            content.rfind("\n", start, stop), content.rfind(" ", start, stop))
        if cut < start:
            found = (content.find("\n", stop) if lines
                     else (m.start() if (m := _WHITESPACE.search(content, stop)) else -1))
            cut = end - 1 if found < 0 else found
        yield start, content[start:cut + 1]
        start = cut + 1


class ToolOutputSummarizer(Protocol):
    """What :func:`summarize_tool_output` is: content in, 1 to 6 summary lines out."""

    def __call__(
        self, content: str, *, tool_name: str | None = None,
        arguments: str | Mapping[str, Any] | None = None,
    ) -> list[str]:
        """Summarize one tool output."""
        ...


# -- exit codes --------------------------------------------------------------------------

_EXIT_TAG = LazyPattern(r"<returncode>\s*(-?\d+)\s*</returncode>")
_EXIT_TEXT = LazyPattern(
    r"(?:\bexit(?:ed)?(?:\s+with)?[\s_]+(?:code|status)|\breturn[\s_]?code|\bexit_?code"
    r"|退出码|退出代码|返回码|退出状态)\s*(?:[:=：]\s*)?\(?(-?\d+)\b",
    re.IGNORECASE,
)
_EDGE_LINES = 3


def parse_exit_code(content: str) -> int | None:
    """Return the exit code a tool output reports, or None when it reports none.

    Read from ``<returncode>N</returncode>`` (mini-swe-agent) anywhere, else from
    ``exit code N``, ``Exit status: N``, ``returncode=N``, ``exited with code N``,
    ``退出码：N`` … on the first or last three non-blank lines (where tool wrappers put
    it), so a program's own text in the middle of the output is not taken for it.
    """
    tag = _EXIT_TAG.search(content, 0, 4096) or _EXIT_TAG.search(content)
    if tag:
        return int(tag.group(1))
    for line in _edge_lines(content):
        found = _EXIT_TEXT.search(line)
        if found:
            return int(found.group(1))
    return None


def without_exit_tag(content: str) -> str:
    """``content`` without the first ``<returncode>N</returncode>`` tag (where one is)."""
    return _EXIT_TAG.sub(" ", content, count=1)


def _edge_lines(content: str) -> list[str]:
    head = [ln for ln in content[:2048].split("\n") if ln.strip()][:_EDGE_LINES]
    tail = [ln for ln in content[-2048:].split("\n") if ln.strip()][-_EDGE_LINES:]
    return head + tail


# -- meaningful lines --------------------------------------------------------------------

_SEPARATOR = LazyPattern(r"[\s=\-_*#~+.·•─━═—–＝－＿…|<>^`'\"]*")
_WRAPPER = LazyPattern(r"\s*(?:<[A-Za-z_]+>[^<\n]{0,40}</[A-Za-z_]+>|</?[A-Za-z_]+>)\s*")


def is_meaningful_line(line: str) -> bool:
    """Whether a line says something: not blank, not a separator, not a wrapper tag."""
    if not line or line.isspace():
        return False
    if _SEPARATOR.fullmatch(line):
        return False
    return not _WRAPPER.fullmatch(line)


def _meaningful_lines(content: str) -> Iterator[tuple[int, str]]:
    """``(offset, line)`` of every meaningful line of ``content``, first to last."""
    for offset, block in _blocks(content, lines=True):
        at = offset
        for line in block.split("\n"):
            if is_meaningful_line(line):
                yield at, line
            at += len(line) + 1


def _last_meaningful(content: str) -> tuple[int, str] | None:
    """``(offset, line)`` of the last meaningful line, looking at the end of the text first."""
    end = len(content)
    while end > 0:
        start = max(0, end - _BLOCK)
        if start:
            start = content.rfind("\n", 0, start) + 1  # whole lines only
        block = content[start:end]
        ends = len(block)
        for line in reversed(block.split("\n")):
            ends -= len(line)
            if is_meaningful_line(line):
                return start + ends, line
            ends -= 1
        end = start - 1 if start else 0
    return None


# -- errors ------------------------------------------------------------------------------

_TRACEBACK = "Traceback (most recent call last)"
# A module path and a CamelCase class name, then ": message" or nothing.
_EXCEPTION_LINE = LazyPattern(r"(?:[a-z_]\w*\.)*[A-Z]\w*(?:[:：].*)?")
# Words that may start or mark an error line; only lines holding one are matched against
# _ERROR_LINE, so the scan costs a few substring searches, not a regex at every offset.
_ERROR_WORDS = (
    "Error", "Exception", "Failure", "error", "ERROR", "fatal", "Fatal", "FATAL", "panic",
    "FAIL", "npm ERR", "command not found", "No such file or directory",
    "Permission denied", "Segmentation fault", "core dumped", "No module named",
    "错误", "失败", "异常", "报错", "出错",
)
_ERROR_LINE = LazyPattern(
    # an exception class at the start of a line (optionally after pytest's "E   " or a
    # "file:line:" prefix), followed by a colon or the end of the line
    r"(?:E\s{2,}|[^\s:]+:\d+(?::\d+)?:\s*)?[A-Za-z_][\w.]*(?:Error|Exception|Failure)"
    r"(?:[:：].*)?"
    # error words with a colon (compiler, shell, git, npm …)
    r"|(?:[^\s:]+:\d+(?::\d+)?:\s*|[\w.-]+:\s+)?(?:error|Error|ERROR|fatal|Fatal|FATAL|panic)"
    r"(?:\[[\w-]+\])?\s*[:：!].*"
    # test runners' failure lines
    r"|(?:FAILED|FAIL|ERROR)(?:\s+|:\s*)\S.*"
    r"|npm ERR!.*"
    # shell failures and Chinese error words, anywhere in the line
    r"|.*(?:command not found|No such file or directory|Permission denied"
    r"|Segmentation fault|core dumped|No module named|错误|失败|异常|报错|出错).*"
)
_MAX_HITS_PER_WORD = 100


def is_error_line(line: str) -> bool:
    """Whether ``line`` reports an error (an exception, ``error:``, a failed test …)."""
    return _ERROR_LINE.fullmatch(line) is not None


def is_exception_line(line: str) -> bool:
    """Whether ``line`` names an exception, like ``pkg.SomeError: message``."""
    return _EXCEPTION_LINE.fullmatch(line.rstrip()) is not None and any(
        word in line for word in ("Error", "Exception", "Failure"))


def _traceback_exception(content: str) -> str | None:
    """Return the exception line of the last Python traceback in ``content``."""
    at = content.rfind(_TRACEBACK)
    if at < 0:
        return None
    # The first unindented line after the frames that looks like "pkg.SomeError: message";
    # other unindented lines (a program's own output interleaved with stderr) are skipped.
    for line in content[at:at + 64_000].split("\n")[1:400]:
        if not line or line[0].isspace() or line.startswith(("During handling", "The above")):
            continue
        if _EXCEPTION_LINE.fullmatch(line.rstrip()):
            return line.strip()
    return None


def _lines_holding(content: str, words: tuple[str, ...]) -> list[str]:
    """Return the lines of ``content`` that hold one of ``words``, in order, each once."""
    starts: set[int] = set()
    for word in words:
        at = content.find(word)
        hits = 0
        while at >= 0 and hits < _MAX_HITS_PER_WORD:
            start = content.rfind("\n", 0, at) + 1
            starts.add(start)
            end = content.find("\n", at)
            if end < 0:
                break
            at = content.find(word, end)
            hits += 1
    out = []
    for start in sorted(starts):
        end = content.find("\n", start)
        out.append(content[start:end if end >= 0 else len(content)])
    return out


def _error_lines(content: str, *, grep_like: bool) -> tuple[list[str], int]:
    """Up to two error lines to show, and how many error lines there are in all."""
    shown: list[str] = []
    exception = _traceback_exception(content)
    if exception:
        shown.append(exception)
    others: list[str] = []
    if not grep_like:
        for line in _lines_holding(content, _ERROR_WORDS):
            if _ERROR_LINE.fullmatch(line):
                line = line.strip()
                if line and line != exception and line not in others:
                    others.append(line)
    if others:
        shown.append(others[-1])
    total = len(others) + (1 if exception else 0)
    return shown[:_ERRORS_SHOWN], total


# -- counts ------------------------------------------------------------------------------

_TEST_WORDS = (" passed", " failed", " error")
_TEST_LINE = LazyPattern(
    r".*\b\d+ (?:passed|failed)\b.*|.*\b\d+ errors?\b.* in [\d.]+s\b.*"
)
_TEST_COUNT = LazyPattern(
    r"\b(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|todo|total)\b"
)
_UNITTEST_RAN = LazyPattern(r"^Ran (\d+) tests? in [\d.]+s", re.MULTILINE)
_UNITTEST_END = LazyPattern(r"^(OK|FAILED)\b(?: \(([^)\n]*)\))?", re.MULTILINE)


def _test_counts(content: str) -> str | None:
    tail = content[-8192:]
    found = None
    for line in _lines_holding(tail, _TEST_WORDS):
        if _TEST_LINE.fullmatch(line):
            found = line
    if found is not None:
        counts: dict[str, int] = {}
        for number, word in _TEST_COUNT.findall(found):
            word = "errors" if word.startswith("error") else word
            counts[word] = counts.get(word, 0) + int(number)
        order = ("failed", "errors", "passed", "skipped", "xfailed", "xpassed", "deselected",
                 "todo", "total")
        parts = [f"{counts[w]} {w}" for w in order if w in counts]
        if parts:
            return "tests: " + ", ".join(parts)
    if "Ran " not in tail:
        return None
    ran = None
    for ran in _UNITTEST_RAN.finditer(tail):  # noqa: B007 - the last one is wanted
        pass
    if ran is not None:
        text = f"tests: {ran.group(1)} run"
        end = _UNITTEST_END.search(tail, ran.end())
        if end is not None:
            detail = end.group(2)
            text += f", {end.group(1)}" + (f" ({detail})" if detail else "")
        return text
    return None


_GREP_TOOLS = frozenset({"grep", "rg", "ripgrep", "ag", "ack", "search", "search_files"})
_GREP_COMMAND = LazyPattern(r"(?:^|[|;&(]\s*|\s)(?:grep|egrep|fgrep|rg|ag|ack|git\s+grep)\s")
_GREP_HIT = LazyPattern(r"^([^\s:][^:\n]*?):(\d+)[:-]", re.MULTILINE)


def arguments_line(arguments: str | None, limit: int = 140) -> str:
    """A call's arguments in one line, for a notebook line's "what was done".

    The value of a one-argument call, else ``k=v`` pairs; cut to ``limit`` characters.
    """
    if not arguments:
        return ""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return " ".join(arguments.split())[:limit]
    if isinstance(parsed, dict):
        if len(parsed) == 1:
            text = str(next(iter(parsed.values())))
        else:
            text = ", ".join(f"{k}={v}" for k, v in parsed.items())
    else:
        text = str(parsed)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _command(arguments: str | Mapping[str, Any] | None) -> str:
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return arguments
    else:
        parsed = arguments
    if isinstance(parsed, Mapping):
        for key in ("command", "cmd", "script", "code"):
            value = parsed.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list):
                return " ".join(str(v) for v in value)
    return ""


def _is_grep_like(tool_name: str | None, command: str) -> bool:
    if tool_name and tool_name.lower() in _GREP_TOOLS:
        return True
    return bool(_GREP_COMMAND.search(" " + command[:2000]))


def _grep_counts(content: str) -> str:
    hits = sum(1 for _ in _meaningful_lines(content))
    if not hits:
        return "matches: none"
    files = {m.group(1) for m in _GREP_HIT.finditer(content)}
    text = f"matches: {hits} line{'s' if hits != 1 else ''}"
    if len(files) > 1:
        text += f" in {len(files)} files"
    return text


# -- paths -------------------------------------------------------------------------------

_TOKEN_SPLIT = LazyPattern(r"[\s\"'`(),;:<>\[\]{}=|*!?，。：；（）「」【】]+")
_FILE_EXT = frozenset((
    "py pyi ipynb js mjs cjs ts tsx jsx json yaml yml toml ini cfg md rst txt csv go rs java"
    " kt c h cc cpp hpp cs rb php sh bash zsh sql html css scss vue swift lua pl lock log"
    " xml gradle diff patch"
).split())
_PATH_TOKEN = LazyPattern(r"(?:~|\.{1,2})?/?(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*")


def _is_path(token: str) -> bool:
    if not 3 <= len(token) <= 240 or not _PATH_TOKEN.fullmatch(token):
        return False
    name = token.rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    has_ext = bool(dot and stem and ext.isalpha() and ext.isascii())
    if "/" in token:
        if token.startswith(("./", "../", "~/")):
            return True
        if token.startswith("/"):
            return has_ext or token.count("/") >= 2
        return has_ext
    return has_ext and ext.lower() in _FILE_EXT


_IMPORT = LazyPattern(r"\b(?:from|import) +[\w.]+")


def _paths(content: str) -> tuple[list[str], int, bool]:
    """Up to four distinct paths mentioned in ``content``, how many more, and if that is all.

    The last is False when more than :data:`_PATHS_COUNTED` distinct paths were seen.
    """
    found: dict[str, None] = {}
    for _, block in _blocks(content, lines=False):
        if "import" in block:
            block = _IMPORT.sub(" ", block)  # "from django.conf import x" names no file
        words = [w for w in block.split() if "/" in w or "." in w]
        tokens = [t for w in words for t in _TOKEN_SPLIT.split(w) if "/" in t or "." in t]
        for token in dict.fromkeys(t.rstrip(".") for t in tokens):
            if token not in found and not token.startswith("//") and _is_path(token):
                found[token] = None
                if len(found) > _PATHS_COUNTED:
                    shown = list(found)
                    return shown[:_PATHS_SHOWN], len(shown) - _PATHS_SHOWN, False
    shown = list(found)
    return shown[:_PATHS_SHOWN], max(len(shown) - _PATHS_SHOWN, 0), True


# -- the summary -------------------------------------------------------------------------


def summarize_tool_output(
    content: str, *, tool_name: str | None = None,
    arguments: str | Mapping[str, Any] | None = None,
) -> list[str]:
    """Summarize a tool output in 1 to 6 lines, made without an LLM.

    ``tool_name`` and ``arguments`` (JSON text or a mapping; its ``command`` is looked
    at) help tell a grep-like output, whose lines are matches, from other outputs.
    """
    exit_code = parse_exit_code(content)
    n_lines = count_lines(content)
    size = f"{n_lines:,} line{'s' if n_lines != 1 else ''}, {len(content):,} chars"
    status = size if exit_code is None else f"exit code {exit_code} · {size}"
    if not content or content.isspace():  # (strip() would copy the whole output)
        return [f"exit code {exit_code} · no output" if exit_code is not None else "no output"]
    out = [status]

    grep_like = _is_grep_like(tool_name, _command(arguments))
    counts = _test_counts(content) if not grep_like else None
    if counts is None and grep_like and exit_code in (None, 0, 1):
        counts = _grep_counts(content)
    if counts:
        out.append(counts)

    errors, total_errors = _error_lines(content, grep_like=grep_like)
    if errors:
        text = " | ".join(errors)
        if total_errors > len(errors):
            text += f" (+{total_errors - len(errors)} more error lines)"
        out.append("error: " + text)

    first = next(_meaningful_lines(content), None)
    last = _last_meaningful(content)
    if first is None:
        out[0] += " · no output"
    else:
        label = "output" if last is None or first[0] == last[0] else "first"
        out.append(f"{label}: {first[1].strip()}")
        if last is not None and last[0] != first[0]:
            last_text = last[1].strip()
            if last_text not in errors:
                out.append(f"last: {last_text}")

    paths, extra, complete = _paths(content)
    if paths:
        more = f" (+{extra}{'' if complete else '+'} more)" if extra else ""
        out.append("paths: " + ", ".join(paths) + more)
    return [shorten(line, SUMMARY_LINE_WIDTH) for line in out[:6]]
