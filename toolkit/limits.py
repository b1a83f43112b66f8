"""Bounds on untrusted input: decompressed size and nesting depth.

A 2 MB gzip file can expand to gigabytes, and a few hundred kilobytes of ``[`` nest deeper
than any decoder recurses. Readers therefore stop at :data:`MAX_BYTES` decompressed bytes
(``max_bytes=`` per call; Temporal's own limit is 50 MiB per history, ~2-3x that as JSON text,
so the default leaves a wide margin) and report nesting deeper than the decoder allows as a
located error instead of a ``RecursionError``.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable

import numpy as np

__all__ = ["MAX_BYTES", "LimitedReader", "deepest_point", "gunzip_limited", "too_large"]

#: Default limit on the decompressed (or read) size of one source, in bytes: 1 GiB.
MAX_BYTES = 1 << 30

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 4 << 20


def too_large(max_bytes: int) -> str:
    """The problem text for a source beyond ``max_bytes``."""
    return (
        f"the content exceeds the size limit max_bytes={max_bytes:,} bytes (a decompression "
        "bomb, or a larger export than expected)"
    )


def gunzip_limited(data: bytes, max_bytes: int | None) -> tuple[bytes, bool]:
    """Decompress gzip ``data`` (every member), stopping once more than ``max_bytes`` came out.

    Returns ``(content, True)``, or ``(b"", False)`` when the limit stopped it. Output comes in
    pieces of :data:`_CHUNK` bytes, so a bomb costs about ``max_bytes`` of memory (one call
    with ``max_length`` would hold its block buffer and the joined copy at once). Damaged
    streams raise ``zlib.error`` or ``EOFError`` as :func:`gzip.decompress` does.
    """
    pieces = []
    produced = 0
    rest = data
    while rest[:2] == _GZIP_MAGIC:
        inflater = zlib.decompressobj(wbits=31)
        pending = rest
        while not inflater.eof:
            piece = inflater.decompress(pending, _CHUNK)
            pending = inflater.unconsumed_tail
            if not piece and not pending:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
            produced += len(piece)
            if max_bytes is not None and produced > max_bytes:
                return b"", False
            pieces.append(piece)
        rest = inflater.unused_data.lstrip(b"\x00")  # members may be padded with zeros
    return (pieces[0] if len(pieces) == 1 else b"".join(pieces)), True


class LimitedReader(io.RawIOBase):
    """A binary stream that raises ``on_limit()`` once more than ``max_bytes`` were read."""

    def __init__(self, inner: io.RawIOBase | io.BufferedIOBase, max_bytes: int,
                 on_limit: Callable[[], Exception]) -> None:  # fmt: skip
        self._inner = inner
        self._left = max_bytes
        self._on_limit = on_limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        count = self._inner.readinto(buffer)  # type: ignore[attr-defined]
        self._left -= count or 0
        if self._left < 0:
            raise self._on_limit()
        return count or 0


def deepest_point(data: bytes, limit: int) -> tuple[int, int]:
    """``(depth, byte)``: the JSON nesting depth of ``data`` (brackets outside strings) and the
    first byte where it exceeds ``limit`` (or the deepest point if it never does).

    Vectorised (a few passes over the bytes); used to locate a nesting error, and to enforce a
    ``max_depth`` below the decoder's own.
    """
    raw = np.frombuffer(data, dtype=np.uint8)
    if not len(raw):
        return 0, 0
    index = np.arange(len(raw))
    backslash = raw == 0x5C
    # A quote is escaped when an odd run of backslashes precedes it.
    last_plain = np.maximum.accumulate(np.where(backslash, -1, index))
    run_before = np.empty(len(raw), dtype=np.int64)
    run_before[0] = 0
    run_before[1:] = index[:-1] - last_plain[:-1]
    quote = (raw == 0x22) & (run_before % 2 == 0)
    inside = (np.cumsum(quote) % 2 == 1) & ~quote  # bytes inside a string (quotes excluded)
    opens = ((raw == 0x5B) | (raw == 0x7B)) & ~inside
    closes = ((raw == 0x5D) | (raw == 0x7D)) & ~inside
    depth = np.cumsum(opens.astype(np.int64) - closes.astype(np.int64))
    beyond = np.flatnonzero(depth > limit)
    if len(beyond):
        return int(depth.max()), int(beyond[0])
    deepest = int(np.argmax(depth))
    return int(depth[deepest]), deepest
