"""``memci inspect``, ``memci search`` and ``memci stats``: look into a stored session.

``inspect`` builds the context as the agent's next request would get it and shows where
every token goes (segments), where every page is (window, contents page — listed, or
named by its range line —, evicted: by an evict event, as ``stats`` counts them), the
contents page the model reads, the working state (pins, plan, notebook) when the session
offers those tools, and the latest events. ``search`` runs the session's memory search;
``stats`` prints the session's figures and its events counted by reason.

They only read an existing store: a missing store file or session is one line on stderr
and exit status 2, never a new empty store. ``inspect`` does build, so it may archive
pages exactly as the agent's next build would (and records those events).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from memci._lazy import compile_pattern
from memci.cli import _DB_HELP, main
from memci.cli._tables import print_table, table
from memci.context import Context, PageInfo
from memci.engine import Engine, Session
from memci.errors import StoreError, UnknownSessionError
from memci.messages import Message
from memci.store import default_location, is_postgres_url

__all__ = ["inspect_data", "search_data", "stats_data"]

_TENANT_HELP = "The session's tenant."
_RECENT_EVENTS = 15
_PAGE_ROWS = 40
# Read-only tools that show the working state, by section (offered or not per session).
_STATE_TOOLS = (("pins", "pin_list"), ("plan", "plan_list"), ("notebook", "notebook_list"))


@contextmanager
def _session(db: str | None, name: str, tenant: str) -> Iterator[Session]:
    """Open an existing store and session, or raise an error that says what to fix."""
    where = db or default_location()
    if not is_postgres_url(where) and not Path(where).is_file():
        hint = "pass --db PATH" if db else "pass --db PATH or set MEMCI_HOME or MEMCI_DB"
        raise StoreError(f"no memci store at {where}; {hint}")
    engine = Engine.open(where, workers=0)
    try:
        if engine.store.session(tenant, name) is None:
            names = [r.name for r in engine.sessions(tenant)]
            known = (", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5
                                             else "")) if names else "none"
            raise UnknownSessionError(f"no session {name!r} in tenant {tenant!r} "
                                      f"(its sessions: {known})")
        yield engine.session(name, tenant=tenant)
    finally:
        engine.close()


def _segment_of(session: Session, ctx: Context, pages: Mapping[int, PageInfo]) -> Iterator[
        tuple[str, Message, int | None]]:
    """(segment, message, page) of every message of the request, in order.

    The build labels its segments (system, state, contents, recent, retrieval); the recent
    pages are told apart here by their place: recalled, active, current.
    """
    paged = ctx.stats.strategy == "paged"
    names = {"system": "system", "state": "working state", "retrieval": "retrieved memory",
             "contents": "contents page" if paged else "summary"}
    for segment in ctx.segments:
        for m in ctx.messages[segment.start:segment.stop]:
            if segment.name != "recent":
                yield names[segment.name], m, None
                continue
            page = session.page_of(m.seq or 0)
            info = pages.get(page)
            if not paged:
                yield "history" if info is None or info.detail != "current" else "current page", \
                    m, page
            elif info is not None and info.detail == "recalled":
                yield "recalled pages", m, page
            elif info is not None and info.detail == "current":
                yield "current page", m, page
            else:
                yield "active pages", m, page


def _segments(session: Session, ctx: Context, pages: Mapping[int, PageInfo],
              ) -> list[dict[str, Any]]:
    order = ["system", "tools", "working state", "contents page", "summary", "recalled pages",
             "active pages", "history", "current page", "retrieved memory"]
    found: dict[str, dict[str, Any]] = {}
    tools = int(ctx.stats.sections.get("tools", 0))
    if tools:
        found["tools"] = {"messages": 0, "tokens": tools, "pages": []}
    for name, message, page in _segment_of(session, ctx, pages):
        seg = found.setdefault(name, {"messages": 0, "tokens": 0, "pages": []})
        seg["messages"] += 1
        seg["tokens"] += message.tokens or 0
        if page is not None and page not in seg["pages"]:
            seg["pages"].append(page)
    total = ctx.stats.total_tokens
    other = total - sum(s["tokens"] for s in found.values())
    if other > 0:
        found["reply priming"] = {"messages": 0, "tokens": other, "pages": []}
    order.append("reply priming")
    return [{"segment": name, **found[name],
             "share": round(found[name]["tokens"] / total, 4) if total else 0.0}
            for name in order if name in found]


def _evicted(session: Session) -> set[int]:
    """Pages whose newest archive, recall or evict event is an eviction.

    The events are what ``memci stats`` counts, so a page is called evicted here only
    when an eviction took it off the contents page: a page archived past the contents
    page's room (a backlog, or one not listed after all) is named by the contents page's
    range line instead, as the model reads it.
    """
    newest: dict[int, str] = {}
    for event in session.events(limit=10_000_000):
        newest[int(event["page"])] = str(event["kind"])
    return {page for page, kind in newest.items() if kind == "evict"}


def _pages(session: Session, ctx: Context, pages: Mapping[int, PageInfo],
           ) -> list[dict[str, Any]]:
    sent: Counter[int] = Counter()
    shown: Counter[int] = Counter()
    for m in ctx.segment("recent"):
        if m.seq is not None:
            page = session.page_of(m.seq)
            sent[page] += m.tokens or 0
            shown[page] += 1
    rows: list[dict[str, Any]] = []
    paged = ctx.stats.strategy == "paged"
    out_of_window = "summarized" if ctx.stats.strategy == "summarize" else "dropped"
    evicted = _evicted(session) if paged else set()
    for info in pages.values():
        place = info.place if paged else ("window" if shown[info.page] else out_of_window)
        unlisted = place == "evicted" and info.page not in evicted
        rows.append({
            "page": info.page, "first_seq": info.first_seq, "last_seq": info.last_seq,
            "messages": info.messages, "tokens": info.tokens,
            "sent_tokens": sent[info.page], "sent_messages": shown[info.page],
            "place": "contents" if unlisted else place,
            "window": info.detail if paged else None,
            "listed": not unlisted if place in ("contents", "evicted") else None,
            "recall_count": info.recall_count, "last_recall_round": info.last_recall_round,
            "archived_round": info.archived_round,
        })
    return rows


def _workspace(session: Session) -> dict[str, str]:
    """Pins, plan and notebook as the model would read them, when the session offers them."""
    offered = {t.get("function", {}).get("name") for t in session.tools()}
    if "working_state" in offered:
        # the model is offered the working-state tools as one; each runs by its own name
        offered |= {"pin_list", "plan_list", "notebook_add"}
    out = {section: session.call_tool(tool, {})
           for section, tool in _STATE_TOOLS if tool in offered}
    if "notebook" not in out and "notebook_add" in offered:
        # No tool lists the notebook; the working state renders it for the context.
        work_state = getattr(session, "work_state", None)
        render = getattr(work_state(), "render_notebook", None) if callable(work_state) else None
        if callable(render):
            out["notebook"] = str(render()) or "the notebook is empty"
    return out


def _job_failures(stats: Mapping[str, Any]) -> dict[str, Any]:
    """The session's background job figures, when it has jobs waiting or failing."""
    jobs = {k: v for k, v in stats.items() if k.startswith("jobs_") and v is not None}
    return jobs if jobs.get("jobs_pending") or jobs.get("jobs_failed") else {}


