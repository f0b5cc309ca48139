"""What SQLite and PostgreSQL spell differently in memci's shared statements: a dialect.

Every statement of :mod:`memci.store._sql` is written once, in the SQL both backends
read alike: ``?`` for each parameter; ``INSERT … ON CONFLICT (…) DO NOTHING`` for
"insert or ignore" and ``DO UPDATE SET c = excluded.c`` for upserts (:func:`upsert`);
``RETURNING``; ``TRUE``; ``count(*) FILTER (WHERE …)``; ``CAST``, ``substr``,
``COALESCE``, ``<>``. That is the SQL of SQLite 3.35 and later (``RETURNING`` is the
newest of them; see :data:`memci.store.sqlite._dialect.MIN_SQLITE`) and of every
supported PostgreSQL. What is spelled differently comes from the backend's
:class:`Dialect`, and only that:

- placeholders: :meth:`Dialect.statement` turns a statement's ``?`` into the driver's
  (PostgreSQL: ``%s``, with every ``%`` doubled), once per text;
- lists: a few values inline (:meth:`Dialect.in_values`: SQLite ``IN (?, ?)``), or
  any number as one parameter (:meth:`Dialect.in_array`, :meth:`Dialect.array`,
  :meth:`Dialect.array_rows`: SQLite a JSON array read with ``json_each``, PostgreSQL an
  array with ``= ANY``);
- functions and operators: :meth:`Dialect.greatest`, :attr:`Dialect.is_same` (equality
  that holds for two NULLs), :meth:`Dialect.byte_length`, :meth:`Dialect.contains`,
  :meth:`Dialect.json_has_key`;
- locks (:attr:`Dialect.lock_row`, :attr:`Dialect.skip_locked`, :attr:`Dialect.lock_name`:
  none in SQLite, whose write transactions are serialized);
- column types: text kept where U+0000 must fit (:meth:`Dialect.utf8_in`,
  :meth:`Dialect.utf8_out`: PostgreSQL ``bytea``);
- batches: :meth:`Dialect.executemany`, the one place a batch reaches the driver, and
  :meth:`Dialect.rows`, a batch's rows in one ``INSERT``.

Invariant: a statement never holds ``?`` but as a placeholder (a literal question mark
is a parameter's value), so the translation needs no parser. Errors are not the
dialect's: each backend maps its driver's exceptions where its transactions catch them
(``_failures.py``), so a shared statement's failure is the same
:class:`~memci.errors.StoreError` on both.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Sequence
from typing import Any

__all__ = ["Dialect", "upsert"]


class Dialect(ABC):
    """A backend's spelling of the few things the shared statements need spelled."""

    #: ``sqlite`` or ``postgresql``: for messages and the backend's own checks.
    name: str
    #: Null-safe equality: ``a {is_same} ?`` holds when both are NULL.
    is_same: str
    #: Appended to a ``SELECT`` that locks the rows it reads until the transaction ends.
    lock_row: str
    #: Appended to a ``SELECT`` that locks the rows it reads and skips rows others hold.
    skip_locked: str
    #: A statement that takes, until the transaction ends, the lock named by its one
    #: parameter (a text), for writers with no row to lock ("" where writers take turns).
    lock_name: str

    @abstractmethod
    def statement(self, text: str) -> str:
        """``text`` with the driver's placeholders (cached: called for every statement)."""

    @abstractmethod
    def in_values(
        self, column: str, values: Collection[Any], *, negate: bool = False,
    ) -> tuple[str, list[Any]]:
        """``column`` is one of a few ``values`` (``negate``: is none): SQL and its args."""

    @abstractmethod
    def in_array(self, column: str) -> str:
        """``column`` is one of the values of one :meth:`array` parameter (any number)."""

    @abstractmethod
    def array(self, values: Iterable[Any]) -> Any:
        """``values`` as the one parameter of :meth:`in_array` or :meth:`array_rows`."""

    @abstractmethod
    def array_rows(self, alias: str) -> str:
        """A ``SELECT`` of one :meth:`array` parameter's integers as rows of ``alias``."""

    @abstractmethod
    def greatest(self, first: str, second: str) -> str:
        """The larger of two expressions."""

    @abstractmethod
    def byte_length(self, expr: str) -> str:
        """The bytes of a text expression in UTF-8 (NULL when it is NULL)."""

    @abstractmethod
    def contains(self, expr: str) -> str:
        """A condition: the text ``expr`` holds the text of one parameter."""

    @abstractmethod
    def json_has_key(self, column: str) -> str:
        """A condition: the JSON object in ``column`` has a key among an :meth:`array`."""

    @abstractmethod
    def utf8_in(self, text: str | None) -> Any:
        """``text`` as stored in a column that must hold any character (U+0000 too)."""

    @abstractmethod
    def utf8_out(self, value: Any) -> str | None:
        """The text of a value :meth:`utf8_in` stored."""

    @abstractmethod
    def executemany(self, conn: Any, text: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run the translated statement ``text`` once per row of ``rows`` on ``conn``."""

    def rows(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
        computed: tuple[str, Sequence[Any]] | None = None,
    ) -> tuple[str, list[Any]]:
        """A batch of ``rows`` (values of ``columns`` of ``table``) for one ``INSERT``.

        What follows ``INSERT INTO table (columns)``, and its args: ``VALUES (?, ?), …``
        (a backend whose driver sends the rows better spells them its way).
        ``computed``: SQL and its args giving each row one more value, after the
        columns' (the ``INSERT`` names its column last), such as the next revision.
        """
        expr, expr_args = computed or ("", ())
        marks = "(" + ", ".join(["?"] * len(columns) + ([expr] if computed else [])) + ")"
        return ("VALUES " + ", ".join([marks] * len(rows)),
                [v for row in rows for v in (*row, *expr_args)])


def upsert(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    """``INSERT`` of ``columns`` into ``table`` that replaces the row with the same ``key``.

    Every column not in ``key`` takes the new value. Both backends read it alike: the
    table's only unique key must be ``key`` (then it is SQLite's ``INSERT OR REPLACE``).
    """
    marks = ", ".join("?" * len(columns))
    sets = ", ".join(f"{c} = excluded.{c}" for c in columns if c not in key)
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"
            f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET {sets}")
