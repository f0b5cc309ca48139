"""A chat transcript in OpenAI form, built from the parts of a trace, calls paired.

Every reader of a trace format turns its records into calls on one :class:`Transcript`,
which keeps the rules a model provider (and memci's store) holds a conversation to:

- every tool call has an id: a format that writes none gets ``call_<n>``, numbered in
  the order of the file, never the id of another call of the file, so the same file
  always gives the same ids;
- every tool result answers an open call: the one it names, or (a format that names
  none) the oldest open call of that tool, else the oldest open call; a result with no
  open call to answer and no id is kept as user text (what it was to the model), and
  one that names an id no open call has is an error, since the file contradicts itself;
- every message has an origin ("event 12", "conversations[3]") that errors and notes
  use to point into the file;
- no message is empty: a reply with no text and no tool call is left out with a note
  (memci stores no empty message);
- a question whose answer the file labels (LoCoMo's evidence, LongMemEval's
  ``has_answer``) is recorded with its evidence turns, each by its origin and its text as
  stored, so a replay can check the request built to answer it.

What a format holds that is not a chat message is left out with a note, grouped by
reason. Nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from memci._dataclasses import dataclass
from memci.errors import InvalidFileError, MemciError
from memci.messages import parse_timestamp

__all__ = ["Call", "Question", "Transcript", "arguments_text", "content_of", "text_of"]

_NOTE_PLACES = 5  # origins listed per note; the rest are counted


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call as a trace records it; ``arguments`` in any form (see below)."""

    name: str
    arguments: object = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """A question the file asks, and the turns that answer it (its evidence)."""

    message: int
    """Where the question is in the transcript's messages (a user message)."""
    text: str
    evidence: tuple[tuple[str, str], ...]
    """Each evidence turn: its origin in the file and its text as stored."""


