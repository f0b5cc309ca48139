"""Messages: the provider-neutral :class:`Message`, its parts, and the codecs.

- read: :func:`coerce` (any accepted form), :func:`coerce_many` (a batch, in which the
  items of an OpenAI Responses turn make one assistant message), :func:`from_openai`,
  :func:`from_anthropic`;
- write: :func:`to_openai`, :func:`to_anthropic`, :func:`to_responses`;
- store and export: :func:`to_wire`, :func:`from_wire`;
- tools: :class:`ToolSpec`, a function tool in each provider's form; :func:`offerable_tools`,
  memci's tools a model may be offered.
"""

from memci.messages._model import (
    NO_METADATA,
    ROLES,
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    Role,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from memci.messages._parse import (
    DEFAULT_MAX_BYTES,
    coerce,
    coerce_many,
    from_anthropic,
    from_openai,
    parse_timestamp,
    validate,
)
from memci.messages._responses import to_responses
from memci.messages._tools import ToolSpec, offerable_tools
from memci.messages._wire import dumps_parts, from_wire, loads_parts, to_wire
from memci.messages._write import (
    ANTHROPIC_OPENER,
    MISSING_RESULT,
    to_anthropic,
    to_openai,
    to_openai_message,
)

__all__ = [
    "ANTHROPIC_OPENER",
    "DEFAULT_MAX_BYTES",
    "MISSING_RESULT",
    "NO_METADATA",
    "ROLES",
    "ImagePart",
    "Message",
    "Part",
    "ReasoningPart",
    "Role",
    "TextPart",
    "ToolCallPart",
    "ToolResultPart",
    "ToolSpec",
    "coerce",
    "coerce_many",
    "dumps_parts",
    "from_anthropic",
    "from_openai",
    "from_wire",
    "loads_parts",
    "offerable_tools",
    "parse_timestamp",
    "to_anthropic",
    "to_openai",
    "to_openai_message",
    "to_responses",
    "to_wire",
    "validate",
]
