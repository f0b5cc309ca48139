"""MCP resources over both transports, with the official client: list, templates, read.

The same conversation (with a tool output large enough to be stored as an artifact) is
read over stdio (``memci mcp``) and over HTTP (``/mcp`` of a real ``memci serve``, where
another tenant's key reads none of it). Reading never makes a session.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="needs memci[mcp]")
pytest.importorskip("fastapi", reason="needs memci[server]")

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import memci
from memci.server import KeyStore

from .test_server import MEMCI, ROOT, ServeProcess, subprocess_env

OUTPUT = "\n".join(f"line {i}: the build log of the notes session" for i in range(3000))
TURN = [{"role": "user", "content": "run the build and remember the oat milk"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": OUTPUT},
        {"role": "assistant", "content": "The build passed."}]

Opener = Callable[[], AbstractAsyncContextManager[Client]]


def _text(result: types.ReadResourceResult) -> str:
    (content,) = result.contents
    assert isinstance(content, types.TextResourceContents)
    return content.text


async def _read_everything(client: Client) -> dict[str, Any]:
    """Add the conversation, then read it back through resources only."""
    added = await client.call_tool("add", {"messages": TURN, "session": "notes 1"})
    assert not added.is_error, added
    built = await client.call_tool("build", {"session": "notes 1"})
    (artifact,) = set(re.findall(r"artifact:[0-9a-f]{12,}", json.dumps(built.content[0].text)))
    listed = (await client.list_resources()).resources
    templates = (await client.list_resource_templates()).resource_templates
    contents = json.loads(_text(await client.read_resource("memci://sessions/notes%201")))
    pages = [json.loads(_text(await client.read_resource(p["uri"])))
             for p in contents["pages"]]
    stored = _text(await client.read_resource(f"memci://sessions/notes%201/artifacts/"
                                              f"{artifact}"))
    refused: dict[str, int] = {}
    for uri in ("memci://sessions/nobody", "memci://sessions/notes%201/pages/99",
                "memci://sessions/notes%201/artifacts/artifact:0123456789ab",
                "file:///etc/passwd"):
        try:
            await client.read_resource(uri)
        except MCPError as exc:
            refused[uri] = exc.code
    after = [r.name for r in (await client.list_resources()).resources]
    return {"listed": [(r.name, str(r.uri)) for r in listed],
            "templates": sorted(t.uri_template for t in templates), "contents": contents,
            "pages": pages, "artifact": stored, "refused": refused, "after": after}


def _check(seen: dict[str, Any]) -> None:
    assert ("notes 1", "memci://sessions/notes%201") in seen["listed"]
    assert seen["templates"] == ["memci://sessions/{session}",
                                 "memci://sessions/{session}/artifacts/{artifact}",
                                 "memci://sessions/{session}/pages/{page}"]
    contents = seen["contents"]
    assert contents["session"] == "notes 1" and contents["messages"] == len(TURN)
    assert contents["pages"] and all(p["place"] for p in contents["pages"])
    read = [m for page in seen["pages"] for m in page["messages"]]
    assert [m["seq"] for m in read] == list(range(1, len(TURN) + 1))  # every message, once
    assert "remember the oat milk" in json.dumps(read)
    assert seen["artifact"].startswith("line 0: the build log")
    assert seen["refused"] == {"memci://sessions/nobody": -32002,
                               "memci://sessions/notes%201/pages/99": -32002,
                               "memci://sessions/notes%201/artifacts/artifact:0123456789ab":
                                   -32002,
                               "file:///etc/passwd": -32602}
    assert "nobody" not in seen["after"]  # reading made no session


def test_resources_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=[*MEMCI[1:], "mcp", "--db", str(tmp_path / "r.db")],
        env=subprocess_env(), cwd=str(ROOT))

    async def run() -> dict[str, Any]:
        async with Client(params, cache=None, read_timeout_seconds=60) as client:
            return await _read_everything(client)

    _check(anyio.run(run))


@asynccontextmanager
async def _http(url: str, key: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"},
                                  timeout=60) as http:
        async with Client(streamable_http_client(url + "/mcp", http_client=http),
                          read_timeout_seconds=60) as client:
            yield client


def test_resources_over_http_are_the_keys_tenants_only(tmp_path: Path) -> None:
    db = tmp_path / "r-http.db"
    with memci.Engine.open(db, workers=0) as engine:
        store = KeyStore(engine.store)
        acme, globex = store.create("acme")[1], store.create("globex")[1]

    async def run(url: str) -> tuple[dict[str, Any], list[str], int | None]:
        async with _http(url, acme) as client:
            seen = await _read_everything(client)
        async with _http(url, globex) as other:
            names = [r.name for r in (await other.list_resources()).resources]
            try:
                await other.read_resource("memci://sessions/notes%201")
                code = None
            except MCPError as exc:
                code = exc.code
        return seen, names, code

    with ServeProcess(db) as server:
        seen, other_names, other_code = anyio.run(run, server.url)
    _check(seen)
    assert "notes 1" not in other_names and other_code == -32002
