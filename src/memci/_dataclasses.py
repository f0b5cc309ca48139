"""memci's dataclasses, made with half the compiling: :func:`dataclass`, a drop-in.

:func:`dataclasses.dataclass` compiles every method it adds from source (an ``exec`` of
~0.1 ms each): ``__init__``, ``__repr__`` and ``__eq__``, and for a frozen class
``__hash__``, ``__setattr__`` and ``__delattr__``. ``import memci`` makes ~46 of them,
and their compiling was a quarter of the import (issue 25, ``bench/bench_coldstart.py``).
:func:`dataclass` takes the same arguments and makes the same class: the standard
library's, asked for ``__init__`` (and the frozen methods) only, with ``__repr__``,
``__eq__`` and ``__hash__`` added as closures over the fields' names, nothing compiled.

Invariants (``tests/test_dataclasses.py`` compares both on the same classes): the class has
the fields, ``__init__``, slots, ``__match_args__`` and ``__dataclass_params__`` the
standard library gives it, so :func:`dataclasses.fields`, :func:`dataclasses.replace`,
:func:`dataclasses.asdict`, pickling and frozen assignment errors are unchanged; its repr
is the same text (``...`` where an instance holds itself), ``==`` compares the same field
tuples of two instances of the very same class (else ``NotImplemented``), and a hash is
the hash of the same tuple. A class that asks for what these closures do not make (an
``order``, an ``unsafe_hash``, a ``__repr__``/``__eq__``/``__hash__`` of its own) is made
by the standard library alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["dataclass"]

T = TypeVar("T")

# Methods a class body may define that the closures would otherwise replace.
_OWN = ("__repr__", "__eq__", "__hash__")


@overload
def dataclass(cls: type[T], /) -> type[T]: ...


@overload
def dataclass(*, init: bool = True, repr: bool = True, eq: bool = True, order: bool = False,
              unsafe_hash: bool = False, frozen: bool = False, match_args: bool = True,
              kw_only: bool = False, slots: bool = False
              ) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: type[T] | None = None, /, **options: Any
              ) -> type[T] | Callable[[type[T]], type[T]]:
    """:func:`dataclasses.dataclass` with ``__repr__``, ``__eq__``, ``__hash__`` not compiled."""
    if cls is None:
        return lambda c: _make(c, options)
    return _make(cls, options)


def _make(cls: type[T], options: dict[str, Any]) -> type[T]:
    repr_, eq = options.get("repr", True), options.get("eq", True)
    if (options.get("order") or options.get("unsafe_hash")
            or any(name in cls.__dict__ for name in _OWN)):
        made: type[T] = dataclasses.dataclass(cls, **options)
        return made
    made = dataclasses.dataclass(cls, **{**options, "repr": False, "eq": False})
    fields = dataclasses.fields(made)  # type: ignore[arg-type]
    methods: dict[str, Any] = {}
    if repr_:
        methods["__repr__"] = _repr([f.name for f in fields if f.repr])
    if eq:
        methods["__eq__"] = _eq([f.name for f in fields if f.compare])
        # What the standard library does with an eq class: a frozen one hashes its
        # compared fields (those not left out of the hash), a mutable one is unhashable.
        methods["__hash__"] = (
            _hash([f.name for f in fields if f.hash or (f.hash is None and f.compare)])
            if options.get("frozen") else None)
    # On the class made (with slots, a new class), named as the library names its methods.
    for name, method in methods.items():
        if method is not None:
            method.__qualname__ = f"{made.__qualname__}.{name}"
        setattr(made, name, method)
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.repr, params.eq = repr_, eq
    return made


def _key(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A C getter of the tuple of ``names`` (attrgetter gives a bare value for one name)."""
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    if not names:
        return lambda obj: ()
    return attrgetter(*names)


def _repr(names: list[str]) -> Callable[[Any], Any]:
    def __repr__(self: object) -> str:
        return (self.__class__.__qualname__ + "("
                + ", ".join([f"{name}={getattr(self, name)!r}" for name in names]) + ")")

    return recursive_repr()(__repr__)


def _eq(names: list[str]) -> Callable[[Any, Any], Any]:
    key = _key(names)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return __eq__


def _hash(names: list[str]) -> Callable[[Any], int]:
    key = _key(names)

    def __hash__(self: Any) -> int:
        return hash(key(self))

    return __hash__
