"""bench/bench_evidence.py on tiny slices, so the benchmark cannot rot.

The readers are checked on real files (and on small files of the same kinds, as held-out
data would be), the token count, the baselines on a conversation small enough to reason
about, and the whole command end to end (the referee, :mod:`memci.evidence`, has its own
tests in ``tests/test_evidence.py``).
"""

from __future__ import annotations

import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .conftest import ROOT, shared_data

sys.path.insert(0, str(ROOT / "bench"))

import bench_evidence
from evidence_data import Question, Turn, kdconv, locomo, longmemeval
from evidence_match import request_text, request_tokens
from evidence_systems import BASELINES, History
from evidence_traces import read_trace, replay
from make_haystacks import haystacks
from memci.memory._time import time_hint

# -- readers ----------------------------------------------------------------------------


def _tiny_locomo(path: Path) -> Path:
    """A LoCoMo-kind file unlike the development ones: other names, a dated session
    without turns, a photo, a malformed evidence string, an adversarial question."""
    data = {
        "speaker_a": "Ana", "speaker_b": "Bo",
        "session_1_date_time": "9:05 am on 3 March, 2022",
        "session_1": [
            {"speaker": "Bo", "dia_id": "D1:1", "text": "Morning Ana!"},
            {"speaker": "Ana", "dia_id": "D1:2", "text": "I adopted a grey cat named Pixel.",
             "blip_caption": "a photo of a grey cat on a sofa"},
        ],
        "session_2_date_time": "1:00 pm on 4 March, 2022",
        "session_3_date_time": "10:30 pm on 20 April, 2022",
        "session_3": [
            {"speaker": "Ana", "dia_id": "D3:1", "text": "Pixel learned to open doors."},
            {"speaker": "Bo", "dia_id": "D3:2", "text": "Clever cat!"},
        ],
        "qa": [
            {"question": "What is Ana's cat called?", "answer": "Pixel",
             "evidence": ["D1:2; D3:1"], "category": 4},
            {"question": "What did Bo adopt?", "adversarial_answer": "a cat",
             "evidence": [], "category": 5},
            {"question": "Unanswerable here", "answer": "x", "evidence": ["D9:9"],
             "category": 1},
        ],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_locomo_reader_on_a_file_of_the_same_kind(tmp_path: Path) -> None:
    conv = locomo(_tiny_locomo(tmp_path / "held.json"))
    assert [(t.id, t.role) for t in conv.turns] == [
        ("D1:1", "assistant"), ("D1:2", "user"), ("D3:1", "user"), ("D3:2", "assistant")]
    assert conv.turns[1].text.endswith("[shares a photo: a photo of a grey cat on a sofa]")
    assert conv.turns[0].created_at == "2022-03-03T09:05:00"
    assert conv.turns[2].created_at == "2022-04-20T22:30:00"
    # the adversarial question and the one whose evidence is not in the file are left out
    assert [q.text for q in conv.questions] == ["What is Ana's cat called?"]
    assert conv.questions[0].evidence == ("D1:2", "D3:1")
    assert conv.questions[0].asked_at > conv.turns[-1].created_at
    assert conv.skipped == 2


def test_locomo_reader_on_the_development_data() -> None:
    conv = locomo(shared_data("locomo", "26.json"))
    data = json.loads(shared_data("locomo", "26.json").read_text(encoding="utf-8"))
    assert len(conv.turns) == sum(len(v) for k, v in data.items()
                                  if re.fullmatch(r"session_\d+", k))
    ids = {t.id for t in conv.turns}
    assert all(set(q.evidence) <= ids and q.evidence for q in conv.questions)
    assert not any(q.kind == "category 5" for q in conv.questions)
    times = [t.created_at for t in conv.turns]
    assert times == sorted(times)
    first = next(t for t in conv.turns if t.id == "D1:1")
    assert first.role == ("user" if data["session_1"][0]["speaker"] == data["speaker_a"]
                          else "assistant")
    # "D8:6; D9:17" in one string is two evidence turns
    assert any(q.evidence == ("D8:6", "D9:17") for q in conv.questions)


def test_kdconv_reader_asks_for_facts_the_evidence_carries() -> None:
    path = shared_data("zh", "kdconv_travel_test.json")
    convs = kdconv(path, per_conversation=8, questions_per_conversation=5,
                   max_conversations=2)
    assert [len({t.id.split(":")[1] for t in c.turns}) for c in convs] == [8, 8]
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    for c, conv in enumerate(convs):
        assert 0 < len(conv.questions) <= 5
        days = [t.created_at[:10] for t in conv.turns]
        assert days == sorted(days) and len(set(days)) == 8
        for q in conv.questions:
            entity, attr = q.id.split(":")[1:]
            assert q.text == f"{entity}的{attr}是什么？" and attr != "Information"
            for tid in q.evidence:
                d, i = (int(x) for x in tid.split(":")[1:])
                utterance = dialogues[c * 8 + d]["messages"][i]
                assert utterance["message"] == next(t.text for t in conv.turns if t.id == tid)
                assert any(a["name"] == entity and a["attrname"] == attr
                           for a in utterance["attrs"])
    again = kdconv(path, per_conversation=8, questions_per_conversation=5, max_conversations=2)
    assert [q.id for c in again for q in c.questions] == [q.id for c in convs
                                                          for q in c.questions]


def _tiny_longmemeval(path: Path) -> Path:
    items = [
        {"question_id": "q1", "question_type": "single-session-user",
         "question": "What colour is my bike?", "question_date": "2023/05/30 (Tue) 10:00",
         "haystack_dates": ["2023/05/20 (Sat) 09:00", "2023/05/02 (Tue) 18:30"],
         "haystack_session_ids": ["s-late", "s-early"], "answer_session_ids": ["s-early"],
         "haystack_sessions": [
             [{"role": "user", "content": "Any tips for pasta?"},
              {"role": "assistant", "content": "Salt the water well."}],
             [{"role": "user", "content": "I just bought a red bike.", "has_answer": True},
              {"role": "assistant", "content": "Enjoy the rides!"}],
         ]},
        {"question_id": "q2_abs", "question_type": "single-session-user",
         "question": "What is my cat's name?", "question_date": "2023/05/30 (Tue) 10:00",
         "haystack_dates": ["2023/05/20 (Sat) 09:00"], "answer_session_ids": [],
         "haystack_sessions": [[{"role": "user", "content": "Hello"}]]},
    ]
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def test_longmemeval_reader(tmp_path: Path) -> None:
    convs = longmemeval(_tiny_longmemeval(tmp_path / "lme.json"))
    assert len(convs) == 1 and convs[0].skipped == 1  # the abstention has no evidence
    conv = convs[0]
    # sessions are fed in date order, whatever their order in the file
    assert [t.text for t in conv.turns][:2] == ["I just bought a red bike.", "Enjoy the rides!"]
    assert conv.turns[0].created_at.startswith("2023-05-02T18:30")
    (q,) = conv.questions
    assert [next(t.text for t in conv.turns if t.id == e) for e in q.evidence] == [
        "I just bought a red bike."]
    assert q.asked_at.startswith("2023-05-30T10:00")
    assert q.kind == "single-session-user"


# -- tokens sent ------------------------------------------------------------------------


def test_request_tokens_count_tools() -> None:
    bare = {"messages": [{"role": "user", "content": "hello there"}]}
    with_tools = {**bare, "tools": [{"type": "function", "function": {
        "name": "recall_page", "description": "Read an archived page again.",
        "parameters": {"type": "object", "properties": {"index": {"type": "integer"}}}}}]}
    assert request_tokens(bare) == 3 + 4 + 2
    assert request_tokens(with_tools) > request_tokens(bare) + 20


# -- baselines --------------------------------------------------------------------------


def _small_conversation() -> tuple[list[Turn], Question]:
    turns = [Turn("t0", "user", "My passport number ends in 4471 and expires in June.",
                  "2024-01-01T10:00:00")]
    for i in range(1, 60):
        role = "user" if i % 2 == 0 else "assistant"
        turns.append(Turn(f"t{i}", role, f"Small talk number {i} about weather and lunch "
                                         "plans with friends downtown.",
                          f"2024-01-02T10:{i:02d}:00"))
    question = Question("q", "When does my passport expire?", "2024-01-03T10:00:00",
                        ("t0",), "test")
    return turns, question


def test_baselines_fit_the_budget_and_bm25_finds_the_old_turn() -> None:
    turns, question = _small_conversation()
    history = History(turns)
    results: dict[str, Any] = {}
    for baseline in BASELINES:
        payload, ms = baseline.run(history, question, 300)
        assert ms >= 0
        assert request_tokens(payload) <= 300
        assert payload["messages"][-1] == {"role": "user", "content": question.text}
        results[baseline.name] = payload
    old = turns[0].text
    assert request_text(results["bm25"], question.text).verbatim(old)
    assert not request_text(results["window"], question.text).verbatim(old)
    assert not request_text(results["trim_messages"], question.text).verbatim(old)
    # the window is the newest turns, in order
    window = [m["content"] for m in results["window"]["messages"][:-1]]
    assert window == [t.text for t in turns[-len(window):]]
    # BM25 keeps conversation order: the old turn first, then the newest ones
    assert results["bm25"]["messages"][0]["content"] == old
    # with room for everything, every system holds every turn
    for baseline in BASELINES:
        payload, _ = baseline.run(history, question, 100_000)
        assert len(payload["messages"]) == len(turns) + 1


# -- the whole command ------------------------------------------------------------------


def _slices(tmp_path: Path) -> dict[str, Path]:
    data = json.loads(shared_data("locomo", "30.json").read_text(encoding="utf-8"))
    kept = {k: v for k, v in data.items()
            if not re.match(r"session_\d+", k) or int(re.findall(r"\d+", k)[0]) <= 2}
    ids = {t["dia_id"] for k, v in kept.items() if re.fullmatch(r"session_\d+", k) for t in v}
    kept["qa"] = [q for q in data["qa"] if q["evidence"] and set(q["evidence"]) <= ids][:4]
    locomo_path = tmp_path / "locomo-slice.json"
    locomo_path.write_text(json.dumps(kept), encoding="utf-8")
    dialogues = json.loads(shared_data("zh", "kdconv_travel_test.json").read_text("utf-8"))
    kd_path = tmp_path / "kdconv-slice.json"
    kd_path.write_text(json.dumps(dialogues[:4], ensure_ascii=False), encoding="utf-8")
    trace = json.loads(shared_data("traces", "django__django-11815.traj.json").read_text("utf-8"))
    trace["messages"] = [*trace["messages"][:26], trace["messages"][-1]]  # keep the exit
    trace_path = tmp_path / "short.traj.json"
    trace_path.write_text(json.dumps(trace), encoding="utf-8")
    return {"locomo": locomo_path, "kdconv": kd_path, "trace": trace_path,
            "longmemeval": _tiny_longmemeval(tmp_path / "lme.json")}


def test_the_command_end_to_end(tmp_path: Path) -> None:
    files = _slices(tmp_path)
    out, dump = tmp_path / "report.md", tmp_path / "rows.jsonl"
    text = bench_evidence.main([
        "--locomo", str(files["locomo"]), "--kdconv", str(files["kdconv"]),
        "--kdconv-dialogues", "4", "--kdconv-questions", "3",
        "--longmemeval", str(files["longmemeval"]), "--traces", str(files["trace"]),
        "--budgets", "600", "50000", "--trace-budgets", "3000", "--feed", "live", "bulk",
        "--write", str(out), "--dump", str(dump)])
    assert out.read_text(encoding="utf-8") == text
    rows = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    systems = {"memci-live", "memci-bulk", "window", "trim_messages", "bm25"}
    questions = {(r["dataset"], r["question"]) for r in rows}
    assert {d for d, _ in questions} == {"locomo", "kdconv", "longmemeval"}
    assert len(rows) == len(questions) * 2 * len(systems)
    assert {r["system"] for r in rows} == systems
    for r in rows:
        assert set(r["strict"]) <= set(r["fuzzy"]) <= set(r["evidence"])
        assert 0 < r["tokens"] <= r["budget"], (r["system"], r["tokens"], r["budget"])
        assert r["build_ms"] >= 0
        if r["budget"] == 50000 and r["system"] in ("window", "bm25"):
            # everything fits: a baseline that sends the whole conversation holds it all
            assert r["strict"] == r["evidence"], r
    small = [r for r in rows if r["budget"] == 600 and r["system"] == "window"]
    assert any(r["strict"] != r["evidence"] for r in small)  # the budget binds
    for dataset in ("locomo", "kdconv", "longmemeval"):
        for system in ("memci (built every turn)", "memci (history imported)",
                       "sliding window", "langchain trim_messages", "BM25 top-10 + newest"):
            for budget in ("600", "50,000"):
                assert re.search(rf"\| {dataset} \| {budget} \| {re.escape(system)} \|", text)
    trace_rows = [line for line in text.splitlines() if line.startswith("| short |")]
    assert len(trace_rows) == 2  # memci and the sliding window


def test_trace_replay_skips_exit_and_sees_the_newest_output(tmp_path: Path) -> None:
    path = _slices(tmp_path)["trace"]
    messages = read_trace(path)
    assert all(m["role"] in ("system", "user", "assistant", "tool") for m in messages)
    ours, window = replay(path, 200_000, tmp_path)
    assistants = sum(1 for m in messages if m["role"] == "assistant")
    assert len(ours.tokens) == len(window.tokens) == assistants
    # nothing binds at 200k: the window sends everything, so it sees every newest output
    # and every recent assistant message
    assert window.newest_seen == window.newest_asked > 0
    assert sum(window.last_present) == sum(window.last_wanted)
    assert ours.newest_asked == window.newest_asked


def test_skipped_parts_are_not_run() -> None:
    text = bench_evidence.main(["--quick", "--skip", "locomo", "kdconv", "traces"])
    assert text.startswith("# What the request holds")
    assert "| locomo |" not in text and "## Tool loops" not in text


def test_quick_never_drops_a_flag_given(tmp_path: Path) -> None:
    lme = ROOT / "tests" / "trace_samples" / "longmemeval--items.json"
    text = bench_evidence.main(["--quick", "--longmemeval", str(lme), "--budgets", "1000",
                                "--skip", "locomo", "kdconv", "traces"])
    assert "| longmemeval | 1,000 |" in text and "| 2,000 |" not in text
    given = bench_evidence.plan(bench_evidence.parse([
        "--quick", "--budgets", "500", "--trace-budgets", "3000", "--feed", "bulk",
        "--max-questions", "5", "--locomo", "a.json", "b.json", "--traces", "t.json",
        "--longmemeval", str(lme)]))
    assert (given.budgets, given.trace_budgets, given.feeds, given.max_questions) == (
        [500], [3000], ["bulk"], 5)
    assert given.locomo == [Path("a.json"), Path("b.json")]  # not cut to the first
    assert given.traces == [Path("t.json")] and given.longmemeval == [lme]
    quick = bench_evidence.plan(bench_evidence.parse(["--quick"]))
    assert (quick.budgets, quick.trace_budgets, quick.max_questions) == ([2000, 8000],
                                                                         [8000], 20)
    assert len(quick.locomo) <= 1 and len(quick.traces) <= 1
    full = bench_evidence.plan(bench_evidence.parse(["--skip", "longmemeval"]))
    assert full.budgets == [2000, 4000, 8000] and full.max_questions is None


# -- haystacks made from LoCoMo ---------------------------------------------------------


def _other_locomo(path: Path) -> Path:
    """A second LoCoMo-kind file: the first one's distractors come from it."""
    turns = [{"speaker": ("Cy", "Di")[i % 2], "dia_id": f"D{n}:{i + 1}",
              "text": f"talk {n}-{i} about gardening and tomatoes"}
             for n in (1, 2) for i in range(3)]
    data = {"speaker_a": "Cy", "speaker_b": "Di",
            "session_1_date_time": "8:00 am on 1 May, 2021", "session_1": turns[:3],
            "session_2_date_time": "8:00 am on 9 May, 2021", "session_2": turns[3:],
            "qa": [{"question": "When did Cy plant tomatoes?", "answer": "May 2021",
                    "evidence": ["D2:1"], "category": 2},
                   {"question": "What does Di grow?", "answer": "tomatoes",
                    "evidence": ["D1:2"], "category": 4}]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_haystacks_are_dated_longmemeval_items(tmp_path: Path) -> None:
    files = [_tiny_locomo(tmp_path / "ana.json"), _other_locomo(tmp_path / "cy.json")]
    items = haystacks(files, tokens=10, relative=5, seed=3)
    assert items == haystacks(files, tokens=10, relative=5, seed=3)  # deterministic
    kinds = {item["question_id"]: item["question_type"] for item in items}
    assert kinds["cy:q0"] == "temporal-reasoning"  # category 2
    assert any(qid.endswith(":when") for qid in kinds)  # asked again naming when
    for item in items:
        conv = item["question_id"].split(":")[0]
        dates = [datetime.strptime(d, "%Y/%m/%d (%a) %H:%M") for d in item["haystack_dates"]]
        asked = datetime.strptime(item["question_date"], "%Y/%m/%d (%a) %H:%M")
        assert dates == sorted(dates) and asked > dates[-1]
        own = {s for s in item["haystack_session_ids"] if s.startswith(f"{conv}:")}
        assert own == set(item["answer_session_ids"])  # no other session of its own
        assert len(own) < len(item["haystack_session_ids"])  # distractors from the other
        assert any(t["has_answer"] for s in item["haystack_sessions"] for t in s)
        if item["question_id"].endswith(":when"):
            # the time it names, read from the question's date, holds the evidence session
            named = time_hint(item["question"], now=asked.replace(tzinfo=UTC))
            said = dates[item["haystack_session_ids"].index(item["answer_session_ids"][0])]
            assert named is not None and named.contains(said)
    made = tmp_path / "lme.json"
    made.write_text(json.dumps(items), encoding="utf-8")
    assert len(longmemeval(made)) == len(items)
    text = bench_evidence.main(["--haystacks", "--locomo", *map(str, files), "--skip",
                                "locomo", "kdconv", "traces", "--budgets", "600"])
    assert "| haystacks | 600 | BM25 top-10 + newest |" in text
