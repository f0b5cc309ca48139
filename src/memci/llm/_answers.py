"""Reading what a model wrote: its answer without the wrapping, or the JSON inside it.

Models wrap what they were asked for: a reasoning block (``<think>…</think>``), a
preamble ("Here is the summary:", "好的，以下是摘要："), a heading ("## Summary"), code
fences, a closing offer ("Let me know if…"). Every place in memci that reads a model's
answer goes through here, so one model's habits are handled everywhere at once.

Invariants: :func:`clean_answer` keeps every line that carries content, in order; it
raises :class:`~memci.errors.LLMResponseError` (with the answer as ``body``) only when
nothing is left or the answer is a refusal or an error report, never for its form.
:func:`answer_json` returns the first JSON object in the answer, wherever it sits.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memci._lazy import LazyPattern
from memci.errors import LLMResponseError

__all__ = ["answer_bool", "answer_json", "clean_answer", "is_refusal"]

_THINK_RE = LazyPattern(r"<(think|thinking|reasoning)>.*?(?:</\1>|\Z)", re.DOTALL | re.I)
_FENCE_RE = LazyPattern(r"^\s*(?:```|~~~)[\w+-]*\s*$")
_ACK = r"(?:sure|certainly|of course|okay|ok|absolutely|great|好的|当然|没问题)"
_INTRO_RE = LazyPattern(
    rf"^\s*(?:{_ACK}[\s,.!，。！]*)?(?:here(?:'s| is| are)|below (?:is|are)"
    r"|the following (?:is|are) (?:a |an |the |my )?(?:summary|title|note|lines|handoff)"
    r"|i(?:'ve| have) (?:summari[sz]ed|written)"
    r"|(?:以下是|下面是|这是|为您|为你)[^\n]*(?:摘要|总结|概括|标题|交接|说明))[^\n]*[:：]\s*$",
    re.IGNORECASE,
)
_ACK_RE = LazyPattern(rf"^\s*{_ACK}[\s,.!，。！]*$", re.IGNORECASE)
_HEADING_RE = LazyPattern(
    r"^\s*(?:#+\s*)?[*_]*(?:summary|page summary|handoff(?: note)?|note|摘要|总结|交接说明)"
    r"[*_]*\s*[:：]?[*_]*\s*$", re.IGNORECASE,
)
_CLOSING_RE = LazyPattern(
    r"^\s*(?:let me know|i hope (?:this|that)|hope (?:this|that) helps|feel free|"
    r"if you (?:need|want|would like|have)|如需|如果(?:您|你)(?:需要|还需要|想)|希望(?:这|以上))",
    re.IGNORECASE,
)
_REFUSAL_RE = LazyPattern(
    r"^\W*(?:i'?m sorry|i am sorry|sorry,|apologies|as an ai\b|"
    r"(?:unfortunately,?\s*)?i (?:can(?:no|')?t|cannot|am unable to|'m unable to|won'?t|"
    r"will not|am not able to|'m not able to) (?:help|assist|comply|fulfil|provide|"
    r"summari[sz]e|do that|create|write|continue|complete)|"
    r"抱歉|对不起|很抱歉|我(?:无法|不能|没法|没办法)(?:帮|协助|提供|完成|总结|满足|处理))",
    re.IGNORECASE,
)
_ERROR_RE = LazyPattern(r"^\W*(?:error|错误)\s*[:：]", re.IGNORECASE)


def clean_answer(text: str) -> str:
    """The content of a model's answer: no reasoning, fences, preamble or closing offer.

    Raises :class:`LLMResponseError` when nothing is left, or when the answer refuses
    ("I can't help with that", "抱歉，我无法…") or reports an error instead of answering.
    """
    lines = [line.rstrip() for line in _THINK_RE.sub("", text).splitlines()]
    lines = [line for line in lines if not _FENCE_RE.match(line)]
    while lines and not lines[0].strip():
        lines.pop(0)
    # A preamble only goes when something follows it: a one-line answer is the answer.
    while len(lines) > 1 and (_INTRO_RE.match(lines[0]) or _ACK_RE.match(lines[0])
                              or _HEADING_RE.match(lines[0]) or not lines[0].strip()):
        lines.pop(0)
    while len(lines) > 1 and (_CLOSING_RE.match(lines[-1]) or not lines[-1].strip()):
        lines.pop()
    answer = "\n".join(lines).strip()
    if not answer or _INTRO_RE.match(answer) or _ACK_RE.match(answer) or _HEADING_RE.match(
            answer):
        raise LLMResponseError("the model answered with nothing usable", body=text)
    if is_refusal(answer):
        raise LLMResponseError("the model refused or reported an error", body=text)
    return answer


def is_refusal(answer: str) -> bool:
    """Whether ``answer`` (cleaned) refuses or reports an error rather than answering."""
    if _REFUSAL_RE.match(answer):
        return True
    if "\n" not in answer and _ERROR_RE.match(answer):
        return True
    data = _first_object(answer)
    return isinstance(data, dict) and set(data) <= {"error", "code", "message", "type"} and (
        "error" in data)


def answer_json(text: str) -> dict[str, Any]:
    """The first JSON object in a model's answer (fenced, after prose, or Python-style).

    Raises :class:`LLMResponseError` when the answer holds none.
    """
    body = "\n".join(line for line in _THINK_RE.sub("", text).splitlines()
                     if not _FENCE_RE.match(line))
    found = _first_object(body)
    if found is None:
        raise LLMResponseError("the model's answer holds no JSON object", body=text)
    return found


def answer_bool(value: Any) -> bool | None:
    """A yes/no a model wrote as JSON: ``true``, ``"true"``, ``"yes"``, ``"是"``…; else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _BOOLS.get(value.strip().lower())
    return None


_BOOLS = {"true": True, "yes": True, "y": True, "是": True, "对": True,
          "false": False, "no": False, "n": False, "否": False, "不是": False}


def _first_object(text: str) -> dict[str, Any] | None:
    """The first ``{…}`` in ``text`` that reads as JSON, or failing that as a Python dict."""
    decoder = json.JSONDecoder()
    starts = [i for i, char in enumerate(text) if char == "{"]
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    # Models trained on Python write True/False/None and single quotes now and then (ast,
    # ~3 ms in a fresh process, loads with the first such answer).
    import ast

    for start in starts:
        end = text.rfind("}")
        while end > start:
            try:
                value = ast.literal_eval(text[start:end + 1])
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                end = text.rfind("}", start, end)
                continue
            return value if isinstance(value, dict) else None
    return None
