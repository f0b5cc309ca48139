"""Synthetic and real histories shared by the benchmarks (deterministic, seeded); percentiles."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile of ``values`` (nearest rank; 0.0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


_WORDS = ("the build fails because the parser reads the config twice and the cache keeps "
          "an old value so we should clear it before the second pass then run tests again "
          "数据库 查询 索引 优化 用户 配置 文件 路径 错误 测试").split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def agent_history(n_messages: int, seed: int = 7) -> list[dict[str, Any]]:
    """A chat with tool loops: user turns, assistant tool calls, tool outputs, answers."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    call = 0
    while len(out) < n_messages:
        out.append({"role": "user", "content": _text(rng, rng.randint(8, 60))})
        for _ in range(rng.randint(0, 3)):
            call += 1
            cid = f"call_{call}"
            out.append({"role": "assistant", "content": _text(rng, rng.randint(3, 20)),
                        "tool_calls": [{"id": cid, "type": "function", "function": {
                            "name": "bash",
                            "arguments": json.dumps({"command": f"grep -rn x src/{call}.py"})}}]})
            out.append({"role": "tool", "tool_call_id": cid,
                        "content": "\n".join(_text(rng, 12) for _ in range(rng.randint(1, 25)))})
        out.append({"role": "assistant", "content": _text(rng, rng.randint(10, 120))})
    # end on a complete unit
    while out[-1]["role"] != "assistant" or out[-1].get("tool_calls"):
        out.pop()
    return out


def chinese_long_chat() -> list[dict[str, Any]]:
    """Every KdConv travel dialogue back to back: one long Chinese chat (speakers alternate)."""
    data = json.loads((SHARED / "zh" / "kdconv_travel_test.json").read_text(encoding="utf-8"))
    out: list[dict[str, Any]] = []
    for dialogue in data:
        for i, utterance in enumerate(dialogue["messages"]):
            out.append({"role": "user" if i % 2 == 0 else "assistant",
                        "content": utterance["message"]})
        if out[-1]["role"] == "user":
            out.pop()
    return out


def trace(name: str | Path) -> list[dict[str, Any]]:
    """The chat messages of a mini-swe-agent trace: a file, or a name in ../shared/data/traces."""
    path = name if isinstance(name, Path) else SHARED / "traces" / name
    data = json.loads(path.read_text(encoding="utf-8"))
    return [m for m in data["messages"] if m["role"] in ("system", "user", "assistant", "tool")]


def real_chat(n_messages: int) -> list[dict[str, Any]]:
    """Real conversation text to ``n_messages``: LoCoMo's dialogues and KdConv's, in turn.

    The turns of every LoCoMo conversation in ../shared/data/locomo (speaker a as the
    user) and every KdConv travel dialogue, repeated in order until long enough; a
    repetition is marked so no two messages are identical.
    """
    turns: list[str] = []
    for path in sorted((SHARED / "locomo").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for number in range(1, 100):
            for turn in data.get(f"session_{number}", []):
                turns.append(str(turn.get("text", "")))
    turns += [m["content"] for m in chinese_long_chat()]
    turns = [t for t in turns if t.strip()]
    out: list[dict[str, Any]] = []
    round_ = 0
    while len(out) < n_messages:
        for text in turns:
            if len(out) >= n_messages:
                break
            mark = f" ({round_})" if round_ else ""
            out.append({"role": "user" if len(out) % 2 == 0 else "assistant",
                        "content": text + mark})
        round_ += 1
    if out[-1]["role"] == "user":
        out.pop()
    return out
