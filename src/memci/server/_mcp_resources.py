"""MCP resources: what a client may read of its tenant's sessions, without changing them.

Three kinds, every one a template (``resources/templates/list``) under ``memci://``; a
session name is percent-encoded in a URI (``memci://sessions/chat%201``):

- ``memci://sessions/{session}`` — the session's contents: its user, message count and
  every page of the branch its context follows (seqs, tokens, where the page is now:
  window, contents page or evicted), each with the URI of the page (JSON);
- ``memci://sessions/{session}/pages/{page}`` — the messages of one page (JSON; those
  past the byte budget as ``{"seq", "role", "omitted": true}``, read them with the REST
  API);
- ``memci://sessions/{session}/artifacts/{artifact}`` — a stored tool output
  (``artifact:<id>`` in a context), its first characters within the byte budget (the
  ``artifact_get`` tool reads further).

``resources/list`` lists the contents resource of each session of the caller's tenant,
a page at a time (``nextCursor``). Invariants: reading never writes (a page is read from
the stored messages, never recalled into the context; a session that does not exist is
not made); a caller reaches only its own tenant's sessions (the transport names the
tenant, as for tools: :class:`~memci.server._mcp.Caller`); a URI that names nothing of the
caller's tenant is JSON-RPC ``-32002`` (resource not found) with the URI in ``data``, a
URI that is not memci's ``-32602``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.shared.exceptions import MCPError

from memci._dataclasses import dataclass
from memci._lazy import compile_pattern
from memci._session import Session
from memci.errors import MemciError
from memci.server._listing import messages_json

__all__ = ["LIST_PAGE", "RESOURCE_NOT_FOUND", "TEMPLATES", "SessionReader", "list_resources",
           "read_resource", "session_uri"]

RESOURCE_NOT_FOUND = -32002  # MCP 2025-11-25, "Resources": error handling
LIST_PAGE = 100  # sessions per resources/list answer
_JSON = "application/json"

TEMPLATES = [
    types.ResourceTemplate(
        name="session", uri_template="memci://sessions/{session}", mime_type=_JSON,
        title="A memci session's contents",
        description="The session's user, message count and every page of the branch its "
                    "context follows: seqs, tokens, and where the page is now (window, "
                    "contents page, evicted), with each page's URI."),
    types.ResourceTemplate(
        name="page", uri_template="memci://sessions/{session}/pages/{page}", mime_type=_JSON,
        title="The messages of one page",
        description="Page numbers as the session's contents lists them ([Page N])."),
    types.ResourceTemplate(
        name="artifact", uri_template="memci://sessions/{session}/artifacts/{artifact}",
        mime_type="text/plain", title="A stored tool output",
        description="An artifact:<id> of the session's context; its first characters "
                    "(the artifact_get tool reads further)."),
]

_URI = compile_pattern(r"memci://sessions/(?P<session>[^/?#]+)"
                       r"(?:/(?P<kind>pages|artifacts)/(?P<item>[^/?#]+))?")


@dataclass(frozen=True, slots=True)
class SessionReader:
    """How resources reach sessions: of the caller's tenant only, never making one.

    ``find(name)`` is the existing session ``name`` of the tenant, or None; ``names()``
    every session name of the tenant, oldest first.
    """

    find: Callable[[str], Session | None]
    names: Callable[[], list[str]]


def session_uri(name: str) -> str:
    """The URI of a session's contents resource."""
    return f"memci://sessions/{quote(name, safe='')}"


def list_resources(reader: SessionReader, cursor: str | None) -> types.ListResourcesResult:
    """One page of the tenant's sessions, as contents resources."""
    start = _cursor(cursor)
    names = reader.names()
    page = names[start:start + LIST_PAGE]
    following = start + LIST_PAGE
    return types.ListResourcesResult(
        resources=[types.Resource(name=name, uri=session_uri(name), mime_type=_JSON,
                                  title=f"memci session {name}") for name in page],
        next_cursor=str(following) if following < len(names) else None)


def _cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit() or len(cursor) > 12:
        raise MCPError(code=types.INVALID_PARAMS,
                       message="Invalid params: the cursor is not one this server gave")
    return int(cursor)


def read_resource(reader: SessionReader, uri: str,
                  max_bytes: int) -> types.ReadResourceResult:
    """The contents of ``uri``, within about ``max_bytes``.

    MCPError when ``uri`` names nothing the caller may read.
    """
    found = _URI.fullmatch(uri)
    if found is None:
        raise MCPError(code=types.INVALID_PARAMS,
                       message=f"Invalid params: {_shown(uri)} is not a memci resource; "
                               "memci's are memci://sessions/{session}[/pages/{page}"
                               "|/artifacts/{artifact}]")
    session = reader.find(unquote(found["session"]))
    if session is None:
        raise _not_found(uri, "no such session")
    item = unquote(found["item"] or "")
    try:
        if found["kind"] == "pages":
            text = _page(session, item, uri, max_bytes)
        elif found["kind"] == "artifacts":
            text = session.artifacts.read(item, 0, max_bytes // 4)  # ≤ 4 bytes a char
        else:
            text = _contents(session)
    except MemciError as exc:  # an unknown artifact, a malformed id
        raise _not_found(uri, str(exc)) from exc
    mime = "text/plain" if found["kind"] == "artifacts" else _JSON
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])


def _contents(session: Session) -> str:
    pages = [{"page": p.page, "uri": f"{session_uri(session.name)}/pages/{p.page}",
              "first_seq": p.first_seq, "last_seq": p.last_seq, "messages": p.messages,
              "tokens": p.tokens, "place": p.place, "detail": p.detail}
             for p in session.pages()]
    return json.dumps({"session": session.name, "user": session.user,
                       "messages": session.count(), "pages": pages}, ensure_ascii=False)


def _page(session: Session, item: str, uri: str, max_bytes: int) -> str:
    number = int(item) if item.isdigit() and len(item) <= 12 else None
    info = next((p for p in session.pages() if p.page == number), None)
    if info is None:
        raise _not_found(uri, f"session {session.name!r} has no page {item!r}")
    messages = [m for m in session.branch()
                if m.seq is not None and info.first_seq <= m.seq <= info.last_seq]
    return json.dumps({"session": session.name, "page": info.page, "place": info.place,
                       "messages": messages_json(messages, max_bytes)}, ensure_ascii=False)


def _not_found(uri: str, why: str) -> MCPError:
    return MCPError(code=RESOURCE_NOT_FOUND,
                    message=f"Resource not found: {_shown(uri)} ({why})", data={"uri": uri})


def _shown(uri: str) -> str:
    return repr(uri if len(uri) <= 120 else uri[:117] + "...")
