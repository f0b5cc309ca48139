"""The ``memci`` command.

Every command has help text (``memci COMMAND --help``) and a line in ``docs/cli.md``; a
test checks both. Errors of the caller's making print one line saying what to fix and
exit with status 2; nothing is written half-way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import click
from rich.console import Console
from rich.markup import escape

from memci.engine import Engine, Session
from memci.errors import MemciError

__all__ = ["main"]

_DB_HELP = ("The store: a SQLite file, or a postgresql://user@host/db URL (default: $MEMCI_DB, "
            "else $MEMCI_HOME/memci.db or ./.memci/memci.db).")


class _Group(click.Group):
    """Turns memci's errors into one readable line and exit status 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemciError as exc:
            # escape: messages hold brackets (pip install 'memci[server]') that rich would
            # take for markup
            Console(stderr=True, soft_wrap=True).print(
                f"[bold red]error:[/] {type(exc).__name__}: {escape(str(exc))}",
                highlight=False, markup=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memci")
def main() -> None:
    """memci: a context and memory engine for LLM agents.

    Start with `memci replay FILE` to see what memci would send for a recorded
    conversation or agent trace.
    """


@contextmanager
def _engine(db: str | None) -> Iterator[Engine]:
    # Commands never start background workers: `memci worker` runs them.
    engine = Engine.open(db, workers=0)
    try:
        yield engine
    finally:
        engine.close()


def _existing(engine: Engine, name: str, tenant: str) -> Session:
    """The session ``name`` of ``tenant``; a usage error (exit 2) when there is none."""
    if engine.store.session(tenant, name) is None:
        raise click.UsageError(f"no session {name!r} in tenant {tenant!r}")
    return engine.session(name, tenant=tenant)


@contextmanager
def _atomic(path: Path) -> Iterator[IO[str]]:
    """A text file that appears at ``path`` whole, or not at all."""
    tmp = path.with_name(path.name + ".partial")
    with tmp.open("w", encoding="utf-8") as fh:
        yield fh
    tmp.replace(path)


@main.command("export")
@click.argument("session")
@click.option("--tenant", default="default", show_default=True, help="The session's tenant.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (default: standard output).")
def export_command(session: str, tenant: str, db: str | None, output: Path | None) -> None:
    """Export SESSION as JSONL: a header line, then one message a line (lossless)."""
    with _engine(db) as engine:
        target = _existing(engine, session, tenant)
        if output is None:
            target.export_jsonl(sys.stdout)
            return
        with _atomic(output) as fh:
            count = target.export_jsonl(fh)
    Console(stderr=True).print(f"exported {count} messages to {output}", highlight=False)


@main.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--as", "name", default=None, help="Import under this session name.")
@click.option("--tenant", default=None, help="Import into this tenant (default: the file's).")
@click.option("--db", default=None, help=_DB_HELP)
def import_command(file: Path, name: str | None, tenant: str | None, db: str | None) -> None:
    """Import a session from a JSONL export (all of it, or nothing)."""
    with _engine(db) as engine, file.open(encoding="utf-8") as fh:
        session = engine.import_jsonl(fh, name=name, tenant=tenant)
        count = session.count()
    Console(stderr=True).print(f"imported {count} messages into session {session.name!r}",
                               highlight=False)


# The other commands register themselves on `main` when imported.
from memci.cli import _delete, _inspect, _migrate, _replay, _server, _ui, _work  # noqa: E402, F401