def inspect_data(session: Session, *, budget: int | None = None) -> dict[str, Any]:
    """What ``memci inspect`` shows, as a JSON-ready dict (the context is built once)."""
    ctx = session.build(budget=budget)
    pages = {info.page: info for info in session.pages()}
    s = ctx.stats
    texts = {name: m.content for name, m, _ in _segment_of(session, ctx, pages)
             if name in ("contents page", "summary", "working state")}
    stats = dataclasses.asdict(session.stats())
    out: dict[str, Any] = {
        "session": {"name": session.name, "tenant": session.tenant, "user": session.user,
                    "strategy": s.strategy, "model": session.settings.model,
                    "messages": stats["messages"], "pages": stats["pages"]},
        "request": {"total_tokens": s.total_tokens, "budget": s.budget,
                    "full_tokens": s.full_tokens, "saved_tokens": s.saved_tokens,
                    "prefix_tokens": s.prefix_tokens, "messages": s.messages,
                    "build_ms": round(s.build_ms, 3), "sections": dict(s.sections),
                    "shares": dict(s.shares), "events": list(s.events)},
        "segments": _segments(session, ctx, pages),
        "pages": _pages(session, ctx, pages),
        "contents_page": texts.get("contents page"),
        "summary": texts.get("summary"),
        "working_state": texts.get("working state"),
        "workspace": _workspace(session),
        "events": session.events(limit=_RECENT_EVENTS),
        "stats": stats,
    }
    failures = _job_failures(stats)
    if failures:
        out["jobs"] = failures
    return out


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def _bar(share: float, width: int = 20) -> Text:
    filled = round(share * width)
    return Text("█" * filled + "·" * (width - filled), style="cyan")


