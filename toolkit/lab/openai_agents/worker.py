"""Worker process of the OpenAI Agents recorder.

``python -m toolkit.lab.openai_agents.worker --address HOST:PORT --task-queue QUEUE``

Runs inside one environment of :mod:`.envs`: builds the integration's ``OpenAIAgentsPlugin`` with
the scripted model provider and one ``StatelessMCPServerProvider`` per server name the scenarios
use (the factory connects to the URL the workflow passes as ``factory_argument``) and, where the
integration has MCP v2 servers (``temporalio-openai-agents`` with ``temporalio-mcp``), the same
factories as ``mcp_servers``; then polls the task queue. When it polls it prints one JSON line
with ``"ready": true`` and its versions; SIGTERM or SIGINT shut it down gracefully.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

from toolkit.lab import lab_worker
from toolkit.lab.openai_agents.compat import (
    PASSTHROUGH_MODULES,
    has_mcp_v2,
    integration_name,
    versions,
)
from toolkit.lab.openai_agents.model import scripted_provider
from toolkit.lab.openai_agents.scenarios import SERVER_NAMES

__all__ = ["build_plugin", "sandbox_runner"]


def _server_factory(url: Any) -> Any:
    """A fresh openai-agents streamable-HTTP MCP client for ``url``."""
    from agents.mcp import MCPServerStreamableHttp

    return MCPServerStreamableHttp(params={"url": str(url)}, name="lab-mcp")


def build_plugin() -> Any:
    """The ``OpenAIAgentsPlugin`` with the scripted model and the lab's MCP servers."""
    # Traces would go to OpenAI's API, which the lab never calls.
    os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
    from agents import set_tracing_disabled

    set_tracing_disabled(True)
    provider = integration_name("StatelessMCPServerProvider")
    with warnings.catch_warnings():  # deprecated in favour of MCP v2 servers from 1.0.0 on
        warnings.simplefilter("ignore", DeprecationWarning)
        servers = [provider(name, _server_factory) for name in SERVER_NAMES]
    v2: dict[str, Any] = {}
    if has_mcp_v2():
        v2["mcp_servers"] = {name: _server_factory for name in SERVER_NAMES}
    with warnings.catch_warnings():  # mcp_server_providers is deprecated alongside mcp_servers
        warnings.simplefilter("ignore", DeprecationWarning)
        return integration_name("OpenAIAgentsPlugin")(
            model_provider=scripted_provider(), mcp_server_providers=servers, **v2)


def sandbox_runner() -> Any:
    """The default sandbox plus the lab's pass-through modules (the plugin adds its own)."""
    return lab_worker.sandbox_runner(PASSTHROUGH_MODULES)


async def run_worker(address: str, task_queue: str, identity: str) -> None:
    """Poll ``task_queue`` until SIGTERM/SIGINT."""
    from toolkit.lab.openai_agents.workflow import LabOpenAIAgentWorkflow

    await lab_worker.serve(address, task_queue, identity, LabOpenAIAgentWorkflow,
                           client_plugins=[build_plugin()], passthrough=PASSTHROUGH_MODULES,
                           versions=versions)


def main(argv: Sequence[str] | None = None) -> None:
    lab_worker.main(argv, "OpenAI Agents lab worker (one environment).",
                    lambda: f"lab-openai-agents-worker@{versions()['openai_agents']}", run_worker)


if __name__ == "__main__":
    main()
