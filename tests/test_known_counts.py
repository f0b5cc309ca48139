"""Counts made ahead (memci/tokens/_known.py): current, exact, and read instead of counted."""

from __future__ import annotations

import json
import mmap
import subprocess
import sys
from pathlib import Path

import pytest

from memci.messages import Message
from memci.tokens import _estimate, estimate_tokens, get_tokenizer
from memci.tokens._ahead import count_ahead, text_key
from memci.tokens._known import COUNTS
from tests import known_counts

ROOT = Path(__file__).resolve().parents[1]


def test_the_counts_made_ahead_are_current() -> None:
    assert known_counts.main([]) == 0, "run python -m tests.known_counts --write"


def test_every_set_of_memci_s_tools_is_counted_ahead_as_the_estimate_counts_it() -> None:
    texts = known_counts.schema_texts()
    assert len(texts) > 10
    assert len({text_key(t) for t in texts}) == len(texts) == len(COUNTS)
    estimate = get_tokenizer("estimate")
    for text in texts:
        assert count_ahead(estimate, text) == estimate_tokens(text) > 0


class _ByChar:
    """A tokenizer of one token a character."""

    def __init__(self, name: str) -> None:
        self.name = name

    def count(self, text: str) -> int:
        return len(text)

    def count_message(self, message: Message) -> int:
        return len(message.content)


def test_other_texts_and_other_tokenizers_are_counted() -> None:
    schemas = known_counts.schema_texts()[0]
    assert count_ahead(_ByChar("cl100k_base"), schemas) == len(schemas)
    other = schemas.replace("page", "leaf")
    assert text_key(other) not in COUNTS
    assert count_ahead(get_tokenizer("estimate"), other) == estimate_tokens(other)


_FIRST_BUILD = """
import json, sys
import memci
from memci.tokens import _estimate
counted = []
count = _estimate.estimate_tokens
def spy(text):
    counted.append(text)
    return count(text)
_estimate.estimate_tokens = spy
import memci.tokens
memci.tokens.estimate_tokens = spy
with memci.Engine.open(sys.argv[1], workers=0) as engine:
    ctx = engine.session("loop", context_window=8_000).build()
print(json.dumps({"counted": counted, "tools": [t.name for t in ctx.tools],
                  "tokens": ctx.stats.sections["tools"]}))
"""


def test_a_fresh_process_counts_none_of_the_schemas_it_sends(tmp_path: Path) -> None:
    import memci

    db = tmp_path / "m.db"
    with memci.Engine.open(db, workers=0) as engine:
        session = engine.session("loop", context_window=8_000)
        for i in range(40):  # a tool loop longer than the window: memci's tools offered
            call = f"c{i}"
            session.add_many([
                {"role": "user", "content": f"step {i}: " + "check the build again " * 20},
                {"role": "assistant", "content": "", "tool_calls": [{
                    "id": call, "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "make"}'}}]},
                {"role": "tool", "tool_call_id": call, "content": "error: failed\n" * 200}])
        session.add({"role": "user", "content": "what failed first?"})
        warm = session.build()
    assert {"recall_page", "working_state"} <= {t.name for t in warm.tools}
    done = subprocess.run([sys.executable, "-c", _FIRST_BUILD, str(db)], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    fresh = json.loads(done.stdout.splitlines()[-1])
    assert fresh["tools"] == [t.name for t in warm.tools]
    assert fresh["tokens"] == warm.stats.sections["tools"] > 0  # read ahead, or counted
    assert fresh["counted"], "the build counted nothing: the test no longer tests"
    sent = json.dumps([t.to_openai() for t in warm.tools])
    assert not [t for t in fresh["counted"] if '"parameters"' in t or t == sent]


def test_the_table_read_without_a_map_counts_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> mmap.mmap:
        raise ValueError("cannot mmap this file")

    mapped = _estimate._table_bytes()
    assert isinstance(mapped, mmap.mmap)
    monkeypatch.setattr(mmap, "mmap", refuse)
    read = _estimate._table_bytes()
    assert isinstance(read, bytes) and read == mapped[:]
    whole = _estimate._Encoding(read)
    whole.take_all()
    assert whole.ranks == _estimate.load_ranks()
