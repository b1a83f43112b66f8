"""Where temporalio's OpenAI Agents integration lives in an environment, and its versions.

temporalio 1.30-1.34 ship it as ``temporalio.contrib.openai_agents``; the package
``temporalio-openai-agents`` (1.0.0+) installs ``temporalio.openai_agents`` and temporalio 1.35
keeps the old module as a re-export. Worker, workflow and replay code take the integration's
names from here so the same code runs in every environment of :mod:`.envs`.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from toolkit.lab.installed import first_importable, python_version, version_of

__all__ = ["PASSTHROUGH_MODULES", "has_mcp_v2", "integration", "integration_name", "versions"]

_CANDIDATES = ("temporalio.openai_agents", "temporalio.contrib.openai_agents")

# The sandbox would otherwise re-import the lab's modules for every run; the integration adds
# openai, agents and mcp itself.
PASSTHROUGH_MODULES: tuple[str, ...] = ("toolkit",)


def integration() -> ModuleType:
    """The integration module of this environment (newest location first)."""
    return first_importable(_CANDIDATES, "temporalio's OpenAI Agents integration")


def integration_name(name: str) -> Any:
    """One public name of the integration (``OpenAIAgentsPlugin`` ...) or of its ``workflow``
    module (``workflow.stateless_mcp_server``)."""
    value: Any = integration()
    for part in name.split("."):
        value = getattr(value, part)
    return value


def has_mcp_v2() -> bool:
    """Whether the integration has MCP v2 servers (``workflow.temporal_mcp_server``, activities
    ``temporalio.mcp.<server>.<operation>`` from ``temporalio-mcp``)."""
    if not hasattr(integration_name("workflow"), "temporal_mcp_server"):
        return False
    try:
        importlib.import_module("temporalio.mcp")
    except ImportError:
        return False
    return True


def versions() -> dict[str, str | None]:
    """Versions that matter for a recording, as seen by this interpreter."""
    module = integration().__name__
    dist = "temporalio-openai-agents" if module == "temporalio.openai_agents" else "temporalio"
    return {
        "openai_agents": version_of("openai-agents"),
        "temporalio": version_of("temporalio"),
        "integration_module": module,
        "integration": f"{dist} {version_of(dist)}",
        "openai": version_of("openai"),
        "temporalio_mcp": version_of("temporalio-mcp"),
        "mcp": version_of("mcp"),
        "python": python_version(),
    }
