"""memci's ``dataclass`` makes the class the standard library makes, compiling less.

Every check makes the same class body twice, once with :func:`dataclasses.dataclass` and
once with :func:`memci._dataclasses.dataclass`, and compares what a user can see: repr,
equality, hashes, the frozen errors, fields, ``replace``, ``asdict``, pickling, params.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import math
import pickle
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
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
import json, sys
ours = []
def heard(event, args):
    # A method compiled from text (a module without bytecode is compiled from its file).
    if (event == "compile" and args[1] == "<string>" and isinstance(args[0], bytes)
            and b"def __init__(" in args[0]):
        ours.append(1)
sys.addaudithook(heard)
import memci
loaded = sorted({"dataclasses", "inspect"} & set(sys.modules))
classes = [c for m in list(sys.modules.values()) if m.__name__.startswith("memci")
           for c in vars(m).values()
           if isinstance(c, type) and "__memci_fields__" in c.__dict__]
print(json.dumps({"classes": len(classes), "ours": len(ours), "loaded": loaded}))
"""


def test_import_memci_neither_imports_dataclasses_nor_compiles_a_method() -> None:
    # dataclasses compiles each method from source (~0.1-0.2 ms) and imports inspect (with
    # ast, dis and tokenize): memci's classes are made without it, each __init__ compiled
    # ahead (memci/_inits.py).
    done = subprocess.run([sys.executable, "-c", _COMPILED], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["classes"] > 20  # the check sees the import's dataclasses
    assert found["ours"] == 0
    assert found["loaded"] == []


def _fielded(maker: Callable[..., Any], field: Callable[..., Any]) -> type:
    @maker(frozen=True)
    class Inner:
        """Held by the record below."""

        tags: list[str] = field(default_factory=list)

    @maker
    class Outer:
        """Fields of every kind."""

        a: int
        inner: Inner = field(default_factory=Inner)
        pairs: dict[str, tuple[int, ...]] = field(default_factory=dict)
        hidden: int = field(default=3, init=False, repr=False, metadata={"k": 1})
        loose: str = field(default="x", compare=False, hash=False, kw_only=True)

    return Outer


def test_memcis_field_fields_replace_and_asdict_are_the_librarys() -> None:
    from memci._dataclasses import MISSING, asdict, field, fields, replace

    std = _fielded(dataclasses.dataclass, dataclasses.field)
    ours = _fielded(memci_dataclass, field)
    _same_params(std, ours)

    def options(f: Any, missing: Any) -> tuple[Any, ...]:
        return (f.name, f.type, f.default is missing, f.default_factory is missing, f.init,
                f.repr, f.hash, f.compare, dict(f.metadata), f.kw_only)

    assert ([options(f, MISSING) for f in fields(ours)]
            == [options(f, dataclasses.MISSING) for f in dataclasses.fields(std)]
            == [options(f, dataclasses.MISSING) for f in dataclasses.fields(ours)])
    assert str(inspect.signature(ours)) == str(inspect.signature(std))
    s = std(1, std(1).inner.__class__(["t"]), {"k": (1, 2)})
    o = ours(1, ours(1).inner.__class__(["t"]), {"k": (1, 2)})
    assert asdict(o) == dataclasses.asdict(o) == dataclasses.asdict(s)
    assert asdict(o)["inner"]["tags"] is not o.inner.tags  # copied, as the library does
    assert repr(replace(o, a=2, loose="y")) == repr(dataclasses.replace(s, a=2, loose="y"))
    assert replace(o, a=2).pairs is o.pairs
    for changes in ({"hidden": 1}, {"nope": 1}):
        errors = []
        for call in (partial(replace, o, **changes), partial(dataclasses.replace, s, **changes)):
            with pytest.raises((ValueError, TypeError)) as caught:
                call()
            errors.append((type(caught.value), str(caught.value).replace("Outer.", "")))
        assert errors[0] == errors[1]
    with pytest.raises(ValueError, match="cannot specify both"):
        field(default=1, default_factory=list)


def test_the_inits_compiled_ahead_are_current() -> None:
    done = subprocess.run([sys.executable, "-m", "tests.inits"], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr


def test_a_class_whose_init_was_not_compiled_ahead_gets_one() -> None:
    @memci_dataclass(frozen=True, slots=True)
    class Unusual:
        """Fields no memci class has."""

        qzx_first: int
        qzx_second: tuple[int, ...] = ()

    assert Unusual(1).qzx_second == () and Unusual(1, (2,)) == Unusual(1, (2,))
    assert Unusual.__init__.__module__ == __name__


def _refusals(*calls: Callable[[], object]) -> list[str]:
    """The message of the TypeError each call raises (each must raise one)."""
    messages = []
    for call in calls:
        with pytest.raises(TypeError) as caught:
            call()
        messages.append(str(caught.value))
    return messages


def _initialized(maker: Callable[..., Any], frozen: bool, slots: bool) -> type:
    @maker(frozen=frozen, slots=slots)
    class Rec:
        """A record."""

        a: int
        b: list[int] = dataclasses.field(default_factory=list)
        c: str = "c"
        d: int = dataclasses.field(default=4, init=False)
        e: list[str] = dataclasses.field(default_factory=lambda: ["e"], init=False)
        f: int = dataclasses.field(default=6, kw_only=True)
        g: int = dataclasses.field(kw_only=True, default_factory=lambda: 7)

        def __post_init__(self) -> None:
            object.__setattr__(self, "c", self.c * 2)

    return Rec


@pytest.mark.parametrize(("frozen", "slots"), [(True, True), (True, False), (False, True),
                                               (False, False)])
def test_init_is_the_standard_librarys(frozen: bool, slots: bool) -> None:
    std, ours = (_initialized(maker, frozen, slots) for maker in MAKERS)
    _same_params(std, ours)
    assert str(inspect.signature(ours)) == str(inspect.signature(std))
    assert ours.__init__.__annotations__ == std.__init__.__annotations__
    assert ours.__init__.__qualname__ == std.__init__.__qualname__
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((1,), {}), ((1, [2], "x"), {"f": 0, "g": 1}), ((), {"a": 3, "c": "y"})]
    for args, kwargs in calls:
        s, o = std(*args, **kwargs), ours(*args, **kwargs)
        assert repr(o) == repr(s)
        assert dataclasses.asdict(o) == dataclasses.asdict(s)
    assert ours(1).b is not ours(1).b  # a factory's value is made for each instance
    for args, kwargs in [((), {}), ((1, [], "c", 4), {}), ((1,), {"d": 1}), ((1,), {"h": 1})]:
        errors = _refusals(*(partial(made, *args, **kwargs) for made in (std, ours)))
        assert errors[0] == errors[1]
    o = copy.deepcopy(ours(5, [1], f=2))  # copied as the fields are, no __init__ again
    assert o == ours(5, [1], f=2) and repr(o) == repr(copy.deepcopy(std(5, [1], f=2)))


def test_a_class_the_library_refuses_is_refused_alike() -> None:
    def late_default(maker: Callable[..., Any]) -> type:
        @maker
        class Late:
            a: int = 1
            b: int  # type: ignore[misc]

        return Late

    def frozen_on_mutable(maker: Callable[..., Any]) -> type:
        @maker
        class Base:
            a: int

        @maker(frozen=True)
        class Child(Base):
            b: int = 0

        return Child

    def mutable_on_frozen(maker: Callable[..., Any]) -> type:
        @maker(frozen=True)
        class Base:
            a: int

        @maker
        class Child(Base):
            b: int = 0

        return Child

    for body in (late_default, frozen_on_mutable, mutable_on_frozen):
        errors = _refusals(*(partial(body, maker) for maker in MAKERS))
        assert errors[0] == errors[1]


def test_a_frozen_child_a_field_named_self_and_no_docstring_are_the_librarys() -> None:
    def family(maker: Callable[..., Any]) -> type:
        @maker(frozen=True, slots=True)
        class Base:
            a: int

        @maker(frozen=True)
        class Child(Base):
            self: int = 0

        return Child

    std, ours = _twins(family)
    assert std.__doc__ == ours.__doc__ == "Child(a: 'int', self: 'int' = 0)"
    assert repr(ours(1, 2)) == repr(std(1, 2)).replace(std.__qualname__, ours.__qualname__)
    assert hash(ours(1, 2)) == hash(std(1, 2))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours(1).a = 2


def test_a_record_holding_a_read_only_mapping_pickles_and_copies(tmp_path: Path) -> None:
    # Messages and session records hold their metadata and settings read-only (a
    # mappingproxy, which neither pickle nor deepcopy can take): what build() returns
    # goes through both, and comes back equal and read-only.
    with memci.Engine.open(tmp_path / "m.db") as engine:
        session = engine.session("chat")
        session.add({"role": "user", "content": "hi", "metadata": {"tags": {"a": 1}}})
        context = session.build()
        record = session.record
    message = context.messages[-1]
    for copied in (copy.deepcopy(message), pickle.loads(pickle.dumps(message))):
        assert copied == message
        assert type(copied.metadata) is type(message.metadata)
        with pytest.raises(TypeError):
            copied.metadata["x"] = 1  # type: ignore[index]
    assert copy.deepcopy(message).metadata["tags"] is not message.metadata["tags"]
    assert pickle.loads(pickle.dumps(context)) == copy.deepcopy(context) == context
    assert pickle.loads(pickle.dumps(record)) == record
