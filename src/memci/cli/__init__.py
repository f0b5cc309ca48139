"""The ``memci`` command.

Every command has help text (``memci COMMAND --help``) and a line in ``docs/cli.md``; a
test checks both. Errors of the caller's making print one line saying what to fix and
exit with status 2; nothing is written half-way.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memci.engine import Engine, Session
from memci.errors import InvalidFileError, MemciError
from memci.replay import load_conversation, replay

__all__ = ["main"]

_DB_HELP = "SQLite store file (default: $MEMCI_HOME/memci.db or ./.memci/memci.db)."


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


@main.command("replay")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Token budget of every request (default: the model's window less 25%).")
@click.option("--model", default=None, help="Model name, for its window and tokenizer.")
@click.option("--strategy", type=click.Choice(["paged", "oldest", "sliding_window",
                                               "summarize"]), default=None,
              help="How the context is trimmed (default: paged).")
@click.option("--max-messages", type=click.IntRange(min=0), default=None,
              help="Keep at most this many messages (for --strategy sliding_window).")
@click.option("--db", default=None,
              help="Keep the replayed session in this SQLite file (default: a temporary one).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a self-contained HTML report with charts to this file.")
def replay_command(
    file: Path, budget: int | None, model: str | None, strategy: str | None,
    max_messages: int | None, db: str | None, as_json: bool, report: Path | None,
) -> None:
    """Replay a recorded conversation or agent trace through memci.

    FILE is a JSON list of OpenAI-style messages, JSONL, or an object with a
    `messages` list (such as a mini-swe-agent .traj.json). memci builds the context
    before every assistant message and reports the tokens it sends against the tokens
    of the full history.
    """
    if report is not None and not report.resolve().parent.is_dir():
        raise InvalidFileError(f"cannot write the report to {report}: no such directory")
    conversation = load_conversation(file)
    console = Console(stderr=True)
    for note in conversation.skipped:
        console.print(f"[yellow]note:[/] {note}", highlight=False)
    settings: dict[str, Any] = {"model": model, "strategy": strategy,
                                "max_messages": max_messages}
    with tempfile.TemporaryDirectory(prefix="memci-replay-") as tmp:
        with _engine(db or str(Path(tmp) / "replay.db")) as engine:
            name = f"replay:{file.stem}"
            if engine.store.session("default", name) is not None:
                name = f"{name}:{len(engine.sessions()) + 1}"
            session = engine.session(name, **{k: v for k, v in settings.items()
                                               if v is not None})
            total = len(conversation.messages)
            with Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), console=console, transient=True,
                          disable=as_json or total < 200) as bar:
                task = bar.add_task("replay", total=total)
                result = replay(session, conversation.messages, budget=budget,
                                progress=lambda n: bar.update(task, completed=n))
            events = session.events(limit=1_000_000) if report is not None else []
            used = {"budget": budget or session.settings.budget,
                    "strategy": session.settings.strategy, "model": session.settings.model}
    result.skipped.extend(conversation.skipped)
    if report is not None:
        from memci.report import write_report

        try:
            write_report(report, result, source=file.name, events=events, **used)
        except OSError as exc:
            raise InvalidFileError(f"cannot write the report to {report}: "
                                   f"{exc.strerror or exc}") from exc
        console.print(f"report written to {report}", highlight=False, soft_wrap=True)
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
        return
    table = Table(title=f"memci replay: {file.name}")
    table.add_column("request", justify="right")
    table.add_column("at message", justify="right")
    table.add_column("memci tokens", justify="right")
    table.add_column("full history", justify="right")
    table.add_column("saved", justify="right")
    table.add_column("prefix reused", justify="right")
    table.add_column("events")
    for r in result.requests:
        share = f"{100 * r.prefix_tokens / r.memci_tokens:.0f}%" if r.memci_tokens else "-"
        table.add_row(str(r.number), str(r.seq), f"{r.memci_tokens:,}", f"{r.full_tokens:,}",
                      f"{r.full_tokens - r.memci_tokens:,}", share, ", ".join(r.events))
    out = Console()
    out.print(table)
    full, sent = result.full_tokens, result.memci_tokens
    share = f" ({100 * (full - sent) / full:.1f}%)" if full else ""
    out.print(f"{result.messages} messages, {len(result.requests)} requests: memci sent "
              f"{sent:,} tokens, the full history would be {full:,}; saved "
              f"{full - sent:,}{share}", highlight=False)


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
from memci.cli import _inspect, _server, _work  # noqa: E402, F401
