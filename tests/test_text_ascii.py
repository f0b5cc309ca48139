"""An all-ASCII text reads as the Unicode expressions would read it, without compiling them.

The CJK classes take milliseconds to compile, so :mod:`memci.text` compiles them for the
first text that is not all ASCII (``tests/test_coldstart.py``), and one character is
looked up among the class's bounds. These checks hold the short cuts to the full
expressions: the words an analyzer finds, its documents and queries, and the script
tests give what the compiled Unicode expressions give.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from memci.text import _analyzer, _script
from memci.text._analyzer import BigramAnalyzer, TrigramAnalyzer

# Words, identifiers, apostrophes and the joiners the word expression knows.
ASCII = st.lists(st.sampled_from([*"abcXYZ019_./:-' \n\t!?\"", "don't", "get_weather",
                                  "memci.store", "v1.2", "it's", "OR", "NOT"]),
                 max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(ASCII)
def test_words_of_an_ascii_text_are_the_unicode_expressions_words(text: str) -> None:
    assert _analyzer._ASCII_WORD.findall(text) == _analyzer._WORD.compiled.findall(text)


@settings(max_examples=200, deadline=None)
@given(ASCII)
def test_an_ascii_text_is_analyzed_as_the_text_with_cjk_after_it_reads_its_ascii(
        text: str) -> None:
    # A CJK word after a separator adds its own terms and changes nothing before it.
    for analyzer in (BigramAnalyzer(), TrigramAnalyzer()):
        alone, mixed = analyzer.query(text), analyzer.query(text + " 。天气")
        assert mixed.terms[:len(alone.terms)] == alone.terms
        assert analyzer.document(text + " 天气").startswith(analyzer.document(text))


@given(st.text(st.characters(max_codepoint=127), max_size=30))
def test_script_tests_of_an_ascii_text_match_the_unicode_class(text: str) -> None:
    cjk = re.compile(f"[{_script.CJK_CLASS}]")
    assert _script.has_cjk(text) is (cjk.search(text) is not None) is False
    assert _script.has_han_or_kana(text) is False
    assert _script.cjk_share(text) == 0.0
    assert _script.language_of([text]) == "en"
    assert not any(_script.is_cjk(c) for c in text)


def test_cjk_text_still_reads_as_cjk() -> None:
    assert _script.is_cjk("天") and _script.has_cjk("the 天气") and _script.has_han_or_kana("カ")
    assert _script.cjk_share("天气很好") == 1.0
    assert _script.language_of(["今天天气很好，我们去公园吧"]) == "zh"
    assert "天气" in BigramAnalyzer().document("weather 天气")
    assert BigramAnalyzer().query("weather 天气").terms == ("weather", "天气")


def test_is_cjk_is_the_class_for_every_character() -> None:
    # One character is looked up among the class's bounds (no expression to compile).
    cjk = re.compile(f"[{_script.CJK_CLASS}]")
    assert [c for c in range(0x30000) if _script.is_cjk(chr(c)) != bool(cjk.match(chr(c)))] == []


@given(st.text(st.characters(max_codepoint=0x2FFFF), max_size=60))
def test_language_of_counts_the_class(text: str) -> None:
    cjk = re.compile(f"[{_script.CJK_CLASS}]")
    sample = text[:2000]
    share = len(cjk.findall(sample)) / len(sample) if sample else 0.0
    assert _script.language_of([text]) == ("zh" if share > 0.15 else "en")
