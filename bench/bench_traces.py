"""Seed 004's acceptance on real agent traces (../shared/data/traces/*.traj.json).

Run: python bench/bench_traces.py
     python bench/bench_traces.py --markdown   (the table docs/benchmarks.md quotes)
     python bench/bench_traces.py --traces FILE... --one-user --markdown
         (other mini-swe-agent traces, e.g. held out, as the tasks of one user)

Each trace is replayed with a 128k window (the budget never binds), building before every
assistant message, and checked. By default each trace has a store of its own; with
``--one-user`` the traces are the tasks of one user in one store, replayed in the order
given (one session each), as an agent working through issues one after another; issue
22 asks that a task's requests then carry no memory of the user's other tasks, which the
table reports (requests with a memory line from another session), with whether the
notebook is in every request once it has entries.

1. per-request tokens do not grow with the number of tool calls: mean of the last ten
   requests <= 1.3 x mean of requests 10-19;
2. on average memci sends at most half the tokens of the full history;
3. once memci shapes the requests (while the whole history is cheap enough it is sent as
   stored, tool outputs raw: the requests before the ``shaped`` event, counted apart), the
   newest tool output is visible (its head with a structured summary and its pointer, or
   all of it when it is short) and no older tool output is replayed raw;
4. every artifact:<id> in any request resolves with artifact_get to the exact original;
5. pins, notebook and fastmemo stay within their limits and every entry has a source.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memci
from _histories import SHARED, trace

POINTER = re.compile(r"artifact:([0-9a-f]{12,})")


def read_whole(session: memci.Session, aid: str) -> str:
    out, offset = [], 0
    while True:
        chunk = session.call_tool("artifact_get", {"id": aid, "offset": offset, "length": 16_000})
        out.append(chunk)
        if len(chunk) < 16_000:
            return "".join(out)
        offset += len(chunk)


MEMORY_LINE = re.compile(r"^- \[[^\]\n]*· ([^·\]\n]+)#p\d+/\d+\]", re.MULTILINE)


def run(path: Path, tmp: Path, user: memci.Engine | None = None) -> dict[str, Any]:
    """Replay one trace and check it: in a store of its own, or in ``user``'s store."""
    if user is None:
        with memci.Engine.open(tmp / f"{path.name}.db", synchronous="NORMAL") as eng:
            return _replay(path, eng.session(path.name, context_window=128_000))
    return _replay(path, user.session(path.name, user="u", context_window=128_000))


def _replay(path: Path, s: memci.Session) -> dict[str, Any]:
    messages = trace(path)
    sent: list[int] = []
    full: list[int] = []
    raw_seen = 0
    newest_ok = 0
    tool_requests = 0
    pointers: set[str] = set()
    whole = 0  # requests that carried the history as stored, before memci shaped them
    others = 0  # requests with a memory line of another session (another task)
    noted = 0  # requests once the notebook has entries, and of them those that show it
    notebook = 0
    for m in messages:
        if m["role"] == "assistant" and len(s.messages()) > 0:
            had_notes = bool(s.export_state()["notebook"])
            ctx = s.build()
            sent.append(ctx.stats.total_tokens)
            full.append(ctx.stats.full_tokens)
            text = "\n".join(x.content for x in ctx.messages)
            others += any(source.strip() != s.name for source in MEMORY_LINE.findall(text))
            if had_notes:
                noted += 1
                notebook += "## Notebook" in text
            if whole == len(sent) - 1 and "shaped" not in ctx.stats.events:
                whole += 1
                s.add(m)
                continue
            shown = [x for x in ctx.messages if x.role == "tool"]
            stored = {x.seq: x.content for x in s.messages() if x.role == "tool"}
            for x in shown[:-1]:
                original = stored[x.seq]
                if len(original) > 400 and original[100:400] in x.content:
                    raw_seen += 1
            if shown and s.messages()[-1].role == "tool":
                tool_requests += 1
                newest = shown[-1].content
                shown_out = "--- output" in newest or "· complete]" in newest
                if shown_out and POINTER.search(newest):
                    newest_ok += 1
            for x in ctx.messages:
                pointers.update(POINTER.findall(x.content))
        s.add(m)
    originals = {x.content for x in s.messages() if x.role == "tool"}
    resolved = sum(1 for aid in pointers if read_whole(s, aid) in originals)
    state = s.export_state()
    limits = state["limits"]
    within = (len(state["pins"]) <= limits["pins_max"]
              and len(state["notebook"]) <= limits["notebook_max"]
              and all(len(v) <= limits["fastmemo_section_max"]
                      for v in state["fastmemo"].values()))
    sourced = all(e.get("source") for e in state["pins"] + state["notebook"])
    sourced = sourced and all(e.get("source") for v in state["fastmemo"].values() for e in v)
    growth = statistics.mean(sent[-10:]) / statistics.mean(sent[9:19])
    return {
        "trace": path.name, "tool_calls": sum(1 for m in messages if m["role"] == "tool"),
        "requests": len(sent), "growth": growth,
        "mean_share": statistics.mean(a / b for a, b in zip(sent, full, strict=True)),
        "total_share": sum(sent) / sum(full), "mean_sent": statistics.mean(sent),
        "last10": statistics.mean(sent[-10:]), "req10_19": statistics.mean(sent[9:19]),
        "newest_ok": f"{newest_ok}/{tool_requests}", "raw_older": raw_seen, "whole": whole,
        "pointers": len(pointers), "resolved": resolved, "limits_ok": within,
        "sourced": sourced, "others": others, "notebook": f"{notebook}/{noted}",
    }


