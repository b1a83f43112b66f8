"""The re-sent share of a run's model inputs: the bytes each input had already sent.

A model input is the conversation so far with the system prompt and the tool declarations around
it, so what it shares with the previous input is a common beginning (the messages already sent)
and a common end (what follows the messages, counters that grow by one at every call stepped
over). :func:`resent_of_run` finds both on the payloads' texts, compared as buffers; only the part
after the common beginning is decoded from base64, so reading the re-sent share costs about the
new content, not the whole conversation at every call. Where the package was built with a C
compiler the loop runs in C (``toolkit/histories/_cellscan.c``) for inputs of plain base64.
"""

from __future__ import annotations

import binascii
from typing import Any

import msgspec
import numpy as np

from toolkit.agents.growth import Call, RunSizes
from toolkit.histories.payload_cells import _b64_size, _cellscan, payload_texts

__all__ = ["resent_of_run"]

#: Nodes of a model input smaller than this are not compared (ids, flags, short strings).
_RESENT_MIN = 64


def resent_of_run(run: RunSizes, calls: list[Call]) -> tuple[int | None, float | None]:
    """Bytes of the run's model inputs' data the previous model call had already sent, and
    their share of all model-input bytes (None, None without calls, or for inputs that are not
    JSON text). Inputs of several JSON payloads are split into their JSON parts instead
    (:func:`_resent_by_parts`)."""
    if not calls:
        return None, None
    read = run.scanned_resent(calls)  # found by the frame's scan of its payload cells
    if read is not None:
        shared, total = read
        return shared, (shared / total if total else None)
    inputs = run.input_texts(calls)
    if any(found is None for found in inputs):
        return _resent_by_parts(run, calls)
    kinds = {b64 for _, b64 in inputs}
    if _cellscan is not None and len(kinds) == 1:  # the same loop in C, for plain base64
        found = _cellscan.resent([text for text, _ in inputs], kinds.pop())
        if found is not None:
            return found[0], (found[0] / found[1] if found[1] else None)
    return _resent_of_texts(inputs)


