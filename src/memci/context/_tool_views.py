"""How tool results appear in a context: never raw, but as their artifact's view (seed 004).

Every tool result is stored whole as an artifact when it is added, in the transaction that
stores the message (:meth:`ToolViews.prepare` before it, :meth:`ToolViews.link` inside
it): the message, its artifact, its file and its view are stored together or not at all.
A large output (one the artifact store keeps as a file) is stored once: its message row
keeps only the head and names the file (``external``), and is read whole only when asked.

A result's view shows its own call (the tool and its arguments): the same output returned
by another call later is the same artifact, linked again, and changes nothing shown of
this one. Views are made once per process (a stored message and its link never change):
when the result is added, or the first time a build shows it.

In a context a tool result appears as a *view*: the artifact's 1-6 summary lines and its
pointer ``artifact:<id>``; the newest result of a tool loop also shows the head of its
output, read from the artifact (never the whole output). A view keeps the tool message's
call id, so calls and results stay paired. Which artifact a result is, and what its view
costs in tokens, is saved in ``message_views``, so planning a build reads no message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

from memci._dataclasses import replace
from memci._records import NamedTuple
from memci.messages import Message, ToolCallPart, ToolResultPart
from memci.store import ROW_HEAD_CHARS, SessionRecord, Store, orphan_result, row_head
from memci.tokens import Tokenizer
from memci.workspace import Artifact, ArtifactNotFoundError, ArtifactStore, render_tool_result
from memci.workspace._artifacts import PreparedOutput

__all__ = ["SMALL_OUTPUT_CHARS", "PendingResult", "SessionArtifacts", "ToolViews",
           "count_tool_result"]

SMALL_OUTPUT_CHARS = 300
COUNT_SAMPLES_OVER = 1_000_000
"""Characters of a tool output above which its raw tokens are counted from samples."""
_SAMPLES = 16
_KEPT_VIEWS = 512  # views kept made, by seq (a window's tool results)
_SAMPLE_CHARS = 32_768


def count_tool_result(tokenizer: Tokenizer, message: Message) -> int:
    """Tokens of a tool message as sent raw; counted from samples past a million characters.

    The raw count only says what sending the whole output would cost (a context shows
    its view), so a huge output is counted from evenly spaced samples and scaled: time
    and memory stay bounded whatever its size.
    """
    result = message.tool_result
    if result is None or len(result.content) <= COUNT_SAMPLES_OVER:
        return tokenizer.count_message(message)
    text = result.content
    step = len(text) // _SAMPLES
    sample = "".join(text[i * step:i * step + _SAMPLE_CHARS] for i in range(_SAMPLES))
    empty = tokenizer.count_message(replace(message, parts=(replace(result, content=""),)))
    counted = tokenizer.count_message(replace(message, parts=(replace(result, content=sample),)))
    return empty + round((counted - empty) * len(text) / len(sample))


class PendingResult(NamedTuple):
    """A tool result of a batch being added, with its artifact prepared (rows not written)."""

    position: int
    prepared: PreparedOutput

    @property
    def external(self) -> bool:
        """Whether its message row keeps only the head (the whole is in the file)."""
        return self.prepared.stored == "file" and self.prepared.chars > ROW_HEAD_CHARS


class SessionArtifacts:
    """The artifact store as one session sees it: only artifacts linked to that session."""

    def __init__(self, artifacts: ArtifactStore, session: SessionRecord) -> None:
        self._artifacts = artifacts
        self._session = session

    def get(self, artifact_id: str) -> Artifact:
        """The artifact, if the session has it; else ArtifactNotFoundError."""
        found = self._artifacts.get(artifact_id)
        if found.session_id != self._session.id and not any(
            a.session_id == self._session.id for a in self._artifacts.calls(found.id)
        ):
            raise ArtifactNotFoundError(f"no artifact {artifact_id!r} in this session")
        return found

    def read(self, artifact_id: str, offset: int = 0, length: int | None = None) -> str:
        """Exactly the characters ``offset`` … ``offset + length`` of the output."""
        return self._artifacts.read(self.get(artifact_id).id, offset, length)

    def read_lines(self, artifact_id: str, start: int = 1, count: int | None = None) -> str:
        """Lines ``start`` … ``start + count - 1`` of the output."""
        return self._artifacts.read_lines(self.get(artifact_id).id, start, count)


class ToolViews:
    """Makes and reads the views of one session's tool results."""

    def __init__(
        self, store: Store, session: SessionRecord, artifacts: ArtifactStore,
        tokenizer: Tokenizer,
    ) -> None:
        self.store = store
        self.session = session
        self.artifacts = artifacts
        self._tokenizer = tokenizer
        # seq -> (its artifact as linked to its call, its view), most recently used last
        self._made: OrderedDict[int, tuple[Artifact, Message]] = OrderedDict()

    @property
    def tokenizer(self) -> Tokenizer:
        """What counts a view's tokens (views made with another are made again)."""
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, tokenizer: Tokenizer) -> None:
        if tokenizer is not self._tokenizer:
            self._made.clear()
        self._tokenizer = tokenizer

    def _kept(self, seq: int) -> tuple[Artifact, Message] | None:
        made = self._made.get(seq)
        if made is not None:
            self._made.move_to_end(seq)
        return made

    def _keep(self, message: Message, artifact: Artifact, tokens: int = 0) -> Message:
        """The view of a stored result, made and kept with its artifact.

        ``tokens``: the view's tokens as saved with it (0: counted here).
        """
        view = self.view(message, artifact, tokens=tokens)
        self._made[message.seq or 0] = (artifact, view)
        self._made.move_to_end(message.seq or 0)
        while len(self._made) > _KEPT_VIEWS:
            self._made.popitem(last=False)
        return view

    def _own(self, message: Message, artifact_id: str,
             links: Mapping[str, Artifact] | None = None) -> Artifact:
        """The artifact ``artifact_id`` as linked to the call ``message`` answers.

        ``links``: the session's links by call id, read at once for a window (else the
        call's link is read here). Falls back to its latest link when the session has no
        link of that call to it (stored by an older version).
        """
        result = message.tool_result
        if result is not None:
            own = (links.get(result.call_id) if links is not None
                   else self.artifacts.for_call(self.session, result.call_id))
            if own is not None and own.id == artifact_id:
                return own
        return self.artifacts.get(artifact_id)

    def prepare(
        self, messages: Sequence[Message], calls: Mapping[str, ToolCallPart]
    ) -> list[PendingResult]:
        """Prepare the artifact of every tool result in a batch about to be added.

        Runs before the batch's transaction: large outputs' files are written now. A call
        is looked up in the batch, then in ``calls``, then in the store. A result that
        answers no open call is refused first (OrphanToolResultError), before any file is
        written: the store would refuse it after.
        """
        self._check_answers(messages)
        known = dict(calls)
        out: list[PendingResult] = []
        for position, message in enumerate(messages):
            for call in message.tool_calls:
                known[call.id] = call
            result = message.tool_result
            if message.role != "tool" or result is None:
                continue
            answered = known.get(result.call_id) or self._find_call(result.call_id, None)
            prepared = self.artifacts.prepare(
                result.content, tool_name=answered.name if answered else None,
                arguments=answered.arguments if answered else None)
            out.append(PendingResult(position, prepared))
        return out

    def _check_answers(self, messages: Sequence[Message]) -> None:
        """Refuse a tool result of the batch whose call is neither in it nor open in the store.

        The store has the last word (it also counts the answers each call got): this
        only spares writing the output of a result it would refuse.
        """
        made: set[str] = set()
        for message in messages:
            made.update(call.id for call in message.tool_calls)
            result = message.tool_result
            if (message.role == "tool" and result is not None and result.call_id not in made
                    and self.store.tool_call(self.session, result.call_id, None) is None):
                raise orphan_result(result.call_id, self.session.name)

    @staticmethod
    def as_stored(messages: Sequence[Message], pending: Sequence[PendingResult]) -> list[Message]:
        """``messages`` as their rows keep them: a large output's message holds its head."""
        external = {p.position for p in pending if p.external}
        return [row_head(m) if i in external else m for i, m in enumerate(messages)]

    def link(
        self, pending: Sequence[PendingResult], stored: Sequence[Message]
    ) -> list[tuple[Message, Message]]:
        """Write the artifacts and views of ``pending`` results (joins the batch's transaction).

        Returns each stored result with its view (made once, here).
        """
        made: list[tuple[Message, Artifact]] = []
        for item in pending:
            message = stored[item.position]
            result = message.tool_result
            assert result is not None and message.seq is not None
            artifact = self.artifacts.link(
                item.prepared, session=self.session, call_id=result.call_id,
                created_at=message.created_at, is_error=result.is_error)
            made.append((message, artifact))
        shown = [(m, self._keep(m, a)) for m, a in made]
        if made:
            self.store.save_views(self.session, [
                (m.seq or 0, a.id, v.tokens or 0) for (m, a), (_, v) in zip(made, shown,
                                                                         strict=True)])
        return shown

    def store_results(
        self, results: Sequence[Message], calls: dict[str, ToolCallPart]
    ) -> list[tuple[Message, Artifact]]:
        """Make the views of stored tool results that have none (stored by older versions)."""
        made: list[tuple[Message, Artifact]] = []
        refs = (self.store.output_refs(self.session, results[0].seq or 0, results[-1].seq or 0)
                if results else {})
        for message in results:
            result = message.tool_result
            assert result is not None and message.seq is not None
            if message.seq in refs:
                # Its row holds only the head: the whole is the artifact it names.
                made.append((message, self._by_sha(refs[message.seq])))
                continue
            call = calls.get(result.call_id) or self._find_call(result.call_id, message.seq)
            artifact = self.artifacts.put(
                result.content, session=self.session,
                tool_name=call.name if call else None, call_id=result.call_id,
                arguments=call.arguments if call else None, is_error=result.is_error,
                created_at=message.created_at,
            )
            made.append((message, artifact))
        if made:
            self.store.save_views(self.session, [
                (m.seq or 0, a.id, self.view(m, a).tokens or 0) for m, a in made])
        return made

    def _by_sha(self, sha: str) -> Artifact:
        return self.artifacts.get(self.artifacts.id_by_sha(sha))

    def _find_call(self, call_id: str, before: int | None) -> ToolCallPart | None:
        owner = self.store.tool_call(self.session, call_id, before)
        if owner is None:
            return None
        return next((c for c in owner.tool_calls if c.id == call_id), None)

    def view(self, message: Message, artifact: Artifact, *, head_chars: int = 0,
             head: str | None = None, tokens: int = 0) -> Message:
        """The tool message as shown: summary and pointer (and the head, if asked).

        Reads from the artifact only what it shows: a large output's message (as loaded
        for planning) holds only the head of it. ``head``: the output's text as
        :meth:`head_text` read it (then nothing is read here). ``tokens``: the view's
        tokens as saved when it was made (the view without a head is the same text in
        every process), so a fresh process does not count it again; 0: counted here.
        """
        result = message.tool_result
        assert result is not None
        label = " · ".join(x for x in (
            artifact.tool_name, f"call {result.call_id}", artifact.pointer) if x)

        def whole() -> str:
            if len(result.content) == artifact.chars:
                content = result.content
            elif head is not None and len(head) == artifact.chars:
                content = head
            else:
                content = self.artifacts.read(artifact.id)
            return f"[tool result · {label} · complete]\n{content}"

        if head_chars and artifact.chars <= head_chars:
            text = whole()  # the head is the whole output: no summary needed beside it
        elif head_chars:
            shown = (head[:head_chars + 1] if head is not None
                     else self.artifacts.read(artifact.id, 0, head_chars + 1))
            text = render_tool_result(artifact, head_chars=head_chars, head=shown)
        else:
            text = render_tool_result(artifact)
            if artifact.chars <= SMALL_OUTPUT_CHARS and len(all_of := whole()) <= len(text):
                text = all_of  # a tiny output is shorter than any summary of it
        shown_message = replace(
            message, parts=(ToolResultPart(result.call_id, text, result.is_error),))
        if not tokens or head_chars:
            tokens = self.tokenizer.count_message(shown_message)
        return replace(shown_message, tokens=tokens)

    def head_text(self, message: Message, artifact: Artifact, chars: int) -> str:
        """The first ``chars + 1`` characters of a tool output, or all of it when shorter.

        One read at most: enough for :meth:`view` to show any head up to ``chars``.
        """
        result = message.tool_result
        assert result is not None
        if len(result.content) == artifact.chars:
            return result.content[:chars + 1]
        if artifact.chars <= chars:
            return self.artifacts.read(artifact.id)
        return self.artifacts.read(artifact.id, 0, chars + 1)

    def views_of(self, messages: list[Message]) -> list[Message]:
        """``messages`` with every tool result replaced by its view (made if missing)."""
        seqs = [m.seq or 0 for m in messages if m.role == "tool"]
        if not seqs:
            return messages
        kept = {seq: done[1] for seq in seqs if (done := self._kept(seq)) is not None}
        if len(kept) < len(seqs):
            saved = self.store.saved_views(self.session, seqs[0], seqs[-1])
            missing = [m for m in messages if m.role == "tool" and (m.seq or 0) not in saved]
            new = {m.seq: a for m, a in self.store_results(missing, {})}
            links = self._links([m for m in messages if m.role == "tool"
                                 and (m.seq or 0) not in kept and m.seq not in new])
            for message in messages:
                seq = message.seq or 0
                if message.role != "tool" or seq in kept:
                    continue
                artifact, tokens = new.get(message.seq), 0
                if artifact is None:
                    try:
                        artifact = self._own(message, saved[seq][0], links)
                        tokens = self._saved_tokens(message, artifact, saved[seq], links)
                    except ArtifactNotFoundError:
                        artifact = self.store_results([message], {})[0][1]
                kept[seq] = self._keep(message, artifact, tokens)
        return [kept[m.seq or 0] if m.role == "tool" else m for m in messages]

    @staticmethod
    def _saved_tokens(message: Message, artifact: Artifact, saved: tuple[str, int],
                      links: Mapping[str, Artifact]) -> int:
        """The saved view's tokens when its view is made from the artifact it was saved with.

        A view was saved with its call's own link (see :meth:`store_results`); a result
        whose link is another (stored by an older version) is counted again (0).
        """
        result = message.tool_result
        own = links.get(result.call_id) if result is not None else None
        return saved[1] if own is artifact and artifact.id == saved[0] else 0

    def _links(self, messages: Sequence[Message]) -> dict[str, Artifact]:
        """The links of the calls ``messages`` answer, by call id: one read for them all."""
        calls = {m.tool_result.call_id for m in messages if m.tool_result is not None}
        return self.artifacts.for_calls(self.session, calls)

    def artifact_of(self, message: Message) -> Artifact:
        """The artifact of a stored tool result (as linked to its own call)."""
        seq = message.seq or 0
        kept = self._kept(seq)
        if kept is not None:
            return kept[0]
        saved = self.store.views(self.session, seq, seq)
        if seq in saved:
            try:
                return self._own(message, saved[seq])
            except ArtifactNotFoundError:
                pass
        return self.store_results([message], {})[0][1]
