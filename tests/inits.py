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


def current() -> str:
    """The file's text as this tree's classes need it (every memci module imported)."""
    import memci
    from memci import _dataclasses

    for module in pkgutil.walk_packages(memci.__path__, "memci."):
        if module.name.endswith(".__main__"):  # runs the command line
            continue
        try:
            importlib.import_module(module.name)
        except ImportError:  # an extra not installed: its classes are compiled at import
            continue
    return _dataclasses.render_inits(_dataclasses.TEXTS)


def main(argv: list[str]) -> int:
    wanted = current()
    if FILE.read_text(encoding="utf-8") == wanted:
        return 0
    if "--write" in argv:
        FILE.write_text(wanted, encoding="utf-8")
        print(f"rewrote {FILE}")
        return 0
    print(f"{FILE} is not current: run python -m tests.inits --write", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
