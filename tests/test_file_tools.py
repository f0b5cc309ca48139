"""File tools: confinement to the file roots, bounds, refusals as tool errors, exact reads."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memci.store import SessionRecord, SQLiteStore
from memci.tools._files import (
    FILE_TOOL_SPECS,
    FileToolLimits,
    artifact_get,
    call_file_tool,
    file_snippet,
    grep,
)
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
    "../outside/secret.txt", "src/../../outside/secret.txt", "link_out.txt",
    "dir_out/secret.txt",
])
def test_escapes_are_refused(tree: Path, path: str) -> None:
    _refused(file_snippet([tree], path, 1, 10), "outside the session's file roots")
    _refused(grep(path, "SECRET", roots=[tree]), "outside")


def test_absolute_paths(tree: Path) -> None:
    secret = tree.parent / "outside" / "secret.txt"
    _refused(file_snippet([tree], str(secret), 1, 5), "outside")
    _refused(file_snippet([tree], "/etc/passwd", 1, 5), "outside")
    inside = file_snippet([tree], str(tree / "src" / "pkg" / "app.py"), 1, 2)
    assert inside.ok and inside.text.startswith("[file_snippet src/pkg/app.py · lines 1-2")


def test_missing_outside_file_does_not_reveal_existence(tree: Path) -> None:
    _refused(file_snippet([tree], "../outside/nothing.txt", 1, 5), "outside")
    _refused(file_snippet([tree], "nothing.txt", 1, 5), "no file")


def test_symlink_inside_the_root_is_fine(tree: Path) -> None:
    result = file_snippet([tree], "link_in.py", 7, 1)
    assert result.ok and "7\tline 7: def main():" in result.text
    assert result.text.startswith("[file_snippet src/pkg/app.py")


def test_several_roots(tree: Path, tmp_path: Path) -> None:
    second = tmp_path / "second"
    second.mkdir()
    (second / "other.txt").write_text("hello\n", encoding="utf-8")
    result = file_snippet([tree, second], "other.txt", 1, 1)
    assert result.ok and "1\thello" in result.text
    _refused(file_snippet([], "other.txt", 1, 1), "no file roots")
    _refused(file_snippet([tmp_path / "missing-root"], "x", 1, 1), "no file roots")


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
    fifo = tree / "pipe"
    os.mkfifo(fifo)
    start = time.monotonic()
    _refused(file_snippet([tree], "pipe", 1, 5), "not a regular file")
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("path", ["", "  ", "a\x00b", "x" * 5000])
def test_unusable_paths(tree: Path, path: str) -> None:
    _refused(file_snippet([tree], path, 1, 5))


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
    ("(unclosed", "bad regular expression"),
    ("[z-a]", "bad regular expression"),
    ("(a+)+$", "nested repeats"),
    (r"(\w+\s?)*x", "nested repeats"),
    (r"(x)\1", "backreferences"),
    ("a" * 300, "over the limit"),
    ("", "non-empty"),
    (".*a.*b.*c.*d.*e.*f.*g", "unbounded repeats"),
])
def test_bad_patterns_are_refused(tree: Path, pattern: str, why: str) -> None:
    _refused(grep("src/pkg/app.py", pattern, roots=[tree]), why)


def test_allowed_patterns(tree: Path) -> None:
    assert grep("src/pkg/app.py", r"(\d{1,3}\.){3}\d{1,3}", roots=[tree]).ok
    assert grep("src/pkg/app.py", r"line (1|2)\d*: pass", roots=[tree]).ok


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
