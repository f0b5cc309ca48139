"""The two wire formats: OpenAI Chat Completions and Anthropic Messages.

Pure mapping, no I/O: memci messages to a request (path, headers, JSON body) through the
project codecs :func:`memci.messages.to_openai` / :func:`memci.messages.to_anthropic`, and
a decoded JSON reply to a :class:`~memci.llm.Completion`. A reply that does not have the
shape the format promises raises :class:`MalformedReply` naming the missing piece; the
client turns it into :class:`~memci.errors.LLMResponseError` with the URL and body.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from memci.errors import InvalidInputError
from memci.llm._types import Completion
from memci.messages import Message, to_anthropic, to_openai

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicFormat",
    "ChatFormat",
    "MalformedReply",
    "OpenAIFormat",
]

ANTHROPIC_VERSION = "2023-06-01"


class MalformedReply(Exception):
    """A 2xx reply without the shape its format promises; the text says what is missing."""


class ChatFormat:
    """How one provider's endpoint is addressed, fed and read."""

    name: ClassVar[str]
    default_base_url: ClassVar[str]
    path: ClassVar[str]

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Return the authentication and version headers for a request."""
        raise NotImplementedError

    def body(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        system: str | None,
        max_tokens: int,
        temperature: float | None,
    ) -> dict[str, Any]:
        """Return the JSON request body."""
        raise NotImplementedError

    def parse(self, data: object, *, model: str) -> Completion:
        """Read a decoded 2xx reply; ``model`` is what was asked for (a fallback)."""
        raise NotImplementedError


class OpenAIFormat(ChatFormat):
    """OpenAI-compatible Chat Completions (OpenAI, vLLM, Ollama, DeepSeek, Qwen …).

    ``max_tokens_param`` names the body field for the reply limit: ``max_tokens`` is what
    compatible servers read; OpenAI's reasoning models want ``max_completion_tokens``.
    """

    name = "openai"
    default_base_url = "https://api.openai.com/v1"
    path = "/chat/completions"

    def __init__(self, *, max_tokens_param: str = "max_tokens") -> None:
        self.max_tokens_param = max_tokens_param

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Send ``Authorization: Bearer`` when there is a key (local servers need none)."""
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def body(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        system: str | None,
        max_tokens: int,
        temperature: float | None,
    ) -> dict[str, Any]:
        """``{model, messages, max_tokens, temperature?}``; ``system`` goes first."""
        wire = to_openai(messages)
        if system:
            wire.insert(0, {"role": "system", "content": system})
        out: dict[str, Any] = {"model": model, "messages": wire,
                               self.max_tokens_param: max_tokens}
        if temperature is not None:
            out["temperature"] = temperature
        return out

    def parse(self, data: object, *, model: str) -> Completion:
        """Text of ``choices[0].message.content``, usage from ``usage``."""
        reply = _object(data, "the reply")
        choices = reply.get("choices")
        if not isinstance(choices, list) or not choices:
            raise MalformedReply("the reply has no 'choices'" + _error_note(reply))
        first = _object(choices[0], "choices[0]")
        message = first.get("message")
        if not isinstance(message, Mapping):
            raise MalformedReply("choices[0] has no 'message' object")
        message = cast(Mapping[str, Any], message)
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            # Some compatible servers send content as a list of typed blocks.
            text = "".join(_block_texts(cast(list[object], content)))
        elif content is None:
            refusal = message.get("refusal")
            note = f" (refusal: {refusal!r})" if refusal else ""
            raise MalformedReply(f"choices[0].message.content is missing or null{note}")
        else:
            raise MalformedReply(
                f"choices[0].message.content is a {type(content).__name__}, not text"
            )
        usage = _usage(reply)
        finish = first.get("finish_reason")
        return Completion(
            text=text,
            model=_model(reply, model),
            input_tokens=_int(usage.get("prompt_tokens")),
            output_tokens=_int(usage.get("completion_tokens")),
            raw=reply,
            stop_reason=finish if isinstance(finish, str) else None,
        )


class AnthropicFormat(ChatFormat):
    """Anthropic Messages: system split out, ``x-api-key``, ``anthropic-version``."""

    name = "anthropic"
    default_base_url = "https://api.anthropic.com"
    path = "/v1/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """``x-api-key`` when there is a key, and the API version."""
        out = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            out["x-api-key"] = api_key
        return out

    def body(
        self,
        model: str,
        messages: Sequence[Message],
        *,
        system: str | None,
        max_tokens: int,
        temperature: float | None,
    ) -> dict[str, Any]:
        """``{model, max_tokens, system?, messages, temperature?}``.

        ``system`` comes before the text of any system messages in ``messages``.
        """
        message_system, wire = to_anthropic(messages)
        if not wire:
            raise InvalidInputError(
                "Anthropic needs at least one user or assistant message; "
                "got only system text"
            )
        joined = "\n\n".join(s for s in (system, message_system) if s)
        out: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
        if joined:
            out["system"] = joined
        out["messages"] = wire
        if temperature is not None:
            out["temperature"] = temperature
        return out

    def parse(self, data: object, *, model: str) -> Completion:
        """Text blocks of ``content`` joined (thinking and tool blocks left out)."""
        reply = _object(data, "the reply")
        content = reply.get("content")
        if not isinstance(content, list):
            raise MalformedReply("the reply has no 'content' list" + _error_note(reply))
        usage = _usage(reply)
        counted = [_int(usage.get(k)) for k in
                   ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
        known = [n for n in counted if n is not None]
        stop = reply.get("stop_reason")
        return Completion(
            text="".join(_block_texts(cast(list[object], content))),
            model=_model(reply, model),
            input_tokens=sum(known) if counted[0] is not None else None,
            output_tokens=_int(usage.get("output_tokens")),
            raw=reply,
            stop_reason=stop if isinstance(stop, str) else None,
        )


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MalformedReply(f"{what} is a JSON {type(value).__name__}, not an object")
    return cast(Mapping[str, Any], value)


def _block_texts(blocks: list[object]) -> list[str]:
    texts: list[str] = []
    for block in blocks:
        if isinstance(block, Mapping):
            block = cast(Mapping[str, Any], block)
            text = block.get("text")
            if block.get("type") in ("text", "output_text") and isinstance(text, str):
                texts.append(text)
    return texts


def _usage(reply: Mapping[str, Any]) -> Mapping[str, Any]:
    usage = reply.get("usage")
    return cast(Mapping[str, Any], usage) if isinstance(usage, Mapping) else {}


def _model(reply: Mapping[str, Any], asked: str) -> str:
    model = reply.get("model")
    return model if isinstance(model, str) and model else asked


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _error_note(reply: Mapping[str, Any]) -> str:
    # Some gateways answer 200 with an error object; say so instead of "no choices".
    error = reply.get("error")
    if isinstance(error, Mapping):
        message = cast(Mapping[str, Any], error).get("message")
        return f" (error: {message or error})"
    return f" (error: {error})" if error else ""
