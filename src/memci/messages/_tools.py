"""Tools as values: a function tool with its wire forms, and the names of memci's own tools.

:class:`ToolSpec` is what a tool is to a model: a name, a description and the JSON
Schema of its arguments, written in each provider's form the way messages are (it
imports nothing but the standard library). memci's own tools and the agent's are both
ToolSpecs; :mod:`memci.tools` runs memci's.

:data:`OWN_TOOLS` names memci's own tools, in the order they are registered;
:func:`offerable_tools` picks those a model may be offered (``working_state`` stands for
the nine working-state tools after it, which stay callable by name). Their
answers are memci's, not the conversation's: recalled pages and artifacts repeat what is
stored already, search results and "no memory found" lines are about memory, and
pin/plan/notebook confirmations restate the working state. The search index skips these
calls and their results (:mod:`memci.memory._index`), so memci never finds its own answers
as memory; the settings accept only these names in ``tools``.
``tests/test_memory_index_own_tools.py`` checks the list equals the tools registered in
:mod:`memci.tools._builtin`, in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from memci._dataclasses import dataclass, field

__all__ = ["OWN_TOOLS", "OWN_TOOL_NAMES", "ToolSpec", "offerable_tools"]

OWN_TOOLS: tuple[str, ...] = (
    "recall_page", "search_memory", "artifact_get", "file_snippet", "grep", "working_state",
    "pin_add", "pin_remove", "pin_update", "pin_list",
    "plan_add", "plan_done", "plan_remove", "plan_list", "notebook_add",
)
OWN_TOOL_NAMES = frozenset(OWN_TOOLS)
_WORKING_STATE = "working_state"
_GROUPED = frozenset(OWN_TOOLS[OWN_TOOLS.index(_WORKING_STATE) + 1:])
"""The nine working-state tools, offered to a model as ``working_state``."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A function tool the model may call: name, description, JSON Schema of its arguments.

    memci's own tools, and the agent's (``agent=True``, read by
    :func:`memci.tools.read_agent_tools` from OpenAI, Anthropic or Responses form). An
    agent's tool is written back in the form it was given exactly as given (``form`` and
    ``original``, its JSON text: fields only that provider knows, such as
    ``cache_control``, stay), and in the other forms from its name, description,
    parameters and ``strict``.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    strict: bool = False
    agent: bool = False
    form: str | None = None
    original: str | None = field(default=None, repr=False)

    def _as_given(self, form: str) -> dict[str, Any] | None:
        if self.form != form or self.original is None:
            return None
        given: dict[str, Any] = json.loads(self.original)  # a fresh copy every time
        return given

    def to_openai(self) -> dict[str, Any]:
        """The tool as an OpenAI Chat Completions ``tools`` entry."""
        given = self._as_given("openai")
        if given is not None:
            return given
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = dict(self.parameters)
        if self.strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    def to_anthropic(self) -> dict[str, Any]:
        """The tool as an Anthropic Messages ``tools`` entry."""
        given = self._as_given("anthropic")
        if given is not None:
            return given
        out: dict[str, Any] = {"name": self.name}
        if self.description:
            out["description"] = self.description
        out["input_schema"] = dict(self.parameters)
        if self.strict:
            out["strict"] = True
        return out

    def to_responses(self) -> dict[str, Any]:
        """The tool as an OpenAI Responses ``tools`` entry (a function tool).

        ``strict`` is always sent: the Responses API takes a function as strict unless
        told otherwise, and a strict schema must list every property as required, which
        tools with optional arguments (memci's among them) do not.
        """
        given = self._as_given("responses")
        if given is not None:
            # The SDK's type requires the key; absent, the API reads it as true.
            given.setdefault("strict", self.strict)
            return given
        out: dict[str, Any] = {"type": "function", "name": self.name}
        if self.description:
            out["description"] = self.description
        out["parameters"] = dict(self.parameters)
        out["strict"] = self.strict
        return out


def offerable_tools(specs: Iterable[ToolSpec]) -> tuple[ToolSpec, ...]:
    """The tools of ``specs`` a model may be offered: what a framework or MCP registers.

    The nine working-state tools drop out when ``working_state`` stands for them (all stay
    callable by name); an explicit ``tools`` setting that names some of them and not
    working_state offers them by their own names, and they stay.
    """
    specs = tuple(specs)
    if not any(s.name == _WORKING_STATE for s in specs):
        return specs
    return tuple(s for s in specs if s.name not in _GROUPED)
