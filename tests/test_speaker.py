"""Speaker attribution: a question naming a person finds what that person said."""

from __future__ import annotations

import pytest

from memci.memory._speaker import addresses, named, speaker_role
from memci.messages import Message
from memci.store import SQLiteStore

from .test_answer_kinds import _session


@pytest.mark.parametrize(("question", "names"), [
    ("What did Caroline research?", ["Caroline"]),
    ("What do Melanie's kids like?", ["Melanie"]),
    ("What subject have Caroline and Melanie both painted?", ["Caroline", "Melanie"]),
    ("When did I go to Paris on Monday?", ["Paris"]),
    ("What did I eat?", []),
    ("卡罗琳研究了什么？", []),
])
def test_the_names_a_question_asks_about(question: str, names: list[str]) -> None:
    assert named(question) == names


@pytest.mark.parametrize(("text", "calls"), [
    ("Thanks, Melanie! That means a lot.", True),
    ("Hey Mel! How have you been?", True),
    ("Wow, Melanie, that's gorgeous.", True),
    ("I told Melanie about the trip.", False),
    ("Melanie's painting is on the wall.", False),
])
def test_a_text_calls_someone_by_name(text: str, calls: bool) -> None:
    assert addresses(text, "Melanie") is calls


def test_the_role_of_a_name_is_the_other_of_the_roles_that_call_it() -> None:
    said = [("user", "Thanks, Melanie!"), ("user", "Hey Mel! Long time."),
            ("assistant", "I saw Melanie's post.")]
    assert speaker_role("Melanie", said) == "assistant"
    assert speaker_role("Melanie", said[:1]) is None  # one call decides nothing
    assert speaker_role("Melanie", [*said, ("assistant", "Bye, Melanie!")]) is None


# Caroline speaks as the user, Melanie as the assistant. The turns that say "Melanie" and
# "paint" are Caroline's; what Melanie painted is in her own turn, which names no one
# (the replies after Caroline's turns match through them, their context).
_CHAT = [
    "Hey Melanie! How was your week?",
    "Great! I finally got to paint: a lake sunrise, my best paint work yet.",
    "Wow, Melanie, I wish I could paint like that.",
    "You can, Caroline! Want to try together sometime?",
    "Thanks, Melanie! I'd love to paint with you, Melanie.",
    "Let's do it next week.",
    "Hey Mel, I saw a paint shop downtown. Melanie, you'd love it.",
    "Oh nice, I'll check it out.",
]


def test_a_question_naming_a_speaker_finds_her_own_turn(store: SQLiteStore) -> None:
    # By the words alone her turn comes fifth, after the three turns that call her.
    index, sid = _session(store, _CHAT)
    hits = index.search("What did Melanie paint?", k=3, sessions=[sid])
    assert any("lake sunrise" in h.text for h in hits)


def test_a_question_naming_both_speakers_ranks_as_its_words_do(store: SQLiteStore) -> None:
    index, sid = _session(store, _CHAT)
    lists = index.ranked_lists("What have Caroline and Melanie painted?", depth=20,
                               sessions=[sid])
    asked = index.ranked_lists("What did Melanie paint?", depth=20, sessions=[sid])
    assert "speaker" not in lists
    # What the speaker list holds is among the word matches, never more.
    assert asked["speaker"] and {c.doc for c in asked["speaker"]} <= {
        c.doc for c in asked["keyword"]}


def test_the_role_of_a_name_is_read_again_once_a_message_is_indexed(
        store: SQLiteStore) -> None:
    index, sid = _session(store, _CHAT[:2])  # no turn calls Melanie yet
    assert "speaker" not in index.ranked_lists("What did Melanie paint?", depth=20,
                                               sessions=[sid])
    record = store.ensure_session("t", "trip", "u", {})
    index.index(record, store.append(record, [
        Message(("user", "assistant")[i % 2], Message.user(t).parts, tokens=1)
        for i, t in enumerate(_CHAT[2:])]))
    assert index.ranked_lists("What did Melanie paint?", depth=20, sessions=[sid])["speaker"]


def test_a_question_naming_a_speaker_searches_its_words_without_the_name(
        store: SQLiteStore) -> None:
    # The turns that say "Melanie" and "kids" are Caroline's, calling her; the name says
    # nothing of Melanie's own turns, so her answer comes first once it is not searched.
    index, sid = _session(store, [
        "Hey Melanie! How are the kids doing these days, with school starting again?",
        "Our kids adore dinosaurs.",
        "Thanks, Melanie! Your kids sound great, and I hope to meet them soon, Melanie.",
        "They are.",
        "Wow, Melanie, kids are such fun at that age, all that energy every day.",
        "Yes!",
    ])
    hits = index.search("What do Melanie's kids like?", k=1, sessions=[sid])
    assert "dinosaurs" in hits[0].text


def test_the_name_still_finds_what_the_other_words_do_not(store: SQLiteStore) -> None:
    # No turn says "hobbies": the matches of the name (its turns, or after them) follow
    # the words' (none here), as without the name left out.
    index, sid = _session(store, _CHAT)
    assert len(index.search("What are Melanie's hobbies?", k=3, sessions=[sid])) == 3
