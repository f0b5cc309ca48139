"""memci's own tool answers are never found as memory (issue 13, item 6)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import memci
from memci.messages._tools import OWN_TOOL_NAMES, OWN_TOOLS
from memci.tools._builtin import (
    FILE_TOOLS,
    RECALL_PAGE,
    SEARCH_MEMORY,
    WORKING_STATE,
    WORKSPACE_TOOLS,
)


def test_the_names_are_the_registered_tools() -> None:
    registered = {RECALL_PAGE.spec.name, SEARCH_MEMORY.spec.name, *FILE_TOOLS,
                  WORKING_STATE.spec.name, *WORKSPACE_TOOLS}
    assert registered == OWN_TOOL_NAMES


def test_the_settings_list_them_in_the_order_registered(tmp_path: Path) -> None:
    registered = [RECALL_PAGE.spec.name, SEARCH_MEMORY.spec.name, *FILE_TOOLS,
                  WORKING_STATE.spec.name, *WORKSPACE_TOOLS]
    assert list(OWN_TOOLS) == registered
    engine = memci.Engine.open(tmp_path / "m.db")
    with pytest.raises(memci.ConfigError, match=re.escape(f"({', '.join(registered)})")):
        engine.session("s", tools=["recall_page", "no_such_tool"])
    assert engine.session("s", tools=registered).settings.tools == tuple(registered)
    engine.close()


def _call(call_id: str, name: str, args: dict[str, object]) -> dict[str, object]:
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": call_id, "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)}}]}


def _result(call_id: str, text: str) -> dict[str, object]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def test_own_tool_answers_are_not_indexed(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    session = engine.session("s", tools=("search_memory", "recall_page"))
    session.add({"role": "user", "content": "what was the invoice total?"})
    # memci's own answer, added in a later add than its call (the usual agent loop)
    session.add(_call("c1", "search_memory", {"query": "invoice total zanzibar"}))
    session.add(_result("c1", "no memory found for 'invoice total zanzibar'"))
    # the agent's own tool: its answer is the conversation's
    session.add([_call("c2", "lookup_invoice", {"number": "42"}),
                 _result("c2", "invoice 42: total 310 EUR, quokka shipping")])
    session.add({"role": "assistant", "content": "The total was 310 EUR."})

    assert session.search("zanzibar") == []
    assert session.search("no memory found") == []
    found = session.search("quokka")
    # the agent's tool result; then the reply that follows it (found by its neighbour)
    assert [h.message.seq for h in found] == [5, 6]

    # a fresh engine (another process) indexing from the store sees the same
    other = memci.Engine.open(tmp_path / "m.db")
    assert other.session("s").search("zanzibar") == []
    engine.close()
    other.close()


def test_a_message_with_both_kinds_of_results_keeps_the_agents(tmp_path: Path) -> None:
    engine = memci.Engine.open(tmp_path / "m.db")
    session = engine.session("s", tools=("search_memory",))
    session.add({"role": "user", "content": "look both up"})
    session.add({"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "search_memory", "input": {"query": "x"}},
        {"type": "tool_use", "id": "b", "name": "weather", "input": {"city": "Oslo"}}]})
    session.add({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "hits: wombat pie"},
        {"type": "tool_result", "tool_use_id": "b", "content": "Oslo: sleet, 2C"}]})
    assert session.search("wombat") == []
    hits = session.search("sleet")
    assert hits and "sleet" in hits[0].text
    engine.close()
