"""The LLM summarizer: the same protocol, written by a model through a :mod:`memci.llm` client.

Prompts ask for the conversation's own language: when most of what the user and the
assistant wrote is CJK (tool output is not counted: logs are English everywhere), the
instruction itself is written in Chinese and asks for a Chinese answer.

Invariants: every answer is held to the same limits as the extractive one (a line fits the
entry width; ``summarize_text`` and ``handoff`` fit their token budget as counted by the
summarizer's tokenizer, cut extractively when the model ran long); input larger than
``max_input_tokens`` is first reduced extractively, so a request never grows without
bound. On any :class:`~memci.errors.LLMError` (and on an empty answer) the extractive
summarizer answers instead, unless ``strict=True``, where the error is raised (a
background job then retries it, and the extractive stand-in serves meanwhile).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from memci._lazy import LazyPattern
from memci.errors import LLMError, LLMResponseError
from memci.llm import LLMClient, clean_answer
from memci.messages import Message
from memci.summarize._budget import fit_tokens
from memci.summarize._extractive import ExtractiveSummarizer, compress
from memci.summarize._pageanswer import pack_lines, read_page
from memci.summarize._protocol import ENTRY_WIDTH, TITLE_WIDTH, Summarizer, TokenCounter
from memci.text import fit_line, is_cjk_text

__all__ = ["LLMSummarizer", "conversation_language"]

logger = logging.getLogger("memci.summarize")

T = TypeVar("T")

_SYSTEM = {
    "en": (
        "You write short, factual summaries of parts of a conversation for an AI agent's "
        "memory. Keep names, numbers, dates, file paths, identifiers and decisions exactly "
        "as written. Never add anything the text does not say. Answer in English."
    ),
    "zh": (
        "你为 AI 助手的记忆撰写简短、准确的摘要。人名、数字、日期、文件路径、标识符和决定"
        "必须原样保留，不要添加原文没有的内容。请用中文回答。"
    ),
}
_ENTRY = {
    "en": ("Summarize this {role} message in ONE line of at most {width} characters. "
           "Reply with the line only.\n\n{body}"),
    "zh": "用一行（不超过 {width} 个汉字）概括下面这条{role}消息，只回复这一行。\n\n{body}",
}
_PAGE = {
    "en": ("Below is one page of a conversation with {n} numbered entries. Write a title of "
           "at most {title} characters, then one line of at most {width} characters per "
           "entry. Reply exactly in this form:\nTitle: <title>\n1. <line for entry 1>\n"
           "2. <line for entry 2>\n…\n\n{body}"),
    "zh": ("下面是对话中的一页，共 {n} 条编号消息。先写一个不超过 {title} 个汉字的标题，"
           "再为每条消息各写一行（不超过 {width} 个汉字）。严格按以下格式回复：\n标题：<标题>\n"
           "1. <第 1 条>\n2. <第 2 条>\n…\n\n{body}"),
}
_TITLE = {
    "en": ("Write a title of at most {title} characters for this page of a conversation: "
           "what was asked or done. Reply with the title only.\n\n{body}"),
    "zh": ("为下面这页对话写一个不超过 {title} 个汉字的标题（问了什么或做了什么），"
           "只回复标题。\n\n{body}"),
}
_TEXT = {
    "en": ("Summarize the notes below in at most {tokens} tokens (about {words} words). "
           "Keep every fact that matters later: names, numbers, paths, decisions, open "
           "questions. Reply with the summary only.\n\n{body}"),
    "zh": ("把下面的内容压缩成不超过 {tokens} 个 token（约 {chars} 个汉字）的摘要，保留之后"
           "还会用到的事实：人名、数字、路径、决定、未解决的问题。只回复摘要。\n\n{body}"),
}
_HANDOFF = {
    "en": ("Write a handoff note, at most {tokens} tokens, so that another agent can take "
           "over this conversation: the goal, what has been done, decisions and facts "
           "(keep names, numbers and paths exactly), open questions, and the next step. "
           "Reply with the note only.\n\n{body}"),
    "zh": ("写一份交接说明（不超过 {tokens} 个 token），让另一个助手能接手这段对话：目标、"
           "已完成的工作、决定和事实（人名、数字、路径原样保留）、未解决的问题和下一步。"
           "只回复交接说明。\n\n{body}"),
}
_ROLES_ZH = {"user": "用户", "assistant": "助手", "tool": "工具结果", "system": "系统"}

_PREFIX_RE = LazyPattern(
    r"^\s*(?:[-*•>#]+\s*|\d{1,2}[.)、]\s+|[*_]*(?:summary|line|title|摘要|标题)[*_]*\s*[:：]\s*)+",
    re.IGNORECASE,
)


def conversation_language(messages: Sequence[Message]) -> str:
    """``zh`` when what user and assistant wrote is mostly CJK, else ``en``."""
    spoken = " ".join(m.content[:1000] for m in messages if m.role in ("user", "assistant"))
    if not spoken.strip():
        spoken = " ".join(m.content[:1000] for m in messages)
    return "zh" if is_cjk_text(spoken[:6000]) else "en"


class LLMSummarizer:
    """Summaries written by a model, with the extractive summarizer as the fallback.

    ``client`` is any :class:`memci.llm.LLMClient`. ``fallback`` answers when the model
    fails (default: an :class:`ExtractiveSummarizer` sharing ``tokenizer``); with
    ``strict=True`` failures raise instead. ``calls`` and ``fallbacks`` count model calls
    and answers the fallback gave.
    """

    name = "llm"

    def __init__(
        self,
        client: LLMClient,
        *,
        fallback: Summarizer | None = None,
        strict: bool = False,
        tokenizer: TokenCounter | None = None,
        max_input_tokens: int = 6000,
        temperature: float | None = 0.2,
        entry_width: int = ENTRY_WIDTH,
        title_width: int = TITLE_WIDTH,
    ) -> None:
        self.client = client
        self._extractive = ExtractiveSummarizer(
            tokenizer=tokenizer, entry_width=entry_width, title_width=title_width
        )
        self.fallback: Summarizer = fallback or self._extractive
        self.strict = strict
        self.max_input_tokens = max_input_tokens
        self.temperature = temperature
        self.entry_width = entry_width
        self.title_width = title_width
        self._lock = threading.Lock()
        self.calls = 0
        self.fallbacks = 0

    @property
    def tokenizer(self) -> TokenCounter:
        """The tokenizer budgets are held to."""
        return self._extractive.tokenizer

    # -- the protocol ----------------------------------------------------------------------

    def summarize_entry(self, message: Message) -> str:
        """One line for ``message``, written by the model."""
        lang = conversation_language([message])
        role = _ROLES_ZH[message.role] if lang == "zh" else message.role
        prompt = _ENTRY[lang].format(
            role=role, width=self._width_for(lang, self.entry_width),
            body=self._render([message], numbered=False),
        )

        def call() -> str:
            line = _first_line(self._ask(lang, prompt, 120))
            return compress(line, self.entry_width)

        return self._guard(call, lambda: self.fallback.summarize_entry(message))

    def summarize_page(self, messages: Sequence[Message]) -> list[str]:
        """One line per message from one model call (missing lines: extractive)."""
        if not messages:
            return []
        return self.page(messages)[1]

    def page_title(self, messages: Sequence[Message]) -> str:
        """Return a title for the page, written by the model."""
        if not messages:
            return ""
        lang = conversation_language(messages)
        prompt = _TITLE[lang].format(
            title=self._width_for(lang, self.title_width), body=self._render(messages)
        )

        def call() -> str:
            return compress(_first_line(self._ask(lang, prompt, 80)), self.title_width)

        return self._guard(call, lambda: self.fallback.page_title(messages))

    def page(self, messages: Sequence[Message]) -> tuple[str, list[str]]:
        """Title and one line per message from one model call.

        When the model wrote about the page as a whole rather than per message (see
        :meth:`page_summary`), the lines are the extractive ones and the title the model's.
        """
        title, lines, form = self.page_summary(messages)
        if form == "page":
            return title, self._extractive.summarize_page(messages)
        return title, lines

    def page_summary(self, messages: Sequence[Message]) -> tuple[str, list[str], str]:
        """Title, lines and form of a page's summary from one model call, in any form.

        ``form`` is ``"entries"`` (one line per message; lines the model left out are
        extractive) or ``"page"`` (1 to ``len(messages)`` lines about the whole page, in
        order: a prose or bulleted answer). See :mod:`memci.summarize._pageanswer`.
        """
        lang = conversation_language(messages)
        prompt = _PAGE[lang].format(
            n=len(messages), title=self._width_for(lang, self.title_width),
            width=self._width_for(lang, self.entry_width), body=self._render(messages),
        )

        def call() -> tuple[str, list[str], str]:
            answer = read_page(self._ask(lang, prompt, min(4000, 80 + 70 * len(messages))),
                               len(messages))
            title = (compress(answer.title, self.title_width) if answer.title
                     else self._extractive.page_title(messages))
            if answer.form == "page":
                lines = pack_lines([t for t in answer.lines if t], len(messages),
                                   lambda text: compress(text, self.entry_width))
                return title, list(lines), "page"
            return title, [
                compress(line, self.entry_width) if line
                else self._extractive.summarize_entry(m)
                for line, m in zip(answer.lines, messages, strict=True)
            ], "entries"

        return self._guard(call, lambda: (self.fallback.page_title(messages),
                                          self.fallback.summarize_page(messages), "entries"))

    def summarize_text(self, texts: Sequence[str], max_tokens: int) -> str:
        """Summarize ``texts`` within ``max_tokens`` through the model."""
        texts = [t for t in texts if t and t.strip()]
        if max_tokens <= 0 or not texts:
            return ""
        whole = "\n".join(t.strip() for t in texts)
        if self.tokenizer.count(whole) <= max_tokens:
            return whole
        if self.tokenizer.count(whole) > self.max_input_tokens:
            whole = self._extractive.summarize_text(texts, self.max_input_tokens)
        lang = "zh" if is_cjk_text(whole[:6000]) else "en"
        prompt = _TEXT[lang].format(
            tokens=max_tokens, words=max(1, int(max_tokens * 0.7)),
            chars=max(1, int(max_tokens * 0.7)), body=whole,
        )

        def call() -> str:
            answer = self._ask(lang, prompt, int(max_tokens * 1.3) + 16)
            return self._within(clean_answer(answer), max_tokens)

        return self._guard(call, lambda: self.fallback.summarize_text(texts, max_tokens))

    def handoff(self, messages: Sequence[Message], max_tokens: int) -> str:
        """Write a handoff note within ``max_tokens`` through the model."""
        talk = [m for m in messages if m.role != "system"]
        if max_tokens <= 0 or not talk:
            return ""
        lang = conversation_language(talk)
        prompt = _HANDOFF[lang].format(tokens=max_tokens, body=self._render(talk))

        def call() -> str:
            return self._within(
                clean_answer(self._ask(lang, prompt, int(max_tokens * 1.3) + 16)), max_tokens)

        return self._guard(call, lambda: self.fallback.handoff(messages, max_tokens))

    # -- plumbing --------------------------------------------------------------------------

    def _ask(self, lang: str, prompt: str, max_tokens: int) -> str:
        with self._lock:
            self.calls += 1
        completion = self.client.complete(
            [Message.user(prompt)], system=_SYSTEM[lang], max_tokens=max(16, max_tokens),
            temperature=self.temperature,
        )
        text = completion.text.strip()
        if not text:
            raise LLMResponseError("the model answered with an empty summary", body="")
        return text

    def _guard(self, call: Callable[[], T], fallback: Callable[[], T]) -> T:
        try:
            return call()
        except LLMError as exc:
            if self.strict:
                raise
            with self._lock:
                self.fallbacks += 1
            logger.warning("summary by model failed, using the extractive one: %s", exc)
            return fallback()

    def _within(self, answer: str, max_tokens: int) -> str:
        if self.tokenizer.count(answer) <= max_tokens:
            return answer
        return fit_tokens(self._extractive.summarize_text([answer], max_tokens), max_tokens,
                          self.tokenizer)

    def _render(self, messages: Sequence[Message], *, numbered: bool = True) -> str:
        """Messages as prompt text, each cut so the whole stays within the input budget.

        When even 300 characters each would pass the budget, the first message (the
        task) and the newest ones are kept, and the gap is marked.
        """
        budget = self.max_input_tokens * 3  # characters, conservatively
        per = max(300, int(budget / max(1, len(messages))))
        keep = len(messages)
        if per * len(messages) > budget * 1.5:
            keep = max(2, budget // per)
        chosen = list(enumerate(messages, start=1))
        if keep < len(chosen):
            chosen = chosen[:1] + chosen[-(keep - 1):]
        blocks = []
        previous = 0
        for i, m in chosen:
            if i > previous + 1:
                blocks.append(f"(… {i - previous - 1} messages left out …)")
            previous = i
            body = m.content
            if m.role == "tool":
                body = _head(body, min(per, 1500))
            else:
                body = _head(body, per)
            calls = "; ".join(f"{c.name}({fit_line(c.arguments, 300)})" for c in m.tool_calls)
            if calls:
                body = f"{body}\n(calls {calls})" if body else f"(calls {calls})"
            label = f"[{i}] {m.role}" if numbered else f"[{m.role}]"
            blocks.append(f"{label}: {body}")
        return "\n\n".join(blocks)

    @staticmethod
    def _width_for(lang: str, columns: int) -> int:
        return int(columns / 2.5) if lang == "zh" else columns


def _head(text: str, chars: int) -> str:
    text = text.strip()
    if len(text) <= chars:
        return text
    return text[:chars] + f" …(+{len(text) - chars} chars)"


def _first_line(answer: str) -> str:
    for line in clean_answer(answer).splitlines():
        line = _PREFIX_RE.sub("", line).strip().strip("*_").strip().strip("\"'“”「」")
        if line:
            return line
    raise LLMResponseError("the model answered with no usable line", body=answer)

