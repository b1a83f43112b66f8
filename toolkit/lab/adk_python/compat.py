"""Where temporalio's Google ADK plugin lives in the installed temporalio, and its versions.

temporalio 1.24-1.34 ship the plugin as ``temporalio.contrib.google_adk_agents``; temporalio
1.35 moved it to the ``temporalio-google-adk`` package (``temporalio.google_adk``) and keeps the
old module as a re-export. Workflow and worker code import the plugin's names from here so the
same code runs in every version environment.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from toolkit.lab.installed import first_importable, python_version, version_of

__all__ = ["PASSTHROUGH_MODULES", "plugin_module", "versions"]

_CANDIDATES = ("temporalio.google_adk", "temporalio.contrib.google_adk_agents")

# Modules ADK imports lazily from workflow code. temporalio 1.34+ passes them through the sandbox
# itself; temporalio 1.33 with google-adk >= 2.9 fails the first workflow task without this
# (opentelemetry reads os.environ inside the sandbox).
# "toolkit": the sandbox would otherwise re-import the toolkit package (pandas, numpy ...) for
# every run, and numpy refuses a second load in one process.
PASSTHROUGH_MODULES: tuple[str, ...] = (
    "opentelemetry", "anthropic", "litellm", "openai", "toolkit"
)


def plugin_module() -> ModuleType:
    """The plugin module of the installed temporalio (newest location first)."""
    return first_importable(_CANDIDATES, "temporalio's Google ADK plugin")


def plugin_name(name: str) -> Any:
    """One public name of the plugin (``TemporalModel``, ``GoogleAdkPlugin`` ...)."""
    return getattr(plugin_module(), name)


def versions() -> dict[str, str | None]:
    """Versions that matter for a recording, as seen by this interpreter."""
    module = plugin_module().__name__
    plugin_dist = "temporalio-google-adk" if module == "temporalio.google_adk" else "temporalio"
    return {
        "google_adk": version_of("google-adk"),
        "temporalio": version_of("temporalio"),
        "plugin_module": module,
        "plugin": f"{plugin_dist} {version_of(plugin_dist)}",
        "mcp": version_of("mcp"),
        "python": python_version(),
    }
