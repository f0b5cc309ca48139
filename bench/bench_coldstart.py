"""What a fresh process pays: importing memci, opening a large store, its first build.

Run: python bench/bench_coldstart.py [--repeats N] [--quick] [--json] [--against SRC]

Every figure is taken in a new Python process (``sys.executable``, the same environment
but with bytecode caching on, as an installed package has it: ``PYTHONDONTWRITEBYTECODE``
is dropped and a first, uncounted run writes the cache), ``--repeats`` times (default 7;
``--quick``: 3 unless given, and the 100k cases left out), and printed as median and p90 of the wall
time and of the CPU time (user + system: on shared cores, the steadier of the two):

- ``import``: the whole process of ``python -c "import X"`` for memci beside the floor
  (``pass``) and two reference points (``sqlite3``; ``langchain_core`` when installed),
  and ``import memci`` as the child measures it itself;
- ``open 100k``: a store holding one 100,000-message session (made once by the bench in a
  temporary directory, reused by every repeat): open it, add a question (open+add), the
  first build, and the two together (total); with retrieval on (memci's default: the
  question is searched for) and off;
- ``import N``: a store N messages (10k, 100k) were imported into with ``add_many`` (in
  batches of 5,000, with the settings the child opens it with: retrieval off or on, 128k
  window) and never built (made once, copied for each repeat): open it and build. What
  the import itself took (CPU of the importing process, once) is printed beside it: a
  bulk ``add_many`` pages what it writes, so the first build has nothing to catch up on.

A build's request (``to_openai()``) is hashed in each child: every repeat of a case must
give the same one (the bench fails otherwise), and a change that makes the cold path
faster can be checked to make the same request (``--json`` prints the hashes).

``--against SRC`` compares two trees in one run: every fresh process of this tree is
followed by the same process with ``PYTHONPATH=SRC`` (another checkout's ``src``), so
both meet the same load on shared cores; both figures are printed with their ratio, and
a case whose requests differ between the trees says so (a change of what the request
holds, not only of its speed). Each tree opens stores its own memci wrote (a store keeps
counts as the version that saved them counts them, and another version may count them
again): the stores are made in a child process of each tree.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _histories import agent_history

QUESTION = "where does the parser read the config twice?"

# The child of every store case. It times itself: the figure is what a user of the
# process sees (the interpreter's own start-up is in the import rows).
_CHILD = """
import hashlib, json, sys, time
def now():
    return time.perf_counter(), time.process_time()
t0 = now()
import memci
t1 = now()
path, retrieval, question = sys.argv[1], sys.argv[2] == "on", sys.argv[3]
eng = memci.Engine.open(path, synchronous="NORMAL")
s = eng.session("big", context_window=128_000, retrieval=retrieval)
if question:
    s.add({"role": "user", "content": question})
t2 = now()
ctx = s.build()
t3 = now()
payload = json.dumps(ctx.to_openai(), sort_keys=True).encode()
out = {"sha": hashlib.sha256(payload).hexdigest()[:16]}
for i, clock in enumerate(("ms", "cpu_ms")):
    out["import_" + clock] = (t1[i] - t0[i]) * 1000
    out["open_add_" + clock] = (t2[i] - t1[i]) * 1000
    out["build_" + clock] = (t3[i] - t2[i]) * 1000
