"""Messages cut to fit: the newest message's floor, and text cut in the middle."""

from __future__ import annotations

import random

import pytest

from memci.context._fit import CUT_FLOOR, floor_tokens, shrink_message
from memci.messages import Message, TextPart, ToolCallPart, ToolResultPart
from memci.tokens import Tokenizer, get_tokenizer

WORDS = "the build failed at step 42 with exit code 1 traceback 文件 找不到 ok".split()


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 900)))


def _message(rng: random.Random, tokenizer: Tokenizer) -> Message:
    kind = rng.choice(["user", "assistant", "tool"])
    if kind == "tool":
        parts: tuple[object, ...] = (ToolResultPart("call_1", _text(rng)),)
    elif kind == "assistant":
        parts = (TextPart(_text(rng)), ToolCallPart("call_1", "bash", '{"cmd": "ls -la"}'))
    else:
        parts = (TextPart(_text(rng)), TextPart(_text(rng)))
    message = Message(role=kind, parts=parts)  # type: ignore[arg-type]
    return Message(role=kind, parts=message.parts, tokens=tokenizer.count_message(message))


@pytest.mark.parametrize("name", ["estimate", "cl100k_base"])
def test_a_message_cut_to_its_floor_keeps_its_calls_and_counts_what_it_says(name: str) -> None:
    tokenizer = get_tokenizer(name)
    rng = random.Random(11)
    for _ in range(60):
        message = _message(rng, tokenizer)
        emptied = shrink_message(message, 0, tokenizer)
        # Every text goes; tool call ids, names and arguments stay, and the count is the
        # message's own with nothing but them.
        assert [p for p in emptied.parts if isinstance(p, ToolCallPart)] == [
            p for p in message.parts if isinstance(p, ToolCallPart)]
        assert all(not getattr(p, "text", "") and not getattr(p, "content", "")
                   for p in emptied.parts if not isinstance(p, ToolCallPart))
        assert emptied.tokens == tokenizer.count_message(emptied)
        floor = floor_tokens(message, tokenizer)
        assert floor == min(message.tokens or 0, max(CUT_FLOOR, emptied.tokens or 0))
        for room in (floor, floor + 50, floor + 400):
            cut = shrink_message(message, room, tokenizer)
            assert cut.tokens == tokenizer.count_message(cut)
            if (message.tokens or 0) > room:
                assert (cut.tokens or 0) <= room + 8  # the marker and framing, at most
