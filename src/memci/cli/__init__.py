"""The ``memci`` command.

Every command has help text (``memci COMMAND --help``) and a line in ``docs/cli.md``; a
test checks both. Errors of the caller's making print one line saying what to fix and
exit with status 2; nothing is written half-way.
"""

from __future__ import annotations

import json
import sys
import tempfile
import textwrap
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
from memci.replay import ReplayResult, load_conversation, replay
from memci.replay import cached_discount as default_discount
from memci.traces import FORMAT_NAMES as _FORMAT_NAMES

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


_REPLAY_HELP = """Replay a recorded conversation or agent trace through memci.

memci builds the context before every assistant message, as the agent did before
calling its model, and prints per request the tokens memci sends against the full
history: the conversation's own messages so far and the agent's own tool schemas
(never memci's), counted with the same tokenizer, whatever the strategy or budget.
Totals follow, also as cost with prompt caching (cached input at the provider's
discount: --cached-discount), since an agent that sends its full history hits the
cache too.

FILE is read in the format its shape shows (--format NAME forces one):

\b
{formats}

A file that holds several conversations (a results file) replays the first; --item N
picks another.
"""


def _replay_help() -> str:
    from memci.traces import FORMATS

    lines = (textwrap.fill(f"{f.name}: {f.summary}", width=78, initial_indent="  ",
                           subsequent_indent="      ") for f in FORMATS)
    return _REPLAY_HELP.format(formats="\n".join(lines))


def _warn_unknown_model(console: Console, model: str | None) -> None:
    from memci._models import KNOWN_MODELS, is_known
    from memci.tokens import tokenizer_for_model

    if model is None or is_known(model) or tokenizer_for_model(model) != "estimate":
        return
    console.print(
        f"[yellow]warning:[/] unknown model {escape(repr(model))}: memci assumes a "
        "128,000-token window and counts tokens with its offline estimate (cl100k_base's "
        f"count); known: {escape(', '.join(KNOWN_MODELS))}", highlight=False,
        soft_wrap=True)


@main.command("replay", help=_replay_help())
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Token budget of every request (default: the model's window less 25%).")
@click.option("--model", default=None,
              help="Model name, for its window, tokenizer and cache discount (an unknown "
                   "name warns and uses the defaults).")
@click.option("--strategy", type=click.Choice(["paged", "oldest", "sliding_window",
                                               "summarize"]), default=None,
              help="How the context is trimmed (default: paged).")
@click.option("--max-messages", type=click.IntRange(min=0), default=None,
              help="Keep at most this many messages (for --strategy sliding_window).")
@click.option("--format", "trace_format", type=click.Choice(list(_FORMAT_NAMES)),
              default=None, help="Read FILE as this format (default: found by its shape).")
@click.option("--item", type=click.IntRange(min=1), default=None,
              help="Which conversation of a file that holds several (from 1; default 1).")
@click.option("--cached-discount", type=click.FloatRange(0, 1), default=None,
              help="Share of the input price taken off cached input (default by the "
                   "model's provider: 0.5 OpenAI, 0.9 Anthropic).")
@click.option("--price", type=click.FloatRange(min=0), default=None,
              help="USD per million input tokens: also show costs in dollars.")
@click.option("--db", default=None,
              help="Keep the replayed session in this SQLite file (default: a temporary one).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a self-contained HTML report with charts to this file.")
def replay_command(
    file: Path, budget: int | None, model: str | None, strategy: str | None,
    max_messages: int | None, trace_format: str | None, item: int | None,
    cached_discount: float | None, price: float | None, db: str | None, as_json: bool,
    report: Path | None,
) -> None:
    if report is not None and not report.resolve().parent.is_dir():
        raise InvalidFileError(f"cannot write the report to {report}: no such directory")
    console = Console(stderr=True)
    _warn_unknown_model(console, model)
    trace = load_conversation(file, format=trace_format, item=item)
    for note in trace.notes:
        console.print(f"[yellow]note:[/] {escape(note)}", highlight=False, soft_wrap=True)
    settings: dict[str, Any] = {"model": model, "strategy": strategy,
                                "max_messages": max_messages}
    with tempfile.TemporaryDirectory(prefix="memci-replay-") as tmp:
        with _engine(db or str(Path(tmp) / "replay.db")) as engine:
            name = f"replay:{file.stem}"
            if engine.store.session("default", name) is not None:
                name = f"{name}:{len(engine.sessions()) + 1}"
            session = engine.session(name, **{k: v for k, v in settings.items()
                                               if v is not None})
            total = len(trace.messages)
            with Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), console=console, transient=True,
                          disable=as_json or total < 200) as bar:
                task = bar.add_task("replay", total=total)
                result = replay(session, trace.messages, budget=budget, tools=trace.tools,
                                origins=trace.origins,
                                progress=lambda n: bar.update(task, completed=n))
            events = session.events(limit=1_000_000) if report is not None else []
            used = {"budget": budget or session.settings.budget,
                    "strategy": session.settings.strategy, "model": session.settings.model}
    result.skipped.extend(trace.notes)
    result.format = trace.format
    result.cached_discount = (cached_discount if cached_discount is not None
                              else default_discount(model))
    result.price = price
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
    _print_replay(Console(), file, result)


