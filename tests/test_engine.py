"""Engine and Session: settings, bad input, and the budgeted build of the walking skeleton."""

from __future__ import annotations

import io
import itertools
import json
import random
import re
import sqlite3
from dataclasses import replace
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

import memci
from memci.messages import MISSING_RESULT


def _call(cid: str, name: str = "bash", args: str = '{"command": "ls"}') -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def _conversation(rng: random.Random, turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    n = 0
    for t in range(turns):
        out.append({"role": "user", "content": f"question {t} " + "word " * rng.randint(1, 40)})
        for _ in range(rng.randint(0, 3)):
            calls = [_call(f"c{n + k}") for k in range(rng.randint(1, 3))]
            n += len(calls)
            out.append({"role": "assistant", "content": rng.choice([None, "let me look"]),
                        "tool_calls": calls})
            for c in calls:
                out.append({"role": "tool", "tool_call_id": c["id"],
                            "content": "output line\n" * rng.randint(1, 60)})
        out.append({"role": "assistant", "content": "answer " * rng.randint(1, 30)})
    return out


def assert_openai_valid(messages: list[dict[str, Any]]) -> None:
    """Every tool message answers a call of the assistant message just before its run."""
    open_calls: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_calls, m
            open_calls.discard(m["tool_call_id"])
        else:
            assert not open_calls, f"unanswered calls {open_calls} before {m}"
            open_calls = {c["id"] for c in m.get("tool_calls") or []}
    assert not open_calls


def assert_anthropic_valid(payload: dict[str, Any]) -> None:
    messages = payload["messages"]
    if not messages:
        return
    assert messages[0]["role"] == "user"
    for a, b in itertools.pairwise(messages):
        assert a["role"] != b["role"]
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], list) else []
        uses = {b["id"] for b in blocks if b["type"] == "tool_use"}
        if uses:
            nxt = messages[i + 1]["content"]
            assert isinstance(nxt, list)
            assert {b["tool_use_id"] for b in nxt if b["type"] == "tool_result"} == uses
        results = [b for b in blocks if b["type"] == "tool_result"]
        if results:
            prev = messages[i - 1]["content"]
            asked = {b["id"] for b in prev if b["type"] == "tool_use"}
            assert {b["tool_use_id"] for b in results} <= asked
            kinds = [b["type"] for b in blocks]
            assert kinds == sorted(kinds, key=lambda k: k != "tool_result")
        for b in blocks:
            if b["type"] == "text":
                assert b["text"]


def test_defaults_per_model_and_overrides(engine: memci.Engine) -> None:
    assert engine.session("a", model="gpt-4o-mini").settings.context_window == 128_000
    assert engine.session("b", model="claude-sonnet-4-5").settings.context_window == 200_000
    c = engine.session("c", model="claude-sonnet-4-5")
    assert c.settings.provider == "anthropic"
    assert engine.session("d", model="deepseek-chat").settings.context_window == 64_000
    assert engine.session("e", model="qwen-plus").settings.context_window == 131_072
    s = engine.session("f", model="gpt-4o", context_window=10_000, reserve_ratio=0.5)
    assert s.settings.budget == 5_000
    assert engine.session("g", max_tokens=1000).settings.budget == 1000
    assert engine.session("h").settings.tokenizer in ("estimate", "cl100k_base", "o200k_base")


@pytest.mark.parametrize("bad", [
    {"reserve_ratio": 1.5}, {"context_window": 0}, {"strategy": "random"},
    {"no_such_setting": 1}, {"strategy": "sliding_window"}, {"max_tokens": -1},
])
def test_bad_settings_raise_config_error(engine: memci.Engine, bad: dict[str, Any]) -> None:
    with pytest.raises(memci.ConfigError):
        engine.session("x", **bad)


def _deep_value(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"k": value}
    return value


class _FailingDump:
    """An SDK-like object whose ``model_dump`` raises."""

    def model_dump(self) -> dict[str, Any]:
        raise RuntimeError("validation failed")


