"""Reading the protobuf wire format with numpy, many messages at a time.

Reading a field of a parsed protobuf message from Python costs about a microsecond; a history at
the server's limit has 51,200 events of a dozen fields each. Here the messages of one level (all
events, then all their attributes, ...) are walked in lockstep instead: step *k* decodes the *k*-th
field of every message still open, with vectorised varint decoding, so the cost is a few numpy
operations per field position rather than Python work per field.

Only the structure is checked (tags, wire types, lengths within their message); the caller
parses the same bytes with the protobuf library too, which validates everything else. Anything
unusual raises :class:`WireError` and the caller falls back to the protobuf library's messages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Fields",
    "WireError",
    "as_array",
    "byte_at",
    "leading",
    "packed_strings",
    "scan",
    "split_records",
    "strings",
    "varints",
]

_LEN = 2  # wire type: length-delimited
_VARINT = 0
_FIXED64 = 1
_FIXED32 = 5
_VALID_WIRE_TYPES = np.array([True, True, True, False, False, True, False, False])


class WireError(ValueError):
    """The bytes use the wire format in a way this reader does not handle (caller falls back)."""


def as_array(data: bytes) -> np.ndarray:
    """The bytes as a uint8 array (no copy)."""
    return np.frombuffer(data, dtype=np.uint8)


def byte_at(buf: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``buf[at]``, reading the last byte for offsets past the end: such reads belong to fields
    that run past their message, which the callers reject by their lengths anyway.
    """
    # ``take`` clips in the same pass as the gather: cheaper than a max() test before it.
    return np.take(buf, at, mode="clip")