print(json.dumps(out))
eng.close()
"""


# A fresh process reads the compiled modules, as it does when memci is installed.
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"median": statistics.median(ordered), "p90": p90}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


#: The trees measured, by label: this one's environment, and ``--against``'s if given.
_TREES: dict[str, dict[str, str]] = {"": _ENV}


def _wall_ms(code: str, repeats: int) -> dict[str, Any]:
    """Whole-process wall and CPU time of ``python -c code`` (start-up included)."""
    times: dict[str, list[float]] = {label: [] for label in _TREES}
    cpu: dict[str, list[float]] = {label: [] for label in _TREES}
    for _ in range(repeats + 1):  # the first run warms the file cache and is dropped
        for label, env in _TREES.items():  # the trees alternate: the same load for both
            started, used = time.perf_counter(), _children_cpu()
            subprocess.run([sys.executable, "-c", code], check=True, env=env)
            times[label].append((time.perf_counter() - started) * 1000)
            cpu[label].append((_children_cpu() - used) * 1000)
    return _by_tree({label: {**_stats(times[label][1:]), "cpu": _stats(cpu[label][1:])}
                     for label in _TREES})


def _by_tree(figures: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """This tree's figures, with the other tree's under ``against`` when compared."""
    out = figures[""]
    if "against" in figures:
        out["against"] = figures["against"]
    return out


def _child(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """One fresh process of the open or import case: its own figures and request hash."""
    done = subprocess.run([sys.executable, "-c", _CHILD, *args],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the {args[0]} case failed:\n{done.stderr}")
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures


def imports(repeats: int) -> dict[str, Any]:
    rows: dict[str, Any] = {"python -c pass": _wall_ms("pass", repeats),
                            "import sqlite3": _wall_ms("import sqlite3", repeats)}
    if importlib.util.find_spec("langchain_core") is not None:
        rows["import langchain_core"] = _wall_ms(
            "import langchain_core.messages", repeats)
    rows["import memci"] = _wall_ms("import memci", repeats)
    return rows


def imported_store(path: Path, n: int, *, retrieval: bool = True) -> float:
    """One session of ``n`` messages imported with ``add_many`` at ``path``, never built.

    Returns the import's CPU ms.
    """
    import memci

    history = agent_history(n)
    started = time.process_time()
    with memci.Engine.open(path, synchronous="NORMAL") as eng:
        s = eng.session("big", context_window=128_000, retrieval=retrieval)
        s.set_system("You are a coding agent.")
        for i in range(0, len(history), 5000):
            s.add_many(history[i : i + 5000])
    return (time.process_time() - started) * 1000


def built_store(imported: Path, path: Path) -> None:
    """A copy of an imported store at ``path``, after its first build (pages committed)."""
    import memci

    shutil.copyfile(imported, path)
    with memci.Engine.open(path, synchronous="NORMAL") as eng:
        eng.session("big").build()


def _made(args: list[str], label: str) -> float:
    """Run this file's ``--make`` in a child of tree ``label``: a store its memci wrote."""
    done = subprocess.run([sys.executable, __file__, "--make", *args], capture_output=True,
                          text=True, env=_TREES[label])
    if done.returncode != 0:
        raise SystemExit(f"making the store {args[1]} failed:\n{done.stderr}")
    return float(done.stdout.split()[-1])


def stores(tmp: Path, sizes: tuple[int, ...]) -> dict[str, dict[str, tuple[Path, float]]]:
    """Every tree's stores by case: ``open`` (the largest, built) and each import's."""
    out: dict[str, dict[str, tuple[Path, float]]] = {}
    for label in _TREES:
        made: dict[str, tuple[Path, float]] = {}
        for n in sizes:
            for on in ("off", "on"):
                path = tmp / f"{label or 'this'}-imported-{n}-{on}.db"
                made[f"import {n // 1000}k, retrieval {on}"] = (
                    path, _made(["import", str(path), str(n), on], label))
        imported = made[f"import {max(sizes) // 1000}k, retrieval on"][0]
        built = tmp / f"{label or 'this'}-built.db"
        _made(["build", str(imported), str(built)], label)
        # The default configuration (retrieval on) first; off beside it for reference.
        opened = f"open {max(sizes) // 1000}k store, add, build, retrieval"
        out[label] = {f"{opened} on": (built, 0.0), f"{opened} off": (built, 0.0), **made}
    return out