def text_of(value: object) -> str:
    """The text of a message content in any common form (string, blocks, dict)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = [text_of(block) for block in cast(list[object], value)]
        return "\n".join(t for t in texts if t)
    if isinstance(value, Mapping):
        block = cast(Mapping[str, Any], value)
        kind = block.get("type")
        if isinstance(block.get("text"), str):
            return cast(str, block["text"])
        if kind in ("thinking", "redacted_thinking", "reasoning"):
            # Earlier turns' reasoning is not sent back to the model (nor billed as input).
            return ""
        if isinstance(block.get("refusal"), str):
            return cast(str, block["refusal"])
        if kind in ("image", "image_url", "input_image"):
            return "[image]"
        if "content" in block:
            return text_of(block["content"])
        return json.dumps(block, ensure_ascii=False)
    return str(value)


def content_of(value: object) -> str | list[dict[str, Any]]:
    """A message content for OpenAI: its text, or text and image blocks if it has images.

    Images are kept (memci counts an image at a provider's fixed cost, never by the
    size of its data); Anthropic image blocks become ``image_url`` blocks.
    """
    if not isinstance(value, list):
        return text_of(value)
    blocks: list[dict[str, Any]] = []
    images = False
    for item in cast(list[object], value):
        image = _image_block(item)
        if image is not None:
            images = True
            blocks.append(image)
            continue
        text = text_of(item)
        if text:
            blocks.append({"type": "text", "text": text})
    if not images:
        return "\n".join(b["text"] for b in blocks)
    return blocks


def _image_block(item: object) -> dict[str, Any] | None:
    if not isinstance(item, Mapping):
        return None
    block = cast(Mapping[str, Any], item)
    kind = block.get("type")
    if kind == "image_url":
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        return {"type": "image_url", "image_url": {"url": url}} if isinstance(url, str) and url \
            else None
    if kind == "image":
        source = block.get("source")
        if isinstance(source, Mapping):
            source = cast(Mapping[str, Any], source)
            if isinstance(source.get("url"), str):
                return {"type": "image_url", "image_url": {"url": source["url"]}}
            if isinstance(source.get("data"), str):
                media = source.get("media_type") or "image/png"
                return {"type": "image_url",
                        "image_url": {"url": f"data:{media};base64,{source['data']}"}}
    return None


def arguments_text(value: object) -> str:
    """Tool call arguments as the JSON text of an object, whatever the trace wrote.

    A dict is dumped; JSON text of an object is kept as written; anything else (a
    command line, a list) is wrapped as ``{"input": …}`` so that it counts as it was.
    """
    if value is None or value == "":
        return "{}"
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return json.dumps({"input": value}, ensure_ascii=False)
        if isinstance(parsed, dict):
            return value
        return json.dumps({"input": parsed}, ensure_ascii=False)
    return json.dumps({"input": value}, ensure_ascii=False, default=str)


def tool_schema(tool: object) -> dict[str, Any] | None:
    """An agent's tool schema in OpenAI's chat form, from OpenAI, Anthropic or bare forms."""
    if not isinstance(tool, Mapping):
        return None
    spec = cast(Mapping[str, Any], tool)
    function = spec.get("function")
    if isinstance(function, Mapping) and isinstance(function.get("name"), str):
        return {"type": "function", "function": dict(cast(Mapping[str, Any], function))}
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        return None
    out: dict[str, Any] = {"name": name}
    if isinstance(spec.get("description"), str):
        out["description"] = spec["description"]
    for key in ("parameters", "input_schema", "inputSchema"):
        if isinstance(spec.get(key), Mapping):
            out["parameters"] = spec[key]
            break
    return {"type": "function", "function": out}


class Transcript:
    """OpenAI chat messages built from a trace, with their origins, tools and notes."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.origins: list[str] = []
        self.tools: list[dict[str, Any]] = []
        self._notes: dict[str, list[str]] = {}
        self._open: dict[str, str] = {}  # call id -> tool name, oldest first
        self._ids: set[str] = set()
        self._alias: dict[str, str] = {}  # an id the file uses twice -> the id it got
        self._made = 0
        self.questions: list[Question] = []

    # -- what a reader calls -------------------------------------------------------------

    def system(self, content: object, *, origin: str, created_at: object = None) -> None:
        """A system prompt (empty ones are left out)."""
        self._plain("system", content, origin, created_at, None)

    def user(self, content: object, *, origin: str, created_at: object = None,
             name: str | None = None) -> None:
        """A user message (empty ones are left out)."""
        self._plain("user", content, origin, created_at, name)

    def assistant(self, content: object, calls: Sequence[Call] = (), *, origin: str,
                  created_at: object = None) -> list[str]:
        """An assistant message and its tool calls; returns the calls' ids.

        A reply with neither text nor calls is left out with a note: memci stores no
        empty message (the request the agent made for it is not counted either).
        """
        body = content_of(content)
        if not body and not calls:
            self.skip(origin, "an empty assistant reply (no text, no tool call), skipped")
            return []
        message: dict[str, Any] = {"role": "assistant", "content": body}
        ids: list[str] = []
        if calls:
            message["tool_calls"] = [self._open_call(call) for call in calls]
            ids = [c["id"] for c in message["tool_calls"]]
        self._append(message, origin, created_at)
        return ids

    def question(self, text: object, answer: object,
                 evidence: Sequence[tuple[str, str]], *, origin: str,
                 created_at: object = None) -> None:
        """A question (a user message), its expected answer, and the turns that answer it.

        ``evidence`` holds (origin, text as stored) of each turn. A question with no text
        or no answer asks for no request, so it is left out with a note.
        """
        asked = text_of(text)
        if not asked.strip() or not text_of(answer).strip():
            self.skip(origin, "a question without its text or answer, not asked")
            return
        self.user(asked, origin=origin, created_at=created_at)
        self.questions.append(Question(len(self.messages) - 1, asked, tuple(evidence)))
        self.assistant(answer, origin=f"{origin} answer")

    def result(self, content: object, *, origin: str, call_id: str | None = None,
               tool: str | None = None, created_at: object = None,
               is_error: bool = False, strict: bool = True) -> None:
        """A tool result, paired with the call it answers (see the module notes).

        ``strict``: a ``call_id`` that answers no open call is an error; otherwise (a
        format whose ids are bookkeeping, not the model's) it is paired as if unnamed.
        """
        text = text_of(content)
        if call_id:
            call_id = self._alias.get(call_id, call_id)
            if call_id not in self._open and strict:
                raise InvalidFileError(
                    f"{origin}: tool result for call id {call_id!r} answers no tool call "
                    "before it (or one already answered)")
        if call_id and call_id in self._open:
            answered = call_id
        else:
            open_ids = list(self._open)
            named = [i for i in open_ids if tool and self._open[i] == tool]
            if not (named or open_ids):
                self.skip(origin, "a tool result with no tool call before it, kept as "
                          "user text")
                label = f"[result of {tool}]" if tool else "[tool result]"
                self._append({"role": "user", "content": f"{label}\n{text}"}, origin,
                             created_at)
                return
            answered = (named or open_ids)[0]
        del self._open[answered]
        message: dict[str, Any] = {"role": "tool", "tool_call_id": answered, "content": text}
        if is_error:
            message["is_error"] = True
        self._append(message, origin, created_at)

    def has_open_calls(self) -> bool:
        """Whether some tool call has no result yet."""
        return bool(self._open)

    def add_calls(self, calls: Sequence[Call], *, after_results: bool = True
                  ) -> list[str] | None:
        """More calls of the newest assistant message (None when it cannot take them).

        For formats that log the calls of one model response one by one: they join the
        newest assistant message that made calls, while only tool results follow it
        (``after_results``), or only while it is the newest message (without).
        """
        index = len(self.messages) - 1
        while after_results and index >= 0 and self.messages[index]["role"] == "tool":
            index -= 1
        if index < 0 or self.messages[index]["role"] != "assistant" or (
                after_results and "tool_calls" not in self.messages[index]):
            return None
        added = [self._open_call(call) for call in calls]
        self.messages[index].setdefault("tool_calls", []).extend(added)
        return [c["id"] for c in added]

    def openai(self, item: Mapping[str, Any], *, origin: str) -> None:
        """One message in OpenAI chat form, or close to it (flat or legacy calls).

        A ``metadata`` object is kept (memci stores it and never sends it).
        """
        before = len(self.messages)
        self._openai(item, origin)
        metadata = item.get("metadata")
        if len(self.messages) > before and isinstance(metadata, Mapping) and metadata:
            self.messages[-1]["metadata"] = dict(cast(Mapping[str, Any], metadata))

    def _openai(self, item: Mapping[str, Any], origin: str) -> None:  # noqa: C901 - one branch per kind of trace item
        role = item.get("role")
        created = item.get("created_at", item.get("timestamp"))
        kind = item.get("type")
        if role is None and kind in ("function_call", "custom_tool_call"):
            # Responses API items: the calls of one response follow its message, if any.
            name, call_id = item.get("name"), item.get("call_id", item.get("id"))
            call = Call(name if isinstance(name, str) and name else "function",
                        item.get("arguments", item.get("input")),
                        call_id if isinstance(call_id, str) and call_id else None)
            if self.add_calls([call], after_results=False) is None:
                self.assistant("", [call], origin=origin, created_at=created)
        elif role is None and kind in ("function_call_output", "custom_tool_call_output"):
            call_id = item.get("call_id")
            self.result(item.get("output"), origin=origin, created_at=created,
                        call_id=call_id if isinstance(call_id, str) and call_id else None)
        elif role is None and kind == "reasoning":
            self.skip(origin, "reasoning items (not sent back as input), skipped")
        elif role in ("system", "developer"):
            self.system(item.get("content"), origin=origin, created_at=created)
        elif role == "user":
            calls = _calls(item)
            if calls:  # a simulated user with tools (tau2): its calls are its text
                rendered = [f"[{c.name}({arguments_text(c.arguments)})]" for c in calls]
                self.user("\n".join([text_of(item.get("content")), *rendered]).strip(),
                          origin=origin, created_at=created)
            else:
                name = item.get("name")
                self.user(item.get("content"), origin=origin, created_at=created,
                          name=name if isinstance(name, str) and name else None)
        elif role == "assistant":
            content = item.get("content")
            if content is None and item.get("refusal"):
                content = item.get("refusal")
            self.assistant(content, _calls(item), origin=origin, created_at=created)
        elif role in ("tool", "function"):
            call_id = item.get("tool_call_id")
            ids = item.get("tool_call_ids")
            if not isinstance(call_id, str) and isinstance(ids, list) and ids:
                call_id = ids[0]  # SWE-agent: one result for the calls it lists
            if not isinstance(call_id, str) and isinstance(item.get("id"), str) \
                    and item.get("id") in self._open:
                call_id = item["id"]  # tau2 names the call in "id"
            name = item.get("name")
            if item.get("requestor") == "user":  # tau2: a result for the simulated user
                self.user(f"[{name or 'tool'} result]\n{text_of(item.get('content'))}",
                          origin=origin, created_at=created)
                return
            self.result(item.get("content"), origin=origin,
                        call_id=call_id if isinstance(call_id, str) and call_id else None,
                        tool=name if isinstance(name, str) else None, created_at=created,
                        is_error=bool(item.get("is_error") or item.get("error")))
            for other in ids[1:] if isinstance(ids, list) else []:
                if isinstance(other, str) and self._alias.get(other, other) in self._open:
                    self.result("", origin=origin, call_id=other, created_at=created)
        else:
            self.skip(origin, f"role {role!r} is not a chat role, skipped")

    def add_tools(self, tools: object) -> None:
        """The agent's own tool schemas (OpenAI, Anthropic or bare; JSON text or a list)."""
        if isinstance(tools, str):
            try:
                tools = json.loads(tools)
            except ValueError:
                return
        if isinstance(tools, Mapping):  # {name: schema}
            tools = list(cast(Mapping[str, Any], tools).values())
        if not isinstance(tools, list):
            return
        known = {t["function"]["name"] for t in self.tools}
        for tool in cast(list[object], tools):
            schema = tool_schema(tool)
            if schema is not None and schema["function"]["name"] not in known:
                known.add(schema["function"]["name"])
                self.tools.append(schema)

    def skip(self, origin: str, why: str) -> None:
        """Note that ``origin`` was left out or changed: ``why`` says how and why."""
        self._notes.setdefault(why, []).append(origin)

    @property
    def notes(self) -> list[str]:
        """One line per reason: where, and why (``message 111: role 'exit' is not …``)."""
        out = []
        for why, places in self._notes.items():
            shown = ", ".join(places[:_NOTE_PLACES])
            more = f" … ({len(places)} in all)" if len(places) > _NOTE_PLACES else ""
            out.append(f"{shown}{more}: {why}")
        return out

    def chat_messages(self) -> int:
        """Messages other than system prompts."""
        return sum(1 for m in self.messages if m["role"] != "system")

    # -- inside ----------------------------------------------------------------------------

    def _plain(self, role: str, content: object, origin: str, created_at: object,
               name: str | None) -> None:
        body = content_of(content)
        if not body:
            if content is not None:  # absent (no system prompt in the file) is no news
                self.skip(origin, f"an empty {role} message, skipped")
            return
        message: dict[str, Any] = {"role": role, "content": body}
        if name:
            message["name"] = name
        self._append(message, origin, created_at)

    def _append(self, message: dict[str, Any], origin: str, created_at: object) -> None:
        if created_at is not None and created_at != "":
            try:
                message["created_at"] = parse_timestamp(created_at).isoformat()
            except MemciError:
                self.skip(origin, "a time memci cannot read, left out")
        self.messages.append(message)
        self.origins.append(origin)

    def _open_call(self, call: Call) -> dict[str, Any]:
        """``call`` in OpenAI form, with its id, now open for a result."""
        call_id = self._call_id(call.id)
        self._open[call_id] = call.name
        return {"id": call_id, "type": "function",
                "function": {"name": call.name, "arguments": arguments_text(call.arguments)}}

    def _call_id(self, given: str | None) -> str:
        if given and given not in self._ids:
            self._ids.add(given)
            return given
        while True:
            self._made += 1
            made = f"call_{self._made}"
            if made not in self._ids:
                self._ids.add(made)
                if given:  # some models number their calls anew every turn (call_0)
                    self._alias[given] = made
                return made


def _calls(item: Mapping[str, Any]) -> list[Call]:
    """The tool calls of an OpenAI-like message: nested, flat (tau2) or legacy."""
    out: list[Call] = []
    raw = item.get("tool_calls")
    for call in cast(Iterable[object], raw if isinstance(raw, list) else []):
        if not isinstance(call, Mapping):
            continue
        call = cast(Mapping[str, Any], call)
        function = call.get("function")
        spec = cast(Mapping[str, Any], function) if isinstance(function, Mapping) else call
        name = spec.get("name")
        if isinstance(name, str) and name:
            call_id = call.get("id")
            out.append(Call(name, spec.get("arguments", spec.get("input")),
                            call_id if isinstance(call_id, str) and call_id else None))
    legacy = item.get("function_call")
    if isinstance(legacy, Mapping) and isinstance(legacy.get("name"), str):
        legacy = cast(Mapping[str, Any], legacy)
        out.append(Call(legacy["name"], legacy.get("arguments")))
    return out
