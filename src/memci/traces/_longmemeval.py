"""LongMemEval: ``{question, question_date, haystack_sessions, haystack_dates, answer}``.

A file is one item or a list of them (one conversation per question). The haystack's
sessions are fed in date order (ties keep the file's order), each message dated a
minute after the one before from its session's date (``2023/05/20 (Sat) 02:21``); then
the question is the last user message, at ``question_date``, and the expected ``answer``
the assistant's reply, so the last request is the one that answers the question. The
turns marked ``has_answer`` are the question's evidence, recorded for the replay to check.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

from memci.traces._format import Format, dicts, mapping
from memci.traces._transcript import Transcript, text_of

__all__ = ["LONGMEMEVAL", "parse_date"]

_DATES = ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y/%m/%d", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def parse_date(value: object) -> datetime | None:
    """A LongMemEval date, or None when it is not one."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    for pattern in _DATES:
        try:
            return datetime.strptime(text, pattern)
        except ValueError:
            continue
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    del strict  # "haystack_sessions" is this format's own word
    top = mapping(data)
    if top is not None:
        return [top] if isinstance(top.get("haystack_sessions"), list) else None
    items = [i for i in dicts(data) if isinstance(i.get("haystack_sessions"), list)]
    return list(items) or None


def _read(record: Any, out: Transcript) -> None:
    item = mapping(record) or {}
    sessions = cast(list[Any], item.get("haystack_sessions") or [])
    raw_dates = item.get("haystack_dates")
    dates = [parse_date(d) for d in raw_dates] if isinstance(raw_dates, list) else []
    dates += [None] * (len(sessions) - len(dates))
    if any(d is None for d in dates[:len(sessions)]):
        out.skip("haystack_dates", "some sessions have no readable date: their messages "
                 "carry none")
    order = sorted(range(len(sessions)),
                   key=lambda s: (dates[s] is None, dates[s] or datetime.min))
    evidence: list[tuple[str, str]] = []
    previous: datetime | None = None
    for s in order:
        start = dates[s]
        for i, turn in enumerate(dicts(sessions[s])):
            at: datetime | None = None
            if start is not None:
                at = start + timedelta(minutes=i)
                if previous is not None and at <= previous:
                    at = previous + timedelta(minutes=1)
                previous = at
            origin = f"haystack session {s + 1} turn {i + 1}"
            stamp = at.isoformat() if at else None
            if turn.get("role") == "assistant":
                out.assistant(turn.get("content"), origin=origin, created_at=stamp)
            else:
                out.user(turn.get("content"), origin=origin, created_at=stamp)
            text = text_of(turn.get("content"))
            if turn.get("has_answer") is True and text:
                evidence.append((origin, text))
    asked = parse_date(item.get("question_date"))
    if asked is not None and previous is not None and asked <= previous:
        asked = previous + timedelta(hours=1)
    out.question(item.get("question"), item.get("answer"), evidence, origin="question",
                 created_at=asked.isoformat() if asked else None)


LONGMEMEVAL = Format(
    "longmemeval", "LongMemEval: {question, question_date, haystack_sessions: [[{role, "
    "content}]], haystack_dates, answer}, one or a list", _conversations, _read)
