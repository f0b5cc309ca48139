"""The shapes key content takes in text: paths and file names, code identifiers.

A summary keeps them, salience scores them, and the query analyzer reads them as a sign
that a question is about code or files. They run on every sentence a summary weighs.
"""

from __future__ import annotations

import re

from memci._lazy import LazyPattern

__all__ = ["IDENT_RE", "MAYBE_IDENT_RE", "MAYBE_PATH_RE", "PATH_RE"]

_EXTENSIONS = (
    "py|pyi|js|mjs|cjs|ts|tsx|jsx|go|rs|java|kt|kts|swift|c|h|cc|cpp|cxx|hpp|hh|cs|rb|php|pl|"
    "sh|bash|zsh|fish|ps1|bat|yaml|yml|json|jsonl|toml|ini|cfg|conf|env|md|rst|txt|csv|tsv|"
    "sql|html|htm|css|scss|less|xml|lock|log|ipynb|vue|svelte|proto|gradle|tf|dockerfile|"
    "mk|cmake|r|scala|lua|dart|ex|exs|erl|hs|ml|zig|nim|pdf|docx|xlsx|pptx|png|jpg|jpeg|"
    "gif|svg|zip|tar|gz|whl|db|sqlite"
)
# Possessive quantifiers and look-behinds keep these linear: they run on every sentence.
PATH_RE = LazyPattern(
    r"https?://[^\s<>\"'）)】」]++"
    r"|[A-Za-z]:\\[^\s<>\"']++"
    r"|(?<![\w/.~])(?:~|\.{1,2})?+/[\w.@%+~-]++(?:/[\w.@%+~-]*+)*+"
    r"|(?<![\w.@+~/-])[\w.@+~-]++(?:/[\w.@%+~-]++)++/?"
    rf"|(?<![\w.-])[\w-]++(?:\.[\w-]+)*?\.(?:{_EXTENSIONS})\b",
    re.IGNORECASE,
)
IDENT_RE = LazyPattern(
    r"`[^`\n]{1,80}`"
    r"|(?<![\w.])[A-Za-z_][A-Za-z0-9_]*+(?:\.[A-Za-z_][A-Za-z0-9_]*+)++\(?"  # dotted, calls
    r"|(?<![\w.])[A-Za-z0-9]*+_[A-Za-z0-9_]*[A-Za-z][A-Za-z0-9_]*+"  # snake_case
    r"|(?<![\w.])[a-z]++(?:[A-Z][a-z0-9]*+)++\b"  # lowerCamel
    r"|(?<![\w.])[A-Z][a-z0-9]++(?:[A-Z][a-z0-9]*+)++\b"  # CamelCase
    r"|(?<![\w.])\w++\(\)"  # call()
)
#: Cheap tests that let most texts skip :data:`PATH_RE` and :data:`IDENT_RE`: a text without
#: a match holds no path (no identifier).
MAYBE_PATH_RE = LazyPattern(r"[/\\]|\.[A-Za-z]")
MAYBE_IDENT_RE = LazyPattern(r"[_(`]|\.[A-Za-z]|[a-z][A-Z]|[A-Z][a-z0-9]+[A-Z]")
