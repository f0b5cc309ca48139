"""memci's ``dataclass`` makes the class the standard library makes, compiling less.

Every check makes the same class body twice, once with :func:`dataclasses.dataclass` and
once with :func:`memci._dataclasses.dataclass`, and compares what a user can see: repr,
equality, hashes, the frozen errors, fields, ``replace``, ``asdict``, pickling, params.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import pickle
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import memci
from memci._dataclasses import dataclass as memci_dataclass

MAKERS: list[Callable[..., Any]] = [dataclasses.dataclass, memci_dataclass]


def _twins(body: Callable[[Callable[..., Any]], type]) -> tuple[type, type]:
    made = [body(maker) for maker in MAKERS]
    return made[0], made[1]


def _point(maker: Callable[..., Any]) -> type:
    @maker(frozen=True, slots=True)
    class Point:
        """A point."""

        x: float
        y: float = 0.0
        label: str = dataclasses.field(default="", compare=False)
        secret: str = dataclasses.field(default="", repr=False)
        tag: str = dataclasses.field(default="", hash=False)

    return Point


def _box(maker: Callable[..., Any]) -> type:
    @maker(slots=True)
    class Box:
        items: list[Any] = dataclasses.field(default_factory=list)
        name: str = "box"

    return Box


def _one(maker: Callable[..., Any]) -> type:
    @maker(frozen=True, slots=True)
    class One:
        value: float

    return One


def _empty(maker: Callable[..., Any]) -> type:
    @maker
    class Empty:
        pass

    return Empty


def _same_params(std: type, ours: type) -> None:
    for name in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"):
        assert (getattr(std.__dataclass_params__, name)  # type: ignore[attr-defined]
                == getattr(ours.__dataclass_params__, name)), name  # type: ignore[attr-defined]


def test_a_frozen_record_is_the_standard_librarys() -> None:
    std, ours = _twins(_point)
    _same_params(std, ours)
    assert ours.__slots__ == std.__slots__  # type: ignore[attr-defined]
    assert ours.__match_args__ == std.__match_args__  # type: ignore[attr-defined]
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(std)]
    args: list[tuple[Any, ...]] = [(1.0,), (1.0, 2.0, "a", "s", "t"), (1.0, 2.0, "b", "z", "u"),
                                   (math.nan,), (2.0, 1.0)]
    for a in args:
        for b in args:
            s_a, s_b, o_a, o_b = std(*a), std(*b), ours(*a), ours(*b)
            assert repr(o_a) == repr(s_a).replace(std.__qualname__, ours.__qualname__)
            assert (o_a == o_b) is (s_a == s_b)
            assert (o_a != o_b) is (s_a != s_b)
            assert hash(o_a) == hash(s_a)
    nan = ours(math.nan)
    assert nan == nan  # the tuples compare by identity first, as the library's do
    assert ours(1.0).__eq__(std(1.0)) is NotImplemented
    assert dataclasses.replace(ours(1.0), y=3.0) == ours(1.0, 3.0)
    assert dataclasses.asdict(ours(1.0, label="l")) == dataclasses.asdict(std(1.0, label="l"))
    assert copy.deepcopy(ours(1.0, 2.0)) == ours(1.0, 2.0)
    part = memci.TextPart("hi")  # a public type made by memci's dataclass, pickled
    assert pickle.loads(pickle.dumps(part)) == part


@pytest.mark.parametrize("action", ["set", "del", "new"])
def test_a_frozen_record_refuses_changes_as_the_standard_librarys(action: str) -> None:
    errors = []
    for made in _twins(_point):
        point = made(1.0)
        try:
            if action == "set":
                point.x = 2.0
            elif action == "del":
                del point.x
            else:
                point.other = 1
        except (dataclasses.FrozenInstanceError, AttributeError, TypeError) as e:
            errors.append((type(e), str(e).replace(made.__qualname__, "C")))
    assert len(errors) == 2
    assert errors[0] == errors[1]


def test_a_mutable_record_is_the_standard_librarys() -> None:
    std, ours = _twins(_box)
    _same_params(std, ours)
    assert ours.__hash__ is None and std.__hash__ is None
    s, o = std([1, 2]), ours([1, 2])
    assert repr(o) == repr(s)
    assert o == ours([1, 2]) and o != ours([1])
    s.items.append(s)  # an instance holding itself
    o.items.append(o)
    assert repr(o) == repr(s) == "_box.<locals>.Box(items=[1, 2, ...], name='box')"
    with pytest.raises(TypeError):
        hash(o)


def test_one_field_and_no_field_compare_and_hash_as_tuples() -> None:
    for std, ours in (_twins(_one), _twins(_empty)):
        _same_params(std, ours)
        args = (1.5,) if dataclasses.fields(std) else ()
        assert repr(ours(*args)) == repr(std(*args))
        assert (ours(*args) == ours(*args)) is (std(*args) == std(*args))
        if std.__hash__ is not None:
            assert hash(ours(*args)) == hash(std(*args))


def test_a_class_with_its_own_methods_or_an_order_is_left_to_the_library() -> None:
    @memci_dataclass(frozen=True, order=True)
    class Ordered:
        n: int

    @memci_dataclass
    class Named:
        n: int

        def __repr__(self) -> str:
            return "named"

    assert Ordered(1) < Ordered(2)
    assert repr(Named(1)) == "named"
    assert Named(1) == Named(1)


_COMPILED = """
import dataclasses, json
def spy(name, log):
    real = getattr(dataclasses, name)
    def called(first, *args, **kwargs):
        log.append(first)
        return real(first, *args, **kwargs)
    setattr(dataclasses, name, called)
compiled, made = [], []
spy("_create_fn", compiled)  # each method compiled, by name
spy("_process_class", made)  # each class made
import memci
print(json.dumps({"classes": len(made), "compiled": sorted(set(compiled)),
                  "count": len(compiled)}))
"""


def test_import_memci_compiles_no_repr_eq_or_hash() -> None:
    # dataclasses compiles each method from source (~0.1 ms): repr, eq and hash were
    # half of what import memci's ~46 dataclasses compiled.
    done = subprocess.run([sys.executable, "-c", _COMPILED], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["classes"] > 20  # the spy sees the import's dataclasses
    assert found["compiled"] == ["__delattr__", "__init__", "__setattr__"]
