"""What a replay says about itself: the session it stored into, the tokenizer that counted,
and the evidence each question's request holds, in text, JSON and the HTML report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

import memci
from memci.cli import main
from memci.replay import replay
from memci.traces import read_trace

from .conftest import EXAMPLE_TRACE, ROOT

SAMPLES = Path(__file__).resolve().parent / "trace_samples"
LOCOMO = SAMPLES / "locomo--conversation.json"


def _cli(*args: str) -> tuple[str, str]:
    result = CliRunner(env={"COLUMNS": "300"}).invoke(main, ["replay", *args])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def _replay_process(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``memci replay`` in a process of its own whose tiktoken cache is an empty folder."""
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT / "src")]))
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "no-cache"),
           "PYTHONPATH": path, "COLUMNS": "300"}
    (tmp_path / "no-cache").mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "memci", "replay", *args], env=env,
                          capture_output=True, text=True, timeout=300, check=True)


def test_each_replay_into_one_store_names_the_session_it_made(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    first = json.loads(_cli(str(EXAMPLE_TRACE), "--db", str(db), "--json")[0])
    assert first["session"] == "replay:agent_trace" and first["store"] == str(db)
    with memci.Engine.open(db, workers=0) as engine:
        engine.session("replay:agent_trace:3")  # a name taken out of turn
    second, note = _cli(str(EXAMPLE_TRACE), "--db", str(db))
    assert "session 'replay:agent_trace:2' in " in second
    assert "this replay is stored as replay:agent_trace:2" in note
    third = json.loads(_cli(str(EXAMPLE_TRACE), "--db", str(db), "--json")[0])
    assert third["session"] == "replay:agent_trace:4"
    with memci.Engine.open(db, workers=0) as engine:
        counts = {r.name: engine.session(r.name).count() for r in engine.sessions()}
    assert counts == {"replay:agent_trace": 27, "replay:agent_trace:2": 27,
                      "replay:agent_trace:3": 0, "replay:agent_trace:4": 27}
    temporary = json.loads(_cli(str(EXAMPLE_TRACE), "--json")[0])
    assert temporary["session"] == "replay:agent_trace" and temporary["store"] is None
    assert "in a temporary store" in _cli(str(EXAMPLE_TRACE))[0]


def test_a_tokenizer_standing_in_for_the_models_is_said_out_loud(tmp_path: Path) -> None:
    # o200k_base is not in an empty tiktoken cache: gpt-4o falls back to the estimate
    done = _replay_process(tmp_path, str(EXAMPLE_TRACE), "--model", "gpt-4o", "--json",
                           "--report", str(tmp_path / "r.html"))
    data = json.loads(done.stdout)
    assert data["tokenizer"] == "estimate"
    assert "o200k_base" in data["tokenizer_note"] and "gpt-4o" in data["tokenizer_note"]
    assert "warning: gpt-4o counts with o200k_base" in done.stderr
    page = (tmp_path / "r.html").read_text()
    assert 'class="sub warn" id="provenance"' in page and "o200k_base" in page
    text = _replay_process(tmp_path, str(EXAMPLE_TRACE), "--model", "gpt-4o").stdout
    assert "tokens counted with estimate (standing in: gpt-4o counts with o200k_base" in text
    # a model whose tokenizer is the estimate, or none given: nothing stands in
    for args in ((), ("--model", "claude-sonnet-4")):
        plain = _replay_process(tmp_path, str(EXAMPLE_TRACE), "--json", *args)
        assert json.loads(plain.stdout)["tokenizer_note"] is None
        assert "warning" not in plain.stderr


def _evidence_run(tmp_path: Path, **settings: Any) -> list[tuple[str, tuple[str, ...]]]:
    trace = read_trace(LOCOMO)
    with memci.Engine.open(tmp_path / f"{len(settings)}.db", workers=0) as engine:
        session = engine.session("s", **settings)
        result = replay(session, trace.messages, questions=trace.questions)
    return [(r.evidence.question, r.evidence.verbatim) for r in result.answered
            if r.evidence is not None]


def test_evidence_is_held_when_the_whole_history_is_sent(tmp_path: Path) -> None:
    trace = read_trace(LOCOMO)
    held = _evidence_run(tmp_path)  # a 128k window: every request is the whole history
    assert held == [(q.text, tuple(o for o, _ in q.evidence)) for q in trace.questions]


def test_evidence_outside_a_two_message_window_is_not_held(tmp_path: Path) -> None:
    trace = read_trace(LOCOMO)
    held = _evidence_run(tmp_path, strategy="sliding_window", max_messages=2,
                         retrieval=False)
    # the window holds the question and the answer before it: no conversation turn
    assert [q for q, _ in held] == [q.text for q in trace.questions]
    assert all(verbatim == () for _, verbatim in held)


def test_evidence_in_json_text_and_html(tmp_path: Path) -> None:
    out, _ = _cli(str(LOCOMO), "--json", "--report", str(tmp_path / "r.html"))
    data = json.loads(out)
    answered = [r for r in data["requests"] if "evidence" in r]
    assert [r["evidence"]["evidence"] for r in answered] == [["D1:3"], ["D2:2", "D2:3"],
                                                             ["D1:1"]]
    assert all(r["evidence"]["share"] == 1.0 for r in answered)
    assert data["totals"]["evidence"] == {"questions": 3, "turns": 4, "verbatim": 4,
                                          "close": 4, "whole": 3, "share": 1.0}
    text, _ = _cli(str(LOCOMO))
    assert "evidence in the request that answers each question" in text
    assert "evidence: 3 questions, 4 evidence turns: 4 (100.0%) verbatim" in text
    page = (tmp_path / "r.html").read_text()
    assert 'id="evidence"' in page and "Who is Mara&#x27;s pottery teacher?" in page
    plain, _ = _cli(str(EXAMPLE_TRACE), "--json")
    assert "evidence" not in json.loads(plain)["totals"]
