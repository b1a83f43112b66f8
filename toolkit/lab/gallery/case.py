"""Declaring a gallery case: two versions of one workflow, how to drive them, what to expect.

A :class:`Case` names two workflow classes registered under the same workflow type name, the
workflow's input, and the steps that drive a run (:class:`Signal`, :class:`Update`,
:class:`Query`, :class:`Settle`). :func:`register` adds a case to the registry that
:func:`~toolkit.lab.gallery.record.record_gallery` records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from temporalio import workflow

from toolkit.errors import LabError

__all__ = [
    "KINDS",
    "WHERE",
    "Case",
    "Expect",
    "Outcome",
    "Query",
    "Settle",
    "Signal",
    "Step",
    "Update",
    "all_cases",
    "get_case",
    "register",
    "workflow_type_name",
]

#: What a replay can end in: no failure, a nondeterminism error, or any other task failure.
Outcome = Literal["ok", "nondeterminism", "error"]
OUTCOMES: tuple[str, ...] = ("ok", "nondeterminism", "error")

#: Where in the run the code change sits (the ``where`` column).
WHERE: tuple[str, ...] = (
    "first_task",            # the change is in the first workflow task
    "after_signal",          # right after the run waited for a signal
    "middle",                # between earlier and later commands of a running flow
    "end_of_completed_run",  # after the last command, in a run that completed
    "end_of_open_run",       # at or after the point where a still-open run is waiting
    "in_handler",            # inside a signal or update handler
)

#: The kinds of change the built-in gallery covers (user cases may use any kind string).
KINDS: tuple[str, ...] = (
    "activity_renamed", "activity_added", "activity_removed", "activity_swapped",
    "activity_id_changed", "activity_input_changed", "activity_options_changed",
    "activity_task_queue_changed", "activity_result_type_changed",
    "timer_added", "timer_removed", "timer_retimed", "timer_swapped_with_activity",
    "timer_cancellation",
    "child_type_changed", "child_id_changed", "child_options_changed", "child_added",
    "local_activity_added", "local_activity_renamed", "local_activity_to_activity",
    "patch_introduced", "patch_removed", "deprecate_patch_introduced", "deprecate_patch_removed",
    "signal_handler_work", "signal_renamed", "update_handler_work", "update_handler_removed",
    "update_validator",
    "wait_moved", "sequential_to_parallel", "random_seeded", "uuid",
    "continue_as_new", "search_attributes", "query_added", "logging_added",
)

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")


@dataclass(frozen=True, init=False)
class Signal:
    """Send signal ``name`` with ``args`` once the run is idle."""

    name: str
    args: tuple[Any, ...]

    def __init__(self, name: str, *args: Any) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "args", args)


@dataclass(frozen=True, init=False)
class Update:
    """Execute update ``name`` with ``args`` once the run is idle; a rejection is recorded."""

    name: str
    args: tuple[Any, ...]

    def __init__(self, name: str, *args: Any) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "args", args)


@dataclass(frozen=True)
class Query:
    """Run query ``name`` once the run is idle (queries never touch the history)."""

    name: str


@dataclass(frozen=True)
class Settle:
    """Wait until the run is idle or closed (every step already does this before acting)."""


Step = Signal | Update | Query | Settle


@dataclass(frozen=True)
class Expect:
    """Expected replay outcomes.

    Attributes
    ----------
    v1_on_v2
        Outcome of replaying the v1 history with the v2 code: what happens to runs started before
        a deploy of v2.
    v2_on_v1
        Outcome of replaying the v2 history with the v1 code: what happens on a rollback.
    """

    v1_on_v2: Outcome
    v2_on_v1: Outcome


@dataclass(frozen=True)
class Case:
    """One code change: two versions of a workflow and how to drive a run of each.

    Parameters
    ----------
    name
        Short unique name (lower case, digits, ``-`` and ``_``): directory name and workflow id.
    description
        One or two sentences: what changed and why replay does (not) care.
    kind
        The kind of change (one of :data:`KINDS` for built-in cases).
    where
        Where the change sits in the run (one of :data:`WHERE`).
    v1, v2
        The two workflow classes; both must carry the same ``@workflow.defn(name=...)``.
    expect
        The outcomes the author expects; the recording stores whether they held.
    inputs
        Positional arguments of the workflow run (the same for both versions).
    drive
        Steps applied to each run after it starts, in order.
    support
        Further workflow classes both workers register (child workflows).
    side_task_queue
        Also run an activities-only worker on ``<task queue>-side``.
    message_stable
        False when the replay message quotes values drawn from the run's seed (UUIDs), so a new
        recording yields a different message with the same outcome.
    """

    name: str
    description: str
    kind: str
    where: str
    v1: type
    v2: type
    expect: Expect
    inputs: tuple[Any, ...] = ("order-1",)
    drive: tuple[Step, ...] = ()
    support: tuple[type, ...] = ()
    side_task_queue: bool = False
    message_stable: bool = True

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise LabError(
                f"gallery case {self.name!r}: name must match {_NAME.pattern} "
                "(it becomes a directory name and a workflow id)"
            )
        if self.where not in WHERE:
            raise LabError(f"gallery case {self.name!r}: where={self.where!r}; expected one of "
                           f"{', '.join(WHERE)}")
        for label, outcome in (("v1_on_v2", self.expect.v1_on_v2),
                               ("v2_on_v1", self.expect.v2_on_v1)):
            if outcome not in OUTCOMES:
                raise LabError(f"gallery case {self.name!r}: expect.{label}={outcome!r}; "
                               f"expected one of {', '.join(OUTCOMES)}")
        if self.v1 is self.v2:
            raise LabError(f"gallery case {self.name!r}: v1 and v2 are the same class")
        first, second = workflow_type_name(self.v1), workflow_type_name(self.v2)
        if first != second:
            raise LabError(
                f"gallery case {self.name!r}: v1 is workflow type {first!r} but v2 is {second!r}; "
                "expected both classes under the same @workflow.defn(name=...)"
            )

    @property
    def workflow_type(self) -> str:
        """The workflow type name both versions share."""
        return workflow_type_name(self.v1)


def workflow_type_name(cls: type) -> str:
    """Return the workflow type name of a ``@workflow.defn`` class.

    Raises
    ------
    LabError
        When ``cls`` is not a workflow definition.
    """
    # temporalio keeps the definition on a private attribute; from_class is its own accessor.
    definition = workflow._Definition.from_class(cls)
    if definition is None or definition.name is None:
        raise LabError(f"{cls!r} is not a named @workflow.defn class; expected a workflow class")
    return definition.name


_REGISTRY: dict[str, Case] = {}


def register(*cases: Case) -> None:
    """Add cases to the gallery registry.

    Raises
    ------
    LabError
        When a name is already registered with a different case.
    """
    for case in cases:
        known = _REGISTRY.get(case.name)
        if known is not None and known is not case:
            raise LabError(f"gallery case {case.name!r} is already registered; expected a new name")
        _REGISTRY[case.name] = case


def _load_builtin() -> None:
    # Importing the modules registers their cases; done lazily so that case.py stays importable
    # from inside the workflow modules themselves.
    from toolkit.lab.gallery import builtin  # noqa: F401


def all_cases() -> list[Case]:
    """Every registered case (built-in ones first, in declaration order)."""
    _load_builtin()
    return list(_REGISTRY.values())


def get_case(name: str) -> Case:
    """The registered case called ``name``.

    Raises
    ------
    LabError
        When no case has that name.
    """
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise LabError(
            f"no gallery case named {name!r}; expected one of {', '.join(sorted(_REGISTRY))}"
        ) from None
