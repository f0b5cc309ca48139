"""Text: the generic machinery every part of memci shares, below everything but errors.

- script (:mod:`~memci.text._script`): :func:`is_cjk` (one character), :func:`has_cjk`
  (any in a text), :func:`cjk_share`, :func:`is_cjk_text`, :func:`has_han_or_kana`,
  :func:`language_of`;
- width (:mod:`~memci.text._width`): :func:`width` (display columns), :func:`line_width`
  and :func:`fit_line` (columns of a line limit, a CJK character counting 2.5);
- sentences (:mod:`~memci.text._sentences`): :func:`split_sentences`, :func:`split_lines`,
  :func:`split_clauses`, :func:`clean_text`;
- patterns (:mod:`~memci.text._patterns`): :data:`PATH_RE`, :data:`IDENT_RE`;
- analyzers (:mod:`~memci.text._analyzer`): how keyword search cuts text into terms
  (:class:`Analyzer`, :class:`MatchQuery`, :func:`get_analyzer`), and
  :mod:`~memci.text._terms`, the terms an FTS5 tokenizer cuts (PostgreSQL's postings, a
  page's memory compared with its question);
- chunks (:mod:`~memci.text._chunk`): files cut into pieces for the document index.

Nothing here imports another part of memci (only :mod:`memci.errors`), reads the
environment or loads a model at import; jieba is imported when its analyzer is made.
"""

from typing import TYPE_CHECKING

from memci._lazy import lazy_names

if TYPE_CHECKING:
    from memci.text._analyzer import (
        ANALYZERS,
        Analyzer,
        BigramAnalyzer,
        JiebaAnalyzer,
        MatchQuery,
        TrigramAnalyzer,
        get_analyzer,
        normalize,
    )
    from memci.text._chunk import (
        CODE_SUFFIXES,
        TEXT_SUFFIXES,
        Chunk,
        chunk_blocks,
        chunk_file,
        chunk_markdown,
        chunk_python,
        chunk_text,
        rough_tokens,
    )
    from memci.text._patterns import IDENT_RE, MAYBE_IDENT_RE, MAYBE_PATH_RE, PATH_RE
    from memci.text._script import (
        CJK_CLASS,
        HAN_KANA_CLASS,
        cjk_share,
        has_cjk,
        has_han_or_kana,
        is_cjk,
        is_cjk_text,
        language_of,
    )
    from memci.text._sentences import clean_text, split_clauses, split_lines, split_sentences
    from memci.text._width import CJK_WIDTH, fit_line, is_wide, line_width, width
else:
    # Each name loads with its module when first read (memci._lazy).
    __getattr__, __dir__ = lazy_names(__name__, {
        "memci.text._analyzer": (
            "ANALYZERS", "Analyzer", "BigramAnalyzer", "JiebaAnalyzer", "MatchQuery",
            "TrigramAnalyzer", "get_analyzer", "normalize",
        ),
        "memci.text._chunk": (
            "CODE_SUFFIXES", "TEXT_SUFFIXES", "Chunk", "chunk_blocks", "chunk_file",
            "chunk_markdown", "chunk_python", "chunk_text", "rough_tokens",
        ),
        "memci.text._patterns": ("IDENT_RE", "MAYBE_IDENT_RE", "MAYBE_PATH_RE", "PATH_RE"),
        "memci.text._script": (
            "CJK_CLASS", "HAN_KANA_CLASS", "cjk_share", "has_cjk", "has_han_or_kana", "is_cjk",
            "is_cjk_text", "language_of",
        ),
        "memci.text._sentences": ("clean_text", "split_clauses", "split_lines", "split_sentences"),
        "memci.text._width": ("CJK_WIDTH", "fit_line", "is_wide", "line_width", "width"),
    })

__all__ = [
    "ANALYZERS",
    "CJK_CLASS",
    "CJK_WIDTH",
    "CODE_SUFFIXES",
    "HAN_KANA_CLASS",
    "IDENT_RE",
    "MAYBE_IDENT_RE",
    "MAYBE_PATH_RE",
    "PATH_RE",
    "TEXT_SUFFIXES",
    "Analyzer",
    "BigramAnalyzer",
    "Chunk",
    "JiebaAnalyzer",
    "MatchQuery",
    "TrigramAnalyzer",
    "chunk_blocks",
    "chunk_file",
    "chunk_markdown",
    "chunk_python",
    "chunk_text",
    "cjk_share",
    "clean_text",
    "fit_line",
    "get_analyzer",
    "has_cjk",
    "has_han_or_kana",
    "is_cjk",
    "is_cjk_text",
    "is_wide",
    "language_of",
    "line_width",
    "normalize",
    "rough_tokens",
    "split_clauses",
    "split_lines",
    "split_sentences",
    "width",
]
