"""The runnable examples under examples/ run as scripts, offline, and the docs show them.

``examples/agent_loop.py`` is the whole agent loop of docs/agents.md (sync and async,
the agent's own tool and memci's) against a fake model server it starts itself; the
loop's code in docs/agents.md is the example's, word for word, so the two cannot drift.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "agent_loop.py"


def test_the_agent_loop_example_runs_offline_as_a_script(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "assistant: It is sunny in Paris, 21 °C."
    # memci's search_memory found what the user said long before, out of the window now.
    assert lines[3] == ("assistant: It is sunny in Rome, 21 °C. You told me your favourite "
                        "city is Lisbon.")
    assert lines[-2] == "async answers are the same: True"
    assert lines[-1] == "tools the model called: get_weather, search_memory"
    assert list(tmp_path.iterdir()) == []  # its stores lived in a temporary folder


def test_docs_show_the_examples_loop_word_for_word() -> None:
    docs = (ROOT / "docs" / "agents.md").read_text(encoding="utf-8")
    source = EXAMPLE.read_text(encoding="utf-8")
    tree = ast.parse(source)
    shown = {"run_tool", "turn", "arun_tool", "aturn"}
    found = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in shown:
            code = ast.get_source_segment(source, node)
            assert code is not None and code in docs, f"docs/agents.md lacks {node.name}"
            found.add(node.name)
    assert found == shown
