"""memci's ``NamedTuple`` makes the class :class:`typing.NamedTuple` makes, compiling less.

Each check makes the same class body twice, once with :class:`typing.NamedTuple` and once
with :data:`memci._records.NamedTuple`, and compares what a user can see.
"""

from __future__ import annotations

import copy
import inspect
import json
import pickle
import subprocess
import sys
import typing
from collections.abc import Callable
from typing import Any

import pytest

import memci
from memci._records import NamedTuple as MemciNamedTuple

BASES: list[Any] = [typing.NamedTuple, MemciNamedTuple]


def _hit(base: Any) -> type:
    class Hit(base):  # type: ignore[misc]
        """A search hit."""

        seq: int
        score: float = 0.0
        tags: tuple[str, ...] = ()

        @property
        def strong(self) -> bool:
            return self.score > 1.0

        def doubled(self) -> Hit:
            return self._replace(score=self.score * 2)  # type: ignore[no-any-return]

    return Hit


def test_a_named_tuple_is_typings() -> None:
    std, ours = (_hit(base) for base in BASES)
    for name in ("__new__", "_make", "_replace", "__repr__", "_asdict", "__getnewargs__"):
        assert getattr(ours, name).__doc__ == getattr(std, name).__doc__, name
    assert ours.seq.__doc__ == std.seq.__doc__ == "Alias for field number 0"
    # The same parameters and defaults (an annotation is its text, typing's a ForwardRef).
    assert ([(p.name, p.default) for p in inspect.signature(ours).parameters.values()]
            == [(p.name, p.default) for p in inspect.signature(std).parameters.values()])
    with pytest.raises(TypeError) as s_caught:
        std._make((1, 2, 3, 4))  # type: ignore[attr-defined]
    with pytest.raises(TypeError) as o_caught:
        ours._make((1, 2, 3, 4))  # type: ignore[attr-defined]
    assert str(o_caught.value) == str(s_caught.value)
    with pytest.raises(ValueError, match="unexpected field names"):
        ours(1)._replace(other=2)
    assert ours._fields == std._fields  # type: ignore[attr-defined]
    assert ours._field_defaults == std._field_defaults  # type: ignore[attr-defined]
    assert ours.__match_args__ == std.__match_args__  # type: ignore[attr-defined]
    assert ours.__module__ == std.__module__ == __name__
    assert ours.__doc__ == std.__doc__ == "A search hit."
    assert ours.__mro__[1:] == std.__mro__[1:] == (tuple, object)
    for args in [(1,), (1, 2.5), (2, 0.5, ("a",))]:
        s, o = std(*args), ours(*args)
        assert repr(o) == repr(s) and o == s and hash(o) == hash(s)
        assert o.strong is s.strong and o.doubled() == s.doubled()
        assert o._asdict() == s._asdict()
        assert copy.deepcopy(o) == o
    assert ours(seq=3, tags=("t",)) == std(seq=3, tags=("t",))
    got = typing.get_type_hints(ours, localns={"Hit": ours})
    assert got == typing.get_type_hints(std, localns={"Hit": std})
    assert got == {"seq": int, "score": float, "tags": tuple[str, ...]}


def test_a_public_named_tuple_pickles() -> None:
    made = memci.memory.Kept("text", "subject", "source", None, 3, None)  # memci's NamedTuple
    assert type(made).__module__ == "memci.memory._items"
    assert pickle.loads(pickle.dumps(made)) == made


def _late_default(base: Any) -> Callable[[], type]:
    def make() -> type:
        class Late(base):  # type: ignore[misc]
            a: int = 1
            b: int

        return Late

    return make


def _redefines(base: Any) -> Callable[[], type]:
    def make() -> type:
        class Redefines(base):  # type: ignore[misc]
            a: int

            def _asdict(self) -> dict[str, Any]:
                return {}

        return Redefines

    return make


@pytest.mark.parametrize("body", [_late_default, _redefines])
def test_a_body_typing_refuses_is_refused_alike(body: Callable[[Any], Callable[[], type]]
                                                 ) -> None:
    errors = []
    for base in BASES:
        with pytest.raises((TypeError, AttributeError)) as caught:
            body(base)()
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]


def test_the_functional_form_is_typings() -> None:
    with pytest.raises(TypeError, match=r"typing\.NamedTuple"):
        MemciNamedTuple("Pair", [("a", int)])


_COUNTED = """
import json, sys
found = []
def heard(event, args):
    if event == "compile" and args[1] == "<string>" and isinstance(args[0], bytes):
        found.append(args[0].decode())  # an annotation's ForwardRef, a __new__'s text
sys.addaudithook(heard)
import memci
print(json.dumps([text for text in found if text.startswith("def __create_fn__(_tuple_new)")
                  or "(" not in text]))
"""


def test_import_memci_compiles_nothing_for_a_named_tuple() -> None:
    done = subprocess.run([sys.executable, "-c", _COUNTED], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
