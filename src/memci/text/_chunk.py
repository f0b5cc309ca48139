"""Cutting files into chunks for the document and code index, with 1-based line ranges.

- Markdown: sections by heading (never inside a fenced code block), small sibling
  sections packed together, large ones split at paragraphs; a chunk's title is its heading
  path ("Install > From source").
- Plain text: paragraphs packed into chunks.
- Python: by :mod:`ast` — each function, and each class (or, for a large class, its
  header and each method) is a chunk whose title is the signature and whose symbol is the
  qualified name; module-level code between them forms chunks of its own.
- Other code: blocks separated by blank lines at brace depth 0, packed.

Chunks aim at ``min_tokens``-``max_tokens`` (default 300-800, estimated); every line of a
file belongs to at most one chunk, and ``text`` is exactly lines ``start_line..end_line``.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from memci._dataclasses import dataclass
from memci._lazy import LazyPattern
from memci.text._script import HAN_KANA_CLASS

__all__ = [
    "CODE_SUFFIXES",
    "TEXT_SUFFIXES",
    "Chunk",
    "chunk_blocks",
    "chunk_file",
    "chunk_markdown",
    "chunk_python",
    "chunk_text",
    "rough_tokens",
]

TEXT_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".txt", ".rst", ".text", ".adoc"})
CODE_SUFFIXES = frozenset({
    ".py", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".go", ".rs", ".java",
    ".kt", ".kts", ".scala", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".cs",
    ".swift", ".m", ".mm", ".rb", ".php", ".lua", ".sh", ".bash", ".zsh", ".sql", ".r",
    ".jl", ".dart", ".ex", ".exs", ".erl", ".hs", ".ml", ".clj", ".vue", ".svelte",
    ".toml", ".yaml", ".yml", ".json", ".ini", ".cfg",
})


_HAN_KANA = LazyPattern(f"[{HAN_KANA_CLASS}]")
# A string literal or a // comment (a line's braces are counted without them).
_QUOTED_OR_COMMENT = LazyPattern(r"(\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|//.*$)")


def rough_tokens(text: str) -> int:
    """Tokens of ``text``, roughly, for sizing chunks: one per CJK character, one per ~4 others.

    Quicker than the session's tokenizer and not calibrated to one: chunk sizes need only
    be near their aim.
    """
    cjk = len(_HAN_KANA.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


@dataclass(frozen=True, slots=True)
class Chunk:
    """A piece of a file: lines ``start_line..end_line`` (1-based, inclusive)."""

    kind: str
    title: str
    start_line: int
    end_line: int
    text: str
    symbol: str | None = None


@dataclass(slots=True)
class _Span:
    start: int  # 0-based index of the first line
    end: int  # 0-based index past the last line
    title: str
    symbol: str | None = None


def _make(kind: str, lines: Sequence[str], span: _Span) -> Chunk:
    return Chunk(kind, span.title, span.start + 1, span.end,
                 "\n".join(lines[span.start:span.end]), span.symbol)


def _tokens(lines: Sequence[str], start: int, end: int) -> int:
    return sum(rough_tokens(line) + 1 for line in lines[start:end])


def _split_long(lines: Sequence[str], span: _Span, max_tokens: int) -> list[_Span]:
    """Cut a span that is too long at line boundaries (blank lines preferred)."""
    out: list[_Span] = []
    start, used, last_blank = span.start, 0, -1
    part = 1
    for i in range(span.start, span.end):
        cost = rough_tokens(lines[i]) + 1
        if used + cost > max_tokens and i > start:
            cut = last_blank + 1 if last_blank > start else i
            out.append(_Span(start, cut, span.title if part == 1
                             else f"{span.title} (part {part})", span.symbol))
            part += 1
            start = cut
            used = _tokens(lines, start, i)
            last_blank = -1
        used += cost
        if not lines[i].strip():
            last_blank = i
    out.append(_Span(start, span.end, span.title if part == 1
                     else f"{span.title} (part {part})", span.symbol))
    return [s for s in out if s.end > s.start]


def _paragraphs(lines: Sequence[str], start: int, end: int) -> list[tuple[int, int]]:
    """Blank-line separated paragraphs of lines[start:end] (fenced code kept whole)."""
    out: list[tuple[int, int]] = []
    i, fence = start, False
    para = -1
    while i < end:
        line = lines[i]
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if line.strip() or fence:
            if para < 0:
                para = i
        elif para >= 0:
            out.append((para, i))
            para = -1
        i += 1
    if para >= 0:
        out.append((para, end))
    return out


def _pack(
    lines: Sequence[str], pieces: Sequence[_Span], min_tokens: int, max_tokens: int,
    *, join_titles: bool = False,
) -> list[_Span]:
    """Merge consecutive pieces while small, split ones that are too big."""
    out: list[_Span] = []
    current: _Span | None = None
    used = 0
    for piece in pieces:
        size = _tokens(lines, piece.start, piece.end)
        if size > max_tokens:
            if current is not None:
                out.append(current)
                current, used = None, 0
            out.extend(_split_long(lines, piece, max_tokens))
            continue
        if current is not None and used < min_tokens and used + size <= max_tokens:
            current.end = piece.end
            if join_titles and piece.title and piece.title not in current.title:
                current.symbol = None
            used += size
            continue
        if current is not None:
            out.append(current)
        current, used = _Span(piece.start, piece.end, piece.title, piece.symbol), size
    if current is not None:
        out.append(current)
    return out


_HEADING = LazyPattern(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def chunk_markdown(text: str, *, name: str = "", min_tokens: int = 300,
                   max_tokens: int = 800) -> list[Chunk]:
    """Markdown by headings, then paragraphs."""
    lines = text.splitlines()
    sections: list[_Span] = []
    path: list[tuple[int, str]] = []
    fence = False
    start, title = 0, name
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        match = None if fence else _HEADING.match(line)
        if match is None:
            continue
        if i > start:
            sections.append(_Span(start, i, title))
        level = len(match.group(1))
        path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, match.group(2))]
        title = " > ".join(t for _, t in path)
        start = i
    if start < len(lines):
        sections.append(_Span(start, len(lines), title))
    pieces: list[_Span] = []
    for section in sections:
        if _tokens(lines, section.start, section.end) <= max_tokens:
            pieces.append(section)
        else:
            pieces.extend(_Span(a, b, section.title)
                          for a, b in _paragraphs(lines, section.start, section.end))
    spans = _pack(lines, pieces, min_tokens, max_tokens)
    return [c for c in (_make("markdown", lines, s) for s in spans) if c.text.strip()]


def chunk_text(text: str, *, name: str = "", min_tokens: int = 300,
               max_tokens: int = 800) -> list[Chunk]:
    """Plain text by paragraphs."""
    lines = text.splitlines()
    pieces = [_Span(a, b, name) for a, b in _paragraphs(lines, 0, len(lines))]
    spans = _pack(lines, pieces, min_tokens, max_tokens)
    return [_make("text", lines, s) for s in spans]


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> str:
    if isinstance(node, ast.ClassDef):
        bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
        return f"class {node.name}({bases})" if bases else f"class {node.name}"
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return f"{prefix} {node.name}({ast.unparse(node.args)}){returns}"


def _first_line(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)]) - 1


def chunk_python(text: str, *, name: str = "", min_tokens: int = 300,
                 max_tokens: int = 800) -> list[Chunk]:
    """Python by ``ast``: functions, classes (or their methods), module code between."""
    lines = text.splitlines()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return chunk_blocks(text, name=name, min_tokens=min_tokens, max_tokens=max_tokens)
    spans: list[_Span] = []
    loose: list[_Span] = []  # module-level code waiting to be packed

    def flush() -> None:
        if loose:
            spans.extend(_pack(lines, loose, min_tokens, max_tokens))
            loose.clear()

    def definition(node: ast.stmt, qual: str) -> None:
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        start, end = _first_line(node), node.end_lineno or node.lineno
        span = _Span(start, end, _signature(node), qual)
        if _tokens(lines, start, end) <= max_tokens or not isinstance(node, ast.ClassDef):
            spans.extend(_split_long(lines, span, max_tokens))
            return
        methods = [n for n in node.body
                   if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
        header_end = _first_line(methods[0]) if methods else end
        spans.extend(_split_long(lines, _Span(start, header_end, span.title, qual), max_tokens))
        cursor = header_end
        for method in methods:
            m_start = _first_line(method)
            if m_start > cursor:  # class-level code between methods
                spans.extend(_split_long(lines, _Span(cursor, m_start, span.title, qual),
                                         max_tokens))
            definition(method, f"{qual}.{method.name}")
            cursor = method.end_lineno or method.lineno
        if end > cursor:
            spans.extend(_split_long(lines, _Span(cursor, end, span.title, qual), max_tokens))

    cursor = 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            start = _first_line(node)
            if start > cursor:
                loose.append(_Span(cursor, start, name or "module"))
            flush()
            definition(node, node.name)
            cursor = node.end_lineno or node.lineno
    if cursor < len(lines):
        loose.append(_Span(cursor, len(lines), name or "module"))
    flush()
    chunks = [_make("code", lines, s) for s in spans]
    return [c for c in chunks if c.text.strip()]


_SYMBOL = LazyPattern(
    r"\b(?:func|function|fn|def|class|struct|interface|enum|trait|impl|type|module|"
    r"object|package)\s+([A-Za-z_$][\w$]*)"
)


def chunk_blocks(text: str, *, name: str = "", min_tokens: int = 300,
                 max_tokens: int = 800) -> list[Chunk]:
    """Code by blocks: blank-line separated at brace depth 0, packed."""
    lines = text.splitlines()
    pieces: list[_Span] = []
    depth, start = 0, -1
    for i, line in enumerate(lines):
        stripped = _QUOTED_OR_COMMENT.sub("", line)
        if line.strip() and start < 0:
            start = i
        depth = max(0, depth + stripped.count("{") - stripped.count("}"))
        if not line.strip() and depth == 0 and start >= 0:
            pieces.append(_Span(start, i, ""))
            start = -1
    if start >= 0:
        pieces.append(_Span(start, len(lines), ""))
    spans = _pack(lines, pieces, min_tokens, max_tokens)
    chunks: list[Chunk] = []
    for span in spans:
        head = next((ln.strip() for ln in lines[span.start:span.end] if ln.strip()), "")
        found = _SYMBOL.search("\n".join(lines[span.start:span.end]))
        title = head[:100] if head else name
        chunks.append(Chunk("code", title, span.start + 1, span.end,
                            "\n".join(lines[span.start:span.end]),
                            found.group(1) if found else None))
    return chunks


def chunk_file(suffix: str, text: str, *, name: str = "", min_tokens: int = 300,
               max_tokens: int = 800) -> list[Chunk]:
    """Chunks of a file's ``text`` by its ``suffix`` (e.g. ``".md"``)."""
    suffix = suffix.lower()
    if suffix in (".md", ".markdown", ".mdx"):
        return chunk_markdown(text, name=name, min_tokens=min_tokens, max_tokens=max_tokens)
    if suffix in (".py", ".pyi"):
        return chunk_python(text, name=name, min_tokens=min_tokens, max_tokens=max_tokens)
    if suffix in CODE_SUFFIXES:
        return chunk_blocks(text, name=name, min_tokens=min_tokens, max_tokens=max_tokens)
    return chunk_text(text, name=name, min_tokens=min_tokens, max_tokens=max_tokens)
