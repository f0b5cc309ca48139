"""Documents and code: chunking with line ranges, incremental indexing, progress, search."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from memci.errors import InvalidInputError
from memci.memory import DocIndex, chunk_markdown, chunk_python
from memci.store import SQLiteStore
from memci.text import chunk_blocks, chunk_text, rough_tokens

PYTHON = textwrap.dedent('''\
    """Module docstring about geese."""

    import os

    CONSTANT = 3


    @decorator
    def honk(times: int = 2) -> str:
        """Return a honk, repeated."""
        return "honk" * times


    class Flock:
        """A flock of geese."""

        size = 3

        def migrate(self, where: str) -> None:
            """Fly south."""
            print(where)

        async def land(self) -> None:
            pass
    ''')


def lines_of(text: str, start: int, end: int) -> str:
    return "\n".join(text.splitlines()[start - 1:end])


def test_python_chunks_by_ast() -> None:
    chunks = chunk_python(PYTHON, name="geese.py")
    by_symbol = {c.symbol: c for c in chunks if c.symbol}
    honk = by_symbol["honk"]
    assert honk.title == "def honk(times: int=2) -> str"
    assert (honk.start_line, honk.end_line) == (8, 11)  # the decorator is included
    assert "Return a honk" in honk.text
    assert by_symbol["Flock"].title == "class Flock"
    assert by_symbol["Flock"].start_line == 14
    for chunk in chunks:
        assert chunk.text == lines_of(PYTHON, chunk.start_line, chunk.end_line)
    assert chunks[0].text.startswith('"""Module docstring')


def test_large_class_is_split_into_methods() -> None:
    body = "\n".join(f"        x{i} = {i}  # filler line number {i}" for i in range(60))
    methods = "\n\n".join(f"    def method_{m}(self) -> int:\n        \"\"\"Method {m}.\"\"\"\n"
                          f"{body}\n        return {m}" for m in range(4))
    source = f"class Big:\n    \"\"\"Big class.\"\"\"\n\n{methods}\n"
    chunks = chunk_python(source, max_tokens=800)
    symbols = [c.symbol for c in chunks]
    assert "Big" in symbols
    assert "Big.method_0" in symbols and "Big.method_3" in symbols
    method = next(c for c in chunks if c.symbol == "Big.method_2")
    assert method.title == "def method_2(self) -> int"
    assert method.text == lines_of(source, method.start_line, method.end_line)
    assert all(rough_tokens(c.text) <= 800 + c.end_line - c.start_line for c in chunks)


def test_broken_python_falls_back_to_blocks() -> None:
    chunks = chunk_python("def broken(:\n    pass\n\nx = 1\n")
    assert chunks and chunks[0].start_line == 1


def test_markdown_by_headings_and_sizes() -> None:
    para = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 12
    doc = "# Guide\n\nIntro.\n\n## Install\n\n" + "\n\n".join([para] * 12) + (
        "\n\n```\n# not a heading\n```\n\n## Use\n\nRun it.\n")
    chunks = chunk_markdown(doc)
    assert chunks[0].title == "Guide"
    assert any(c.title == "Guide > Install" for c in chunks)
    assert all(rough_tokens(c.text) <= 800 + 30 for c in chunks)
    assert len(chunks) >= 3
    assert not any(c.title.endswith("not a heading") for c in chunks)
    for chunk in chunks:
        assert chunk.text == lines_of(doc, chunk.start_line, chunk.end_line)
    small = chunk_markdown("# A\n\none\n\n# B\n\ntwo\n")
    assert len(small) == 1  # small sections are packed together


def test_blocks_keep_braces_together() -> None:
    js = "function a() {\n  x();\n\n  y();\n}\n\nconst b = 2;\n"
    chunks = chunk_blocks(js, min_tokens=1, max_tokens=800)
    assert chunks[0].symbol == "a"
    assert chunks[0].start_line == 1
    assert chunks[0].end_line >= 5
    assert chunk_text("one\n\ntwo\n")[0].text == "one\n\ntwo"


def write_tree(root: Path) -> None:
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "guide.md").write_text("# Guide\n\nHow to configure the flux "
                                            "capacitor.\n", encoding="utf-8")
    (root / "notes.txt").write_text("Remember the milk and the eggs.\n", encoding="utf-8")
    (root / "geese.py").write_text(PYTHON, encoding="utf-8")
    (root / "app.js").write_text("function launchRocket() {\n  return 1;\n}\n",
                                 encoding="utf-8")
    (root / "image.png").write_bytes(b"\x89PNG\x00\x00")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.md").write_text("# hidden\n", encoding="utf-8")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("x\n", encoding="utf-8")


def test_incremental_indexing_and_progress(store: SQLiteStore, tmp_path: Path) -> None:
    root = tmp_path / "project"
    write_tree(root)
    index = DocIndex(store, embedder=None)
    calls: list[tuple[int, int, str]] = []
    report = index.index_path(root, progress=lambda d, t, p: calls.append((d, t, p)))
    assert report.files_seen == 4 and report.files_indexed == 4
    assert [c[0] for c in calls] == [1, 2, 3, 4]
    assert all(c[1] == 4 for c in calls)
    assert {Path(c[2]).name for c in calls} == {"guide.md", "notes.txt", "geese.py", "app.js"}

    again = index.index_path(root)
    assert again.files_indexed == 0 and again.files_unchanged == 4

    notes = root / "notes.txt"
    notes.write_text("Remember the oat milk and bread.\n", encoding="utf-8")
    changed = index.index_path(root)
    assert changed.files_indexed == 1 and changed.files_unchanged == 3
    assert index.search_docs("oat")[0].path == str(notes)
    assert index.search_docs("eggs") == []

    stat = notes.stat()
    os.utime(notes, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10_000_000))
    touched = index.index_path(root)  # same content: the hash says unchanged
    assert touched.files_indexed == 0

    (root / "app.js").unlink()
    removed = index.index_path(root)
    assert removed.files_removed == 1
    assert index.search_docs("launchRocket") == []
    assert len(index.files()) == 3


def test_search_docs_kinds_and_snippets(store: SQLiteStore, tmp_path: Path) -> None:
    root = tmp_path / "project"
    write_tree(root)
    index = DocIndex(store, embedder=None)
    index.index_path(root)
    hit = index.search_docs("flux capacitor")[0]
    assert hit.path.endswith("guide.md") and hit.kind == "markdown"
    assert hit.snippet_args == {"path": hit.path, "start": 1, "length": 3}
    code = index.search_docs("migrate south", kind="code")
    assert code[0].symbol in ("Flock", "Flock.migrate")
    assert code[0].start_line >= 14
    assert index.search_docs("migrate south", kind="doc") == []
    assert index.search_docs("launchRocket", kind="code")[0].path.endswith("app.js")
    assert index.search_docs('"; DROP') == []
    with pytest.raises(InvalidInputError):
        index.search_docs("x", kind="video")
    with pytest.raises(InvalidInputError):
        index.index_path(tmp_path / "missing")


def test_single_file_and_chinese(store: SQLiteStore, tmp_path: Path) -> None:
    doc = tmp_path / "旅行.md"
    doc.write_text("# 北京\n\n保利剧院位于东城区，常年上演话剧。\n", encoding="utf-8")
    index = DocIndex(store, embedder=None)
    assert index.index_path(doc).files_indexed == 1
    assert index.search_docs("剧院")[0].path == str(doc)
