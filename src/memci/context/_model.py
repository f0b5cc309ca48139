"""The paged context model of seed 000: nodes, entries, pages, chapters, segments.

View mode: a :class:`Chapter` owns ONE doubly linked :class:`MessageList`; a :class:`Page`
is a view over a contiguous run of its nodes (``head`` … ``tail``) and copies nothing.
Pages of one chapter link up into one list by construction, so walking the chapter walks
every page in order. :meth:`Page.detach` unlinks the page's run from the chapter's list in
O(1) and leaves the nodes linked among themselves, so the page can be re-attached
elsewhere (archived, recalled) without copying a message.

Save/load (seed 000, "序列化与持久化"): only messages are saved (the store holds them);
on load :func:`page_from_messages` makes new nodes, links them inside the page (the
seed's ``rebuildNodeLinks``) and :meth:`Chapter.add_page` links the page into the
chapter's list.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence

from memci._dataclasses import dataclass
from memci._records import NamedTuple
from memci.messages import Message

__all__ = [
    "NUMBER",
    "SEQ",
    "TOKENS",
    "ActiveChapter",
    "ArchiveChapter",
    "Chapter",
    "ContentsEntry",
    "Entry",
    "MessageList",
    "MessageNode",
    "Page",
    "PageInfo",
    "page_from_messages",
]

# Sort and map keys in C, shared by the package: a build maps them over thousands of
# pages and messages.
NUMBER = operator.attrgetter("number")  # a page's
SEQ = operator.attrgetter("seq")  # a message's
TOKENS = operator.attrgetter("tokens")  # a page's or a message's


class MessageNode:
    """One message in a chapter's list, with links to its neighbours."""

    __slots__ = ("message", "next", "prev")

    def __init__(self, message: Message) -> None:
        self.message = message
        self.prev: MessageNode | None = None
        self.next: MessageNode | None = None


class MessageList:
    """A doubly linked list of nodes; the single source of a chapter's messages."""

    __slots__ = ("head", "size", "tail")

    def __init__(self) -> None:
        self.head: MessageNode | None = None
        self.tail: MessageNode | None = None
        self.size = 0

    def append_run(self, first: MessageNode, last: MessageNode, count: int) -> None:
        """Link an already linked run ``first`` … ``last`` at the end (no pointer reset)."""
        first.prev = self.tail
        if self.tail is None:
            self.head = first
        else:
            self.tail.next = first
        self.tail = last
        last.next = None
        self.size += count

    def insert_run_before(
        self, anchor: MessageNode | None, first: MessageNode, last: MessageNode, count: int
    ) -> None:
        """Link a run before ``anchor`` (at the end when ``anchor`` is None)."""
        if anchor is None:
            self.append_run(first, last, count)
            return
        before = anchor.prev
        first.prev, last.next = before, anchor
        anchor.prev = last
        if before is None:
            self.head = first
        else:
            before.next = first
        self.size += count

    def unlink_run(self, first: MessageNode, last: MessageNode, count: int) -> None:
        """Unlink ``first`` … ``last`` in O(1): the neighbours are joined to each other."""
        before, after = first.prev, last.next
        if before is None:
            self.head = after
        else:
            before.next = after
        if after is None:
            self.tail = before
        else:
            after.prev = before
        first.prev = None
        last.next = None
        self.size -= count

    def __iter__(self) -> Iterator[Message]:
        node = self.head
        while node is not None:
            yield node.message
            node = node.next

    def __len__(self) -> int:
        return self.size


class Entry(NamedTuple):
    """The smallest unit of the context: a reference to one node."""

    node: MessageNode

    @property
    def message(self) -> Message:
        """The entry's message."""
        return self.node.message


@dataclass(slots=True)
class ContentsEntry:
    """What the contents page shows of an archived page, and its recall bookkeeping."""

    page: int
    first_seq: int
    last_seq: int
    lines: tuple[str, ...]
    archived_round: int
    recall_count: int = 0
    last_recall_round: int | None = None
    tokens: int = 0
    source: str = "extractive"


