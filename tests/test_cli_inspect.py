"""memci inspect / search / stats against a real SQLite store built by a replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import memci
from memci.cli import main
from memci.cli._inspect import _STATE_TOOLS, snippet

from .conftest import EXAMPLE_TRACE

REPLAYED = "replay:agent_trace"
WIDE = {"COLUMNS": "200"}  # rich wraps at 80 columns when not on a terminal


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the example trace replayed at a small budget, and a long chat."""
    db = tmp_path_factory.mktemp("inspect") / "memci.db"
    result = CliRunner().invoke(main, ["replay", str(EXAMPLE_TRACE), "--budget", "600",
                                       "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    with memci.Engine.open(db) as engine:
        chat = engine.session("chat", user="u1", retrieval=False)
        chat.set_system("You are helpful.")
        for i in range(1, 41):
            chat.add({"role": "user", "content":
                      f"Question {i}: how do I configure widget number {i} for deployment?"})
            chat.build(budget=900)
            chat.add({"role": "assistant", "content":
                      f"Answer {i}: set widget_{i}.enabled = true in the config and restart."})
        assert "back in your context" in chat.call_tool("recall_page", {"index": 3})
    return db


def _run(*args: str) -> click.testing.Result:
    return CliRunner(env=WIDE).invoke(main, list(args), catch_exceptions=False)


def _json(*args: str) -> Any:
    result = _run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- inspect -----------------------------------------------------------------------------


def test_inspect_json_of_a_replayed_session(store: Path) -> None:
    data = _json("inspect", REPLAYED, "--db", str(store), "--budget", "600")
    assert set(data) >= {"session", "request", "segments", "pages", "contents_page",
                         "workspace", "events", "stats"}
    assert data["session"]["name"] == REPLAYED and data["session"]["messages"] == 27
    req = data["request"]
    assert req["budget"] == 600 and req["total_tokens"] <= 600
    assert req["saved_tokens"] == req["full_tokens"] - req["total_tokens"]
    # The segments account for every token of the request, in request order.
    segments = {s["segment"]: s for s in data["segments"]}
    assert sum(s["tokens"] for s in data["segments"]) == req["total_tokens"]
    assert sum(s["share"] for s in data["segments"]) == pytest.approx(1, abs=0.002)
    assert list(segments)[:2] == ["system", "tools"]
    assert segments["current page"]["pages"] == [4]
    # Every page is in one place; pages 1-3 were archived without room to list them:
    # on the contents page's range line, not evicted (no evict event: stats says 0)
    pages = data["pages"]
    assert [p["page"] for p in pages] == [1, 2, 3, 4]
    assert [p["place"] for p in pages] == ["contents", "contents", "contents", "window"]
    assert [p["listed"] for p in pages] == [False, False, False, None]
    assert pages[3]["window"] == "current" and pages[3]["sent_tokens"] > 0
    assert all(p["archived_round"] is not None and p["sent_tokens"] == 0 for p in pages[:3])
    assert pages[0]["first_seq"] == 2 and pages[-1]["last_seq"] == 27
    assert sum(p["messages"] for p in pages) == 26  # the system message is in no page
    # the contents page names the pages it has no room to list
    assert "Pages 1–3: archived, not listed here" in data["contents_page"]
    kinds = [e["kind"] for e in data["events"]]
    assert kinds.count("archive") == data["stats"]["archived"] == 3
    assert kinds.count("evict") == data["stats"]["evicted"] == 0  # never in the same build


def test_inspect_json_shows_contents_page_and_recalled_page(store: Path) -> None:
    data = _json("inspect", "chat", "--db", str(store), "--budget", "900")
    places = {p["page"]: p for p in data["pages"]}
    listed = [n for n, p in places.items() if p["place"] == "contents" and p["listed"]]
    assert listed, "expected pages on the contents page"
    for n in listed:
        assert f"[Page {n}]" in data["contents_page"]
    named = [n for n, p in places.items() if p["place"] == "contents" and not p["listed"]]
    evicted = [n for n, p in places.items() if p["place"] == "evicted"]
    for n in evicted + named:
        assert f"[Page {n}]" not in data["contents_page"]
    assert "not listed here" in data["contents_page"]  # the range line names them
    recalled = places[3]
    assert (recalled["place"], recalled["window"]) == ("window", "recalled")
    assert recalled["recall_count"] == 1 and recalled["last_recall_round"] == 40
    segments = {s["segment"]: s for s in data["segments"]}
    assert segments["recalled pages"]["pages"] == [3]
    assert segments["contents page"]["messages"] == 1
    assert segments["current page"]["pages"] == [40]
    assert any(e["kind"] == "recall" and e["page"] == 3 for e in data["events"])
    assert len(data["events"]) <= 15  # the newest events only


@pytest.mark.parametrize("name", ["chat", REPLAYED])
def test_inspect_and_stats_agree_on_what_is_evicted(store: Path, name: str) -> None:
    """One source of truth: a page is evicted when an evict event took it off last."""
    data = _json("inspect", name, "--db", str(store))
    stats = _json("stats", name, "--db", str(store))
    with memci.Engine.open(store) as engine:
        newest = {e["page"]: e["kind"] for e in engine.session(name).events(limit=10**6)}
    evicted = {p["page"] for p in data["pages"] if p["place"] == "evicted"}
    assert evicted == {page for page, kind in newest.items() if kind == "evict"}
    assert len(evicted) <= stats["stats"]["evicted"] == stats["events"]["by_kind"].get(
        "evict", 0)
    if stats["stats"]["evicted"] == 0:
        assert "evicted" not in _run("inspect", name, "--db", str(store)).output


@pytest.mark.parametrize("name", ["chat", REPLAYED])
def test_inspect_workspace_sections_follow_the_offered_tools(store: Path, name: str) -> None:
    data = _json("inspect", name, "--db", str(store), "--budget", "4000")
    with memci.Engine.open(store) as engine:
        offered = {t["function"]["name"] for t in engine.session(name).tools()}
    if "working_state" in offered:  # the working-state tools, offered as one
        offered |= {"pin_list", "plan_list", "notebook_add"}
    expected = {s for s, tool in _STATE_TOOLS if tool in offered}
    if "notebook_add" in offered:
        expected.add("notebook")
    assert set(data["workspace"]) == expected
    for section, text in data["workspace"].items():
        assert isinstance(text, str) and text, section
    if data["working_state"] is not None:  # what the model reads of the working state
        assert any(s["segment"] == "working state" for s in data["segments"])


def test_inspect_table_output(store: Path) -> None:
    # Inspects before this one built at other budgets (a larger one brings pages back):
    # a recall now is among the latest events whatever ran before.
    with memci.Engine.open(store) as engine:
        chat = engine.session("chat")
        chat.build(budget=900)
        archived = [p.page for p in chat.pages() if p.place != "window"]
        assert "back in your context" in chat.call_tool("recall_page", {"index": archived[0]})
    result = _run("inspect", "chat", "--db", str(store), "--budget", "900")
    assert result.exit_code == 0, result.output
    out = result.output
    for text in ("session 'chat'", "segments of the request", "contents page", "recalled pages",
                 "window (recalled)", "window (current)", "evicted", "Contents page",
                 "latest", "recall_page tool call"):
        assert text in out, text


def test_inspect_other_strategy_and_empty_session(store: Path) -> None:
    with memci.Engine.open(store) as engine:
        s = engine.session("oldest", strategy="oldest")
        for i in range(6):
            s.add_many([{"role": "user", "content": f"question {i} " * 30},
                        {"role": "assistant", "content": f"answer {i} " * 30}])
        engine.session("empty")
    data = _json("inspect", "oldest", "--db", str(store), "--budget", "300")
    assert {p["place"] for p in data["pages"]} == {"window", "dropped"}
    assert data["pages"][-1]["place"] == "window"
    empty = _json("inspect", "empty", "--db", str(store))
    assert empty["pages"] == [] and empty["session"]["messages"] == 0
    assert "no pages yet" in _run("inspect", "empty", "--db", str(store)).output


# -- stats -------------------------------------------------------------------------------


def test_stats_json_counts_events_by_reason(store: Path) -> None:
    data = _json("stats", "chat", "--db", str(store))
    stats, events = data["stats"], data["events"]
    assert stats["messages"] == 81 and stats["pages"] == 40
    assert events["by_kind"] == {"archive": stats["archived"], "evict": stats["evicted"],
                                 "recall": stats["recalled"]}
    assert sum(r["count"] for r in events["by_reason"]) == events["total"]
    recalls = [r["count"] for r in events["by_reason"]
               if (r["kind"], r["reason"]) == ("recall", "recall_page tool call")]
    assert recalls and recalls[0] >= 1  # the fixture's recall (a test may add another)
    assert events["first_round"] <= events["last_round"]


def test_stats_table_output(store: Path) -> None:
    result = _run("stats", REPLAYED, "--db", str(store))
    assert result.exit_code == 0, result.output
    assert "archived" in result.output and "events by reason" in result.output
    assert "active chapter over its budget" in result.output


# -- search ------------------------------------------------------------------------------


def test_search_json_hits(store: Path) -> None:
    data = _json("search", "chat", "widget_5 enabled", "-k", "3", "--db", str(store))
    assert data["query"] == "widget_5 enabled" and data["scope"] == "session"
    assert 1 <= len(data["hits"]) <= 3
    for hit in data["hits"]:
        assert set(hit) >= {"page", "seq", "role", "score", "retrievers", "snippet"}
        assert hit["retrievers"] and isinstance(hit["score"], float)
    top = data["hits"][0]
    assert top["page"] == 5 and "widget_5" in top["snippet"]  # page 5 was evicted


def test_search_table_and_user_scope(store: Path) -> None:
    result = _run("search", "chat", "widget", "--db", str(store))
    assert result.exit_code == 0, result.output
    assert "found by" in result.output and "widget" in result.output
    data = _json("search", "chat", "widget", "--scope", "user", "--db", str(store))
    assert data["scope"] == "user" and all(h["session"] == "chat" for h in data["hits"])


def test_snippet_centres_on_the_first_query_word() -> None:
    text = "alpha " * 60 + "the needle is here " + "omega " * 60
    cut = snippet(text, "needle", width=60)
    assert "needle" in cut and cut.startswith("…") and cut.endswith("…")
    assert snippet("short text", "absent") == "short text"
    assert "数据库" in snippet("前文" * 100 + "优化数据库查询" + "后文" * 100, "数据库", width=40)


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["inspect", "stats", "search"])
def test_unknown_session_is_exit_2_and_one_line(store: Path, command: str) -> None:
    extra = ["query"] if command == "search" else []
    result = CliRunner(env=WIDE).invoke(main, [command, "nope", *extra, "--db", str(store)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: UnknownSessionError: no session 'nope'")
    assert "chat" in lines[0]  # names the sessions that exist


def test_unknown_tenant_and_missing_store(store: Path, tmp_path: Path) -> None:
    result = CliRunner(env=WIDE).invoke(main, ["stats", "chat", "--tenant", "acme",
                                               "--db", str(store)])
    assert result.exit_code == 2 and "tenant 'acme'" in result.output
    missing = tmp_path / "typo.db"
    result = CliRunner(env=WIDE).invoke(main, ["inspect", "chat", "--db", str(missing)])
    assert result.exit_code == 2 and "no memci store at" in result.output
    assert not missing.exists()  # a read-only command never creates a store
