"""What memci's own tools cost a request: their schemas and the tool contract, by situation.

Run: python bench/bench_tool_overhead.py            (a table)
     python bench/bench_tool_overhead.py --markdown (the table docs/context.md quotes)

Real sessions are built in a temporary store, one per situation, counted with cl100k_base
as the builder counts them: ``ctx.stats.sections["tools"]`` (memci's schemas) and the tool
contract (the system segment; these sessions have no system prompt). The agent's own tools
are not memci's and are left out.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

import memci

_WORDS = "the quarterly report needs figures for every region before friday " * 6
_LONG = "".join(f"line {i}: collected test_mod_{i}.py PASSED\n" for i in range(80))


def _chat(s: memci.Session, turns: int) -> None:
    for i in range(turns):
        s.add({"role": "user", "content": f"question {i}: {_WORDS}"})
        s.add({"role": "assistant", "content": f"answer {i}: {_WORDS}"})
    s.add({"role": "user", "content": "and now?"})


def _tool(s: memci.Session, call_id: str, output: str) -> None:
    s.add({"role": "assistant", "content": None, "tool_calls": [{
        "id": call_id, "type": "function",
        "function": {"name": "run_tests", "arguments": "{}"}}]})
    s.add({"role": "tool", "tool_call_id": call_id, "content": output})


SITUATIONS: list[tuple[str, Callable[[memci.Session], object]]] = [
    ("chat, history sent as stored", lambda s: _chat(s, 2)),
    ("chat, history out of the window", lambda s: _chat(s, 60)),
    ("tool loop, history sent as stored", lambda s: (_chat(s, 1), _tool(s, "c1", _LONG))),
    ("tool loop, an output shown in part (memci shapes)",
     lambda s: (_chat(s, 1), _tool(s, "c1", _LONG * 8))),
    ("tool loop, outputs shown whole, history out of the window",
     lambda s: (_chat(s, 60), _tool(s, "c1", "ok"))),
    ("tool loop, an output shown in part, history out of the window",
     lambda s: (_chat(s, 60), _tool(s, "c1", _LONG))),
]


def measure() -> list[tuple[str, list[str], int, int]]:
    """Per situation: the tools offered, their schemas' tokens, the contract's tokens."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        engine = memci.Engine.open(Path(tmp) / "m.db")
        for number, (label, fill) in enumerate(SITUATIONS):
            s = engine.session(f"s{number}", tokenizer="cl100k_base")
            fill(s)
            ctx = s.build(budget=8000)
            names = [t.name for t in ctx.tools if not t.agent]
            rows.append((label, names, ctx.stats.sections["tools"],
                         ctx.stats.sections["system"]))
        engine.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    markdown = parser.parse_args().markdown
    rows = measure()
    if markdown:
        print("| situation | memci's tools offered | schemas | contract | total |")
        print("| --- | --- | ---: | ---: | ---: |")
    for label, names, tools, contract in rows:
        shown = ", ".join(f"`{n}`" if markdown else n for n in names) or "none"
        if markdown:
            print(f"| {label} | {shown} | {tools:,} | {contract:,} | {tools + contract:,} |")
        else:
            print(f"{label:42} {tools:>6,} + {contract:>4,} = {tools + contract:>6,}  {shown}")


if __name__ == "__main__":
    main()
