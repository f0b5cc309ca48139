"""Model summaries on the contents page: how soon they reach requests, what they cost the cache.

Run from the repository root::

    python bench/bench_model_summaries.py            # both parts (about 5 minutes)
    python bench/bench_model_summaries.py --json     # the same figures as JSON

The model is the fake OpenAI-compatible endpoint of ``tests/fakellm.py`` on 127.0.0.1,
answering every page with one plain sentence (the form that failed every job before).

- **reach**: a 2 s model. 160 turns of backlog, one build at a 16k budget (the one
  archive event of the run), then a chat of short turns, one every 0.5 s, for at most
  100 s: seconds until the first model line is on the contents page, until every listed
  page has one, how often the contents page changed and how many pages were archived
  after the first build. Once with the default policy
  (``summary_swap_rounds=4``), once with swaps only at archive events (``0``, the old
  behaviour).
- **prefix**: the long Chinese chat of ``bench_build.py`` (every KdConv dialogue back to
  back) at an 8k budget, built before every assistant message, with a model that is
  always done before the next turn (the worst case: every chance to swap has summaries
  ready). Mean share of each request's tokens that is an exact prefix of the previous
  request, with no model, the default policy, and swaps only at archive events.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "bench")]

from tests.fakellm import FakeLLM, RecordedRequest  # noqa: E402

import memci  # noqa: E402
from _histories import chinese_long_chat  # noqa: E402
from memci.llm import OpenAIChatClient  # noqa: E402

MARK = "MODEL-SUMMARY"


def prose(request: RecordedRequest) -> str:
    """One plain sentence, whatever form the prompt asked for."""
    return f"The user and the assistant went over {MARK} what this page was about."


def _contents(ctx: memci.Context) -> str:
    return next((m.content for m in ctx.messages if m.content.startswith(("## Contents",
                                                                          "## 目录页"))), "")


def _all_model(contents: str) -> bool:
    """Whether every listed page's entry is the model's."""
    entries = [b for b in contents.split("\n\n") if b.startswith("[Page ")]
    return bool(entries) and all(MARK in b for b in entries)


def reach(tmp: Path, swap_rounds: int, *, limit: float = 100.0) -> dict[str, Any]:
    """Seconds of chat until the model's lines are on the contents page (2 s model)."""
    with FakeLLM(responder=prose, delay=2.0) as fake:
        client = OpenAIChatClient("m", api_key="k", base_url=fake.openai_base_url)
        with client, memci.Engine.open(tmp / f"reach-{swap_rounds}.db", llm=client) as eng:
            s = eng.session("s", evict_unrecalled_rounds=0, retrieval=False,
                            summary_swap_rounds=swap_rounds)
            for t in range(160):
                s.add({"role": "user", "content": f"Question {t} about the harbour museum. " * 6})
                s.add({"role": "assistant", "content": f"Answer {t}: it opens at nine. " * 6})
            archived = len(s.build(budget=16000).stats.events)
            assert archived, "the backlog must be archived by the first build"
            first = every = None
            changes = turns = events = 0
            previous = ""
            started = time.monotonic()
            while time.monotonic() - started < limit and every is None:
                turns += 1
                s.add({"role": "user", "content": f"Short question {turns}?"})
                ctx = s.build(budget=16000)
                s.add({"role": "assistant", "content": f"Short answer {turns}."})
                events += sum(e.startswith("archive") for e in ctx.stats.events)
                contents = _contents(ctx)
                changes += contents != previous and bool(previous)
                previous = contents
                now = time.monotonic() - started
                if first is None and MARK in contents:
                    first = now
                if every is None and _all_model(contents):
                    every = now
                time.sleep(0.5)
            return {"first_s": first, "all_s": every, "turns": turns, "archived_first": archived,
                    "contents_changes": changes, "archive_events": events,
                    "model_requests": fake.count}


def prefix(tmp: Path, swap_rounds: int | None, turns: int = 0) -> dict[str, Any]:
    """Mean prefix reuse over the long Chinese chat at 8k (None: no model)."""
    chat = chinese_long_chat()
    if turns:
        chat = chat[:2 * turns]
    with FakeLLM(responder=prose) as fake:
        client = OpenAIChatClient("m", api_key="k", base_url=fake.openai_base_url)
        name = f"prefix-{swap_rounds}.db"
        with client, memci.Engine.open(tmp / name, synchronous="NORMAL",
                                       llm=client if swap_rounds is not None else None,
                                       workers=0 if swap_rounds is None else 2) as eng:
            extra = {} if swap_rounds is None else {"summary_swap_rounds": swap_rounds}
            s = eng.session("p", retrieval=False, **extra)
            s.set_system("你是一位熟悉中国旅游景点的导游，回答要准确简洁。")
            shares: list[float] = []
            model_share: list[float] = []  # of the listed entries, the model's
            for m in chat:
                if m["role"] == "assistant":
                    if swap_rounds is not None:
                        while s.stats().jobs_pending:  # the model is done before the turn
                            time.sleep(0.002)
                    ctx = s.build(budget=8000)
                    shares.append(ctx.stats.prefix_tokens / ctx.stats.total_tokens)
                    entries = [b for b in _contents(ctx).split("\n\n")
                               if b.startswith("[Page ")]
                    if entries:
                        model_share.append(sum(MARK in b for b in entries) / len(entries))
                s.add(m)
            return {"requests": len(shares), "mean_prefix_share": statistics.mean(shares[1:]),
                    "archived": s.stats().archived, "model_requests": fake.count,
                    "model_entry_share": statistics.mean(model_share) if model_share else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--turns", type=int, default=0,
                        help="prefix part: replay only this many turns (0 = all)")
    args = parser.parse_args()
    out: dict[str, Any] = {"reach": {}, "prefix": {}}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for rounds in (4, 0):
            out["reach"][str(rounds)] = reach(tmp, rounds)
        for policy in (None, 4, 0):
            out["prefix"][str(policy)] = prefix(tmp, policy, args.turns)
    if args.json:
        print(json.dumps(out))
        return
    for rounds, r in out["reach"].items():
        label = "default (4 rounds)" if rounds == "4" else "archive events only"
        print(f"reach, 2 s model, {label}: first model line after {r['first_s']} s, "
              f"every listed page after {r['all_s']} s, {r['turns']} turns, contents page "
              f"changed {r['contents_changes']} times, {r['archive_events']} pages archived after "
              f"the first build ({r['archived_first']} by it)")
    base = out["prefix"]["None"]["mean_prefix_share"]
    for policy, p in out["prefix"].items():
        label = {"None": "no model", "4": "default (4 rounds)", "0": "archive events only"}
        print(f"prefix reuse, 8k, {label[policy]}: {100 * p['mean_prefix_share']:.1f}% "
              f"({p['mean_prefix_share'] / base:.3f}x of no model), {p['requests']} requests, "
              f"{p['model_requests']} model requests, "
              f"{100 * p['model_entry_share']:.1f}% of listed entries the model's on average")


if __name__ == "__main__":
    main()
