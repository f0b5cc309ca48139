"""memci's public surface is what DESIGN.md promises, and its modules import without cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import memci

SRC = Path(memci.__file__).resolve().parent

PUBLIC = {
    # the engine and a session, and what a build returns
    "Engine", "Session", "SessionStats", "Context", "ContextStats", "Segment", "ToolSpec",
    # what a deletion records in the audit log
    "Erasure",
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
