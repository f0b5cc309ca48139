"""The web inspector (``/ui``, docs/inspector.md): its files, and the reads it needs beyond the API.

The inspector is static files (``memci/server/ui/``) that call the REST API with the key
the user signed in with. Every answer of ``/ui`` carries a strict Content-Security-Policy:
scripts, styles, images and requests come from this server only, and no inline script
runs, so a stored message that holds ``<script>`` can never act (the files also show
every stored text as text). The files need no key (they hold no tenant's data).

What the REST API did not have, added here read-only behind the same key
(:data:`~memci.server.routes._common.Tenant`), so another tenant's session answers 404:

- ``GET /v1/ui/sessions``: sessions with their user, message count and last activity, a
  keyset page at a time; ``q`` keeps those whose name or user holds it, reading at most
  :data:`SCAN` sessions per request (the answer says where to continue), so a page costs
  the same at 100k sessions;
- ``GET /v1/sessions/{sid}/peek``: the request a build would make now
  (:meth:`~memci.Session.peek`, nothing committed), by segment, with what memory it shows;
- ``GET /v1/sessions/{sid}/pages``: the pages and their place, a page of pages at a time;
- ``GET /v1/sessions/{sid}/workstate``: pins, plan, notebook and fastmemo;
- ``GET /v1/sessions/{sid}/replay``: ``memci replay``'s figures for the stored session (its
  messages replayed into a scratch store that is then removed; the session is not
  touched), for sessions of at most :data:`REPLAY_MESSAGES` messages.
"""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path as FilePath
from typing import Annotated, Any, Literal

import anyio.to_thread
from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse, Response

from memci.context import Context
from memci.context._builder import REPLY_PRIMING
from memci.engine import Engine
from memci.messages import to_openai
from memci.replay import replay
from memci.server._errors import ApiError
from memci.server._json import jsonable, message_json
from memci.server._listing import Listing, page_response
from memci.server._openapi import EVERY_REQUEST, WITH_KEY, error_responses
from memci.server.routes._common import BIGGEST, Sid, State, Tenant
from memci.store import SessionRecord

__all__ = ["CSP", "REPLAY_MESSAGES", "SCAN", "router"]

router = APIRouter(tags=["inspector"],
                   responses=error_responses(*EVERY_REQUEST, *WITH_KEY, 400, 404))

SCAN = 5000
"""Sessions one listing request reads at most while it looks for ``q``."""

REPLAY_MESSAGES = 500
"""The longest session the inspector replays (a replay builds once per assistant message)."""

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
       "form-action 'none'; frame-ancestors 'none'")
"""What a page of the inspector may load and run: its own server's files, nothing inline."""

_FILES = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
          "style.css": "text/css; charset=utf-8"}
_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache",
            "X-Frame-Options": "DENY"}


def _file(name: str) -> Response:
    """One of the inspector's files (from the package), with the page's security headers."""
    if name not in _FILES:
        raise ApiError(404, "not_found", f"the inspector has no file {name!r}")
    body = (resources.files("memci.server") / "ui" / name).read_bytes()
    return Response(body, media_type=_FILES[name], headers=_HEADERS)


@router.get("/ui", include_in_schema=False)
def inspector() -> Response:
    return _file("index.html")


@router.get("/ui/{name}", include_in_schema=False)
def inspector_file(name: Annotated[str, Path(max_length=40)]) -> Response:
    return _file(name)


# -- the sessions, with what a list shows beside each ------------------------------------


def _matches(q: str | None, name: str, user: str | None) -> bool:
    if not q:
        return True
    needle = q.casefold()
    return needle in name.casefold() or (user is not None and needle in user.casefold())


@router.get("/v1/ui/sessions",
            summary="The tenant's sessions with user, message count and last activity")
def session_activity(
    tenant: Tenant, server: State,
    after: Annotated[int, Query(ge=0, le=BIGGEST, description=(
        "Where to continue: the next_after of the page before."))] = 0,
    limit: Annotated[int, Query(ge=1, le=500, description="At most this many.")] = 50,
    q: Annotated[str, Query(max_length=200, description=(
        "Only sessions whose name or user holds this (any case); empty: every one."))] = "",
) -> Response:
    store = server.engine.store
    scan = SCAN if q else limit
    chosen, last_read, more = _pick(store.sessions(tenant, after=after, limit=scan + 1),
                                    q, limit, scan)
    activity = store.activity(chosen)
    page = Listing(server.config.max_response_bytes)
    sent = page.fill(_session_row(r, activity.get(r.id)) for r in chosen)
    # Continue after the last session sent; after the last one read when all chosen were
    # sent (q may have passed over later ones); null when the tenant has no more.
    following = chosen[sent - 1].id if sent < len(chosen) else (last_read if more else None)
    return page_response({}, "sessions", page, {"next_after": following})


