"""Rewrite ``src/memci/_patterns.py``, memci's regular expressions compiled ahead.

``python -m tests.patterns`` says whether the file is current (exit status 1 when not);
``python -m tests.patterns --write`` rewrites it from every expression of every memci
module (its lazy ones and those compiled at import) and those a build makes from values
(the tokenizer's, made from the running Python's Unicode tables).
``tests/test_patterns.py`` runs the check.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.inits import import_every_module, write_generated

FILE = Path(__file__).resolve().parents[1] / "src" / "memci" / "_patterns.py"


def asked() -> tuple[set[tuple[str, int]], bool]:
    """Every expression memci asks for, and whether every memci module imported."""
    import memci
    from memci import _lazy

    every = import_every_module()
    # A chat with a tool call, in English and Chinese, built with a question: the
    # expressions made from values (the tokenizer's) are asked for too.
    with tempfile.TemporaryDirectory() as folder, \
            memci.Engine.open(Path(folder) / "m.db", workers=0) as engine:
        session = engine.session("patterns")
        session.add({"role": "user", "content": "我们上周去了哪里？ Where did we go, é?"})
        session.add({"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "grep", "arguments": '{"pattern": "x"}'}}]})
        session.add({"role": "tool", "tool_call_id": "c1", "content": "src/a.py:1: x = 1"})
        session.add({"role": "user", "content": "What did I say about Lisbon yesterday?"})
        session.build()
    return set(_lazy.ASKED), every


def main(argv: list[str]) -> int:
    from memci import _lazy, _patterns

    wanted, every = asked()
    if "--write" in argv:
        return write_generated(FILE, _lazy.render_patterns(wanted), every)
    if _patterns.ENGINE != _lazy._ENGINE:
        print(f"{FILE} holds code of another regular expression engine "
              f"({_patterns.ENGINE}, this Python's {_lazy._ENGINE}): not checked")
        return 0
    have = set(_patterns.PATTERNS)
    # Without an extra, its modules' expressions are not asked for: only check those.
    fresh = _lazy.pattern_codes(wanted & have)
    changed = [key for key, code in fresh.items() if _patterns.PATTERNS[key] != code]
    if wanted - have or (every and have - wanted) or changed:
        print(f"{FILE} is not current ({len(wanted - have)} expressions missing, "
              f"{len(have - wanted)} unused, {len(changed)} compiled otherwise): run "
              "python -m tests.patterns --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
