"""``memci replay FILE``: a recorded conversation or agent trace, through memci.

The file is read by :mod:`memci.traces`, fed by :func:`memci.replay.replay` into a session
of a temporary store (or of ``--db``), and the result printed: a table per request, the
totals with and without prompt caching, the evidence each question's request holds when
the file labels it, and the session and tokenizer behind the figures (a tokenizer that
stands in for the model's own is said out loud). ``--json`` prints the same as JSON and
``--report`` writes the HTML report (:mod:`memci.report`).
"""

from __future__ import annotations

import json
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memci.cli import _engine, main
from memci.engine import Session
from memci.errors import InvalidFileError
from memci.replay import ReplayResult, load_conversation, replay, session_name, tokenizer_note
from memci.replay import cached_discount as default_discount
from memci.traces import FORMAT_NAMES as _FORMAT_NAMES
from memci.traces import Trace

__all__ = ["replay_command"]

_QUESTION_CHARS = 60  # of a question, in the evidence table


_REPLAY_HELP = """Replay a recorded conversation or agent trace through memci.

memci builds the context before every assistant message, as the agent did before
calling its model, and prints per request the tokens memci sends against the full
history: the conversation's own messages so far and the agent's own tool schemas
(never memci's), counted with the same tokenizer, whatever the strategy or budget.
Totals follow, also as cost with prompt caching (cached input at the provider's
discount: --cached-discount), since an agent that sends its full history hits the
cache too. For a file that labels its questions' evidence (LoCoMo, LongMemEval), the
evidence turns each answering request holds. The last line names the session the
replay stored into and the tokenizer that counted (a stand-in for the model's own is
said out loud).

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
@click.option("--tools", "own_tools", default=None, metavar="auto|NAME,NAME",
              help="memci's own tools offered: auto (those that can act, the default) or "
                   "a comma-separated list of names, offered in every request.")
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
    max_messages: int | None, own_tools: str | None, trace_format: str | None,
    item: int | None,
    cached_discount: float | None, price: float | None, db: str | None, as_json: bool,
    report: Path | None,
) -> None:
    if report is not None and not report.resolve().parent.is_dir():
        raise InvalidFileError(f"cannot write the report to {report}: no such directory")
    console = Console(stderr=True)
    _warn_unknown_model(console, model)
    trace = load_conversation(file, format=trace_format, item=item)
    for note in trace.notes:
        _say(console, "note", note)
    settings: dict[str, Any] = {"model": model, "strategy": strategy,
                                "max_messages": max_messages,
                                "tools": _tools_setting(own_tools)}
    with tempfile.TemporaryDirectory(prefix="memci-replay-") as tmp:
        with _engine(db or str(Path(tmp) / "replay.db")) as engine:
            name = session_name(engine, file.stem)
            if name != f"replay:{file.stem}":
                _say(console, "note", f"{db} already holds session replay:{file.stem}: "
                     f"this replay is stored as {name}")
            session = engine.session(name, **{k: v for k, v in settings.items()
                                               if v is not None})
            result = _run(session, trace, budget, console, quiet=as_json)
            events = session.events(limit=1_000_000) if report is not None else []
            used = {"budget": budget or session.settings.budget,
                    "strategy": session.settings.strategy, "model": session.settings.model}
    result.skipped.extend(trace.notes)
    result.format = trace.format
    result.store = db
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


def _tools_setting(value: str | None) -> str | list[str] | None:
    """The session's ``tools`` setting from ``--tools`` (names are checked by the session)."""
    if value is None or value.strip() == "auto":
        return None if value is None else "auto"
    return [name.strip() for name in value.split(",") if name.strip()]


def _say(console: Console, kind: str, text: str) -> None:
    """One line on standard error: a ``note`` or a ``warning``."""
    color = "yellow" if kind == "note" else "bold yellow"
    console.print(f"[{color}]{kind}:[/] {escape(text)}", highlight=False, soft_wrap=True)


