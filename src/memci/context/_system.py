"""The system segment of a build: the system prompt, the tool contract and the tools.

A request starts with the session's system prompt and, when memci's artifact tools are
offered, the tool contract that says how to read stored tool output (seed 004). The tools
sent are the agent's own (counted as given, never dropped) and memci's, offered when they
can act (:func:`offered_tools`): recall_page and search_memory once history has left the
window, the file tools with file roots, artifact_get and grep once a view leaves part of
a tool output out, working_state once the session has tool results; while a request
carries the history as stored, only the file tools. A small budget keeps only the tools
that bring history back.

Everything here is a value or a pure count: the segment is decided in the load phase from
the session's settings and its log, and the same inputs give the same head and the same
token counts (kept, so a steady build counts nothing again).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from memci._dataclasses import replace
from memci.context._recipes import TITLES
from memci.messages import Message, ToolSpec
from memci.tokens import Tokenizer
from memci.tokens._ahead import count_ahead

__all__ = ["KEEP_ORDER", "SystemSource", "offered_tools"]

KEEP_ORDER: tuple[tuple[str, ...], ...] = (("recall_page", "search_memory"), ("recall_page",),
                                           ())
"""What a budget too small for every schema keeps of memci's tools, tried in this order."""


def offered_tools(
    every: Iterable[ToolSpec], *, auto: bool, file_roots: bool, has_tool_results: bool,
    hides_output: bool, left_out: bool,
) -> tuple[ToolSpec, ...]:
    """memci's tools offered to the model now: those that can act (``tools="auto"``).

    recall_page and search_memory once history has left the window (``left_out``; before
    that, everything is in it); file_snippet with file roots; artifact_get once a tool
    result's view leaves part of its output out (``hides_output``), grep then or with file
    roots; working_state (pins, plan and notebook as one schema) once the session has
    tool results. The nine working-state tools by their own names stay callable but are
    not offered: working_state costs a quarter of them. With an explicit ``tools``
    setting (``auto`` False), every one of ``every``.
    """
    if not auto:
        return tuple(every)
    can_act = {"recall_page": left_out, "search_memory": left_out,
               "file_snippet": file_roots, "grep": file_roots or hides_output,
               "artifact_get": hides_output, "working_state": has_tool_results}
    return tuple(s for s in every if can_act.get(s.name, False))


class SystemSource:
    """Renders the system segment and counts the schemas of the tools a request carries."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._tool_tokens: dict[tuple[str, ...], int] = {}
        self._agent_tokens: dict[tuple[tuple[str, str], ...], int] = {}
        self._contract: tuple[str, Message] = ("", Message.system(""))

    def head(self, system: Message | None, specs: Sequence[ToolSpec],
             language: str) -> list[Message]:
        """The segment: the system prompt, and the tool contract when artifacts are offered."""
        out = [system] if system is not None else []
        if any(s.name == "artifact_get" for s in specs):
            if self._contract[0] != language:
                titles = TITLES[language]
                contract = Message.system(f"{titles.contract_title}\n{titles.contract}")
                self._contract = (language, replace(
                    contract, tokens=self.tokenizer.count_message(contract)))
            out.append(self._contract[1])
        return out

    def tools_tokens(self, specs: Sequence[ToolSpec]) -> int:
        """Tokens of memci's tool schemas ``specs`` (as sent in OpenAI form)."""
        key = tuple(s.name for s in specs)
        if key not in self._tool_tokens:
            text = json.dumps([s.to_openai() for s in specs]) if specs else ""
            self._tool_tokens[key] = (count_ahead(self.tokenizer, text) + 4 * len(specs)
                                      if specs else 0)
        return self._tool_tokens[key]

    def agent_tokens(self, agent: Sequence[ToolSpec]) -> int:
        """Tokens of the agent's tool schemas, counted as memci counts its own."""
        if not agent:
            return 0
        key = tuple((s.name, s.original or json.dumps(s.to_openai())) for s in agent)
        if key not in self._agent_tokens:
            if len(self._agent_tokens) > 64:
                self._agent_tokens.clear()
            text = json.dumps([s.to_openai() for s in agent])
            self._agent_tokens[key] = self.tokenizer.count(text) + 4 * len(agent)
        return self._agent_tokens[key]

    def affordable(self, specs: tuple[ToolSpec, ...], system: Message | None, language: str,
                   *, budget: int, spare: int) -> tuple[ToolSpec, ...]:
        """The tools a budget can carry: every one, else those that bring history back.

        memci's tools (and their contract) take a quarter of ``budget`` (what the agent's
        tools leave) at most, and only what ``spare`` (what the system prompt, the agent's
        tools and the newest message leave) holds.
        """
        prompt = sum(m.tokens or 0 for m in self.head(system, (), language))
        for keep in KEEP_ORDER:
            tools = self.tools_tokens(specs)
            contract = sum(m.tokens or 0 for m in self.head(system, specs, language)) - prompt
            if tools <= budget // 4 and tools + contract <= spare:
                break
            specs = tuple(s for s in specs if s.name in keep)
        return specs
