"""Blocks of input lines as the JSON fast path sees them: a list of ``str``, or UTF-8 bytes.

A file is read as bytes and cut into :class:`ByteBlock` blocks of whole lines. Runs of JSON lines
in such a block are decoded straight from the bytes (one msgspec call per sub-block, no per-line
Python strings), and their ``raw`` texts become one Arrow string array per block (the bytes
without the newlines, plus offsets), so a million-line JSON log never materialises a million
``str`` objects. Lines that are not JSON records are decoded one by one when the block is mostly
JSON, and the whole block is decoded and split once otherwise.

Both kinds of block expose the same small interface to the reader and
:mod:`toolkit.logs.jsonfast` (a :class:`TextLines` wraps a list): ``line(k)``, ``json_starts``,
``clean_prefix`` (lines safe to decode together), ``joined`` (what ``decode_lines`` reads),
``raws`` and ``lazy_fields`` (column pieces).
"""

from __future__ import annotations

import codecs
from functools import cached_property
from itertools import repeat
from operator import itemgetter

import numpy as np
import pyarrow as pa

from toolkit.logs.cells import LazyFields
from toolkit.logs.formats.jsonlog import MAX_DEPTH, loads_json

__all__ = ["ByteBlock", "TextLines", "too_deep"]

#: Lines longer than this may nest deeper than orjson reads; they are checked one by one.
LONG_LINE = 2 * MAX_DEPTH
_NEWLINE, _OPEN, _CLOSE = ord("\n"), ord("{"), ord("}")
_last_char = itemgetter(-1)


def too_deep(line: str) -> bool:
    """Whether orjson refuses the line for its nesting (msgspec skips unread values at any depth).

    Bracket counts bound the depth, so only lines with very many brackets are decoded here.
    """
    if len(line) <= LONG_LINE or line.count("{") + line.count("[") <= MAX_DEPTH:
        return False
    try:
        loads_json(line)
    except ValueError:  # orjson.JSONDecodeError
        return True
    return False


class TextLines:
    """A list of lines (``str``) behind the fast path's interface.

    ``clean_prefix`` answers for a whole range at once (C-speed checks over the list): either
    every line is clean, or the range is read line by line.
    """

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __len__(self) -> int:
        return len(self.lines)

    def line(self, k: int) -> str:
        return self.lines[k]

    def json_starts(self) -> list[bool]:
        """Per line: starts with ``{`` (may begin a JSON record)."""
        return [line[:1] == "{" for line in self.lines]

    def clean_prefix(self, a: int, b: int) -> int:
        """``b`` when every line of ``[a, b)`` is one JSON object that may be decoded with others
        (starts with ``{``, ends with ``}``, not nested too deep); else ``a``."""
        part = self.lines[a:b]
        # Blank lines sort before "{", so the smallest line shows whether any line is blank or
        # starts with something else; after that every line has a last character.
        if not part or min(part)[:1] != "{" or set(map(_last_char, part)) != {"}"}:
            return a
        if max(map(len, part)) > LONG_LINE and any(map(too_deep, part)):
            return a
        return b

    def dirty_end(self, a: int, b: int) -> int:
        """Where line-by-line reading may stop after an unclean range: its end."""
        return b

    def joined(self, a: int, b: int) -> str:
        return "\n".join(self.lines[a:b])

    def raws(self, a: int, b: int) -> list[str]:
        return self.lines[a:b]

    def lazy_fields(self, a: int, b: int) -> list[LazyFields]:
        return list(map(LazyFields, self.lines[a:b]))


