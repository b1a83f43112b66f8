"""The ADK upgrade as a deploy: production runs on the old worker, and an upgrade that keeps them.

:func:`record_production` runs sessions with the production worker (the plugin before the fix on
ADK v2.5.0, as the seed's service ran): some finish, some stay open mid-conversation, waiting for
their next message, as production's always are when a deploy lands.

:class:`GuardedUpgradeAdk260` is the upgrade a replay check lets through: the plugin's fix and ADK
v2.6.0 behind ``workflow.patched(ADK_UPGRADE_PATCH)``. A run that started before it (no marker in
its history) keeps the old behaviour (the plugin before the fix, ``Tools()`` once per agent run,
as v2.5.0 called it), so its history replays; a new run records the marker and lists as the
fixed plugin does (2 listings per one-call turn on either release).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any

from temporalio import workflow

from toolkit.errors import LabError
from toolkit.lab.go_twin.spec import SessionInput
from toolkit.lab.go_twin.variants import TASK_QUEUE, VARIANTS, WORKFLOW_NAME
from toolkit.lab.go_twin.workflows import TwinProgress, _TwinSessionWorkflow
from toolkit.lab.server import wait_listed

__all__ = ["ADK_UPGRADE_PATCH", "GuardedUpgrade", "GuardedUpgradeAdk260", "Production",
           "record_production"]  # fmt: skip

ADK_UPGRADE_PATCH = "googleadk-listing-fix"


class GuardedUpgrade:
    """A variant that is the plugin with the fix on ADK v2.6.0 for runs that started with the
    patch, and the plugin before the fix on v2.5.0 for runs that did not (see the module)."""

    name = "guarded_upgrade-adk_v2.6.0"
    adk_release = "v2.6.0"

    @property
    def plugin_fixed(self) -> bool:
        return workflow.patched(ADK_UPGRADE_PATCH)

    @property
    def plugin_state(self) -> str:
        return "with_fix" if self.plugin_fixed else "before_fix"

    @property
    def tools_every_step(self) -> bool:
        # With the fix, listings do not depend on how often ADK calls Tools(); without it the
        # plugin lists wherever v2.5.0's ADK called it: once per agent run.
        return self.plugin_fixed

    def __str__(self) -> str:
        return self.name


@workflow.defn(name=WORKFLOW_NAME)
class GuardedUpgradeAdk260(_TwinSessionWorkflow):
    """ADK v2.6.0 and the plugin fix, behind a patch."""

    variant = GuardedUpgrade()  # type: ignore[assignment]

    @workflow.run
    async def run(self, spec: SessionInput) -> TwinProgress:
        return await self._serve(spec)


@dataclass(frozen=True)
class Production:
    """What :func:`record_production` left on the server."""

    query: str
    closed: list[str]
    open: list[str]


async def _handled(handle: Any, count: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        progress = await handle.query("progress", result_type=TwinProgress)
        if progress.handled >= count:
            return
        await asyncio.sleep(0.05)
    raise LabError(f"{handle.id}: {count} messages not handled within 60 s")


async def record_production(
    address: str, *, closed: int = 3, open_runs: int = 2, code: type | None = None
) -> Production:
    """Run sessions with the production worker (``code``, default the plugin before the fix on
    ADK v2.5.0) on the server at ``address``: ``closed`` finish after a tool-call turn and a plain
    turn; ``open_runs`` stop after the tool-call turn and wait for the next message. The worker
    and its MCP server stop afterwards; the open runs stay open.
    """
    import tempfile
    from pathlib import Path

    from temporalio.client import Client
    from temporalio.worker import Worker

    from toolkit.lab.go_twin.activities import ACTIVITIES
    from toolkit.lab.go_twin.scenarios import scenario_named
    from toolkit.lab.go_twin.workflows import WORKFLOW_CLASSES, workflow_runner
    from toolkit.lab.mcp_server import McpServer

    code = code or WORKFLOW_CLASSES[VARIANTS[0].name]
    scenario = scenario_named("one_call_then_plain")
    client = await Client.connect(address)
    tag = uuid.uuid4().hex[:6]
    ids: dict[str, list[str]] = {"closed": [], "open": []}
    with tempfile.TemporaryDirectory(prefix="go-twin-mcp-") as tmp, McpServer(
            request_log=Path(tmp) / "requests.jsonl") as server:
        async with Worker(client, task_queue=TASK_QUEUE, workflows=[code],
                          activities=list(ACTIVITIES), workflow_runner=workflow_runner()):
            for index in range(closed + open_runs):
                finish = index < closed
                handle = await client.start_workflow(
                    WORKFLOW_NAME, scenario.session(server.url), task_queue=TASK_QUEUE,
                    id=f"support-chat-{tag}-{index}",
                )  # fmt: skip
                actions = scenario.actions if finish else scenario.actions[:1]
                for count, (kind, value) in enumerate(actions, 1):
                    await handle.signal(kind, value)
                    await _handled(handle, count)
                if finish:
                    await handle.signal("finish")
                    await handle.result()
                ids["closed" if finish else "open"].append(handle.id)
    query = f"WorkflowType = '{WORKFLOW_NAME}' AND WorkflowId STARTS_WITH 'support-chat-{tag}'"
    await wait_listed(client, query, closed + open_runs)
    return Production(query, ids["closed"], ids["open"])
