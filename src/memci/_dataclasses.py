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
import inspect
import sys
from collections.abc import Callable, Iterable
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, TypeVar, cast, dataclass_transform, overload

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
    init, frozen = options.get("init", True), options.get("frozen", False)
    if (options.get("order") or options.get("unsafe_hash")
            or any(name in cls.__dict__ for name in _OWN) or _init_vars(cls)):
        made: type[T] = dataclasses.dataclass(cls, **options)
        return made
    # A frozen class's own methods, made here: only for a class with no dataclass base
    # (the library checks that bases are frozen alike) and no __setattr__ of its own.
    own_frozen = frozen and not (_has_dataclass_base(cls) or "__setattr__" in cls.__dict__
                                 or "__delattr__" in cls.__dict__)
    named = bool(cls.__doc__)  # else the library names the class by its signature
    made = dataclasses.dataclass(cls, **{**options, "repr": False, "eq": False, "init": False,
                                         "frozen": frozen and not own_frozen})
    fields = dataclasses.fields(made)  # type: ignore[arg-type]
    names = [f.name for f in fields]
    methods: dict[str, Any] = {}
    if init and "__init__" not in cls.__dict__:
        methods["__init__"] = _init(made, fields, frozen, bool(options.get("slots")))
    if own_frozen:
        methods["__setattr__"], methods["__delattr__"] = _frozen(cls, tuple(names))
        if options.get("slots") and not {"__getstate__", "__setstate__"} & cls.__dict__.keys():
            # Pickling sets a frozen slotted instance's fields.
            methods["__getstate__"], methods["__setstate__"] = _state(names)
    if repr_:
        methods["__repr__"] = _repr([f.name for f in fields if f.repr])
    if eq:
        methods["__eq__"] = _eq([f.name for f in fields if f.compare])
        # What the standard library does with an eq class: a frozen one hashes its
        # compared fields (those not left out of the hash), a mutable one is unhashable.
        methods["__hash__"] = (
            _hash([f.name for f in fields if f.hash or (f.hash is None and f.compare)])
            if frozen else None)
    # On the class made (with slots, a new class), named as the library names its methods.
    for name, method in methods.items():
        if method is not None:
            method.__qualname__ = f"{made.__qualname__}.{name}"
        setattr(made, name, method)
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.repr, params.eq, params.init, params.frozen = repr_, eq, init, frozen
    if "__init__" in methods and not named:
        made.__doc__ = made.__name__ + str(inspect.signature(made)).replace(" -> None", "")
    return made


def _init_vars(cls: type) -> bool:
    """Whether the class body declares an ``InitVar`` (left to the library)."""
    return any("InitVar" in (kind if isinstance(kind, str) else repr(kind))
               for kind in inspect.get_annotations(cls).values())


def _has_dataclass_base(cls: type) -> bool:
    return any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:])