class ByteBlock:
    """Whole lines of UTF-8 bytes (split on ``\\n``; no ``\\r`` handling needed on the fast path).

    Parameters
    ----------
    data : bytes or bytearray
        Complete lines; the last one may lack its ``\\n`` (the end of the input). A bytearray
        is a read buffer that the next block overwrites: nothing may keep it after the block.
    end : int, optional
        Where the lines end (default: the end of ``data``); ``data[end - 1]`` is then ``\\n``.
        Lets a block use a read buffer as is, without copying the whole lines out of it.
    """

    def __init__(self, data: bytes | bytearray, end: int | None = None) -> None:
        self.data = data
        self.end = len(data) if end is None else end
        view = np.frombuffer(data, dtype=np.uint8, count=self.end)
        newlines = np.flatnonzero(view == _NEWLINE)
        closed = self.end > 0 and view[self.end - 1] == _NEWLINE
        ends = newlines if closed else np.append(newlines, self.end)
        self.ends = ends
        self.starts = np.concatenate(([0], newlines[:len(ends) - 1] + 1)).astype(np.int64)
        self._view = view
        self._closed = closed

    def __len__(self) -> int:
        return len(self.ends)

    @cached_property
    def fast(self) -> bool:
        """Whether the bytes path applies: valid UTF-8 and no ``\\r`` (CRLF lines go by text)."""
        if self.data.find(b"\r", 0, self.end) >= 0:
            return False
        if self.data.isascii():  # past ``end`` too: that only ever errs towards the text path
            return True
        try:
            codecs.utf_8_decode(memoryview(self.data)[:self.end], "strict", True)
        except UnicodeDecodeError:  # decoded with U+FFFD replacements by the text path
            return False
        return True

    @cached_property
    def lines(self) -> list[str]:
        """The lines as ``str`` (invalid bytes replaced, a trailing ``\\r`` removed)."""
        text = codecs.utf_8_decode(memoryview(self.data)[:self.end], "replace", True)[0]
        parts = text.split("\n")
        if self._closed:
            parts.pop()
        if "\r" in text:
            parts = [p[:-1] if p.endswith("\r") else p for p in parts]
        return parts

    @cached_property
    def opens_object(self) -> np.ndarray:
        """Per line: starts with ``{``."""
        nonempty = self.ends > self.starts
        first = np.zeros(len(self), dtype=bool)
        first[nonempty] = self._view[self.starts[nonempty]] == _OPEN
        return first

    @cached_property
    def _clean(self) -> np.ndarray:
        """Per line: one JSON object that may be decoded together with its neighbours."""
        clean = self.opens_object.copy()
        clean[clean] = self._view[self.ends[clean] - 1] == _CLOSE
        lengths = self.ends - self.starts
        for k in np.flatnonzero(clean & (lengths > LONG_LINE)).tolist():
            clean[k] = not too_deep(self.line(k))
        return clean

    def json_starts(self) -> list[bool]:
        """Per line: starts with ``{`` (may begin a JSON record)."""
        return self.opens_object.tolist()

    def line(self, k: int) -> str:
        if "lines" in self.__dict__:
            return self.lines[k]
        return self.data[self.starts[k]:self.ends[k]].decode("utf-8", "replace").removesuffix("\r")

    def clean_prefix(self, a: int, b: int) -> int:
        """End of the longest run of clean lines from ``a`` (see :meth:`TextLines.clean_prefix`)."""
        window = self._clean[a:b]
        return b if window.all() else a + int(window.argmin())

    def dirty_end(self, a: int, b: int) -> int:
        """The first clean line after ``a`` (at most ``b``): where batch decoding may resume."""
        window = self._clean[a + 1:b]
        return b if not window.any() else a + 1 + int(window.argmax())

    def joined(self, a: int, b: int) -> memoryview:
        return memoryview(self.data)[self.starts[a]:self.ends[b - 1]]

    @cached_property
    def raw_array(self) -> pa.LargeStringArray:
        """Every line of the block as one Arrow string array (the bytes without newlines)."""
        text = self.data.replace(b"\n", b"")
        offsets = np.empty(len(self) + 1, dtype=np.int64)
        offsets[0] = 0
        offsets[1:] = self.ends - np.arange(len(self))  # one newline removed before each end
        return pa.LargeStringArray.from_buffers(len(self), pa.py_buffer(offsets),
                                                pa.py_buffer(text))

    def raws(self, a: int, b: int) -> pa.LargeStringArray:
        return self.raw_array[a:b]

    def lazy_fields(self, a: int, b: int) -> list[LazyFields]:
        return list(map(LazyFields, repeat(self.raw_array), range(a, b)))

