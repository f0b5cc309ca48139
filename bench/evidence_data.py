"""Long conversations with questions whose answers are known turns (for bench_evidence.py).

Every reader turns one kind of file into :class:`Conversation` values: the turns in order
(role, text, when said) and the questions asked at the end, each naming the turns that
answer it (its *evidence*). Readers take any file of their kind, so held-out files are
measured by the same code:

- :func:`locomo` — LoCoMo (one conversation per file: ``speaker_a``/``speaker_b``,
  ``session_N`` turns with ``dia_id``, ``session_N_date_time``, ``qa`` with ``evidence``).
  ``speaker_a`` is fed as the user and ``speaker_b`` as the assistant: the agent is one
  party of the chat and the person it talks with is the user, which is how an agent
  developer's own logs look (two users with names would give memci pages of one message
  and no assistant replies). Shared photos are fed as their caption, since some evidence
  turns are about the photo. Category 5 (adversarial: no answer, no evidence) is skipped.
- :func:`kdconv` — KdConv (dialogues whose utterances carry ``attrs``: entity, attribute,
  value). Dialogues are concatenated in file order, one a day, into conversations of
  ``per_conversation`` dialogues; a question asks for one entity's attribute
  (``{name}的{attrname}是什么？``), and its evidence is every utterance carrying that fact.
- :func:`longmemeval` — LongMemEval (a list of ``{question, question_date,
  haystack_sessions, haystack_dates, ...}``, one haystack per question); evidence is the
  turns marked ``has_answer``. Questions without such turns (abstention) are skipped.

Invariants: turn ids are unique within a conversation; every question has at least one
evidence id and every evidence id names a turn of its conversation; ``created_at`` values
are ISO 8601 and never decrease along the turns; the question is asked after the last turn.
Samples are deterministic (evenly spaced, no random draw), so two runs measure the same
questions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = [
    "Conversation",
    "Question",
    "Turn",
    "all_locomo",
    "evenly",
    "kdconv",
    "locomo",
    "longmemeval",
]


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation, as it is fed to every system."""

    id: str
    role: str  # "user" or "assistant"
    text: str
    created_at: str  # ISO 8601

    def message(self) -> dict[str, Any]:
        """The OpenAI-style dict every system is given (memci also gets ``created_at``)."""
        return {"role": self.role, "content": self.text}


@dataclass(frozen=True, slots=True)
class Question:
    """A question asked by the user after the last turn, and the turns that answer it."""

    id: str
    text: str
    asked_at: str
    evidence: tuple[str, ...]
    kind: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """A dataset's conversation: turns in order and the questions asked at its end."""

    dataset: str
    name: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped: int = 0  # questions left out (no resolvable evidence, adversarial, abstention)


