"""A fresh process loads what a build needs and nothing more, and reads no more either.

Each check runs a new Python process (the environment's own ``PYTHONPATH``) and reads
its ``sys.modules``: the server, the CLI, the adapters, the HTTP clients, asyncio, RE2,
the optional models and tokenizers are never imported by ``import memci``, nor by
opening a store, adding messages and building. A public name that lives in such a module
still imports (``from memci import AsyncEngine``): its module loads then.

Opening a store and a long session reads what planning needs (a few integers a message),
never the messages' bodies or the tool outputs: the bytes the process reads from files
(``/proc/self/io``) stay far below what the store holds.
"""

from __future__ import annotations

import functools
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memci

#: Modules a build never needs; each is what one kind of process (a server, a CLI call,
#: an LLM or embedding client, an asyncio app, a local model) pays for on its own. (RE2
#: loads with grep, and with a build whose question asks a kind of answer: see below.)
#: (The tokenizer's table is read through the package's loader, not importlib.resources.)
HEAVY = (
    "asyncio", "httpx", "fastapi", "starlette", "uvicorn", "pydantic", "click",
    "rich", "numpy", "sentence_transformers", "torch", "jieba", "tiktoken", "openai",
    "opentelemetry", "langchain_core", "socket", "ssl", "importlib.resources", "zipfile",
    "memci._async", "memci.server", "memci.cli", "memci.integrations", "memci.replay",
    "memci.report", "memci.traces", "memci.evidence", "memci.llm._client",
    "memci.llm._aclient", "memci.memory._embed_openai",
)

#: memci's own modules that only some engines, sessions or builds use: ``import memci``
#: leaves them to their first use (summary jobs and the model summarizer: an engine with
#: a model; the docs index and its chunkers: indexing files or a question about them; the
#: query analyzer and the eligibility judge: a build with retrieval that gathers or
#: archives; the LLM answers' readers: a model's reply; the file tools' code: a call of
#: one; the state file: its import or export; copying a store: ``memci migrate``; temporary
#: files: a large output written, a state file saved; hashes (with OpenSSL's): a tool output
#: stored, an erasure; logging: the first message logged; the store's parts
#: for deletions, background jobs, the server's API keys and indexed files: an erasure, an
#: engine with a model, the server, indexing files; the standard library's dataclasses,
#: and the inspect it imports: a caller's ``dataclasses.fields`` of a memci record;
#: pathlib: a store opened; urllib.parse, with ipaddress: a model's endpoint read; the
#: SQLite backend, with sqlite3: a SQLite store opened, never by a PostgreSQL store's process;
#: RE2: grep, or a question that asks a kind of answer).
ON_FIRST_USE = (
    "memci.summarize._jobs", "memci.summarize._llm", "memci.memory._docs",
    "memci.text._chunk", "memci.memory._query", "memci.memory._judge",
    "memci.llm._answers", "memci.tools._files", "memci.workspace._statefile",
    "memci.store._copy", "secrets", "tempfile", "hashlib", "logging",
    "memci.store._erase", "memci.store._sql._erase", "memci.store.sqlite._erase",
    "memci.store._jobs", "memci.store._sql._jobs", "memci.store._keys",
    "memci.store._sql._keys", "memci.store._docs", "memci.store._sql._docs",
    "dataclasses", "inspect", "pathlib", "urllib.parse", "ipaddress",
    "memci.store.sqlite", "sqlite3", "re2",
)

_BUILD = """
import json, sys
import memci
question, answer, follow = json.loads(sys.argv[2])
with memci.Engine.open(sys.argv[1]) as engine:
    s = engine.session("chat")
    s.set_system("You are a helpful assistant.")
    s.add_many([{"role": "user", "content": question},
                {"role": "assistant", "content": answer}])
    s.add({"role": "user", "content": follow})
    s.build().to_openai()
print(json.dumps(sorted(sys.modules)))
"""
#: A build that looks up code among indexed files (its question names a file), and a
#: chat's, with nothing for retrieval to look up there.
_CODE = json.dumps(["where is the parser cache cleared?", "in parser.py, before the second pass",
                    "and the config, 配置文件在哪里?"])
