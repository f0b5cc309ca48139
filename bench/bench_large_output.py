"""One very large tool output: time to add it, peak memory, build time after it, bytes stored.

Run: python bench/bench_large_output.py [--mb 50] [--builds 5] [--src PATH]

``--src`` runs the cases against another checkout's ``src`` (e.g. the main branch's, for a
before/after comparison).

Each case runs in a fresh subprocess so its peak RSS (``resource.getrusage``) is its own:
a session gets a user message and a tool call, then one tool result of ``--mb`` MB of log
lines (``max_message_bytes`` raised to let it in). The figures: the time of that ``add``;
the process's peak RSS; what the ``add`` itself needed beyond the output already in
memory (Linux: the peak RSS is reset through ``/proc/self/clear_refs`` just before, and
``VmHWM`` read after); the median of ``--builds`` builds while the output is the newest
message (tool-loop recipe) and after a short assistant and user turn (chat recipe), one
build after reopening the store; and the bytes on disk (database with its WAL, and the
artifact files).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASE = textwrap.dedent("""
    import gc, json, os, resource, statistics, sys, time
    from pathlib import Path
    import memci

    def status(field):
        for row in Path("/proc/self/status").read_text().splitlines():
            if row.startswith(field + ":"):
                return int(row.split()[1]) / 1024
        return 0.0

    folder, mb, builds = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    line = "2024-05-01T12:00:00Z INFO worker[{i}]: processed batch {i} in 12 ms, ok\\n"
    parts, size, i = [], 0, 0
    while size < mb * 1_000_000:
        text = line.format(i=i)
        parts.append(text)
        size += len(text)
        i += 1
    output = "".join(parts)
    del parts
    gc.collect()
    with memci.Engine.open(folder / "big.db") as eng:
        s = eng.session("big", max_message_bytes=4 * mb * 1_000_000)
        s.add({"role": "user", "content": "run the batch job and show me the log"})
        s.add({"role": "assistant", "content": None, "tool_calls": [{"id": "c1",
               "type": "function", "function": {"name": "run", "arguments": "{}"}}]})
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        before = status("VmRSS")
        started = time.perf_counter()
        s.add({"role": "tool", "tool_call_id": "c1", "content": output})
        add_s = time.perf_counter() - started
        add_extra = status("VmHWM") - before
        del output
        loop = []
        for _ in range(builds):
            started = time.perf_counter()
            s.build()
            loop.append((time.perf_counter() - started) * 1000)
        chat = []
        for r in range(builds):
            s.add({"role": "assistant", "content": f"the batch ran, step {r}"})
            s.add({"role": "user", "content": f"what next {r}?"})
            started = time.perf_counter()
            s.build()
            chat.append((time.perf_counter() - started) * 1000)
    with memci.Engine.open(folder / "big.db") as eng:
        s = eng.session("big")
        started = time.perf_counter()
        s.build()
        reopen = (time.perf_counter() - started) * 1000
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    db_bytes = sum(p.stat().st_size for p in folder.glob("big.db*"))
    art = folder / "big-artifacts"
    file_bytes = sum(p.stat().st_size for p in art.rglob("*") if p.is_file()) if art.exists() else 0
    print(json.dumps({"mb": mb, "add_s": round(add_s, 2),
                      "peak_rss_mb": round(peak / 1024), "add_extra_mb": round(add_extra),
                      "build_tool_loop_ms": round(statistics.median(loop), 1),
                      "build_chat_ms": round(statistics.median(chat), 1),
                      "build_after_reopen_ms": round(reopen, 1),
                      "db_mb": round(db_bytes / 1e6, 1), "files_mb": round(file_bytes / 1e6, 1)}))
""")


def run_case(mb: int, builds: int, src: Path = ROOT / "src") -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(src)}
        env.pop("MEMCI_LLM_BASE_URL", None)
        done = subprocess.run([sys.executable, "-c", CASE, tmp, str(mb), str(builds)],
                              capture_output=True, text=True, env=env, check=True)
        result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, nargs="*", default=[50])
    parser.add_argument("--builds", type=int, default=5)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    args = parser.parse_args()
    for mb in args.mb:
        print(json.dumps(run_case(mb, args.builds, args.src.resolve())), flush=True)


if __name__ == "__main__":
    main()
