"""``memci migrate``: copy a whole store into a new one, across backends, and verify it.

The copy is one read of the source and one transaction on the target. What another
process writes to the source after the read began would be missing from the copy, so a
source that another process has open (a ``memci serve``, a worker; see
:func:`memci.store.other_writers`) is refused unless ``--force``, before anything is
read or written. Progress is a bar per table with its real row count (``0/0`` for an
empty table); the counts of both sides are printed at the end.
"""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from memci.cli import main
from memci.errors import ConfigError

__all__ = ["migrate_command"]


@main.command("migrate")
@click.option("--from", "source", required=True,
              help="The store to copy: a SQLite file or a postgresql:// URL.")
@click.option("--to", "target", required=True,
              help="The new, empty store to copy into: a SQLite file or a postgresql:// URL.")
@click.option("--from-artifacts-dir", default=None,
              help="Where the source keeps large tool outputs, if a folder of its own "
                   "(default: in its database, or beside its SQLite file).")
@click.option("--to-artifacts-dir", default=None,
              help="A folder for the target's large tool outputs (default: in its database, "
                   "or beside its SQLite file).")
@click.option("--force", is_flag=True,
              help="Copy even while another process has the source open (what it writes "
                   "during the copy is not copied).")
def migrate_command(source: str, target: str, from_artifacts_dir: str | None,
                    to_artifacts_dir: str | None, force: bool) -> None:
    """Copy a whole store into a new one, e.g. from SQLite to PostgreSQL, and verify it.

    Every session, message, page state, artifact, working state, memory item, indexed
    file, job and API key is copied in one transaction (all of it or nothing), then each
    table is counted on both sides. Keyword indexes and vectors are made again by the new
    store. A source that another process has open (a running memci serve or worker) is
    refused unless --force: stop the servers writing to it first.
    """
    from memci.store import copy_store, open_store, other_writers
    from memci.workspace import contents_for

    if source == target:
        raise click.UsageError("--from and --to name the same store")
    err = Console(stderr=True)
    _check_writers(other_writers(source), source, force, err)
    src = open_store(source)
    try:
        dst = open_store(target)
        try:
            with _TableBars(err) as progress:
                counts = copy_store(src, dst, source_contents=contents_for(
                    src, from_artifacts_dir), target_contents=contents_for(
                    dst, to_artifacts_dir), progress=progress)
        finally:
            dst.close()
    finally:
        src.close()
    for count in counts:
        err.print(f"{count.table:<20} {count.source:>9,} rows copied, {count.target:,} in "
                  "the target", highlight=False)
    err.print(f"copied {sum(c.source for c in counts):,} rows from {src.location} to "
              f"{dst.location}: every table's count verified", highlight=False,
              soft_wrap=True)


def _check_writers(writers: list[str], source: str, force: bool, err: Console) -> None:
    """Refuse a source other processes have open, or warn when ``--force`` says go on."""
    if not writers:
        return
    listed = "; ".join(writers)
    if not force:
        raise ConfigError(
            f"the source store {source} is open in another process ({listed}): what it "
            "writes during the copy would be lost. Stop the memci servers and workers "
            "using it, or pass --force to copy anyway (nothing was copied)")
    err.print(f"[bold yellow]warning:[/] the source is open in another process ({listed}): "
              "what it writes from now on is not copied", highlight=False, soft_wrap=True)


class _TableBars:
    """A progress bar per table, each with the table's real row count (0/0 when empty)."""

    def __init__(self, console: Console) -> None:
        columns = (TextColumn("{task.description:<20}"), BarColumn(), MofNCompleteColumn())
        self.bar = Progress(*columns, console=console)
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _TableBars:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def __call__(self, table: str, done: int, total: int) -> None:
        if table not in self.tasks:
            self.tasks[table] = self.bar.add_task(table, total=total)
        self.bar.update(self.tasks[table], completed=done)
