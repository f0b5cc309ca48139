"""MCP over stdio (``memci mcp``): the SDK's transport, with every line checked first.

The official SDK's :func:`~mcp.server.stdio.stdio_server` writes the answers (and keeps
stray output of the process off the wire); the lines it reads come from
:class:`CheckedLines`, which passes on only those that are JSON-RPC messages. Every other
line gets its JSON-RPC error (:mod:`memci.server._jsonrpc`: parse error, invalid request,
invalid params) written back at once, where the SDK alone would drop it without a word
and leave the client waiting. Blank lines are no messages and are skipped.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from memci.server._jsonrpc import check_message

__all__ = ["CheckedLines", "checked_stdio"]

Answer = Callable[[dict[str, Any]], Awaitable[None]]


class CheckedLines:
    """The lines of ``lines`` that are JSON-RPC messages; the others are answered."""

    def __init__(self, lines: AsyncIterable[str]) -> None:
        self._lines = lines
        self.answer: Answer | None = None  # set once the transport can write

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            if not line.strip():
                continue
            error = check_message(line)
            if error is None:
                yield line
            elif self.answer is not None:
                await self.answer(error)


@asynccontextmanager
async def checked_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The read and write streams of MCP over this process's stdin and stdout."""
    # Our own descriptor of stdin: closing its reader never closes the process's stdin.
    with os.fdopen(os.dup(0), "r", encoding="utf-8", errors="replace") as stdin:
        lines = CheckedLines(anyio.wrap_file(stdin))
        # The SDK only iterates what it is given as stdin, line by line.
        async with stdio_server(stdin=cast("anyio.AsyncFile[str]", lines)) as (read, write):

            async def answer(error: dict[str, Any]) -> None:
                reply = types.JSONRPCError.model_validate(error)
                await write.send(SessionMessage(reply))

            lines.answer = answer
            yield read, write
