"""Long-term memory and retrieval: message search, memory items, documents and code.

- :class:`MessageIndex` — keyword (FTS5) and dense search over stored messages, fused by
  reciprocal rank, time-aware ("yesterday", "上周", "March 1");
- :class:`MemoryItems` — episodic pages, preferences and explicit items in scopes
  tenant > user > session, merged when equal and superseded (with history) by subject;
- :class:`Memory` — both over one store; :func:`search` for ``session.search``;
- :class:`Gatherer` — seed 002's long-term extractor: episodes and preferences for a
  query, cached with a TTL;
- :class:`DocIndex` — text, Markdown and code files, chunked, indexed incrementally.

Nothing here loads a model or reads the environment at import, and the OpenAI embedders
(with httpx) load when first named.
"""

from typing import TYPE_CHECKING

from memci._lazy import lazy_names

if TYPE_CHECKING:
    from memci.memory._docs import DocHit, DocIndex, IndexReport, Progress
    from memci.memory._embed import Embedder, SentenceTransformerEmbedder, embedder_from_env
    from memci.memory._embed_openai import AsyncOpenAIEmbedder, OpenAIEmbedder
    from memci.memory._gather import (
        DEFAULT_CACHE_TTL,
        DEFAULT_MAX_EPISODES,
        Gatherer,
        RetrievalResult,
        Retrieved,
    )
    from memci.memory._hit import RRF_K, Hit, fuse, rrf
    from memci.memory._index import DEFAULT_ANALYZER, IndexStats, MessageIndex, message_text
    from memci.memory._items import Kept, Level, MemoryItem, MemoryItems, Scope
    from memci.memory._memory import Memory, memory_for, search
    from memci.memory._time import TimeRange, time_hint
    from memci.text import ANALYZERS, Chunk, chunk_file, chunk_markdown, chunk_python, get_analyzer
else:
    # Each name loads with its module when first read (memci._lazy).
    __getattr__, __dir__ = lazy_names(__name__, {
        "memci.memory._docs": ("DocHit", "DocIndex", "IndexReport", "Progress"),
        "memci.memory._embed": ("Embedder", "SentenceTransformerEmbedder", "embedder_from_env"),
        "memci.memory._gather": (
            "DEFAULT_CACHE_TTL", "DEFAULT_MAX_EPISODES", "Gatherer", "RetrievalResult",
            "Retrieved",
        ),
        "memci.memory._hit": ("RRF_K", "Hit", "fuse", "rrf"),
        "memci.memory._index": ("DEFAULT_ANALYZER", "IndexStats", "MessageIndex", "message_text"),
        "memci.memory._items": ("Kept", "Level", "MemoryItem", "MemoryItems", "Scope"),
        "memci.memory._memory": ("Memory", "memory_for", "search"),
        "memci.memory._time": ("TimeRange", "time_hint"),
        "memci.text": (
            "ANALYZERS", "Chunk", "chunk_file", "chunk_markdown", "chunk_python", "get_analyzer",
        ),
        "memci.memory._embed_openai": ("AsyncOpenAIEmbedder", "OpenAIEmbedder"),
    })

__all__ = [
    "ANALYZERS",
    "DEFAULT_ANALYZER",
    "DEFAULT_CACHE_TTL",
    "DEFAULT_MAX_EPISODES",
    "RRF_K",
    "AsyncOpenAIEmbedder",
    "Chunk",
    "DocHit",
    "DocIndex",
    "Embedder",
    "Gatherer",
    "Hit",
    "IndexReport",
    "IndexStats",
    "Kept",
    "Level",
    "Memory",
    "MemoryItem",
    "MemoryItems",
    "MessageIndex",
    "OpenAIEmbedder",
    "Progress",
    "RetrievalResult",
    "Retrieved",
    "Scope",
    "SentenceTransformerEmbedder",
    "TimeRange",
    "chunk_file",
    "chunk_markdown",
    "chunk_python",
    "embedder_from_env",
    "fuse",
    "get_analyzer",
    "memory_for",
    "message_text",
    "rrf",
    "search",
    "time_hint",
]
