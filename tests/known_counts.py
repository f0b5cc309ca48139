"""Rewrite ``src/memci/tokens/_known.py``, memci's tool schemas counted ahead.

``python -m tests.known_counts`` says whether the file is current (exit status 1 when
not); ``python -m tests.known_counts --write`` rewrites it: the estimate's count of the
schemas' JSON text of every set of memci's tools a build may offer on its own
(``tools="auto"``, each strategy, with and without file roots, each state of the session,
and what a small budget keeps of each). ``tests/test_known_counts.py`` runs the check.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

FILE = Path(__file__).resolve().parents[1] / "src" / "memci" / "tokens" / "_known.py"


def schema_texts() -> list[str]:
    """The JSON text of every set of memci's tools a build may offer on its own."""
    from memci._session import every_tool
    from memci.context._settings import STRATEGIES, SessionSettings
    from memci.context._system import KEEP_ORDER, offered_tools

    texts: dict[str, None] = {}
    for strategy, roots in itertools.product(STRATEGIES, ((), ("/srv",))):
        settings = SessionSettings(strategy=strategy, file_roots=roots, max_messages=10)
        every = [tool.spec for tool in every_tool(settings).values()]
        for results, hides, left_out in itertools.product((False, True), repeat=3):
            offered = offered_tools(every, auto=True, file_roots=bool(roots),
                                    has_tool_results=results, hides_output=hides,
                                    left_out=left_out)
            for keep in (None, *KEEP_ORDER):
                specs = [s for s in offered if keep is None or s.name in keep]
                if specs:
                    texts[json.dumps([s.to_openai() for s in specs])] = None
    return list(texts)


def render(texts: list[str]) -> str:
    """The module's text: each schema set's key and its count."""
    from memci.tokens import estimate_tokens
    from memci.tokens._ahead import text_key

    lines = [f'    "{text_key(text)}": {estimate_tokens(text)},' for text in texts]
    return ('"""memci\'s tool schemas counted ahead by the estimate: generated, do not edit.\n'
            "\n"
            "``python -m tests.known_counts --write`` rewrites it (see "
            ":mod:`memci.tokens._ahead`).\n"
            '"""\n'
            "\n"
            "COUNTS: dict[str, int] = {\n" + "\n".join(sorted(lines)) + "\n}\n")


def main(argv: list[str]) -> int:
    text = render(schema_texts())
    if "--write" in argv:
        FILE.write_text(text, encoding="utf-8")
        print(f"rewrote {FILE}")
        return 0
    if FILE.read_text(encoding="utf-8") != text:
        print(f"{FILE} is not current (memci's tool schemas changed): run "
              "python -m tests.known_counts --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