def split_records(data: bytes, field: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of each ``field`` record of a message holding only that field.

    (``History`` holds only its repeated ``events``.) The records form a chain (each one's
    length says where the next begins), which :func:`_chained_records` follows over offsets
    computed with numpy; where that cannot tell, :func:`_walk_records` walks the bytes.
    """
    found = _chained_records(data, field)
    return found if found is not None else _walk_records(data, field)


def _chained_records(data: bytes, field: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The record chain from offset 0, found among every offset that could start a record.

    Any byte equal to the tag could start a record; those whose payload starts like an event
    (field 1, a varint: every encoder writes ``event_id`` first) are candidates, each linked to
    the candidate where the record after it would begin. The chain from offset 0 is then found
    by pointer doubling (the members within 2, 4, 8, ... links), a few numpy steps in all.
    ``None`` when the chain leaves the candidates (an event not written that way): the caller
    walks the bytes instead.
    """
    buf = as_array(data)
    size = len(buf)
    tag = (field << 3) | _LEN
    at = np.flatnonzero(buf == tag)
    if not size or not len(at) or at[0] != 0:
        return None
    length, length_size, overlong = varints(buf, at + 1)
    start = at + 1 + length_size
    keep = ~overlong & (length < np.uint64(1 << 40)) & (byte_at(buf, start) == 0x08)
    keep[0] = True  # the first record (its payload is checked by the reader like any other)
    at, start, length = at[keep], start[keep], length[keep]
    end = start + length.astype(np.int64)
    count = len(at)
    done, lost = count, count + 1  # two more nodes: past the last byte, and a dead end
    link = np.minimum(np.searchsorted(at, end), count - 1)
    link = np.where(at[link] == end, link, np.where(end == size, done, lost))
    jump = np.concatenate((link, [done, lost]))
    member = np.zeros(count + 2, dtype=bool)
    member[0] = True
    while True:
        reached = jump[member]
        if member[reached].all():
            break
        member[reached] = True
        jump = jump[jump]
    if member[lost] or not member[done]:
        return None
    chosen = np.flatnonzero(member[:count])
    return start[chosen], end[chosen]


def _walk_records(data: bytes, field: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`split_records` byte by byte, with the common one- and two-byte lengths unrolled."""
    tag = (field << 3) | _LEN
    starts: list[int] = []
    lengths: list[int] = []
    add_start, add_length = starts.append, lengths.append
    pos, size = 0, len(data)
    try:
        while pos < size:
            if data[pos] != tag:
                raise WireError(f"byte {pos}: tag 0x{data[pos]:02x}, expected 0x{tag:02x}")
            low = data[pos + 1]
            if low < 0x80:
                pos, length = pos + 2, low
            else:
                high = data[pos + 2]
                pos, length = pos + 3, (low & 0x7F) | ((high & 0x7F) << 7)
                shift = 14
                while high >= 0x80:
                    if shift > 35:
                        raise WireError(f"byte {pos}: implausible length")
                    high = data[pos]
                    pos, length, shift = pos + 1, length | ((high & 0x7F) << shift), shift + 7
            add_start(pos)
            add_length(length)
            pos += length
    except IndexError:
        raise WireError("the last record is cut short") from None
    if pos != size:
        raise WireError("the last record runs past the end")
    first = np.array(starts, dtype=np.int64)
    return first, first + np.array(lengths, dtype=np.int64)


def varints(buf: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The varint starting at each offset: value (uint64), length in bytes, and whether it ran
    past 10 bytes (garbage where the bytes are not a varint: the caller ignores those rows).
    """
    byte = byte_at(buf, at)
    value = (byte & 0x7F).astype(np.uint64)
    length = np.ones(len(at), dtype=np.int64)
    going = np.flatnonzero(byte & 0x80)
    for shift in range(7, 70, 7):
        if not len(going):
            break
        byte = byte_at(buf, at[going] + length[going])
        value[going] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
        length[going] += 1
        going = going[(byte & 0x80) != 0]
    overlong = np.zeros(len(at), dtype=bool)
    overlong[going] = True
    return value, length, overlong


@dataclass
class Fields:
    """Every top-level field of a set of messages, one row per field occurrence.

    ``message`` is the index of the message (as given to :func:`scan`) each field belongs to;
    ``value`` holds varints (as uint64; meaningless for fixed-size fields, which no column
    reads), ``start``/``length`` the payload of length-delimited fields.
    """

    message: np.ndarray
    number: np.ndarray
    wire_type: np.ndarray
    value: np.ndarray
    start: np.ndarray
    length: np.ndarray

    def select(self, rows: np.ndarray) -> Fields:
        """The rows picked by a boolean mask or an index array."""
        return Fields(*(getattr(self, name)[rows] for name in self.__dataclass_fields__))


def scan(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, ids: np.ndarray) -> Fields:
    """The fields of the messages ``buf[starts[i]:ends[i]]`` (message ``ids[i]``), in lockstep.

    Step *k* reads the *k*-th field of every message not yet exhausted; the arrays shrink as
    messages end. Both varint and length-delimited fields start with a varint after the tag, so
    one varint read serves both; fixed-size fields (rare here) only need their size.
    """
    open_ = starts < ends
    pos, end, owner = starts[open_], ends[open_], ids[open_]
    parts: list[tuple[np.ndarray, ...]] = []
    while len(pos):
        tag, tag_length, tag_overlong = varints(buf, pos)
        at = pos + tag_length
        wire_type = (tag & np.uint64(7)).astype(np.int8)
        if tag_overlong.any() or not _VALID_WIRE_TYPES[wire_type].all():
            raise WireError("bad tag, group or unknown wire type")
        value, value_length, overlong = varints(buf, at)
        fixed = (wire_type & 1).astype(bool)  # wire types 1 and 5; 0 and 2 start with a varint
        if overlong.any() and (overlong & ~fixed).any():
            raise WireError("varint longer than 10 bytes")
        delimited = wire_type == _LEN
        length = np.where(delimited, value, np.uint64(0))
        if (length > np.uint64(1 << 40)).any():
            raise WireError("implausible length")
        length = length.astype(np.int64)
        start = np.where(delimited, at + value_length, at)
        step = value_length + length
        if fixed.any():
            step[wire_type == _FIXED64] = 8
            step[wire_type == _FIXED32] = 4
        after = at + step
        if (after > end).any():
            raise WireError("a field runs past the end of its message")
        number = (tag >> np.uint64(3)).astype(np.int64)
        parts.append((owner, number, wire_type, value, start, length))
        more = after < end
        pos, end, owner = after[more], end[more], owner[more]
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return Fields(empty, empty, empty.astype(np.int8), empty.astype(np.uint64), empty, empty)
    return Fields(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def leading(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, tags: tuple[int, ...]
) -> tuple[list[tuple[np.ndarray, np.ndarray, np.ndarray]], np.ndarray]:
    """Fields with one-byte ``tags`` read in this order at the start of every message, each
    optional: the layout every encoder writes (fields in number order, defaults left out).

    Returns, per tag, ``(present, value, start)`` (``value``: the varint, or the length of a
    length-delimited field, whose payload begins at ``start``), and the offset where each
    message's other fields begin, to be read with :func:`scan`.
    """
    at = starts
    found = []
    for tag in tags:
        present = (at < ends) & (byte_at(buf, at) == tag)
        value, size, overlong = varints(buf, at + 1)
        if (present & overlong).any():
            raise WireError("varint longer than 10 bytes")
        value = np.where(present, value, np.uint64(0))
        start = at + 1 + size
        if tag & 7 == _LEN:
            if (value > np.uint64(1 << 40)).any():
                raise WireError("implausible length")
            after = np.where(present, start + value.astype(np.int64), at)
        else:
            after = np.where(present, start, at)
        if (after > ends).any():
            raise WireError("a field runs past the end of its message")
        found.append((present, value, start))
        at = after
    return found, at


def strings(data: bytes, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """UTF-8 text of each slice as an object array (``None`` for empty ones: proto3's "not set").

    Arrow slices, validates and deduplicates the texts in C++ (identities, task queues and type
    names repeat on thousands of events), so Python objects are made once per distinct text.
    """
    count = len(starts)
    if not count:
        return np.empty(0, dtype=object)
    order = np.argsort(starts, kind="stable")
    bounds = np.empty(2 * count, dtype=np.int64)
    bounds[0::2] = starts[order]
    bounds[1::2] = starts[order] + lengths[order]
    if (np.diff(bounds) < 0).any():
        raise WireError("overlapping strings")
    # Elements alternate: a wanted slice, then the bytes up to the next one (never looked at).
    sliced = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), 2 * count - 1, [None, pa.py_buffer(bounds), pa.py_buffer(data)]
    )
    wanted = pc.take(sliced, pa.array(np.arange(0, 2 * count, 2)), memory_pool=_POOL)
    out = np.empty(count, dtype=object)
    out[order] = _texts(wanted)
    return out


def packed_strings(data: bytes | bytearray, offsets: np.ndarray) -> np.ndarray:
    """:func:`strings` of texts laid end to end in ``data`` (text *i* ends at ``offsets[i+1]``)."""
    count = len(offsets) - 1
    if count <= 0:
        return np.empty(0, dtype=object)
    packed = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    return _texts(packed)


# Steadier than Arrow's default pool here (see events._times).
_POOL = pa.system_memory_pool()


def _texts(binary: pa.Array) -> np.ndarray:
    """The texts of a binary array as Python strings, one object per distinct text."""
    try:
        text = pc.cast(binary, pa.large_string(), memory_pool=_POOL)
        encoded = pc.dictionary_encode(text, memory_pool=_POOL)
    except pa.ArrowInvalid as exc:
        raise WireError(f"a string is not UTF-8 ({exc})") from None
    distinct = np.array([v or None for v in encoded.dictionary.to_pylist()] + [None], dtype=object)
    return distinct[encoded.indices.to_numpy()]
