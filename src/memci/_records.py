"""memci's named tuples, made with nothing compiled: :data:`NamedTuple`, a drop-in.

``class Hit(NamedTuple): ...`` with :class:`typing.NamedTuple` checks each field's
annotation, and under ``from __future__ import annotations`` every annotation is a string
that it compiles into a :class:`typing.ForwardRef` (~190 compiles for the ~38 named tuples
``import memci`` makes); then :func:`collections.namedtuple` compiles the class's
``__new__`` from text. Together, half their cost (issue 25, ``bench/bench_coldstart.py``).
This :data:`NamedTuple` is a drop-in for the class form: the class
:func:`collections.namedtuple` makes (fields, defaults, ``_make``, ``_replace``,
``_asdict``, repr, ``__match_args__``, ``__module__``, and the methods and docstring of
the body), with the annotations kept as written and its ``__new__`` compiled ahead
(:func:`memci._dataclasses.compiled`). The type checker sees :class:`typing.NamedTuple`
itself; the functional form (``NamedTuple("Name", [...])``) is typing's alone.

Invariants (``tests/test_records.py`` makes the same classes with both and compares them):
the same fields, defaults, repr, equality, hashes, pickling and ``_replace``; the same
errors for a field without a default after one with a default and for a body that
redefines what a named tuple must keep; :func:`typing.get_type_hints` gives the same
types. A generic named tuple (a ``Generic`` base) is typing's too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["NamedTuple"]

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    from _collections import _tuplegetter

    from memci._dataclasses import compiled

    # What a named tuple's body may not redefine, and what is not copied from it: typing's.
    _PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields",
                             "_field_defaults", "_make", "_replace", "_asdict", "_source"})
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _Maker(type):
        def __new__(cls, typename: str, bases: tuple[type, ...], ns: dict[str, Any]) -> type:
            if bases != (_Base,):
                raise TypeError("can only inherit from a NamedTuple type; a generic one "
                                "takes typing.NamedTuple")
            types = ns.get("__annotations__", {})
            defaults: list[str] = []
            for name in types:
                if name in ns:
                    defaults.append(name)
                elif defaults:
                    raise TypeError(f"Non-default namedtuple field {name} cannot follow "
                                    f"default field{'s' if len(defaults) > 1 else ''} "
                                    f"{', '.join(defaults)}")
            made = _named_tuple(typename, tuple(types), [ns[name] for name in defaults],
                                ns["__module__"])
            made.__annotations__ = made.__new__.__annotations__ = dict(types)
            for key, value in ns.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in made._fields:
                    setattr(made, key, value)
            return made

    _Base = type.__new__(_Maker, "NamedTuple", (), {})

    def _named_tuple(typename: str, fields: tuple[str, ...], defaults: list[Any],
                     module: str) -> type:
        """The class :func:`collections.namedtuple` makes, its ``__new__`` compiled ahead."""
        for name in fields:
            if name.startswith("_"):
                raise ValueError(f"Field names cannot start with an underscore: {name!r}")
        count = len(fields)
        args = ", ".join(fields) + ("," if count == 1 else "")
        new = compiled(f"def __create_fn__(_tuple_new):\n return lambda _cls, {args}: "
                       f"_tuple_new(_cls, ({args}))", module)(tuple.__new__)
        new.__name__, new.__doc__ = "__new__", f"Create new instance of {typename}({args})"
        if defaults:
            new.__defaults__ = tuple(defaults)
        shown = "(" + ", ".join(f"{name}=%r" for name in fields) + ")"

        def _make(cls: type, iterable: Any) -> Any:
            made = tuple.__new__(cls, iterable)
            if len(made) != count:
                raise TypeError(f"Expected {count} arguments, got {len(made)}")
            return made

        def _replace(self: Any, /, **changes: Any) -> Any:
            made = self._make(map(changes.pop, fields, self))
            if changes:
                raise ValueError(f"Got unexpected field names: {list(changes)!r}")
            return made

        def __repr__(self: Any) -> str:
            return self.__class__.__name__ + shown % self

        def _asdict(self: Any) -> dict[str, Any]:
            return dict(zip(self._fields, self, strict=True))

        def __getnewargs__(self: Any) -> tuple[Any, ...]:
            return tuple(self)

        _make.__doc__ = f"Make a new {typename} object from a sequence or iterable"
        _replace.__doc__ = (f"Return a new {typename} object replacing specified fields "
                            "with new values")
        __repr__.__doc__ = "Return a nicely formatted representation string"
        _asdict.__doc__ = "Return a new dict which maps field names to their values."
        __getnewargs__.__doc__ = "Return self as a plain tuple.  Used by copy and pickle."
        methods = (new, _make, _replace, __repr__, _asdict, __getnewargs__)
        for method in methods:
            method.__qualname__ = f"{typename}.{method.__name__}"
            method.__module__ = module
        namespace: dict[str, Any] = {
            "__doc__": f"{typename}({args})", "__slots__": (), "_fields": fields,
            "_field_defaults": dict(zip(fields[count - len(defaults):], defaults,
                                        strict=True)),
            "__new__": new, "_make": classmethod(_make), "_replace": _replace,
            "__repr__": __repr__, "_asdict": _asdict, "__getnewargs__": __getnewargs__,
            "__match_args__": fields, "__module__": module}
        for index, name in enumerate(fields):
            namespace[name] = _tuplegetter(index, f"Alias for field number {index}")
        return type(typename, (tuple,), namespace)

    def NamedTuple(typename: str, fields: Any = None, /, **kwargs: Any) -> type:
        """The class form's base; the functional form is typing's."""
        raise TypeError("memci._records.NamedTuple makes the class form; for "
                        f"NamedTuple({typename!r}, ...) use typing.NamedTuple")

    def _mro_entries(bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (_Base,)

    NamedTuple.__mro_entries__ = _mro_entries
