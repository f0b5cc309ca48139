"""Answers that list stored things, cut to a byte budget: each page says where the next starts.

Every answer of the server that lists stored things (messages, sessions, search hits; the
MCP ``search`` tool too) is built here. Items are encoded one at a time and a page stops
before it would pass its budget (``memci serve --max-response-bytes``), so one request
never makes the server hold more than about that much, however large the stored things
are. A page always holds at least one item, or a client could never get past an item
larger than the budget: that item comes alone. The answer says where to continue
(``next_after``, ``next_offset``), ``null`` when nothing is left.

Messages are sized in the store before they are read (:meth:`MessageLog.message_sizes`, and
the files of tool outputs kept outside their rows), and only those that fit are read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.responses import Response

from memci._dataclasses import dataclass, field
from memci.engine import Engine
from memci.messages import Message
from memci.server._json import hit_json, message_json
from memci.store import SessionRecord

__all__ = ["Listing", "encode", "hits_page", "messages_json", "messages_page", "page_json",
           "page_response", "sessions_page"]


def encode(value: Any) -> bytes:
    """``value`` as the JSON of an answer (as Starlette's JSONResponse writes it)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=None,
                      separators=(",", ":")).encode("utf-8")


@dataclass
class Listing:
    """Encoded items up to ``budget`` bytes (always at least one)."""

    budget: int
    items: list[bytes] = field(default_factory=list)
    size: int = 0

    def add(self, value: Any) -> bool:
        """Add ``value`` if it fits (or the page is empty); False: the page is full."""
        item = encode(value)
        if self.items and self.size + len(item) + 1 > self.budget:
            return False
        self.items.append(item)
        self.size += len(item) + 1
        return True

    def fill(self, values: Iterable[Any]) -> int:
        """Add values until one does not fit; how many went in."""
        added = 0
        for value in values:
            if not self.add(value):
                break
            added += 1
        return added


def page_json(head: Mapping[str, Any], key: str, page: Listing, tail: Mapping[str, Any]) -> bytes:
    """``{**head, key: [items], **tail}`` from items already encoded (never re-encoded)."""
    opening = encode(dict(head))[:-1] + (b"," if head else b"") + encode(key) + b":["
    closing = b"]" + (b"," + encode(dict(tail))[1:] if tail else b"}")
    return b"".join((opening, b",".join(page.items), closing))


def page_response(head: Mapping[str, Any], key: str, page: Listing,
                  tail: Mapping[str, Any]) -> Response:
    """:func:`page_json` as an HTTP answer."""
    return Response(page_json(head, key, page, tail), media_type="application/json")


def _sizes(engine: Engine, record: SessionRecord, after: int,
           limit: int) -> list[tuple[int, int]]:
    """``(seq, bytes)`` of the next messages: their rows, and their files where kept whole."""
    sizes = engine.store.message_sizes(record, after=after, limit=limit)
    if not sizes:
        return sizes
    files = engine.store.output_refs(record, sizes[0][0], sizes[-1][0])
    rows = engine.workspace.artifacts.rows
    extra = {}
    for seq, sha in files.items():
        found = rows.blob_id(sha)
        blob = rows.blob(found) if found is not None else None
        extra[seq] = blob.size if blob is not None else 0
    return [(seq, size + extra.get(seq, 0)) for seq, size in sizes]


def messages_page(engine: Engine, record: SessionRecord, *, after: int, limit: int,
                  budget: int) -> tuple[Listing, int | None]:
    """The messages after seq ``after`` (at most ``limit``) within ``budget``; next ``after``."""
    sizes = _sizes(engine, record, after, limit + 1)
    chosen: list[int] = []
    total = 0
    for seq, size in sizes[:limit]:
        if chosen and total + size > budget:
            break
        chosen.append(seq)
        total += size
    page = Listing(budget)
    messages = engine.store.messages(record, after=after, upto=chosen[-1]) if chosen else []
    if not messages:
        return page, None
    sent = page.fill(message_json(m) for m in messages)
    last: Message = messages[sent - 1]
    more = sent < len(messages) or len(sizes) > len(chosen)
    return page, (last.seq if more else None)


def messages_json(messages: list[Message], budget: int) -> list[dict[str, Any]]:
    """Messages already read (added, removed) as JSON within ``budget``.

    Those past the budget come as ``{"seq", "role", "omitted": true}``: their seqs are
    what a client needs of an answer to a write (read them with ``GET …/messages``).
    """
    out: list[dict[str, Any]] = []
    used = 0
    for message in messages:
        whole = message_json(message)
        size = len(encode(whole))
        if out and used + size > budget:
            whole = {"seq": message.seq, "role": message.role, "omitted": True}
        else:
            used += size
        out.append(whole)
    return out


def sessions_page(engine: Engine, tenant: str, *, after: int, limit: int,
                  budget: int) -> tuple[Listing, int | None]:
    """The tenant's sessions after cursor ``after`` (at most ``limit``); the next cursor."""
    records = engine.store.sessions(tenant, after=after, limit=limit + 1)
    page = Listing(budget)
    sent = page.fill({"session": r.name, "user": r.user,
                      "created_at": r.created_at.isoformat()} for r in records[:limit])
    more = sent < len(records)
    return page, (records[sent - 1].id if more and sent else None)


def hits_page(hits: list[Any], *, offset: int, budget: int) -> tuple[Listing, int | None]:
    """Search hits from rank ``offset`` on, within ``budget``; the next offset."""
    page = Listing(budget)
    sent = page.fill(hit_json(h) for h in hits[offset:])
    more = offset + sent < len(hits)
    return page, (offset + sent if more else None)
