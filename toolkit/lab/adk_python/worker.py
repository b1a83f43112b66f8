"""Worker process of Recorder A.

``python -m toolkit.lab.adk_python.worker --address HOST:PORT --task-queue QUEUE``

Runs inside one version environment (see :mod:`.envs`): registers the scripted model in ADK's LLM
registry, builds temporalio's Google ADK plugin with one ``TemporalMcpToolSetProvider`` per
toolset name the scenarios use (the factory connects to the URL the workflow passes as
``factory_argument``), and polls the task queue. When it polls it prints one JSON line with
``"ready": true`` and the versions it runs with; SIGTERM or SIGINT shut it down gracefully.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkit.lab import lab_worker
from toolkit.lab.adk_python.compat import PASSTHROUGH_MODULES, plugin_name, versions
from toolkit.lab.model import register_scripted_model

__all__ = ["TOOLSET_NAMES", "build_plugin", "sandbox_runner"]

TOOLSET_NAMES: tuple[str, ...] = ("weather", "weather-token", "pages")
"""Toolset names (activity prefixes) every worker serves."""


def _toolset_factory(url: Any) -> Any:
    """A fresh ADK ``McpToolset`` on the streamable-HTTP endpoint ``url``."""
    from google.adk.tools.mcp_tool import McpToolset
    from google.adk.tools.mcp_tool.mcp_session_manager import StreamableHTTPConnectionParams

    return McpToolset(connection_params=StreamableHTTPConnectionParams(url=str(url)))


def build_plugin() -> Any:
    """temporalio's ``GoogleAdkPlugin`` with a provider for each of :data:`TOOLSET_NAMES`."""
    provider = plugin_name("TemporalMcpToolSetProvider")
    providers = [provider(name, _toolset_factory) for name in TOOLSET_NAMES]
    return plugin_name("GoogleAdkPlugin")(toolset_providers=providers)


def sandbox_runner() -> Any:
    """The default sandbox plus the pass-through modules old plugins do not add themselves."""
    return lab_worker.sandbox_runner(PASSTHROUGH_MODULES)


async def run_worker(address: str, task_queue: str, identity: str) -> None:
    """Poll ``task_queue`` until SIGTERM/SIGINT."""
    from toolkit.lab.adk_python.workflow import LabAdkAgentWorkflow

    register_scripted_model()
    await lab_worker.serve(address, task_queue, identity, LabAdkAgentWorkflow,
                           client_plugins=[build_plugin()], passthrough=PASSTHROUGH_MODULES,
                           versions=versions)


def main(argv: Sequence[str] | None = None) -> None:
    lab_worker.main(argv, "Recorder A worker (one version environment).",
                    lambda: f"lab-adk-worker@{versions()['google_adk']}", run_worker)


if __name__ == "__main__":
    main()