@pytest.mark.parametrize(("message", "error"), [
    ({"role": "wizard", "content": "x"}, memci.UnknownRoleError),
    ({"role": "tool", "tool_call_id": "missing", "content": "x"}, memci.OrphanToolResultError),
    ({"role": "assistant", "tool_calls": [_call("c", args="{not json")]},
     memci.InvalidToolArgumentsError),
    ({"role": "assistant", "tool_calls": [_call("c", args="[1, 2]")]},
     memci.InvalidToolArgumentsError),
    ({"role": "user", "content": "bad \ud800 surrogate"}, memci.InvalidTextError),
    ({"role": "user", "content": b"\xff\xfe invalid"}, memci.InvalidTextError),
    ({"role": "user", "content": "x" * 2048}, memci.MessageTooLargeError),
    ("just a string", memci.InvalidMessageError),
    (["a", "list"], memci.InvalidMessageError),
    ({"role": "user", "content": "x", "created_at": "yesterday-ish"},
     memci.InvalidTimestampError),
    ({"role": "user", "content": 42}, memci.InvalidMessageError),
    # issue 11 §4/§5: each of these used to be stored, then break the session
    ({"role": "user", "content": "x", "created_at": "0001-01-01T00:00:00+01:00"},
     memci.InvalidTimestampError),
    ({"role": "user", "content": "x", "created_at": "9999-12-31T23:30:00-01:00"},
     memci.InvalidTimestampError),
    (replace(memci.Message.user("x"), tokens="many"), memci.InvalidMessageError),
    (replace(memci.Message.user("x"), parts=None), memci.InvalidMessageError),
    (replace(memci.Message.user("x"), created_at="str"), memci.InvalidTimestampError),
    (memci.Message.tool("c1", "x", is_error="yes"), memci.InvalidMessageError),
    ({"role": "user", "content": "x", "metadata": {"m": "y" * 1100}},
     memci.MessageTooLargeError),
    ({"role": "user", "content": "x", "metadata": _deep_value(100_000)},
     memci.InvalidMessageError),
    ({"role": "assistant", "content": [{"type": "tool_use", "id": "u", "name": "f",
                                        "input": _deep_value(100_000)}]},
     memci.InvalidToolArgumentsError),
    ({"role": "assistant", "tool_calls": [_call("c", args='{"q": "\\ud800"}')]},
     memci.InvalidTextError),
    (_FailingDump(), memci.InvalidMessageError),
    # issue 26: an empty message was stored, then to_anthropic() sent no message at all
    ({"role": "user"}, memci.InvalidMessageError),
    ({"role": "assistant", "content": ""}, memci.InvalidMessageError),
    ({"type": "message", "role": "user", "content": []}, memci.InvalidMessageError),
    (memci.Message("user", ()), memci.InvalidMessageError),
])
def test_bad_input_raises_and_stores_nothing(
    engine: memci.Engine, message: Any, error: type[Exception]
) -> None:
    s = engine.session("s", max_message_bytes=1024)
    s.add({"role": "user", "content": "kept"})
    with pytest.raises(error) as info:
        s.add(message)
    assert isinstance(info.value, memci.MemciError)
    assert str(info.value)  # says what to fix
    with pytest.raises(error):
        s.add_many([{"role": "user", "content": "first of batch"}, message])
    assert [m.content for m in s.messages()] == ["kept"]
    # and the session goes on: it builds, takes the next message and reopens
    s.add({"role": "assistant", "content": "next"})
    assert [m.content for m in s.build().messages] == ["kept", "next"]
    assert engine.session("s").count() == 2


def test_system_prompt_is_the_newest_system_message(tmp_path: Path) -> None:
    with memci.Engine.open(tmp_path / "m.db") as one, memci.Engine.open(tmp_path / "m.db") as two:
        s = one.session("s")
        assert s.system_prompt is None
        s.set_system("You are terse.")
        s.add({"role": "user", "content": "hi"})
        s.set_system("You are kind.")
        assert s.system_prompt == "You are kind."
        two.session("s").set_system("Answer in French.")  # another engine appends
        assert s.system_prompt == "Answer in French."


