"""What the request holds: memci against three baselines on long real conversations.

Run:  python bench/bench_evidence.py                      (all development data, ~6 min)
      python bench/bench_evidence.py --feed live bulk     (memci fed both ways, ~10 min)
      python bench/bench_evidence.py --quick              (a subset, ~1 min)
      python bench/bench_evidence.py --embedder sentence-transformers:all-MiniLM-L6-v2
          (memci with dense retrieval too, beside the default; needs memci[embeddings])
      python bench/bench_evidence.py --locomo other/*.json --kdconv other.json \
          --longmemeval lme.json --traces other/*.traj.json   (held-out files, same code)
      python bench/bench_evidence.py --haystacks --skip locomo kdconv traces
          (LongMemEval-style haystacks made from the LoCoMo files by make_haystacks.py,
          in a temporary folder: dated evidence sessions among other conversations')
      ... --write docs/benchmarks-evidence.md --dump misses.jsonl

For each question of a conversation (LoCoMo, KdConv made into long conversations,
LongMemEval haystacks; see ``evidence_data``), every system is given the whole
conversation, then the question as the newest user message, and builds the request it
would send at a budget (2k, 4k, 8k tokens by default). The referee (``evidence_match``)
checks whether each evidence turn is in the request — strict (verbatim) and fuzzy (60% of
its content words close together in one message) — and counts the tokens sent with
cl100k_base, tools included. Build time is ``time.perf_counter`` around the build only.

Systems (``evidence_systems``): memci in its default configuration (fed once per budget,
each question on a fresh copy of the fed store; ``--feed live`` builds before every
assistant turn while feeding, as an agent does, ``--feed bulk`` imports the history without
building), the sliding window, langchain-core ``trim_messages``, and BM25 top-10 + newest.
Ratios are against BM25 top-10 + newest.

The tool-loop part (``evidence_traces``) replays agent traces and reports tokens per
request, the newest tool output, the last assistant messages and memci's working state.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import memci
from _histories import SHARED, percentile
from evidence_data import Conversation, Question, all_locomo, kdconv, longmemeval
from evidence_match import request_text, request_tokens
from evidence_systems import BASELINES, History, MemciConversation
from evidence_traces import LAST_N, TraceResult, replay
from make_haystacks import haystacks
from memci.store.sqlite._driver import driver

REFERENCE = "bm25"
NOT_ASKED = {
    "locomo": "questions not asked (category 5, no evidence turn in the file, or beyond "
              "--max-questions)",
    "kdconv": "facts not asked (outside the evenly spread sample, or with several values "
              "or dialogues)",
    "longmemeval": "questions not asked (no has_answer turn, or beyond --max-questions)",
    "haystacks": "questions not asked (beyond --max-questions)",
}
LABELS = {
    "memci-live": "memci (built every turn)",
    "memci-bulk": "memci (history imported)",
    "memci-live+dense": "memci + embedder (built every turn)",
    "memci-bulk+dense": "memci + embedder (history imported)",
    "window": "sliding window",
    "trim_messages": "langchain trim_messages",
    "bm25": "BM25 top-10 + newest",
}


@dataclass
class Tally:
    """The figures of one system on one dataset at one budget."""

    evidence: int = 0
    strict: int = 0
    fuzzy: int = 0
    questions: int = 0
    whole: int = 0  # questions with every evidence turn strictly in the request
    tokens: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    over: int = 0  # requests over the budget

    def pct(self, part: int) -> float:
        return 100 * part / self.evidence if self.evidence else 0.0


class Run:
    """One run: every dataset × budget × system, and the per-question rows."""

    def __init__(self, budgets: Sequence[int], feeds: Sequence[str], dump: IO[str] | None,
                 workdir: Path, embedder: str | None = None) -> None:
        self.budgets = list(budgets)
        self.feeds = list(feeds)
        self.embedder = embedder
        self.dump = dump
        self.workdir = workdir
        self.tallies: dict[tuple[str, int, str], Tally] = {}
        self.counts: dict[str, dict[str, int]] = {}
        self.feed_ms: dict[tuple[str, int], list[float]] = {}

    def systems(self) -> list[str]:
        dense = [f"memci-{f}+dense" for f in self.feeds] if self.embedder else []
        return [f"memci-{f}" for f in self.feeds] + dense + [b.name for b in BASELINES]

    def conversation(self, conv: Conversation) -> None:
        count = self.counts.setdefault(conv.dataset, {"conversations": 0, "turns": 0,
                                                      "questions": 0, "evidence": 0,
                                                      "skipped": 0})
        count["conversations"] += 1
        count["turns"] += len(conv.turns)
        count["questions"] += len(conv.questions)
        count["evidence"] += sum(len(q.evidence) for q in conv.questions)
        count["skipped"] += conv.skipped
        if not conv.questions:
            return
        history = History(conv.turns)
        text = {t.id: t.text for t in conv.turns}
        for baseline in BASELINES:  # imports and first-call work, untimed
            baseline.run(history, conv.questions[0], self.budgets[0])
        for budget in self.budgets:
            fed: dict[str, MemciConversation] = {}
            for feed in self.feeds:
                fed[f"memci-{feed}"] = MemciConversation(conv, budget, self.workdir, feed)
                self.feed_ms.setdefault((conv.dataset, budget), []).extend(
                    fed[f"memci-{feed}"].feed_build_ms)
                if self.embedder:
                    fed[f"memci-{feed}+dense"] = MemciConversation(
                        conv, budget, self.workdir, feed, embedder=self.embedder)
            try:
                for q in conv.questions:
                    runs: list[tuple[str, dict[str, Any], float]] = [
                        (name, *m.ask(q)) for name, m in fed.items()]
                    runs += [(b.name, *b.run(history, q, budget)) for b in BASELINES]
                    for system, payload, ms in runs:
                        self._measure(conv, q, budget, system, payload, ms, text)
            finally:
                for m in fed.values():
                    m.close()

    def _measure(self, conv: Conversation, q: Question, budget: int, system: str,
                 payload: dict[str, Any], ms: float, text: dict[str, str]) -> None:
        request = request_text(payload, q.text)
        strict = [e for e in q.evidence if request.verbatim(text[e])]
        fuzzy = [e for e in q.evidence if e in strict or request.close(text[e])]
        tokens = request_tokens(payload)
        t = self.tallies.setdefault((conv.dataset, budget, system), Tally())
        t.evidence += len(q.evidence)
        t.strict += len(strict)
        t.fuzzy += len(fuzzy)
        t.questions += 1
        t.whole += len(strict) == len(q.evidence)
        t.tokens.append(tokens)
        t.ms.append(ms)
        t.over += tokens > budget
        if self.dump is not None:
            self.dump.write(json.dumps({
                "dataset": conv.dataset, "conversation": conv.name, "question": q.id,
                "kind": q.kind, "text": q.text, "budget": budget, "system": system,
                "evidence": list(q.evidence), "strict": strict, "fuzzy": fuzzy,
                "tokens": tokens, "build_ms": round(ms, 3),
                "messages": len(payload["messages"]),
            }, ensure_ascii=False) + "\n")


# -- report -----------------------------------------------------------------------------

def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "–"


def evidence_table(run: Run) -> list[str]:
    lines = ["| data | budget | system | evidence strict | fuzzy | all of a question's "
             "| vs BM25 (strict / fuzzy) | tokens sent | % of budget | over budget "
             "| build ms p50 / p95 | ms vs BM25 |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for dataset in run.counts:
        for budget in run.budgets:
            ref = run.tallies.get((dataset, budget, REFERENCE))
            for system in run.systems():
                t = run.tallies.get((dataset, budget, system))
                if t is None or ref is None:
                    continue
                tokens = statistics.mean(t.tokens)
                p50 = percentile(t.ms, 0.5)
                lines.append(
                    f"| {dataset} | {budget:,} | {LABELS.get(system, system)} "
                    f"| {t.pct(t.strict):.1f}% | {t.pct(t.fuzzy):.1f}% "
                    f"| {100 * t.whole / t.questions:.1f}% "
                    f"| {_ratio(t.strict, ref.strict)} / {_ratio(t.fuzzy, ref.fuzzy)} "
                    f"| {tokens:,.0f} | {100 * tokens / budget:.0f}% | {t.over} "
                    f"| {p50:.2f} / {percentile(t.ms, 0.95):.2f} "
                    f"| {_ratio(p50, percentile(ref.ms, 0.5))} |")
    return lines


def data_lines(run: Run) -> list[str]:
    out = []
    for dataset, c in run.counts.items():
        out.append(f"- {dataset}: {c['conversations']} conversation(s), {c['turns']:,} turns, "
                   f"{c['questions']} questions with {c['evidence']} evidence turns; "
                   f"{c['skipped']} {NOT_ASKED.get(dataset, 'not asked')}")
    for (dataset, budget), ms in run.feed_ms.items():
        if ms:
            out.append(f"- memci's builds while {dataset} was fed at {budget:,}: "
                       f"{len(ms):,} builds, p50 {percentile(ms, 0.5):.2f} ms, "
                       f"p95 {percentile(ms, 0.95):.2f} ms")
    return out


def trace_table(results: Sequence[TraceResult]) -> list[str]:
    lines = ["| trace | budget | system | requests | tokens mean | last 10 / requests 10-19 "
             "| max | newest tool output | last 5 assistant messages | working state shown "
             "| build ms p50 |",
             "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        growth = r.growth()
        grown = (f"{growth:.2f}x ({statistics.mean(r.tokens[-10:]):,.0f} / "
                 f"{statistics.mean(r.tokens[9:19]):,.0f})" if growth else "–")
        state = (f"present {r.state_present}/{r.state_requests}, "
                 f"{r.state_whole}/{r.state_requests} whole, "
                 f"{100 * statistics.mean(r.state_share):.0f}% of entries"
                 if r.state_requests else "–")
        lines.append(
            f"| {r.trace} | {r.budget:,} | {LABELS.get(r.system, r.system)} | {len(r.tokens)} "
            f"| {statistics.mean(r.tokens):,.0f} | {grown} | {max(r.tokens):,} "
            f"| {r.newest_seen}/{r.newest_asked} "
            f"| {sum(r.last_present)}/{sum(r.last_wanted)} | {state} "
            f"| {percentile(r.build_ms, 0.5):.2f} |")
    return lines


def machine() -> str:
    db = driver()
    return (f"{os.cpu_count()} cores, Python {platform.python_version()}, "
            f"SQLite {db.sqlite_version} ({db.__name__}), memci {memci.__version__}, "
            f"{platform.system()} {platform.machine()}")


def report(run: Run, traces: Sequence[TraceResult], command: str, seconds: float) -> str:
    lines = [
        "# What the request holds (`bench/bench_evidence.py`)",
        "",
        f"Machine: {machine()}. Date: {date.today().isoformat()}. "
        f"Wall time {seconds / 60:.1f} min.",
        f"Command: `python bench/bench_evidence.py {command}`.",
        "",
        "Each question is asked after the whole conversation; each system builds the "
        "request at the budget; an evidence turn counts when it is in the request verbatim "
        "(strict) or when 60% of its content words are close together in one message "
        "(fuzzy). \"all of a question's\": questions with every evidence turn in "
        "(strict). Tokens: cl100k_base over messages and tools. Ratios against BM25 "
        "top-10 + newest.",
        "",
        *data_lines(run),
        "",
    ]
    if run.tallies:
        lines += [*evidence_table(run), ""]
    if traces:
        lines += [
            "## Tool loops",
            "",
            "Each trace replayed message by message, a request built before every "
            "assistant message. Newest tool output: requests after a tool result that show "
            f"the start of that output. Last {LAST_N} assistant messages: present / stored "
            "(summed over requests). Working state: requests that show some of it, and "
            "with every entry shown, of the requests once it has entries; the mean share "
            "of entries shown.",
            "",
            *trace_table(traces),
            "",
        ]
    return "\n".join(lines)


# -- command line -----------------------------------------------------------------------

def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--locomo", type=Path, nargs="+", metavar="FILE",
                        help="LoCoMo conversation files (default ../shared/data/locomo/*.json)")
    parser.add_argument("--kdconv", type=Path, metavar="FILE",
                        help="a KdConv file (default ../shared/data/zh/kdconv_travel_test.json)")
    parser.add_argument("--longmemeval", type=Path, nargs="+", default=[], metavar="FILE",
                        help="LongMemEval files (none by default; every question has its "
                             "own haystack, fed per budget: --max-questions samples big files)")
    parser.add_argument("--haystacks", action="store_true",
                        help="also make LongMemEval-style haystacks of the LoCoMo files "
                             "(make_haystacks.py: each question's dated evidence sessions "
                             "among ~12k tokens of the other conversations) and ask them")
    parser.add_argument("--traces", type=Path, nargs="+", metavar="FILE",
                        help="agent traces (default ../shared/data/traces/*.traj.json)")
    parser.add_argument("--skip", nargs="+", default=[],
                        choices=["locomo", "kdconv", "longmemeval", "traces"],
                        help="leave these parts out")
    parser.add_argument("--budgets", type=int, nargs="+", default=None,
                        help="request budgets in tokens for the questions (default 2000 4000 "
                             "8000; --quick: 2000 8000)")
    parser.add_argument("--trace-budgets", type=int, nargs="+", default=None,
                        help="request budgets for the tool loops (default 8000 16000 96000; "
                             "--quick: 8000)")
    parser.add_argument("--feed", nargs="+", choices=["live", "bulk"], default=None,
                        help="how memci is fed before the questions: live (a build before "
                             "every assistant turn, as an agent does; the default) and/or "
                             "bulk (the history imported, no build until the question)")
    parser.add_argument("--max-questions", type=int, default=None,
                        help="at most this many questions per conversation, spread evenly "
                             "(default all; --quick: 20)")
    parser.add_argument("--kdconv-dialogues", type=int, default=50,
                        help="KdConv dialogues per conversation")
    parser.add_argument("--kdconv-questions", type=int, default=40,
                        help="KdConv questions per conversation")
    parser.add_argument("--quick", action="store_true",
                        help="smaller defaults for what is not given: the first LoCoMo file "
                             "and trace, one KdConv conversation, 20 questions, budgets 2k "
                             "and 8k, traces at 8k (every flag given still applies)")
    parser.add_argument("--embedder", metavar="SPEC",
                        help="also run memci with this MEMCI_EMBEDDER beside the default "
                             "(e.g. sentence-transformers:all-MiniLM-L6-v2, with "
                             "memci[embeddings]): dense retrieval on top of keyword")
    parser.add_argument("--dump", type=Path, help="write one JSON line per question and system")
    parser.add_argument("--write", type=Path, help="write the Markdown report here")
    return parser.parse_args(argv)


@dataclass(frozen=True)
class Plan:
    """What one run measures: the flags given, and --quick's or the full defaults for the
    rest (a flag given always wins: --quick never drops one)."""

    locomo: list[Path]
    haystacks: list[Path]
    kdconv: Path | None
    longmemeval: list[Path]
    traces: list[Path]
    budgets: list[int]
    trace_budgets: list[int]
    feeds: list[str]
    max_questions: int | None
    kdconv_conversations: int | None


_DEFAULTS = {"budgets": [2000, 4000, 8000], "trace_budgets": [8000, 16000, 96000],
             "feed": ["live"], "max_questions": None}
_QUICK = {"budgets": [2000, 8000], "trace_budgets": [8000], "feed": ["live"],
          "max_questions": 20}


def plan(args: argparse.Namespace) -> Plan:
    """The run ``args`` ask for (see :class:`Plan`)."""
    preset = _QUICK if args.quick else _DEFAULTS

    def given(name: str) -> Any:
        value = getattr(args, name)
        return preset[name] if value is None else value

    files = 1 if args.quick else None  # --quick: the first file of a default set
    locomo = args.locomo or sorted((SHARED / "locomo").glob("*.json"))[:files]
    traces = args.traces or sorted((SHARED / "traces").glob("*.traj.json"))[:files]
    kdconv_file: Path | None = args.kdconv or SHARED / "zh" / "kdconv_travel_test.json"
    skip = set(args.skip)
    return Plan(
        locomo=[] if "locomo" in skip else locomo,
        haystacks=(args.locomo or sorted((SHARED / "locomo").glob("*.json"))
                   if args.haystacks else []),
        kdconv=None if "kdconv" in skip else kdconv_file,
        longmemeval=[] if "longmemeval" in skip else list(args.longmemeval),
        traces=[] if "traces" in skip else traces,
        budgets=given("budgets"), trace_budgets=given("trace_budgets"), feeds=given("feed"),
        max_questions=given("max_questions"),
        kdconv_conversations=1 if args.quick else None)


def main(argv: Sequence[str] | None = None) -> str:
    args = parse(argv)
    started = time.perf_counter()
    run_plan = plan(args)
    max_q = run_plan.max_questions
    conversations: list[Conversation] = all_locomo(run_plan.locomo, max_questions=max_q)
    if run_plan.kdconv is not None:
        conversations += kdconv(run_plan.kdconv, per_conversation=args.kdconv_dialogues,
                                questions_per_conversation=min(args.kdconv_questions,
                                                               max_q or args.kdconv_questions),
                                max_conversations=run_plan.kdconv_conversations)
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for path in run_plan.longmemeval:
                conversations += longmemeval(path, max_questions=max_q)
            if run_plan.haystacks:
                # Made at bench time: the file copies the shared data's text.
                made = Path(tmp) / "haystacks.json"
                made.write_text(json.dumps(haystacks(run_plan.haystacks)), encoding="utf-8")
                conversations += longmemeval(made, max_questions=max_q, dataset="haystacks")
            run = Run(run_plan.budgets, run_plan.feeds, dump, Path(tmp), args.embedder)
            for conv in conversations:
                t0 = time.perf_counter()
                run.conversation(conv)
                print(f"{conv.dataset} {conv.name}: {len(conv.turns)} turns, "
                      f"{len(conv.questions)} questions, {time.perf_counter() - t0:.1f} s",
                      file=sys.stderr)
            traces: list[TraceResult] = []
            for path in run_plan.traces:
                for budget in run_plan.trace_budgets:
                    traces += replay(path, budget, Path(tmp))
                print(f"trace {path.name}", file=sys.stderr)
    finally:
        if dump is not None:
            dump.close()
    command = " ".join(sys.argv[1:] if argv is None else argv)
    text = report(run, traces, command, time.perf_counter() - started)
    print(text)
    if args.write:
        args.write.write_text(text, encoding="utf-8")
    return text


if __name__ == "__main__":
    main()
