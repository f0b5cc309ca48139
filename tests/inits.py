"""Rewrite ``src/memci/_inits.py``, the ``__init__`` of memci's dataclasses compiled ahead.

``python -m tests.inits`` says whether the file is current (exit status 1 when not);
``python -m tests.inits --write`` rewrites it from every dataclass of every memci module.
``tests/test_dataclasses.py`` runs the check.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

FILE = Path(__file__).resolve().parents[1] / "src" / "memci" / "_inits.py"


def import_every_module() -> bool:
    """Import every memci module; whether each imported (not: an extra is not installed)."""
    import memci

    every = True
    for module in pkgutil.walk_packages(memci.__path__, "memci."):
        if module.name.endswith(".__main__"):  # runs the command line
            continue
        try:
            importlib.import_module(module.name)
        except ImportError:  # an extra not installed: its classes are compiled at import
            every = False
    return every


def write_generated(file: Path, text: str, every: bool) -> int:
    """Write a generated file's ``text`` (``--write``), once every module imported."""
    if not every:
        print("a memci module did not import (an extra missing): install the dev "
              "extra first", file=sys.stderr)
        return 1
    file.write_text(text, encoding="utf-8")
    print(f"rewrote {file}")
    return 0


def texts() -> tuple[set[str], bool]:
    """Every text this tree's classes compile, and whether every memci module imported."""
    from memci import _dataclasses

    every = import_every_module()
    return set(_dataclasses.TEXTS), every


def main(argv: list[str]) -> int:
    from memci import _dataclasses
    from memci._inits import INITS

    wanted, every = texts()
    if "--write" in argv:
        return write_generated(FILE, _dataclasses.render_inits(wanted), every)
    have = set(INITS)
    # Without an extra, its modules' classes are not made here: only check those made.
    if wanted - have or (every and have - wanted):
        print(f"{FILE} is not current ({len(wanted - have)} texts missing, "
              f"{len(have - wanted)} unused): run python -m tests.inits --write",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
