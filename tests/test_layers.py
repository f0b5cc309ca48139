"""memci's layers: no module imports a module of a higher layer; and one meaning per name.

:data:`LAYERS` is the one table of the layers, from the bottom up; ``docs/architecture.md``
draws the same table (a test below keeps the two equal). A module belongs to the layer
that names its first package or module under ``memci`` (``memci.store.sqlite._db`` is
in ``store``); the package ``memci`` itself (its ``__init__``, the public face) is in
``session``. A module may import from its own layer and from any layer below it.

Every import counts: at the top of a module, inside a function, and under
``if TYPE_CHECKING:``, absolute or relative.

A public name (a function or class not starting with ``_``) is defined once in the
package, so it means one thing wherever it is read: ``is_cjk`` is about one character,
``has_cjk`` about a text. The exceptions are parallels: the same function for each store
backend or each framework adapter, and the few listed in :data:`PARALLELS`.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path

import memci

SRC = Path(memci.__file__).resolve().parent
DOCS = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"

#: The layers, from the bottom up: (name, the packages and modules under ``memci`` in it).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("errors", "_version", "_jsonvalues", "_models", "_trace", "_lazy",
              "_patterns", "_dataclasses", "_inits", "_records")),
    ("text", ("text",)),
    ("messages", ("messages",)),
    ("tokens", ("tokens",)),
    ("store", ("store",)),
    ("llm", ("llm",)),
    ("memory", ("memory",)),
    ("workspace", ("workspace",)),
    ("summarize", ("summarize",)),
    ("build", ("context",)),
    ("tools", ("tools",)),
    ("session", ("_session", "_sessioncache", "engine", "_async", "memci")),
    ("interfaces", ("traces", "evidence", "replay", "report", "server", "cli",
                    "integrations", "__main__")),
)

_NAME = {part: name for name, parts in LAYERS for part in parts}


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path`` (a package is its ``__init__``)."""
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of memci, by dotted name."""
    return {module_name(p): p for p in SRC.rglob("*.py")}


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The module an ``ImportFrom`` names, with a relative one resolved against ``module``."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported(source: str, module: str, known: set[str], *, is_package: bool = False
             ) -> Iterator[tuple[str, int]]:
    """``(memci module, line)`` for every import in ``source``, at any depth.

    ``from memci.x import y`` imports ``memci.x.y`` when that is a module, else ``memci.x``
    (a name it defines or re-exports).
    """
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "memci":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, is_package, node)
            if target.split(".")[0] != "memci":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in known else target), node.lineno


def layer_of(module: str) -> str:
    """The layer ``module`` belongs to; an unplaced module fails here, naming itself."""
    parts = module.split(".")
    part = parts[1] if len(parts) > 1 else "memci"
    assert part in _NAME, f"{module} is in no layer: add {part!r} to LAYERS (and the docs)"
    return _NAME[part]


def sources() -> dict[str, tuple[str, bool]]:
    """Every module of memci: its text and whether it is a package's ``__init__``."""
    return {name: (path.read_text(encoding="utf-8"), path.name == "__init__.py")
            for name, path in modules().items()}


def upward_imports(found: Mapping[str, tuple[str, bool]]) -> list[str]:
    """Every import of a higher layer, as ``module (layer):line -> target (layer)``."""
    known = set(found)
    rank = {name: r for r, (name, _) in enumerate(LAYERS)}
    out = []
    for module, (text, is_package) in sorted(found.items()):
        mine = layer_of(module)
        for target, line in imported(text, module, known, is_package=is_package):
            theirs = layer_of(target)
            if rank[theirs] > rank[mine]:
                out.append(f"{module} ({mine}):{line} -> {target} ({theirs})")
    return list(dict.fromkeys(out))  # one line per arrow, however many names it brings


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_no_layer_imports_a_higher_one() -> None:
    assert upward_imports(sources()) == []


