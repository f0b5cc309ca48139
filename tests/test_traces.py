"""Reading the traces agents write: every format from a small file in that format.

Each test writes a file as the project that makes it writes it (field names, nesting,
the bookkeeping around the messages), reads it back through ``memci.traces`` and
through ``memci replay``, and checks the conversation that comes out: roles in order,
tool calls paired with their results, the agent's tools, dates, notes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from memci.cli import main
from memci.errors import InvalidFileError
from memci.traces import FORMAT_NAMES, Trace, parse_trace, read_trace

from .conftest import EXAMPLE_TRACE, shared_data

# -- helpers -----------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, data: Any, *, jsonl: bool = False) -> Path:
    path = tmp_path / name
    if jsonl:
        path.write_text("\n".join(json.dumps(line) for line in data) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _roles(trace: Trace) -> list[str]:
    return [m["role"] for m in trace.messages]


def _assert_paired(trace: Trace) -> None:
    """Every result answers exactly one earlier, still open call; ids are unique."""
    open_calls: dict[str, str] = {}
    seen: set[str] = set()
    for message in trace.messages:
        for call in message.get("tool_calls") or []:
            assert call["id"] not in seen, f"call id {call['id']} used twice"
            seen.add(call["id"])
            open_calls[call["id"]] = call["function"]["name"]
            json.loads(call["function"]["arguments"])  # JSON text of an object
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, message
            del open_calls[message["tool_call_id"]]


def _replay_json(path: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["replay", str(path), "--json", *args])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _requests_expected(trace: Trace) -> int:
    return sum(1 for i, m in enumerate(trace.messages) if m["role"] == "assistant" and i)


def _check_replays(path: Path, trace: Trace) -> dict[str, Any]:
    data = _replay_json(path)
    assert data["format"] == trace.format
    assert data["messages"] == len(trace.messages)
    assert data["totals"]["requests"] == _requests_expected(trace)
    return data


# -- OpenAI ------------------------------------------------------------------------------


def test_openai_example_and_mini_swe_agent_trace() -> None:
    example = read_trace(EXAMPLE_TRACE)
    assert example.format == "openai" and len(example.messages) == 27
    _assert_paired(example)
    mini = read_trace(shared_data("traces", "django__django-11815.traj.json"))
    assert mini.format == "openai"
    assert mini.messages[-1]["role"] != "exit"
    assert any("role 'exit' is not a chat role" in n for n in mini.notes)
    _assert_paired(mini)


def test_openai_legacy_function_calls_and_tools(tmp_path: Path) -> None:
    log = {"model": "gpt-4o", "tools": [{"type": "function", "function": {
        "name": "lookup", "description": "Look a word up",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}}}}],
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Define ephemeral"}]},
            {"role": "assistant", "content": None,
             "function_call": {"name": "lookup", "arguments": "{\"word\": \"ephemeral\"}"}},
            {"role": "function", "name": "lookup", "content": "lasting a very short time"},
            {"role": "assistant", "content": "Lasting a very short time."}]}
    path = _write(tmp_path, "log.json", log)
    trace = read_trace(path)
    assert trace.format == "openai"
    assert _roles(trace) == ["system", "user", "assistant", "tool", "assistant"]
    assert trace.messages[1]["content"] == "Define ephemeral"
    assert [t["function"]["name"] for t in trace.tools] == ["lookup"]
    _assert_paired(trace)
    data = _check_replays(path, trace)
    assert data["tools_tokens"] > 0


def test_openai_fine_tuning_jsonl_holds_one_conversation_a_line(tmp_path: Path) -> None:
    lines = [{"messages": [{"role": "user", "content": f"question {i}"},
                           {"role": "assistant", "content": f"answer {i}"}]}
             for i in range(3)]
    path = _write(tmp_path, "train.jsonl", lines, jsonl=True)
    trace = read_trace(path, item=3)
    assert (trace.item, trace.items) == (3, 3)
    assert trace.messages[0]["content"] == "question 2"
    first = read_trace(path)
    assert any("holds 3 openai conversations" in n for n in first.notes)
    with pytest.raises(InvalidFileError, match="holds 3 conversations"):
        read_trace(path, item=4)


# -- Anthropic ---------------------------------------------------------------------------


def test_anthropic_messages_with_tool_blocks(tmp_path: Path) -> None:
    request = {
        "model": "claude-sonnet-4-20250514", "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are a coding agent.",
                    "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "bash", "description": "Run a shell command",
                   "input_schema": {"type": "object",
                                    "properties": {"command": {"type": "string"}},
                                    "required": ["command"]}}],
        "messages": [
            {"role": "user", "content": "List the files"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should run ls.", "signature": "EqQB"},
                {"type": "text", "text": "Running ls."},
                {"type": "tool_use", "id": "toolu_01A", "name": "bash",
                 "input": {"command": "ls"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A",
                 "content": [{"type": "text", "text": "a.py\nb.py"}]},
                {"type": "text", "text": "Now count them."}]},
            {"role": "assistant", "content": [{"type": "text", "text": "There are 2."}]},
        ]}
    path = _write(tmp_path, "anthropic.json", request)
    trace = read_trace(path)
    assert trace.format == "anthropic"
    assert _roles(trace) == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert trace.messages[0]["content"] == "You are a coding agent."
    assert trace.messages[2]["content"] == "Running ls."  # thinking is not resent
    assert trace.messages[2]["tool_calls"][0]["id"] == "toolu_01A"
    assert json.loads(trace.messages[2]["tool_calls"][0]["function"]["arguments"]) == {
        "command": "ls"}
    assert trace.messages[3] == {"role": "tool", "tool_call_id": "toolu_01A",
                                 "content": "a.py\nb.py"}
    assert trace.tools[0]["function"]["parameters"]["required"] == ["command"]
    _assert_paired(trace)
    _check_replays(path, trace)


def test_claude_code_session_log(tmp_path: Path) -> None:
    base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w",
            "sessionId": "5e1c", "version": "1.0.33"}
    lines = [
        {"type": "summary", "summary": "Fixing a bug", "leafUuid": "x"},
        {**base, "type": "user", "uuid": "u1", "timestamp": "2025-06-01T10:00:00.000Z",
         "message": {"role": "user", "content": "fix the bug in a.py"}},
        {**base, "type": "assistant", "uuid": "a1", "timestamp": "2025-06-01T10:00:03.000Z",
         "message": {"id": "msg_01", "type": "message", "role": "assistant",
                     "model": "claude-sonnet-4", "content": [
                         {"type": "text", "text": "Let me read it."}]}},
        {**base, "type": "assistant", "uuid": "a2", "timestamp": "2025-06-01T10:00:04.000Z",
         "message": {"id": "msg_01", "type": "message", "role": "assistant", "content": [
             {"type": "tool_use", "id": "toolu_1", "name": "Read",
              "input": {"file_path": "/w/a.py"}}]}},
        {**base, "type": "user", "uuid": "u2", "timestamp": "2025-06-01T10:00:05.000Z",
         "message": {"role": "user", "content": [
             {"tool_use_id": "toolu_1", "type": "tool_result", "content": "def f(): retur 1"}]},
         "toolUseResult": {"type": "text"}},
        {**base, "isSidechain": True, "type": "user", "uuid": "s1",
         "message": {"role": "user", "content": "sub-agent task"}},
        {**base, "type": "assistant", "uuid": "a3", "timestamp": "2025-06-01T10:00:09.000Z",
         "message": {"id": "msg_02", "role": "assistant", "content": [
             {"type": "text", "text": "The typo is fixed."}]}},
    ]
    path = _write(tmp_path, "session.jsonl", lines, jsonl=True)
    trace = read_trace(path)
    assert trace.format == "anthropic"
    assert _roles(trace) == ["user", "assistant", "tool", "assistant"]
    assert trace.messages[1]["content"] == "Let me read it."  # one response, one message
    assert trace.messages[1]["tool_calls"][0]["function"]["name"] == "Read"
    assert trace.messages[0]["created_at"].startswith("2025-06-01T10:00:00")
    assert any("side chain" in n for n in trace.notes)
    _assert_paired(trace)
    _check_replays(path, trace)


# -- ShareGPT ----------------------------------------------------------------------------


SHAREGPT = [
    {"id": "chat-1", "conversations": [
        {"from": "system", "value": "You are a helpful assistant."},
        {"from": "human", "value": "What is the capital of France?"},
        {"from": "gpt", "value": "Paris."},
        {"from": "human", "value": "And of Italy?"},
        {"from": "gpt", "value": "Rome."}]},
    {"conversations": [
        {"from": "human", "value": "What's the weather in Paris and in Rome?"},
        {"from": "function_call", "value": json.dumps([
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_weather", "arguments": {"city": "Rome"}}])},
        {"from": "observation", "value": "{\"temp\": 18}"},
        {"from": "observation", "value": "{\"temp\": 24}"},
        {"from": "gpt", "value": "18°C in Paris, 24°C in Rome."}],
     "system": "You are a weather bot.",
     "tools": json.dumps([{"name": "get_weather", "description": "Get the weather",
                           "parameters": {"type": "object",
                                          "properties": {"city": {"type": "string"}}}}])},
]


def test_sharegpt_conversations_and_function_calls(tmp_path: Path) -> None:
    path = _write(tmp_path, "sharegpt.json", SHAREGPT)
    first = read_trace(path)
    assert first.format == "sharegpt" and first.items == 2
    assert _roles(first) == ["system", "user", "assistant", "user", "assistant"]
    second = read_trace(path, item=2)
    assert _roles(second) == ["system", "user", "assistant", "tool", "tool", "assistant"]
    calls = second.messages[2]["tool_calls"]
    # No ids in ShareGPT: made up, in file order, and each result answers its own call.
    assert [c["id"] for c in calls] == ["call_1", "call_2"]
    assert [m.get("tool_call_id") for m in second.messages[3:5]] == ["call_1", "call_2"]
    assert read_trace(path, item=2).messages == second.messages  # the same every time
    assert second.tools[0]["function"]["name"] == "get_weather"
    _assert_paired(second)
    data = _check_replays(path, first)
    assert any("holds 2 sharegpt conversations" in n for n in data["skipped"])
    data = _replay_json(path, "--item", "2")
    assert data["totals"]["requests"] == _requests_expected(second)


def test_sharegpt_observation_without_a_call_is_kept_as_user_text(tmp_path: Path) -> None:
    path = _write(tmp_path, "obs.json", {"conversations": [
        {"from": "human", "value": "run it"},
        {"from": "observation", "value": "exit 0"},
        {"from": "gpt", "value": "It ran."}]})
    trace = read_trace(path)
    assert _roles(trace) == ["user", "user", "assistant"]
    assert "exit 0" in trace.messages[1]["content"]
    assert any("no tool call before it" in n for n in trace.notes)


# -- SWE-agent ---------------------------------------------------------------------------


def _swe_agent_traj() -> dict[str, Any]:
    view = {"function": {"arguments": "{\"command\":\"view\",\"path\":\"/repo\"}",
                         "name": "str_replace_editor"}, "id": "toolu_01V", "type": "function"}
    submit = {"function": {"arguments": "{}", "name": "submit"}, "id": "toolu_02S",
              "type": "function"}
    return {
        "trajectory": [
            {"action": "str_replace_editor view /repo", "observation": "Here's the files",
             "response": "Let me look.", "thought": "Let me look.", "execution_time": 0.1,
             "state": {"working_dir": "/repo"}, "query": [], "extra_info": {}},
        ],
        "history": [
            {"role": "system", "content": "You are a helpful assistant that can interact "
             "with a computer to solve tasks.", "agent": "main",
             "message_type": "system_prompt"},
            {"role": "user", "content": [{"type": "text", "text": "<uploaded_files>\n/repo\n"
                                          "</uploaded_files>\nFix the rounding bug."}],
             "agent": "main", "message_type": "observation"},
            {"role": "assistant", "content": "Let me look.", "thought": "Let me look.",
             "action": "str_replace_editor view /repo", "agent": "main",
             "tool_calls": [view], "message_type": "action", "thinking_blocks": []},
            {"role": "tool", "content": [{"type": "text", "text": "OBSERVATION:\n/repo/a.py"}],
             "agent": "main", "message_type": "observation", "tool_call_ids": ["toolu_01V"]},
            {"role": "assistant", "content": "", "thought": "", "action": "submit",
             "agent": "main", "tool_calls": [submit], "message_type": "action"},
            {"role": "tool", "content": [{"type": "text", "text": "OBSERVATION:\ndiff --git"}],
             "agent": "main", "message_type": "observation", "tool_call_ids": ["toolu_02S"]},
        ],
        "info": {"swe_agent_version": "1.0.1", "exit_status": "submitted",
                 "submission": "diff --git", "model_stats": {"api_calls": 2}},
        "replay_config": "{\"agent\": {}}",
        "environment": "main",
    }


def test_swe_agent_traj_history_with_tool_call_ids(tmp_path: Path) -> None:
    path = _write(tmp_path, "django-1.traj", _swe_agent_traj())
    trace = read_trace(path)
    assert trace.format == "swe-agent"
    assert _roles(trace) == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert trace.messages[1]["content"].endswith("Fix the rounding bug.")
    assert trace.messages[3]["tool_call_id"] == "toolu_01V"
    assert trace.messages[5]["tool_call_id"] == "toolu_02S"
    _assert_paired(trace)
    _check_replays(path, trace)


def test_swe_agent_old_history_and_trajectory_only(tmp_path: Path) -> None:
    old = {"environment": "swe_main", "trajectory": [], "info": {"exit_status": "submitted"},
           "history": [
               {"role": "system", "content": "SETTING: You are an autonomous programmer",
                "agent": "primary"},
               {"role": "user", "content": "Here is a demonstration", "agent": "primary",
                "is_demo": True},
               {"role": "user", "content": "We're currently solving the following issue",
                "agent": "primary"},
               {"role": "assistant", "content": "DISCUSSION\nFirst, reproduce.\n```\nls\n```",
                "thought": "First, reproduce.", "action": "ls\n", "agent": "primary"},
               {"role": "user", "content": "a.py\n(Open file: n/a)", "agent": "primary"},
               {"role": "assistant", "content": "```\nsubmit\n```", "agent": "primary"}]}
    trace = read_trace(_write(tmp_path, "old.traj", old))
    assert trace.format == "swe-agent"
    assert _roles(trace) == ["system", "user", "user", "assistant", "user", "assistant"]
    steps = {"trajectory": [
        {"action": "ls", "observation": "a.py", "response": "Listing.", "thought": ""},
        {"action": "submit", "observation": "diff", "response": "", "thought": "Done."}],
        "info": {}}
    trace = read_trace(_write(tmp_path, "steps.traj", steps))
    assert trace.format == "swe-agent"
    assert _roles(trace) == ["assistant", "user", "assistant", "user"]
    assert trace.messages[2]["content"] == "Done.\nsubmit"
    assert any("rebuilt from the trajectory" in n for n in trace.notes)


# -- tau-bench ---------------------------------------------------------------------------


def test_tau_bench_results_traj(tmp_path: Path) -> None:
    def run(task: int) -> dict[str, Any]:
        return {"task_id": task, "reward": 1.0, "info": {"task": {"user_id": "yusuf"}},
                "trial": 0, "traj": [
                    {"role": "system", "content": "# Retail agent policy\nAuthenticate first."},
                    {"role": "user", "content": f"Hi, I want to exchange order {task}."},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"function": {"arguments": "{\"email\": \"y@r.com\"}",
                                      "name": "find_user_id_by_email"},
                         "id": f"call_{task}a", "type": "function"}], "function_call": None},
                    {"role": "tool", "tool_call_id": f"call_{task}a",
                     "name": "find_user_id_by_email", "content": "yusuf_rossi_9620"},
                    {"role": "assistant", "content": "I found your account.",
                     "tool_calls": None, "function_call": None},
                    {"role": "user", "content": "Thanks ###STOP###"}]}

    path = _write(tmp_path, "tool-calling-gpt-4o-0.1_range_0-2.json", [run(0), run(1)])
    trace = read_trace(path, item=2)
    assert trace.format == "tau-bench" and trace.items == 2
    assert _roles(trace) == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert trace.messages[3]["tool_call_id"] == "call_1a"
    _assert_paired(trace)
    _check_replays(path, read_trace(path))


def test_tau2_bench_simulations(tmp_path: Path) -> None:
    results = {
        "timestamp": "2025-06-10T12:00:00",
        "info": {"environment_info": {"domain_name": "airline", "policy": "...", "tool_defs": {
            "get_user_details": {"type": "function", "function": {
                "name": "get_user_details", "description": "Get a user's details",
                "parameters": {"type": "object",
                               "properties": {"user_id": {"type": "string"}}}}}}}},
        "tasks": [{"id": "0"}],
        "simulations": [{"id": "sim-1", "task_id": "0", "trial": 0, "messages": [
            {"role": "assistant", "content": "Hi! How can I help you today?", "turn_idx": 0,
             "timestamp": "2025-06-10T12:00:00.000001"},
            {"role": "user", "content": "Change my flight.", "turn_idx": 1,
             "timestamp": "2025-06-10T12:00:05.000001"},
            {"role": "assistant", "content": None, "turn_idx": 2, "tool_calls": [
                {"id": "call_x1", "name": "get_user_details",
                 "arguments": {"user_id": "mia_li_3668"}, "requestor": "assistant"}]},
            {"role": "tool", "id": "call_x1", "content": "{\"name\": \"Mia\"}",
             "requestor": "assistant", "error": False, "turn_idx": 3},
            {"role": "assistant", "content": "Which flight, Mia?", "turn_idx": 4},
            {"role": "user", "content": None, "turn_idx": 5, "tool_calls": [
                {"id": "call_u1", "name": "toggle_airplane_mode", "arguments": {},
                 "requestor": "user"}]},
            {"role": "tool", "id": "call_u1", "content": "ok", "requestor": "user",
             "turn_idx": 6},
            {"role": "assistant", "content": "Done.", "turn_idx": 7}]}]}
    path = _write(tmp_path, "results.json", results)
    trace = read_trace(path)
    assert trace.format == "tau-bench"
    assert _roles(trace) == ["assistant", "user", "assistant", "tool", "assistant", "user",
                             "user", "assistant"]
    assert trace.messages[3]["tool_call_id"] == "call_x1"
    assert json.loads(trace.messages[2]["tool_calls"][0]["function"]["arguments"]) == {
        "user_id": "mia_li_3668"}
    assert "toggle_airplane_mode" in trace.messages[5]["content"]  # the user's own tools
    assert trace.tools[0]["function"]["name"] == "get_user_details"
    _assert_paired(trace)
    _check_replays(path, trace)


# -- OpenHands ---------------------------------------------------------------------------


def _tcm(call_id: str, name: str, response: str, arguments: dict[str, Any],
         text: str = "") -> dict[str, Any]:
    return {"function_name": name, "tool_call_id": call_id, "total_calls_in_response": 1,
            "model_response": {"id": response, "model": "claude-sonnet-4", "choices": [
                {"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": text, "tool_calls": [
                        {"index": 1, "id": call_id, "type": "function",
                         "function": {"name": name, "arguments": json.dumps(arguments)}}]}}]}}


def _openhands_events() -> list[dict[str, Any]]:
    bash = {"type": "function", "function": {
        "name": "execute_bash", "description": "Execute a bash command in the terminal.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                       "required": ["command"]}}}
    t = "2025-03-01T10:00:0{}.000000"
    return [
        {"id": 0, "timestamp": t.format(0), "source": "agent", "message": "You are OpenHands",
         "action": "system", "args": {"content": "You are OpenHands agent, a helpful AI "
                                      "assistant.", "tools": [bash],
                                      "openhands_version": "0.38.0",
                                      "agent_class": "CodeActAgent"}},
        {"id": 1, "timestamp": t.format(1), "source": "user", "message": "Fix the test",
         "action": "message", "args": {"content": "Fix the failing test in tests/test_m.py",
                                       "image_urls": None, "wait_for_response": False}},
        {"id": 2, "timestamp": t.format(1), "source": "user", "message": "Retrieving content",
         "action": "recall", "args": {"recall_type": "workspace_context", "query": "Fix",
                                      "thought": ""}},
        {"id": 3, "timestamp": t.format(1), "source": "environment", "message": "",
         "observation": "agent_state_changed", "content": "",
         "extras": {"agent_state": "running", "reason": ""}},
        {"id": 4, "timestamp": t.format(2), "source": "agent",
         "message": "Running command: pytest -q", "action": "run",
         "tool_call_metadata": _tcm("toolu_01", "execute_bash", "chatcmpl-1",
                                    {"command": "pytest -q"}, "Let me run the tests."),
         "args": {"command": "pytest -q", "is_input": False, "thought":
                  "Let me run the tests.", "blocking": False, "hidden": False,
                  "confirmation_state": "confirmed"}},
        {"id": 5, "timestamp": t.format(3), "source": "agent", "cause": 4,
         "message": "Command `pytest -q` executed with exit code 1.", "observation": "run",
         "tool_call_metadata": _tcm("toolu_01", "execute_bash", "chatcmpl-1",
                                    {"command": "pytest -q"}),
         "content": "F\nassert add(2, 2) == 5", "success": False,
         "extras": {"command": "pytest -q", "metadata": {"exit_code": 1}, "hidden": False}},
        # Two calls of one model response, each logged with its observation after it.
        {"id": 6, "timestamp": t.format(4), "source": "agent", "action": "run",
         "message": "Running command: cat m.py",
         "tool_call_metadata": _tcm("toolu_02", "execute_bash", "chatcmpl-2",
                                    {"command": "cat m.py"}, "Read both files."),
         "args": {"command": "cat m.py", "thought": "Read both files."}},
        {"id": 7, "timestamp": t.format(4), "source": "agent", "observation": "run",
         "cause": 6, "tool_call_metadata": _tcm("toolu_02", "execute_bash", "chatcmpl-2", {}),
         "content": "def add(a, b): return a + b", "message": ""},
        {"id": 8, "timestamp": t.format(5), "source": "agent", "action": "run",
         "message": "Running command: cat tests/test_m.py",
         "tool_call_metadata": _tcm("toolu_03", "execute_bash", "chatcmpl-2",
                                    {"command": "cat tests/test_m.py"}),
         "args": {"command": "cat tests/test_m.py", "thought": ""}},
        {"id": 9, "timestamp": t.format(5), "source": "agent", "observation": "run",
         "cause": 8, "tool_call_metadata": _tcm("toolu_03", "execute_bash", "chatcmpl-2", {}),
         "content": "assert add(2, 2) == 5", "message": ""},
        {"id": 10, "timestamp": t.format(6), "source": "agent", "action": "message",
         "message": "The test expects 5.", "args": {
             "content": "The test's expected value is wrong; I fixed it.",
             "image_urls": None, "wait_for_response": True}},
        {"id": 11, "timestamp": t.format(7), "source": "user", "action": "message",
         "message": "Thanks", "args": {"content": "Thanks! Run the suite once more."}},
        {"id": 12, "timestamp": t.format(8), "source": "agent", "action": "finish",
         "message": "Done", "tool_call_metadata": _tcm("toolu_04", "finish", "chatcmpl-3",
                                                       {"message": "Done"}),
         "args": {"final_thought": "Done", "outputs": {}, "thought": ""}},
        {"id": 13, "timestamp": t.format(9), "source": "environment", "message": "",
         "observation": "agent_state_changed", "content": "",
         "extras": {"agent_state": "finished"}},
    ]


def test_openhands_event_log(tmp_path: Path) -> None:
    path = _write(tmp_path, "events.json", _openhands_events())
    trace = read_trace(path)
    assert trace.format == "openhands"
    assert _roles(trace) == ["system", "user", "assistant", "tool", "assistant", "tool",
                             "tool", "assistant", "user", "assistant"]
    assert trace.messages[2]["content"] == "Let me run the tests."
    both = trace.messages[4]["tool_calls"]  # one model response, one assistant message
    assert [c["id"] for c in both] == ["toolu_02", "toolu_03"]
    assert json.loads(both[1]["function"]["arguments"]) == {"command": "cat tests/test_m.py"}
    assert trace.messages[9]["tool_calls"][0]["function"]["name"] == "finish"
    assert [t["function"]["name"] for t in trace.tools] == ["execute_bash"]
    assert trace.origins[3] == "event 5"
    notes = " ".join(trace.notes)
    assert "agent_state_changed" in notes and "recall" in notes
    _assert_paired(trace)
    _check_replays(path, trace)


def test_openhands_output_jsonl_and_old_pairs(tmp_path: Path) -> None:
    events = _openhands_events()
    lines = [{"instance_id": f"repo__repo-{i}", "instruction": "Fix the test",
              "history": events, "metadata": {"agent_class": "CodeActAgent"},
              "test_result": {}} for i in range(2)]
    path = _write(tmp_path, "output.jsonl", lines, jsonl=True)
    trace = read_trace(path, item=2)
    assert trace.format == "openhands" and trace.items == 2
    _assert_paired(trace)
    # The oldest logs pair each action with its observation and have no tool call ids.
    old = {"history": [
        [{"id": 0, "source": "user", "action": "message", "args": {"content": "List files"},
          "message": "List files"},
         {"message": "No observation", "observation": "null", "content": "", "extras": {}}],
        [{"id": 1, "source": "agent", "action": "run",
          "args": {"command": "ls", "thought": "Let me list them."}, "message": "Running ls"},
         {"id": 2, "source": "agent", "observation": "run", "content": "a.py",
          "extras": {"command": "ls", "exit_code": 0}, "message": "ran"}],
        [{"id": 3, "source": "agent", "action": "finish", "args": {"thought": ""},
          "message": "All done"},
         {"message": "No observation", "observation": "null", "content": "", "extras": {}}]]}
    trace = read_trace(_write(tmp_path, "old.json", old))
    assert trace.format == "openhands"
    # What an action ran is a tool call, its observation the result (see
    # tests/test_trace_samples.py for every kind of action)
    assert _roles(trace) == ["user", "assistant", "tool", "assistant"]
    assert trace.messages[1]["content"] == "Let me list them."
    assert trace.messages[1]["tool_calls"][0]["function"] == {
        "name": "run", "arguments": '{"command": "ls"}'}
    assert trace.messages[2]["content"] == "a.py"
    # An observation with no action to answer stays what the model read: user text
    stray = [{"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
             {"id": 1, "source": "agent", "observation": "run", "content": "b.py"}]
    assert read_trace(_write(tmp_path, "stray.json", stray)).messages[1]["content"] == \
        "OBSERVATION:\nb.py"


# -- LongMemEval and LoCoMo --------------------------------------------------------------


def _longmemeval_item(qid: str) -> dict[str, Any]:
    return {
        "question_id": qid, "question_type": "single-session-user",
        "question": "What degree did I graduate with?", "answer": "Business Administration",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s2", "s1"],
        "haystack_dates": ["2023/05/25 (Thu) 10:00", "2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [
            [{"role": "user", "content": "Help me plan a trip to Kyoto."},
             {"role": "assistant", "content": "Sure: temples first."}],
            [{"role": "user", "content": "I graduated with a degree in Business "
              "Administration.", "has_answer": True},
             {"role": "assistant", "content": "Congratulations!"}]],
        "answer_session_ids": ["s1"]}


def test_longmemeval_haystacks_in_date_order(tmp_path: Path) -> None:
    path = _write(tmp_path, "longmemeval_s.json", [_longmemeval_item("q1"),
                                                   _longmemeval_item("q2")])
    trace = read_trace(path)
    assert trace.format == "longmemeval" and trace.items == 2
    assert [m["content"] for m in trace.messages][:2] == [
        "I graduated with a degree in Business Administration.", "Congratulations!"]
    stamps = [m["created_at"] for m in trace.messages if "created_at" in m]
    assert stamps == sorted(stamps) and len(stamps) == 5
    assert stamps[0].startswith("2023-05-20T02:21") and stamps[-1].startswith("2023-05-30T23:40")
    assert trace.messages[-2] == {"role": "user", "content": "What degree did I graduate with?",
                                  "created_at": "2023-05-30T23:40:00+00:00"}
    assert trace.messages[-1]["content"] == "Business Administration"
    _check_replays(path, trace)


def test_locomo_conversation(tmp_path: Path) -> None:
    sample = [{"sample_id": "conv-1", "qa": [{"question": "Where?", "answer": "Paris",
                                             "evidence": ["D1:2"], "category": 4}],
               "conversation": {
                   "speaker_a": "Caroline", "speaker_b": "Melanie",
                   "session_1_date_time": "1:56 pm on 8 May, 2023",
                   "session_1": [
                       {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel!"},
                       {"speaker": "Melanie", "dia_id": "D1:2", "text": "I was in Paris.",
                        "img_url": ["https://example.invalid/p.jpg"],
                        "blip_caption": "a photo of the eiffel tower"}],
                   "session_2_date_time": "10:37 am on 27 June, 2023",
                   "session_2": [
                       {"speaker": "Caroline", "dia_id": "D2:1", "text": "How was it?"},
                       {"speaker": "Melanie", "dia_id": "D2:2", "text": "Lovely."}],
                   "session_3_date_time": "1:14 pm on 10 July, 2023"}}]
    path = _write(tmp_path, "locomo10.json", sample)
    trace = read_trace(path)
    assert trace.format == "locomo"
    # the conversation, then its question (an hour after the last turn) and the answer
    assert _roles(trace) == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert trace.messages[1]["content"] == (
        "I was in Paris. [shares a photo: a photo of the eiffel tower]")
    assert trace.messages[0]["created_at"] == "2023-05-08T13:56:00+00:00"
    assert trace.messages[2]["created_at"] == "2023-06-27T10:37:00+00:00"
    assert trace.messages[4] == {"role": "user", "content": "Where?",
                                 "created_at": "2023-06-27T11:38:00+00:00"}
    assert trace.origins[1] == "D1:2"
    assert [(q.message, q.evidence) for q in trace.questions] == [
        (4, (("D1:2", trace.messages[1]["content"]),))]
    _check_replays(path, trace)
    real = read_trace(shared_data("locomo", "26.json"))
    assert real.format == "locomo" and len(real.messages) > 300


# -- detection, forcing, files with nothing to replay ------------------------------------


def test_format_is_forced_by_name(tmp_path: Path) -> None:
    # A plain-text conversation reads the same as OpenAI or Anthropic messages.
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    path = _write(tmp_path, "plain.json", msgs)
    assert read_trace(path).format == "openai"
    assert read_trace(path, format="anthropic").messages == read_trace(path).messages
    data = _replay_json(path, "--format", "anthropic")
    assert data["format"] == "anthropic" and data["totals"]["requests"] == 1
    with pytest.raises(InvalidFileError, match="is not a longmemeval file"):
        read_trace(path, format="longmemeval")
    with pytest.raises(InvalidFileError, match="unknown trace format 'yaml'"):
        parse_trace(msgs, format="yaml")


@pytest.mark.parametrize(("name", "text"), [
    ("empty-object.json", "{}"),
    ("empty-list.json", "[]"),
    ("other.json", json.dumps({"rows": [1, 2, 3]})),
    ("exit-only.json", json.dumps([{"role": "exit", "content": "diff"}])),
    ("numbers.jsonl", "1\n2\n3\n"),
    ("system-only.json", json.dumps({"messages": [{"role": "system", "content": "x"}]})),
    ("empty-turns.json", json.dumps({"conversations": [{"from": "human", "value": ""}]})),
    ("bookkeeping.json", json.dumps([{"id": 1, "source": "environment",
                                      "observation": "agent_state_changed", "content": ""}])),
])
def test_no_chat_message_exits_non_zero_naming_the_formats(
    tmp_path: Path, name: str, text: str,
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = CliRunner(env={"COLUMNS": "400"}).invoke(main, ["replay", str(path)])
    assert result.exit_code == 2, result.output
    assert "InvalidFileError" in result.output and "no chat message" in result.output
    for known in FORMAT_NAMES:
        assert known in result.output


def test_a_result_naming_no_call_is_an_error_naming_where(tmp_path: Path) -> None:
    events = [{"role": "user", "content": "go"},
              {"role": "assistant", "content": "", "tool_calls": [
                  {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
              {"role": "tool", "tool_call_id": "a", "content": "one"},
              {"role": "tool", "tool_call_id": "a", "content": "twice"}]
    with pytest.raises(InvalidFileError, match=r"message 4: .*'a' answers no tool call"):
        parse_trace(events)


def test_ids_reused_every_turn_are_kept_apart(tmp_path: Path) -> None:
    def turn(n: int) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_0", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"n": n})}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": f"out {n}"}]
    trace = parse_trace([{"role": "user", "content": "go"}, *turn(1), *turn(2), *turn(3)])
    _assert_paired(trace)
    assert [m["tool_call_id"] for m in trace.messages if m["role"] == "tool"] == [
        "call_0", "call_1", "call_2"]
    path = _write(tmp_path, "reused.json", [{"role": "user", "content": "go"}, *turn(1),
                                            *turn(2)])
    assert _replay_json(path)["totals"]["requests"] == 2


def test_unknown_model_warns_and_replays(tmp_path: Path) -> None:
    result = CliRunner(env={"COLUMNS": "400"}).invoke(
        main, ["replay", str(EXAMPLE_TRACE), "--model", "acme-llm-7", "--json"])
    assert result.exit_code == 0, result.output
    assert "warning: unknown model 'acme-llm-7'" in result.stderr
    assert "gpt-4o" in result.stderr  # it names the models it knows
    assert json.loads(result.stdout)["totals"]["requests"] == 13
    for known in ("gpt-4o-mini", "claude-sonnet-4-20250514", "openai/gpt-4.1"):
        quiet = CliRunner().invoke(main, ["replay", str(EXAMPLE_TRACE), "--model", known,
                                          "--json"])
        assert quiet.exit_code == 0 and "unknown model" not in quiet.stderr, quiet.stderr


# -- any damage to a file of any format: a transcript that keeps the rules, or one error --


_HAND_WRITTEN = Path(__file__).resolve().parent / "trace_samples"


def _hand_written(name: str) -> Any:
    path = _HAND_WRITTEN / name
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return json.loads(path.read_text())


def _samples() -> dict[str, Any]:
    return {
        "openhands-sdk": _hand_written("openhands--output-sdk.jsonl"),
        "openhands-v0": _hand_written("openhands--output-v0.jsonl"),
        "msc": _hand_written("msc--session.jsonl"),
        "kdconv": _hand_written("kdconv--dialogues.json"),
        "locomo": _hand_written("locomo--conversation.json"),
        "nested": _hand_written("openai--nested-deep.json"),
        "openai": json.loads(EXAMPLE_TRACE.read_text())["messages"][:8],
        "sharegpt": SHAREGPT,
        "swe-agent": _swe_agent_traj(),
        "openhands": _openhands_events(),
        "longmemeval": [_longmemeval_item("q1")],
        "tau2": {"simulations": [{"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "name": "f", "arguments": {"a": 1}}]},
            {"role": "tool", "id": "c1", "content": "ok"},
            {"role": "assistant", "content": "done"}]}]},
        "anthropic": {"system": "s", "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"c": "ls"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": "a.py"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]},
    }


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*prefix, i))
    return out


_DELETE = object()


def _damaged(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return value if new is _DELETE else new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        copy = dict(value)
        if not rest and new is _DELETE:
            copy.pop(head, None)
        else:
            copy[head] = _damaged(value[head], rest, new)
        return copy
    copy_list = list(value)
    if not rest and new is _DELETE:
        del copy_list[head]
    else:
        copy_list[head] = _damaged(value[head], rest, new)
    return copy_list


_JUNK = st.one_of(
    st.just(_DELETE), st.none(), st.booleans(), st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "user", "assistant", "tool", "call_0", "t1", "c1", "toolu_01",
                     "2023/05/20 (Sat) 02:21", "not a date", "{\"a\": 1}", "[1, 2]"]),
    st.lists(st.sampled_from([None, 1, "x", {"type": "text", "text": "t"},
                              {"type": "tool_use"}, ["nested"]]), max_size=3),
    st.dictionaries(st.sampled_from(["role", "type", "text", "content", "id", "name"]),
                    st.sampled_from([None, 1, "x", "user", [], {}]), max_size=3),
)


def _draw_damaged(data: st.DataObject) -> tuple[Any, str | None]:
    name = data.draw(st.sampled_from(sorted(_samples())))
    value = _samples()[name]
    for _ in range(data.draw(st.integers(1, 4))):
        paths = _paths(value)
        path = data.draw(st.sampled_from(paths))
        value = _damaged(value, path, data.draw(_JUNK))
    return value, data.draw(st.sampled_from([None, *FORMAT_NAMES]))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_damaged_files_give_a_paired_transcript_or_one_error(data: st.DataObject) -> None:
    from memci.messages import coerce

    value, forced = _draw_damaged(data)
    try:
        trace = parse_trace(value, format=forced)
    except InvalidFileError:
        return
    assert trace.format in FORMAT_NAMES and len(trace.origins) == len(trace.messages)
    _assert_paired(trace)
    for message in trace.messages:
        coerce(message)  # what memci stores: never refused for the reader's doing


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_damaged_files_replay_whole_or_stop_with_one_error(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    value, forced = _draw_damaged(data)
    path = tmp_path_factory.mktemp("damaged") / "trace.json"
    path.write_text(json.dumps(value), encoding="utf-8")
    args = ["replay", str(path), "--json", *(("--format", forced) if forced else ())]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        assert "InvalidFileError" in result.output
    else:
        assert json.loads(result.stdout)["messages"] > 0


def test_openai_responses_items(tmp_path: Path) -> None:
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris and Rome?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_weather",
         "arguments": "{\"city\": \"Paris\"}", "status": "completed"},
        {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "get_weather",
         "arguments": "{\"city\": \"Rome\"}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_a", "output": "18C"},
        {"type": "function_call_output", "call_id": "call_b", "output": "24C"},
        {"role": "assistant", "type": "message", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "18C and 24C.", "annotations": []}]},
        {"role": "user", "content": "And Oslo?"},
        {"type": "function_call", "call_id": "call_c", "name": "get_weather",
         "arguments": "{\"city\": \"Oslo\"}"},
        {"type": "function_call_output", "call_id": "call_c", "output": "3C"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "3C."}]},
    ]
    path = _write(tmp_path, "agents_session.json", items)
    trace = read_trace(path)
    assert trace.format == "openai"
    assert _roles(trace) == ["user", "assistant", "tool", "tool", "assistant", "user",
                             "assistant", "tool", "assistant"]
    assert [c["id"] for c in trace.messages[1]["tool_calls"]] == ["call_a", "call_b"]
    assert trace.messages[0]["content"] == "Weather in Paris and Rome?"
    assert any("reasoning" in n for n in trace.notes)
    _assert_paired(trace)
    _check_replays(path, trace)


def test_openhands_ids_and_causes_of_any_type_never_break_the_reader() -> None:
    events = [{"id": 0, "source": "user", "action": "message", "args": {"content": "go"}},
              {"id": {"odd": 1}, "source": "agent", "action": "run",
               "args": {"command": "ls"}},
              {"id": 2, "source": "agent", "observation": "run", "cause": ["odd"],
               "content": "a.py"}]
    trace = parse_trace(events)
    assert _roles(trace) == ["user", "assistant", "tool"]
    assert trace.messages[2]["content"] == "a.py"  # the oldest open call: the only one