_CHAT = json.dumps(["hi, how are you today?", "fine, thank you", "and the weather, 天气怎么样?"])


def _printed(code: str, *args: str) -> Any:
    """The JSON value a fresh process running ``code`` prints last."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _modules(code: str, *args: str) -> set[str]:
    return set(_printed(code, *args))


@functools.cache
def _bare() -> frozenset[str]:
    """What this interpreter loads before memci: its site hooks (a ``.pth`` file may
    import certifi, hence importlib.resources and zipfile) are not memci's cost."""
    return frozenset(_modules("import json, sys; print(json.dumps(sorted(sys.modules)))"))


def _heavy(modules: set[str]) -> list[str]:
    """The heavy modules a process loaded beyond what a bare interpreter does."""
    return sorted(m for m in modules - _bare()
                  if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_import_memci_loads_nothing_heavy() -> None:
    loaded = _modules("import json, sys, memci; print(json.dumps(sorted(sys.modules)))")
    assert "memci.engine" in loaded  # the check reads the real import
    assert _heavy(loaded) == []


def test_import_memci_leaves_what_some_sessions_use_to_their_first_use() -> None:
    loaded = _modules("import json, sys, memci; print(json.dumps(sorted(sys.modules)))")
    assert "memci.context._builder" in loaded
    assert sorted(set(ON_FIRST_USE) & (loaded - _bare())) == []


def test_a_build_leaves_the_store_parts_it_never_reaches_to_their_first_use(
        tmp_path: Path) -> None:
    # Opening a store, adding and building: no deletion, job or API key, and of indexed
    # files only the records retrieval's docs index names (a new file is marked as
    # holding no unzeroed freed byte: the deletions' module loads then).
    parts = {m for m in ON_FIRST_USE if m.startswith("memci.store.")} - {
        "memci.store._docs", "memci.store.sqlite"}
    memci.Engine.open(tmp_path / "m.db").close()
    loaded = _modules(_BUILD, str(tmp_path / "m.db"), _CHAT)
    assert "memci.store._sql._work" in loaded
    assert sorted(parts & loaded) == []


def test_a_postgresql_store_process_never_loads_the_sqlite_backend() -> None:
    # memci.store loads the SQLite backend (and sqlite3) when a SQLite store is opened.
    from tests import pg

    loaded = _modules(_BUILD, pg.fresh_database(), _CHAT) - _bare()
    assert "memci.store.postgres" in loaded
    assert [m for m in loaded if m == "sqlite3" or m.startswith("memci.store.sqlite")] == []


def test_a_build_imports_neither_dataclasses_nor_inspect(tmp_path: Path) -> None:
    # memci's records are made, copied and read without the standard library's dataclasses
    # (memci._dataclasses): ~20 ms of a cold process with the inspect it imports.
    loaded = _modules(_BUILD, str(tmp_path / "m.db"), _CHAT)
    assert "memci.context._builder" in loaded
    assert sorted({"dataclasses", "inspect"} & (loaded - _bare())) == []


def test_a_build_whose_question_asks_no_kind_of_answer_loads_no_re2(tmp_path: Path) -> None:
    loaded = _modules(_BUILD, str(tmp_path / "m.db"), _CHAT)
    assert "memci.memory._query" in loaded
    assert "re2" not in loaded - _bare()


def test_open_add_and_build_load_nothing_heavy(tmp_path: Path) -> None:
    loaded = _modules(_BUILD, str(tmp_path / "m.db"), _CODE)
    assert "memci.context._builder" in loaded
    assert _heavy(loaded) == []


_RECALL = """
import json, sys
import memci
with memci.Engine.open(sys.argv[1]) as engine:
    earlier = engine.session("monday", user="ada")
    earlier.add_many([
        {"role": "user", "content": "my sister Maya moved to Lisbon last spring"},
        {"role": "assistant", "content": "noted: Maya lives in Lisbon now"}])
    earlier.build()
with memci.Engine.open(sys.argv[1]) as engine:  # a fresh engine: nothing cached
    s = engine.session("tuesday", user="ada")
    for t in range(40):  # more than the budget holds: memory gets room
        s.add_many([{"role": "user", "content": f"Topic {t}: " + "trains and weather " * 30},
                    {"role": "assistant", "content": f"Noted topic {t}. " + "ok " * 30}])
    s.add({"role": "user", "content": "where did my sister Maya move last spring?"})
    shown = s.build(budget=3000).to_openai()
print(json.dumps([json.dumps(shown), sorted(sys.modules)]))
"""


def test_a_build_that_recalls_memory_loads_no_docs_index_ast_or_openssl(
        tmp_path: Path) -> None:
    # A question that names no document or code: the docs index and its chunkers stay
    # unloaded, and so do ast (a model's answer written as a Python dict needs it) and
    # hashlib (with OpenSSL's hashes, ~4 ms): the memory shown is keyed with BLAKE2 alone.
    shown, modules = _printed(_RECALL, str(tmp_path / "m.db"))
    assert "Lisbon" in shown  # the earlier session's memory reached the request
    loaded = set(modules) - _bare()
    assert "memci.memory._query" in loaded
    assert "re2" in loaded  # the question asks "where": RE2 reads its matches for a place
    assert sorted({"memci.memory._docs", "memci.text._chunk", "ast", "hashlib",
                   "_hashlib"} & loaded) == []


def test_a_build_that_logs_nothing_loads_no_logging(tmp_path: Path) -> None:
    # The query analyzer and the eligibility judge log only when a model fails them.
    loaded = _modules(_BUILD, str(tmp_path / "m.db"), _CODE)
    assert "memci.memory._query" in loaded
    assert sorted({"logging", "string"} & (loaded - _bare())) == []


#: The modules that make regular expressions when imported: each makes what every open,
#: add or build runs (JSON values checked, tokens estimated, the connection's and the
#: search index's SQL, the working state's limits, the words of an ASCII text), from the
#: code compiled ahead (``memci._lazy.compile_pattern``). Any other expression is made on
#: its first use (``memci._lazy.LazyPattern``).
COMPILE_AT_IMPORT = frozenset({
    "memci._jsonvalues", "memci.tokens._estimate", "memci.store._sql._conn",
    "memci.store.sqlite._fts", "memci.workspace._limits", "memci.text._analyzer",
})

_COMPILES = """
import _sre, json, re, sys
made, parsed = set(), set()
def caller(depth):
    frame = sys._getframe(depth)
    while frame is not None and frame.f_globals.get("__name__") in (
            "re", "re._compiler", "memci._lazy"):
        frame = frame.f_back
    return frame.f_globals.get("__name__", "") if frame is not None else ""
compile_, make = re._compile, _sre.compile
def spy_compile(pattern, flags):
    parsed.add(caller(2))
    return compile_(pattern, flags)
def spy_make(*args):
    made.add(caller(2))
    return make(*args)
re._compile, _sre.compile = spy_compile, spy_make
import memci
print(json.dumps([sorted(m for m in made if m.startswith("memci")),
                  sorted(m for m in parsed if m.startswith("memci"))]))
"""


def test_import_memci_compiles_only_what_every_build_uses() -> None:
    done = subprocess.run([sys.executable, "-c", _COMPILES], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    made, parsed = json.loads(done.stdout.splitlines()[-1])
    assert "memci._jsonvalues" in made  # the spy sees memci's own expressions
    assert set(made) <= COMPILE_AT_IMPORT, sorted(set(made) - COMPILE_AT_IMPORT)
    # ... each made from its code compiled ahead (memci/_patterns.py): none parsed
    assert parsed == []


_RECORDS = """
import dataclasses, json, sys
import memci, memci.messages, memci.tokens
# What the import made (the classes at the top of memci's modules): a dataclass holds
# __dataclass_fields__, whichever maker made it.
imported = [c for m in list(sys.modules.values()) if m.__name__.startswith("memci")
            for c in vars(m).values() if isinstance(c, type) and c.__module__ == m.__name__
            and "__dataclass_fields__" in c.__dict__]
public = {id(getattr(home, n)) for home in (memci, memci.messages, memci.tokens)
          for n in home.__all__}
def needs_a_dataclass(cls):
    # What a named tuple cannot give: field options, __post_init__, a generic base, a
    # field named as a tuple's method.
    return hasattr(cls, "__post_init__") or hasattr(cls, "__orig_bases__") or any(
        f.default_factory is not dataclasses.MISSING or not (f.repr and f.compare and f.init)
        or f.metadata or f.name in ("count", "index") for f in dataclasses.fields(cls))
print(json.dumps([len(imported)] + [f"{c.__module__}.{c.__qualname__}" for c in imported
                  if c.__dataclass_params__.frozen and id(c) not in public
                  and not needs_a_dataclass(c)]))
"""

#: Frozen internal records that stay dataclasses, with why.
FROZEN_DATACLASSES = {
    "memci.store._search.SearchFilter",  # both backends copy it with dataclasses.replace
}


def test_import_memci_makes_internal_records_as_named_tuples() -> None:
    # A frozen dataclass costs ~0.6 ms to make at import (its methods are compiled from
    # source), a named tuple a fifth of that: an internal record that needs nothing only
    # a dataclass gives is a named tuple (immutable, compared and hashed by value too).
    done = subprocess.run([sys.executable, "-c", _RECORDS], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    made, *frozen = json.loads(done.stdout.splitlines()[-1])
    assert made > 20  # the check sees the import's dataclasses
    assert sorted(set(frozen) - FROZEN_DATACLASSES) == []


@pytest.mark.parametrize(("package", "name", "module"), [
    ("memci", "AsyncEngine", "memci._async"),
    ("memci", "AsyncSession", "memci._async"),
    ("memci.llm", "OpenAIChatClient", "memci.llm._client"),
    ("memci.llm", "PROVIDERS", "memci.llm._client"),
    ("memci.llm", "AsyncAnthropicClient", "memci.llm._aclient"),
    ("memci.llm", "BaseLLMClient", "memci.llm._base"),
    ("memci.memory", "OpenAIEmbedder", "memci.memory._embed_openai"),
    ("memci.memory", "AsyncOpenAIEmbedder", "memci.memory._embed_openai"),
])
def test_a_lazy_public_name_imports_its_module(package: str, name: str, module: str) -> None:
    code = (f"import json, sys\nfrom {package} import {name}\n"
            f"print(json.dumps([getattr({name}, '__module__', ''), sorted(sys.modules)]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    where, loaded = json.loads(done.stdout.splitlines()[-1])
    assert module in loaded
    if name != "PROVIDERS":  # a dict: its module is not its own
        assert where == module


@pytest.mark.parametrize("package", ["memci", "memci.llm", "memci.memory", "memci.summarize",
                                     "memci.text", "memci.workspace"])
def test_every_public_name_resolves_in_a_fresh_process(package: str) -> None:
    code = (f"import {package} as p\nfrom {package} import *\n"
            "missing = [n for n in p.__all__ if getattr(p, n, None) is None]\n"
            "assert not missing, missing\n"
            "assert set(p.__all__) <= set(dir(p))\n"
            "try:\n    p.NoSuchName\nexcept AttributeError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "NoSuchName" in done.stdout


_READS = """
import json, sys
def read():
    for line in open("/proc/self/io"):
        if line.startswith("rchar:"):
            return int(line.split()[1])
import memci
first = read()
engine = memci.Engine.open(sys.argv[1])
opened = read()
session = engine.session("long")
print(json.dumps({"open": opened - first, "session": read() - opened}))
engine.close()
"""


def _long_history(pages: int) -> list[dict[str, Any]]:
    """Pages of a question, a tool call and its ~8 KB output, and an answer."""
    out: list[dict[str, Any]] = []
    for i in range(pages):
        call = f"call_{i}"
        out += [{"role": "user", "content": f"question {i}: " + "why does it fail? " * 300},
                {"role": "assistant", "content": "", "tool_calls": [{
                    "id": call, "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "make"}'}}]},
                {"role": "tool", "tool_call_id": call,
                 "content": f"run {i}\n" + "error: the build failed here\n" * 300},
                {"role": "assistant", "content": f"answer {i}: " + "clear the cache. " * 300}]
    return out


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="reads /proc/self/io")
def test_opening_a_long_session_reads_no_message_body(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with memci.Engine.open(db, synchronous="NORMAL") as engine:
        session = engine.session("long")
        session.add_many(_long_history(150))  # 600 messages, ~3.5 MB of text
        session.build()
    size = db.stat().st_size
    done = subprocess.run([sys.executable, "-c", _READS, str(db)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout.splitlines()[-1])
    assert size > 3_000_000
    # What is left to read: the schema, the session's rows, an index entry a message.
    assert read["open"] < size / 10, (read, size)
    assert read["session"] < size / 10, (read, size)


def test_a_lazy_logger_logs_as_its_named_logger(caplog: pytest.LogCaptureFixture) -> None:
    from memci._lazy import LazyLogger

    with caplog.at_level(logging.INFO, logger="memci.cold"):
        LazyLogger("memci.cold").warning("disk %s is full", "/tmp")
        LazyLogger("memci.cold").info("lease of %s expired", "job 7")
    assert [(r.name, r.levelname, r.getMessage(), r.funcName) for r in caplog.records] == [
        ("memci.cold", "WARNING", "disk /tmp is full",
         "test_a_lazy_logger_logs_as_its_named_logger"),
        ("memci.cold", "INFO", "lease of job 7 expired",
         "test_a_lazy_logger_logs_as_its_named_logger")]


_PATH_HINTS = """
import json, sys, typing
bare = "pathlib" in sys.modules  # an interpreter's site (an editable install's finder) may load it
import memci
from memci.store import open_store
before = "pathlib" in sys.modules and not bare
found = [typing.get_type_hints(memci.Engine.open)["path"],
         typing.get_type_hints(memci.Engine.__init__)["artifacts_dir"],
         typing.get_type_hints(open_store)["location"]]
import pathlib
print(json.dumps([before, found == [str | pathlib.Path | None] * 3]))
"""


def test_path_annotations_resolve_to_pathlib_which_loads_on_first_use() -> None:
    # memci._lazy.pathlib: import memci does not load pathlib (with urllib.parse and
    # ipaddress) where the bare interpreter has not, and public signatures that name
    # pathlib.Path still resolve to it.
    done = subprocess.run([sys.executable, "-c", _PATH_HINTS], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == [False, True]


_TABLE_READ = """
import json, sys
import memci
from memci.tokens import _estimate
with memci.Engine.open(sys.argv[1]) as engine:
    session = engine.session("imported", context_window=128_000, retrieval=sys.argv[2] == "on")
    session.build().to_openai()
table = _estimate._loaded
print(json.dumps({"read": table is not None,
                  "ranks": len(table.ranks) if table is not None else 0}))
"""


@pytest.mark.parametrize("retrieval", ["off", "on"])
def test_the_first_build_after_an_import_reads_a_part_of_the_tokenizer_table(
        tmp_path: Path, retrieval: str) -> None:
    # The table holds 100,256 tokens; building all of them is most of a first build's CPU.
    # The build still counts a few kilobytes of new text (the tools' schemas, the floor):
    # only the tokens those texts can hold are read.
    db = tmp_path / "m.db"
    with memci.Engine.open(db, synchronous="NORMAL") as engine:
        engine.session("imported", context_window=128_000,
                       retrieval=retrieval == "on").add_many(_long_history(60))
    done = subprocess.run([sys.executable, "-c", _TABLE_READ, str(db), retrieval],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    table = json.loads(done.stdout.splitlines()[-1])
    assert table["read"], "the first build counted no new text: the test no longer tests"
    assert table["ranks"] < 100_256 // 4, table
