r"""What memci makes on first use rather than at import: regular expressions and names.

A fresh process pays for every module-level expression its imports compile and every
module they load, whether it uses them or not (``import memci`` is issue 25's cold start;
``bench/bench_coldstart.py``). Three helpers defer that work to the first use:

- :class:`LazyPattern` is a regular expression compiled the first time it matches
  (``_WORD = LazyPattern(r"\w+")``, then ``_WORD.findall(text)`` as with
  :func:`re.compile`); a process that never asks never compiles it;
- :func:`lazy_names` gives a package the ``__getattr__`` and ``__dir__`` of PEP 562 for
  names whose modules load when one of them is first read (``from memci import Hit``
  works, ``import memci`` does not load ``memci.memory._hit``);
- :class:`LazyLogger` is a :mod:`logging` logger got on its first message: a process
  that logs nothing never imports :mod:`logging` (with :mod:`traceback`, ~5 ms).

Invariants: a lazy pattern behaves as the compiled one (same matches, same flags);
compiling twice in a race gives equal patterns, so no lock is needed. A lazy name is the
object its module defines (``memci.Hit is memci.memory._hit.Hit``), cached in the
package after its first read; an unknown name raises :class:`AttributeError`. A lazy
logger's messages are the named logger's, with the caller's file, line and function.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging


class LazyPattern:
    """A regular expression compiled the first time it is used."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int | re.RegexFlag = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled expression (compiled now if this is its first use)."""
        found = self._compiled
        if found is None:
            found = self._compiled = re.compile(self._source, self._flags)
        return found

    @property
    def pattern(self) -> str:
        return self._source

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize
               ) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize
              ) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize
                  ) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize
                 ) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled.findall(string, pos, endpos)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled.split(string, maxsplit)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str,
            count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)

    def subn(self, repl: str | Callable[[re.Match[str]], str], string: str,
             count: int = 0) -> tuple[str, int]:
        return self.compiled.subn(repl, string, count)

    def __repr__(self) -> str:
        return f"LazyPattern({self._source!r}, {self._flags!r})"


def lazy_names(package: str, modules: Mapping[str, tuple[str, ...]]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` of PEP 562 for ``package``.

    ``modules`` maps a module to the names ``package`` reads from it; the module is
    imported when one of its names is first asked for.
    """
    namespace = sys.modules[package].__dict__
    homes = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__


class LazyLogger:
    """The logger called ``name``, got (and :mod:`logging` imported) on its first message."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def _logger(self) -> logging.Logger:
        import logging

        return logging.getLogger(self._name)

    def info(self, msg: str, *args: object) -> None:
        self._logger().info(msg, *args, stacklevel=2)

    def warning(self, msg: str, *args: object) -> None:
        self._logger().warning(msg, *args, stacklevel=2)
