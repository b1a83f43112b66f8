"""Log sources: paths (plain or gzip), text, bytes, file objects, lists of lines.

Decoding: UTF-8 (invalid bytes kept as U+FFFD), UTF-8/UTF-16 byte-order marks honoured; lines are
split on ``\\n`` only (``\\r\\n`` and a trailing ``\\r`` are removed), so vertical tabs, form feeds
and other Unicode line separators inside a record stay part of it. Docker Engine multiplexed
streams (``docker logs`` through the API: 8-byte frame headers) are de-framed, keeping each frame's
stream. A source that is not text at all raises :class:`~toolkit.errors.LogFormatError`.
"""

from __future__ import annotations

import codecs
import gzip
import io
import itertools
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from toolkit.errors import LogFormatError
from toolkit.limits import MAX_BYTES, LimitedReader, too_large
from toolkit.logs.blocks import ByteBlock

__all__ = ["BLOCK", "BLOCK_BYTES", "LineSource", "open_source"]

_SAMPLE = 65536
#: Lines per block handed to the parser (also the granularity of ``chunksize`` frames).
BLOCK = 65_536
#: Bytes per block of a UTF-8 byte source (whole lines: a block ends at a newline).
BLOCK_BYTES = 8 << 20
_MUX_STREAMS = {0: "stdin", 1: "stdout", 2: "stderr"}
_PATH_SUFFIXES = (".log", ".txt", ".gz", ".json", ".jsonl", ".out", ".err", ".ndjson")


class LineSource:
    """Lines of one source in blocks, and what a progress bar needs.

    ``blocks`` yields lists of ``str`` lines (every block but the last holds exactly :data:`BLOCK`
    lines), lists of ``(line, stream)`` pairs for Docker multiplexed streams, or, for UTF-8 byte
    sources, :class:`~toolkit.logs.blocks.ByteBlock` blocks of whole lines (about
    :data:`BLOCK_BYTES` each).
    """

    def __init__(self, name: str, blocks: Iterator[Any], total: int | None = None,
                 position: Any = None, *, rebatch: bool = True) -> None:
        self.name = name
        self.blocks = _rebatch(blocks, BLOCK) if rebatch else blocks
        self.total = total
        self._position = position

    def position(self) -> int | None:
        """Bytes of the underlying file consumed so far (None when unknown)."""
        if not self._position:
            return None
        try:
            return self._position()
        except ValueError:  # the file was closed at the end of the input: all of it was read
            return self.total


