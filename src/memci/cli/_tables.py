"""Tables of the ``memci`` command whose identifiers are never cut, whatever the width.

An id printed in a table is what the next command needs (``memci keys revoke KEY_ID``,
``memci inspect SESSION``), so a table made by :func:`table` keeps each column named in
``whole`` on one line at its full width, folds the other columns' long cells onto more
lines instead of cutting them (each keeps at least ten columns), and :func:`print_table`
widens the output past the terminal when even that does not fit (the terminal wraps the
line; the id stays whole).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

__all__ = ["print_table", "table"]

_FOLDED_MIN = 10  # columns a folded column keeps however narrow the terminal


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]], *,
          whole: Iterable[str] = (), right: Iterable[str] = ()) -> Table:
    """A table of ``rows``; the ``whole`` columns are never wrapped or cut."""
    rows = [list(r) for r in rows]
    kept, numbers = set(whole), set(right)
    out = Table(title=title, title_justify="left")
    for index, name in enumerate(columns):
        justify: Literal["left", "right"] = "right" if name in numbers else "left"
        width = max([cell_len(name), *(cell_len(r[index]) for r in rows)])
        if name in kept:
            out.add_column(name, justify=justify, no_wrap=True, min_width=width)
        else:
            out.add_column(name, justify=justify, overflow="fold",
                           min_width=min(width, _FOLDED_MIN))
    for row in rows:
        out.add_row(*row)
    return out


def print_table(console: Console, made: Table) -> None:
    """Print ``made``, wider than the terminal when its whole columns need it."""
    needed = Measurement.get(console, console.options, made).minimum
    console.print(made, width=max(console.width, needed), crop=False)