def evenly(items: Sequence[Any], limit: int | None) -> list[Any]:
    """Up to ``limit`` items spread evenly over ``items`` (all of them when it is None)."""
    if limit is None or len(items) <= limit:
        return list(items)
    if limit <= 0:
        return []
    if limit == 1:
        return [items[len(items) // 2]]
    step = (len(items) - 1) / (limit - 1)
    return [items[round(i * step)] for i in range(limit)]


# -- LoCoMo -----------------------------------------------------------------------------

_LOCOMO_DATE = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y")
_SESSION = re.compile(r"session_(\d+)$")


def _locomo_date(text: str) -> datetime:
    for fmt in _LOCOMO_DATE:
        try:
            return datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
    raise ValueError(f"LoCoMo session date {text!r} is not like '1:56 pm on 8 May, 2023'")


def locomo(path: Path, *, max_questions: int | None = None) -> Conversation:
    """One LoCoMo conversation file (see the module docstring for how it is fed)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    numbers = sorted(int(m.group(1)) for k in data if (m := _SESSION.match(k)))
    turns: list[Turn] = []
    for n in numbers:
        session = data[f"session_{n}"]
        if not isinstance(session, list) or not session:
            continue
        start = _locomo_date(data[f"session_{n}_date_time"])
        if turns and start.isoformat() < turns[-1].created_at:
            start = datetime.fromisoformat(turns[-1].created_at) + timedelta(minutes=1)
        for i, t in enumerate(session):
            text = str(t.get("text", ""))
            caption = t.get("blip_caption")
            if caption:
                text = f"{text} [shares a photo: {caption}]".strip()
            role = "user" if t["speaker"] == data["speaker_a"] else "assistant"
            # A turn a minute: LoCoMo gives only the session's start.
            turns.append(Turn(str(t["dia_id"]), role, text,
                              (start + timedelta(minutes=i)).isoformat()))
    known = {t.id for t in turns}
    asked = (datetime.fromisoformat(turns[-1].created_at) + timedelta(hours=1)).isoformat()
    questions: list[Question] = []
    skipped = 0
    for i, qa in enumerate(data.get("qa", [])):
        if qa.get("category") == 5:
            skipped += 1
            continue
        # Some ids are written "D8:6; D9:17" in one string.
        ids = [e for item in qa.get("evidence", []) for e in re.split(r"[;,\s]+", str(item))]
        evidence = tuple(dict.fromkeys(e for e in ids if e in known))
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(f"{path.stem}:q{i}", str(qa["question"]), asked, evidence,
                                  f"category {qa.get('category')}"))
    chosen = evenly(questions, max_questions)
    return Conversation("locomo", path.stem, tuple(turns), tuple(chosen),
                        skipped + len(questions) - len(chosen))


# -- KdConv -----------------------------------------------------------------------------

# "Information" holds a long description split over many utterances: there is no one fact
# to ask for, so only the other attributes (address, ticket, hours, phone, ...) are asked.
_KDCONV_SKIP = frozenset({"Information"})
_KDCONV_START = datetime(2024, 3, 1, 10, 0)


def kdconv(
    path: Path, *, per_conversation: int = 50, questions_per_conversation: int = 40,
    max_conversations: int | None = None,
) -> list[Conversation]:
    """KdConv dialogues as long conversations with questions made from their ``attrs``.

    A fact (entity, attribute) is asked about when, within its conversation, it has one
    value and is carried by utterances of one dialogue only, so the evidence is
    unambiguous; the questions are spread evenly over the conversation.
    """
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    out: list[Conversation] = []
    for c, first in enumerate(range(0, len(dialogues), per_conversation)):
        if max_conversations is not None and c >= max_conversations:
            break
        name = f"{path.stem}-{c + 1}"
        turns: list[Turn] = []
        carriers: dict[tuple[str, str], list[str]] = {}
        values: dict[tuple[str, str], set[str]] = {}
        where: dict[tuple[str, str], set[int]] = {}
        for d, dialogue in enumerate(dialogues[first:first + per_conversation]):
            day = _KDCONV_START + timedelta(days=d)
            for i, utterance in enumerate(dialogue["messages"]):
                tid = f"{name}:{d}:{i}"
                role = "user" if i % 2 == 0 else "assistant"
                turns.append(Turn(tid, role, str(utterance["message"]),
                                  (day + timedelta(minutes=i)).isoformat()))
                for attr in utterance.get("attrs", []):
                    if attr["attrname"] in _KDCONV_SKIP:
                        continue
                    key = (str(attr["name"]), str(attr["attrname"]))
                    carriers.setdefault(key, []).append(tid)
                    values.setdefault(key, set()).add(str(attr["attrvalue"]))
                    where.setdefault(key, set()).add(d)
        if not turns:
            continue
        asked = (datetime.fromisoformat(turns[-1].created_at) + timedelta(hours=1)).isoformat()
        order = {t.id: i for i, t in enumerate(turns)}
        eligible = sorted(
            (k for k in carriers if len(values[k]) == 1 and len(where[k]) == 1),
            key=lambda k: order[carriers[k][0]])
        questions = [
            Question(f"{name}:{ent}:{attr}", f"{ent}的{attr}是什么？", asked,
                     tuple(dict.fromkeys(carriers[(ent, attr)])), attr)
            for ent, attr in evenly(eligible, questions_per_conversation)
        ]
        out.append(Conversation("kdconv", name, tuple(turns), tuple(questions),
                                len(carriers) - len(questions)))
    return out


# -- LongMemEval ------------------------------------------------------------------------

_LME_DATE = ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def _lme_date(text: str) -> datetime:
    for fmt in _LME_DATE:
        try:
            return datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
    return datetime.fromisoformat(text.strip())


def longmemeval(path: Path, *, max_questions: int | None = None,
                dataset: str = "longmemeval") -> list[Conversation]:
    """A LongMemEval file: one conversation (the question's haystack) per question.

    ``dataset``: the name its figures are reported under."""
    items = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(items, dict):
        items = [items]
    out: list[Conversation] = []
    skipped = 0
    for n, item in enumerate(items):
        qid = str(item.get("question_id", f"{path.stem}-{n}"))
        sessions = item["haystack_sessions"]
        dates = item.get("haystack_dates") or [item["question_date"]] * len(sessions)
        turns: list[Turn] = []
        evidence: list[str] = []
        previous: datetime | None = None
        # Haystacks are not always in date order; feed them in date order, as they happened.
        for s in sorted(range(len(sessions)), key=lambda k: _lme_date(str(dates[k]))):
            start = _lme_date(str(dates[s]))
            if previous is not None and start <= previous:
                start = previous + timedelta(minutes=1)
            for i, t in enumerate(sessions[s]):
                tid = f"{qid}:{s}:{i}"
                at = start + timedelta(minutes=i)
                previous = at
                role = "assistant" if t.get("role") == "assistant" else "user"
                turns.append(Turn(tid, role, str(t.get("content", "")), at.isoformat()))
                if t.get("has_answer"):
                    evidence.append(tid)
        if not evidence or not turns:
            skipped += 1
            continue
        asked_dt = _lme_date(str(item["question_date"]))
        if previous is not None and asked_dt <= previous:
            asked_dt = previous + timedelta(hours=1)
        question = Question(qid, str(item["question"]), asked_dt.isoformat(), tuple(evidence),
                            str(item.get("question_type", "longmemeval")))
        out.append(Conversation(dataset, qid, tuple(turns), (question,)))
    chosen = evenly(out, max_questions)
    if chosen:
        first = chosen[0]
        chosen[0] = Conversation(first.dataset, first.name, first.turns, first.questions,
                                 skipped + len(out) - len(chosen))
    return chosen


def all_locomo(paths: Iterable[Path], *, max_questions: int | None = None) -> list[Conversation]:
    """Every LoCoMo file of ``paths``, in the order given."""
    return [locomo(p, max_questions=max_questions) for p in paths]
