"""The workflow sandbox of the lab's workers and replayers: default restrictions, toolkit shared."""

from __future__ import annotations

from typing import Any

from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

__all__ = ["sandbox_options", "toolkit_sandbox_runner"]


def toolkit_sandbox_runner() -> SandboxedWorkflowRunner:
    """The default sandbox with ``toolkit`` passed through (workers and Replayer alike).

    The sandbox re-imports a workflow's module and everything it imports; ``toolkit``'s package
    init pulls in pandas and numpy, which cannot be loaded twice in one process. The lab's
    workflow modules keep no global state, so sharing them with the sandbox is safe.
    """
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules("toolkit")
    )


def sandbox_options() -> dict[str, Any]:
    """``Replayer`` options with :func:`toolkit_sandbox_runner` (the Go plugin twin's and the
    gallery's), for ``tk.replay_check(options="toolkit.lab.sandbox:sandbox_options")``."""
    return {"workflow_runner": toolkit_sandbox_runner()}
