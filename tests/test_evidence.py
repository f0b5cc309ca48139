"""The referee of ``memci.evidence``: is a turn in a request, verbatim or close.

Texts whose answer is known by construction: whitespace differences, paraphrases, the
question itself, Chinese bigrams, and the window the close match allows.
"""

from __future__ import annotations

from memci.evidence import EvidenceHeld, RequestText, content_words, words_close


def test_content_words_and_the_close_window() -> None:
    assert content_words("I'm going to the Museum of Art, it's 5 PM") == [
        "going", "museum", "art", "5", "pm"]
    assert content_words("门票价格是40元") == ["门票", "票价", "价格", "格是", "40", "元"]
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]  # 5 words: 3 needed within 10
    assert words_close(words, ["alpha", "x", "beta", "x", "gamma"])
    assert not words_close(words, ["alpha", "beta"])  # 40%
    assert words_close(words, ["alpha", *["x"] * 4, "beta", *["x"] * 3, "gamma"])  # 10 words
    spread = ["alpha", *["x"] * 4, "beta", *["x"] * 4, "gamma"]
    assert not words_close(words, spread)  # 60% of the words, but over 11 > 10 words
    assert words_close(words, [*spread, "delta"])  # beta, gamma, delta within 10
    assert not words_close([], ["x"])


def test_verbatim_close_and_the_question_itself() -> None:
    turn = "We finally visited the Louvre museum in Paris last spring."
    question = "When did we visit the Louvre museum in Paris?"
    request = RequestText(["Earlier: - user: We finally visited the Louvre museum   in "
                           "Paris last spring.\n- assistant: nice", question], question)
    assert request.verbatim(turn) and request.close(turn)  # whitespace collapsed
    paraphrase = RequestText(["They visited the Louvre, a museum in Paris, in spring.",
                              question], question)
    assert not paraphrase.verbatim(turn)
    assert paraphrase.close(turn)
    # the question alone never counts as evidence (its words would, for every system)
    short = "I visited the Louvre museum in Paris."
    assert not RequestText([question], question).close(short)
    assert RequestText([question]).close(short)
    assert not RequestText(["anything"]).verbatim("   ")


def test_evidence_held_counts_each_turn_once() -> None:
    request = RequestText(["Page 3: Ana adopted a cat named Miso in June.",
                           "Bo: my sister moved to Lyon last month"])
    held = EvidenceHeld.check(request, "Where does Bo's sister live?", [
        ("D1:2", "Ana adopted a cat named Miso in June."),
        ("D2:5", "My sister moved to Lyon last week, Bo said."),
        ("D3:1", "We talked about the weather."),
    ])
    assert held.evidence == ("D1:2", "D2:5", "D3:1")
    assert held.verbatim == ("D1:2",)
    assert held.close == ("D1:2", "D2:5")
    assert held.share == 1 / 3 and not held.whole
    none = EvidenceHeld.check(request, "q", [])
    assert none.share == 1.0 and none.whole