def _pick(records: list[SessionRecord], q: str | None, limit: int,
          scan: int) -> tuple[list[SessionRecord], int, bool]:
    """Up to ``limit`` of the first ``scan`` records that match ``q``; the last id read, more?"""
    chosen: list[SessionRecord] = []
    read = 0
    for record in records[:scan]:
        read += 1
        if _matches(q, record.name, record.user):
            chosen.append(record)
            if len(chosen) == limit:
                break
    last = records[read - 1].id if read else 0
    return chosen, last, len(records) > read


def _session_row(record: SessionRecord, seen: tuple[int, Any] | None) -> dict[str, Any]:
    count, at = seen if seen is not None else (0, None)
    return {"session": record.name, "user": record.user,
            "created_at": record.created_at.isoformat(), "messages": count,
            "last_activity": at.isoformat() if at is not None else None}


# -- one session: the next request, its pages, its working state -------------------------


def _peek_json(sid: str, context: Context) -> dict[str, Any]:
    """The context by segment: each with its tokens and messages, and what memory it shows."""
    stats = context.stats
    segments = [{"name": seg.name, "tokens": seg.tokens,
                 "messages": [message_json(m) for m in context.messages[seg.start:seg.stop]]}
                for seg in context.segments]
    memory = [{"text": r.text, "source": r.source, "kind": r.kind, "score": r.score,
               "session": r.session, "seq": r.seq, "page": r.page,
               "created_at": r.created_at.isoformat() if r.created_at else None}
              for r in context.memory]
    return {"session": sid, "segments": segments, "memory": memory,
            "tools": [{"name": t.name, "agent": t.agent} for t in context.tools],
            "stats": {**jsonable(stats), "saved_tokens": stats.saved_tokens}}


@router.get("/v1/sessions/{sid}/peek",
            summary="The request a build would make now, by segment (nothing changes)")
async def peek_context(
    sid: Sid, tenant: Tenant, server: State,
    budget: Annotated[int | None, Query(ge=REPLY_PRIMING, le=10_000_000, description=(
        "Tokens the request may use (default: the session's budget)."))] = None,
    recipe: Annotated[Literal["auto", "chat", "tool_loop"], Query(
        description="How to build: chat, tool_loop, or auto.")] = "auto",
) -> JSONResponse:
    def peek() -> dict[str, Any]:
        session = server.hub.get(tenant, sid)
        return _peek_json(sid, session.peek(budget=budget, recipe=recipe))

    return JSONResponse(await anyio.to_thread.run_sync(peek))


@router.get("/v1/sessions/{sid}/pages",
            summary="The session's pages: their messages, tokens and place, a page at a time")
def list_pages(
    sid: Sid, tenant: Tenant, server: State,
    after: Annotated[int, Query(ge=0, le=BIGGEST, description=(
        "Only pages numbered above this: the next_after of the answer before."))] = 0,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most this many.")] = 100,
) -> JSONResponse:
    pages = server.hub.get(tenant, sid).pages()
    later = [p for p in pages if p.page > after]
    shown = later[:limit]
    return JSONResponse({"session": sid, "total": len(pages), "pages": jsonable(shown),
                         "next_after": shown[-1].page if len(later) > limit else None})


@router.get("/v1/sessions/{sid}/workstate",
            summary="The session's working state: pins, plan, notebook and fastmemo")
def work_state(sid: Sid, tenant: Tenant, server: State) -> JSONResponse:
    state = server.hub.get(tenant, sid).export_state()
    return JSONResponse({"session": sid, **{k: state.get(k) for k in (
        "round", "pins", "plan", "notebook", "fastmemo")}})


@router.get("/v1/sessions/{sid}/replay",
            summary="memci replay's figures for the session, request by request")
async def replay_session(
    sid: Sid, tenant: Tenant, server: State,
    budget: Annotated[int | None, Query(ge=REPLY_PRIMING, le=10_000_000, description=(
        "Tokens each request may use (default: the session's budget)."))] = None,
) -> JSONResponse:
    def run() -> dict[str, Any]:
        session = server.hub.get(tenant, sid)
        branch = session.branch()
        if len(branch) > REPLAY_MESSAGES:
            raise ApiError(400, "replay_too_long",
                           f"the inspector replays sessions of at most {REPLAY_MESSAGES} "
                           f"messages; {sid!r} has {len(branch)}")
        tools = [t.to_openai() for t in session.agent_tools]
        # A scratch store: the replay adds every message again and builds, which the
        # stored session must never see.
        with tempfile.TemporaryDirectory(prefix="memci-replay-") as scratch, \
                Engine.open(FilePath(scratch) / "replay.db", workers=0) as engine:
            result = replay(engine.session(sid, **dict(session.record.settings)),
                            to_openai(branch), budget=budget, tools=tools)
            figures = result.to_json()
        figures.pop("store", None)  # the scratch store, gone
        return {**figures, "session": sid}

    return JSONResponse(await anyio.to_thread.run_sync(run))
