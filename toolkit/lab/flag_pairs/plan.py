"""What the flag-pair recorder records: each flag's scenario under the releases on either side.

Histories go to ``<flag>/<version>/<scenario>.json`` (``<version>-single-batch`` for the run with
Python's lang flag 2 switched on); see :mod:`.envs` for why these releases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolkit.lab.flag_pairs.envs import environment

__all__ = ["PLAN", "Recording"]


@dataclass(frozen=True)
class Recording:
    """One history to record.

    Attributes
    ----------
    flag
        Directory under ``flag_pairs/``: the flag the pair is about (or ``derived_ids``).
    scenario
        File stem; ``workflow_type`` is what runs.
    env
        The release's environment (:mod:`.envs`).
    delivery
        ``cancel`` / ``signal`` (see :mod:`.drive`) or None.
    single_batch
        The worker turns on Python's lang flag 2 (directory ``<version>-single-batch``).
    code
        The code version the worker runs (a key of
        :data:`toolkit.lab.flag_pairs.workflows.CODE_CHANGES`).
    """

    flag: str
    scenario: str
    workflow_type: str
    env: str
    delivery: str | None = None
    single_batch: bool = False
    code: str = "same"

    @property
    def label(self) -> str:
        version = environment(self.env).temporalio
        return f"{version}-single-batch" if self.single_batch else version

    @property
    def path(self) -> Path:
        return Path(self.flag) / self.label / f"{self.scenario}.json"


def _pair(
    flag: str,
    scenario: str,
    workflow_type: str,
    versions: Sequence[str],
    delivery: str | None = None,
    code: str = "same",
) -> list[Recording]:
    return [
        Recording(flag, scenario, workflow_type, f"temporalio-{v}", delivery, code=code)
        for v in versions
    ]


PLAN: tuple[Recording, ...] = (
    *_pair("UpsertSearchAttributeOnPatch", "patched", "FlagPairsPatched", ("1.1.0", "1.2.0")),
    *_pair("MoveTerminalCommands", "late_command", "FlagPairsLateCommand", ("1.6.0", "1.7.0")),
    *_pair(
        "RAISE_ON_CANCELLING_COMPLETED_ACTIVITY",
        "cancel_completed",
        "FlagPairsCancelCompleted",
        ("1.12.0", "1.13.0", "1.14.0"),
        "cancel",
    ),
    *_pair(
        "PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH",
        "signal_and_activity",
        "FlagPairsSignalAndActivity",
        ("1.30.0", "1.35.0"),
        "signal",
    ),
    Recording(
        "PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_SINGLE_BATCH",
        "signal_and_activity",
        "FlagPairsSignalAndActivity",
        "temporalio-1.35.0",
        "signal",
        single_batch=True,
    ),
    *_pair("NexusOperationDeterminismChecks", "nexus", "FlagPairsNexus", ("1.34.0", "1.35.0")),
    *_pair(
        "NexusOperationDeterminismChecks",
        "nexus_renamed",
        "FlagPairsNexus",
        ("1.34.0", "1.35.0"),
        code="nexus-operation-renamed",
    ),
    # Two runs per release under different workflow ids: ids built from them differ.
    *_pair("derived_ids", "derived_ids_a", "FlagPairsDerivedIds", ("1.34.0", "1.35.0")),
    *_pair("derived_ids", "derived_ids_b", "FlagPairsDerivedIds", ("1.34.0", "1.35.0")),
    *_pair(
        "derived_ids",
        "derived_ids_child_changed",
        "FlagPairsDerivedIds",
        ("1.34.0", "1.35.0"),
        code="child-id-changed",
    ),
)
"""Everything :func:`record_all` records."""
