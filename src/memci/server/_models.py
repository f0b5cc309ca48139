"""The request bodies of the REST API as pydantic models: what the OpenAPI schema shows.

The models describe every form ``POST /v1/sessions/{sid}/messages`` accepts (OpenAI Chat
Completions messages, Anthropic Messages messages, a list of them, or the envelope with
``user`` and ``settings``), so clients and schema-driven tests (schemathesis) see real
message bodies. They describe; the reader of :mod:`memci.messages` decides: a body is
read by the same code as ``session.add``, which gives the precise error. The models are
never stricter than that reader (a test checks every accepted form against them).
"""

# No ``from __future__ import annotations``: pydantic reads the annotations at class time.

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memci.context._builder import REPLY_PRIMING
from memci.context._settings import HOST_SETTINGS
from memci.server._policy import REQUEST_SETTINGS

__all__ = ["AnthropicRequest", "ChatRequest", "ContextRequest", "ErrorAnswer", "MessageIn",
           "MessagesBody", "MessagesEnvelope"]

_OPEN = ConfigDict(extra="allow")  # providers add fields; memci keeps what it models


class _Block(BaseModel):
    model_config = _OPEN


class TextBlock(_Block):
    """Text (OpenAI ``text``, Responses ``input_text`` / ``output_text``, Anthropic ``text``)."""

    type: Literal["text", "input_text", "output_text"]
    text: str


class RefusalBlock(_Block):
    """An OpenAI refusal, read as the assistant's text."""

    type: Literal["refusal"]
    refusal: str


class ImageURL(_Block):
    """Where an OpenAI image is."""

    url: Annotated[str, Field(min_length=1)]
    detail: str | None = None


class ImageURLBlock(_Block):
    """An OpenAI image (user messages only)."""

    type: Literal["image_url"]
    image_url: ImageURL | Annotated[str, Field(min_length=1)]


class ImageSource(_Block):
    """An Anthropic image source: ``base64`` data with its media type, or a ``url``."""

    type: Literal["base64", "url"]
    media_type: str | None = None
    data: str | None = None
    url: str | None = None


class ImageBlock(_Block):
    """An Anthropic image (user messages only)."""

    type: Literal["image"]
    source: ImageSource


class ToolUseBlock(_Block):
    """An Anthropic tool call (assistant messages only)."""

    type: Literal["tool_use"]
    id: Annotated[str, Field(min_length=1)]
    name: str
    input: dict[str, Any] | None = None


class ToolResultBlock(_Block):
    """An Anthropic tool result (user messages only): becomes a tool message."""

    type: Literal["tool_result"]
    tool_use_id: Annotated[str, Field(min_length=1)]
    content: str | list[TextBlock | str] | None = None
    is_error: bool | None = None


class AsideBlock(_Block):
    """Anthropic assistant blocks memci keeps verbatim in metadata (thinking, server tools)."""

    type: str = Field(description="thinking, redacted_thinking, server_tool_use, "
                                  "*_tool_result or mcp_* (assistant messages only).")


ContentBlock = (TextBlock | RefusalBlock | ImageURLBlock | ImageBlock | ToolUseBlock
                | ToolResultBlock | AsideBlock)


class FunctionCall(_Block):
    """The function an OpenAI tool call names, and its arguments (JSON text or object)."""

    name: Annotated[str, Field(min_length=1)]
    arguments: str | dict[str, Any] | None = None


class ToolCall(_Block):
    """An OpenAI tool call (assistant messages only)."""

    id: Annotated[str, Field(min_length=1)]
    type: Literal["function"] = "function"
    function: FunctionCall


# What the reader takes as a time (memci.messages.parse_timestamp): a date-time, or epoch
# seconds from 0001-01-01 to 9999-12-31 UTC. A schema looser than that would promise
# clients (and schemathesis) that the server accepts instants it refuses.
_DateTime = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
_EpochSeconds = Annotated[float, Field(ge=-62_135_596_800, le=253_402_300_799)]


class MessageIn(BaseModel):
    """One message, OpenAI or Anthropic style, as ``session.add`` takes it."""

    model_config = _OPEN

    role: Literal["system", "developer", "user", "human", "assistant", "tool"] = Field(
        description="developer is read as system, human as user.")
    content: str | list[ContentBlock | str] | None = Field(
        None, description="Text, or content blocks of either provider.")
    name: str | None = None
    tool_calls: list[ToolCall] | None = Field(
        None, description="OpenAI tool calls of an assistant message.")
    tool_call_id: str | None = Field(
        None, description="The call a tool message answers (tool messages only).")
    is_error: bool | None = Field(None, description="A tool message that reports a failure.")
    refusal: str | None = None
    metadata: dict[str, Any] | None = Field(
        None, description="Kept with the message, never sent to a model.")
    created_at: _DateTime | _EpochSeconds | None = Field(
        None, description="ISO 8601 date-time (or epoch seconds); the server's clock if absent.")


class MessagesEnvelope(BaseModel):
    """Messages with the session's user and settings."""

    model_config = ConfigDict(extra="forbid")

    messages: list[MessageIn] | MessageIn
    user: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="The session's user.")
    settings: dict[str, Any] | None = Field(
        None, description=(
            f"Session settings. A request may set {', '.join(REQUEST_SETTINGS)}; it may "
            f"only narrow {', '.join(HOST_SETTINGS)}, which the operator sets (server "
            "options, key policy). Unknown keys are refused."))


MessagesBody = MessagesEnvelope | list[MessageIn] | MessageIn
"""What ``POST /v1/sessions/{sid}/messages`` takes."""


class ContextRequest(BaseModel):
    """What ``POST /v1/sessions/{sid}/context`` takes."""

    model_config = ConfigDict(extra="forbid")

    format: Annotated[Literal["openai", "anthropic"], Field(
        description="The provider format of the payload.")] = "openai"
    budget: Annotated[int | None, Field(
        ge=REPLY_PRIMING, le=2**40,
        description="Token budget (default: the session's); every request spends "
                    f"{REPLY_PRIMING} priming the reply, so no budget is smaller.")] = None
    recipe: Annotated[Literal["auto", "chat", "tool_loop"], Field(
        description="Section recipe of the build.")] = "auto"


class _ProxyRequest(BaseModel):
    """What both proxies read of a request; every other field goes to the upstream as is."""

    model_config = _OPEN

    model: str | None = Field(None, description="The upstream model (passed on).")
    messages: Annotated[list[MessageIn], Field(
        min_length=1, description="The conversation as the client has it: memci stores "
                                  "what it has not seen and sends its context instead.")]
    tools: list[dict[str, Any]] | None = Field(
        None, description="The client's tools, sent upstream with memci's own.")
    stream: bool | None = Field(None, description="Stream the answer (server-sent events).")


class ChatRequest(_ProxyRequest):
    """What ``POST /v1/chat/completions`` takes: an OpenAI Chat Completions request."""


class SystemBlock(_Block):
    """A block of an Anthropic system prompt."""

    type: Literal["text"] = "text"
    text: str


class AnthropicRequest(_ProxyRequest):
    """What ``POST /v1/messages`` takes: an Anthropic Messages request."""

    system: str | list[SystemBlock] | None = Field(
        None, description="The system prompt (stored as the session's system message).")
    max_tokens: Annotated[int, Field(ge=1, le=2**31)] | None = Field(
        None, description="Passed to the upstream.")


class ErrorDetail(BaseModel):
    """What went wrong, for a program (``code``) and for a person (``message``)."""

    code: str
    message: str


class ErrorAnswer(BaseModel):
    """Every error answer of the server."""

    error: ErrorDetail