def test_every_kind_of_import_is_seen() -> None:
    source = """
from typing import TYPE_CHECKING
import memci.store
from memci import _trace, __version__
from . import _items
from ..store import Store
if TYPE_CHECKING:
    from memci.tools._host import ToolHost
def late() -> None:
    from memci.engine import Engine
"""
    known = {"memci", "memci._trace", "memci.store", "memci.memory._items", "memci.tools._host",
             "memci.engine"}
    found = [t for t, _ in imported(source, "memci.memory._docs", known)]
    assert found == ["memci.store", "memci._trace", "memci", "memci.memory._items",
                     "memci.store", "memci.tools._host", "memci.engine"]


def test_a_higher_import_is_reported() -> None:
    # The check itself can fail: the store importing a tool inside a function runs up.
    found = {
        "memci.store._log": ("def f() -> None:\n    from memci.tools._registry import Tool\n",
                             False),
        "memci.tools._registry": ("from memci.store import Store\n", False),
        "memci.store": ("", True),
    }
    assert upward_imports(found) == [
        "memci.store._log (store):2 -> memci.tools._registry (tools)"]


def _documented_layers() -> list[tuple[str, tuple[str, ...]]]:
    """The layer table of docs/architecture.md (after ``<!-- layers -->``), bottom up.

    Each row is ``| name | `a/`, `b.py` … |``, the top layer first, as drawn.
    """
    text = DOCS.read_text(encoding="utf-8").split("<!-- layers -->", 1)[1]
    rows = []
    for line in text.strip().splitlines():
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        names = re.findall(r"`([\w.]+?)(?:/|\.py)?`", cells[1]) if len(cells) > 1 else []
        if names:
            rows.append((cells[0], tuple(names)))
    return rows[::-1]


def test_the_docs_draw_the_same_layers() -> None:
    assert _documented_layers() == list(LAYERS)


# -- one meaning per name ----------------------------------------------------------------

#: Where parallels live: one store backend per package, one framework adapter per module.
BACKENDS = ("memci.store.sqlite", "memci.store.postgres")
ADAPTERS = "memci.integrations"
#: Other names defined twice on purpose, with why.
PARALLELS = {
    # memci.server's lazy wrappers: they import the server's extra only when called
    "create_app": {"memci.server", "memci.server._app"},
    "create_mcp_server": {"memci.server", "memci.server._mcp"},
    # every tool a session can run: as runnable tools (from its settings, for the engine)
    # and as the specs an adapter registers (from the session)
    "every_tool": {"memci._session", "memci.integrations._common"},
    # run the server; run a call in turn with a session's other adapter calls
    "run": {"memci.server._run", "memci.integrations._aio"},
}


def definitions(found: Mapping[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Public name -> the modules that define it (top-level functions and classes)."""
    where: dict[str, set[str]] = defaultdict(set)
    for module, (text, _) in found.items():
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and (
                    not node.name.startswith("_")):
                where[node.name].add(module)
    return where


def _parallel(module: str) -> str | None:
    """The backend or adapter ``module`` belongs to (None: neither)."""
    for backend in BACKENDS:
        if module.startswith(f"{backend}."):
            return backend
    return module if module.startswith(f"{ADAPTERS}.") else None


def names_with_two_meanings(found: Mapping[str, tuple[str, bool]]) -> dict[str, list[str]]:
    """Public names defined in more than one module, less the parallels."""
    out = {}
    for name, modules in definitions(found).items():
        if len(modules) < 2 or modules == PARALLELS.get(name):
            continue
        owners = [_parallel(m) for m in modules]
        if None not in owners and len(set(owners)) == len(owners):
            continue  # the same function for each backend or adapter
        out[name] = sorted(modules)
    return out


def test_one_meaning_per_name() -> None:
    assert names_with_two_meanings(sources()) == {}


def test_a_name_with_two_meanings_is_reported() -> None:
    found = {
        "memci.text._script": ("def is_cjk(char: str) -> bool: ...\n", False),
        "memci.memory._text": ("def is_cjk(text: str) -> bool: ...\n", False),
        "memci.store.sqlite._db": ("class Database: ...\n", False),
        "memci.store.postgres._db": ("class Database: ...\n", False),
    }
    assert names_with_two_meanings(found) == {
        "is_cjk": ["memci.memory._text", "memci.text._script"]}