def _check_text(name: str, sample: bytes, encoding: str) -> None:
    """Refuse binary data: NUL bytes or mostly control / undecodable bytes in the first 64 KiB."""
    if encoding.startswith("utf-16"):
        return
    if not sample:
        raise LogFormatError(name, "the source is empty", position="byte 0",
                             expected="at least one log line")
    nul = sample.find(b"\x00")
    if nul >= 0:
        raise LogFormatError(name, "binary data (NUL byte), not a text log", position=f"byte {nul}",
                             expected="text lines")
    text = sample.decode("utf-8", "replace")
    bad = sum(1 for ch in text if ch == "\ufffd" or (ch < " " and ch not in "\t\n\r\x1b\x0c\x0b"))
    if bad > max(8, len(text) // 10):
        first = next(i for i, ch in enumerate(text) if ch == "\ufffd" or (ch < " " and
                     ch not in "\t\n\r\x1b\x0c\x0b"))
        raise LogFormatError(name, f"{bad} of the first {len(text)} characters are binary",
                             position=f"character {first}", expected="text lines")


def _rebatch(blocks: Iterable[list[Any]], size: int) -> Iterator[list[Any]]:
    """Regroup blocks of any length into blocks of exactly ``size`` items (the last: fewer)."""
    pending: list[Any] = []
    for block in blocks:
        if not pending and len(block) == size:
            yield block
            continue
        pending.extend(block)
        while len(pending) >= size:
            yield pending[:size]
            del pending[:size]
    if pending:
        yield pending


def _grouped(items: Iterator[Any], size: int = BLOCK) -> Iterator[list[Any]]:
    while block := list(itertools.islice(items, size)):
        yield block


def _split_lines(stream: IO[str], chunk_chars: int = 1 << 22) -> Iterator[list[str]]:
    """Blocks of lines of a text stream split on ``\n`` only, read in large chunks."""
    tail = ""
    while True:
        chunk = stream.read(chunk_chars)
        if not chunk:
            break
        parts = chunk.split("\n")
        parts[0] = tail + parts[0]  # cheaper than joining the tail to the whole chunk
        tail = parts.pop()
        if "\r" in chunk:
            parts = [p[:-1] if p.endswith("\r") else p for p in parts]
        if parts:
            yield parts
    if tail:
        yield [tail[:-1] if tail.endswith("\r") else tail]


def _byte_blocks(raw: IO[bytes]) -> Iterator[ByteBlock]:
    """Blocks of whole lines, about :data:`BLOCK_BYTES` each (a longer line makes a longer one).

    A read that ends inside a line gives a block up to its last newline (the buffer as is, not
    copied) and a one-line block: that line's start and the rest of it. Every read goes into the
    same buffer (a fresh one per read costs the kernel a page fault per 4 KiB, a tenth of the
    time of a JSON log): the reader is done with a block before it asks for the next, and
    nothing a block gives out (texts, Arrow arrays) refers to its bytes.
    """
    readinto = getattr(raw, "readinto", None)
    buffer = bytearray(BLOCK_BYTES) if readinto is not None else None
    while True:
        if buffer is not None:
            count = readinto(buffer)  # type: ignore[misc]
            chunk: bytes | bytearray = buffer if count == len(buffer) else buffer[:count]
        else:
            chunk = raw.read(BLOCK_BYTES)
        if not chunk:
            return
        if chunk.endswith(b"\n"):
            yield ByteBlock(chunk)
            continue
        cut = chunk.rfind(b"\n") + 1
        if cut:
            yield ByteBlock(chunk, cut)
        yield ByteBlock(chunk[cut:] + raw.readline())


def _is_multiplexed(head: bytes) -> bool:
    if len(head) < 8 or head[0] not in _MUX_STREAMS or head[1:4] != b"\x00\x00\x00":
        return False
    size = struct.unpack(">I", head[4:8])[0]
    return 0 < size < 1 << 24


def _demultiplex(name: str, raw: IO[bytes]) -> Iterator[tuple[str, str]]:
    """Docker Engine multiplexed stream -> (line, stream) pairs; lines may span frames."""
    decoder = {s: codecs.getincrementaldecoder("utf-8")("replace") for s in _MUX_STREAMS}
    pending: dict[int, str] = {}
    offset = 0
    while True:
        header = raw.read(8)
        if not header:
            break
        if len(header) < 8 or header[0] not in _MUX_STREAMS or header[1:4] != b"\x00\x00\x00":
            raise LogFormatError(name, "broken Docker stream frame header",
                                 position=f"byte {offset}",
                                 expected="8-byte header (stream, 0, 0, 0, big-endian size)")
        size = struct.unpack(">I", header[4:8])[0]
        payload = raw.read(size)
        if len(payload) < size:
            raise LogFormatError(name, f"truncated frame ({len(payload)} of {size} bytes)",
                                 position=f"byte {offset}", expected="a complete frame")
        offset += 8 + size
        stream = header[0]
        text = pending.pop(stream, "") + decoder[stream].decode(payload)
        parts = text.split("\n")
        for part in parts[:-1]:
            yield (part[:-1] if part.endswith("\r") else part), _MUX_STREAMS[stream]
        if parts[-1]:
            pending[stream] = parts[-1]
    for stream, rest in pending.items():
        yield rest, _MUX_STREAMS[stream]


def _too_large(name: str, max_bytes: int) -> LogFormatError:
    return LogFormatError(name, too_large(max_bytes), position=f"byte {max_bytes:,} decompressed",
                          expected="a log within the limit (pass a larger max_bytes=, or "
                          "max_bytes=None)")  # fmt: skip


def _from_binary(name: str, raw: IO[bytes], total: int | None, position: Any,
                 max_bytes: int | None = MAX_BYTES) -> LineSource:  # fmt: skip
    head = raw.peek(_SAMPLE)[:_SAMPLE] if hasattr(raw, "peek") else b""
    if not head:
        raw = io.BufferedReader(raw) if not isinstance(raw, io.BufferedReader) else raw  # type: ignore[arg-type]
        head = raw.peek(_SAMPLE)[:_SAMPLE]
    if head[:2] == b"\x1f\x8b":
        unzipped: Any = gzip.GzipFile(fileobj=raw)
        if max_bytes is not None:
            # Counted as it streams: a bomb stops at the limit, whatever the chunk size.
            unzipped = LimitedReader(unzipped, max_bytes, lambda: _too_large(name, max_bytes))
        buffered = io.BufferedReader(unzipped, buffer_size=1 << 20)
        try:
            buffered.peek(1)
        except (OSError, EOFError, zlib.error) as exc:
            raise LogFormatError(name, f"unreadable gzip data ({exc})", position="byte 0",
                                 expected="a gzip stream") from None
        return _from_binary(name, buffered, total, position, None)
    if _is_multiplexed(head):
        return LineSource(name, _grouped(_demultiplex(name, raw)), total, position)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        encoding = "utf-16"
    elif head[:3] == b"\xef\xbb\xbf":
        encoding = "utf-8-sig"
    else:
        encoding = "utf-8"
    _check_text(name, head, encoding)
    if encoding != "utf-16":
        if encoding == "utf-8-sig":
            raw.read(3)
        return LineSource(name, _guarded(name, _byte_blocks(raw)), total, position, rebatch=False)
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="replace", newline="\n")  # type: ignore[arg-type]
    return LineSource(name, _guarded(name, _split_lines(stream)), total, position)


