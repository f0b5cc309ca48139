"""LoCoMo conversations: ``speaker_a``, ``speaker_b``, ``session_N`` and their dates.

A file is one conversation (the flat dict of ``data/multimodal_dialog``), one sample
``{sample_id, conversation: {...}, qa}`` or a list of samples (``locomo10.json``).
``speaker_a`` is read as the user and ``speaker_b`` as the assistant; sessions in number
order, each turn dated a minute after the one before from ``session_N_date_time``
(``1:56 pm on 8 May, 2023``); a shared photo adds its caption to the turn's text.

Then the ``qa`` questions are asked, in file order, an hour after the last turn: each is a
user message, its ``answer`` the assistant's reply, and its ``evidence`` (the ``dia_id``
of the turns that answer it, some written ``"D8:6; D9:17"`` in one string) is recorded
for the replay to check. Adversarial questions (category 5) have no answer: not asked.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

from memci._lazy import compile_pattern
from memci.traces._format import Format, dicts, mapping
from memci.traces._transcript import Transcript, text_of

__all__ = ["LOCOMO"]

_SESSION = compile_pattern(r"session_(\d+)$")
_IDS = compile_pattern(r"[;,\s]+")
_DATES = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%H:%M on %d %B, %Y")


def _date(value: object) -> datetime | None:
    for pattern in _DATES:
        try:
            return datetime.strptime(str(value).strip(), pattern)
        except ValueError:
            continue
    return None


def _dialogue(record: Any) -> dict[str, Any] | None:
    top = mapping(record)
    if top is None:
        return None
    inner = mapping(top.get("conversation"))
    body = inner if inner is not None else top
    if "speaker_a" in body and any(_SESSION.match(k) for k in body):
        return dict(body)
    return None


def _conversations(data: Any, strict: bool) -> list[Any] | None:
    del strict  # "speaker_a" and "session_N" are this format's own words
    if _dialogue(data) is not None:
        return [data]
    items = [i for i in dicts(data) if _dialogue(i) is not None]
    return list(items) or None


def _read(record: Any, out: Transcript) -> None:
    body = _dialogue(record) or {}
    said = _sessions(body, out)
    last = max((at for _, at in said.values() if at is not None), default=None)
    asked = last + timedelta(hours=1) if last is not None else None
    for number, qa in enumerate(dicts((mapping(record) or {}).get("qa")), start=1):
        origin = f"qa {number}"
        if "answer" not in qa:
            out.skip(origin, "a question with no answer in the file (adversarial, category "
                     "5), not asked")
            continue
        ids = [e for item in _listed(qa.get("evidence")) for e in _IDS.split(str(item)) if e]
        evidence = [(e, said[e][0]) for e in dict.fromkeys(ids) if e in said and said[e][0]]
        out.question(qa.get("question"), qa.get("answer"), evidence, origin=origin,
                     created_at=asked.isoformat() if asked is not None else None)
        if asked is not None:
            asked += timedelta(minutes=1)


def _listed(value: object) -> list[object]:
    return cast(list[object], value) if isinstance(value, list) else [value] if value else []


def _sessions(body: dict[str, Any], out: Transcript) -> dict[str, tuple[str, datetime | None]]:
    """Feed every session's turns; return each turn's text and time by its origin."""
    speaker_a = body.get("speaker_a")
    numbers = sorted(int(m.group(1)) for k in body if (m := _SESSION.match(k)))
    said: dict[str, tuple[str, datetime | None]] = {}
    previous: datetime | None = None
    for n in numbers:
        start = _date(body.get(f"session_{n}_date_time"))
        for i, turn in enumerate(dicts(body.get(f"session_{n}"))):
            at = start + timedelta(minutes=i) if start is not None else None
            if at is not None and previous is not None and at <= previous:
                at = previous + timedelta(minutes=1)
            previous = at or previous
            text = text_of(turn.get("text"))
            if turn.get("blip_caption"):
                text = f"{text} [shares a photo: {text_of(turn['blip_caption'])}]".strip()
            origin = str(turn.get("dia_id") or f"session {n} turn {i + 1}")
            stamp = at.isoformat() if at else None
            if turn.get("speaker") == speaker_a:
                out.user(text, origin=origin, created_at=stamp)
            else:
                out.assistant(text, origin=origin, created_at=stamp)
            said[origin] = (text, at)
    return said


LOCOMO = Format(
    "locomo", "LoCoMo: {speaker_a, speaker_b, session_N: [{speaker, dia_id, text}], "
    "session_N_date_time}, or samples {conversation: {...}, qa}", _conversations, _read)