class Page:
    """One interaction: a user message and everything after it up to the next user message.

    A view over ``head`` … ``tail`` of its chapter's list; ``count`` nodes, ``tokens``
    tokens. ``number`` is the page's index, unique in the session and stable forever.
    """

    __slots__ = ("_listed", "chapter", "count", "first_seq", "head", "number", "tail",
                 "tokens")

    def __init__(self, number: int, first_seq: int) -> None:
        self.number = number
        self.first_seq = first_seq
        self.head: MessageNode | None = None
        self.tail: MessageNode | None = None
        self.chapter: Chapter | None = None
        self.count = 0
        self.tokens = 0
        self._listed: tuple[Message, ...] | None = None  # messages(), until the next append

    @property
    def last_seq(self) -> int:
        """The seq of the page's newest message."""
        return self.tail.message.seq or self.first_seq if self.tail else self.first_seq

    def entries(self) -> Iterator[Entry]:
        """The page's entries, in order (a lazy view)."""
        node = self.head
        while node is not None:
            yield Entry(node)
            if node is self.tail:
                break
            node = node.next

    def messages(self) -> tuple[Message, ...]:
        """The page's messages, in order.

        Listed once until the page grows (its nodes and their messages change only by
        :meth:`append`): a build lists every page of its window (~900 at 10k messages of
        a tool loop), several times, and a page before the newest never changes.
        """
        listed = self._listed
        if listed is None:
            out: list[Message] = []
            node = self.head
            while node is not None:
                out.append(node.message)
                if node is self.tail:
                    break
                node = node.next
            listed = self._listed = tuple(out)
        return listed

    def append(self, message: Message) -> None:
        """Add the page's next message (the page must be the last of its chapter)."""
        node = MessageNode(message)
        self._listed = None
        if self.chapter is not None:
            assert self.tail is None or self.chapter.messages.tail is self.tail, (
                "only the last page grows")
            self.chapter.messages.append_run(node, node, 1)
        elif self.tail is not None:
            self.tail.next, node.prev = node, self.tail
        if self.head is None:
            self.head = node
        self.tail = node
        self.count += 1
        self.tokens += message.tokens or 0
        if self.chapter is not None:
            self.chapter.tokens += message.tokens or 0

    def detach(self) -> None:
        """Unlink the page from its chapter in O(1); its nodes stay linked to each other."""
        if self.chapter is not None:
            self.chapter.remove_page_range(self)


def page_from_messages(number: int, messages: Sequence[Message]) -> Page:
    """A detached page made of new nodes linked to each other (seed 000 load)."""
    first = messages[0].seq or 0
    page = Page(number, first)
    for message in messages:
        page.append(message)
    return page


class Chapter:
    """A set of pages over one :class:`MessageList`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.messages = MessageList()
        self.pages: dict[int, Page] = {}
        self.tokens = 0

    def add_page(self, page: Page, *, before: Page | None = None) -> None:
        """Link the page's run into the list (at the end, or before ``before``)."""
        assert page.chapter is None, "detach a page before adding it elsewhere"
        page.chapter = self
        self.pages[page.number] = page
        self.tokens += page.tokens
        if page.head is None or page.tail is None:
            return
        anchor = before.head if before is not None else None
        self.messages.insert_run_before(anchor, page.head, page.tail, page.count)

    def remove_page_range(self, page: Page) -> None:
        """Join the page's neighbours to each other, skipping its run (O(1))."""
        if page.head is not None and page.tail is not None:
            self.messages.unlink_run(page.head, page.tail, page.count)
        del self.pages[page.number]
        self.tokens -= page.tokens
        page.chapter = None

    def ordered_pages(self) -> list[Page]:
        """The chapter's pages in list order."""
        return sorted(self.pages.values(), key=NUMBER)

    def to_message_list(self) -> MessageList:
        """The chapter's single list (not a copy)."""
        return self.messages


class ActiveChapter(Chapter):
    """The recent pages, in full, in the context window."""

    def __init__(self) -> None:
        super().__init__("active")


class ArchiveChapter(Chapter):
    """Pages moved out of the window; the model sees them through the contents page."""

    def __init__(self) -> None:
        super().__init__("archive")
        self.contents: dict[int, ContentsEntry] = {}
        self.evicted: dict[int, ContentsEntry] = {}


@dataclass(frozen=True, slots=True)
class PageInfo:
    """Where one page of the followed branch is, and what it holds.

    ``place``: ``window`` (``detail``: current, recalled or active), ``contents`` (listed on
    the contents page) or ``evicted``; with another strategy than paged, ``window`` for
    every page.
    """

    page: int
    first_seq: int
    last_seq: int
    messages: int
    tokens: int
    place: str
    detail: str | None = None
    recall_count: int = 0
    last_recall_round: int | None = None
    archived_round: int | None = None
