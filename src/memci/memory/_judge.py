"""The eligibility judge (seed 003): does a text belong in long-term memory, and why?

A text (an archived page's text, or a fact) is eligible when it holds something worth
remembering across sessions. By rules (the default), in English and Chinese, sentence by
sentence, these kinds, strongest first:

- ``correction`` — "actually …", "no, I meant …", "更正", "不对，…", "我是说";
- ``decision`` — "we decided …", "let's go with …", "决定", "就用 …", "定了";
- ``constraint`` — "must (not) …", "don't …", "never …", "不要", "必须", "只能";
- ``preference`` — "I prefer / like / hate …", "always use …", "喜欢", "偏好";
- ``user_fact`` — "I am / I'm a …", "my name is …", "I live in …", "我是", "我叫", "我的 …".

Questions, thanks and small talk are not eligible; neither is narration of the work at
hand ("I'm going to look at the file", "I don't know"). With an LLM client the judge asks
the model for a JSON verdict and falls back to the rules on any error or unreadable
answer. The :class:`Judgement` always records why: the kind, the reason (which rule, or
the model's words) and the facts (the sentences that made it eligible).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memci._dataclasses import dataclass, field
from memci._lazy import LazyLogger, LazyPattern
from memci.errors import LLMError
from memci.llm import LLMClient, answer_bool, answer_json
from memci.messages import Message
from memci.text import clean_text, fit_line, is_cjk_text, split_sentences

__all__ = ["KINDS", "EligibilityJudge", "Judgement", "judge", "judge_by_rules"]

logger = LazyLogger("memci.memory")

#: Kinds a judgement can name, strongest first; ``none`` means not eligible.
KINDS = ("correction", "decision", "constraint", "preference", "user_fact", "none")
_FACT_WIDTH = 240


@dataclass(frozen=True, slots=True)
class Judgement:
    """Whether a text goes to long-term memory, what kind it is, why, and its facts."""

    eligible: bool
    kind: str
    reason: str
    facts: list[str] = field(default_factory=list)
    source: str = "rules"


def _rx(pattern: str) -> LazyPattern:
    return LazyPattern(pattern, re.IGNORECASE)


_RULES: dict[str, list[tuple[str, LazyPattern]]] = {
    "correction": [
        ("'actually' correcting", _rx(r"^(?:no[,.!]?\s+|oh,?\s+|well,?\s+)?actually\b")),
        ("'I meant'", _rx(r"\b(?:no|sorry|oops)[,.!]*\s+i\s+meant\b|\bwhat\s+i\s+meant\s+"
                          r"(?:was|is)\b|^i\s+meant\b")),
        ("'correction'", _rx(r"^\s*correction\s*[:：,]|\bto\s+correct\s+(?:myself|that)\b")),
        ("'that's wrong'", _rx(r"\bthat(?:'s|\s+is)\s+(?:wrong|not\s+(?:right|correct|true))"
                               r"|\bi\s+was\s+wrong\b|\bi\s+misspoke\b|\bnot\s+\S+,\s+but\s+")),
        ("更正 / 不对", LazyPattern(r"更正|纠正|说错了|搞错了|记错了|写错了|我是说|应该是|其实是|"
                             r"^不对[，,。！!]|^不是[^吗？?]{1,20}[，,]而是")),
    ],
    "decision": [
        ("'we decided'", _rx(r"\b(?:we|i)(?:'ve|\s+have)?\s+decided\b|\bdecision\s*[:：]"
                             r"|\b(?:we|i)\s+(?:will|'ll)\s+go\s+with\b|\bsettled\s+on\b")),
        ("'let's go with'", _rx(r"\blet'?s\s+(?:go\s+with|use|stick\s+with|pick|choose|"
                                r"switch\s+to|adopt)\b|\bgoing\s+(?:forward\s+)?with\b|"
                                r"\b(?:we|i)\s+(?:agreed|chose|picked)\b")),
        ("决定", LazyPattern(r"决定|就用|就选|就这么定|就这样定|定了|选定|敲定|确定用|采用|"
                             r"统一用|改用|那就用")),
    ],
    "constraint": [
        ("'must'", _rx(r"\bmust(?:\s+not|n't)?\b|\bhave\s+to\b|\bhas\s+to\b"
                       r"|\bis\s+required\b|\bare\s+required\b")),
        ("'don't' / 'never'", _rx(r"^(?:please\s+)?(?:don'?t|do\s+not|never|always|avoid|"
                                  r"make\s+sure|only\s+use|no\s+more\s+than)\b"
                                  r"|\bshould\s+(?:never|not|always)\b|\bnot\s+allowed\b"
                                  r"|\b(?:at\s+most|at\s+least|no\s+more\s+than)\s+\d")),
        ("不要 / 必须", LazyPattern(r"不要|别用|必须|只能|不能|不许|不得|禁止|务必|一定要|"
                                   r"千万别|至多|至少|不超过|只用")),
    ],
    "preference": [
        ("'I prefer'", _rx(r"\bi\s+(?:really\s+|much\s+|strongly\s+)?(?:prefer|like|love|"
                           r"enjoy|hate|dislike|can't\s+stand|don'?t\s+like|do\s+not\s+like)\b"
                           r"|\bi'?d\s+rather\b|\bmy\s+favou?rite\b|\bi'?m\s+(?:a\s+)?fan\s+of\b"
                           r"|\b(?:the\s+)?user\s+(?:prefers|likes|dislikes|hates|wants)\b")),
        ("'always/never use'", _rx(r"\b(?:always|never|usually)\s+(?:use|write|run|answer|"
                                   r"reply|respond|format)\b")),
        ("喜欢", LazyPattern(r"喜欢|偏好|偏爱|更爱|最爱|讨厌|习惯用|倾向于|受不了|爱吃|爱喝|"
                             r"用户(?:偏好|喜欢)")),
    ],
    "user_fact": [
        ("'my name is'", _rx(r"\bmy\s+name\s+is\b|\bcall\s+me\b|\bi'?m\s+called\b")),
        ("'I am'", _rx(r"\bi\s*(?:'m|\s+am)\s+(?:a|an|the)\s+\w+"
                       r"|\bi\s*(?:'m|\s+am)\s+(?:from|based\s+in|allergic|vegetarian|vegan|"
                       r"married|single|retired|\d{1,3}\b)"
                       r"|\bi\s+(?:live|work|grew\s+up|was\s+born)\s+(?:in|at|for|as|on)\b"
                       r"|\bi\s+(?:have|own)\s+(?:a|an|two|three|\d+)\s+(?:kids?|children|sons?|"
                       r"daughters?|dogs?|cats?|cars?|wife|husband)\b")),
        ("'my …'", _rx(r"\bmy\s+(?:job|role|title|wife|husband|partner|kids?|children|son|"
                       r"daughter|team|company|employer|boss|manager|email|phone|birthday|"
                       r"address|home\s*town|timezone|time\s+zone|native\s+language|age|"
                       r"dog|cat|pet|city|country|background)\b")),
        ("'the user is'", _rx(r"\b(?:the\s+)?user(?:'s)?\s+(?:is|works|lives|name|has)\b")),
        ("我是 / 我叫", LazyPattern(r"我叫|我的名字|我姓|我是(?!说|不是|否)|我来自|我住在|"
                                  r"我在[^，。,]{1,12}(?:工作|上班|上学|读书)|我今年\d+岁|"
                                  r"我有(?:一|两|\d)个|"
                                  r"我的(?:工作|职业|公司|团队|老板|邮箱|电话|地址|生日|家乡|老家|"
                                  r"孩子|女儿|儿子|老婆|老公|妻子|丈夫|爱好|专业|母语|时区|城市|宠物)")),
    ],
}

# Sentences that look like a rule but are the work at hand, not something to remember.
_NOT_A_FACT = _rx(
    r"^\s*(?:i\s*(?:'m|\s+am)\s+(?:going|trying|looking|about|not\s+sure|sorry|here|done|"
    r"a\s+(?:bit|little)|the\s+one\s+who\s+(?:asked|said)|"
    r"working\s+on\s+(?:it|this|that))|i\s+(?:don'?t|do\s+not)\s+(?:know|think|understand|"
    r"see|get|remember|have)\b|let\s+me\b|thanks|thank\s+you)"
    r"|^(?:好的|谢谢|嗯|哦|我不知道|我不确定|我看看|我想想|让我)"
)
_QUESTION = LazyPattern(r"[?？]\s*[\"'”’」』)）]*\s*$|[吗呢][。.!！]?\s*$")

_PROMPT = {
    "en": (
        "Decide whether the text below should be stored in an assistant's long-term memory "
        "about this user: facts about the user, decisions, preferences, constraints, or "
        "corrections of earlier statements. Questions, small talk and the work at hand are "
        "not eligible. Answer with JSON only: {\"eligible\": true|false, \"kind\": one of "
        "\"correction\", \"decision\", \"constraint\", \"preference\", \"user_fact\", "
        "\"none\", \"reason\": \"…\", \"facts\": [\"each fact as one short sentence\"]}."
        "\n\nText:\n"
    ),
    "zh": (
        "判断下面的文字是否应写入助手关于该用户的长期记忆：用户本人的事实、决定、偏好、约束，"
        "或对之前说法的更正。提问、寒暄和手头的具体操作不写入。只回复 JSON："
        "{\"eligible\": true|false, \"kind\": \"correction\"、\"decision\"、\"constraint\"、"
        "\"preference\"、\"user_fact\"、\"none\" 之一, \"reason\": \"…\", "
        "\"facts\": [\"每条事实一句话\"]}。事实和理由用中文写。\n\n文字：\n"
    ),
}


def judge(text: str, *, client: LLMClient | None = None) -> Judgement:
    """Judge ``text`` by rules, or through ``client`` with the rules as the fallback."""
    return EligibilityJudge(client).judge(text)


class EligibilityJudge:
    """Decides what goes into long-term memory; rules, or a model when ``client`` is given."""

    def __init__(self, client: LLMClient | None = None, *, max_tokens: int = 300) -> None:
        self.client = client
        self.max_tokens = max_tokens

    def judge(self, text: str) -> Judgement:
        """Judge one text (a fact, or an archived page's text)."""
        if self.client is not None and text.strip():
            try:
                return self._ask(text)
            except (LLMError, ValueError) as exc:
                ruled = judge_by_rules(text)
                logger.warning("judge by model failed, using rules: %s", exc)
                return Judgement(ruled.eligible, ruled.kind,
                                 f"{ruled.reason} (model failed: {type(exc).__name__})",
                                 ruled.facts, "rules")
        return judge_by_rules(text)

    def judge_messages(self, messages: Sequence[Message]) -> Judgement:
        """Judge a page: what the user wrote, plus decisions either side stated."""
        user = "\n".join(m.content for m in messages if m.role == "user" and m.content)
        said = "\n".join(m.content for m in messages if m.role == "assistant" and m.content)
        verdict = self.judge(user) if user.strip() else _NOT_ELIGIBLE
        if verdict.eligible or not said.strip():
            return verdict
        decided = judge_by_rules(said, kinds=("decision",))
        return decided if decided.eligible else verdict

    def _ask(self, text: str) -> Judgement:
        assert self.client is not None
        lang = "zh" if is_cjk_text(text[:4000]) else "en"
        completion = self.client.complete(
            [Message.user(_PROMPT[lang] + text[:8000])], max_tokens=self.max_tokens,
            temperature=0.0,
        )
        data: Any = answer_json(completion.text)
        eligible = answer_bool(data.get("eligible"))
        if eligible is None:
            raise ValueError(f"the model's verdict has no boolean 'eligible': {data!r}"[:300])
        given = data.get("kind")
        kind = given if isinstance(given, str) and given in KINDS else "user_fact"
        facts = data.get("facts")
        facts = [str(f) for f in facts if str(f).strip()] if isinstance(facts, list) else []
        reason = str(data.get("reason") or "the model said so")
        return Judgement(eligible, "none" if not eligible else kind, reason,
                         facts if eligible else [], "llm")


_NOT_ELIGIBLE = Judgement(False, "none", "nothing the user said")


def judge_by_rules(text: str, *, kinds: Sequence[str] = KINDS[:-1]) -> Judgement:
    """Judge ``text`` by the rules alone (see the module notes)."""
    hits: dict[str, list[tuple[str, str]]] = {}
    for sentence in split_sentences(clean_text(text)):
        if _QUESTION.search(sentence) or _NOT_A_FACT.search(sentence):
            continue
        for kind in kinds:
            for label, pattern in _RULES[kind]:
                if pattern.search(sentence):
                    hits.setdefault(kind, []).append((label, sentence))
                    break
    if not hits:
        return Judgement(False, "none",
                         "no fact about the user, decision, preference, constraint or "
                         "correction")
    kind = next(k for k in KINDS if k in hits)
    facts: list[str] = []
    for k in KINDS:
        for _, sentence in hits.get(k, []):
            fact = fit_line(sentence, _FACT_WIDTH)
            if fact not in facts:
                facts.append(fact)
    reasons = "; ".join(
        f"{k.replace('_', ' ')}: {label} in {fit_line(sentence, 60)!r}"
        for k in KINDS for label, sentence in hits.get(k, [])[:1]
    )
    return Judgement(True, kind, reasons, facts)
