"""Branches of a session: fork() keeps every message stored and the context on one branch.

Real SQLite files in tmp dirs; a second Engine on the same file stands in for another
process (it sees the branch through the log alone).
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest

import memci

from .test_engine import _call, assert_openai_valid


def said(ctx: memci.Context) -> list[str]:
    """The conversation's texts in a context (memci's own sections left out)."""
    return [m.content for m in ctx.messages if m.seq is not None and m.role != "system"]


def turn(session: memci.Session, n: int, words: int = 0) -> None:
    session.add_many([{"role": "user", "content": f"u{n}" + " detail" * words},
                      {"role": "assistant", "content": f"a{n}" + " fact" * words}])


def test_fork_regenerate_and_edit_keep_everything_and_follow_the_branch(
        db_path: Path) -> None:
    with memci.Engine.open(db_path) as engine:
        s = engine.session("c")
        s.set_system("sys")
        for text in ("u1", "a1", "u2", "a2"):
            s.add({"role": "user" if text[0] == "u" else "assistant", "content": text})
        s.fork(after=4)  # seq 4 is u2: regenerate a2
        assert said(s.build()) == ["u1", "a1", "u2"]
        assert s.branch_seqs() == [2, 3, 4]
        s.add({"role": "assistant", "content": "a2 again, regenerated"})
        assert said(s.build()) == ["u1", "a1", "u2", "a2 again, regenerated"]
        assert s.messages()[5].metadata == {"memci_branch": {"after": 4}}
        s.fork(after=3)  # after a1: an edit of u2
        s.add({"role": "user", "content": "u2 edited"})
        assert said(s.build()) == ["u1", "a1", "u2 edited"]
        assert [m.content for m in s.messages()] == [
            "sys", "u1", "a1", "u2", "a2", "a2 again, regenerated", "u2 edited"]
        assert [m.content for m in s.branch()] == ["sys", "u1", "a1", "u2 edited"]
        assert s.count() == 7
        # what left the context is still found
        assert s.search("regenerated")[0].message.seq == 6
        out = io.StringIO()
        s.export_jsonl(out)
    with memci.Engine.open(db_path) as engine:  # reopened: the log alone says the branch
        s = engine.session("c")
        assert said(s.build()) == ["u1", "a1", "u2 edited"]
        copy = engine.import_jsonl(io.StringIO(out.getvalue()).readlines(), name="copy")
        assert said(copy.build()) == ["u1", "a1", "u2 edited"]
        assert copy.count() == 7


def test_fork_from_the_start_and_a_message_added_elsewhere(db_path: Path) -> None:
    with memci.Engine.open(db_path) as first, memci.Engine.open(db_path) as second:
        a = first.session("c")
        b = second.session("c")  # open before the fork: catches up from the log
        turn(a, 1)
        turn(a, 2)
        a.fork(after=0)
        a.add({"role": "user", "content": "new start"})
        assert said(a.build()) == ["new start"]
        assert said(b.build()) == ["new start"]
        # a message added without a fork continues the newest message's branch
        b.add({"role": "assistant", "content": "reply"})
        assert said(a.build()) == ["new start", "reply"]
        # a fork is this Session's until a message is added; then every process follows it
        a.fork(after=1)
        assert said(a.build()) == ["u1"]
        assert said(b.build()) == ["new start", "reply"]
        a.add({"role": "assistant", "content": "a1 again"})
        assert said(b.build()) == ["u1", "a1 again"]


def test_bad_forks_and_links_are_refused_and_store_nothing(engine: memci.Engine) -> None:
    s = engine.session("c")
    s.set_system("sys")
    turn(s, 1)
    for bad in (99, -1, 1, "2", True, 2.0):  # seq 1 is the system message
        with pytest.raises(memci.errors.ConfigError, match="after"):
            s.fork(after=bad)  # type: ignore[arg-type]
    for link in ({"after": 99}, {"after": 1}, {"after": "2"}, {"after": 4}, "2", {}):
        with pytest.raises(memci.errors.InvalidMessageError, match="memci_branch"):
            s.add({"role": "user", "content": "x", "metadata": {"memci_branch": link}})
    with pytest.raises(memci.errors.InvalidMessageError, match="memci_branch"):
        s.add({"role": "system", "content": "x", "metadata": {"memci_branch": {"after": 2}}})
    assert s.count() == 3
    # a link in the metadata is the same as a fork; a batch may link to its own messages
    s.add({"role": "user", "content": "u1 again", "metadata": {"memci_branch": {"after": 0}}})
    assert said(s.build()) == ["u1 again"]
    s.add_many([{"role": "assistant", "content": "b1"},
                {"role": "user", "content": "u2"},
                {"role": "assistant", "content": "b2, after u1 again",
                 "metadata": {"memci_branch": {"after": 4}}}])
    assert said(s.build()) == ["u1 again", "b2, after u1 again"]


def _listed(ctx: memci.Context) -> list[int]:
    contents = next((m.content for m in ctx.messages if m.role == "system"
                     and m.content.startswith("## Contents page")), "")
    return [int(n) for n in re.findall(r"^\[Page (\d+)\]", contents, re.M)]


def test_a_fork_into_archived_pages_leaves_the_old_pages_out(db_path: Path) -> None:
    with memci.Engine.open(db_path) as engine:
        s = engine.session("c", contents_max_tokens=100_000, evict_unrecalled_rounds=0,
                           retrieval=False)
        for n in range(1, 41):
            turn(s, n, words=40)
            s.build(budget=3000)
        archived = _listed(s.build(budget=3000))
        assert len(archived) >= 10
        # edit u6: the branch keeps pages 1-5, and page 6 on is new
        s.fork(after=s.branch_seqs()[9])  # a5
        s.add({"role": "user", "content": "u6 edited"})
        ctx = s.build(budget=3000)
        assert all(page <= 5 for page in _listed(ctx))
        assert said(ctx)[-1] == "u6 edited"
        assert not any(t.startswith(("u40 ", "a40 ", "u6 detail")) for t in said(ctx))
        assert s.call_tool("recall_page", {"index": 3}).startswith("Page 3")
        assert "u3 detail" in " ".join(said(s.build(budget=3000)))
        for n in range(7, 30):
            turn(s, n, words=40)
            ctx = s.build(budget=3000)
            assert ctx.stats.total_tokens <= 3000
            assert_openai_valid(ctx.to_openai()["messages"])
        before = _listed(ctx)
    with memci.Engine.open(db_path) as engine:
        s = engine.session("c")
        ctx = s.build(budget=3000)
        assert _listed(ctx) == before
        assert said(ctx)[-1].startswith("a29")


def test_a_fork_inside_a_cut_tool_loop_and_in_a_summary(engine: memci.Engine) -> None:
    s = engine.session("loop")
    s.add({"role": "user", "content": "Fix the build."})
    for i in range(60):
        s.add({"role": "assistant", "content": f"step {i}", "tool_calls": [_call(f"k{i}")]})
        s.add({"role": "tool", "tool_call_id": f"k{i}", "content": f"output {i}\n" * 40})
        s.build(budget=3000)
    s.fork(after=s.branch_seqs()[4])  # the result of step 1: the saved cut hides more
    s.add({"role": "assistant", "content": "a new step 2", "tool_calls": [_call("n2")]})
    ctx = s.build(budget=3000)
    assert said(ctx)[:2] == ["Fix the build.", "step 0"]
    assert said(ctx)[-1] == "a new step 2"
    assert_openai_valid(ctx.to_openai()["messages"])

    z = engine.session("sum", strategy="summarize")
    for n in range(1, 61):
        turn(z, n, words=30)
        z.build(budget=2000)
    assert z.build(budget=2000).messages[0].content.startswith("## Summary")
    z.fork(after=z.branch_seqs()[3])  # a2: the summary covers messages now off the branch
    z.add({"role": "user", "content": "u3 edited"})
    ctx = z.build(budget=2000)
    assert said(ctx) == ["u1" + " detail" * 30, "a1" + " fact" * 30,
                         "u2" + " detail" * 30, "a2" + " fact" * 30, "u3 edited"]
    assert not any(m.content.startswith("## Summary") for m in ctx.messages)


def test_branch_links_are_read_only_from_valid_metadata(engine: memci.Engine) -> None:
    s = engine.session("c")
    turn(s, 1)
    store: Any = engine.store
    with store.write() as db:  # rows as another program (or an older memci) could write
        db.execute("UPDATE messages SET metadata = ? WHERE seq = 2",
                   ('{"memci_branch": {"after": "x"}}',))
        db.execute("UPDATE messages SET metadata = ? WHERE seq = 1", ("not json memci_branch",))
    assert store.branch_links(s.record) == {}


def test_retrieved_memory_leaves_the_other_branches_out(engine: memci.Engine) -> None:
    def retrieved(ctx: memci.Context) -> str:
        return "".join(m.content for m in ctx.messages
                       if m.seq is None and m.content.startswith("## Retrieved memory"))

    s = engine.session("c")
    for n in range(1, 31):
        s.add_many([{"role": "user", "content": f"Tell me about the lighthouse keeper {n}. "
                                                 + "Details please. " * 30},
                    {"role": "assistant", "content": f"The lighthouse keeper {n} was kind. "
                                                      + "More facts. " * 30}])
        s.build(budget=2500)
    s.add({"role": "user", "content": "What did the lighthouse keeper do?"})
    assert "lighthouse keeper" in retrieved(s.build(budget=2500))  # the same branch: found
    s.fork(after=0)
    s.add({"role": "user", "content": "What did the lighthouse keeper do?"})
    ctx = s.build(budget=2500)
    assert said(ctx) == ["What did the lighthouse keeper do?"]
    assert retrieved(ctx) == ""
    assert s.search("lighthouse keeper was kind")  # still found by an explicit search
