"""Ids drawn from a workflow's deterministic random stream, re-derived for another run.

temporalio's ``workflow.uuid4()`` (and ``workflow.random()``) draw from a ``random.Random`` seeded
by sdk-core with a SipHash-1-3 hash of the run's ``originalExecutionRunId``. Replaying a recorded
history therefore seeds the *new* code with the *recorded* run's id: a UUID the new code drew in
its own run comes out differently during the replay. A history cannot say which code drew what,
but the stream can: when an id in the new code's history is the 128 bits at word offset ``k`` of
its own run's stream, the new code drew it at offset ``k``, and during the replay it draws the
128 bits at offset ``k`` of the recorded run's stream instead (the draws before it are the same
code on the same inputs, up to the first divergence).
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

__all__ = ["core_randomness_seed", "reseed_ids", "uuid_offsets"]

_MASK = (1 << 64) - 1
#: How many 32-bit words of a run's stream are searched for drawn UUIDs.
STREAM_WORDS = 4096
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
#: Command row fields that carry ids a workflow may draw from its random stream.
ID_FIELDS = ("activity_id", "child_workflow_id", "local_activity_id", "target_workflow_id")


def _rotate(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (64 - bits))) & _MASK


def _siphash13(data: bytes) -> int:
    """SipHash-1-3 with zero keys (Rust's ``SipHasher13::new()``)."""
    v0, v1 = 0x736F6D6570736575, 0x646F72616E646F6D
    v2, v3 = 0x6C7967656E657261, 0x7465646279746573

    def sip_round() -> None:
        nonlocal v0, v1, v2, v3
        v0 = (v0 + v1) & _MASK
        v1 = _rotate(v1, 13) ^ v0
        v0 = _rotate(v0, 32)
        v2 = (v2 + v3) & _MASK
        v3 = _rotate(v3, 16) ^ v2
        v0 = (v0 + v3) & _MASK
        v3 = _rotate(v3, 21) ^ v0
        v2 = (v2 + v1) & _MASK
        v1 = _rotate(v1, 17) ^ v2
        v2 = _rotate(v2, 32)

    whole = len(data) - len(data) % 8
    for start in range(0, whole, 8):
        word = int.from_bytes(data[start : start + 8], "little")
        v3 ^= word
        sip_round()
        v0 ^= word
    last = ((len(data) & 0xFF) << 56) | int.from_bytes(data[whole:], "little")
    v3 ^= last
    sip_round()
    v0 ^= last
    v2 ^= 0xFF
    for _ in range(3):
        sip_round()
    return v0 ^ v1 ^ v2 ^ v3


def core_randomness_seed(run_id: str) -> int:
    """The seed sdk-core gives a run's workflow random stream (``str_to_randomness_seed``).

    Rust hashes a ``str`` as its bytes followed by ``0xff``.
    """
    return _siphash13(run_id.encode() + b"\xff")


@lru_cache(maxsize=64)
def _stream(run_id: str) -> tuple[dict[str, int], tuple[str, ...]]:
    """UUID -> word offset, and offset -> UUID, for the first words of a run's stream."""
    generator = random.Random(core_randomness_seed(run_id))
    words = [generator.getrandbits(32) for _ in range(STREAM_WORDS + 3)]
    by_offset = []
    for offset in range(STREAM_WORDS):
        # getrandbits(128) = four consecutive 32-bit words, least significant first.
        value = sum(words[offset + i] << (32 * i) for i in range(4))
        by_offset.append(str(uuid.UUID(bytes=value.to_bytes(16, "big"), version=4)))
    return {text: offset for offset, text in reversed(list(enumerate(by_offset)))}, tuple(by_offset)


def uuid_offsets(text: str, run_id: str) -> list[tuple[str, int]]:
    """The UUIDs inside ``text`` drawn from ``run_id``'s stream, with their word offsets."""
    offsets, _ = _stream(run_id)
    return [(m, offsets[m]) for m in _UUID.findall(text) if m in offsets]


def reseed_ids(
    rows: Iterable[dict[str, Any]], own_run_id: str | None, replayed_run_id: str | None
) -> list[str]:
    """Rewrite, in place, ids the new code drew in its own run as it draws them in the replay.

    Parameters
    ----------
    rows
        The new code's command rows (``commands()`` columns); ``ID_FIELDS`` are rewritten.
    own_run_id
        The run id that seeded the new code's own run (its history's ``originalExecutionRunId``).
    replayed_run_id
        The recorded history's ``originalExecutionRunId``, which seeds the replay.

    Returns
    -------
    list of str
        One line per rewritten id: ``activity_id 'a' -> 'b' (draw at word 4)``.
    """
    if not own_run_id or not replayed_run_id or own_run_id == replayed_run_id:
        return []
    _, replay_stream = _stream(replayed_run_id)
    notes: list[str] = []
    for row in rows:
        for field in ID_FIELDS:
            value = row.get(field)
            if not isinstance(value, str):
                continue
            new_value = value
            for drawn, offset in uuid_offsets(value, own_run_id):
                new_value = new_value.replace(drawn, replay_stream[offset])
            if new_value != value:
                row[field] = new_value
                notes.append(f"{field} {value!r} -> {new_value!r} (drawn at word {offset})")
    return notes
