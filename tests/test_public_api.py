"""memci's public surface is what DESIGN.md promises, whole, and its modules import without cycles.

Whole: every type a public method of a public class returns (and every field of what it
returns) is importable from ``memci``, and so is every error memci defines.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import pkgutil
import re
import typing
from collections.abc import Iterator
from pathlib import Path

import memci
import memci.errors
from tests.test_layers import imported, sources

SRC = Path(memci.__file__).resolve().parent

PUBLIC = {
    # the engine and a session, and what a build returns
    "Engine", "Session", "SessionStats", "Context", "ContextStats", "Segment", "ToolSpec",
    # what a deletion records in the audit log
    "Erasure",
    # what public methods return: pages, settings, sessions' records, search hits,
    # long-term memory, the working state
    "PageInfo", "SessionSettings", "SessionRecord", "Hit", "IndexReport", "Memory",
    "MemoryItem", "Gatherer", "RetrievalResult", "Retrieved", "WorkState", "Pin", "PlanItem",
    "NoteEntry", "MemoEntry", "WorkEvent", "WorkspaceLimits", "TTL",
    # the same for asyncio
    "AsyncEngine", "AsyncSession",
    # messages
    "Message", "TextPart", "ImagePart", "ToolCallPart", "ToolResultPart", "ReasoningPart",
    # the error tree
    "MemciError", "ConfigError", "BudgetTooSmallError", "InvalidInputError", "InvalidMessageError",
    "InvalidTextError", "InvalidTimestampError", "InvalidToolArgumentsError",
    "InvalidFileError", "InvalidToolError", "ToolNameClashError", "MessageTooLargeError",
    "MissingExtraError", "OrphanToolResultError", "OwnerConflictError",
    "StoreError", "StoreCorruptError", "StoreFullError", "TokenizerUnavailableError",
    "UnknownRoleError", "UnknownSessionError", "UnknownMessageError", "LLMError",
    "LLMConnectionError", "LLMHTTPError", "LLMResponseError", "LLMTimeoutError",
    "UnknownToolError", "WorkspaceError", "ArtifactNotFoundError", "UnknownItemError",
    "WorkspaceLimitError", "RollbackConflictError", "InvalidStateFileError",
    # modules and the version
    "messages", "tokens", "__version__",
}


def test_all_is_the_public_surface() -> None:
    assert set(memci.__all__) == PUBLIC
    for name in memci.__all__:
        assert getattr(memci, name) is not None
    assert issubclass(memci.StoreFullError, memci.StoreError)
    assert all(issubclass(getattr(memci, n), memci.MemciError)
               for n in PUBLIC if n.endswith("Error") and n != "MemciError")


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Module -> the memci modules it imports at its top level (TYPE_CHECKING too)."""
    files = {_module(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        if path.name == "__init__.py":
            continue  # packages re-export; the modules behind them are what import
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes: list[ast.stmt] = list(tree.body)
        for node in tree.body:
            if isinstance(node, ast.If):  # ``if TYPE_CHECKING:`` blocks count
                nodes.extend(node.body)
        for node in nodes:
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target in files and target != name and not str(
                        files[target]).endswith("__init__.py"):
                    edges.add(target)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(_imports()) == []


# -- a whole surface ------------------------------------------------------------------------

#: Where a public type may be imported from: memci, and the documented public subpackages.
PUBLIC_HOMES = (memci, memci.messages, memci.tokens)
#: The classes whose public methods make the surface; what they return is followed too.
ROOTS = ("Engine", "Session", "AsyncEngine", "AsyncSession", "Context", "ToolSpec")


def _is_public(cls: type) -> bool:
    return any(getattr(home, cls.__name__, None) is cls for home in PUBLIC_HOMES)


def _classes_in(annotation: object) -> Iterator[type]:
    """The classes an annotation names: Optional, list, tuple, dict, Iterator … unwrapped."""
    if isinstance(annotation, list):  # the arguments of a Callable
        for item in annotation:
            yield from _classes_in(item)
    elif typing.get_origin(annotation) is None:
        if isinstance(annotation, type):
            yield annotation
    else:
        for arg in typing.get_args(annotation):
            yield from _classes_in(arg)


def _namespace() -> dict[str, object]:
    # Names a module imports only for type checking resolve when memci exports them; one
    # that it does not export fails to resolve, and the test names it. A name that loads
    # on first use (memci._lazy) is read, so it resolves whether or not it was read before.
    return {k: getattr(home, k) for home in PUBLIC_HOMES for k in dir(home)}


def _returned(cls: type) -> Iterator[tuple[str, object]]:
    """``(member, annotation)`` for every public method's and property's return, and for
    every field of a dataclass or named tuple."""
    ns = _namespace()
    for name in dir(cls):
        if name.startswith("_"):
            continue
        raw = inspect.getattr_static(cls, name)
        fn = raw.fget if isinstance(raw, property) else getattr(raw, "__func__", raw)
        if not inspect.isfunction(fn):
            continue
        hints = typing.get_type_hints(fn, localns=ns)
        if "return" in hints:
            yield f"{cls.__name__}.{name}", hints["return"]
    if dataclasses.is_dataclass(cls) or hasattr(cls, "_fields"):
        for name, hint in typing.get_type_hints(cls, localns=ns).items():
            if not name.startswith("_"):
                yield f"{cls.__name__}.{name}", hint


def test_every_type_a_public_method_returns_is_public() -> None:
    missing: dict[str, list[str]] = {}
    todo = [getattr(memci, name) for name in ROOTS]
    seen: set[type] = set()
    while todo:
        cls = todo.pop()
        if cls in seen or not cls.__module__.startswith("memci"):
            continue
        seen.add(cls)
        for where, annotation in _returned(cls):
            for found in _classes_in(annotation):
                if not found.__module__.startswith("memci"):
                    continue
                if not _is_public(found):
                    missing.setdefault(f"{found.__module__}.{found.__qualname__}", []).append(
                        where)
                todo.append(found)
    assert missing == {}
    assert {memci.Pin, memci.Hit, memci.WorkState, memci.PageInfo} <= seen


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _every_error() -> set[type]:
    """Every MemciError subclass memci defines, with every module of memci imported."""
    for module in pkgutil.walk_packages(memci.__path__, "memci."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    return {c for c in _subclasses(memci.MemciError) if c.__module__.startswith("memci")}


def test_every_error_is_in_the_one_tree() -> None:
    errors = _every_error()
    assert {e.__name__ for e in errors} >= {"WorkspaceError", "UnknownToolError"}
    for error in errors | {memci.MemciError}:
        name = error.__name__
        assert getattr(memci.errors, name, None) is error and name in memci.errors.__all__
        assert getattr(memci, name, None) is error and name in memci.__all__


def _drawn_tree() -> list[tuple[str, str]]:
    """``(child, parent)`` for every line of the tree drawn in memci.errors' docstring."""
    edges = []
    path: list[str] = []
    for line in (memci.errors.__doc__ or "").splitlines():
        found = re.match(r"^ {4}((?:[│ ] {3})*)(?:[├└]── )?(\w+Error)\b", line)
        if not found:
            continue
        depth = len(found.group(1)) // 4 + (1 if "──" in line else 0)
        path[depth:] = [found.group(2)]
        if depth:
            edges.append((found.group(2), path[depth - 1]))
    return edges


def test_the_error_tree_is_drawn_whole() -> None:
    edges = _drawn_tree()
    drawn = {child for child, _ in edges}
    assert drawn == {e.__name__ for e in _every_error()}
    for child, parent in edges:
        assert issubclass(getattr(memci.errors, child), getattr(memci.errors, parent)), (
            f"{child} is drawn under {parent}")


def test_integrations_use_public_names_only() -> None:
    allowed = {"memci", "memci.errors", "memci.messages", "memci.tokens"}
    found = sources()
    private = [
        f"{module}:{line} imports {target}"
        for module, (text, is_package) in sorted(found.items())
        if module.startswith("memci.integrations")
        for target, line in imported(text, module, set(found), is_package=is_package)
        if target not in allowed and not target.startswith("memci.integrations")
    ]
    assert private == []
