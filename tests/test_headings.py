"""No heading without content, at any budget (issue 22, item 8).

Every text memci writes into a request (the working state and its sections: pins, plan,
notebook, fastmemo, context pool; the contents page; retrieved memory; the tool contract;
a summary) is checked over real conversations at small budgets: each heading has
content under it, and no line of content reads as a heading. Real data: a mini-swe-agent
trace, the example agent trace with a pin and a plan, a LoCoMo conversation, KdConv.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import memci
from memci.replay import load_conversation

from .conftest import shared_data

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = (300, 450, 600, 800, 1200, 2000)


def _level(line: str) -> int:
    """The heading level of ``line`` (0: not a heading)."""
    return len(line) - len(line.lstrip("#")) if line.startswith("#") else 0


STATE_TITLES = ("## Working state", "## 工作状态")
"""The working state's title: its content is the titled sections that follow it."""


def empty_headings(text: str) -> list[str]:
    """Headings of ``text`` with no content before the next heading at their level or above.

    A level-1 heading counts as empty too: memci writes none, so one is content that reads
    as a heading. The working state's title is empty when no section follows it.
    """
    lines = text.split("\n")
    bad = []
    for i, line in enumerate(lines):
        level = _level(line)
        if not level:
            continue
        if line in STATE_TITLES:
            if not any(_level(later) for later in lines[i + 1:]):
                bad.append(line)
            continue
        if level == 1:
            bad.append(line)
            continue
        content = False
        for later in lines[i + 1:]:
            deeper = _level(later)
            if deeper and deeper <= level:
                break
            if later.strip() and not deeper and not _explains(later):
                content = True
                break
        if not content:
            bad.append(line)
    return bad


def _explains(line: str) -> bool:
    """The retrieved memory's title line under its heading (not content)."""
    return line.startswith(("(found by memci", "（memci"))


def test_the_check_sees_an_empty_heading() -> None:
    assert empty_headings("## Working state\n\n## Notebook") == ["## Notebook"]
    assert empty_headings("## Working state") == ["## Working state"]
    assert empty_headings("## Notebook\n# Mock settings\n- a note") == ["## Notebook",
                                                                       "# Mock settings"]
    assert empty_headings("## Working state\n\n## Pins\n- a pin") == []
    assert empty_headings("## Retrieved memory\n(found by memci in earlier …)") == [
        "## Retrieved memory"]


def _sweep(messages: list[dict[str, object]], tmp: Path, *, setup: bool = False) -> list[str]:
    """Every empty heading in the requests of a replay of ``messages`` at each budget."""
    found: list[str] = []
    for budget in BUDGETS:
        with memci.Engine.open(tmp / f"h{budget}.db") as engine:
            s = engine.session("h")
            if setup:
                s.call_tool("pin_add", {"type": "constraint", "title": "python",
                                        "summary": "the tests run on Python 3.11 only",
                                        "source": "user:1"})
                s.call_tool("plan_add", {"text": "find the failing assertion"})
                s.call_tool("plan_add", {"text": "fix the parser and rerun the tests"})
            for message in messages:
                if message["role"] == "assistant" and s.messages():
                    try:
                        ctx = s.build(budget=budget)
                    except memci.BudgetTooSmallError:
                        s.add(message)
                        continue
                    for sent in ctx.messages:
                        if sent.seq is None:  # written by memci
                            found += [f"{budget}: {h}" for h in empty_headings(sent.content)]
                s.add(message)
    return found


@pytest.mark.parametrize(("parts", "cut", "setup"), [
    (("traces", "django__django-11815.traj.json"), 80, False),
    (("locomo", "26.json"), 160, False),
    (("zh", "kdconv_travel_test.json"), 160, False),
])
def test_no_heading_without_content_on_shared_data(
        tmp_path: Path, parts: tuple[str, ...], cut: int, setup: bool) -> None:
    trace = load_conversation(shared_data(*parts))
    assert _sweep(list(trace.messages[:cut]), tmp_path, setup=setup) == []


def test_no_heading_without_content_with_pins_and_a_plan(tmp_path: Path) -> None:
    trace = load_conversation(ROOT / "examples" / "agent_trace.json")
    assert _sweep(list(trace.messages), tmp_path, setup=True) == []