def _run(session: Session, trace: Trace, budget: int | None, console: Console, *,
         quiet: bool) -> ReplayResult:
    """Replay ``trace`` into ``session`` with a progress bar for long files."""
    note = tokenizer_note(session)
    if note is not None:
        _say(console, "warning", note)
    total = len(trace.messages)
    with Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True,
                  disable=quiet or total < 200) as bar:
        task = bar.add_task("replay", total=total)
        return replay(session, trace.messages, budget=budget, tools=trace.tools,
                      origins=trace.origins, questions=trace.questions,
                      progress=lambda n: bar.update(task, completed=n))


def _print_replay(out: Console, file: Path, result: ReplayResult) -> None:
    """The per-request table, the totals, the evidence, one summary line, what counted."""
    out.print(_requests_table(file, result))
    out.print(_totals_table(result))
    if result.answered:
        out.print(_evidence_table(result))
    for line in _summary(result):
        out.print(line, highlight=False, soft_wrap=True)


def _requests_table(file: Path, result: ReplayResult) -> Table:
    table = Table(title=f"memci replay: {file.name} ({result.format})")
    for column in ("request", "at message", "memci tokens", "full history", "saved",
                   "prefix reused", "memci's own"):
        table.add_column(column, justify="right")
    table.add_column("events")
    for r in result.requests:
        share = f"{100 * r.prefix_tokens / r.memci_tokens:.0f}%" if r.memci_tokens else "-"
        # "!" marks a request whose tools and working state cost more than memci saved
        own = f"{r.own_tokens:,}" + (" !" if r.own_note else "")
        table.add_row(str(r.number), str(r.seq), f"{r.memci_tokens:,}", f"{r.full_tokens:,}",
                      f"{r.full_tokens - r.memci_tokens:,}", share, own, ", ".join(r.events))
    return table


def _totals_table(result: ReplayResult) -> Table:
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
    return totals


def _evidence_table(result: ReplayResult) -> Table:
    """Per question: the evidence turns the request that answers it holds."""
    table = Table(title="evidence in the request that answers each question (verbatim: "
                        "the turn whole; close: 60% of its words together)",
                  title_justify="left")
    for column in ("request", "question", "evidence", "verbatim", "close", "share",
                   "missing"):
        table.add_column(column, justify="left" if column in ("question", "missing")
                         else "right")
    for r in result.answered:
        held = r.evidence
        assert held is not None
        question = textwrap.shorten(held.question, _QUESTION_CHARS, placeholder="…")
        missing = [o for o in held.evidence if o not in held.verbatim]
        table.add_row(str(r.number), question, str(len(held.evidence)),
                      str(len(held.verbatim)), str(len(held.close)),
                      f"{100 * held.share:.0f}%", ", ".join(missing))
    return table


def _summary(result: ReplayResult) -> list[str]:
    """The summary lines: tokens, cost with caching, evidence, the session and tokenizer."""
    discount = f"{100 * result.cached_discount:g}%"
    full, sent = result.full_tokens, result.memci_tokens
    share = f" ({100 * (full - sent) / full:.1f}%)" if full else ""
    lines = [f"{result.messages} messages, {len(result.requests)} requests: memci sent "
             f"{sent:,} tokens, the full history would be {full:,}; saved "
             f"{full - sent:,}{share}"]
    cached_full, cached_memci = result.full_cached_cost, result.memci_cached_cost
    share = (f" ({100 * (cached_full - cached_memci) / cached_full:.1f}%)"
             if cached_full else "")
    lines.append(f"with prompt caching ({discount} off cached input): memci costs "
                 f"{cached_memci:,.0f} token equivalents, the full history "
                 f"{cached_full:,.0f}; saved {cached_full - cached_memci:,.0f}{share}")
    if (own := result.own_summary()) is not None:
        lines.append(own)
    totals = result.evidence_totals()
    if totals is not None:
        lines.append(
            f"evidence: {totals['questions']} questions, {totals['turns']} evidence turns: "
            f"{totals['verbatim']} ({100 * (totals['share'] or 0):.1f}%) verbatim in the "
            f"request that answers, {totals['close']} at least close; "
            f"{totals['whole']} questions with all of theirs verbatim")
    lines.append(result.provenance)
    return lines