def _guarded(name: str, blocks: Iterator[Any]) -> Iterator[Any]:
    """Turn decompression failures in the middle of a file into a LogFormatError."""
    count = 0
    try:
        for block in blocks:
            count += len(block)
            yield block
    except (OSError, EOFError, zlib.error) as exc:
        raise LogFormatError(name, f"the compressed stream is corrupt or truncated ({exc})",
                             position=f"after line {count}",
                             expected="a complete gzip stream") from None


def _looks_like_path(text: str) -> bool:
    if "\n" in text or len(text) > 4096:
        return False
    if os.path.exists(text):
        return True
    return (" " not in text and ("/" in text or "\\" in text)) or text.endswith(_PATH_SUFFIXES)


def _from_list(lines: list[str] | tuple[str, ...]) -> Iterator[list[str]]:
    for start in range(0, len(lines), BLOCK):
        block = list(lines[start:start + BLOCK])
        if any(line.endswith("\n") for line in block):
            block = [(line[:-2] if line.endswith("\r\n") else line[:-1])
                     if line.endswith("\n") else line for line in block]
        yield block


def open_source(source: Any, *, max_bytes: int | None = MAX_BYTES) -> LineSource:
    """Open any supported source as a :class:`LineSource`.

    ``max_bytes`` bounds what gzip content expands to (:mod:`toolkit.limits`).

    Raises
    ------
    LogFormatError
        Missing file, empty or binary data, unsupported source type; while reading, gzip
        content beyond ``max_bytes``.
    """
    if isinstance(source, str) and not _looks_like_path(source):
        if not source:
            raise LogFormatError("<text>", "the text is empty", expected="at least one log line")
        return LineSource("<text>", _split_lines(io.StringIO(source, newline="\n")))
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        name = str(path)
        if not path.is_file():
            problem = "no such file" if not path.exists() else "not a regular file"
            raise LogFormatError(name, problem, expected="a readable log file")
        handle = open(path, "rb")  # noqa: SIM115 - closed when the line iterator is exhausted
        return _from_binary(name, io.BufferedReader(handle, 1 << 20), path.stat().st_size,
                            handle.tell, max_bytes)
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        return _from_binary("<bytes>", io.BufferedReader(io.BytesIO(data)), len(data), None,
                            max_bytes)
    if isinstance(source, list | tuple):
        if not source:
            raise LogFormatError("<lines>", "the list of lines is empty", expected="log lines")
        if not all(isinstance(x, str) for x in source):
            raise LogFormatError("<lines>", "the list holds non-text items", expected="str lines")
        return LineSource("<lines>", _from_list(source))
    if hasattr(source, "read"):
        name = str(getattr(source, "name", "<file>"))
        probe = source.read(0)
        if isinstance(probe, str):
            return LineSource(name, _split_lines(source))
        raw = source if hasattr(source, "peek") else io.BufferedReader(source)  # type: ignore[arg-type]
        return _from_binary(name, raw, None, None, max_bytes)
    raise LogFormatError(repr(type(source).__name__), "unsupported log source type",
                         expected="a path, text, bytes, a file object or a list of lines")
