"""Which SDK releases read a flag when replaying, as the lab's flag pairs measured.

A flag recorded in a history changes what the replaying SDK does only if that SDK reads it; a
release from before the flag ignores it and replays exactly as its own run went. So when the
recorded history records a flag that the new code's release does not read, the new code's own
history shows what replay does, and no assumption about the flag is needed.

Python releases (sdk-python tags; the sdk-core each one pins for core flags):

- Python 1 ``RAISE_ON_CANCELLING_COMPLETED_ACTIVITY``: read from 1.13.0, recorded from 1.14.0;
- Python 2 ``PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH``: read from 1.31.0, recorded by
  no release through 1.35.0 unless a worker turns it on;
- sdk-core 4 ``NexusOperationDeterminismChecks``: from 1.35.0; the sdk-cores before it compare
  no Nexus service or operation at all, not even in the last stretch of history.

data/flag_pairs holds the pairs: 1.12.0 fails on 1.14.0's history where 1.13.0 replays it, 1.30.0
fails on the single-batch history of 1.35.0, and 1.34.0 code that calls another Nexus operation
replays 1.35.0's history where 1.35.0 code fails.
"""

from __future__ import annotations

import re

__all__ = [
    "CORE_READ_FROM",
    "LANG_READ_FROM",
    "LANG_RECORDED_FROM",
    "core_flag_unread",
    "ignores_when_replaying",
    "reads_without_recording",
]

LANG_READ_FROM: dict[str, dict[int, tuple[int, int, int]]] = {
    "python": {1: (1, 13, 0), 2: (1, 31, 0)},
}
"""Language -> language flag -> the first release that reads it when replaying."""

LANG_RECORDED_FROM: dict[str, dict[int, tuple[int, int, int]]] = {
    "python": {1: (1, 14, 0)},
}
"""Language -> language flag -> the first release that records it in its own runs (a release
that reads a flag before it records it replays with the flag on but never shows it)."""

CORE_READ_FROM: dict[str, dict[int, tuple[int, int, int]]] = {
    "python": {4: (1, 35, 0)},
}
"""Language -> sdk-core flag -> the first release whose sdk-core has it."""


def _release(text: str | None) -> tuple[int, ...] | None:
    parts = re.findall(r"\d+", text or "")[:3]
    return tuple(int(part) for part in parts) if len(parts) == 3 else None


def _before(table: dict[int, tuple[int, int, int]], flag: int, sdk_version: str | None) -> bool:
    first = table.get(flag)
    release = _release(sdk_version)
    return first is not None and release is not None and release < first


def ignores_when_replaying(lang: str | None, flag: int, sdk_version: str | None) -> bool:
    """Whether SDK ``lang`` at ``sdk_version`` replays as if language ``flag`` were not
    recorded. False when the release or the flag is not known here (nothing is concluded)."""
    return _before(LANG_READ_FROM.get(lang or "", {}), flag, sdk_version)


def reads_without_recording(lang: str | None, flag: int, sdk_version: str | None) -> bool:
    """Whether SDK ``lang`` at ``sdk_version`` reads language ``flag`` when replaying but does
    not record it in its own runs (Python 1 in 1.13.0): its history lacking the flag then says
    nothing about whether its code relies on it."""
    reads = not _before(LANG_READ_FROM.get(lang or "", {}), flag, sdk_version)
    return reads and _before(LANG_RECORDED_FROM.get(lang or "", {}), flag, sdk_version)


def core_flag_unread(flag: int, sdk_name: str | None, sdk_version: str | None) -> bool:
    """Whether the sdk-core of SDK ``sdk_name`` (``sdkMetadata.sdkName``) at ``sdk_version``
    predates sdk-core ``flag``. False when not known here."""
    lang = next((k for k in CORE_READ_FROM if k in (sdk_name or "").lower()), None)
    return lang is not None and _before(CORE_READ_FROM[lang], flag, sdk_version)
