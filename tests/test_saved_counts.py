"""A fresh process takes the counts the store keeps: tool views and contents entries.

A tool result's view is counted when it is saved (``message_views.tokens``), a contents
entry when its page row is saved (with what it was counted for). A process that opens the
session later builds with those counts, counting neither again, and makes the request a
count would have made; a row saved without a count (an older store) is counted.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import memci
from memci.tokens import EstimateTokenizer

WINDOW = 6_000


def _history(pages: int) -> list[dict[str, Any]]:
    """Pages of a question, a tool call, its output, and an answer."""
    out: list[dict[str, Any]] = []
    for i in range(pages):
        call = f"call_{i}"
        out += [{"role": "user", "content": f"question {i}: why does step {i % 7} fail?"},
                {"role": "assistant", "content": "", "tool_calls": [{
                    "id": call, "type": "function",
                    "function": {"name": "bash", "arguments": f'{{"cmd": "make {i}"}}'}}]},
                {"role": "tool", "tool_call_id": call,
                 "content": f"run {i}\n" + f"error {i}: it failed here\n" * (2 + (i % 4) * 30)},
                {"role": "assistant", "content": f"answer {i}: clear cache {i % 3}."}]
    return out


def _imported(db: Path) -> None:
    with memci.Engine.open(db) as engine:
        session = engine.session("s", context_window=WINDOW)
        session.set_system("You are a coding agent.")
        session.add_many(_history(80))  # paged as it is written: rows and views saved


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the estimator counts from now on, messages as their text."""
    texts: list[str] = []
    count, count_message = EstimateTokenizer.count, EstimateTokenizer.count_message

    def counting(self: EstimateTokenizer, text: str) -> int:
        texts.append(text)
        return count(self, text)

    def counting_message(self: EstimateTokenizer, message: memci.Message) -> int:
        texts.append(message.content)
        return count_message(self, message)

    monkeypatch.setattr(EstimateTokenizer, "count", counting)
    monkeypatch.setattr(EstimateTokenizer, "count_message", counting_message)
    return texts


def _build(db: Path) -> tuple[dict[str, Any], Any, list[memci.Message]]:
    with memci.Engine.open(db) as engine:
        ctx = engine.session("s", context_window=WINDOW).build()
        return ctx.to_openai(), ctx.stats.total_tokens, list(ctx.messages)


def test_a_first_build_counts_no_saved_view_or_entry_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "m.db"
    _imported(db)
    texts = _counted(monkeypatch)
    _, _, messages = _build(db)
    assert any(m.content.startswith("[tool result") for m in messages)
    assert any("[Page " in m.content for m in messages)  # the contents page
    views = [t for t in texts if t.startswith("[tool result")]
    entries = [t for t in texts if t.startswith("[Page ")]
    assert not views and not entries, (len(views), len(entries))


def _strip_entry_counts(db: Path) -> None:
    """The page rows as a store saved them before entries' counts were kept."""
    with sqlite3.connect(db) as conn:
        changed = conn.execute("UPDATE pages SET lines = json_remove(lines, '$.tokens',"
                               " '$.counted') WHERE lines LIKE '%counted%'").rowcount
    assert changed


def _other_counts(db: Path) -> None:
    """Counts saved for another tokenizer: taken by none that counts with the estimator."""
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE pages SET lines = json_set(lines, '$.counted', 'o200k_base/en',"
                     " '$.tokens', 1)")


@pytest.mark.parametrize("change", [_strip_entry_counts, _other_counts])
def test_a_build_with_saved_counts_sends_what_counting_sends(
        tmp_path: Path, change: Callable[[Path], None]) -> None:
    db = tmp_path / "m.db"
    _imported(db)
    counted = tmp_path / "counted.db"
    shutil.copyfile(db, counted)
    change(counted)
    assert _build(db)[:2] == _build(counted)[:2]


def test_a_saved_view_has_the_tokens_counting_it_gives(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _imported(db)
    with memci.Engine.open(db) as engine:
        session = engine.session("s", context_window=WINDOW)
        ctx = session.build()
        tokenizer = session._views._tokenizer
        views = [m for m in ctx.messages if m.content.startswith("[tool result")]
        assert views
        assert [m.tokens for m in views] == [tokenizer.count_message(m) for m in views]