def _print_replay(out: Console, file: Path, result: ReplayResult) -> None:
    """The per-request table, the totals with and without prompt caching, one summary line."""
    table = Table(title=f"memci replay: {file.name} ({result.format})")
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
    out.print(table)
    discount = f"{100 * result.cached_discount:g}%"
    totals = Table(title=f"totals over {len(result.requests)} requests (cached input "
                         f"{discount} off)", title_justify="left")
    for column in ("", "memci", "full history", "memci / full", "saved"):
        totals.add_column(column, justify="left" if not column else "right")
    rows: list[tuple[str, float, float]] = [
        ("input tokens, no cache", result.memci_tokens, result.full_tokens),
        ("of which cached", result.memci_cached_tokens, result.full_cached_tokens),
        ("cost with cache (token equivalents)", result.memci_cached_cost,
         result.full_cached_cost),
    ]
    if result.price is not None:
        rows += [("USD, no cache", result.dollars(result.memci_tokens) or 0.0,
                  result.dollars(result.full_tokens) or 0.0),
                 ("USD with cache", result.dollars(result.memci_cached_cost) or 0.0,
                  result.dollars(result.full_cached_cost) or 0.0)]
    for label, memci, full in rows:
        def fmt(value: float, usd: bool = label.startswith("USD")) -> str:
            return f"${value:,.4f}" if usd else f"{value:,.0f}"

        totals.add_row(label, fmt(memci), fmt(full),
                       f"{100 * memci / full:.1f}%" if full else "-",
                       "" if label == "of which cached" else fmt(full - memci))
    out.print(totals)
    full, sent = result.full_tokens, result.memci_tokens
    share = f" ({100 * (full - sent) / full:.1f}%)" if full else ""
    out.print(f"{result.messages} messages, {len(result.requests)} requests: memci sent "
              f"{sent:,} tokens, the full history would be {full:,}; saved "
              f"{full - sent:,}{share}", highlight=False)
    cached_full, cached_memci = result.full_cached_cost, result.memci_cached_cost
    share = (f" ({100 * (cached_full - cached_memci) / cached_full:.1f}%)"
             if cached_full else "")
    out.print(f"with prompt caching ({discount} off cached input): memci costs "
              f"{cached_memci:,.0f} token equivalents, the full history {cached_full:,.0f}; "
              f"saved {cached_full - cached_memci:,.0f}{share}", highlight=False)


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
def migrate_command(source: str, target: str, from_artifacts_dir: str | None,
                    to_artifacts_dir: str | None) -> None:
    """Copy a whole store into a new one, e.g. from SQLite to PostgreSQL, and verify it.

    Every session, message, page state, artifact, working state, memory item, indexed
    file, job and API key is copied in one transaction (all of it or nothing), then each
    table is counted on both sides. Keyword indexes and vectors are made again by the new
    store. Stop the servers writing to the source first.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from memci.store import copy_store, open_store
    from memci.workspace import contents_for

    if source == target:
        raise click.UsageError("--from and --to name the same store")
    src = open_store(source)
    try:
        dst = open_store(target)
        try:
            columns = (TextColumn("{task.description:<20}"), BarColumn(), MofNCompleteColumn())
            with Progress(*columns, console=Console(stderr=True)) as bar:
                tasks: dict[str, Any] = {}

                def progress(table: str, done: int, total: int) -> None:
                    if table not in tasks:
                        tasks[table] = bar.add_task(table, total=max(total, 1))
                    bar.update(tasks[table], completed=done if total else 1)

                counts = copy_store(src, dst, source_contents=contents_for(
                    src, from_artifacts_dir), target_contents=contents_for(
                    dst, to_artifacts_dir), progress=progress)
        finally:
            dst.close()
    finally:
        src.close()
    out = Console(stderr=True)
    for count in counts:
        out.print(f"{count.table:<20} {count.source:>9,} rows copied, {count.target:,} in "
                  "the target", highlight=False)
    out.print(f"copied {sum(c.source for c in counts):,} rows from {src.location} to "
              f"{dst.location}: every table's count verified", highlight=False)


# The other commands register themselves on `main` when imported.
from memci.cli import _delete, _inspect, _server, _work  # noqa: E402, F401