def markdown(results: list[dict[str, Any]], *, one_user: bool = False) -> str:
    """The results as the table of docs/benchmarks.md (every figure deterministic).

    ``one_user``: with the columns of the tasks of one user (other tasks' memory, notebook).
    """
    extra = (" requests with another task's memory | notebook once it has entries |",
             " ---: | ---: |") if one_user else ("", "")
    lines = ["| trace | tool calls | last 10 / requests 10-19 (≤ 1.3x) | memci / full, mean per "
             "request (≤ 50%) | over all requests | sent as stored | newest output shown "
             "| older output raw | pointers resolved exactly | limits and sources |" + extra[0],
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |" + extra[1]]
    for r in results:
        ok = "ok" if r["limits_ok"] and r["sourced"] else "FAILED"
        lines.append(
            f"| {r['trace'].removesuffix('.traj.json')} | {r['tool_calls']} "
            f"| {r['growth']:.2f}x ({r['last10']:,.0f} / {r['req10_19']:,.0f}) "
            f"| {100 * r['mean_share']:.1f}% | {100 * r['total_share']:.1f}% "
            f"| {r['whole']} | {r['newest_ok']} | {r['raw_older']} "
            f"| {r['resolved']}/{r['pointers']} | {ok} |"
            + (f" {r['others']} | {r['notebook']} |" if one_user else ""))
    return "\n".join(lines)


def describe(r: dict[str, Any]) -> str:
    return "\n".join([
        f"{r['trace']}: {r['tool_calls']} tool calls, {r['requests']} requests",
        f"  growth last10 / req10-19: {r['growth']:.2f}x "
        f"({r['last10']:.0f} / {r['req10_19']:.0f} tokens)",
        f"  memci / full history: mean per request {100 * r['mean_share']:.1f}%, "
        f"over all requests {100 * r['total_share']:.1f}% "
        f"(mean {r['mean_sent']:.0f} tokens per request)",
        f"  requests sent as stored before memci shaped them: {r['whole']}",
        f"  then newest tool output shown with head+summary+pointer: {r['newest_ok']}; "
        f"older outputs replayed raw: {r['raw_older']}",
        f"  artifact pointers: {r['pointers']}, resolved exactly: {r['resolved']}",
        f"  pins/notebook/fastmemo within limits: {r['limits_ok']}; "
        f"every entry has a source: {r['sourced']}",
        f"  requests with a memory line of another session: {r['others']}; "
        f"notebook shown once it has entries: {r['notebook']}"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--markdown", action="store_true",
                        help="print the results as one Markdown table")
    parser.add_argument("--traces", nargs="+", type=Path, metavar="FILE",
                        help="mini-swe-agent trace files (default ../shared/data/traces/"
                             "*.traj.json)")
    parser.add_argument("--one-user", action="store_true",
                        help="replay the traces in the order given as the tasks of one user "
                             "in one store (default: a store for each)")
    args = parser.parse_args()
    paths = args.traces or sorted((SHARED / "traces").glob("*.traj.json"))
    with tempfile.TemporaryDirectory() as d:
        if args.one_user:
            with memci.Engine.open(Path(d) / "user.db", synchronous="NORMAL") as user:
                results = [run(path, Path(d), user) for path in paths]
        else:
            results = [run(path, Path(d)) for path in paths]
    print(markdown(results, one_user=args.one_user) if args.markdown
          else "\n".join(map(describe, results)))


if __name__ == "__main__":
    main()
