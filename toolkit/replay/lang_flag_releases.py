"""Which SDK releases read a language flag when replaying, as the lab's flag pairs measured.

A language flag recorded in a history changes what the replaying SDK does only if that SDK reads
it; a release from before the flag ignores it and replays exactly as its own run went. So when
the recorded history records a flag that the new code's SDK release does not read, the new
code's own history shows what replay does, and no assumption about the flag is needed.

Python (``_WorkflowLogicFlag`` in ``temporalio/worker/_workflow_instance.py``, by sdk-python tag):

- 1 ``RAISE_ON_CANCELLING_COMPLETED_ACTIVITY``: read from 1.13.0, recorded from 1.14.0;
- 2 ``PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH``: read from 1.31.0, recorded by no
  release through 1.35.0 unless a worker turns it on.

data/flag_pairs holds the pairs: 1.12.0 fails on 1.14.0's history where 1.13.0 replays it, and
1.30.0 fails on the single-batch history of 1.35.0.
"""

from __future__ import annotations

import re

__all__ = ["READ_FROM", "ignores_when_replaying"]

READ_FROM: dict[str, dict[int, tuple[int, int, int]]] = {
    "python": {1: (1, 13, 0), 2: (1, 31, 0)},
}
"""Language -> flag -> the first release that reads it when replaying."""


def _release(text: str | None) -> tuple[int, ...] | None:
    parts = re.findall(r"\d+", text or "")[:3]
    return tuple(int(part) for part in parts) if len(parts) == 3 else None


def ignores_when_replaying(lang: str | None, flag: int, sdk_version: str | None) -> bool:
    """Whether SDK ``lang`` at ``sdk_version`` replays as if ``flag`` were not recorded.

    False when the release or the flag is not known here (nothing is concluded then).
    """
    first = READ_FROM.get(lang or "", {}).get(flag)
    release = _release(sdk_version)
    return first is not None and release is not None and release < first