def _print_inspect(data: Mapping[str, Any], console: Console) -> None:
    sess, req = data["session"], data["request"]
    console.print(
        f"[bold]session[/] {sess['name']!r} · tenant {sess['tenant']} · user "
        f"{sess['user'] or '-'} · strategy {sess['strategy']} · {sess['messages']:,} messages "
        f"· {sess['pages']:,} pages", highlight=False, soft_wrap=True)
    share = req["total_tokens"] / req["budget"] if req["budget"] else 0.0
    console.print(
        f"[bold]next request[/] {req['total_tokens']:,} of {req['budget']:,} tokens "
        f"({_pct(share)}) · full history {req['full_tokens']:,} · saved "
        f"{req['saved_tokens']:,} · build {req['build_ms']:.1f} ms"
        + (f" · [yellow]{', '.join(req['events'])}[/]" if req["events"] else ""),
        highlight=False, soft_wrap=True)
    segments = Table(title="segments of the request", title_justify="left")
    for column in ("segment", "messages", "pages", "tokens", "share", ""):
        segments.add_column(column, justify="right" if column in ("messages", "tokens", "share")
                            else "left")
    for seg in data["segments"]:
        segments.add_row(seg["segment"], str(seg["messages"] or ""), _page_list(seg["pages"]),
                         f"{seg['tokens']:,}", _pct(seg["share"]), _bar(seg["share"]))
    console.print(segments)
    pages: Sequence[Mapping[str, Any]] = data["pages"]
    table = Table(title="pages", title_justify="left")
    for column in ("page", "messages (seq)", "place", "tokens", "in request", "recalls",
                   "last recall", "archived"):
        table.add_column(column, justify="left" if column in ("place", "messages (seq)")
                         else "right")
    styles = {"window": "green", "contents": "yellow", "evicted": "dim", "dropped": "dim",
              "summarized": "dim"}
    for p in pages[-_PAGE_ROWS:]:
        detail = p.get("window") or ("not listed" if p.get("listed") is False else "")
        place = p["place"] + (f" ({detail})" if detail else "")
        table.add_row(
            str(p["page"]), f"{p['messages']} ({p['first_seq']}–{p['last_seq']})",
            Text(place, style=styles.get(p["place"], "")), f"{p['tokens']:,}",
            f"{p['sent_tokens']:,}" if p["sent_messages"] else "",
            "" if p["archived_round"] is None else str(p["recall_count"]),
            _round(p["last_recall_round"]),
            _round(p["archived_round"]))
    if len(pages) > _PAGE_ROWS:
        table.caption = (f"the newest {_PAGE_ROWS} of {len(pages):,} pages; "
                         "--json lists them all")
    counts = Counter(p["place"] for p in pages)
    if pages:
        console.print(table)
        console.print("  " + " · ".join(f"{n:,} {place}" for place, n in counts.items()),
                      highlight=False)
    else:
        console.print("[dim]no pages yet[/]")
    for key, title in (("working_state", "working state (as the model reads it)"),
                       ("contents_page", "contents page (as the model reads it)"),
                       ("summary", "summary of older pages (as the model reads it)")):
        if data.get(key):
            console.print(Panel(Text(data[key]), title=title, title_align="left",
                                border_style="yellow"))
    for section, text in data["workspace"].items():
        console.print(Panel(Text(text), title=section, title_align="left",
                            border_style="blue"))
    events: Sequence[Mapping[str, Any]] = data["events"]
    if events:
        ev = Table(title=f"latest {len(events)} events", title_justify="left")
        for column in ("round", "event", "page", "reason", "at"):
            ev.add_column(column, justify="right" if column in ("round", "page") else "left")
        for e in events:
            ev.add_row(str(e["round"]), e["kind"], str(e["page"]), e["reason"], e["at"] or "")
        console.print(ev)
    else:
        console.print("[dim]no archive, recall or eviction events yet[/]")
    if data.get("jobs"):
        failing = ("jobs_failed", "jobs_gave_up", "jobs_last_error")
        console.print(Group(Text("background jobs", style="bold"), *[
            Text(f"  {k.removeprefix('jobs_').replace('_', ' ')}: {v}",
                 style="red" if v and k in failing else "")
            for k, v in data["jobs"].items()]))