class _Factory:
    """The default of a parameter whose field has a default factory (shown as the library's)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()

#: Every text :func:`compiled` was asked for in this process (for :func:`render_inits`).
TEXTS: dict[str, None] = {}
_PRECOMPILED: dict[str, Callable[..., Any]] | None = None


def _init(made: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool,
          slots: bool) -> Callable[..., None]:
    """The ``__init__`` the library writes for these fields, compiled from shorter text.

    The same parameters (positional, then keyword-only; defaults; ``<factory>`` for a
    default factory), the same assignments (``object.__setattr__`` in a frozen class), the
    same ``__post_init__`` call and annotations; module globals as its globals. Raises the
    library's ``TypeError`` for a field without a default after one with a default.
    """
    self_name = "__dataclass_self__" if any(f.name == "self" for f in fields) else "self"
    shared: dict[str, Any] = {"__dataclass_set__": object.__setattr__,
                              "__dataclass_factory__": _FACTORY}
    params: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    seen_default = False
    for f in fields:
        default = f"__dataclass_dflt_{f.name}__"
        has_factory = f.default_factory is not dataclasses.MISSING
        if has_factory:
            shared[default] = f.default_factory
        elif f.default is not dataclasses.MISSING:
            shared[default] = f.default
        if f.init:
            if has_factory:
                param = f"{f.name}=__dataclass_factory__"
                value = f"{default}() if {f.name} is __dataclass_factory__ else {f.name}"
            elif f.default is not dataclasses.MISSING:
                param, value = f"{f.name}={default}", f.name
            else:
                param, value = f.name, f.name
            if not f.kw_only:
                if param != f.name:
                    seen_default = True
                elif seen_default:
                    raise TypeError(f"non-default argument {f.name!r} follows default argument")
            (keyword if f.kw_only else params).append(param)
        elif has_factory:
            value = f"{default}()"
        elif slots and f.default is not dataclasses.MISSING:
            value = default
        else:
            continue  # read from the class attribute that holds the default
        body.append(f"  __dataclass_set__({self_name},{f.name!r},{value})" if frozen
                    else f"  {self_name}.{f.name}={value}")
    if hasattr(made, "__post_init__"):
        body.append(f"  {self_name}.__post_init__()")
    signature = ",".join([self_name, *params, *(["*", *keyword] if keyword else [])])
    text = (f"def __create_fn__({','.join(shared)}):\n"
            f" def __init__({signature}):\n" + ("\n".join(body) or "  pass")
            + "\n return __init__")
    maker = compiled(text, made.__module__)
    made_init: Callable[..., None] = maker(**shared)
    made_init.__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    made_init.__module__ = made.__module__
    return made_init


def compiled(text: str, module: str) -> Callable[..., Any]:
    """The function ``__create_fn__`` that ``text`` defines: compiled ahead, or now.

    Compiled now, its globals are those of ``module`` (as the standard library's methods'
    are). Every text asked for is kept in :data:`TEXTS`, for :func:`render_inits`.
    """
    global _PRECOMPILED
    TEXTS[text] = None
    if _PRECOMPILED is None:
        from memci._inits import INITS

        _PRECOMPILED = cast("dict[str, Callable[..., Any]]", INITS)
    maker = _PRECOMPILED.get(text)
    if maker is None:
        found = sys.modules.get(module)
        scope: dict[str, Any] = {}
        exec(compile(text, "<string>", "exec"), found.__dict__ if found else {}, scope)
        maker = scope["__create_fn__"]
    return maker


def render_inits(texts: Iterable[str]) -> str:
    """The text of ``memci/_inits.py`` holding the makers of ``texts``, compiled ahead."""
    head = '''"""memci's dataclass ``__init__``s and named tuple ``__new__``s, compiled ahead.

Generated: do not edit. :mod:`memci._dataclasses` writes a dataclass's ``__init__`` as
text, and :mod:`memci._records` a named tuple's ``__new__``; compiling them took ~0.1-0.2
ms a class, a tenth of ``import memci``. Here each text memci's classes make is a function
of this module, looked up by its text: nothing is compiled at import. A text not here (a
class added or changed since) is compiled as before. Rewrite this file with ``python -m
tests.inits --write``; ``tests/test_dataclasses.py`` checks that it is current.
"""
# mypy: ignore-errors
# ruff: noqa

'''
    ordered = sorted(set(texts))
    parts = [head]
    for i, text in enumerate(ordered):
        parts.append(text.replace("def __create_fn__(", f"def _{i}(", 1) + "\n\n")
    parts.append("INITS = {\n")
    parts.extend(f"    {text!r}: _{i},\n" for i, text in enumerate(ordered))
    parts.append("}\n")
    return "".join(parts)


def _frozen(cls: type[Any], names: tuple[str, ...]
            ) -> tuple[Callable[[Any, str, Any], None], Callable[[Any, str], None]]:
    """A frozen class's ``__setattr__`` and ``__delattr__``, as the library writes them.

    ``cls`` is the class as the body made it (the library's methods refer to that one,
    not to the new class ``slots`` makes).
    """
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def _state(names: list[str]) -> tuple[Callable[[Any], list[Any]], Callable[[Any, Any], None]]:
    """A frozen slotted class's ``__getstate__`` and ``__setstate__`` (for pickling)."""
    def __getstate__(self: Any) -> list[Any]:
        return [getattr(self, name) for name in names]

    def __setstate__(self: Any, state: Any) -> None:
        for name, value in zip(names, state, strict=True):
            object.__setattr__(self, name, value)

    return __getstate__, __setstate__


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
