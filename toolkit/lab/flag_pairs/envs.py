"""Version environments of the flag-pair recorder: one virtual environment per temporalio release.

Each flag is recorded by the same workflow code under the last temporalio release before the flag
and the first one with it (the releases were read from sdk-python's tags and the sdk-core commit
each one pins):

=====================================================  ==========================  ==============
flag                                                   before                      from
=====================================================  ==========================  ==============
sdk-core 1 ``IdAndTypeDeterminismChecks``,             1.1.0 (no ``sdkMetadata``)  1.2.0
sdk-core 2 ``UpsertSearchAttributeOnPatch``
sdk-core 3 ``MoveTerminalCommands``                    1.6.0                       1.7.0
Python 1 ``RAISE_ON_CANCELLING_COMPLETED_ACTIVITY``    1.12.0 (unknown), 1.13.0    1.14.0
                                                       (read on replay, never
                                                       written)
Python 2 ``PROCESS_WORKFLOW_ACTIVATION_JOBS_AS_        1.30.0 (unknown)            1.35.0 with the
SINGLE_BATCH``                                                                     SDK's switch on
                                                                                   (off by default
                                                                                   in 1.31-1.35)
sdk-core 4 ``NexusOperationDeterminismChecks``         1.34.0                      1.35.0
=====================================================  ==========================  ==============

Environments live under ``data/venvs/temporalio-<version>`` (gitignored); 1.35.0 is the project's
own interpreter, so the live test needs no extra environment.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit.lab.adk_python.envs import VenvPaths
from toolkit.lab.lookup import by_name

__all__ = ["ENVIRONMENTS", "MAIN_ENV", "TemporalioEnvironment", "environment"]


@dataclass(frozen=True)
class TemporalioEnvironment(VenvPaths):
    """One temporalio release and where its interpreter lives.

    Attributes
    ----------
    name : str
        ``temporalio-<version>``; also the directory name under each flag's data directory.
    temporalio : str
        The pinned release.
    requirements : tuple of str
        What ``pip install`` gets.
    main : bool
        True for the project's own environment (no venv is built).
    """

    name: str
    temporalio: str
    requirements: tuple[str, ...] = ()
    main: bool = False


def _release(version: str, *extra: str) -> TemporalioEnvironment:
    return TemporalioEnvironment(
        f"temporalio-{version}", version, (f"temporalio=={version}", *extra)
    )


ENVIRONMENTS: tuple[TemporalioEnvironment, ...] = (
    # Releases of early 2023 accept any protobuf >= 3.20, but their generated code needs < 4.22.
    _release("1.1.0", "protobuf<4.22"),
    _release("1.2.0", "protobuf<4.22"),
    _release("1.6.0"),
    _release("1.7.0"),
    _release("1.12.0"),
    _release("1.13.0"),
    # 1.14.0 imports names nexus-rpc dropped after 1.1.0 (it asks only for >= 1.1.0).
    _release("1.14.0", "nexus-rpc==1.1.0"),
    _release("1.30.0"),
    _release("1.34.0"),
    TemporalioEnvironment("temporalio-1.35.0", "1.35.0", main=True),
)
"""Every release the flag pairs are recorded with, oldest first."""

MAIN_ENV = next(env for env in ENVIRONMENTS if env.main)


def environment(name: str) -> TemporalioEnvironment:
    """The environment called ``name`` (``temporalio-1.34.0`` ...); a
    :class:`~toolkit.errors.LabError` naming the known ones for any other name."""
    return by_name(ENVIRONMENTS, name, "temporalio environment")