def _page_list(pages: Sequence[int]) -> str:
    if not pages:
        return ""
    if len(pages) > 3 and pages == list(range(pages[0], pages[-1] + 1)):
        return f"{pages[0]}–{pages[-1]}"
    return ", ".join(map(str, pages[:6])) + (" …" if len(pages) > 6 else "")


def _round(value: int | None) -> str:
    return "" if value is None else str(value)


@main.command("inspect")
@click.argument("session")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--tenant", default="default", show_default=True, help=_TENANT_HELP)
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Build for this token budget (default: the session's).")
@click.option("--json", "as_json", is_flag=True, help="Print the same data as JSON.")
def inspect_command(session: str, db: str | None, tenant: str, budget: int | None,
                    as_json: bool) -> None:
    """Build SESSION's context and show where its tokens and pages are.

    Shows the segments of the next request (system, tools, contents page, recalled,
    active and current pages) with tokens and shares, every page's place (window,
    contents page, evicted) with its recall count, the contents page text, pins / plan /
    notebook when the session offers them, and the latest events. Building may archive
    pages, as the agent's next build would.
    """
    with _session(db, session, tenant) as target:
        data = inspect_data(target, budget=budget)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    _print_inspect(data, Console())


# -- search ------------------------------------------------------------------------------


_WORD = compile_pattern(r"\w{2,}|[\u3400-\u9fff]", re.UNICODE)


def snippet(text: str, query: str, width: int = 160) -> str:
    """About ``width`` characters of ``text`` around the first word of ``query`` in it."""
    flat = " ".join(text.split())
    lower = flat.lower()
    at = min((i for i in (lower.find(w.lower()) for w in _WORD.findall(query)) if i >= 0),
             default=0)
    start = max(0, min(at - width // 3, len(flat) - width))
    piece = flat[start:start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def search_data(session: Session, query: str, *, k: int = 10,
                scope: str = "session") -> dict[str, Any]:
    """What ``memci search`` shows, as a JSON-ready dict."""
    hits = session.search(query, k=k, scope=scope)
    rows = []
    for hit in hits:
        m = hit.message
        rows.append({
            "session": hit.session, "page": hit.page, "seq": m.seq, "role": m.role,
            "score": round(float(hit.score), 6), "retrievers": list(hit.retrievers),
            "kind": hit.kind, "source": hit.source,
            "created_at": m.created_at.isoformat() if m.created_at else None,
            "snippet": snippet(hit.text, query), "metadata": dict(m.metadata or {}),
        })
    return {"session": session.name, "query": query, "scope": scope, "k": k, "hits": rows}


@main.command("search")
@click.argument("session")
@click.argument("query")
@click.option("-k", "k", type=click.IntRange(min=1), default=10, show_default=True,
              help="How many hits to show.")
@click.option("--scope", type=click.Choice(["session", "user"]), default="session",
              show_default=True, help="Search this session, or every session of its user.")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--tenant", default="default", show_default=True, help=_TENANT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
def search_command(session: str, query: str, k: int, scope: str, db: str | None,
                   tenant: str, as_json: bool) -> None:
    """Search SESSION's memory for QUERY: archived and evicted pages included.

    Each hit shows its page, message seq, role, fused score, the retrievers that found
    it (keyword, dense, time) and a snippet around the first matching word.
    """
    with _session(db, session, tenant) as target:
        data = search_data(target, query, k=k, scope=scope)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    console = Console()
    if not data["hits"]:
        console.print(f"no hits for {query!r} in {scope} scope", highlight=False)
        return
    columns = [*(["session"] if scope == "user" else []), "page", "seq", "role", "score",
               "found by", "snippet"]
    rows = [[*([h["session"] or ""] if scope == "user" else []), str(h["page"] or ""),
             str(h["seq"] or ""), h["role"], f"{h['score']:.4f}", ", ".join(h["retrievers"]),
             h["snippet"]] for h in data["hits"]]
    print_table(console, table(f"search {query!r} ({scope})", columns, rows,
                               whole=("session", "page", "seq", "role", "score"),
                               right=("page", "seq", "score")))


# -- stats -------------------------------------------------------------------------------


def stats_data(session: Session) -> dict[str, Any]:
    """What ``memci stats`` shows: the session's figures and its events by reason."""
    stats = dataclasses.asdict(session.stats())
    events = session.events(limit=10_000_000)
    by_kind = Counter(str(e["kind"]) for e in events)
    by_reason = Counter((str(e["kind"]), str(e["reason"])) for e in events)
    return {
        "session": session.name, "tenant": session.tenant,
        "strategy": session.settings.strategy, "stats": stats,
        "events": {
            "total": len(events), "by_kind": dict(sorted(by_kind.items())),
            "by_reason": [{"kind": kind, "reason": reason, "count": n}
                          for (kind, reason), n in sorted(by_reason.items(),
                                                           key=lambda x: (x[0][0], -x[1]))],
            "first_round": events[0]["round"] if events else None,
            "last_round": events[-1]["round"] if events else None,
        },
    }


@main.command("stats")
@click.argument("session")
@click.option("--db", default=None, help=_DB_HELP)
@click.option("--tenant", default="default", show_default=True, help=_TENANT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def stats_command(session: str, db: str | None, tenant: str, as_json: bool) -> None:
    """Print SESSION's figures and its archive / recall / evict events by reason.

    Messages, pages and event counts cover the session's whole history; builds, mean
    build time and tokens saved count builds of this process (none, for this command).
    """
    with _session(db, session, tenant) as target:
        data = stats_data(target)
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    console = Console()
    table = Table(title=f"session {data['session']!r} ({data['strategy']})",
                  title_justify="left", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    per_process = {"builds", "mean_build_ms", "tokens_saved"}
    for key, value in data["stats"].items():
        shown = f"{value:,.2f}" if isinstance(value, float) else (
            f"{value:,}" if isinstance(value, int) else str(value))
        label = key.replace("_", " ") + (" (this process)" if key in per_process else "")
        table.add_row(label, shown)
    console.print(table)
    reasons = data["events"]["by_reason"]
    if not reasons:
        console.print("[dim]no archive, recall or eviction events yet[/]")
        return
    ev = Table(title="events by reason", title_justify="left")
    ev.add_column("event")
    ev.add_column("reason")
    ev.add_column("count", justify="right")
    for row in reasons:
        ev.add_row(row["kind"], row["reason"], f"{row['count']:,}")
    console.print(ev)