def test_build_keeps_system_and_newest_that_fit(engine: memci.Engine) -> None:
    s = engine.session("s", strategy="oldest")
    s.set_system("You are terse.")
    for i in range(200):
        s.add({"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 20})
    ctx = s.build(budget=1500)
    assert ctx.messages[0].role == "system" and ctx.messages[0].content == "You are terse."
    assert ctx.messages[-1].content.startswith("message 199")
    assert ctx.stats.total_tokens <= 1500
    assert ctx.stats.budget == 1500
    seqs = [m.seq for m in ctx.messages[1:]]
    assert seqs == list(range(seqs[0], 202)) and seqs[0] > 2  # a contiguous newest suffix
    # one more message would not have fitted
    dropped = s.messages()[seqs[0] - 2]
    assert ctx.stats.total_tokens + (dropped.tokens or 0) > 1500
    assert ctx.stats.full_tokens > ctx.stats.total_tokens
    assert set(ctx.stats.sections) >= {"system"}
    assert ctx.stats.build_ms >= 0


@pytest.mark.parametrize("seed", range(6))
def test_build_never_splits_tool_calls(engine: memci.Engine, seed: int) -> None:
    rng = random.Random(seed)
    s = engine.session(f"s{seed}", strategy="oldest")
    s.set_system("sys")
    s.add_many(_conversation(rng, 25))
    tokenizer = memci.tokens.get_tokenizer(s.settings.tokenizer)
    for budget in (60, 150, 400, 1000, 3000, 100_000):
        ctx = s.build(budget=budget)
        counted = sum(tokenizer.count_message(m) for m in ctx.messages) + 3
        assert counted + ctx.stats.sections["tools"] == ctx.stats.total_tokens
        assert ctx.stats.total_tokens <= budget or len(ctx.messages) <= 4
        payload = ctx.to_openai()
        assert_openai_valid(payload["messages"])
        assert_anthropic_valid(ctx.to_anthropic())


def test_oversized_tool_output_is_shown_as_head_summary_and_pointer(
    engine: memci.Engine,
) -> None:
    s = engine.session("s", strategy="oldest")
    s.add({"role": "user", "content": "please read the log"})
    s.add({"role": "assistant", "content": None, "tool_calls": [_call("c1")]})
    huge = "".join(f"line {i}: something happened here\n" for i in range(5000))
    s.add({"role": "tool", "tool_call_id": "c1", "content": huge})
    ctx = s.build(budget=3000)
    assert ctx.stats.total_tokens <= 3000 and ctx.stats.recipe == "tool_loop"
    tool = ctx.messages[-1]
    assert tool.role == "tool" and tool.content.startswith("[tool result · bash · call c1")
    assert "line 0: something happened" in tool.content and "artifact_get(" in tool.content
    (pointer,) = re.findall(r"artifact:([0-9a-f]{12})", tool.content.split("\n")[0])
    got = s.call_tool("artifact_get", {"id": pointer, "offset": 0, "length": len(huge)})
    assert got == huge[:16_000]  # the tool reads at most 16,000 characters at a time
    assert s.messages()[-1].content == huge  # the store is untouched


def test_oversized_user_message_is_cut_to_fit(engine: memci.Engine) -> None:
    s = engine.session("s", strategy="oldest")
    huge = "".join(f"line {i}: something happened here\n" for i in range(5000))
    s.add({"role": "user", "content": huge})
    ctx = s.build(budget=800)
    assert ctx.stats.total_tokens <= 800
    shown = ctx.messages[-1].content
    assert "characters cut" in shown and shown.startswith("line 0:")
    assert shown.rstrip().endswith("line 4999: something happened here")
    assert s.messages()[-1].content == huge


def test_an_unanswered_call_stays_in_the_request_with_a_stand_in_result(
    engine: memci.Engine,
) -> None:
    s = engine.session("s", strategy="oldest")
    s.add({"role": "user", "content": "go"})
    s.add({"role": "assistant", "content": "two calls",
           "tool_calls": [_call("a1"), _call("a2")]})
    s.add({"role": "tool", "tool_call_id": "a1", "content": "done"})
    payload = s.build().to_openai()
    assert_openai_valid(payload["messages"])
    assert [c["id"] for c in payload["messages"][-3]["tool_calls"]] == ["a1", "a2"]
    assert payload["messages"][-1] == {"role": "tool", "tool_call_id": "a2",
                                       "content": MISSING_RESULT}
    assert len(s.messages()) == 3  # the stand-in is in the request only


def test_metadata_never_sent(engine: memci.Engine) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "hi", "metadata": {"secret": "tok-123"}})
    s.add({"role": "assistant", "content": "hello", "metadata": {"secret": "tok-456"}})
    ctx = s.build()
    text = json.dumps(ctx.to_openai()) + json.dumps(ctx.to_anthropic())
    assert "tok-123" not in text and "tok-456" not in text and "metadata" not in text


