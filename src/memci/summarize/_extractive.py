"""The extractive summarizer: summaries made of the text's own sentences, without a model.

It is what ``build`` uses (directly, or as the stand-in until a model's summary is ready),
so it is deterministic and cheap: one message becomes one line in well under a
millisecond. What it writes, per kind of message:

- user, assistant and system text: the most salient sentence (see
  :mod:`memci.summarize._salience`), with a second or third one when they fit the line;
  a sentence too long for the line is cut down to its key clauses, then at a word;
- an assistant's tool call: ``name(argument summary)``, e.g. ``bash(grep -rn foo src/)``;
- a tool result: a compact outcome: exit code, the error line or the first meaningful
  line, and the size (``exit 1 · ValueError: bad literal · 40 lines``).

Invariants: every line is at most the entry width (100 columns, a CJK character counting
2.5); every ``summarize_text`` and ``handoff`` result is within its token budget as
counted by the summarizer's tokenizer; texts that already fit are returned whole.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from memci._dataclasses import dataclass
from memci._lazy import LazyPattern
from memci.messages import ImagePart, Message, ToolCallPart
from memci.summarize._budget import fit_sections, fit_tokens, water_fill
from memci.summarize._protocol import ENTRY_WIDTH, TITLE_WIDTH, TokenCounter
from memci.summarize._salience import (
    Features,
    Segmenter,
    analyze,
    key_items,
    make_segmenter,
    score,
    substantive,
    term_frequencies,
)
from memci.text import (
    IDENT_RE,
    PATH_RE,
    clean_text,
    fit_line,
    is_cjk,
    is_cjk_text,
    line_width,
    split_clauses,
    split_lines,
)
from memci.workspace._summary import (
    is_error_line,
    is_exception_line,
    is_meaningful_line,
    parse_exit_code,
    without_exit_tag,
)

__all__ = ["ExtractiveSummarizer"]

# How much of a long text is read: its head, and its tail (where conclusions sit).
_HEAD_CHARS = 1500
_TAIL_CHARS = 400
# At most this many sentences are scored for one line (the first ones and the last few).
_LINE_SENTENCES = 32
_SUMMARY_HEAD_CHARS = 24000

_TALLY_RE = LazyPattern(
    r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|tests?|files? changed|"
    r"insertions?|deletions?|matches|results?|items?|rows?)\b",
    re.IGNORECASE,
)
_FILLER_PREFIX_RE = LazyPattern(
    r"^(?:(?:now|next|first|then|okay|ok|great|perfect|good|excellent|alright)[,!.]?\s+)*"
    r"(?:let me|let's|i'll|i will|i'm going to|i am going to|i need to|we need to)\s+",
    re.IGNORECASE,
)
_LONG_ARG_NAMES = frozenset(
    {"content", "text", "file_text", "new_str", "old_str", "patch", "diff", "body", "code",
     "source", "data", "input"}
)

_HANDOFF_LABELS = {
    "en": {"goal": "Goal", "latest": "Latest request", "progress": "Progress",
           "facts": "Key points", "refs": "References"},
    "zh": {"goal": "目标", "latest": "最新请求", "progress": "进展",
           "facts": "要点", "refs": "相关引用"},
}


@dataclass(frozen=True, slots=True)
class _Sentence:
    index: int
    text: str
    features: Features
    score: float
    line: int = 0


class ExtractiveSummarizer:
    """Summaries picked from the text itself; no model, no I/O, deterministic.

    ``tokenizer`` counts the budgets of :meth:`summarize_text` and :meth:`handoff`
    (default: ``memci.tokens.get_tokenizer("estimate")``, resolved on first use).
    ``segmenter`` says how Chinese is cut into terms for scoring: ``bigram`` (default, no
    dependency), ``jieba`` (extra ``memci[jieba]``) or ``auto`` (jieba when importable).
    """

    name = "extractive"

    def __init__(
        self,
        *,
        tokenizer: TokenCounter | None = None,
        segmenter: Segmenter = "bigram",
        entry_width: int = ENTRY_WIDTH,
        title_width: int = TITLE_WIDTH,
    ) -> None:
        self._tokenizer = tokenizer
        self._segment: Callable[[str], list[str]] = make_segmenter(segmenter)
        self.entry_width = entry_width
        self.title_width = title_width

    @property
    def tokenizer(self) -> TokenCounter:
        """The tokenizer budgets are counted with."""
        if self._tokenizer is None:
            from memci.tokens import get_tokenizer

            self._tokenizer = get_tokenizer("estimate")
        return self._tokenizer

    # -- entries and pages ---------------------------------------------------------------

    def summarize_entry(self, message: Message) -> str:
        """One line of at most :attr:`entry_width` columns for ``message``."""
        limit = self.entry_width
        if message.role == "tool":
            result = message.tool_result
            if result is None:
                return ""
            return tool_outcome(result.content, limit, is_error=result.is_error)
        calls = message.tool_calls
        images = sum(1 for p in message.parts if isinstance(p, ImagePart))
        suffix = f" [+{images} image{'s' if images > 1 else ''}]" if images else ""
        if not calls:
            text = self.best_line(
                message.content, limit - line_width(suffix), questions=message.role == "user"
            )
            return (text + suffix).strip()
        call_line = _calls_line(calls, limit)
        room = limit - line_width(call_line) - 3
        if room >= 30 and message.content.strip():
            said = self.best_line(_defiller(message.content), room)
            # A fragment ("Actually…") says less than the call alone.
            if len(said.rstrip("…").split()) >= 3 or line_width(said) >= 20:
                return f"{said} → {call_line}"
        return call_line

    def summarize_page(self, messages: Sequence[Message]) -> list[str]:
        """One line per message, in order."""
        return [self.summarize_entry(m) for m in messages]

    def page_title(self, messages: Sequence[Message]) -> str:
        """Return a title of at most :attr:`title_width` columns: what the page's user asked."""
        for message in messages:
            if message.role == "user" and message.content.strip():
                return self.best_line(message.content, self.title_width, questions=True,
                                      max_sentences=1)
        for message in messages:
            if message.role == "assistant" and message.content.strip():
                return self.best_line(_defiller(message.content), self.title_width,
                                      max_sentences=1)
        for message in messages:
            if message.tool_calls:
                return _calls_line(message.tool_calls, self.title_width)
        return fit_line(self.summarize_entry(messages[0]), self.title_width) if messages else ""

    def best_line(
        self, text: str, limit: float, *, questions: bool = False, max_sentences: int = 3
    ) -> str:
        """Return the most salient sentences of ``text`` that fit in ``limit`` columns."""
        ranked = self._rank(_excerpt(text, _HEAD_CHARS, _TAIL_CHARS), questions=questions,
                            limit=_LINE_SENTENCES)
        if not ranked:
            return ""
        order = sorted(ranked, key=lambda s: (-s.score, s.index))
        best = order[0]
        if line_width(best.text) > limit:
            return compress(best.text, limit)
        chosen = [best]
        used = line_width(best.text)
        for candidate in order[1:max_sentences]:
            cost = line_width(candidate.text) + 1
            if used + cost <= limit and candidate.score >= 0.5 * best.score:
                chosen.append(candidate)
                used += cost
        chosen.sort(key=lambda s: s.index)
        return _join([s.text for s in chosen])

    # -- summaries within a budget -------------------------------------------------------

    def summarize_text(self, texts: Sequence[str], max_tokens: int) -> str:
        """Summarize ``texts`` within ``max_tokens``; the whole text when it fits.

        Every text first gets its best sentence (most salient texts first), then the
        budget goes to the best remaining sentences; near-duplicates are left out, later
        texts weigh a little more (a rolling summary favours what is recent), and the
        chosen sentences are written in their original order, one text per line.
        """
        texts = [t.strip() for t in texts if t and t.strip()]
        if max_tokens <= 0 or not texts:
            return ""
        counter = self.tokenizer
        whole = "\n".join(texts)
        if counter.count(whole) <= max_tokens:
            return whole
        per_text: list[list[_Sentence]] = []
        for i, text in enumerate(texts):
            ranked = self._rank(_excerpt(text, _SUMMARY_HEAD_CHARS, _TAIL_CHARS),
                                recency=0.6 * i / max(1, len(texts) - 1))
            per_text.append(ranked)
        self._rescore_globally(per_text)
        chosen: dict[tuple[int, int, int], str] = {}
        scores: dict[tuple[int, int, int], float] = {}
        seen_terms: list[frozenset[str]] = []
        left = max_tokens

        def take(ti: int, s: _Sentence, text: str) -> None:
            nonlocal left
            chosen[(ti, s.index, s.line)] = text
            scores[(ti, s.index, s.line)] = s.score
            seen_terms.append(frozenset(s.features.terms))
            left -= counter.count(text) + 1

        # Greetings, narration and fragments are never worth a summary's tokens.
        per_text = [[s for s in ranked if substantive(s.features)] for ranked in per_text]
        firsts = sorted(
            ((ti, max(ranked, key=lambda s: (s.score, -s.index)))
             for ti, ranked in enumerate(per_text) if ranked),
            key=lambda pair: -pair[1].score,
        )
        for ti, s in firsts:
            if left <= 2:
                break
            text = s.text
            need = counter.count(text)
            if need + 1 > left:
                text = fit_tokens(compress(text, line_width(text) * (left - 1) / need), left - 1,
                                  counter)
                if counter.count(text) < 6:
                    continue  # a fragment this short says nothing
            take(ti, s, text)
        rest = sorted(
            ((ti, s) for ti, ranked in enumerate(per_text) for s in ranked
             if (ti, s.index, s.line) not in chosen),
            key=lambda pair: (-pair[1].score, pair[0], pair[1].index),
        )
        for ti, s in rest:
            if left <= 2:
                break
            cost = counter.count(s.text) + 1
            if cost > left or _duplicate(s.features.terms, seen_terms):
                continue
            take(ti, s, s.text)
        return self._render(chosen, scores, max_tokens)

    def _render(
        self, chosen: dict[tuple[int, int, int], str],
        scores: dict[tuple[int, int, int], float], max_tokens: int,
    ) -> str:
        """Chosen sentences in order: one line per line of each text; drop until it fits."""
        keys = sorted(chosen)
        while True:
            lines: list[str] = []
            group: list[str] = []
            place: tuple[int, int] | None = None
            for ti, si, line in keys:
                if place is not None and (ti, line) != place:
                    lines.append(_join(group))
                    group = []
                place = (ti, line)
                group.append(chosen[(ti, si, line)])
            if group:
                lines.append(_join(group))
            out = "\n".join(lines)
            if self.tokenizer.count(out) <= max_tokens or len(keys) <= 1:
                return fit_tokens(out, max_tokens, self.tokenizer)
            keys.remove(min(keys, key=lambda k: scores[k]))

    def handoff(self, messages: Sequence[Message], max_tokens: int) -> str:
        """Write a handoff note within ``max_tokens``: goal, latest request, progress, points.

        Written in Chinese labels when the conversation is mostly Chinese.
        """
        talk = [m for m in messages if m.role != "system"]
        if max_tokens <= 0 or not talk:
            return ""
        spoken = " ".join(m.content[:400] for m in talk if m.role in ("user", "assistant"))
        labels = _HANDOFF_LABELS["zh" if is_cjk_text(spoken) else "en"]
        users = [m for m in talk if m.role == "user" and m.content.strip()]
        sections: dict[str, str] = {}
        if users:
            sections["goal"] = self.best_line(users[0].content, 240, questions=True)
        if len(users) > 1:
            sections["latest"] = self.best_line(users[-1].content, 240, questions=True)
        # Progress is what was done (tool calls and their outcomes); what was said goes
        # to the key points, so a plain chat does not say everything twice.
        steps = [self.summarize_entry(m) for m in talk
                 if m.role == "tool" or (m.role == "assistant" and m.tool_calls)]
        steps = [s for s in steps if s]
        progress: list[str] = []
        room = max(16, int(max_tokens * 0.4))
        for line in reversed(steps):
            room -= self.tokenizer.count(line) + 2
            if room < 0:
                break
            progress.append("- " + line)
        if progress:
            sections["progress"] = "\n".join(reversed(progress))
        answers = [m.content for m in talk
                   if m.role == "assistant" and not m.tool_calls and m.content.strip()]
        said = answers or [_defiller(m.content) for m in talk
                           if m.role == "assistant" and m.content.strip()]
        if said:
            sections["facts"] = self.summarize_text(said, max(8, max_tokens // 3))
        # References are a list: it is shortened by dropping items, never summarized.
        refs = _references(talk)
        refs_room = max_tokens // 6
        while refs and self.tokenizer.count(", ".join(refs)) > refs_room:
            refs.pop()
        headers = {name: f"{labels[name]}:" for name in [*sections, "refs"]}
        overhead = sum(self.tokenizer.count(h) + 1 for h in headers.values())
        refs_text = ", ".join(refs)
        fitted = fit_sections(
            sections, max(0, max_tokens - overhead - self.tokenizer.count(refs_text)),
            self.tokenizer, self,
            weights={"goal": 3.0, "latest": 3.0, "progress": 2.0, "facts": 2.0},
        )
        fitted["refs"] = refs_text
        blocks = []
        for name, text in fitted.items():
            if not text:
                continue
            sep = "\n" if "\n" in text or name == "progress" else " "
            blocks.append(f"{headers[name]}{sep}{text}")
        return fit_tokens("\n".join(blocks), max_tokens, self.tokenizer)

    # -- scoring -------------------------------------------------------------------------

    def _rank(self, text: str, *, questions: bool = False, recency: float = 0.0,
              limit: int | None = None) -> list[_Sentence]:
        sentences: list[str] = []
        lines: list[int] = []
        for n, group in enumerate(split_lines(clean_text(text))):
            for sentence in group:
                if sentence.strip(" -*•"):
                    sentences.append(sentence)
                    lines.append(n)
        if limit is not None and len(sentences) > limit:
            keep = list(range(limit - 8)) + list(range(len(sentences) - 8, len(sentences)))
            sentences = [sentences[i] for i in keep]
            lines = [lines[i] for i in keep]
        features = [analyze(s, self._segment) for s in sentences]
        tf = term_frequencies(features)
        positions: list[int] = []
        n = 0
        for f in features:
            if substantive(f):
                positions.append(n)
                n += 1
            else:
                positions.append(-1)
        return [
            _Sentence(i, s, f, score(f, tf, position=positions[i], total=n,
                                     questions_matter=questions) + recency, lines[i])
            for i, (s, f) in enumerate(zip(sentences, features, strict=True))
        ]

    @staticmethod
    def _rescore_globally(per_text: list[list[_Sentence]]) -> None:
        """Add the weight of terms shared across texts (what the whole is about)."""
        if len(per_text) < 2:
            return
        df: Counter[str] = Counter()
        for ranked in per_text:
            df.update({t for s in ranked for t in s.features.terms})
        for ranked in per_text:
            for i, s in enumerate(ranked):
                shared = sum(1 for t in set(s.features.terms) if df[t] > 1)
                boost = 0.4 * shared / (1 + len(set(s.features.terms))) ** 0.5
                ranked[i] = _Sentence(s.index, s.text, s.features, s.score + boost, s.line)


# -- helpers (module level: shared with the LLM summarizer's fallbacks) --------------------


def compress(sentence: str, limit: float) -> str:
    """``sentence`` cut to ``limit`` columns, keeping its key clauses, then at a word."""
    sentence = sentence.strip()
    if line_width(sentence) <= limit:
        return sentence
    clauses = split_clauses(sentence)
    if len(clauses) > 1:
        ranked = sorted(
            range(len(clauses)),
            key=lambda i: (-(_clause_score(clauses[i]) + (1.0 if i == 0 else 0.0)), i),
        )
        picked: list[int] = []
        used = 1.0  # a closing ellipsis
        for i in ranked:
            cost = line_width(clauses[i]) + 2
            if used + cost <= limit:
                picked.append(i)
                used += cost
        if picked:
            picked.sort()
            out: list[str] = []
            for n, i in enumerate(picked):
                if n and i != picked[n - 1] + 1:
                    out.append("…")
                out.append(clauses[i])
            text = _join(out)
            if picked[-1] != len(clauses) - 1:
                text = text.rstrip(" ,，、;；:：") + "…"
            if line_width(text) <= limit:
                return text
    items = key_items(sentence)
    keep_from = items[0][0] if items else 0
    return fit_line(sentence, limit, keep_from=keep_from)


def _clause_score(clause: str) -> float:
    f = analyze(clause)
    return (min(f.numbers, 3) * 0.7 + min(f.paths, 2) * 1.2 + min(f.idents, 3) * 0.6
            + min(f.entities, 3) * 0.6 + min(len(set(f.terms)), 6) * 0.15
            - (1.0 if f.filler else 0.0))


def tool_outcome(content: str, limit: float, *, is_error: bool = False) -> str:
    """Write a tool result as one compact line: exit code, key line, size.

    Read with the same analysis as an artifact's summary (:mod:`memci.workspace._summary`).
    """
    parts: list[str] = []
    code = parse_exit_code(content)
    if code is not None:
        parts.append(f"exit {code}")
    elif is_error:
        parts.append("error")
    body = clean_text(without_exit_tag(content) if code is not None else content)
    lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
    meaningful = [ln for ln in lines if is_meaningful_line(ln)]
    if not meaningful:
        parts.append("no output")
        return fit_line(" · ".join(parts), limit)
    if code is not None:
        status = "failed" if code != 0 else "ok"
    else:
        status = "failed" if is_error else "unknown"
    key = _json_shape(body.strip()) or _key_line(meaningful, status)
    if len(lines) > 1:
        parts.append(f"{len(lines)} lines")
    head = " · ".join(parts)
    room = limit - line_width(head) - (3 if head else 0)
    if room < 12:
        return fit_line(head, limit)
    key = compress(key, room)
    return f"{head} · {key}" if head else key


def _key_line(lines: list[str], status: str) -> str:
    """Pick the line that says most: an error when it failed, a tally, the first line."""
    tally = next((ln for ln in reversed(lines) if _TALLY_RE.search(ln)), None)
    if status != "ok":
        # A Python traceback ends with the line naming the exception: read from the end.
        errors = [ln for ln in lines[-400:] if is_error_line(ln)]
        early = status == "unknown" and any(is_error_line(ln) for ln in lines[:3])
        if errors and (status == "failed" or early):
            exc = next((ln for ln in reversed(errors) if is_exception_line(ln)), None)
            line = exc or (errors[-1] if status == "failed" else errors[0])
            return f"{line} ({tally})" if tally and tally not in line else line
    return tally if tally is not None else lines[0]


def _json_shape(body: str) -> str | None:
    if not body or body[0] not in "[{" or len(body) > 200_000:
        return None
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict):
        keys = list(data)
        shown = ", ".join(str(k) for k in keys[:6])
        return f"JSON object {{{shown}{', …' if len(keys) > 6 else ''}}}"
    if isinstance(data, list):
        return f"JSON list of {len(data)} item{'s' if len(data) != 1 else ''}"
    return None


def _calls_line(calls: Sequence[ToolCallPart], limit: float) -> str:
    """Calls joined by ``; ``; when they do not all fit, each gets a fair share of the line."""
    room = limit - 2 * (len(calls) - 1)
    natural = [_call_text(call, limit) for call in calls]
    if sum(line_width(text) for text in natural) <= room:
        return "; ".join(natural)
    if room / len(calls) < 16:
        shown = max(1, int(room // 24))
        head = "; ".join(_call_text(c, 22) for c in calls[:shown])
        return fit_line(f"{head}; +{len(calls) - shown} more", limit)
    shares = water_fill({str(i): int(line_width(t)) for i, t in enumerate(natural)}, int(room))
    return fit_line("; ".join(
        text if line_width(text) <= shares[str(i)] else _call_text(calls[i], shares[str(i)])
        for i, text in enumerate(natural)
    ), limit)


def _call_text(call: ToolCallPart, limit: float) -> str:
    name = call.name
    room = limit - line_width(name) - 2
    try:
        args: Any = json.loads(call.arguments) if call.arguments else {}
    except ValueError:
        args = call.arguments
    if not isinstance(args, dict):
        inner = _value_text(args, room)
    elif not args:
        inner = ""
    elif len(args) == 1:
        inner = _value_text(next(iter(args.values())), room)
    else:
        # Long texts (a file's content) shrink to their size; the rest share what is left.
        sized = {k: _size_text(v) for k, v in args.items() if k in _LONG_ARG_NAMES
                 and _is_long(v)}
        natural = {k: sized.get(k) or _value_text(v, room) for k, v in args.items()}
        used = sum(line_width(f"{k}={v}, ") for k, v in natural.items())
        if used - 2 > room:
            free = [k for k in args if k not in sized]
            fixed = sum(line_width(f"{k}={sized[k]}, ") for k in sized)
            each = max(8.0, (room - fixed) / max(1, len(free)))
            natural = {k: sized.get(k) or _value_text(v, each - line_width(str(k)) - 3)
                       for k, v in args.items()}
        inner = fit_line(", ".join(f"{k}={v}" for k, v in natural.items()), room)
    return f"{name}({inner})"


def _is_long(value: Any) -> bool:
    return isinstance(value, str) and (len(value) > 80 or value.count("\n") > 1)


def _size_text(value: Any) -> str:
    lines = str(value).count("\n") + 1
    return f"<{lines} lines>" if lines > 1 else f"<{len(str(value))} chars>"


def _value_text(value: Any, room: float) -> str:
    if isinstance(value, str):
        lines = [ln.strip() for ln in value.strip().splitlines() if ln.strip()]
        if not lines:
            return '""'
        text = lines[0] + (f" …(+{len(lines) - 1} lines)" if len(lines) > 2 else
                           " " + lines[1] if len(lines) == 2 else "")
        items = key_items(lines[0])
        return fit_line(text, room, keep_from=items[0][0] if items else 0)
    if isinstance(value, list):
        return f"[{len(value)} items]" if len(value) != 1 else fit_line(
            "[" + _value_text(value[0], room - 2) + "]", room)
    if isinstance(value, dict):
        return fit_line("{" + ", ".join(str(k) for k in value) + "}", room)
    return fit_line(json.dumps(value), room)


def _references(messages: Sequence[Message], limit: int = 10) -> list[str]:
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    for n, message in enumerate(messages):
        texts = [clean_text(message.content[:_HEAD_CHARS])] + [
            c.arguments[:2000] for c in message.tool_calls]
        for text in texts:
            for regex in (PATH_RE, IDENT_RE):
                for found in regex.findall(text):
                    item = found.strip("`'\".,:;()")
                    if len(item) < 4 or len(item) > 120:
                        continue
                    counts[item] += 1
                    first_seen.setdefault(item, n)
    ranked = sorted(counts, key=lambda k: (-counts[k], first_seen[k], k))
    return ranked[:limit]


def _excerpt(text: str, head: int, tail: int) -> str:
    if len(text) <= head + tail:
        return text
    return text[:head] + "\n\n" + text[-tail:]


def _duplicate(terms: tuple[str, ...], seen: list[frozenset[str]]) -> bool:
    mine = frozenset(terms)
    if len(mine) < 3:
        return False
    for other in seen:
        if len(other) >= 3 and len(mine & other) / len(mine | other) > 0.7:
            return True
    return False


def _defiller(text: str) -> str:
    stripped = _FILLER_PREFIX_RE.sub("", text.strip(), count=1)
    if stripped and stripped != text.strip():
        stripped = stripped[0].upper() + stripped[1:]
    return stripped.rstrip(":：").strip() or text


def _join(pieces: Sequence[str]) -> str:
    out = ""
    for piece in pieces:
        if not out:
            out = piece
        elif is_cjk(out[-1]) or out[-1] in "。！？；，、：…" or is_cjk(piece[:1] or " "):
            out += piece
        else:
            out += " " + piece
    return out
