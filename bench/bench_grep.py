"""Worst-case time of one ``grep`` call, on patterns that backtrack for ever in Python's re.

Run from the repository root::

    python bench/bench_grep.py                 # this checkout
    python bench/bench_grep.py --timeout 30    # give up on a call after 30 s (default 20)

Each case is one ``memci.tools._files.grep`` call with the default limits, run in its own
process (so a call that never ends can be stopped), over a file of one line of 2,000
characters or of 1,000,000: a run of ``a`` ending in ``!`` (the classic worst case for
backtracking), or random ``a``/``b``. The time is measured inside the process, around the
call. To measure another checkout, point ``PYTHONPATH`` at its ``src``.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from pathlib import Path

PATTERNS = [
    # issue 11 §2
    "a*a*a*c", "(a|aa)+$", "(a|a)+$", r"\w*\w*\w*\w*$x", "(a{1,10}){1,10}$",
    # others of the kind
    "(a+)+$", "(x+x+)+y", r"(\w+\s?)*$", "^(a|a?)+$", "(.*a){12}c", "(a|b|ab)*c",
    # RE2's own slowest measured: its DFA keeps running out of cache
    r"(?:a|b)*a(?:a|b){800}c",
]
LINES = [("run", 2_000), ("ab", 2_000), ("run", 1_000_000), ("ab", 1_000_000)]

CHILD = """
import sys, time
from memci.tools._files import grep
pattern, root, name = sys.argv[1:4]
start = time.perf_counter()
result = grep(name, pattern, roots=[root])
took = time.perf_counter() - start
print(f"{took:.3f}" if result.ok else "refused")
"""


def _line(kind: str, chars: int) -> str:
    if kind == "run":
        return "a" * (chars - 1) + "!"
    ab = bytes(ord("a") + (b & 1) for b in range(256))
    return random.Random(chars).randbytes(chars).translate(ab).decode("ascii")


def measure(root: Path, name: str, pattern: str, timeout: float) -> str:
    """Seconds one grep call took, ``refused``, or ``>timeout``."""
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, pattern, str(root), name],
                              capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return f">{timeout:g}"
    return done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds after which a call is stopped (default 20)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = []
        for kind, chars in LINES:
            name = f"{kind}-{chars}.txt"
            (root / name).write_text(_line(kind, chars) + "\n", encoding="utf-8")
            names.append(name)
        heads = [f"{kind} {chars:,}" for kind, chars in LINES]
        print("| pattern | " + " | ".join(heads) + " |")
        print("| --- |" + " ---: |" * len(heads))
        for pattern in PATTERNS:
            cells = [measure(root, name, pattern, args.timeout) for name in names]
            shown = pattern.replace("|", "\\|")  # a pipe would end the table cell
            print(f"| `{shown}` | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