def test_other_process_appends_are_seen_by_build(db_path: Any) -> None:
    with memci.Engine.open(db_path) as one, memci.Engine.open(db_path) as two:
        a = one.session("s")
        b = two.session("s")
        a.add({"role": "user", "content": "from one"})
        b.add({"role": "assistant", "content": "from two"})
        a.add({"role": "user", "content": "one again"})
        assert [m.content for m in a.build().messages] == ["from one", "from two", "one again"]
        assert [m.seq for m in b.build().messages] == [1, 2, 3]


def test_stats_count_builds_and_savings(engine: memci.Engine) -> None:
    s = engine.session("s", strategy="oldest")
    for _ in range(50):
        s.add({"role": "user", "content": "x " * 100})
        s.add({"role": "assistant", "content": "y " * 100})
    s.build(budget=500)
    s.build(budget=500)
    st = s.stats()
    assert st.builds == 2 and st.messages == 100
    assert st.tokens_saved > 0 and st.mean_build_ms > 0


def test_bad_embedder_setting_fails_at_open_not_after_storing(
    db_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCI_EMBEDDER", "bogus")
    with pytest.raises(memci.ConfigError, match="MEMCI_EMBEDDER"):
        memci.Engine.open(db_path)


# -- issue 11 §4: a system prompt may change at any time ----------------------------------


@pytest.mark.parametrize("strategy", ["paged", "oldest", "sliding_window", "summarize"])
def test_system_prompt_changing_mid_page_keeps_the_session_working(
    db_path: Path, strategy: str
) -> None:
    """A system message between a user message and its answer is not part of any page."""
    with memci.Engine.open(db_path) as engine:
        extra = {"max_messages": 20} if strategy == "sliding_window" else {}
        s = engine.session("s", strategy=strategy, **extra)
        s.add({"role": "user", "content": "hi"})
        s.set_system("S")
        s.add({"role": "assistant", "content": "hello"})
        ctx = s.build()
        assert [m.content for m in ctx.messages if m.role != "system"] == ["hi", "hello"]
        assert ctx.messages[0].content == "S"
        # Pages keep growing, archive and come back with system messages inside their span.
        for turn in range(40):
            s.add({"role": "user", "content": f"question {turn} " + "word " * 60})
            s.set_system(f"S{turn}")
            s.add({"role": "assistant", "content": f"answer {turn} " + "word " * 60})
            s.build(budget=1500)
        if strategy == "paged":
            assert s.stats().archived > 0
            assert s.call_tool("recall_page", {"index": 1}).startswith("Page 1 (")
            assert "hi" in [m.content for m in s.build(budget=1500).messages]
    with memci.Engine.open(db_path) as engine:
        s = engine.session("s")
        ctx = s.build(budget=1500)
        assert ctx.messages[0].content == "S39"
        assert sum(m.content == "S39" for m in ctx.messages) == 1
        s.add({"role": "user", "content": "after reopen"})
        assert ctx.stats.total_tokens <= 1500
        assert s.build().messages[-1].content == "after reopen"
        out = io.StringIO()
        assert s.export_jsonl(out) == s.count() == 124


def test_rows_older_versions_wrote_are_always_loadable(db_path: Path) -> None:
    """Rows an older memci stored without checking every field: count, build, export,
    search and reopen all work, and new messages can still be added."""
    with memci.Engine.open(db_path) as engine:
        s = engine.session("s")
        s.add({"role": "user", "content": "alpha question", "metadata": {"k": "v"}})
        s.add({"role": "assistant", "content": "", "tool_calls": [
            _call("c1", args='{"q": "beta"}')]})
        s.add({"role": "tool", "tool_call_id": "c1", "content": "gamma result"})
        s.add({"role": "user", "content": [
            {"type": "text", "text": "delta"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]})
        s.add({"role": "assistant", "content": "epsilon answer"})
        s.add({"role": "user", "content": "zeta"})
        s.add({"role": "assistant", "content": "eta"})
        sid = s.record.id
    old_rows = {  # seq: what an older version could leave in the row
        1: {"tokens": "many", "created_at": "0001-01-01T00:00:00+01:00",
            "metadata": "not json"},
        2: {"tokens": -5, "created_at": "9999-12-31T23:59:59-01:00",
            "parts": json.dumps([{"kind": "tool_call", "id": "c1", "name": "bash",
                                  "arguments": '{"q": "\\ud800 beta"}'}])},
        3: {"tokens": 3.5, "created_at": "garbage",
            "parts": json.dumps([{"kind": "tool_result", "call_id": "c1",
                                  "content": "gamma result", "is_error": "yes"}])},
        4: {"created_at": "2026-01-01T00:00:00", "metadata": "[1, 2]",
            "parts": json.dumps([{"kind": "text", "text": "delta"},
                                 {"kind": "image", "url": "https://example.com/a.png",
                                  "media_type": 5, "detail": ["x"]}])},
    }
    db = sqlite3.connect(db_path)
    with db:
        for seq, values in old_rows.items():
            for column, value in values.items():
                db.execute(f"UPDATE messages SET {column} = ? WHERE session_id = ? AND seq = ?",
                           (value, sid, seq))
        db.execute("DELETE FROM memory_docs")  # the index is rebuilt from these rows
        db.execute("DELETE FROM message_views")  # so are the tool results' views
    db.close()
    for _ in range(2):  # and again after a reopen
        with memci.Engine.open(db_path) as engine:
            s = engine.session("s")
            assert s.count() == len(s.messages()) >= 7
            stored = s.messages()
            assert all(isinstance(m.tokens, int) and m.tokens >= 0 for m in stored)
            assert stored[0].metadata == {"unreadable": "not json"}
            assert stored[2].tool_result is not None and stored[2].tool_result.is_error
            assert stored[2].created_at is None
            for m in stored:
                if m.created_at is not None:
                    m.created_at.astimezone(UTC)
            for recipe in ("chat", "tool_loop", "auto"):
                for budget in (None, 300, 60):
                    ctx = s.build(recipe=recipe, budget=budget)
                    assert_openai_valid(ctx.to_openai()["messages"])
                    assert_anthropic_valid(ctx.to_anthropic())
            out = io.StringIO()
            assert s.export_jsonl(out) == s.count()
            assert s.search("epsilon")[0].message.content == "epsilon answer"
            assert s.search("beta", scope="user")
            assert "no memory found" not in s.call_tool(
                "search_memory", {"query": "gamma", "since": "2000-01-01"})
            s.add({"role": "user", "content": "theta"})
            assert s.build().messages[-1].content == "theta"
    with memci.Engine.open(db_path) as engine:
        copy = engine.import_jsonl(io.StringIO(out.getvalue()), name="copy")
        assert copy.count() == 8


def test_bad_memci_messages_store_nothing_and_the_session_reopens(db_path: Path) -> None:
    """issue 11 §4: Message objects with bad fields used to commit and then raise."""
    bad = [
        replace(memci.Message.tool("c1", "out"), tokens="many"),
        memci.Message.tool("c1", "out", is_error="yes"),  # type: ignore[arg-type]
        replace(memci.Message.tool("c1", "out"), parts=None),
        replace(memci.Message.tool("c1", "out"), created_at="str"),
        replace(memci.Message.tool("c1", "out"), metadata={"m": _deep_value(100_000)}),
    ]
    with memci.Engine.open(db_path) as engine:
        s = engine.session("s")
        s.add({"role": "user", "content": "run it"})
        s.add({"role": "assistant", "tool_calls": [_call("c1")]})  # the call stays open
        for message in bad:
            with pytest.raises(memci.InvalidMessageError):
                s.add(message)
            assert s.count() == 2
        s.add(memci.Message.tool("c1", "out", is_error=True))  # the call is still open
    with memci.Engine.open(db_path) as engine:
        s = engine.session("s")
        assert [m.role for m in s.messages()] == ["user", "assistant", "tool"]
        assert s.build().messages[-1].role == "tool"



def test_over_rest_bad_input_is_a_4xx_and_stores_nothing(engine: memci.Engine) -> None:
    """issue 11 §4/§5 over REST: no 500, no duplicate on retry, refusals as `error:`."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from memci.server import ServerConfig, create_app

    # Without keys the server answers loopback hosts only (DNS rebinding).
    with TestClient(create_app(engine, ServerConfig(auth=False)),
                    base_url="http://127.0.0.1") as client:
        url = "/v1/sessions/s"
        for body in ({"role": "user", "content": "hi"}, {"role": "system", "content": "S"},
                     {"role": "assistant", "content": "hello"}):
            assert client.post(f"{url}/messages", json=body).status_code == 200
        assert client.post(f"{url}/context", json={}).status_code == 200
        late = {"role": "user", "content": "x", "created_at": "0001-01-01T00:00:00+01:00"}
        for _ in range(3):
            answer = client.post(f"{url}/messages", json=late)
            assert 400 <= answer.status_code < 500, answer.text
        assert len(client.get(f"{url}/messages").json()["messages"]) == 3
        for arguments in ({"index": "²"}, {"index": "9" * 5000}, {"index": 2**70}):
            answer = client.post(f"{url}/tools/recall_page", json=arguments)
            assert answer.status_code == 200 and answer.json()["is_error"], answer.text
        assert client.post(f"{url}/context", json={}).status_code == 200


_EVERY_TOOL = ("recall_page", "search_memory", "pin_add", "pin_remove", "pin_update",
               "pin_list", "plan_add", "plan_done", "plan_remove", "plan_list", "notebook_add",
               "artifact_get", "file_snippet", "grep")
_DEEP_TEXT = "[" * 100_000 + "]" * 100_000
# Wrong for any argument: not JSON memci can keep.
_BAD_VALUES: list[Any] = [2**70, -(2**70), float("nan"), float("inf"), "a\ud800",
                          _deep_value(100_000), [_deep_value(70)], {"x": [1], "y": "\udfff"}]
# Wrong for an argument of the schema's type.
_BAD_FOR_TYPE: dict[str, list[Any]] = {
    "integer": ["²", "٣", "1.5", "9" * 5000, "9" * 19, 1.5, True, "one", [1], {"x": 1}, ""],
    "string": [5, 1.5, True, ["x"], {"x": 1}],
    "boolean": ["yes", "true", 1, [True]],
    "array": ["abc", 5, {"x": 1}, ["²"], [2.5], [True]],
}
_BAD_ARGUMENTS: list[Any] = [5, 2.5, True, [1], ["index", 1], b"\xff", _DEEP_TEXT,
                             '{"index": ' + "9" * 5000 + "}", '{"a": "\\ud800"}',
                             '{"a": 1e999}', "not json", "[]", '"text"', {1: 2},
                             {"unknown": 1}, _deep_value(100_000)]


def _every_tool_session(engine: memci.Engine, tmp_path: Path) -> memci.Session:
    s = engine.session("tools", tools=list(_EVERY_TOOL), file_roots=[str(tmp_path)])
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    s.add({"role": "user", "content": "hello"})
    s.add({"role": "assistant", "tool_calls": [_call("c1")]})
    s.add({"role": "tool", "tool_call_id": "c1", "content": "line\n" * 50})
    return s


@pytest.mark.parametrize("tool", _EVERY_TOOL)
def test_every_tool_answers_bad_arguments_with_error(
    engine: memci.Engine, tmp_path: Path, tool: str
) -> None:
    """issue 11 §5: arguments of every kind of wrongness, for every tool: `error: …`."""
    s = _every_tool_session(engine, tmp_path)
    schema = next(t for t in s.tool_specs() if t.name == tool).parameters
    attempts: list[Any] = list(_BAD_ARGUMENTS)
    for name, rule in schema["properties"].items():
        wrong = _BAD_VALUES + _BAD_FOR_TYPE[rule["type"]]
        attempts += [{name: value} for value in wrong]
    for arguments in attempts:
        answer = s.call_tool(tool, arguments)
        assert answer.startswith("error: "), (tool, repr(arguments)[:80], answer)
        answer.encode("utf-8")  # the answer itself is valid text
    assert s.count() == 3 and s.build().messages  # the session is as it was


@pytest.mark.parametrize("arguments", [{"index": 1}, {"index": "1"}, {"index": " 1 "},
                                        {"index": 1.0}, '{"index": "1"}', b'{"index": 1}',
                                        {"index": "+1"}])
def test_quoted_and_float_whole_numbers_are_read(
    engine: memci.Engine, arguments: Any
) -> None:
    s = engine.session("s")
    s.add({"role": "user", "content": "hi"})
    assert s.call_tool("recall_page", arguments).startswith("Page 1 is already")


def test_tool_name_that_is_not_offered_raises(engine: memci.Engine) -> None:
    s = engine.session("s")
    for name in ("nope", 5, None):
        with pytest.raises(memci.InvalidInputError, match="not one of memci's tools"):
            s.call_tool(name, {})  # type: ignore[arg-type]


def test_counts_over_the_maximum_are_capped_and_under_the_minimum_refused(
    engine: memci.Engine, tmp_path: Path
) -> None:
    s = _every_tool_session(engine, tmp_path)
    assert "results for 'hello'" in s.call_tool("search_memory", {"query": "hello", "k": 500})
    assert s.call_tool("search_memory", {"query": "hello", "k": 0}) == (
        "error: 'k' must be at least 1, not 0")
    assert s.call_tool("file_snippet", {"path": "a.txt", "length": 10_000}).count("\n") <= 2
    assert s.call_tool("recall_page", {"index": -(2**62)}).startswith("error: 'index' must")


@pytest.mark.parametrize("bad", [5, None, 2.5, object()])
def test_add_many_of_what_is_not_a_list_is_a_typed_error(engine: memci.Engine, bad: Any) -> None:
    s = engine.session("s")
    with pytest.raises(memci.InvalidMessageError, match="add_many takes a list"):
        s.add_many(bad)
    assert s.count() == 0


@pytest.mark.parametrize("bad", ["3", None, 2.5, True])
def test_page_of_what_is_not_a_seq_is_a_typed_error(engine: memci.Engine, bad: Any) -> None:
    with pytest.raises(memci.ConfigError):
        engine.session("s").page_of(bad)
