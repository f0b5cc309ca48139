"""Commands ``memci worker``, ``memci state`` and ``memci index``.

``worker`` runs background jobs in their own process; ``state`` exports and imports seed
004's ``context_state.json``; ``index`` adds documents and code to the store's search.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from memci.cli import _DB_HELP, _atomic, _engine, _existing, main
from memci.errors import InvalidFileError
from memci.memory import DocIndex
from memci.store import default_location
from memci.summarize import run_worker

__all__: list[str] = []


@main.command("worker")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--once", is_flag=True, help="Run the jobs ready now, then exit.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Worker threads in this process.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="Seconds between looks at the job table when it is empty.")
def worker_command(db: str | None, once: bool, workers: int, poll: float) -> None:
    """Run memci's background jobs (page summaries by a model) in this process.

    Uses the model configured by MEMCI_LLM_PROVIDER, MEMCI_LLM_BASE_URL, MEMCI_LLM_API_KEY
    and MEMCI_LLM_MODEL (extractive summaries when none). Jobs survive a crash and each
    takes effect once; stop it with Ctrl-C or SIGTERM (jobs in hand are finished first).
    At the end it prints how many jobs ran, succeeded and failed, and the last error;
    with --once it exits with status 1 when a job failed.
    """
    report = run_worker(db or default_location(), once=once, workers=workers, poll_interval=poll)
    console = Console(stderr=True, soft_wrap=True)
    console.print(report.describe(), style="red" if report.failed else None,
                  highlight=False, markup=False)
    if report.last_error:
        console.print(f"last error: {report.last_error}", highlight=False, markup=False)
    if once and report.failed:
        raise SystemExit(1)


@main.group("state")
def state_group() -> None:
    """Export or import a session's working state as context_state.json.

    The working state is its pins, plan, notebook, fastmemo and limits (seed 004).
    """


@state_group.command("export")
@click.argument("session")
@click.option("--tenant", default="default", show_default=True, help="The session's tenant.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file (default: standard output).")
def state_export(session: str, tenant: str, db: str | None, output: Path | None) -> None:
    """Write SESSION's working state as versioned context_state.json."""
    with _engine(db) as engine:
        text = json.dumps(_existing(engine, session, tenant).export_state(),
                          ensure_ascii=False, indent=2)
    if output is None:
        click.echo(text)
        return
    with _atomic(output) as fh:
        fh.write(text + "\n")


@state_group.command("import")
@click.argument("session")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--tenant", default="default", show_default=True, help="The session's tenant.")
@click.option("--db", default=None, help=_DB_HELP)
def state_import(session: str, file: Path, tenant: str, db: str | None) -> None:
    """Replace SESSION's working state with FILE (all of it, or nothing)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidFileError(f"{file} is not a JSON file: {exc}") from exc
    with _engine(db) as engine:
        _existing(engine, session, tenant).import_state(data)
    Console(stderr=True).print(f"imported the working state of {session!r}", highlight=False)


@main.command("index")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--db", default=None, help=_DB_HELP)
def index_command(path: Path, db: str | None) -> None:
    """Index text, Markdown and code files under PATH for search.

    Markdown and text are cut by headings and paragraphs; Python by functions and classes
    (with signatures and docstrings), other code by blocks. Incremental: a file that did
    not change is not read again. Hits give a path and line range for file_snippet.
    """
    console = Console(stderr=True)
    with _engine(db) as engine, Progress(
        TextColumn("indexing"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.description}"), console=console, transient=True,
    ) as bar:
        task = bar.add_task("", total=None)

        def step(done: int, total: int, current: str) -> None:
            bar.update(task, completed=done, total=total, description=current[-60:])

        report = DocIndex(engine.store).index_path(path, progress=step)
    console.print(
        f"{report.files_seen} files: {report.files_indexed} indexed, "
        f"{report.files_unchanged} unchanged, {report.files_removed} removed, "
        f"{report.files_skipped} skipped; {report.chunks_written} chunks in "
        f"{report.seconds:.1f} s", highlight=False)
