"""Regular expressions compiled ahead (memci/_patterns.py): current, and the same patterns."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memci import _lazy, _patterns

ROOT = Path(__file__).resolve().parents[1]

# Text of every kind memci reads: English, Chinese, Japanese, code, a traceback, dates,
# numbers of other scripts (the tokenizer's classes), paths, addresses, emoji.
SAMPLES = [
    "I'll book the Lisbon flights for May 3rd, 2026 - we've 2 weeks; it's $1,250.",
    "我们上周去了哪里？门票价格是40元。地址：北京市海淀区中关村大街27号。",
    "昨日は東京に行きました。カタカナとひらがな。",
    'Traceback (most recent call last):\n  File "src/a.py", line 12, in <module>\n'
    "    x = cfg['key']\nKeyError: 'key'",
    "def parse(path: str) -> dict[str, int]:\n    return {k: v for k, v in items()}  # ok",
    "see https://example.com/a?b=c and ~/notes/todo.md or C:\\Users\\me\\file.txt",
    "yesterday, last Tuesday, the week before last, 3月1日, 上个月, in early February",
    "①②③ ¼ ½ ٣٤٥ ५६ Ⅻ x² 𝟙𝟚  \t\n\n  trailing   ",
    "remember when you said the safe opens with walrus? please recall that 🙂",
    '{"role": "tool", "content": "INSERT INTO t (a, b) VALUES (?, ?) ON CONFLICT (a) '
    'DO UPDATE SET b = excluded.b"}',
]


def test_the_patterns_compiled_ahead_are_current() -> None:
    done = subprocess.run([sys.executable, "-m", "tests.patterns"], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(_patterns.ENGINE != _lazy._ENGINE,
                    reason="memci/_patterns.py holds another Python's code")
def test_each_pattern_compiled_ahead_is_the_one_re_compile_makes() -> None:
    assert len(_patterns.PATTERNS) > 100
    for (source, flags) in _patterns.PATTERNS:
        ahead, made = _lazy.compile_pattern(source, flags), re.compile(source, flags)
        assert ahead is not made  # not re's cached pattern: made from the code here
        assert (ahead.pattern, ahead.flags, ahead.groups, ahead.groupindex) == (
            made.pattern, made.flags, made.groups, made.groupindex)
        for text in SAMPLES:
            assert [m.span() + m.groups() for m in ahead.finditer(text)] == [
                m.span() + m.groups() for m in made.finditer(text)], (source, text)


def test_code_is_used_only_by_the_engine_it_was_compiled_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A table whose code for "cat" is the code of "dog": used, it finds dogs.
    dog = _lazy.pattern_codes([("dog", 0)])[("dog", 0)]
    monkeypatch.setattr(_patterns, "PATTERNS", {("cat", 0): dog})
    monkeypatch.setattr(_lazy, "_AHEAD", None)
    assert _lazy.compile_pattern("cat").search("a dog") is not None
    # Another engine's table (another Python's MAGIC) is never read.
    monkeypatch.setattr(_patterns, "ENGINE", (1, *_lazy._ENGINE[1:]))
    monkeypatch.setattr(_lazy, "_AHEAD", None)
    assert _lazy.compile_pattern("cat").search("a dog") is None
    assert _lazy.compile_pattern("cat").search("a cat") is not None


_FIRST_BUILD = """
import json, sys, tempfile
from pathlib import Path
import re._compiler as compiler
parsed = []
compile_code = compiler.compile
def spy(p, flags=0):
    parsed.append([p if isinstance(p, str) else repr(p), flags])
    return compile_code(p, flags)
compiler.compile = spy
import memci
from memci import _lazy
with tempfile.TemporaryDirectory() as folder, \\
        memci.Engine.open(Path(folder) / "m.db", workers=0) as engine:
    s = engine.session("s")
    s.add_many([{"role": "user", "content": "we flew to Lisbon on May 3rd"},
                {"role": "assistant", "content": "门票价格是40元。"}])
    s.add({"role": "user", "content": "What did I say about Lisbon last week?"})
    s.build()
print(json.dumps({"parsed": [p for p in parsed if (p[0], p[1]) in _lazy.ASKED],
                  "asked": len(_lazy.ASKED)}))
"""


@pytest.mark.skipif(_patterns.ENGINE != _lazy._ENGINE,
                    reason="memci/_patterns.py holds another Python's code")
def test_a_fresh_process_parses_none_of_memci_s_expressions() -> None:
    # Parsing an expression is pure Python: ~10-14 ms of a fresh process's first build
    # with a question (the query's rules, the tokenizer's expression), ~2 ms of import.
    done = subprocess.run([sys.executable, "-c", _FIRST_BUILD], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["asked"] > 100
    assert found["parsed"] == []
