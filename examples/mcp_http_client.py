"""MCP over Streamable HTTP: the official MCP client against a real `memci serve`, offline.

Run: python examples/mcp_http_client.py   (needs pip install 'memci[server,mcp]')

It makes a throwaway store, an API key for tenant "acme", starts `memci serve` on a free
port of 127.0.0.1, and then, as an MCP client would: lists the tools, adds to the
connection's session (X-Memci-Session: trip) and to another one named per call, builds
and searches. Nothing leaves the machine.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

import memci
from memci.server import KeyStore


def text(result: object) -> str:
    return result.content[0].text  # type: ignore[attr-defined, no-any-return]


async def talk(url: str, key: str) -> None:
    headers = {"Authorization": f"Bearer {key}", "X-Memci-Session": "trip"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        print("tools:", ", ".join(tools))
        await client.call_tool("add", {"messages": [
            {"role": "system", "content": "You plan trips."},
            {"role": "user", "content": "Book the night train to Vienna on Friday."},
            {"role": "assistant", "content": "Booked: couchette, car 4."}]})
        # another session of the same tenant, named in the call itself
        await client.call_tool("add", {"session": "groceries",
                                       "role": "user", "content": "Buy oat milk."})
        built = json.loads(text(await client.call_tool("build", {"budget": 2000})))
        print("trip context:", [m["content"] for m in built["payload"]["messages"]])
        print("tokens:", built["stats"]["total_tokens"], "of", built["stats"]["budget"])
        found = json.loads(text(await client.call_tool(
            "search", {"query": "oat milk", "session": "groceries"})))
        print("found in groceries:", [h["message"]["parts"][0]["text"] for h in found["hits"]])


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memci.db"
        with memci.Engine.open(db, workers=0) as engine:
            _, key = KeyStore(engine.store).create("acme")
        server = subprocess.Popen(
            [sys.executable, "-m", "memci", "serve", "--port", "0", "--db", str(db)],
            stderr=subprocess.PIPE, text=True)
        try:
            assert server.stderr is not None
            listening = re.search(r"listening on (\S+)", server.stderr.readline())
            assert listening, "memci serve did not start"
            anyio.run(talk, listening.group(1), key)
        finally:
            server.terminate()
            server.wait(timeout=20)


if __name__ == "__main__":
    main()
