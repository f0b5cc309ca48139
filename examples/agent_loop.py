"""An agent's whole loop with memci, sync and async, offline: ``python examples/agent_loop.py``.

The agent has a tool of its own (``get_weather``); memci adds its own (``search_memory``,
``recall_page``, ...). Each turn: build the context, call the model, add the reply, run
the tool calls (memci's through ``session.call_tool``, the agent's itself), add the
results, until the model answers in text. The same loop runs twice, with
``memci.Engine`` and with ``memci.AsyncEngine``, and gives the same answers.

The "model" is a tiny fake OpenAI-compatible server started in this process (standard
library only), so nothing leaves the machine: asked a question, it calls the agent's
weather tool and memci's search; given the results, it answers from them. Swap its URL
for a real endpoint (or use the ``openai`` SDK: ``client.chat.completions.create(model=...,
**ctx.to_openai())``) and the loop stays as it is.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

import memci

WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
# An earlier conversation, long enough that its start has left a 4,000-token window.
EARLIER = [{"role": "user", "content": "By the way, my favourite city is Lisbon."},
           {"role": "assistant", "content": "Noted: Lisbon."}] + [
    m for i in range(40) for m in (
        {"role": "user", "content": f"Tell me a fact about the number {i}, briefly."},
        {"role": "assistant", "content": f"The number {i} is " + "a number with a story. " * 8})]
QUESTIONS = ["What is the weather in Paris?",
             "And in Rome? Also, which city did I say I like?"]


def get_weather(city: str) -> str:
    """The agent's own tool (a real agent would call a weather service)."""
    return f"Sunny in {city}, 21 °C"


# -- the agent's loop: sync ----------------------------------------------------------------


def run_tool(session: memci.Session, call: dict[str, Any]) -> str:
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    if session.handles(call):  # one of memci's own tools
        return session.call_tool(name, arguments)
    if name == "get_weather":
        return get_weather(**json.loads(arguments))
    return f"error: unknown tool {name!r}"


def turn(session: memci.Session, http: httpx.Client, question: str) -> str:
    session.add({"role": "user", "content": question})
    while True:
        ctx = session.build()  # within the model's window, the tools' schemas counted
        reply = http.post("/chat/completions", json={"model": "fake", **ctx.to_openai()})
        reply.raise_for_status()
        message = reply.json()["choices"][0]["message"]
        session.add(message)
        if not message.get("tool_calls"):
            return str(message["content"])
        for call in message["tool_calls"]:
            session.add({"role": "tool", "tool_call_id": call["id"],
                         "content": run_tool(session, call)})


def main_sync(path: Path, base_url: str) -> list[str]:
    with memci.Engine.open(path) as engine, httpx.Client(base_url=base_url) as http:
        session = engine.session("demo", user="u1", model="gpt-4o-mini", context_window=4000,
                                 tools=[WEATHER_TOOL])
        session.set_system("You are a helpful assistant. Use the tools.")
        session.add_many(EARLIER)
        return [turn(session, http, q) for q in QUESTIONS]


# -- the same loop: async ------------------------------------------------------------------


async def arun_tool(session: memci.AsyncSession, call: dict[str, Any]) -> str:
    name, arguments = call["function"]["name"], call["function"]["arguments"]
    if session.handles(call):
        return await session.call_tool(name, arguments)
    if name == "get_weather":
        return get_weather(**json.loads(arguments))
    return f"error: unknown tool {name!r}"


async def aturn(session: memci.AsyncSession, http: httpx.AsyncClient, question: str) -> str:
    await session.add({"role": "user", "content": question})
    while True:
        ctx = await session.build()
        reply = await http.post("/chat/completions", json={"model": "fake", **ctx.to_openai()})
        reply.raise_for_status()
        message = reply.json()["choices"][0]["message"]
        await session.add(message)
        if not message.get("tool_calls"):
            return str(message["content"])
        for call in message["tool_calls"]:
            await session.add({"role": "tool", "tool_call_id": call["id"],
                               "content": await arun_tool(session, call)})


async def main_async(path: Path, base_url: str) -> list[str]:
    async with await memci.AsyncEngine.open(path) as engine, \
            httpx.AsyncClient(base_url=base_url) as http:
        session = await engine.session("demo", user="u1", model="gpt-4o-mini",
                                       context_window=4000, tools=[WEATHER_TOOL])
        await session.set_system("You are a helpful assistant. Use the tools.")
        await session.add_many(EARLIER)
        return [await aturn(session, http, q) for q in QUESTIONS]


# -- the fake model ------------------------------------------------------------------------


CALLED: list[str] = []  # the names of the tools the fake model called


def fake_model(request: dict[str, Any]) -> dict[str, Any]:
    """A scripted model: ask for the tools after a question, answer from their results.

    It asks memci's ``search_memory`` only when memci offers it (once some of the
    conversation has left the window), as a real model only calls the tools it is given.
    memci's own sections (``## Retrieved memory``, ...) are context, not the user speaking.
    """
    messages = [m for m in request["messages"]
                if not str(m.get("content") or "").startswith("## ")]
    tools = {t["function"]["name"] for t in request.get("tools", [])}
    if messages[-1]["role"] == "user":
        question = str(messages[-1]["content"])
        city = "Rome" if "Rome" in question else "Paris"
        calls = [("get_weather", {"city": city})]
        if "search_memory" in tools and "which city" in question:
            calls.append(("search_memory", {"query": "favourite city"}))
        CALLED.extend(name for name, _ in calls)
        n = len(request["messages"])
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{n}_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)]}
    results = [str(m["content"]) for m in messages[-2:] if m["role"] == "tool"]
    weather = next(r for r in results if "Sunny in" in r).split("Sunny in", 1)[1]
    answer = f"It is sunny in{weather.splitlines()[0]}."
    if any("favourite city is Lisbon" in r for r in results):
        answer += " You told me your favourite city is Lisbon."
    return {"role": "assistant", "content": answer}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        message = fake_model(body)
        data = json.dumps({"id": "chatcmpl-demo", "object": "chat.completion", "model": "fake",
                           "choices": [{"index": 0, "message": message,
                                        "finish_reason": "tool_calls" if message.get(
                                            "tool_calls") else "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with tempfile.TemporaryDirectory() as home:
            sync_answers = main_sync(Path(home) / "sync.db", base_url)
            async_answers = asyncio.run(main_async(Path(home) / "async.db", base_url))
    finally:
        server.shutdown()
        server.server_close()
    for question, answer in zip(QUESTIONS, sync_answers, strict=True):
        print(f"user: {question}\nassistant: {answer}")
    print("async answers are the same:", async_answers == sync_answers)
    print("tools the model called:", ", ".join(sorted(set(CALLED))))


if __name__ == "__main__":
    main()
