"""Who a question names, and which role speaks as that person (speaker attribution).

A question about a person of the conversation ("What did Caroline research?") matches
her name, but in a two-party chat a name is mostly said *to* its bearer: "Thanks,
Caroline!" is the other speaker's turn, and Caroline's own turns, where the answer is,
do not say her name. :func:`named` reads the names a question asks about (capitalized
words inside an English question); :func:`addresses` says whether a text calls someone
by a name (a greeting or thanks before it, or the name set off by a comma or an
exclamation: "Hey Mel!", "Wow, Caroline,"). When the turns that call a name are mostly
one role's, the name's bearer speaks as the other role, and the search fuses the
keyword matches spoken in that role as one more list (see :data:`SPEAKER_WEIGHT`,
:meth:`MessageIndex.ranked_lists`): it reorders what the question's words found, it
never adds a message they did not find. The words are then searched without the name
(:func:`without_names`): it would only match the turns that call her.

Rules only; each pattern is compiled the first time it is used.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from memci._lazy import LazyPattern

__all__ = ["SPEAKER_WEIGHT", "addresses", "named", "speaker_role", "without_names"]

#: The RRF weight of the keyword matches spoken by the person a question names (the
#: keyword list's is 1).
SPEAKER_WEIGHT = 1.0

# A capitalized word after the first one ("What did Caroline research?", "Melanie's kids"):
# a name. Words capitalized in English questions for other reasons are left out.
_NAME = LazyPattern(r"(?<=[a-z,;:]\s)([A-Z][a-z]+)(?:'s)?\b")
_NOT_NAMES = frozenset("""
I I'm I've I'd I'll Mr Mrs Ms Dr Monday Tuesday Wednesday Thursday Friday Saturday Sunday
January February March April May June July August September October November December
English Chinese Christmas Easter
""".split())
_CALLED = r"(?:^|(?:hey|hi|hello|thanks|thank you|congrats|congratulations|wow|oh|yeah|yes|" \
          r"sorry|bye|dear|good morning|good night|morning)[,!]?\s+|[,.!?]\s+)"

_ROLES = {"user": "assistant", "assistant": "user"}


def named(question: str) -> list[str]:
    """The names a question asks about, in order (none for a question without any)."""
    return list(dict.fromkeys(m for m in _NAME.findall(question) if m not in _NOT_NAMES))


def without_names(question: str, names: Iterable[str]) -> str:
    """``question`` with each of ``names`` (and its possessive) left out."""
    for name in names:
        question = re.sub(rf"\b{re.escape(name)}(?:'s)?\b", " ", question)
    return question


def addresses(text: str, name: str) -> bool:
    """Whether ``text`` calls someone by ``name`` (or a shortening of it: "Mel")."""
    short = re.escape(name[:3])
    return re.search(rf"(?i:{_CALLED}){short}[a-z]*\s*[!,.?]", text[:400]) is not None


def speaker_role(name: str, said: Iterable[tuple[str, str]]) -> str | None:
    """The role that speaks as ``name``, from (role, text) of messages that say it.

    The turns that call the name are the other speaker's: when at least two do and four
    in five of them are one role's (user or assistant), the other role is the name's.
    """
    calls = Counter(role for role, text in said if role in _ROLES and addresses(text, name))
    if sum(calls.values()) < 2:
        return None
    role, count = calls.most_common(1)[0]
    return _ROLES[role] if count * 5 >= 4 * sum(calls.values()) else None
