"""Docs that cannot drift: every figure they quote is what its command gives today.

See ``tests/docfigures.py`` for the markers and ``python -m tests.docfigures --write`` to
bring the docs up to date after a change that moves a figure.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import docfigures

from .conftest import SHARED_DATA

_NEEDS_SHARED = "../shared/"
# What quotes a replay's or a bench's figure in prose: "53.5% fewer", "saved 1,234"...
_QUOTED = re.compile(r"\d[\d,.]*\s?%\)?\s+(fewer|lower|less|saved|smaller)\b"
                     r"|saved (?>\d[\d,.]*)(?!\s?-?[\d.]*\s?m?s\b)"
                     r"|\d[\d,.]* tokens? against")


def _all() -> list[docfigures.Figure]:
    return [f for path in docfigures.DOCS for f in docfigures.figures(path)]


def test_every_figure_is_what_its_command_gives() -> None:
    figures = _all()
    assert len(figures) >= 25  # README, context, benchmarks, MCP and tracing examples
    runnable = [f for f in figures
                if SHARED_DATA.exists() or _NEEDS_SHARED not in f.command]
    stale = [(f, want) for f in runnable if (want := docfigures.expected(f)) != f.text]
    assert not stale, "\n".join(
        f"{f.where}: the doc says {f.text.strip()!r}, `{f.command}` gives "
        f"{want.strip()!r}" for f, want in stale) + (
        "\nrun `python -m tests.docfigures --write` to update the docs")
    if len(runnable) < len(figures):
        pytest.skip(f"{len(figures) - len(runnable)} figures need {SHARED_DATA}")


def test_markers_are_whole_and_never_start_a_line() -> None:
    for path in docfigures.DOCS:
        text = path.read_text(encoding="utf-8")
        found = docfigures.figures(path)
        assert text.count("<!-- figure:") == len(found) == text.count("<!-- /figure -->"), \
            path
        for figure in found:
            inline = "\n" not in figure.text
            line_start = text.rfind("\n", 0, figure.start) + 1
            opening = text[line_start:figure.start]
            # Markdown ends a paragraph at a line that starts with an HTML comment
            assert not (inline and opening.startswith("<!--")), figure.where
        sources = set(docfigures.SOURCE.findall(text))
        used = {f.command for f in found}
        for name, command in sources:
            assert " ".join(command.split()) in used, f"{path}: source {name} is unused"


def test_no_replay_figure_is_quoted_without_its_marker() -> None:
    for path in docfigures.DOCS:
        text = docfigures.FIGURE.sub("FIGURE", path.read_text(encoding="utf-8"))
        for number, line in enumerate(text.splitlines(), start=1):
            assert not _QUOTED.search(line), (
                f"{path.name}:{number} quotes a figure without a marker naming its command "
                f"(see tests/docfigures.py): {line.strip()}")


def test_a_stale_figure_is_reported_and_rewritten(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    command = "python -c \"import json; print(json.dumps({'n': 1234, 'r': 0.25}))\""
    doc.write_text(
        f"<!-- figure-source out: {command} -->\n\n"
        "Seen <!-- figure: out | value n -->1,234<!-- /figure --> times, a share of\n"
        "only <!-- figure: out | percent r -->31.0%<!-- /figure --> and a saving of\n"
        "<!-- figure: out | percent-off r 0 -->75%<!-- /figure -->.\n\n"
        "<!-- figure: python -c \"print('a'); print('b')\" | console -->\n"
        "```\n$ old\nold output\n```\n<!-- /figure -->\n", encoding="utf-8")
    stale = docfigures.check([doc])
    assert [(f.reader, want.strip()) for f, want in stale] == [
        ("percent", "25.0%"),
        ("console", "```\n$ python -c \"print('a'); print('b')\"\na\nb\n```")]
    assert docfigures.main([str(doc)]) == 1
    assert [f.reader for f in docfigures.write([doc])] == ["console", "percent"]
    assert docfigures.check([doc]) == []
    text = doc.read_text(encoding="utf-8")
    assert "only <!-- figure: out | percent r -->25.0%<!-- /figure --> and" in text
    assert "```\n$ python" in text and "<!-- /figure -->\n" in text
    with pytest.raises(ValueError, match="unknown reader 'guess'"):
        doc.write_text("<!-- figure: python -V | guess -->1<!-- /figure -->")
        docfigures.figures(doc)