def _resent_of_texts(inputs: list[tuple[Any, bool]]) -> tuple[int, float | None]:
    """:func:`resent_of_run` of model inputs given as their texts (base64 or not)."""
    resent = total = 0
    previous: tuple[Any, bool] | None = None
    # The previous input's decoded text from a base64 offset on: the next comparison's "before"
    # is usually a slice of it (the conversation only grows), so each tail is decoded once.
    decoded: tuple[int, bytes] | None = None
    for text, b64 in inputs:  # type: ignore[misc]
        total += _b64_size(text) if b64 else len(text)
        reusable, decoded = decoded, None  # only the previous input's decoding can be reused
        if previous is not None and previous[1] == b64:
            before = previous[0]
            head = _common_prefix(before, text)
            if b64:  # whole base64 quanta only, away from the padding
                head = min(head, len(text) - 4, len(before) - 4)
                head = max(head - head % 4, 0)
                shared = head * 3 // 4
                tail, clean = _decoded_strictly(text[head:])
                if reusable is not None and reusable[0] <= head:
                    before = reusable[1][(head - reusable[0]) // 4 * 3 :]
                else:
                    before = _decoded(before[head:])
                # Slices of a decoding line up with its text's quanta only where no character
                # was skipped (the lenient decoder drops "-", "_", spaces, escapes' "\").
                decoded = (head, tail) if clean else None
            else:
                shared, tail, before = head, text[head:], before[head:]
            resent += shared + _common_end(tail, before)
        previous = (text, b64)
    return resent, (resent / total if total else None)


def _decoded_strictly(text: Any) -> tuple[bytes, bool]:
    """``text`` decoded from base64 as :func:`_decoded` does, and whether every character of
    it was decoded: whole quanta, and as many bytes as its characters hold (each character
    the lenient decoder skips costs bytes; its strict mode is twice as slow)."""
    out = _decoded(text)
    return out, len(text) % 4 == 0 and len(out) == _b64_size(text)


def _decoded(text: Any) -> bytes:
    """``text`` decoded from base64, characters that are not base64 skipped (``b""`` where
    that leaves no whole quanta)."""
    if _cellscan is not None:  # three times binascii's speed on plain base64; None otherwise
        found = _cellscan.b64_decode(text)
        if found is not None:
            return found
    try:
        return binascii.a2b_base64(text)
    except binascii.Error:
        return b""


def _prefix_numpy(a: Any, b: Any) -> int:
    """Length of the common beginning of two buffers (compared by numpy, not by slicing)."""
    n = min(len(a), len(b))
    if not n:
        return 0
    differ = np.frombuffer(a, np.uint8, n) != np.frombuffer(b, np.uint8, n)
    first = int(differ.argmax())
    return first if differ[first] else n


def _suffix_numpy(a: Any, b: Any) -> int:
    """Length of the common end of two buffers."""
    n = min(len(a), len(b))
    if not n:
        return 0
    x = np.frombuffer(a, np.uint8)[len(a) - n :][::-1]
    y = np.frombuffer(b, np.uint8)[len(b) - n :][::-1]
    differ = x != y
    first = int(differ.argmax())
    return first if differ[first] else n


# The same compiled, where the package was built with a C compiler: a loop over the bytes, with
# none of numpy's per-call cost (thousands of short comparisons per fleet).
_common_prefix = _prefix_numpy if _cellscan is None else _cellscan.common_prefix
_common_suffix = _suffix_numpy if _cellscan is None else _cellscan.common_suffix


_DIGITS = frozenset(b"0123456789.")


def _common_end(a: bytes, b: bytes, rounds: int = 8) -> int:
    """Bytes of the common end of two texts, stepping over numbers that differ (a request or
    token counter a framework sends at the end of each input) up to ``rounds`` times."""
    total = 0
    for _ in range(rounds):
        same = _common_suffix(a, b)
        total += same
        a, b = a[: len(a) - same], b[: len(b) - same]
        i, j = len(a), len(b)
        while i and a[i - 1] in _DIGITS:
            i -= 1
        while j and b[j - 1] in _DIGITS:
            j -= 1
        if i == len(a) or j == len(b):
            break  # what differs is not a number: the new content
        a, b = a[:i], b[:j]
    return total


def _resent_by_parts(run: RunSizes, calls: list[Call]) -> tuple[int | None, float | None]:
    """The re-sent share of inputs made of several JSON payloads: each input's JSON is split
    into its parts (object values, list items) as raw text; a part of 64 bytes or more that an
    earlier input held is re-sent, a new one is looked into."""
    seen: set[bytes] = set()
    resent = total = 0
    for call in calls:
        texts = payload_texts(run.columns["input"][call.position])
        if texts is None:
            return None, None  # not JSON (encrypted, binary): nothing to compare
        found: set[bytes] = set()
        for text in texts:
            total += len(text)
            resent += _matched(text, seen, found)
        seen |= found
    return resent, (resent / total if total else None)


_parts = msgspec.json.Decoder(list[msgspec.Raw] | dict[str, msgspec.Raw])


#: How deep into a new part of an input the comparison looks (a conversation's items sit one or
#: two levels down; deeper, new parts are the new content itself).
_RESENT_DEPTH = 3


def _matched(text: bytes, seen: set[bytes], found: set[bytes], depth: int = 0) -> int:
    """Bytes of ``text``'s parts already in ``seen``; new parts' texts go into ``found``."""
    if depth >= _RESENT_DEPTH:
        return 0
    try:
        parts = _parts.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return 0  # a string or a number: a part of its own, compared by its parent
    total = 0
    for part in parts.values() if isinstance(parts, dict) else parts:
        raw = bytes(part)
        if len(raw) < _RESENT_MIN:
            continue
        if raw in seen:
            total += len(raw)
        else:
            found.add(raw)
            if raw[:1] in (b"[", b"{"):
                total += _matched(raw, seen, found, depth + 1)
    return total
