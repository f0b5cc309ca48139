"""What a provider's chat format adds around the text of a message, in tokens.

A message is billed as its text plus framing: role markers, separators, the wrapping of
tool calls and tool results, images. :func:`count_message` adds that framing to the counted
text of every part, so a message's count is its overhead plus the sum of its parts —
callers may subtract part counts to recover the overhead.

The constants are documented where they are defined. OpenAI's per-message and reply
priming figures are the ones of OpenAI's own counting recipe (the "How to count tokens with
tiktoken" cookbook), which matches the API's usage for chat models. Neither provider
publishes the framing of tool calls, tool results or Anthropic messages; those constants are
estimates from the published prompt formats (OpenAI's harmony format, Anthropic's tool-use
prompt), meant to be right within a few tokens, never zero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from memci._records import NamedTuple
from memci.errors import ConfigError
from memci.messages import ImagePart, Message, TextPart, ToolCallPart, ToolResultPart

__all__ = ["OVERHEADS", "PROVIDERS", "Overhead", "count_message", "overhead_for"]


class Overhead(NamedTuple):
    """Token costs of one provider's chat format, beyond the counted text."""

    provider: str
    """The provider whose format this is ("openai", "anthropic")."""
    per_message: int
    """Every message: start/end markers and the role."""
    per_name: int
    """A message ``name``, on top of the name's own tokens (-1: names are not sent)."""
    per_tool_call: int
    """Every tool call, on top of its name and arguments."""
    per_tool_result: int
    """Every tool result, on top of its content."""
    image_low: int
    """An image sent at low detail."""
    image: int
    """An image at high or automatic detail, size unknown."""
    reply_priming: int
    """Once per request: the header that opens the model's reply."""


OPENAI: Final = Overhead(
    provider="openai",
    # <|start|>{role}<|message|>{content}<|end|>: 3 framing tokens + 1 for the role (system,
    # user, assistant and tool are one token each in cl100k_base and o200k_base).
    per_message=4,
    # The cookbook's tokens_per_name: the name field costs one token beyond its own.
    per_name=1,
    # Harmony renders a call as "<|start|>assistant<|channel|>commentary to=functions.NAME
    # <|constrain|>json<|message|>ARGS<|call|>": about 10 tokens beside name and arguments.
    per_tool_call=10,
    # A tool message's header names the function and channel ("functions.NAME to=assistant
    # <|channel|>commentary"): about 5 tokens more than a plain role.
    per_tool_result=5,
    # OpenAI vision pricing: 85 tokens at low detail; high detail adds 170 per 512 px tile,
    # 765 for a typical 1024×1024 image (4 tiles + 85).
    image_low=85,
    image=765,
    # "every reply is primed with <|start|>assistant<|message|>".
    reply_priming=3,
)

ANTHROPIC: Final = Overhead(
    provider="anthropic",
    # "\n\nHuman: " / "\n\nAssistant: " turn markers and block framing.
    per_message=4,
    # The Messages API has no name field; memci's Anthropic codec drops it.
    per_name=-1,
    # A tool_use block is rendered as <function_calls><invoke name=…><parameter name=…>…:
    # about 15 tokens of markup beside the name and the argument values.
    per_tool_call=15,
    # <function_results><result><tool_name>…</tool_name><stdout>…</stdout>…: about 10.
    per_tool_result=10,
    # Anthropic prices images at width × height / 750 tokens, about 1,600 at the largest
    # size it keeps unscaled; the size is unknown here, so that ceiling is used for both.
    image_low=1600,
    image=1600,
    # "\n\nAssistant:" opening the reply.
    reply_priming=3,
)

OVERHEADS: Final = {"openai": OPENAI, "anthropic": ANTHROPIC}
PROVIDERS: Final = tuple(OVERHEADS)


def overhead_for(provider: str) -> Overhead:
    """The :class:`Overhead` of ``provider``; :class:`~memci.errors.ConfigError` if unknown."""
    try:
        return OVERHEADS[provider]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}") from None


def count_message(count: Callable[[str], int], message: Message, overhead: Overhead) -> int:
    """Tokens of ``message``: ``overhead`` framing plus ``count`` of every text it sends.

    A tool call counts its id, its name and its arguments JSON text; a tool result the id
    of its call and its content (both providers send the ids, and a caller chooses them:
    a long one is tokens like any other); an image a fixed estimate (it is a reference
    here, never pixels).
    """
    n = overhead.per_message
    if message.name and overhead.per_name >= 0:
        n += overhead.per_name + count(message.name)
    for part in message.parts:
        if isinstance(part, TextPart):
            n += count(part.text)
        elif isinstance(part, ToolCallPart):
            n += (overhead.per_tool_call + count(part.id) + count(part.name)
                  + count(part.arguments))
        elif isinstance(part, ToolResultPart):
            n += overhead.per_tool_result + count(part.call_id) + count(part.content)
        elif isinstance(part, ImagePart):
            n += overhead.image_low if part.detail == "low" else overhead.image
    return n
