"""What a fresh ``pip install -e ".[dev]"`` gives is all the type checker may rely on.

CI type-checks ``src/`` in a fresh venv with the dev extra only. A module imported by name
is analysed by mypy, so it must come with that install; an extra the dev install leaves
out (``embeddings``: sentence-transformers and torch) is reached through ``importlib``, so
the checker passes with or without it.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "memci"

# Import names of what the core dependencies and each extra install (their own
# dependencies included where memci imports them by name).
PROVIDED_BY = {
    "click": "core", "rich": "core", "httpx": "core", "anyio": "core", "re2": "core",
    "tiktoken": "tiktoken", "jieba": "jieba",
    "fastapi": "server", "starlette": "server", "pydantic": "server", "uvicorn": "server",
    "h11": "server", "mcp": "mcp", "mcp_types": "mcp", "jsonschema": "mcp",
    "sqlite_vec": "vectors", "pysqlite3": "vectors",
    "psycopg": "postgres", "psycopg_pool": "postgres",
    "opentelemetry": "otel",
    "agents": "openai-agents", "openai": "openai-agents",
    "langchain": "langchain", "langchain_core": "langchain", "langgraph": "langchain",
    "pydantic_ai": "pydantic-ai", "llama_index": "llama-index",
}


def _imported_roots() -> dict[str, list[str]]:
    roots: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                roots.setdefault(name.split(".")[0], []).append(
                    f"{path.relative_to(ROOT)}:{node.lineno}")
    return roots


def _dev_extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: set[str] = {"core"}
    for requirement in project["optional-dependencies"]["dev"]:
        match = re.fullmatch(r"memci\[([^\]]+)\]", requirement.replace(" ", ""))
        if match:
            extras.update(match.group(1).split(","))
    return extras


def test_every_module_imported_by_name_comes_with_the_dev_install() -> None:
    dev = _dev_extras()
    stdlib = set(sys.stdlib_module_names)
    wrong = {
        root: where for root, where in _imported_roots().items()
        if root not in stdlib and root not in {"memci", "__future__"}
        and PROVIDED_BY.get(root) not in dev
    }
    assert not wrong, (
        f"imported by name but not installed by pip install -e '.[dev]': {wrong}; "
        "reach optional extras through importlib, or add the extra to dev"
    )
