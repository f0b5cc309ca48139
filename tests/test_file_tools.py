"""File tools: confinement to the file roots, bounds, refusals as tool errors, exact reads.

Confinement is tested against real races (a thread swapping a directory for a symlink with
renameat2 while the tools read), hard links, links at every component and special files;
grep against patterns that backtrack for ever in Python's ``re``, on long lines; the server
against a real ``memci serve`` and ``memci mcp`` answering while a long grep runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import random
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import memci
from memci.store import SessionRecord, SQLiteStore
from memci.tools._files import (
    FILE_TOOL_SPECS,
    FileToolLimits,
    artifact_get,
    call_file_tool,
    file_snippet,
    grep,
)
from memci.tools._grep import OVERLAP_BYTES, LineMatcher
from memci.workspace import Artifact, ArtifactStore, ToolResult

SECRET = "TOP-SECRET-CONTENT"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "app.py").write_text(
        "".join(f"line {i}: {'def main():' if i == 7 else 'pass'}\n" for i in range(1, 121)),
        encoding="utf-8")
    (root / "中文.md").write_text("第一行\n错误：没有找到\n第三行\n", encoding="utf-8")
    (root / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    (root / "latin1.txt").write_bytes("café ".encode("latin-1") * 200)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    (root / "link_out.txt").symlink_to(outside / "secret.txt")
    (root / "dir_out").symlink_to(outside, target_is_directory=True)
    (root / "link_in.py").symlink_to(root / "src" / "pkg" / "app.py")
    return root


@pytest.fixture
def session(store: SQLiteStore) -> SessionRecord:
    return store.ensure_session("default", "s1", None, {})


@pytest.fixture
def arts(store: SQLiteStore, tmp_path: Path) -> ArtifactStore:
    return ArtifactStore(store, tmp_path / "artifacts", inline_max_bytes=256)


@pytest.fixture
def artifact(arts: ArtifactStore, session: SessionRecord) -> Artifact:
    text = "<returncode>1</returncode>\n<output>\n" + "".join(
        f"row {i} 数据 {'ERROR boom' if i % 10 == 0 else 'ok'}\n" for i in range(1, 61)
    ) + "</output>\n"
    return arts.put(text, session=session, tool_name="bash", call_id="c1")


def _refused(result: ToolResult, *words: str) -> None:
    assert not result.ok
    text = str(result)
    assert text.startswith("error: ")
    assert SECRET not in text
    for word in words:
        assert word in text, text


# -- confinement -------------------------------------------------------------------------


@pytest.mark.parametrize("path", [
    "../outside/secret.txt", "src/../../outside/secret.txt", "..", "src/../..",
    "/etc/passwd",
])
def test_escapes_are_refused(tree: Path, path: str) -> None:
    _refused(file_snippet([tree], path, 1, 10), "outside the session's file roots")
    _refused(grep(path, "SECRET", roots=[tree]), "outside")


def test_absolute_paths(tree: Path) -> None:
    secret = tree.parent / "outside" / "secret.txt"
    _refused(file_snippet([tree], str(secret), 1, 5), "outside")
    _refused(file_snippet([tree], str(tree) + "/../outside/secret.txt", 1, 5), "outside")
    inside = file_snippet([tree], str(tree / "src" / "pkg" / "app.py"), 1, 2)
    assert inside.ok and inside.text.startswith("[file_snippet src/pkg/app.py · lines 1-2")
    again = file_snippet([tree], "src/pkg/../pkg/./app.py", 1, 2)
    assert again.ok and again.text.startswith("[file_snippet src/pkg/app.py · lines 1-2")


def test_missing_outside_file_does_not_reveal_existence(tree: Path) -> None:
    _refused(file_snippet([tree], "../outside/nothing.txt", 1, 5), "outside")
    _refused(file_snippet([tree], "nothing.txt", 1, 5), "no file")


@pytest.mark.parametrize("path", ["link_out.txt", "dir_out/secret.txt", "link_in.py"])
def test_symlinks_are_never_followed(tree: Path, path: str) -> None:
    # Also a link that points inside: its target can be changed between two calls.
    _refused(file_snippet([tree], path, 1, 10), "symbolic link")
    _refused(grep(path, "SECRET|main", roots=[tree]), "symbolic link")


@pytest.mark.parametrize("component", [0, 1, 2, 3])
@pytest.mark.parametrize("points", ["in", "out"])
def test_a_symlink_at_any_component_is_refused(tmp_path: Path, component: int,
                                               points: str) -> None:
    root = tmp_path / "root"
    real = root / "real"
    (real / "a" / "b" / "c").mkdir(parents=True)
    (real / "a" / "b" / "c" / "f.txt").write_text("inside\n", encoding="utf-8")
    outside = tmp_path / "outside"
    (outside / "a" / "b" / "c").mkdir(parents=True)
    (outside / "a" / "b" / "c" / "f.txt").write_text(SECRET + "\n", encoding="utf-8")
    names = ["a", "b", "c", "f.txt"]
    base = real if points == "in" else outside
    # real/a/b/c/f.txt with one component (and what is below it) replaced by a link
    walked = root / "walk"
    walked.mkdir()
    parent = walked
    for name in names[:component]:
        parent = parent / name
        parent.mkdir()
    target = base.joinpath(*names[:component + 1])
    (parent / names[component]).symlink_to(target, target_is_directory=target.is_dir())
    path = "walk/" + "/".join(names)
    shown = "walk/" + "/".join(names[:component + 1])
    _refused(file_snippet([root], path, 1, 5), f"{shown!r} is a symbolic link")
    _refused(grep(path, "inside|SECRET", roots=[root]), "symbolic link")
    tree = grep("walk", "inside|SECRET", roots=[root])
    assert tree.ok and "0 matching lines" in tree.text
    assert "skipped 1 (1 symbolic link)" in tree.text
    assert SECRET not in tree.text


def test_hard_links_are_refused(tree: Path) -> None:
    secret = tree.parent / "outside" / "secret.txt"
    os.link(secret, tree / "hard.txt")
    _refused(file_snippet([tree], "hard.txt", 1, 5), "2 hard links")
    _refused(grep("hard.txt", "SECRET", roots=[tree]), "hard links")
    walked = grep(".", "SECRET", roots=[tree])
    assert walked.ok and "0 matching lines" in walked.text and "1 hard-linked file" in walked.text
    assert SECRET not in walked.text
    # Two names inside the root are refused too: the count cannot tell where the other is.
    os.link(tree / "src" / "pkg" / "app.py", tree / "copy.py")
    _refused(file_snippet([tree], "src/pkg/app.py", 1, 5), "hard links")


def test_several_roots(tree: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    second.mkdir()
    (second / "other.txt").write_text("hello\n", encoding="utf-8")
    result = file_snippet([tree, second], "other.txt", 1, 1)
    assert result.ok and "1\thello" in result.text
    absolute = file_snippet([tree, second], str(second / "other.txt"), 1, 1)
    assert absolute.ok and "1\thello" in absolute.text
    _refused(file_snippet([], "other.txt", 1, 1), "no file roots")
    _refused(file_snippet([tmp_path / "missing-root"], "x", 1, 1), "no file roots")


def test_a_root_given_through_a_link_is_followed_once(tree: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(tree, target_is_directory=True)  # the operator's choice, not the model's
    result = file_snippet([alias], "src/pkg/app.py", 7, 1)
    assert result.ok and "7\tline 7: def main():" in result.text
    assert file_snippet([alias], str(alias / "src" / "pkg" / "app.py"), 7, 1).ok


def test_binary_and_non_utf8_files_are_refused(tree: Path) -> None:
    _refused(file_snippet([tree], "blob.bin", 1, 5), "binary")
    _refused(grep("blob.bin", "ELF", roots=[tree]), "binary")
    _refused(file_snippet([tree], "latin1.txt", 1, 5), "UTF-8")


def test_huge_file_is_refused(tree: Path) -> None:
    huge = tree / "huge.log"
    with huge.open("wb") as handle:
        handle.truncate(9 * 1024 * 1024)  # sparse: fast to make, over the 8 MiB default
    _refused(file_snippet([tree], "huge.log", 1, 5), "over the", "byte limit")
    _refused(grep("huge.log", "x", roots=[tree]), "byte limit")
    small = FileToolLimits(max_file_bytes=100)
    _refused(file_snippet([tree], "src/pkg/app.py", 1, 5, limits=small), "byte limit")


def test_directories_and_special_files_are_refused(tree: Path) -> None:
    _refused(file_snippet([tree], "src", 1, 5), "directory")
    _refused(file_snippet([tree], ".", 1, 5), "directory")
    os.mkfifo(tree / "pipe")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tree / "sock"))
        start = time.monotonic()
        for path in ("pipe", "sock"):
            _refused(file_snippet([tree], path, 1, 5), "not a regular file")
            _refused(grep(path, "x", roots=[tree]), "not a regular file")
        walked = grep(".", "x", roots=[tree])
        assert walked.ok and "2 special files" in walked.text
        assert time.monotonic() - start < 30  # opening a FIFO did not wait for a writer


@pytest.mark.parametrize("path", [
    "", "  ", "a\x00b", "src/\x00/app.py", "x" * 5000, "y" * 300, "a/" * 2000 + "f",
    "src/" + "z" * 300 + "/app.py",
])
def test_unusable_paths(tree: Path, path: str) -> None:
    _refused(file_snippet([tree], path, 1, 5))
    _refused(grep(path, "x", roots=[tree]))


# -- file_snippet ------------------------------------------------------------------------


def test_file_snippet_lines_and_bounds(tree: Path) -> None:
    result = file_snippet([tree], "src/pkg/app.py", 5, 3)
    assert result.ok
    assert result.text.split("\n") == [
        "[file_snippet src/pkg/app.py · lines 5-7 of 120]",
        "5\tline 5: pass", "6\tline 6: pass", "7\tline 7: def main():",
        "[113 more lines; next: file_snippet(path='src/pkg/app.py', start=8, length=3)]",
    ]
    capped = file_snippet([tree], "src/pkg/app.py", 1, 10_000,
                          limits=FileToolLimits(max_lines=10))
    assert capped.text.count("\n") == 11 and "lines 1-10 of 120" in capped.text
    tail = file_snippet([tree], "src/pkg/app.py", 119, 50)
    assert tail.text.endswith("120\tline 120: pass")
    _refused(file_snippet([tree], "src/pkg/app.py", 500, 5), "has 120 lines")
    _refused(file_snippet([tree], "src/pkg/app.py", 0, 5), "start")
    zh = file_snippet([tree], "中文.md", 2, 1)
    assert zh.ok and "2\t错误：没有找到" in zh.text


def test_output_and_line_length_are_bounded(tree: Path) -> None:
    (tree / "wide.txt").write_text(("x" * 5000 + "\n") * 50, encoding="utf-8")
    limits = FileToolLimits(max_line_chars=100, max_output_chars=1000)
    result = file_snippet([tree], "wide.txt", 1, 50, limits=limits)
    assert result.ok and len(result.text) < 1300
    assert "…[+4,900 chars]" in result.text
    assert "more lines; next" in result.text


# -- grep --------------------------------------------------------------------------------


def test_grep_a_file(tree: Path) -> None:
    result = grep("src/pkg/app.py", r"def \w+", roots=[tree])
    assert result.ok
    assert result.text == (
        "[grep src/pkg/app.py /def \\w+/ · 1 matching line]\n7: line 7: def main():")
    many = grep("src/pkg/app.py", "pass", 5, roots=[tree])
    lines = many.text.split("\n")
    assert lines[0] == "[grep src/pkg/app.py /pass/ · 119 matching lines, showing the first 5]"
    assert lines[1:] == [f"{i}: line {i}: pass" for i in range(1, 6)]
    none = grep("中文.md", "不存在", roots=[tree])
    assert none.ok and "0 matching lines" in none.text
    folded = grep("src/pkg/app.py", "DEF MAIN", roots=[tree], ignore_case=True)
    assert "1 matching line" in folded.text


@pytest.mark.parametrize(("pattern", "why"), [
    ("(unclosed", "bad regular expression '(unclosed': missing ): (unclosed"),
    ("[z-a]", "bad regular expression"),
    (r"(x)\1", "no backreferences"),
    (r"(?P<w>x)(?P=w)", "no backreferences"),
    (r"(?<w>x)\k<w>", "no backreferences"),
    ("a(?=b)", "no lookahead"),
    ("a(?!b)", "no lookahead"),
    ("(?<=a)b", "no lookbehind"),
    ("(?<!a)b", "no lookbehind"),
    ("a++", "no possessive repeats"),
    (r"\w*+x", "no possessive repeats"),
    ("(?>a|ab)c", "no atomic groups"),
    ("(a)?(?(1)b|c)", "no conditionals"),
    ("(?#note)x", "no comments"),
    ("(?x) a b", "no flags x"),
    (r"end\Z", r"write \z"),
    (r"a\hb", "[ \\t]"),
    ("a{5000}", "repeats too many times"),
    ("((a{100}){100}){100}", "repeats too many times"),
    ("(.{1,100}){1,10}", "too complex for grep"),
    (r"(\pL{1,10}){1,10}", "too complex for grep"),
    (r"a\nb", "within one line"),
    ("a\nb", "within one line"),
    ("a" * 300, "over the limit"),
    ("", "non-empty"),
])
def test_bad_patterns_are_refused(tree: Path, pattern: str, why: str) -> None:
    _refused(grep("src/pkg/app.py", pattern, roots=[tree]), why)


def test_allowed_patterns(tree: Path) -> None:
    for pattern in (r"(\d{1,3}\.){3}\d{1,3}", r"line (1|2)\d*: pass", "(a+)+$",
                    r"(\w+\s?)*x", ".*a.*b.*c.*d.*e.*f.*g", r"(?i)DEF\s+\w+", r"\pL+",
                    r"\p{Han}+", r"(?P<name>def) (?<fn>\w+)", r"\(\?=", r"\\1"):
        assert grep("src/pkg/app.py", pattern, roots=[tree]).ok, pattern


def test_grep_lines_and_anchors(tree: Path) -> None:
    (tree / "a.txt").write_text("alpha\nbeta\n\ngamma beta\nBETA\n", encoding="utf-8")
    assert grep("a.txt", "^beta$", roots=[tree]).text.endswith("· 1 matching line]\n2: beta")
    assert "3 matching lines" in grep("a.txt", "beta$", roots=[tree], ignore_case=True).text
    assert grep("a.txt", "^$", roots=[tree]).text.endswith("\n3: ")  # no phantom last line
    assert "4 matching lines" in grep("a.txt", ".", roots=[tree]).text
    assert "5 matching lines" in grep("a.txt", "^", roots=[tree]).text
    assert grep("a.txt", r"\Aalpha", roots=[tree]).text.endswith("\n1: alpha")
    assert "0 matching lines" in grep("a.txt", r"\Abeta", roots=[tree]).text
    assert "0 matching lines" in grep("a.txt", r"alpha\sbeta", roots=[tree]).text  # one line
    assert "0 matching lines" in grep("a.txt", r"alpha[^x]beta", roots=[tree]).text
    zh = grep("中文.md", r"错误.没有", roots=[tree])
    assert zh.text.endswith("\n2: 错误：没有找到")


@pytest.mark.parametrize("at", [0, 500_000, 1_000_000 - 6])
def test_long_lines_are_searched_whole(tree: Path, at: int) -> None:
    line = "x" * at + "needle" + "y" * (1_000_000 - at - 6)
    (tree / "long.txt").write_text("short\n" + line + "\nlast\n", encoding="utf-8")
    result = grep("long.txt", "needle", roots=[tree])
    assert "· 1 matching line]" in result.text
    assert result.text.split("\n")[1].startswith("2: ")
    assert "…[+" in result.text  # shown cut at max_line_chars
    if at == 1_000_000 - 6:
        assert "1 matching line" in grep("long.txt", "needle$", roots=[tree]).text
    assert "1 matching line" in grep("long.txt", "^x*needley*$", roots=[tree]).text
    assert "0 matching lines" in grep("long.txt", "x$", roots=[tree]).text


def test_a_match_across_a_window_edge_is_found() -> None:
    # A big program gets small windows (a bounded time per RE2 call); the windows overlap.
    matcher = LineMatcher("needle|[ab]{1000}q", ignore_case=False, max_chars=200,
                          max_size=4000)
    w = matcher.window
    assert w < 64 * 1024
    step = w - OVERLAP_BYTES
    head = b"short\n"
    for start in (0, w - 6, w - 3, w - 1, step, step + w - 3, 2 * step + w - 5, 5 * step + 2):
        at = start - len(head)
        if at < 0:
            continue
        data = head + b"x" * at + b"needle" + b"y" * (6 * w) + b"\nlast\n"
        found = [n for n, _ in matcher.scan(data, time.monotonic() + 10)]
        assert found == [2], (start, w)
        assert [n for n, _ in matcher.scan(data + b"needle\n", time.monotonic() + 10)] == [2, 4]


def test_multibyte_text_across_windows(tree: Path) -> None:
    line = "数据" * 20_000 + "错误" + "数据" * 20_000  # 3 bytes a character
    (tree / "zh.txt").write_text(line + "\n", encoding="utf-8")
    assert "1 matching line" in grep("zh.txt", "错误", roots=[tree]).text
    assert "1 matching line" in grep("zh.txt", r"^(数据)+错", roots=[tree]).text
    assert "0 matching lines" in grep("zh.txt", "错误错", roots=[tree]).text


# Patterns that backtrack for ever in Python's re (issue 11 §2), and others of the kind.
CATASTROPHIC = [
    "a*a*a*c", "(a|aa)+$", "(a|a)+$", r"\w*\w*\w*\w*$x", "(a{1,10}){1,10}$",
    "(a+)+$", "(x+x+)+y", r"(\w+\s?)*$", "^(a|a?)+$", "(.*a){12}c", "(a|b|ab)*c",
    r"(?:a|b)*a(?:a|b){200}c",
]


_AB = bytes(ord("a") + (b & 1) for b in range(256))


def _random_ab(rng: random.Random, chars: int) -> str:
    return rng.randbytes(chars).translate(_AB).decode("ascii")


def _line_file(tree: Path, name: str, chars: int, kind: str = "ab") -> str:
    """One line: random a/b, or a run of a that ends in '!' (the classic worst case)."""
    if kind == "ab":
        text = _random_ab(random.Random(chars), chars)
    else:
        text = "a" * (chars - 1) + "!"
    (tree / name).write_text(text + "\n", encoding="utf-8")
    return name


@pytest.mark.parametrize("pattern", CATASTROPHIC)
def test_catastrophic_patterns_run_in_bounded_time(tree: Path, pattern: str) -> None:
    limits = FileToolLimits(grep_seconds=0.5)
    for chars in (2_000, 1_000_000):
        for kind in ("run", "ab"):
            name = _line_file(tree, f"{kind}-{chars}.txt", chars, kind)
            result = grep(name, pattern, roots=[tree], limits=limits)
            # It answers, whole or ended by its deadline (a backtracking engine spends
            # minutes on these; the deadline's own test is below).
            assert result.ok, result.text


def test_the_deadline_is_checked_inside_one_long_line(tree: Path) -> None:
    # One 4 MB line that RE2 needs seconds for: the scan stops at the deadline, mid-line.
    _line_file(tree, "slow.txt", 4_000_000)
    limits = FileToolLimits(grep_seconds=0.3)
    result = grep("slow.txt", r"(?:a|b)*a(?:a|b){800}c", roots=[tree], limits=limits)
    # Stopped mid-line by its deadline (without it RE2 spends about 30 s on this line).
    assert result.ok and "stopped at line 1 after 0.3 s" in result.text


def test_grep_output_is_bounded(tree: Path) -> None:
    (tree / "wide.txt").write_text(("hit " + "z" * 5000 + "\n") * 500, encoding="utf-8")
    limits = FileToolLimits(max_line_chars=100, max_output_chars=1000, max_matches=50)
    result = grep("wide.txt", "hit", 1000, roots=[tree], limits=limits)
    assert result.ok and len(result.text) < 1300
    assert "500 matching lines, showing the first" in result.text


# -- grep over a directory -----------------------------------------------------------------


def test_grep_a_directory(tree: Path) -> None:
    (tree / "src" / "pkg" / "util.py").write_text("def helper():\n    pass\n", encoding="utf-8")
    (tree / ".git").mkdir()
    (tree / ".git" / "config.py").write_text("def hidden():\n", encoding="utf-8")
    result = grep(".", r"def \w+", roots=[tree])
    lines = result.text.split("\n")
    assert lines[0] == (r"[grep . /def \w+/ · 2 matching lines in 2 files; searched 3 files, "
                        "skipped 5 (2 binary files, 3 symbolic links)]")
    assert lines[1:] == ["src/pkg/app.py:7: line 7: def main():",
                         "src/pkg/util.py:1: def helper():"]
    assert SECRET not in result.text
    sub = grep("src", "def", 1, roots=[tree])
    assert sub.text.split("\n")[1:] == ["src/pkg/app.py:7: line 7: def main():"]
    assert "showing the first 1" in sub.text
    capped = grep(".", "def", roots=[tree], limits=FileToolLimits(max_files=1))
    assert "stopped after 1 file" in capped.text
    late = grep(".", "def", roots=[tree], limits=FileToolLimits(grep_seconds=0))
    assert late.ok and "0 matching lines" in late.text and "stopped after 0 s" in late.text


def test_grep_a_deep_directory(tree: Path) -> None:
    deep = tree / "deep"
    for _ in range(40):
        deep = deep / "d"
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("def bottom():\n", encoding="utf-8")
    result = grep("deep", "bottom", roots=[tree])
    assert "0 matching lines" in result.text and "1 directory too deep" in result.text
    shallow = grep("deep", "bottom", roots=[tree], limits=FileToolLimits(max_depth=64))
    assert "1 matching line in 1 file" in shallow.text


# -- races -----------------------------------------------------------------------------------


def _exchanger() -> Callable[[Path, Path], None]:
    """Swap two paths atomically (renameat2 RENAME_EXCHANGE), or by three renames."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)

    def exchange(a: Path, b: Path) -> None:
        assert renameat2 is not None
        if renameat2(-100, bytes(a), -100, bytes(b), 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
            raise OSError(ctypes.get_errno(), "renameat2")

    def three_renames(a: Path, b: Path) -> None:
        spare = a.with_name(a.name + ".spare")
        os.rename(a, spare)
        os.rename(b, a)
        os.rename(spare, b)

    if renameat2 is not None:
        try:
            probe_a, probe_b = Path(os.devnull), Path(os.devnull)
            exchange(probe_a, probe_b)
        except OSError as exc:
            if exc.errno in (38, 22, 95):  # ENOSYS, EINVAL, EOPNOTSUPP: no exchange here
                return three_renames
        return exchange
    return three_renames


@pytest.fixture
def racing_tree(tmp_path: Path) -> Iterator[tuple[Path, threading.Event, list[int]]]:
    """root/d/f.txt says "inside"; a thread swaps root/d with a link to outside/d, non-stop."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    for base, text in ((root, "inside"), (outside, SECRET)):
        (base / "d" / "e").mkdir(parents=True)
        (base / "d" / "f.txt").write_text(text + "\n", encoding="utf-8")
        (base / "d" / "e" / "g.txt").write_text(text + "\n", encoding="utf-8")
    (root / "swap").symlink_to(outside / "d", target_is_directory=True)
    exchange = _exchanger()
    stop = threading.Event()
    swaps = [0]

    def race() -> None:
        while not stop.is_set():
            exchange(root / "d", root / "swap")
            swaps[0] += 1

    racer = threading.Thread(target=race, daemon=True)
    racer.start()
    yield root, stop, swaps
    stop.set()
    racer.join()


def test_no_escape_while_a_directory_is_swapped_for_a_link(
    racing_tree: tuple[Path, threading.Event, list[int]],
) -> None:
    root, stop, swaps = racing_tree
    calls = [
        lambda: file_snippet([root], "d/f.txt", 1, 5),
        lambda: grep("d/f.txt", "inside|SECRET", roots=[root]),
        lambda: file_snippet([root], "d/e/g.txt", 1, 5),
        lambda: grep("d", "inside|SECRET", roots=[root]),
        lambda: grep(".", "inside|SECRET", roots=[root]),
    ]
    escapes = read = 0
    deadline = time.monotonic() + 20
    n = 0
    while n < 12_000 and time.monotonic() < deadline:
        text = calls[n % len(calls)]().text
        escapes += SECRET in text
        read += "inside" in text
        n += 1
    stop.set()
    assert escapes == 0, f"{escapes} reads out of {n} returned a file outside the root"
    assert read > 0 and swaps[0] > 1000  # the race really ran, and reads went through


def test_grep_an_artifact(arts: ArtifactStore, artifact: Artifact, tree: Path) -> None:
    by_pointer = grep(f"artifact:{artifact.id}", "ERROR", 3, artifacts=arts)
    assert by_pointer.ok
    lines = by_pointer.text.split("\n")
    assert lines[0] == (f"[grep artifact:{artifact.id} /ERROR/ · 6 matching lines, "
                        "showing the first 3]")
    assert lines[1] == "12: row 10 数据 ERROR boom"
    by_id = grep(artifact.id, "ERROR", 3, artifacts=arts, roots=[tree])
    assert by_id.text == by_pointer.text
    _refused(grep("artifact:0123456789ab", "x", artifacts=arts), "no artifact")
    _refused(grep("artifact:zz", "x", artifacts=arts), "not an artifact id")
    _refused(grep(f"artifact:{artifact.id}", "x"), "no artifact store")


def test_grep_scan_is_bounded(arts: ArtifactStore, session: SessionRecord) -> None:
    a = arts.put("hit\n" * 1000, session=session, tool_name="t", call_id="big")
    limits = FileToolLimits(max_scan_chars=400)
    result = grep(a.id, "hit", 200, artifacts=arts, limits=limits)
    assert result.ok and "100 matching lines" in result.text
    assert "searched only the first 400 characters" in result.text
    assert result.text.count("\n") == 100  # max_matches caps the limit


# -- artifact_get ------------------------------------------------------------------------


def test_artifact_get_is_exact(arts: ArtifactStore, artifact: Artifact) -> None:
    whole = arts.read(artifact.id)
    assert artifact_get(arts, artifact.id, 0, 40).text == whole[:40]
    assert artifact_get(arts, f"artifact:{artifact.id}", 30, 17).text == whole[30:47]
    assert artifact_get(arts, artifact.id).text == whole  # under max_output_chars
    lines = whole.split("\n")
    got = artifact_get(arts, artifact.id, start_line=3, line_count=2)
    assert got.ok and got.text == lines[2] + "\n" + lines[3] + "\n"
    capped = artifact_get(arts, artifact.id, 0, 10_000, limits=FileToolLimits(
        max_output_chars=25))
    assert capped.text == whole[:25]
    assert artifact_get(arts, artifact.id, artifact.chars, 5).text == ""


def test_artifact_get_refusals(arts: ArtifactStore, artifact: Artifact) -> None:
    _refused(artifact_get(arts, "0123456789ab"), "no artifact")
    _refused(artifact_get(arts, "../etc/passwd"), "not an artifact id")
    _refused(artifact_get(arts, artifact.id, 0, 5, start_line=1), "not both")
    _refused(artifact_get(arts, artifact.id, -1, 5), "offset")
    _refused(artifact_get(arts, artifact.id, artifact.chars + 1, 5), "offset must be")
    _refused(artifact_get(arts, artifact.id, start_line=999), "start_line must be")
    _refused(artifact_get(None, artifact.id), "no artifact store")


# -- dispatch ----------------------------------------------------------------------------


def test_call_file_tool(tree: Path, arts: ArtifactStore, artifact: Artifact) -> None:
    got = call_file_tool("artifact_get", json.dumps({"id": artifact.id, "offset": 0,
                                                     "length": 10}), artifacts=arts)
    assert got.ok and got.text == arts.read(artifact.id, 0, 10)
    snippet = call_file_tool("file_snippet", {"path": "src/pkg/app.py", "start": 7,
                                              "length": 1}, roots=[tree])
    assert "7\tline 7: def main():" in snippet.text
    found = call_file_tool("grep", {"target": "src/pkg/app.py", "pattern": "main"},
                           roots=[tree], artifacts=arts)
    assert "1 matching line" in found.text
    _refused(call_file_tool("grep", {"target": "x"}, roots=[tree]), "missing")
    _refused(call_file_tool("grep", {"target": "x", "pattern": "y", "extra": 1}),
             "unknown argument")
    _refused(call_file_tool("file_snippet", {"path": "a", "start": "one"}, roots=[tree]),
             "must be int")
    quoted = call_file_tool("file_snippet", {"path": "src/pkg/app.py", "start": "7",
                                             "length": "1"}, roots=[tree])
    assert quoted.ok and "7\tline 7" in quoted.text
    _refused(call_file_tool("artifact_get", "{oops", artifacts=arts), "not valid JSON")
    _refused(call_file_tool("rm", {}), "unknown tool")


def test_tool_specs() -> None:
    assert [s.name for s in FILE_TOOL_SPECS] == ["artifact_get", "file_snippet", "grep"]
    for spec in FILE_TOOL_SPECS:
        schema = spec.to_openai()["function"]["parameters"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        assert spec.to_anthropic()["input_schema"] == schema


def test_empty_and_crlf_files(tree: Path) -> None:
    (tree / "empty.txt").write_text("", encoding="utf-8")
    assert file_snippet([tree], "empty.txt", 1, 5).text == "[file_snippet empty.txt · empty file]"
    (tree / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    result = file_snippet([tree], "dos.txt", 1, 5)
    assert result.text.split("\n")[1:] == ["1\tone", "2\ttwo"]
    assert grep("dos.txt", "two$", roots=[tree]).text.endswith("\n2: two")


# -- in a session, and served ----------------------------------------------------------------


def test_grep_is_offered_whenever_file_roots_are_set(engine: memci.Engine, tree: Path) -> None:
    session = engine.session("files", file_roots=[str(tree)])
    offered = {t["function"]["name"] for t in session.tools()}
    assert {"file_snippet", "grep"} <= offered  # before any tool result
    found = session.call_tool("grep", {"target": "src", "pattern": "def main"})
    assert "src/pkg/app.py:7: line 7: def main():" in found
    plain = engine.session("plain")
    assert not {"file_snippet", "grep"} & {t["function"]["name"] for t in plain.tools()}


# Slow for RE2 (its DFA keeps running out of cache), catastrophic for Python's re: a grep
# with it runs until its deadline.
SLOW_PATTERN = r"(?:a|b)*a(?:a|b){800}c"


# A turn with a tool result: grep is then offered even by the rules before file roots
# offered it, so the tests below are about blocking only.
TOOL_TURN = [
    {"role": "user", "content": "look at big.txt"},
    {"role": "assistant", "content": None, "tool_calls": [{
        "id": "c1", "type": "function",
        "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "big.txt"},
]


def _slow_tree(tree: Path) -> None:
    rng = random.Random(7)
    (tree / "big.txt").write_text("".join(_random_ab(rng, 1_000_000) + "\n" for _ in range(6)),
                                  encoding="utf-8")


def _answered_while(busy: threading.Thread, probe: Callable[[], object]) -> list[float]:
    """When (``time.monotonic()``) each call of ``probe`` answered, probing while ``busy`` runs.

    Each probe may take as long as its client's timeout: what a test asserts is that
    answers come while the work still runs, not how fast (``bench/bench_abuse.py``
    measures that).
    """
    answered = []
    while busy.is_alive():
        probe()
        answered.append(time.monotonic())
        time.sleep(0.05)
    return answered


@pytest.mark.slow
def test_the_server_answers_while_a_long_grep_runs(tmp_path: Path, tree: Path) -> None:
    pytest.importorskip("fastapi", reason="needs memci[server]")
    import httpx

    from .test_server import ServeProcess

    _slow_tree(tree)
    server = ServeProcess(tmp_path / "serve.db", "--no-auth", "--file-root", str(tree)).start()
    try:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            r = http.post("/v1/sessions/g/messages", json={
                "messages": TOOL_TURN, "settings": {"file_roots": [str(tree)]}})
            assert r.status_code == 200
            names = [t["function"]["name"] for t in http.get("/v1/sessions/g/tools").json()[
                "tools"]]
            assert "grep" in names
            answers: list[tuple[float, httpx.Response]] = []

            def greps() -> None:  # one after another: the grep runs for a while
                for _ in range(3):
                    answer = http.post("/v1/sessions/g/tools/grep",
                                       json={"target": "big.txt", "pattern": SLOW_PATTERN})
                    answers.append((time.monotonic(), answer))

            grepping = threading.Thread(target=greps)
            grepping.start()
            with httpx.Client(base_url=server.url, timeout=60) as probe:
                answered = _answered_while(
                    grepping, lambda: probe.get("/healthz").raise_for_status())
        last_grep = answers[-1][0]
        print(f"healthz answered {sum(t < last_grep for t in answered)} times during 3 greps")
        assert sum(t < last_grep for t in answered) >= 3  # not held until the greps ended
        for _, answer in answers:
            assert answer.status_code == 200
            assert "stopped at line" in answer.json()["result"]  # it ran to its deadline
    finally:
        server.stop()


@pytest.mark.slow
def test_the_server_answers_while_many_long_greps_run(tmp_path: Path, tree: Path) -> None:
    # More at once than anyio's shared pool has threads (40): tool calls queue among
    # themselves, the rest of the server keeps answering.
    pytest.importorskip("fastapi", reason="needs memci[server]")
    import httpx

    from .test_server import ServeProcess

    _slow_tree(tree)
    server = ServeProcess(tmp_path / "serve.db", "--no-auth", "--file-root", str(tree)).start()
    try:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            for n in range(50):
                assert http.post(f"/v1/sessions/g{n}/messages", json={
                    "messages": TOOL_TURN, "settings": {"file_roots": [str(tree)]}},
                ).status_code == 200
        statuses: list[int] = []
        finished: list[float] = []

        def one(n: int) -> None:
            with httpx.Client(base_url=server.url, timeout=300) as http:
                statuses.append(http.post(f"/v1/sessions/g{n}/tools/grep", json={
                    "target": "big.txt", "pattern": SLOW_PATTERN}).status_code)
            finished.append(time.monotonic())

        calls = [threading.Thread(target=one, args=(n,)) for n in range(50)]
        for call in calls:
            call.start()
        all_calls = threading.Thread(target=lambda: [c.join() for c in calls])
        all_calls.start()
        with httpx.Client(base_url=server.url, timeout=60) as probe:
            answered = _answered_while(all_calls, lambda: probe.get("/healthz").raise_for_status())
        during = sum(t < max(finished) for t in answered)
        print(f"healthz answered {during} times during 50 greps")
        assert during >= 3  # the health check answered while the greps still ran
        assert statuses == [200] * 50
    finally:
        server.stop()


@pytest.mark.slow
def test_mcp_answers_while_a_long_grep_runs(tmp_path: Path, tree: Path) -> None:
    pytest.importorskip("mcp", reason="needs memci[mcp]")
    import anyio
    from mcp import Client, StdioServerParameters

    from .test_mcp import _command
    from .test_server import ROOT, subprocess_env

    _slow_tree(tree)
    db = tmp_path / "mcp.db"
    with memci.Engine.open(db) as eng:
        eng.session("notes", file_roots=[str(tree)]).add_many(TOOL_TURN)  # settings are saved
    params = StdioServerParameters(
        command=sys.executable, args=[*_command(), "mcp", "--session", "notes", "--db", str(db)],
        env=subprocess_env(), cwd=str(ROOT))
    answered: list[float] = []  # when each list_tools answered
    greps: list[tuple[float, str]] = []  # when each grep answered, and its text

    async def main() -> None:
        async with Client(params, cache=None, read_timeout_seconds=120) as client:
            assert "grep" in {t.name for t in (await client.list_tools()).tools}

            async def long_greps() -> None:  # one after another: the grep runs for a while
                for _ in range(3):
                    result = await client.call_tool("grep", {"target": "big.txt",
                                                             "pattern": SLOW_PATTERN})
                    (content,) = result.content
                    greps.append((time.monotonic(), getattr(content, "text", "")))

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(long_greps)
                while len(greps) < 3:
                    with anyio.fail_after(60):
                        await client.list_tools()
                    answered.append(time.monotonic())
                    await anyio.sleep(0.05)

    anyio.run(main)
    last_grep = greps[-1][0]
    print(f"list_tools answered {sum(t < last_grep for t in answered)} times during 3 greps")
    assert sum(t < last_grep for t in answered) >= 3  # not held until the greps ended
    assert all("stopped at line" in text for _, text in greps)
