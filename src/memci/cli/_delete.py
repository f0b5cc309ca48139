"""``memci retract``, ``clear``, ``delete``, ``erase-user``, ``erasures`` and ``scrub``.

Each deletion asks for confirmation unless ``--yes`` is given (a script passes it); a
deletion is one transaction, recorded in the audit log with ``cli`` as who asked, and
``memci erasures`` lists that log (ids and counts, never content, and whether each one's
scrub is done). ``memci scrub`` runs the scrub pending ones wait for. See docs/deleting.md.
"""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.markup import escape

from memci.cli import _DB_HELP, _engine, _existing, main
from memci.cli._tables import print_table, table
from memci.store import Erasure

_YES_HELP = "Do not ask for confirmation (for scripts)."
_ACTOR = "cli"


def _confirm(yes: bool, question: str) -> None:
    if not yes:
        click.confirm(question, abort=True, err=True)


def _counts(erasure: Erasure) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(erasure.counts.items())) or "nothing"


def _scrub(erasure: Erasure) -> str:
    """How the deletion's scrub stands, for one line of output."""
    if erasure.scrubbed is not None:
        return "scrubbed"
    return "scrub pending (run `memci scrub`)"


@main.command("retract")
@click.argument("session")
@click.argument("seq", type=click.IntRange(min=1), required=False)
@click.option("--last", is_flag=True, help="Delete the newest message (a cancelled turn).")
@click.option("--tenant", default="default", show_default=True, help="The session's tenant.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--yes", is_flag=True, help=_YES_HELP)
def retract_command(
    session: str, seq: int | None, last: bool, tenant: str, db: str | None, yes: bool,
) -> None:
    """Delete message SEQ of SESSION (or the newest, --last) and what was derived from it.

    An assistant message goes with the tool results that answer its calls. The seq is
    never given again.
    """
    if (seq is None) == (not last):
        raise click.UsageError("give either SEQ or --last")
    with _engine(db) as engine:
        target = _existing(engine, session, tenant)
        what = "the newest message" if last else f"message {seq}"
        _confirm(yes, f"Delete {what} of session {session!r} for good?")
        removed = ([target.pop(actor=_ACTOR)] if seq is None
                   else target.retract(seq, actor=_ACTOR))
    Console(stderr=True).print(
        f"deleted {len(removed)} message(s) of session {escape(repr(session))}: seq "
        + ", ".join(str(m.seq) for m in removed), highlight=False)


@main.command("clear")
@click.argument("session")
@click.option("--tenant", default="default", show_default=True, help="The session's tenant.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--yes", is_flag=True, help=_YES_HELP)
def clear_command(session: str, tenant: str, db: str | None, yes: bool) -> None:
    """Delete every message of SESSION and what was derived; the session stays, empty."""
    with _engine(db) as engine:
        target = _existing(engine, session, tenant)
        _confirm(yes, f"Delete all {target.count()} messages of session {session!r}?")
        count = target.clear(actor=_ACTOR)
    Console(stderr=True).print(f"deleted {count} messages of session {escape(repr(session))}",
                               highlight=False)


@main.command("delete")
@click.argument("session")
@click.option("--tenant", default="default", show_default=True, help="The session's tenant.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--yes", is_flag=True, help=_YES_HELP)
def delete_command(session: str, tenant: str, db: str | None, yes: bool) -> None:
    """Delete SESSION and everything of it (messages, pages, state, artifacts, memory).

    The store is then scrubbed so no byte of it remains in its files; when that cannot
    complete now, the deletion is still done and says "scrub pending".
    """
    with _engine(db) as engine:
        _existing(engine, session, tenant)
        _confirm(yes, f"Delete session {session!r} of tenant {tenant!r} for good?")
        erasure = engine.delete_session(session, tenant=tenant, actor=_ACTOR)
    Console(stderr=True).print(f"deleted session {escape(repr(session))}: "
                               f"{_counts(erasure)}; {_scrub(erasure)}", highlight=False)


@main.command("erase-user")
@click.argument("user")
@click.option("--tenant", default="default", show_default=True, help="The user's tenant.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--yes", is_flag=True, help=_YES_HELP)
def erase_user_command(user: str, tenant: str, db: str | None, yes: bool) -> None:
    """Erase everything of USER in a tenant and leave no byte of it in the store's files.

    Every session, message, artifact, memory item, vector, search entry, job and state
    row of the user goes; other users are untouched. The audit log keeps the user only
    as the SHA-256 of the id.
    """
    with _engine(db) as engine:
        sessions = [r for r in engine.sessions(tenant) if r.user == user]
        _confirm(yes, f"Erase user {user!r} of tenant {tenant!r} ({len(sessions)} sessions) "
                      "for good?")
        erasure = engine.erase_user(user, tenant=tenant, actor=_ACTOR)
    Console(stderr=True).print(f"erased user {escape(repr(user))}: {_counts(erasure)}; "
                               f"{_scrub(erasure)}", highlight=False)


@main.command("erasures")
@click.option("--tenant", default=None, help="Only this tenant's (default: every tenant's).")
@click.option("--limit", type=click.IntRange(1, 100_000), default=100, show_default=True,
              help="The newest this many.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines.")
def erasures_command(tenant: str | None, limit: int, db: str | None, as_json: bool) -> None:
    """List the audit log of deletions: who, what, when, ids and counts (never content)."""
    with _engine(db) as engine:
        found = engine.erasures(tenant, limit=limit)
    if as_json:
        for e in found:
            click.echo(json.dumps({
                "id": e.id, "at": e.at.isoformat(), "actor": e.actor, "action": e.action,
                "tenant": e.tenant, "user_sha256": e.user, "sessions": list(e.sessions),
                "counts": dict(e.counts),
                "scrubbed": e.scrubbed.isoformat() if e.scrubbed else None}))
        return
    rows = [(str(e.id), e.at.isoformat(timespec="seconds"), e.actor, e.action, e.tenant,
             (e.user or "-")[:16], _counts(e),
             e.scrubbed.isoformat(timespec="seconds") if e.scrubbed else "pending")
            for e in found]
    print_table(Console(), table("memci erasures", (
        "id", "at", "actor", "action", "tenant", "user (sha256)", "counts", "scrubbed"),
        rows, whole=("id", "tenant"), right=("id",)))


@main.command("scrub")
@click.option("--full", is_flag=True,
              help="Rewrite the store's files (SQLite: VACUUM; PostgreSQL: VACUUM FULL of "
                   "every table): a maintenance step that holds every writer up while it "
                   "runs and needs free disk space of the store's size.")
@click.option("--db", default=None, help=_DB_HELP)
def scrub_command(full: bool, db: str | None) -> None:
    """Take deleted content out of the store's files; mark the erasures it covered.

    Runs the scrub every pending erasure waits for (see `memci erasures`). Exits 1 when a
    reader kept it from completing: run it again later.
    """
    with _engine(db) as engine:
        done = engine.scrub(full=full)
    message = ("scrubbed: every erasure so far is covered" if done else
               "scrub incomplete: a reader (or an older snapshot) kept deleted content; "
               "run it again later")
    Console(stderr=True).print(message, highlight=False)
    if not done:
        raise SystemExit(1)