def cold(templates: dict[str, Path], tmp: Path, repeats: int, *, retrieval: bool,
         question: str) -> dict[str, Any]:
    """Fresh processes, each on a fresh copy of its tree's template: open (+ add), build."""
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in _TREES}
    for r in range(-1, repeats):  # run -1 warms the file and bytecode caches, uncounted
        for label, env in _TREES.items():
            path = tmp / f"run-{r}{label}.db"
            shutil.copyfile(templates[label], path)
            runs[label].append(_child([str(path), "on" if retrieval else "off", question],
                                      env))
            path.unlink()
    return _by_tree({label: _summary(tree) for label, tree in runs.items()})


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians and p90s of a tree's repeats (the first, warming run only for its request)."""
    if len({r["sha"] for r in runs}) != 1:
        raise SystemExit(f"the requests differ between repeats: {runs}")
    out: dict[str, Any] = {"request_sha": runs[0]["sha"]}
    runs = runs[1:]
    for clock, suffix in (("wall", "ms"), ("cpu", "cpu_ms")):
        out[clock] = {"import": _stats([r["import_" + suffix] for r in runs]),
                      "open_add": _stats([r["open_add_" + suffix] for r in runs]),
                      "first_build": _stats([r["build_" + suffix] for r in runs]),
                      "total": _stats([r["open_add_" + suffix] + r["build_" + suffix]
                                       for r in runs])}
    return out


def _row(name: str, wall: dict[str, float], cpu: dict[str, float]) -> str:
    return (f"  {name:<30} wall median {wall['median']:7.1f} p90 {wall['p90']:7.1f}   "
            f"cpu median {cpu['median']:7.1f} p90 {cpu['p90']:7.1f} ms")


def _against(name: str, wall: dict[str, float], cpu: dict[str, float],
             mine: dict[str, float]) -> str:
    """The ``--against`` tree's row, with this tree's CPU median over it."""
    return (_row(f"  {name} (--against)", wall, cpu)
            + f"   (this tree {mine['median'] / cpu['median']:.2f}x)")


def report(result: dict[str, Any]) -> None:
    print("import (whole process, start-up included)")
    floor = result["imports"]["python -c pass"]["cpu"]["median"]
    for name, s in result["imports"].items():
        print(_row(name, s, s["cpu"]) + f"   (cpu {s['cpu']['median'] / floor:.1f}x the floor)")
        if "against" in s:
            print(_against(name, s["against"], s["against"]["cpu"], s["cpu"]))
    for case, s in result["cases"].items():
        print(case)
        label = "open + add a question" if case.startswith("open") else "open"
        steps = [("import memci (in the child)", "import"), (label, "open_add"),
                 ("first build", "first_build")]
        if case.startswith("open"):
            steps.append(("total (open + add + build)", "total"))
        for name, key in steps:
            print(_row(name, s["wall"][key], s["cpu"][key]))
            if "against" in s:
                other = s["against"]
                print(_against(name, other["wall"][key], other["cpu"][key], s["cpu"][key]))
        if not case.startswith("open"):
            print(f"  {'the import itself (once)':<30} cpu {s['import_cpu_ms']:9.1f} ms")
        if "against" in s and s["against"]["request_sha"] != s["request_sha"]:
            print("  the two trees' requests differ")


def main() -> None:
    if sys.argv[1:2] == ["--make"]:  # a child making a store (see stores)
        what, *rest = sys.argv[2:]
        if what == "import":
            print(imported_store(Path(rest[0]), int(rest[1]), retrieval=rest[2] == "on"))
        else:
            built_store(Path(rest[0]), Path(rest[1]))
            print(0.0)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int,
                        help="fresh processes per figure (default 7; --quick: 3)")
    parser.add_argument("--quick", action="store_true",
                        help="no 100k cases, and 3 repeats unless --repeats says")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--against", metavar="SRC",
                        help="another tree's src folder, run alternately with this one")
    args = parser.parse_args()
    if args.against:
        _TREES["against"] = {**_ENV, "PYTHONPATH": str(Path(args.against).resolve())}
    repeats = args.repeats or (3 if args.quick else 7)
    sizes = (10_000,) if args.quick else (10_000, 100_000)
    result: dict[str, Any] = {"imports": imports(repeats), "cases": {}}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        made = stores(tmp, sizes)
        for name, (_, import_ms) in made[""].items():
            result["cases"][name] = cold(
                {label: cases[name][0] for label, cases in made.items()}, tmp, repeats,
                retrieval=name.endswith("on"),
                question=QUESTION if name.startswith("open") else "")
            if not name.startswith("open"):
                result["cases"][name]["import_cpu_ms"] = import_ms
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)


if __name__ == "__main__":
    main()
