"""Known models: their context windows and tokenizers, for per-model defaults.

Matching is by prefix of the lower-cased model name, longest prefix first, so dated
variants (``gpt-4o-2024-08-06``) and provider prefixes (``openai/gpt-4o``) resolve.
"""

from __future__ import annotations

from memci._records import NamedTuple

__all__ = ["DEFAULT_WINDOW", "KNOWN_MODELS", "ModelInfo", "is_known", "model_info"]

DEFAULT_WINDOW = 128_000


class ModelInfo(NamedTuple):
    """What memci assumes about a model when the caller does not say."""

    context_window: int
    provider: str
    encoding: str


_KNOWN: dict[str, ModelInfo] = {
    # OpenAI
    "gpt-4o": ModelInfo(128_000, "openai", "o200k_base"),
    "gpt-4o-mini": ModelInfo(128_000, "openai", "o200k_base"),
    "gpt-4.1": ModelInfo(1_047_576, "openai", "o200k_base"),
    "gpt-4.1-mini": ModelInfo(1_047_576, "openai", "o200k_base"),
    "gpt-4.1-nano": ModelInfo(1_047_576, "openai", "o200k_base"),
    "gpt-5": ModelInfo(400_000, "openai", "o200k_base"),
    "o1": ModelInfo(200_000, "openai", "o200k_base"),
    "o3": ModelInfo(200_000, "openai", "o200k_base"),
    "o4-mini": ModelInfo(200_000, "openai", "o200k_base"),
    "gpt-4-turbo": ModelInfo(128_000, "openai", "cl100k_base"),
    "gpt-4-32k": ModelInfo(32_768, "openai", "cl100k_base"),
    "gpt-4": ModelInfo(8_192, "openai", "cl100k_base"),
    "gpt-3.5-turbo": ModelInfo(16_385, "openai", "cl100k_base"),
    # Anthropic
    "claude-3": ModelInfo(200_000, "anthropic", "estimate"),
    "claude-3-5": ModelInfo(200_000, "anthropic", "estimate"),
    "claude-3-7": ModelInfo(200_000, "anthropic", "estimate"),
    "claude-sonnet-4": ModelInfo(200_000, "anthropic", "estimate"),
    "claude-opus-4": ModelInfo(200_000, "anthropic", "estimate"),
    "claude-haiku-4": ModelInfo(200_000, "anthropic", "estimate"),
    "claude": ModelInfo(200_000, "anthropic", "estimate"),
    # DeepSeek
    "deepseek-chat": ModelInfo(64_000, "openai", "estimate"),
    "deepseek-reasoner": ModelInfo(64_000, "openai", "estimate"),
    "deepseek-v3": ModelInfo(128_000, "openai", "estimate"),
    "deepseek": ModelInfo(64_000, "openai", "estimate"),
    # Qwen
    "qwen-max": ModelInfo(32_768, "openai", "estimate"),
    "qwen-plus": ModelInfo(131_072, "openai", "estimate"),
    "qwen-turbo": ModelInfo(1_000_000, "openai", "estimate"),
    "qwen-long": ModelInfo(10_000_000, "openai", "estimate"),
    "qwen2.5": ModelInfo(32_768, "openai", "estimate"),
    "qwen3": ModelInfo(131_072, "openai", "estimate"),
    "qwen": ModelInfo(32_768, "openai", "estimate"),
}
_PREFIXES = sorted(_KNOWN, key=len, reverse=True)
KNOWN_MODELS: tuple[str, ...] = tuple(_KNOWN)
"""The model names (and name prefixes) memci has defaults for."""


def model_info(model: str | None) -> ModelInfo:
    """What memci knows of ``model``; unknown models get a 128k window and the estimator."""
    if model:
        name = model.lower().rsplit("/", 1)[-1]
        for prefix in _PREFIXES:
            if name.startswith(prefix):
                return _KNOWN[prefix]
    return ModelInfo(DEFAULT_WINDOW, "openai", "estimate")


def is_known(model: str) -> bool:
    """Whether ``model`` is one of :data:`KNOWN_MODELS` (by prefix), not a guess."""
    name = model.lower().rsplit("/", 1)[-1]
    return any(name.startswith(prefix) for prefix in _PREFIXES)
