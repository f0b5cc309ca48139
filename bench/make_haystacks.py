"""LongMemEval-style haystacks made from LoCoMo conversations (a development set).

Run:  python bench/make_haystacks.py OUT.json                       (the shared LoCoMo files)
      python bench/make_haystacks.py OUT.json --locomo a.json b.json --tokens 12000 --seed 5

Each question of a LoCoMo conversation becomes one LongMemEval item: its evidence sessions,
with their own dates, among distractor sessions taken from the OTHER conversations (about
``--tokens`` tokens of them), each given a date of its own around the evidence; the
question is asked a few days after the last session. Mostly temporal questions: every
category 2 question (LoCoMo's temporal reasoning), every other question whose answer is a
date, and ``--others`` of the rest per conversation. ``--relative`` more per conversation
(of those whose evidence is in one session) are asked again up to six weeks after that
session, naming when it was, relative to the question's date, as LongMemEval's temporal
questions do: "Last week, what ...?", "3 weeks ago, ...", "In May, ...", "On May 7, ..."
(question ids ending ``:when``). So a time in a question and the sessions' dates are
what is tested.

The output is LongMemEval's format (``question_id``, ``question_type``, ``question``,
``answer``, ``question_date``, ``haystack_session_ids``, ``haystack_dates``,
``haystack_sessions`` of ``{role, content, has_answer}`` turns, ``answer_session_ids``),
so ``bench_evidence.py --longmemeval`` reads it like a real LongMemEval file; LoCoMo's
first speaker is the user and the second the assistant, as ``evidence_data.locomo`` feeds
them. ``bench_evidence.py --haystacks`` makes the file in a temporary folder at bench time:
it copies the shared data's text, so it is never committed.

Invariants: the same inputs and seed give the same file; a haystack never holds a session
of its question's conversation other than the evidence sessions; every session is dated
and the question date is after the last one; every item has at least one ``has_answer``
turn; a question naming when names a time that holds its evidence session.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _histories import SHARED
from evidence_data import _locomo_date

__all__ = ["haystacks", "main"]

_SESSION = re.compile(r"session_(\d+)$")
_MONTHS = ("january february march april may june july august september october november "
           "december").split()
_DATED_ANSWER = re.compile(r"\b(19|20)\d\d\b|\b(" + "|".join(_MONTHS) + r")\b", re.I)
_LME_FORMAT = "%Y/%m/%d (%a) %H:%M"


@dataclass(frozen=True)
class _Session:
    """One dated LoCoMo session, as LongMemEval turns."""

    conversation: str
    number: int
    when: datetime
    turns: tuple[dict[str, Any], ...]
    tokens: int


def _sessions(path: Path) -> tuple[dict[str, Any], list[_Session]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for key in data:
        match = _SESSION.match(key)
        if match is None or not isinstance(data[key], list) or not data[key]:
            continue
        turns = []
        for t in data[key]:
            text = str(t.get("text", ""))
            if t.get("blip_caption"):
                text = f"{text} [shares a photo: {t['blip_caption']}]".strip()
            role = "user" if t["speaker"] == data["speaker_a"] else "assistant"
            turns.append({"role": role, "content": text, "dia_id": str(t["dia_id"])})
        out.append(_Session(path.stem, int(match.group(1)),
                            _locomo_date(data[f"{key}_date_time"]), tuple(turns),
                            sum(len(t["content"]) for t in turns) // 4))
    return data, sorted(out, key=lambda s: s.number)


def _chosen(qa: list[dict[str, Any]], others: int, rng: random.Random) -> list[int]:
    """Indices of the questions asked: temporal and dated-answer ones, a few others."""
    answerable = [i for i, q in enumerate(qa) if q.get("category") != 5 and q.get("evidence")]
    timed = [i for i in answerable if _timed(qa[i])]
    rest = [i for i in answerable if i not in set(timed)]
    return sorted(timed + rng.sample(rest, min(others, len(rest))))


def _timed(qa: dict[str, Any]) -> bool:
    """Whether a LoCoMo question is temporal or its answer is a date."""
    return qa.get("category") == 2 or bool(_DATED_ANSWER.search(str(qa.get("answer", ""))))


def _evidence(qa: dict[str, Any], own: list[_Session]) -> tuple[set[str], list[_Session]]:
    ids = {e for item in qa["evidence"] for e in re.split(r"[;,\s]+", str(item)) if e}
    return ids, [s for s in own if any(t["dia_id"] in ids for t in s.turns)]


def _fillers(pool: list[_Session], tokens: int, rng: random.Random) -> list[_Session]:
    fillers: list[_Session] = []
    size = 0
    for s in rng.sample(pool, len(pool)):
        if size >= tokens:
            break
        fillers.append(s)
        size += s.tokens
    return fillers


def _item(conv: str, n: int, qa: dict[str, Any], own: list[_Session],
          pool: list[_Session], tokens: int, rng: random.Random) -> dict[str, Any] | None:
    """The question as LoCoMo asks it, a few days after the last session."""
    ids, evidence = _evidence(qa, own)
    if not evidence:
        return None
    first = min(s.when for s in evidence)
    span = max((max(s.when for s in evidence) - first).days, 30)
    dated: list[tuple[datetime, _Session]] = [(s.when, s) for s in evidence]
    for s in _fillers(pool, tokens, rng):  # around the evidence: before, between, after
        offset = timedelta(days=rng.uniform(-span / 2, span + 14), minutes=rng.randint(0, 600))
        dated.append((first + offset, s))
    asked = max(when for when, _ in dated) + timedelta(days=rng.randint(1, 10),
                                                       hours=rng.randint(1, 8))
    kind = "temporal-reasoning" if _timed(qa) else f"locomo-category-{qa.get('category')}"
    return _lme(f"{conv}:q{n}", kind, str(qa["question"]), qa, asked, dated, conv, ids,
                evidence)


def _phrases(said: datetime, asked: datetime) -> list[str]:
    """Ways to name, on ``asked``, the day ``said`` (each true of it as people say it)."""
    days = (asked.date() - said.date()).days
    monday = asked.date() - timedelta(days=asked.weekday())
    out = [f"in {said:%B}" if said.year == asked.year else f"in {said:%B %Y}",
           f"on {said:%B} {said.day}"]
    if days == 1:
        out.append("yesterday")
    if 2 <= days <= 6:
        out.append(f"{days} days ago")
    if monday - timedelta(weeks=1) <= said.date() < monday:
        out.append("last week")
    if days >= 7 and abs(days - 7 * round(days / 7)) <= 2:
        weeks = round(days / 7)
        out.append("a week ago" if weeks == 1 else f"{weeks} weeks ago")
    if (said.year * 12 + said.month) == (asked.year * 12 + asked.month) - 1:
        out.append("last month")
    return out


def _relative(conv: str, n: int, qa: dict[str, Any], own: list[_Session],
              pool: list[_Session], tokens: int, rng: random.Random) -> dict[str, Any] | None:
    """The question asked up to six weeks after its one evidence session, naming when.

    "Last week, what did ...?", "3 days ago, ...", "In May, ...": the time is relative to
    the question's date; distractor sessions are dated before the question too.
    """
    ids, evidence = _evidence(qa, own)
    if len(evidence) != 1:
        return None
    said = evidence[0].when
    asked = said + timedelta(days=rng.randint(1, 42), hours=rng.randint(1, 8))
    phrase = rng.choice(_phrases(said, asked))
    question = str(qa["question"])
    text = f"{phrase[0].upper()}{phrase[1:]}, {question[0].lower()}{question[1:]}"
    dated: list[tuple[datetime, _Session]] = [(said, evidence[0])]
    for s in _fillers(pool, tokens, rng):  # in the two months before the question
        dated.append((asked - timedelta(days=rng.uniform(0.1, 60)), s))
    return _lme(f"{conv}:q{n}:when", "temporal-reasoning", text, qa, asked, dated, conv, ids,
                evidence)


def _lme(qid: str, kind: str, question: str, qa: dict[str, Any], asked: datetime,
         dated: list[tuple[datetime, _Session]], conv: str, ids: set[str],
         evidence: list[_Session]) -> dict[str, Any]:
    """One LongMemEval item: the sessions in date order, the answer turns marked."""
    dated.sort(key=lambda pair: pair[0])
    return {
        "question_id": qid,
        "question_type": kind,
        "question": question,
        "answer": str(qa.get("answer", "")),
        "question_date": asked.strftime(_LME_FORMAT),
        "haystack_session_ids": [f"{s.conversation}:s{s.number}" for _, s in dated],
        "haystack_dates": [when.strftime(_LME_FORMAT) for when, _ in dated],
        "haystack_sessions": [
            [{"role": t["role"], "content": t["content"],
              "has_answer": s.conversation == conv and t["dia_id"] in ids} for t in s.turns]
            for _, s in dated],
        "answer_session_ids": [f"{s.conversation}:s{s.number}" for s in evidence],
    }


def haystacks(paths: Sequence[Path], *, tokens: int = 12_000, others: int = 5,
              relative: int = 20, seed: int = 1) -> list[dict[str, Any]]:
    """LongMemEval items for the questions of every LoCoMo file of ``paths``."""
    loaded = {p.stem: _sessions(p) for p in paths}
    out = []
    for conv, (data, own) in loaded.items():
        pool = [s for other, (_, ss) in loaded.items() if other != conv for s in ss]
        rng = random.Random(f"{seed}:{conv}")
        qa = list(data.get("qa", []))
        for n in _chosen(qa, others, rng):
            item = _item(conv, n, qa[n], own, pool, tokens, rng)
            if item is not None:
                out.append(item)
        asked = [i for i, q in enumerate(qa) if q.get("category") != 5 and q.get("evidence")
                 and not _timed(q)]
        for n in sorted(rng.sample(asked, min(relative, len(asked)))):
            item = _relative(conv, n, qa[n], own, pool, tokens, rng)
            if item is not None:
                out.append(item)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("out", type=Path, help="the LongMemEval JSON file to write")
    parser.add_argument("--locomo", type=Path, nargs="+", metavar="FILE",
                        help="LoCoMo files (default ../shared/data/locomo/*.json); at least "
                             "two, since distractors come from the other conversations")
    parser.add_argument("--tokens", type=int, default=12_000,
                        help="distractor tokens per haystack (about; default 12000)")
    parser.add_argument("--others", type=int, default=5,
                        help="questions per conversation that are not temporal (default 5)")
    parser.add_argument("--relative", type=int, default=20,
                        help="questions per conversation asked again naming when, relative "
                             "to the question's date (\"Last week, what ...?\"; default 20; "
                             "only those whose evidence is in one session)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    paths = args.locomo or sorted((SHARED / "locomo").glob("*.json"))
    if len(paths) < 2:
        parser.error("give at least two LoCoMo files: distractors come from the others")
    items = haystacks(paths, tokens=args.tokens, others=args.others, relative=args.relative,
                      seed=args.seed)
    args.out.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    print(f"{len(items)} haystacks written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
