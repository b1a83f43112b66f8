"""Replaying a history with a version's code through temporalio's ``Replayer``; naming the outcome.

The replayer reports a failed replay as an exception whose text is the Rust ``Debug`` rendering of
the workflow task failure. :func:`replay_outcome` keeps three things from it:

``outcome``
    ``ok`` (no failure), ``nondeterminism`` (``NondeterminismError``, the core's verdict), or
    ``error`` (any other workflow task failure, e.g. an exception raised by workflow code).
``message``
    The failure's own ``message`` field exactly as core produced it, e.g.
    ``[TMPRL1100] Nondeterminism error: Activity type of scheduled event 'reserve' does not match
    activity type of activity command 'reserve_stock'``. Empty for ``ok``.
``replayer_error``
    ``<exception type>: <exception text>`` with every ``stack_trace: "..."`` value replaced by
    ``"<omitted>"`` (stack traces quote file paths of the machine that replayed).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from temporalio.client import WorkflowHistory
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from toolkit.lab.gallery.drive import workflow_runner
from toolkit.replay.code_replay import RUST_DEBUG_STRING, rust_debug_field

__all__ = ["ReplayOutcome", "core_message", "quiet_runtime", "replay_outcome", "replay_with"]

_STACK_TRACE = re.compile(r"\bstack_trace: " + RUST_DEBUG_STRING)


_QUIET_RUNTIME: Runtime | None = None


def quiet_runtime() -> Runtime:
    """A runtime whose core logs only errors: a failed replay is the expected result here, and
    core would otherwise print a WARN line with the full failure for each one."""
    global _QUIET_RUNTIME
    if _QUIET_RUNTIME is None:
        quiet = TelemetryFilter(core_level="ERROR", other_level="ERROR")
        _QUIET_RUNTIME = Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=quiet)))
    return _QUIET_RUNTIME


@dataclass(frozen=True)
class ReplayOutcome:
    """The verdict of one replay (see the module docstring for the fields)."""

    outcome: str
    message: str
    error_type: str | None
    replayer_error: str | None

    def to_dict(self) -> dict[str, str | None]:
        """Plain dict for JSON."""
        return asdict(self)


def core_message(error_text: str) -> str:
    """The first ``message: "..."`` value of a replayer error text, unescaped; else the text."""
    message = rust_debug_field(error_text, "message")
    return error_text if message is None else message


def replay_outcome(failure: Exception | None) -> ReplayOutcome:
    """Classify a ``WorkflowReplayResult.replay_failure``."""
    if failure is None:
        return ReplayOutcome("ok", "", None, None)
    text = str(failure)
    outcome = "nondeterminism" if isinstance(failure, NondeterminismError) else "error"
    redacted = _STACK_TRACE.sub('stack_trace: "<omitted>"', text)
    return ReplayOutcome(outcome, core_message(text), type(failure).__name__,
                         f"{type(failure).__name__}: {redacted}")


async def replay_with(
    history: WorkflowHistory, workflow_class: type, support: tuple[type, ...] = ()
) -> ReplayOutcome:
    """Replay ``history`` with ``workflow_class`` (plus ``support`` workflows) and classify it."""
    replayer = Replayer(workflows=[workflow_class, *support], workflow_runner=workflow_runner(),
                        runtime=quiet_runtime())
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    return replay_outcome(result.replay_failure)
