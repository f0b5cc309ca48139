"""Figures the docs quote, each produced by a command: find them, check them, rewrite them.

A deterministic figure in ``README.md`` or ``docs/`` (token counts, shares of a replay,
tool counts, an example's output) sits inside a marker that names the command producing
it and how to read the figure from that command's output::

    memci sends <!-- figure: memci replay examples/agent_trace.json --budget 4000 --json
    | percent totals.saved_share -->3.6%<!-- /figure --> fewer tokens

A file may name a command once, ``<!-- figure-source trace: memci replay … --json -->``,
and its figures then say ``<!-- figure: trace | … -->``. Commands run from the project's
root with this tree's ``src`` first on ``PYTHONPATH``; ``memci`` and ``python`` run
under this interpreter; each command runs once per check. The readers of an output:

- ``stdout``: the whole output (a table a bench prints, say);
- ``console``: a fenced block of ``$ COMMAND`` and its output (an example's transcript);
- ``value PATH [DIGITS]``: a number of the JSON output at a dotted path
  (``totals.requests``), with thousands separators (a fraction: ``DIGITS`` decimals, 0
  unless given);
- ``percent PATH [DIGITS]``: a share of the JSON output as a percentage (one decimal);
- ``percent-off PATH [DIGITS]``: ``1 - share`` as a percentage (what a ratio saves).

Timings are not figures of this kind: they are recorded with their machine and date.

Run ``python -m tests.docfigures`` to list the figures that differ from their commands
(exit status 1 when one does), and ``python -m tests.docfigures --write`` to rewrite
them all (after a change that moves them, e.g. a rework of the builder).
``tests/test_docfigures.py`` runs the check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))

FIGURE = re.compile(r"<!-- figure: (?P<spec>.*?) -->(?P<text>.*?)<!-- /figure -->", re.S)
SOURCE = re.compile(r"<!-- figure-source (?P<name>[\w.-]+): (?P<command>.*?) -->", re.S)
_TIMEOUT = 900  # seconds a command may take (the slowest, a bench, takes well under one)


@dataclass(frozen=True)
class Figure:
    """One marked figure: where it is, what it says, what produces it."""

    path: Path
    line: int
    command: str
    reader: str
    args: tuple[str, ...]
    text: str
    start: int
    end: int

    @property
    def where(self) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{shown}:{self.line}"


def _argv(command: str) -> list[str]:
    words = shlex.split(command)
    if words[0] == "memci":
        return [sys.executable, "-m", "memci", *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    return words


@cache
def output(command: str) -> str:
    """The standard output of ``command`` run from the project's root (run once)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                      env.get("PYTHONPATH")]))
    env["COLUMNS"] = "100"
    done = subprocess.run(_argv(command), cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=_TIMEOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"`{command}` exited with {done.returncode}:\n{done.stderr}")
    return done.stdout


def _at(data: Any, path: str) -> Any:
    for key in path.split("."):
        data = data[int(key)] if isinstance(data, list) else data[key]
    return data


def _number(value: Any, digits: Sequence[str]) -> str:
    """``value`` with ``digits`` decimals (0 by default); negative: rounded to tens, ...

    The LoCoMo prefix bench's mean request (about 4,940 tokens over 718 requests) came
    out half a token lower in 2 of about 10 runs on a loaded machine (cause not found
    yet): ``-1`` quotes it to ten.
    """
    if isinstance(value, int):
        return f"{value:,}"
    places = int(digits[0]) if digits else 0
    if places < 0:
        return f"{round(value, places):,.0f}"
    return f"{value:,.{places}f}"


def _percent(share: float, digits: Sequence[str]) -> str:
    places = int(digits[0]) if digits else 1
    return f"{100 * share:.{places}f}%"


READERS: dict[str, Callable[[str, str, Sequence[str]], str]] = {
    "stdout": lambda command, out, args: out.strip("\n"),
    "console": lambda command, out, args: f"```\n$ {command}\n{out.rstrip()}\n```",
    "value": lambda command, out, args: _number(_at(json.loads(out), args[0]), args[1:]),
    "percent": lambda command, out, args: _percent(_at(json.loads(out), args[0]), args[1:]),
    "percent-off": lambda command, out, args: _percent(
        1 - _at(json.loads(out), args[0]), args[1:]),
}


def figures(path: Path) -> list[Figure]:
    """The marked figures of one file, in order."""
    text = path.read_text(encoding="utf-8")
    named = {m["name"]: " ".join(m["command"].split()) for m in SOURCE.finditer(text)}
    found = []
    for match in FIGURE.finditer(text):
        spec = " ".join(match["spec"].split())
        source, _, read = spec.rpartition(" | ")
        if not source:
            raise ValueError(f"{path}: figure {spec!r} names no reader ('COMMAND | READER')")
        reader, *args = read.split()
        if reader not in READERS:
            raise ValueError(f"{path}: figure {spec!r}: unknown reader {reader!r}; known: "
                             f"{', '.join(READERS)}")
        found.append(Figure(path, text.count("\n", 0, match.start()) + 1,
                            named.get(source, source), reader, tuple(args), match["text"],
                            match.start("text"), match.end("text")))
    return found


def expected(figure: Figure) -> str:
    """What the figure's command says it is, in the figure's own surrounding whitespace."""
    value = READERS[figure.reader](figure.command, output(figure.command), figure.args)
    lead = figure.text[:len(figure.text) - len(figure.text.lstrip())]
    trail = figure.text[len(figure.text.rstrip()):]
    return f"{lead}{value}{trail}"


def check(paths: Iterable[Path] = DOCS) -> list[tuple[Figure, str]]:
    """Every figure that differs from its command, with what the command gives."""
    return [(f, want) for path in paths for f in figures(path)
            if (want := expected(f)) != f.text]


def write(paths: Iterable[Path] = DOCS) -> list[Figure]:
    """Rewrite every figure from its command; return those that changed."""
    changed = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for figure in reversed(figures(path)):  # from the end: offsets stay right
            want = expected(figure)
            if want != figure.text:
                text = text[:figure.start] + want + text[figure.end:]
                changed.append(figure)
        path.write_text(text, encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--write", action="store_true",
                        help="rewrite every figure from its command")
    parser.add_argument("files", nargs="*", type=Path,
                        help="Markdown files (default: README.md and docs/)")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.files] or list(DOCS)
    if args.write:
        for figure in write(paths):
            print(f"{figure.where}: rewritten ({figure.command} | {figure.reader})")
        return 0
    stale = check(paths)
    for figure, want in stale:
        print(f"{figure.where}: the doc says {figure.text.strip()!r}, "
              f"`{figure.command}` gives {want.strip()!r}")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
