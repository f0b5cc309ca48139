"""The query analyzer (seed 003): which sources a new user input needs, and when it means.

From the newest user input it decides which sources ``build`` consults — ``recent`` (the
latest turns: always), ``history`` (search of the chat history), ``documents`` (file and
doc RAG) and ``code`` (the code index) — each with the reason, and reads a time hint
("yesterday", "last week", "on 2024-03-01", "上周", "昨天", "3月1日") into a
:class:`~memci.memory._time.TimeRange` relative to ``now``.

Rules by default, in English and Chinese: references to the past ("earlier", "last
time", "you said", "上次", "之前", "刚才", "记得") or a time hint → history; identifiers,
code file names, stack traces and words like "function", "class", "报错" → code;
"according to the doc", "README", "manual", "文档", "手册" → documents. With an LLM client
the model picks the sources (JSON), falling back to the rules on any error; the time
range is always read by the rules (a model is not trusted with calendar arithmetic).

:func:`asks` says whether an input asks something (a question: "?", "？", a closing "吗"
or "呢"; or "tell me", "remind me", "告诉我", "提醒我"): a build gives memory's share to a
page that asks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

from memci._dataclasses import dataclass, field
from memci._lazy import LazyLogger, LazyPattern
from memci.errors import LLMError
from memci.llm import LLMClient, answer_json
from memci.memory._time import TimeRange, time_hint
from memci.messages import Message
from memci.text import IDENT_RE, PATH_RE, is_cjk_text

__all__ = ["SOURCES", "QueryAnalysis", "QueryAnalyzer", "analyze_query", "asks"]

logger = LazyLogger("memci.memory")

#: Every source an analysis can name, in the order a builder consults them.
SOURCES = ("recent", "history", "documents", "code")

_RECENT_REASON = "the latest turns are always part of the context"


_SOURCES_SPLIT = LazyPattern(r"[\s,;，、]+")


@dataclass(frozen=True, slots=True)
class QueryAnalysis:
    """Sources to consult (always including ``recent``), why, and the time meant."""

    sources: tuple[str, ...]
    reasons: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    time_range: TimeRange | None = None
    source: str = "rules"

    def consults(self, name: str) -> bool:
        """Whether the analysis consults the source ``name``."""
        return name in self.sources

    @property
    def reason(self) -> str:
        """Every reason in one line."""
        return "; ".join(f"{name}: {self.reasons[name]}" for name in self.sources
                         if name in self.reasons)


# A question (a question mark, a Chinese question particle closing a clause) or a request
# to be told or reminded.
_ASKS = LazyPattern(r"[?？]|[吗呢](?:[。！!，,.…~～\s]|$)"
                    r"|(?:^|[.!;:]\s*)(?:please\s+|can\s+you\s+)?(?:remind|tell)\s+(?:me|us)\b"
                    r"|提醒我|告诉我", re.IGNORECASE | re.MULTILINE)


def asks(text: str) -> bool:
    """Whether ``text`` asks something: a question, or a request to be told or reminded.

    A remark ("Thanks, that means a lot!") asks nothing: what memory finds for its words
    is not needed to answer it.
    """
    return bool(_ASKS.search(text))


def _rx(pattern: str) -> LazyPattern:
    return LazyPattern(pattern, re.IGNORECASE)


_HISTORY = [
    ("refers to an earlier turn", _rx(
        r"\b(?:earlier|previously|last\s+time|the\s+other\s+day|before\s+(?:that|this|now)?"
        r"|again|as\s+(?:i|we|you)\s+(?:said|mentioned|discussed))\b")),
    ("asks what was said", _rx(
        r"\b(?:you|i|we)\s+(?:said|told|mentioned|discussed|talked|asked|agreed|decided|"
        r"suggested|recommended)\b|\bdo\s+you\s+remember\b|\bremember\b|\brecall\b"
        r"|\bwhat\s+did\s+(?:i|we|you)\b|\bour\s+(?:last|previous|earlier)\b")),
    ("refers to an earlier turn", LazyPattern(
        r"上次|上回|之前|刚才|刚刚|记得|以前|前面|先前|早些时候|你说过|我说过|我们聊过|我们讨论过|"
        r"我提过|你提过|说过的|聊过的|提到过|再说一遍|还是那个")),
]
_CODE = [
    ("quotes a stack trace", LazyPattern(
        r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+|\bat [\w.$]+\("
        r"[\w$]+\.(?:java|kt|scala|cs|js|ts):\d+\)|Exception in thread|\bpanic:|error\[E\d+\]"
        r"|^\s*at .+:\d+:\d+\)?$|\b\w+(?:Error|Exception):\s", re.MULTILINE)),
    ("names a code file", _rx(
        r"\b[\w./-]+\.(?:py|pyi|js|mjs|ts|tsx|jsx|go|rs|java|kt|swift|c|h|cc|cpp|hpp|cs|rb|"
        r"php|sh|sql|vue|scala|lua|dart|ex|hs|ml|zig)\b")),
    ("has a code block", LazyPattern(r"```|^(?: {4}|\t)\S", re.MULTILINE)),
    ("talks about code", _rx(
        r"\b(?:function|method|class|variable|compile[sd]?|compiler|bug|stack\s*trace|"
        r"exception|refactor|implement(?:ation)?|endpoint|regex|unit\s+tests?|import|module|"
        r"segfault|null\s+pointer|type\s+error|syntax|repo(?:sitory)?|codebase|source\s+code|"
        r"pull\s+request|commit|branch|merge\s+conflict|dependency|library|api)\b")),
    ("talks about code", LazyPattern(
        r"报错|函数|方法|代码|编译|异常|变量|接口|调试|重构|单元测试|堆栈|源码|类名|模块|依赖|"
        r"提交|分支|脚本|bug", re.IGNORECASE)),
]
_DOCS = [
    ("refers to a document", _rx(
        r"\baccording\s+to\s+(?:the\s+)?(?:docs?|documentation|manual|spec|guide|readme|"
        r"policy|handbook|wiki|paper|article|report)\b|\b(?:the\s+)?(?:docs|documentation|"
        r"manual|readme|spec(?:ification)?|user\s+guide|handbook|wiki|faq|whitepaper|"
        r"knowledge\s+base|changelog|release\s+notes)\b|\bin\s+the\s+(?:pdf|paper|article|"
        r"report|contract|slides)\b")),
    ("names a document file", _rx(r"\b[\w./-]+\.(?:md|rst|pdf|docx?|txt|pptx?|xlsx?|html?|"
                                  r"epub|odt)\b")),
    ("refers to a document", LazyPattern(
        r"文档|手册|说明书|规范|指南|资料|论文|报告|知识库|合同|条款|章程|根据.{0,10}(?:规定|说明)|"
        r"按照.{0,10}(?:要求|规定)|说明文件|用户手册|官方文档|帮助文档")),
]

_PROMPT = (
    "Decide which sources an assistant should consult to answer the user's newest "
    "message. Sources: \"history\" (search of earlier conversation), \"documents\" "
    "(files and docs the user gave), \"code\" (the code index); the latest turns are "
    "always included. Answer with JSON only: {\"sources\": [..], \"reasons\": "
    "{\"<source>\": \"why\"}}. Write reasons in the message's language.\n\nMessage:\n"
)


def analyze_query(
    text: str, *, now: datetime | None = None, client: LLMClient | None = None
) -> QueryAnalysis:
    """Which sources ``text`` needs (rules, or ``client`` with the rules as fallback)."""
    return QueryAnalyzer(client).analyze(text, now=now)


class QueryAnalyzer:
    """Decides which sources a user input needs; rules, or a model when given a client."""

    def __init__(self, client: LLMClient | None = None, *, max_tokens: int = 200) -> None:
        self.client = client
        self.max_tokens = max_tokens

    def analyze(self, text: str, *, now: datetime | None = None) -> QueryAnalysis:
        """Which sources the newest user input ``text`` needs, relative to ``now``."""
        hint = time_hint(text, now=now) if text.strip() else None
        if self.client is not None and text.strip():
            try:
                return self._ask(text, hint)
            except (LLMError, ValueError) as exc:
                logger.warning("query analysis by model failed, using rules: %s", exc)
        return analyze_by_rules(text, hint)

    def _ask(self, text: str, hint: TimeRange | None) -> QueryAnalysis:
        assert self.client is not None
        prompt = _PROMPT + text[:4000]
        if is_cjk_text(text[:2000]):
            prompt += "\n\n(请用中文写 reasons。)"
        completion = self.client.complete([Message.user(prompt)], max_tokens=self.max_tokens,
                                          temperature=0.0)
        data: Any = answer_json(completion.text)
        raw = data.get("sources")
        if isinstance(raw, str):  # "history, code" written as one string
            raw = _SOURCES_SPLIT.split(raw.strip())
        if not isinstance(raw, list):
            raise ValueError(f"the model's plan has no 'sources' list: {data!r}"[:300])
        given = data.get("reasons")
        why: Mapping[str, Any] = given if isinstance(given, dict) else {}
        chosen = {str(s).lower() for s in raw}
        reasons = {"recent": _RECENT_REASON}
        for name in SOURCES[1:]:
            if name in chosen:
                reasons[name] = str(why.get(name) or "the model chose it")
        if hint is not None and "history" not in reasons:
            reasons["history"] = f"names a time: {hint.label!r}"
        sources = tuple(name for name in SOURCES if name in reasons)
        return QueryAnalysis(sources, MappingProxyType(reasons), hint, "llm")


def analyze_by_rules(text: str, hint: TimeRange | None = None) -> QueryAnalysis:
    """Which sources ``text`` needs, by the rules alone (see the module notes)."""
    reasons: dict[str, str] = {"recent": _RECENT_REASON}
    history = _first(_HISTORY, text)
    if history:
        reasons["history"] = history
    elif hint is not None:
        reasons["history"] = f"names a time: {hint.label!r}"
    documents = _first(_DOCS, text)
    if documents:
        reasons["documents"] = documents
    code = _first(_CODE, text)
    if code is None:
        idents = [i for i in IDENT_RE.findall(text) if not _is_plain(i)]
        paths = [p for p in PATH_RE.findall(text) if not p.lower().startswith("http")]
        if idents:
            code = f"names an identifier: {idents[0]!r}"
        elif paths and "documents" not in reasons:
            code = f"names a path: {paths[0]!r}"
    if code:
        reasons["code"] = code
    sources = tuple(name for name in SOURCES if name in reasons)
    return QueryAnalysis(sources, MappingProxyType(reasons), hint, "rules")


def _first(rules: list[tuple[str, LazyPattern]], text: str) -> str | None:
    for reason, pattern in rules:
        found = pattern.search(text)
        if found:
            return f"{reason}: {found.group(0).strip()[:60]!r}"
    return None


def _is_plain(identifier: str) -> bool:
    """Tell whether a dotted "identifier" is prose ("e.g"), a domain or a document name."""
    low = identifier.lower().rstrip("(")
    return low in ("e.g", "i.e", "a.m", "p.m") or low.endswith(
        (".com", ".org", ".net", ".io", ".md", ".pdf", ".txt", ".doc", ".docx")
    )
