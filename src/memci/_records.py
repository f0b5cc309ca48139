"""memci's named tuples, made without typing's check of every field: :data:`NamedTuple`.

``class Hit(NamedTuple): ...`` with :class:`typing.NamedTuple` checks each field's
annotation, and under ``from __future__ import annotations`` every annotation is a string
that it compiles into a :class:`typing.ForwardRef`: ~200 compiles for the ~38 named tuples
``import memci`` makes, a third of their cost (issue 25, ``bench/bench_coldstart.py``).
This :data:`NamedTuple` is a drop-in for the class form: the same
:func:`collections.namedtuple` class (fields, defaults, ``__module__``, methods and
docstring of the body, ``__match_args__``), with the annotations kept as written. The
type checker sees :class:`typing.NamedTuple` itself; the functional form
(``NamedTuple("Name", [...])``) is typing's alone.

Invariants (``tests/test_records.py`` makes the same classes with both and compares them):
the same fields, defaults, repr, equality, hashes, pickling and ``_replace``; the same
errors for a field without a default after one with a default and for a body that
redefines what a named tuple must keep; :func:`typing.get_type_hints` gives the same
types. A generic named tuple (a ``Generic`` base) is typing's too.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

__all__ = ["NamedTuple"]

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
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
            made = collections.namedtuple(typename, list(types),
                                          defaults=[ns[name] for name in defaults],
                                          module=ns["__module__"])
            made.__annotations__ = made.__new__.__annotations__ = dict(types)
            for key, value in ns.items():
                if key in _PROHIBITED:
                    raise AttributeError("Cannot overwrite NamedTuple attribute " + key)
                if key not in _SPECIAL and key not in made._fields:
                    setattr(made, key, value)
            return made

    _Base = type.__new__(_Maker, "NamedTuple", (), {})

    def NamedTuple(typename: str, fields: Any = None, /, **kwargs: Any) -> type:
        """The class form's base; the functional form is typing's."""
        raise TypeError("memci._records.NamedTuple makes the class form; for "
                        f"NamedTuple({typename!r}, ...) use typing.NamedTuple")

    def _mro_entries(bases: tuple[Any, ...]) -> tuple[type, ...]:
        return (_Base,)

    NamedTuple.__mro_entries__ = _mro_entries
